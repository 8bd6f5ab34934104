//! The generalization level of every group and attribute.

use crate::error::Result;
use crate::forest::cost::model::CostModel;
use crate::forest::table::Table;

/// Generalization level of every group and attribute: `levels[g · m + j]` is the lowest
/// level of hierarchy `j` at which all of group `g`'s values coincide (0 for a group
/// without rows).
///
/// # Errors
/// [`KernelError::InvalidArgument`](crate::error::KernelError::InvalidArgument) or
/// [`KernelError::LengthMismatch`](crate::error::KernelError::LengthMismatch) for mismatched
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
    group_levels_in(
        &Table::new(model, tuples, m, tuple_of_row),
        group_of_row,
        groups,
    )
}

/// [`group_levels`] of `table`.
pub(crate) fn group_levels_in(
    table: &Table<'_>,
    group_of_row: &[u32],
    groups: usize,
) -> Result<Vec<u32>> {
    let Table {
        model,
        tuples,
        m,
        tuple_of_row,
    } = *table;
    table.check("group_levels", group_of_row, groups)?;
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
