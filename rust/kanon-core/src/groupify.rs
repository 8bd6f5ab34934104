//! Groupify: equivalence classes of rows whose quasi-identifiers, generalized to given
//! levels, are equal. Generalized tuples are hashed as packed integers.

use std::collections::HashMap;

use crate::error::{KernelError, Result};
use crate::hierarchy::Hierarchy;

/// Rows partitioned into equivalence classes.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Classes {
    /// Class id of each row; classes are numbered in order of their first row.
    pub class_of_row: Vec<u32>,
    /// Size of each class: number of rows, or the sum of their weights.
    pub sizes: Vec<u64>,
    /// First row of each class.
    pub first_row: Vec<usize>,
}

/// Partition rows into the equivalence classes of their generalized quasi-identifiers.
///
/// Column `j` holds leaf codes of hierarchy `j`; each row is generalized to
/// `levels[j]` by one lookup per column, and rows with equal generalized tuples share a
/// class. Tuples are packed into one `u64` (mixed radix over the level widths) when the
/// product of widths fits, and hashed as a boxed slice otherwise.
///
/// # Arguments
/// * `columns` – one slice of leaf codes per quasi-identifier, all of length n.
/// * `hierarchies` – one hierarchy per column.
/// * `levels` – the level each column is generalized to.
/// * `weights` – optional multiplicity of each row (e.g. a histogram of distinct tuples).
///
/// # Errors
/// [`KernelError::LengthMismatch`] or [`KernelError::InvalidArgument`] if the inputs do
/// not fit together (lengths, a level above a hierarchy's height, a code outside it).
///
/// # Complexity
/// O(n · m) time and O(n + c) space for n rows, m columns and c classes.
///
/// # Examples
/// ```
/// use kanon_core::{groupify, Hierarchy};
/// let age = Hierarchy::try_from_levels(&[&[0, 1, 2, 3], &[0, 0, 1, 1], &[0, 0, 0, 0]]).unwrap();
/// let classes = groupify(&[&[0, 1, 2, 3, 0]], &[&age], &[1], None).unwrap();
/// assert_eq!(classes.class_of_row, vec![0, 0, 1, 1, 0]);
/// assert_eq!(classes.sizes, vec![3, 2]);
/// ```
pub fn groupify(
    columns: &[&[u32]],
    hierarchies: &[&Hierarchy],
    levels: &[usize],
    weights: Option<&[u64]>,
) -> Result<Classes> {
    let n = check_inputs(columns, hierarchies, levels, weights)?;
    let generalized: Vec<&[u32]> = hierarchies
        .iter()
        .zip(levels)
        .map(|(h, &level)| h.level(level))
        .collect();
    let widths: Vec<u64> = hierarchies
        .iter()
        .zip(levels)
        .map(|(h, &level)| u64::from(h.width(level).max(1)))
        .collect();
    let packable = widths
        .iter()
        .try_fold(1u64, |acc, &w| acc.checked_mul(w))
        .is_some();
    let key_of = |row: usize| -> u64 {
        columns
            .iter()
            .zip(&generalized)
            .zip(&widths)
            .fold(0u64, |key, ((col, up), &w)| {
                key * w + u64::from(up[col[row] as usize])
            })
    };
    let mut classes = Classes {
        class_of_row: Vec::with_capacity(n),
        sizes: Vec::new(),
        first_row: Vec::new(),
    };
    if packable {
        let mut ids: HashMap<u64, u32> = HashMap::with_capacity(n.min(1 << 20));
        for row in 0..n {
            assign(&mut classes, &mut ids, key_of(row), row, weights);
        }
    } else {
        let mut ids: HashMap<Box<[u32]>, u32> = HashMap::with_capacity(n.min(1 << 20));
        for row in 0..n {
            let key: Box<[u32]> = columns
                .iter()
                .zip(&generalized)
                .map(|(col, up)| up[col[row] as usize])
                .collect();
            assign(&mut classes, &mut ids, key, row, weights);
        }
    }
    Ok(classes)
}

