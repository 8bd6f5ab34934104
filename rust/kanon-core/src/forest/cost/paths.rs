//! Leaf-major ancestor rows of a hierarchy: the meet of two leaves by a binary search.
//!
//! [`Hierarchy`] keeps one array per level, so walking a pair of leaves up `height`
//! levels touches `2 · height` scattered entries. Deep attributes (default interval
//! hierarchies of many distinct values have 20 levels and more) price pairs far
//! faster from each leaf's whole path in one row. A scan that prices one leaf against
//! many goes further: the leaf's ancestors as nested intervals of depth-first ranks
//! (a [`Rung`] per level) give its meet with any leaf from that leaf's rank alone.

use crate::hierarchy::Hierarchy;

/// Every leaf's ancestor codes, level 0 first, one row per leaf.
#[derive(Debug, Clone)]
pub(crate) struct Paths {
    width: usize,
    rows: Vec<u32>,
    /// `extents[level][code]`: the first and last rank of the leaves under the node.
    extents: Vec<Vec<(u32, u32)>>,
}

/// One ancestor of a leaf: the ranks of the leaves under it, and what meeting there
/// costs.
pub(crate) type Rung = (u32, u32, u64);

impl Paths {
    /// The rows of `h` (`leaves · (height + 1)` codes); `ranks` are its depth-first ranks
    /// ([`Hierarchy::dfs_ranks`]), which the node extents are made of.
    pub(crate) fn new(h: &Hierarchy, ranks: &[u32]) -> Self {
        let width = h.height() + 1;
        let mut rows = vec![0u32; h.leaves() * width];
        for level in 0..width {
            for (leaf, &code) in h.level(level).iter().enumerate() {
                rows[leaf * width + level] = code;
            }
        }
        let extents = (0..width)
            .map(|level| {
                let mut extent = vec![(u32::MAX, 0u32); h.width(level) as usize];
                for (leaf, &code) in h.level(level).iter().enumerate() {
                    let (first, last) = &mut extent[code as usize];
                    *first = (*first).min(ranks[leaf]);
                    *last = (*last).max(ranks[leaf]);
                }
                extent
            })
            .collect();
        Self {
            width,
            rows,
            extents,
        }
    }

    /// `leaf`'s ancestors, level 0 first, as [`Rung`]s priced by `units(level, code)`.
    pub(crate) fn ladder(&self, leaf: u32, units: impl Fn(usize, u32) -> u64, out: &mut Vec<Rung>) {
        out.clear();
        out.extend(self.row(leaf).iter().enumerate().map(|(level, &code)| {
            let (first, last) = self.extents[level][code as usize];
            (first, last, units(level, code))
        }));
    }

    /// `out[x]`: the units of the meet of `leaf` and every leaf `x`, priced by
    /// `units(level, code)`; `leaf_at` is the leaf of every depth-first rank. The leaves
    /// under each ancestor are a range of ranks, written
    /// from the top down (each nested in the last): about one write per leaf, where a
    /// pass per level over every leaf took `height` of them.
    pub(crate) fn fill_row(
        &self,
        leaf_at: &[u32],
        leaf: u32,
        units: impl Fn(usize, u32) -> u64,
        out: &mut Vec<u64>,
    ) {
        let row = self.row(leaf);
        let top = self.width - 1;
        out.clear();
        out.resize(leaf_at.len(), units(top, row[top]));
        for level in (0..top).rev() {
            let cost = units(level, row[level]);
            let (first, last) = self.extents[level][row[level] as usize];
            for &x in &leaf_at[first as usize..=last as usize] {
                out[x as usize] = cost;
            }
        }
    }

    /// The ancestors of `leaf`, level 0 first.
    ///
    /// # Panics
    /// If `leaf` is not a leaf of the hierarchy.
    pub(crate) fn row(&self, leaf: u32) -> &[u32] {
        let start = leaf as usize * self.width;
        &self.rows[start..start + self.width]
    }

