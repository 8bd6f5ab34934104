//! The earth mover's distance (EMD) of t-closeness (Li, Li and Venkatasubramanian,
//! ICDE 2007) between a class's sensitive distribution and the table's, with equal,
//! ordered or hierarchical ground distance.
//!
//! The table-wide distribution is precomputed once by [`Emd::new`]; [`Emd::distance`]
//! then only walks the codes a class holds, so many small classes stay cheap.

use crate::error::{KernelError, Result};
use crate::hierarchy::Hierarchy;

/// Ground distance between sensitive values for t-closeness.
#[derive(Debug, Clone, PartialEq)]
pub enum GroundDistance {
    /// Every two distinct values are at distance 1 (categorical attributes).
    Equal,
    /// Values at codes i and j are at distance |i − j| / (m − 1) (ordered attributes).
    Ordered,
    /// Two leaves are at distance level(lowest common ancestor) / height of the hierarchy
    /// (categorical attributes with a generalization hierarchy); codes are leaf codes.
    Hierarchical(Hierarchy),
}

/// The earth mover's distance to one global distribution, precomputed.
#[derive(Debug, Clone)]
pub struct Emd {
    /// Number of sensitive codes.
    m: usize,
    /// Rows of the table.
    total: u64,
    kind: Kind,
}

#[derive(Debug, Clone)]
enum Kind {
    /// `global[code]`: rows with that code.
    Equal { global: Vec<u64> },
    /// Cumulative distribution `Q_i` and its prefix sums `SQ_i = Q_0 + … + Q_{i−1}`.
    Ordered { cdf: Vec<f64>, cdf_prefix: Vec<f64> },
    /// Tree EMD on the hierarchy, per level below the root.
    Hierarchical(Tree),
}

#[derive(Debug, Clone)]
struct Tree {
    /// Height H of the hierarchy (levels above the leaves).
    height: usize,
    /// Depth-first rank of every leaf code: the leaves under any node are contiguous.
    rank: Vec<u32>,
    /// `ancestor[l][rank]`: node at level `l` (0 ≤ l < H) above the leaf of that rank.
    ancestor: Vec<Vec<u32>>,
    /// `rows[l][node]`: rows of the table under that node at level `l`.
    rows: Vec<Vec<u64>>,
}

impl Emd {
    /// Precompute the EMD to the distribution `global`.
    ///
    /// `global[code]`: rows with sensitive code `code` in the whole table (codes `0..len`
    /// in value order; for [`GroundDistance::Hierarchical`], `len` = the hierarchy's
    /// leaves and codes are leaf codes).
    ///
    /// # Errors
    /// [`KernelError::LengthMismatch`] if the hierarchy's leaves are not `global.len()`;
    /// [`KernelError::InvalidArgument`] if the total of `global` is 0 (or overflows).
    ///
    /// # Complexity
    /// O(m) for equal and ordered distance; O(m · (H + log m)) for a hierarchy of
    /// height H over m leaves.
    pub fn new(distance: &GroundDistance, global: &[u64]) -> Result<Self> {
        let total = global
            .iter()
            .try_fold(0u64, |acc, &g| acc.checked_add(g))
            .ok_or_else(|| invalid("the sensitive counts overflow u64".to_owned()))?;
        if total == 0 {
            return Err(invalid(
                "the table has no rows with a sensitive value".to_owned(),
            ));
        }
        let m = global.len();
        let kind = match distance {
            GroundDistance::Equal => Kind::Equal {
                global: global.to_vec(),
            },
            GroundDistance::Ordered => {
                let n = total as f64;
                let mut cdf = Vec::with_capacity(m);
                let mut acc = 0u64;
                for &g in global {
                    acc += g;
                    cdf.push(acc as f64 / n);
                }
                let mut cdf_prefix = Vec::with_capacity(m + 1);
                cdf_prefix.push(0.0);
                let mut sum = 0.0;
                for &c in &cdf {
                    sum += c;
                    cdf_prefix.push(sum);
                }
                Kind::Ordered { cdf, cdf_prefix }
            }
            GroundDistance::Hierarchical(h) => {
                if h.leaves() != m {
                    return Err(KernelError::LengthMismatch {
                        kernel: "emd",
                        argument: "global",
                        got: m,
                        expected: h.leaves(),
                    });
                }
                let height = h.height();
                let rank = h.dfs_ranks();
                let mut leaf_of_rank = vec![0u32; m];
                for (leaf, &r) in rank.iter().enumerate() {
                    leaf_of_rank[r as usize] = leaf as u32;
                }
                let ancestor: Vec<Vec<u32>> = (0..height)
                    .map(|l| {
                        leaf_of_rank
                            .iter()
                            .map(|&leaf| h.generalize(l, leaf))
                            .collect()
                    })
                    .collect();
                let rows: Vec<Vec<u64>> = (0..height)
                    .map(|l| {
                        let mut rows = vec![0u64; h.width(l) as usize];
                        for (leaf, &g) in global.iter().enumerate() {
                            rows[h.generalize(l, leaf as u32) as usize] += g;
                        }
                        rows
                    })
                    .collect();
                Kind::Hierarchical(Tree {
                    height,
                    rank,
                    ancestor,
                    rows,
                })
            }
        };
        Ok(Self { m, total, kind })
    }