fn assign<K: std::hash::Hash + Eq>(
    classes: &mut Classes,
    ids: &mut HashMap<K, u32>,
    key: K,
    row: usize,
    weights: Option<&[u64]>,
) {
    let next = u32::try_from(classes.sizes.len()).unwrap_or(u32::MAX);
    let id = *ids.entry(key).or_insert_with(|| {
        classes.sizes.push(0);
        classes.first_row.push(row);
        next
    });
    classes.class_of_row.push(id);
    classes.sizes[id as usize] += weights.map_or(1, |w| w[row]);
}

fn check_inputs(
    columns: &[&[u32]],
    hierarchies: &[&Hierarchy],
    levels: &[usize],
    weights: Option<&[u64]>,
) -> Result<usize> {
    let kernel = "groupify";
    if hierarchies.len() != columns.len() {
        return Err(KernelError::LengthMismatch {
            kernel,
            argument: "hierarchies",
            got: hierarchies.len(),
            expected: columns.len(),
        });
    }
    if levels.len() != columns.len() {
        return Err(KernelError::LengthMismatch {
            kernel,
            argument: "levels",
            got: levels.len(),
            expected: columns.len(),
        });
    }
    let n = columns.first().map_or(0, |c| c.len());
    if n > u32::MAX as usize {
        return Err(KernelError::InvalidArgument {
            kernel,
            message: format!("{n} rows exceed the limit of 4294967295 rows per call"),
        });
    }
    for (j, ((col, h), &level)) in columns.iter().zip(hierarchies).zip(levels).enumerate() {
        if col.len() != n {
            return Err(KernelError::LengthMismatch {
                kernel,
                argument: "columns",
                got: col.len(),
                expected: n,
            });
        }
        if level > h.height() {
            return Err(KernelError::InvalidArgument {
                kernel,
                message: format!(
                    "level {level} of column {j} exceeds its hierarchy's height {}",
                    h.height()
                ),
            });
        }
        if let Some(&bad) = col.iter().find(|&&c| c as usize >= h.leaves()) {
            return Err(KernelError::InvalidArgument {
                kernel,
                message: format!(
                    "code {bad} of column {j} is not a leaf of its hierarchy ({} leaves)",
                    h.leaves()
                ),
            });
        }
    }
    if let Some(w) = weights {
        if w.len() != n {
            return Err(KernelError::LengthMismatch {
                kernel,
                argument: "weights",
                got: w.len(),
                expected: n,
            });
        }
    }
    Ok(n)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn weights_add_up_per_class() {
        let h = Hierarchy::flat(3);
        let c = groupify(&[&[0, 1, 0, 2]], &[&h], &[0], Some(&[5, 1, 2, 7])).unwrap();
        assert_eq!(c.sizes, vec![7, 1, 7]);
        assert_eq!(c.first_row, vec![0, 1, 3]);
    }

    #[test]
    fn top_level_is_one_class() {
        let h = Hierarchy::flat(3);
        let c = groupify(&[&[0, 1, 2], &[2, 1, 0]], &[&h, &h], &[1, 0], None).unwrap();
        assert_eq!(c.sizes, vec![1, 1, 1]);
        let c = groupify(&[&[0, 1, 2], &[2, 1, 0]], &[&h, &h], &[1, 1], None).unwrap();
        assert_eq!(c.sizes, vec![3]);
    }

    #[test]
    fn unpackable_keys_still_group() {
        let h = Hierarchy::flat(70_000);
        let col: Vec<u32> = vec![69_999, 1, 69_999];
        let columns: Vec<&[u32]> = vec![&col; 5];
        let hs = vec![&h; 5];
        let c = groupify(&columns, &hs, &[0; 5], None).unwrap();
        assert_eq!(c.class_of_row, vec![0, 1, 0]);
    }

    #[test]
    fn level_above_height_is_an_error() {
        let h = Hierarchy::flat(2);
        let err = groupify(&[&[0, 1]], &[&h], &[2], None).unwrap_err();
        assert!(err.to_string().contains("exceeds its hierarchy's height"));
    }
}