    /// The lowest level where the ancestors of `a` and `b` agree (they agree above it
    /// too: the hierarchy is a tree), or the top level if they never do; and `a`'s
    /// ancestor there.
    ///
    /// # Panics
    /// If `a` or `b` is not a leaf of the hierarchy.
    pub(crate) fn meet(&self, a: u32, b: u32) -> (usize, u32) {
        let (ra, rb) = (self.row(a), self.row(b));
        let (mut lo, mut hi) = (0, self.width - 1);
        while lo < hi {
            let mid = (lo + hi) / 2;
            if ra[mid] == rb[mid] {
                hi = mid;
            } else {
                lo = mid + 1;
            }
        }
        (lo, ra[lo])
    }
}

/// `out[i]`: the units of the lowest rung holding `ranks[i]` (the top one if none does),
/// i.e. the meet of the ladder's leaf with the leaf of that rank, for sorted, distinct
/// `ranks`. Each rung's ranks are one run of them, written from the top rung down (rungs
/// nest): about one write per rank and rung that holds it.
pub(crate) fn climb_all(ladder: &[Rung], ranks: &[u32], out: &mut Vec<u64>) {
    out.clear();
    let Some(&(_, _, top)) = ladder.last() else {
        return;
    };
    out.resize(ranks.len(), top);
    let (mut lo, mut hi) = (0, ranks.len());
    for &(first, last, units) in ladder.iter().rev().skip(1) {
        let run = &ranks[lo..hi];
        let start = lo + run.partition_point(|&r| r < first);
        hi = lo + run.partition_point(|&r| r <= last);
        lo = start.min(hi);
        out[lo..hi].fill(units);
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The reference for [`climb_all`]: one rank, climbing down from the top rung.
    fn climb(ladder: &[Rung], rank: u32) -> u64 {
        let mut level = ladder.len() - 1;
        while level > 0 {
            let (first, last, _) = ladder[level - 1];
            if rank < first || rank > last {
                break;
            }
            level -= 1;
        }
        ladder[level].2
    }

    /// Binary splits of `n` leaves, `levels` levels above them (a root at the top).
    fn halves(n: u32, levels: u32) -> Hierarchy {
        let rows: Vec<Vec<u32>> = (0..=levels)
            .map(|l| {
                (0..n)
                    .map(|x| if l == levels { 0 } else { x >> l })
                    .collect()
            })
            .collect();
        let refs: Vec<&[u32]> = rows.iter().map(Vec::as_slice).collect();
        Hierarchy::try_from_levels(&refs).unwrap()
    }

    #[test]
    fn meet_is_the_first_shared_level() {
        let h = halves(300, 10);
        let paths = Paths::new(&h, &h.dfs_ranks());
        for a in 0..300 {
            for b in (0..300).step_by(7) {
                let walked = (0..=h.height())
                    .find(|&l| h.generalize(l, a) == h.generalize(l, b))
                    .unwrap_or(h.height());
                assert_eq!(paths.meet(a, b), (walked, h.generalize(walked, a)));
            }
        }
    }

    #[test]
    fn climb_is_the_meet() {
        let h = halves(300, 10);
        let ranks = h.dfs_ranks();
        let paths = Paths::new(&h, &ranks);
        let mut ladder = Vec::new();
        for a in 0..300 {
            paths.ladder(
                a,
                |level, code| (level as u64) << 20 | u64::from(code),
                &mut ladder,
            );
            for b in 0..300 {
                let (level, code) = paths.meet(a, b);
                let expected = (level as u64) << 20 | u64::from(code);
                assert_eq!(climb(&ladder, ranks[b as usize]), expected);
            }
        }
    }

    #[test]
    fn climb_all_climbs_every_rank() {
        let h = halves(300, 10);
        let ranks = h.dfs_ranks();
        let paths = Paths::new(&h, &ranks);
        let mut sorted: Vec<u32> = ranks.iter().copied().step_by(3).collect();
        sorted.sort_unstable();
        let (mut ladder, mut out) = (Vec::new(), Vec::new());
        for a in 0..300 {
            paths.ladder(
                a,
                |level, code| (level as u64) << 20 | u64::from(code),
                &mut ladder,
            );
            climb_all(&ladder, &sorted, &mut out);
            let each: Vec<u64> = sorted.iter().map(|&r| climb(&ladder, r)).collect();
            assert_eq!(out, each);
        }
    }
}
