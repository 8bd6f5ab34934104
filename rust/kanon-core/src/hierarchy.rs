//! Generalization hierarchies as dense matrices `level × leaf code → ancestor code`
//! (ARX's layout): generalizing a value is one array lookup.

use crate::error::{KernelError, Result};

/// A validated generalization hierarchy over `leaves` leaf codes.
///
/// Level 0 holds the leaves themselves; the top level holds a single root.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Hierarchy {
    /// `ancestors[level][leaf]` = code of the leaf's label at `level` (dense per level).
    ancestors: Vec<Vec<u32>>,
    /// Number of distinct labels at each level.
    widths: Vec<u32>,
}

impl Hierarchy {
    /// Build a hierarchy from its wide table, one row per leaf and one code column per level.
    ///
    /// `levels[l][row]` is the code of that row's label at level `l`; codes of each level
    /// must be dense (`0..width_l`, e.g. from [`crate::encode()`]) and `levels[0]` must be a
    /// permutation of `0..rows` (every leaf listed exactly once).
    ///
    /// # Errors
    /// * [`KernelError::InvalidArgument`] for no levels, unequal column lengths, a leaf
    ///   listed twice or codes that are not dense.
    /// * [`KernelError::NotNested`] if a label at level `l` has two parents at `l + 1`.
    /// * [`KernelError::NotSingleRoot`] if the top level has more than one label.
    ///
    /// # Complexity
    /// O(L · n) time and space for L levels and n leaves.
    ///
    /// # Examples
    /// ```
    /// use kanon_core::Hierarchy;
    /// // leaves 0..4; level 1 pairs {0,1}, {2,3}; level 2 the root.
    /// let h = Hierarchy::try_from_levels(&[&[0, 1, 2, 3], &[0, 0, 1, 1], &[0, 0, 0, 0]]).unwrap();
    /// assert_eq!(h.generalize(1, 3), 1);
    /// assert_eq!(h.height(), 2);
    /// ```
    pub fn try_from_levels(levels: &[&[u32]]) -> Result<Self> {
        let invalid = |message: String| KernelError::InvalidArgument {
            kernel: "hierarchy",
            message,
        };
        let Some(leaf_codes) = levels.first() else {
            return Err(invalid("a hierarchy needs at least one level".to_owned()));
        };
        let n = leaf_codes.len();
        for (level, column) in levels.iter().enumerate() {
            if column.len() != n {
                return Err(invalid(format!(
                    "level {level} has {} rows but level 0 has {n}",
                    column.len()
                )));
            }
        }
        let mut row_of_leaf = vec![usize::MAX; n];
        for (row, &leaf) in leaf_codes.iter().enumerate() {
            let slot = row_of_leaf.get_mut(leaf as usize).ok_or_else(|| {
                invalid(format!("leaf code {leaf} at row {row} is not below {n}"))
            })?;
            if *slot != usize::MAX {
                return Err(invalid(format!(
                    "leaf code {leaf} is listed twice (rows {} and {row})",
                    *slot
                )));
            }
            *slot = row;
        }
        let mut ancestors = Vec::with_capacity(levels.len());
        let mut widths = Vec::with_capacity(levels.len());
        for (level, column) in levels.iter().enumerate() {
            // Dense codes of n rows are all below n: a larger code is an error, not a
            // reason to allocate (or to overflow computing max + 1).
            if let Some(&big) = column.iter().find(|&&c| c as usize >= n) {
                return Err(invalid(format!(
                    "codes of level {level} are not dense: code {big} is not below {n}"
                )));
            }
            let width = column.iter().max().map_or(0, |&m| m + 1);
            let mut used = vec![false; width as usize];
            for &code in *column {
                used[code as usize] = true;
            }
            if let Some(gap) = used.iter().position(|&u| !u) {
                return Err(invalid(format!(
                    "codes of level {level} are not dense: code {gap} is unused"
                )));
            }
            ancestors.push(
                row_of_leaf
                    .iter()
                    .map(|&row| column[row])
                    .collect::<Vec<u32>>(),
            );
            widths.push(width);
        }
        for level in 0..levels.len() - 1 {
            let mut parent = vec![u32::MAX; widths[level] as usize];
            for (row, (&code, &up)) in levels[level].iter().zip(levels[level + 1]).enumerate() {
                let slot = &mut parent[code as usize];
                if *slot == u32::MAX {
                    *slot = up;
                } else if *slot != up {
                    return Err(KernelError::NotNested {
                        level,
                        next_level: level + 1,
                        code,
                        row,
                    });
                }
            }
        }
        let top = levels.len() - 1;
        if widths[top] > 1 {
            return Err(KernelError::NotSingleRoot {
                level: top,
                roots: widths[top] as usize,
            });
        }
        Ok(Self { ancestors, widths })
    }

