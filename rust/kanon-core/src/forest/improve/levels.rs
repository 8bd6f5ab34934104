//! The generalization level of every group, and the checks of row arrays shared by the
//! group-level passes.

use crate::error::{KernelError, Result};
use crate::forest::cost::model::CostModel;

/// Generalization level of every group and attribute: `levels[g · m + j]` is the lowest
/// level of hierarchy `j` at which all of group `g`'s values coincide (0 for a group
/// without rows).
///
/// # Errors
/// [`KernelError::InvalidArgument`] or [`KernelError::LengthMismatch`] for mismatched
/// lengths or out-of-range ids.
///
/// # Complexity
/// O(rows · m) plus O(groups · m · L) for L levels, and O(Σ_j n_j · log n_j · L) to rank
/// the n_j leaves of every hierarchy.
pub fn group_levels(
    model: &CostModel,
    tuples: &[u32],
    m: usize,
    tuple_of_row: &[u32],
    group_of_row: &[u32],
    groups: usize,
) -> Result<Vec<u32>> {
    let kernel = "group_levels";
    let n = model.check_tuples(tuples, m, kernel)?;
    check_rows(kernel, n, tuple_of_row, group_of_row, groups)?;
    // The meet of a group is the meet of its lowest- and highest-ranked leaves.
    let orders = model.orders();
    let ranks: Vec<&[u32]> = (0..m).map(|j| orders.dfs(j).ranks.as_slice()).collect();
    let leaf_at: Vec<&[u32]> = (0..m).map(|j| orders.dfs(j).leaf_at.as_slice()).collect();
    let mut range = vec![(u32::MAX, 0u32); groups * m];
    for (&t, &g) in tuple_of_row.iter().zip(group_of_row) {
        let row = &tuples[t as usize * m..(t as usize + 1) * m];
        let slots = &mut range[g as usize * m..(g as usize + 1) * m];
        for (j, (slot, &code)) in slots.iter_mut().zip(row).enumerate() {
            let rank = ranks[j][code as usize];
            *slot = (slot.0.min(rank), slot.1.max(rank));
        }
    }
    Ok(range
        .iter()
        .enumerate()
        .map(|(i, &(lo, hi))| {
            let j = i % m;
            if lo >= hi {
                0
            } else {
                model.meet_level(j, leaf_at[j][lo as usize], leaf_at[j][hi as usize]) as u32
            }
        })
        .collect())
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