    /// EMD between a class's distribution and the global one.
    ///
    /// `class`: (code, count) pairs sorted by code, counts > 0, codes < `global.len()`.
    /// An empty class is at distance 0.
    ///
    /// # Panics
    /// If a code is not below `global.len()`.
    ///
    /// # Complexity
    /// O(s) for equal distance, O(s log m) for ordered distance and O(s · (H + log s))
    /// for a hierarchy of height H, for a class of s codes.
    #[must_use]
    pub fn distance(&self, class: &[(u32, u64)]) -> f64 {
        let size: u64 = class.iter().map(|&(_, c)| c).sum();
        if size == 0 {
            return 0.0;
        }
        match &self.kind {
            Kind::Equal { global } => {
                0.5 * level_l1(self.total, size, class, |&(code, c)| {
                    (c, global[code as usize])
                })
            }
            Kind::Ordered { cdf, cdf_prefix } => ordered(class, size as f64, cdf, cdf_prefix),
            Kind::Hierarchical(tree) => {
                if tree.height == 0 {
                    return 0.0;
                }
                let mut by_rank: Vec<(u32, u64)> = class
                    .iter()
                    .map(|&(code, c)| (tree.rank[code as usize], c))
                    .collect();
                by_rank.sort_unstable_by_key(|&(r, _)| r);
                let mut sum = 0.0;
                let mut nodes: Vec<(u64, u64)> = Vec::with_capacity(by_rank.len());
                for (ancestor, rows) in tree.ancestor.iter().zip(&tree.rows) {
                    // Touched nodes of this level: runs of equal ancestors in rank order.
                    nodes.clear();
                    let mut last = u32::MAX;
                    for &(r, c) in &by_rank {
                        let node = ancestor[r as usize];
                        match nodes.last_mut() {
                            Some(entry) if node == last => entry.0 += c,
                            _ => nodes.push((c, rows[node as usize])),
                        }
                        last = node;
                    }
                    sum += level_l1(self.total, size, &nodes, |&pair| pair);
                }
                // Each edge between a level and the next weighs 1 / (2H).
                sum / (2 * tree.height) as f64
            }
        }
    }

    /// Number of sensitive codes of the global distribution.
    #[must_use]
    pub fn codes(&self) -> usize {
        self.m
    }
}

/// Σ over all nodes of a level of |P(N) − Q(N)| where `nodes` yields (class rows,
/// table rows) of the nodes the class touches; an untouched node contributes Q(N).
fn level_l1<T>(total: u64, size: u64, nodes: &[T], split: impl Fn(&T) -> (u64, u64)) -> f64 {
    let n = total as f64;
    let s = size as f64;
    let mut covered = 0u64;
    let mut inside = 0.0;
    for node in nodes {
        let (c, g) = split(node);
        covered += g;
        inside += (c as f64 / s - g as f64 / n).abs();
    }
    inside + total.saturating_sub(covered) as f64 / n
}

/// EMD with ordered ground distance: Σ_i |P_i − Q_i| / (m − 1) over cumulative
/// distributions, evaluated per run of constant P_i with a binary search on Q.
fn ordered(class: &[(u32, u64)], size: f64, cdf: &[f64], cdf_prefix: &[f64]) -> f64 {
    let m = cdf.len();
    if m < 2 {
        return 0.0;
    }
    // Σ_{i in [lo, hi)} |s − Q_i| with Q non-decreasing.
    let run = |lo: usize, hi: usize, s: f64| -> f64 {
        if lo >= hi {
            return 0.0;
        }
        let split = lo + cdf[lo..hi].partition_point(|&qi| qi < s);
        let below = s * (split - lo) as f64 - (cdf_prefix[split] - cdf_prefix[lo]);
        let above = (cdf_prefix[hi] - cdf_prefix[split]) - s * (hi - split) as f64;
        below + above
    };
    let end = m - 1;
    let mut total = 0.0;
    let mut p = 0.0;
    let mut pos = 0usize;
    let mut rows = 0u64;
    for &(code, c) in class {
        let code = code as usize;
        total += run(pos.min(end), code.min(end), p);
        rows += c;
        p = rows as f64 / size;
        pos = code;
    }
    total += run(pos.min(end), end, p);
    total / (m - 1) as f64
}