    /// The identity hierarchy of `leaves` values under a single root (`value → *`).
    #[must_use]
    pub fn flat(leaves: u32) -> Self {
        Self {
            ancestors: vec![(0..leaves).collect(), vec![0; leaves as usize]],
            widths: vec![leaves, u32::from(leaves > 0)],
        }
    }

    /// Number of levels above the leaves.
    #[must_use]
    pub fn height(&self) -> usize {
        self.ancestors.len() - 1
    }

    /// Number of leaves.
    #[must_use]
    pub fn leaves(&self) -> usize {
        self.ancestors[0].len()
    }

    /// Number of distinct labels at `level`.
    ///
    /// # Panics
    /// If `level > self.height()`.
    #[must_use]
    pub fn width(&self, level: usize) -> u32 {
        self.widths[level]
    }

    /// The code of `leaf`'s label at `level`.
    ///
    /// # Panics
    /// If `level > self.height()` or `leaf >= self.leaves()`.
    #[must_use]
    pub fn generalize(&self, level: usize, leaf: u32) -> u32 {
        self.ancestors[level][leaf as usize]
    }

    /// The whole row `leaf code → ancestor code` of `level`.
    ///
    /// # Panics
    /// If `level > self.height()`.
    #[must_use]
    pub fn level(&self, level: usize) -> &[u32] {
        &self.ancestors[level]
    }

    /// Depth-first rank of every leaf: `ranks[leaf]`, leaves ordered by their path of
    /// codes from the root down (ties impossible: leaf codes are distinct). The leaves
    /// under any label form a contiguous range of ranks, so the lowest label holding a
    /// set of leaves is the meet of its lowest- and highest-ranked leaves.
    ///
    /// # Complexity
    /// O(n · log n · L) time and O(n) space for n leaves and L levels.
    pub(crate) fn dfs_ranks(&self) -> Vec<u32> {
        let mut order: Vec<u32> = (0..self.leaves() as u32).collect();
        order.sort_unstable_by(|&a, &b| {
            self.ancestors
                .iter()
                .rev()
                .map(|level| level[a as usize].cmp(&level[b as usize]))
                .find(|o| o.is_ne())
                .unwrap_or(std::cmp::Ordering::Equal)
        });
        let mut ranks = vec![0u32; order.len()];
        for (rank, &leaf) in order.iter().enumerate() {
            ranks[leaf as usize] = rank as u32;
        }
        ranks
    }
}

/// Check a histogram of leaf-code tuples (`m` codes per tuple, one count per tuple)
/// against one hierarchy per attribute, and return its number of rows.
///
/// # Errors
/// [`KernelError::LengthMismatch`] if `m` is 0 or differs from the hierarchies, or the
/// tuples are not `m` codes per count; [`KernelError::InvalidArgument`] for a code
/// outside its hierarchy's leaves or counts that overflow 64 bits.
pub(crate) fn check_histogram(
    kernel: &'static str,
    tuples: &[u32],
    m: usize,
    counts: &[u64],
    hierarchies: &[Hierarchy],
) -> Result<u64> {
    check_arity(kernel, m, hierarchies)?;
    let expected = counts.len().saturating_mul(m);
    if tuples.len() != expected {
        return Err(KernelError::LengthMismatch {
            kernel,
            argument: "tuples",
            got: tuples.len(),
            expected,
        });
    }
    for (t, row) in tuples.chunks_exact(m).enumerate() {
        check_leaves(kernel, t, row, hierarchies)?;
    }
    count_rows(kernel, counts)
}

