//! The table as the forest's group-level passes borrow it ([`Table`]), and the checks of
//! row arrays they share.

use crate::error::{KernelError, Result};
use crate::forest::cost::model::CostModel;

/// A table, borrowed: its distinct tuples, the tuple of every row and their cost model.
/// Row `r` carries the leaf codes of tuple `t = tuple_of_row[r]`,
/// `tuples[t · m .. (t + 1) · m]`.
///
/// What the repair, cost, level and improvement passes share; the grouping
/// (`group_of_row`, `groups`) and `k` are passed beside it.
#[derive(Clone, Copy)]
pub(crate) struct Table<'a> {
    /// The cost model of the attributes.
    pub(crate) model: &'a CostModel,
    /// The distinct tuples, row-major, `m` leaf codes each.
    pub(crate) tuples: &'a [u32],
    /// The number of attributes.
    pub(crate) m: usize,
    /// The tuple of every row.
    pub(crate) tuple_of_row: &'a [u32],
}

impl<'a> Table<'a> {
    pub(crate) fn new(
        model: &'a CostModel,
        tuples: &'a [u32],
        m: usize,
        tuple_of_row: &'a [u32],
    ) -> Self {
        Self {
            model,
            tuples,
            m,
            tuple_of_row,
        }
    }

    /// Check the tuples against the model, then the rows against them and `groups`
    /// groups ([`check_rows`]); the number of tuples.
    pub(crate) fn check(
        &self,
        kernel: &'static str,
        group_of_row: &[u32],
        groups: usize,
    ) -> Result<usize> {
        let n = self.model.check_tuples(self.tuples, self.m, kernel)?;
        check_rows(kernel, n, self.tuple_of_row, group_of_row, groups)?;
        Ok(n)
    }
}

/// Check row arrays against `n` tuples and `groups` groups.
pub(crate) fn check_rows(
    kernel: &'static str,
    n: usize,
    tuple_of_row: &[u32],
    group_of_row: &[u32],
    groups: usize,
) -> Result<()> {
    let invalid = |message: String| KernelError::InvalidArgument { kernel, message };
    if tuple_of_row.len() != group_of_row.len() {
        return Err(KernelError::LengthMismatch {
            kernel,
            argument: "group_of_row",
            got: group_of_row.len(),
            expected: tuple_of_row.len(),
        });
    }
    if let Some(t) = tuple_of_row.iter().find(|&&t| t as usize >= n) {
        return Err(invalid(format!(
            "row of tuple {t}, but there are {n} tuples"
        )));
    }
    if let Some(g) = group_of_row.iter().find(|&&g| g as usize >= groups) {
        return Err(invalid(format!(
            "row in group {g}, but there are {groups} groups"
        )));
    }
    Ok(())
}
