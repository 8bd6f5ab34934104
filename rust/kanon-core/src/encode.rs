//! Dictionary encoding: a column of values becomes dense `u32` codes assigned in value order,
//! so equality and order of codes are equality and order of values.

use std::collections::HashMap;
use std::hash::Hash;

use crate::error::{KernelError, Result};

/// A dictionary-encoded column.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Dictionary {
    /// Code of each input row, in `0..cardinality`.
    pub codes: Vec<u32>,
    /// For each code, the index of the first input row holding that value.
    pub first_row: Vec<usize>,
}

impl Dictionary {
    /// Number of distinct values.
    #[must_use]
    pub fn cardinality(&self) -> usize {
        self.first_row.len()
    }
}

/// Encode `values` to dense codes `0..d` where `d` is the number of distinct values and
/// code order follows value order (`a < b` ⇔ `code(a) < code(b)`).
///
/// # Arguments
/// * `values` – the column; any `Ord + Hash` type (integers, `&str`, ...).
///
/// # Returns
/// The [`Dictionary`]: one code per row and, per code, its first row.
///
/// # Errors
/// [`KernelError::InvalidArgument`] if there are more than `u32::MAX` distinct values.
///
/// # Complexity
/// O(n + d log d) time and O(n + d) space for n rows and d distinct values.
///
/// # Examples
/// ```
/// let d = kanon_core::encode(&["b", "a", "b", "c"]).unwrap();
/// assert_eq!(d.codes, vec![1, 0, 1, 2]);
/// assert_eq!(d.first_row, vec![1, 0, 3]);
/// ```
pub fn encode<T: Ord + Hash>(values: &[T]) -> Result<Dictionary> {
    let mut seen: HashMap<&T, u32> = HashMap::new();
    let mut first_row: Vec<usize> = Vec::new();
    let mut provisional = Vec::with_capacity(values.len());
    for (row, value) in values.iter().enumerate() {
        let next = u32::try_from(first_row.len()).map_err(|_| KernelError::InvalidArgument {
            kernel: "encode",
            message: "more than 4294967295 distinct values cannot be encoded".to_owned(),
        })?;
        let code = *seen.entry(value).or_insert_with(|| {
            first_row.push(row);
            next
        });
        provisional.push(code);
    }
    // Re-number so that codes follow value order.
    let mut order: Vec<usize> = (0..first_row.len()).collect();
    order.sort_unstable_by(|&a, &b| values[first_row[a]].cmp(&values[first_row[b]]));
    let mut rank = vec![0u32; order.len()];
    for (new_code, &old_code) in order.iter().enumerate() {
        // new_code < first_row.len() <= u32::MAX + 1 was checked above.
        rank[old_code] = u32::try_from(new_code).unwrap_or(u32::MAX);
    }
    let codes = provisional.iter().map(|&c| rank[c as usize]).collect();
    let first_row = order.iter().map(|&old| first_row[old]).collect();
    Ok(Dictionary { codes, first_row })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn empty_input_gives_empty_dictionary() {
        let d = encode::<i64>(&[]).unwrap();
        assert!(d.codes.is_empty());
        assert_eq!(d.cardinality(), 0);
    }

    #[test]
    fn integer_codes_follow_value_order() {
        let d = encode(&[30i64, -5, 30, 7, -5]).unwrap();
        assert_eq!(d.codes, vec![2, 0, 2, 1, 0]);
        assert_eq!(d.first_row, vec![1, 3, 0]);
    }
}