fn invalid(message: String) -> KernelError {
    KernelError::InvalidArgument {
        kernel: "emd",
        message,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive_ordered(p: &[f64], q: &[f64]) -> f64 {
        let mut acc = 0.0;
        let mut total = 0.0;
        for i in 0..p.len() {
            acc += p[i] - q[i];
            total += f64::abs(acc);
        }
        total / (p.len() - 1) as f64
    }

    #[test]
    fn ordered_matches_the_definition() {
        let global = [3, 1, 2, 2, 2];
        let q: Vec<f64> = global.iter().map(|&g| f64::from(g) / 10.0).collect();
        let emd = Emd::new(&GroundDistance::Ordered, &[3, 1, 2, 2, 2]).unwrap();
        let got = emd.distance(&[(1, 1), (3, 2)]);
        let p = [0.0, 1.0 / 3.0, 0.0, 2.0 / 3.0, 0.0];
        assert!((got - naive_ordered(&p, &q)).abs() < 1e-12, "{got}");
    }

    #[test]
    fn equal_is_half_l1() {
        let emd = Emd::new(&GroundDistance::Equal, &[3, 1, 2, 2, 2]).unwrap();
        let got = emd.distance(&[(0, 1), (2, 1)]);
        // p = (.5, 0, .5, 0, 0), q = (.3, .1, .2, .2, .2)
        let want = 0.5 * (0.2 + 0.1 + 0.3 + 0.2 + 0.2);
        assert!((got - want).abs() < 1e-12, "{got}");
    }

    #[test]
    fn errors() {
        assert!(Emd::new(&GroundDistance::Equal, &[0, 0]).is_err());
        let h = GroundDistance::Hierarchical(Hierarchy::flat(3));
        assert!(matches!(
            Emd::new(&h, &[1, 1]),
            Err(KernelError::LengthMismatch { .. })
        ));
    }

    /// The disease hierarchy (Figure 2) and table (Table 3) of Li et al. (2007): nine
    /// records; classes of three records, EMD by the paper's formula Σ_N level(N)/H ·
    /// min(pos_extra(N), neg_extra(N)), worked by hand.
    #[test]
    fn paper_hierarchy_example() {
        // Leaves: 0 gastric ulcer, 1 gastritis, 2 stomach cancer, 3 colitis, 4 colon
        // cancer, 5 flu, 6 pneumonia, 7 bronchitis, 8 pulmonary edema, 9 pulmonary
        // embolism. Level 1: stomach, colon, respiratory infection, vascular lung
        // diseases; level 2: digestive, respiratory system diseases; level 3: the root.
        let h = Hierarchy::try_from_levels(&[
            &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
            &[0, 0, 0, 1, 1, 2, 2, 2, 3, 3],
            &[0, 0, 0, 0, 0, 1, 1, 1, 1, 1],
            &[0; 10],
        ])
        .unwrap();
        let global = [1, 2, 2, 0, 0, 1, 1, 2, 0, 0];
        let emd = Emd::new(&GroundDistance::Hierarchical(h), &global).unwrap();
        let close = |class: &[(u32, u64)], want: f64| {
            let got = emd.distance(class);
            assert!((got - want).abs() < 1e-12, "{class:?}: {got} != {want}");
        };
        // {gastric ulcer, gastritis, stomach cancer}: only the root moves mass, 1 · 4/9.
        close(&[(0, 1), (1, 1), (2, 1)], 4.0 / 9.0);
        // {gastric ulcer, stomach cancer, pneumonia}: 2/27 + 2/27 + 3/27.
        close(&[(0, 1), (2, 1), (6, 1)], 7.0 / 27.0);
        // {gastritis, flu, bronchitis}: 1/27 + 1/27 + 6/27.
        close(&[(1, 1), (5, 1), (7, 1)], 8.0 / 27.0);
        // {gastritis, stomach cancer, bronchitis}: 1/27 + 1/27 + 3/27.
        close(&[(1, 1), (2, 1), (7, 1)], 5.0 / 27.0);
        // The whole table is at distance 0.
        close(&[(0, 1), (1, 2), (2, 2), (5, 1), (6, 1), (7, 2)], 0.0);
    }
}