/// [`check_histogram`]'s check of `m`: at least 1, one hierarchy per attribute.
pub(crate) fn check_arity(kernel: &'static str, m: usize, hierarchies: &[Hierarchy]) -> Result<()> {
    if m == 0 || hierarchies.len() != m {
        return Err(KernelError::LengthMismatch {
            kernel,
            argument: "hierarchies",
            got: hierarchies.len(),
            expected: m.max(1),
        });
    }
    Ok(())
}

/// [`check_histogram`]'s check of tuple `t`: every code a leaf of its attribute.
pub(crate) fn check_leaves(
    kernel: &'static str,
    t: usize,
    row: &[u32],
    hierarchies: &[Hierarchy],
) -> Result<()> {
    for (j, (&code, h)) in row.iter().zip(hierarchies).enumerate() {
        if code as usize >= h.leaves() {
            return Err(KernelError::InvalidArgument {
                kernel,
                message: format!(
                    "tuple {t} has code {code} in attribute {j}, which has {} leaves",
                    h.leaves()
                ),
            });
        }
    }
    Ok(())
}

/// [`check_histogram`]'s rows: the counts' sum, unless it overflows 64 bits.
pub(crate) fn count_rows(kernel: &'static str, counts: &[u64]) -> Result<u64> {
    counts
        .iter()
        .try_fold(0u64, |acc, &c| acc.checked_add(c))
        .ok_or_else(|| KernelError::InvalidArgument {
            kernel,
            message: "the counts overflow 64 bits".to_owned(),
        })
}

/// [`check_histogram`] for a greedy local recoding, plus its per-attribute argument
/// `per` (named `per_name`, one value per attribute) and `k`: at least 1, and at most the
/// row count unless there are no rows. Returns the row count.
///
/// # Errors
/// As [`check_histogram`]; [`KernelError::LengthMismatch`] for `per`;
/// [`KernelError::InvalidArgument`] for `k = 0` or fewer than `k` rows (but some).
pub(crate) fn check_recoding_inputs<T>(
    kernel: &'static str,
    tuples: &[u32],
    m: usize,
    counts: &[u64],
    hierarchies: &[Hierarchy],
    (per_name, per): (&'static str, &[T]),
    k: u64,
) -> Result<u64> {
    let total = check_histogram(kernel, tuples, m, counts, hierarchies)?;
    let invalid = |message: String| KernelError::InvalidArgument { kernel, message };
    if per.len() != m {
        return Err(KernelError::LengthMismatch {
            kernel,
            argument: per_name,
            got: per.len(),
            expected: m,
        });
    }
    if k == 0 {
        return Err(invalid("k must be at least 1".to_owned()));
    }
    if total > 0 && total < k {
        return Err(invalid(format!(
            "the table has {total} rows, fewer than k = {k}"
        )));
    }
    Ok(total)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn split_label_is_rejected() {
        let err = Hierarchy::try_from_levels(&[&[0, 1, 2], &[0, 0, 1], &[0, 1, 1]]).unwrap_err();
        assert!(matches!(
            err,
            KernelError::NotNested {
                level: 1,
                code: 0,
                ..
            }
        ));
    }

    #[test]
    fn two_roots_are_rejected() {
        let err = Hierarchy::try_from_levels(&[&[0, 1], &[0, 1]]).unwrap_err();
        assert_eq!(err, KernelError::NotSingleRoot { level: 1, roots: 2 });
    }

    #[test]
    fn duplicate_leaf_is_rejected() {
        let err = Hierarchy::try_from_levels(&[&[0, 0], &[0, 0]]).unwrap_err();
        assert!(err.to_string().contains("listed twice"));
    }

    #[test]
    fn rows_may_come_in_any_order() {
        let h = Hierarchy::try_from_levels(&[&[2, 0, 1], &[1, 0, 0], &[0, 0, 0]]).unwrap();
        assert_eq!(h.level(1), &[0, 0, 1]);
        assert_eq!(h.width(1), 2);
    }

    #[test]
    fn flat_hierarchy_has_one_level() {
        let h = Hierarchy::flat(3);
        assert_eq!(h.height(), 1);
        assert_eq!(h.generalize(1, 2), 0);
        assert_eq!(h.generalize(0, 2), 2);
    }
}
