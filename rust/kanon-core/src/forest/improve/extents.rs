//! Observed extents of groups (rank ranges and distinct categories) under
//! [`LevelCost::Range`], and the cost of a release.

use crate::error::Result;
use crate::forest::cost::model::{CostModel, LevelCost};
use crate::forest::improve::levels::group_levels_in;
use crate::forest::table::Table;

/// A group summarized for its cost: its row count, the rank range of every attribute
/// priced by a leaf order ([`CostModel::interval_ranks`]) and the sorted distinct ranks
/// of every categorical attribute under [`LevelCost::Range`] ([`CostModel::is_set`]).
pub(crate) struct Extent {
    pub(crate) size: usize,
    ranges: Vec<(u32, u32)>,
    /// Per attribute of [`Extents::sets`].
    sets: Vec<Vec<u32>>,
}

/// The leaf ranks that [`Extent`]s are made of.
pub(crate) struct Extents<'a> {
    model: &'a CostModel,
    m: usize,
    /// `ranks[j][leaf]`, and `leaf_at[j][rank]`.
    ranks: Vec<&'a [u32]>,
    leaf_at: Vec<&'a [u32]>,
    /// The attributes priced by their distinct values.
    sets: Vec<usize>,
}

impl<'a> Extents<'a> {
    pub(crate) fn new(model: &'a CostModel, m: usize) -> Self {
        let orders = model.orders();
        let ranks = (0..m)
            .map(|j| orders.interval(j).ranks.as_slice())
            .collect();
        let leaf_at = (0..m)
            .map(|j| orders.interval(j).leaf_at.as_slice())
            .collect();
        Self {
            model,
            m,
            ranks,
            leaf_at,
            sets: (0..m).filter(|&j| model.is_set(j)).collect(),
        }
    }

    /// The extents of groups `0..groups` of `table` (of this model).
    pub(crate) fn of_groups(
        &self,
        table: &Table<'_>,
        group_of_row: &[u32],
        groups: usize,
    ) -> Vec<Extent> {
        let Table {
            tuples,
            tuple_of_row,
            ..
        } = *table;
        let m = self.m;
        let mut out: Vec<Extent> = (0..groups)
            .map(|_| Extent {
                size: 0,
                ranges: vec![(u32::MAX, 0); m],
                sets: vec![Vec::new(); self.sets.len()],
            })
            .collect();
        for (&t, &g) in tuple_of_row.iter().zip(group_of_row) {
            let row = &tuples[t as usize * m..(t as usize + 1) * m];
            let e = &mut out[g as usize];
            e.size += 1;
            for (j, (range, &code)) in e.ranges.iter_mut().zip(row).enumerate() {
                let rank = self.ranks[j][code as usize];
                *range = (range.0.min(rank), range.1.max(rank));
            }
            for (values, &j) in e.sets.iter_mut().zip(&self.sets) {
                values.push(self.ranks[j][row[j] as usize]);
            }
        }
        for e in &mut out {
            for values in &mut e.sets {
                values.sort_unstable();
                values.dedup();
            }
        }
        out
    }

    /// Units of one row of a group.
    pub(crate) fn units(&self, e: &Extent) -> u64 {
        let ranged: u64 = e
            .ranges
            .iter()
            .enumerate()
            .filter(|&(j, &(lo, hi))| lo < hi && !self.model.is_set(j))
            .map(|(j, &(lo, hi))| {
                let leaf_at = &self.leaf_at[j];
                self.model
                    .attribute_units(j, leaf_at[lo as usize], leaf_at[hi as usize])
            })
            .sum();
        let counted: u64 = e
            .sets
            .iter()
            .zip(&self.sets)
            .map(|(values, &j)| values.len().saturating_sub(1) as u64 * self.model.set_units(j))
            .sum();
        ranged + counted
    }

    /// The extent of the union of two groups.
    pub(crate) fn union(&self, a: &Extent, b: &Extent) -> Extent {
        Extent {
            size: a.size + b.size,
            ranges: a
                .ranges
                .iter()
                .zip(&b.ranges)
                .map(|(x, y)| (x.0.min(y.0), x.1.max(y.1)))
                .collect(),
            sets: a
                .sets
                .iter()
                .zip(&b.sets)
                .map(|(x, y)| {
                    let mut both: Vec<u32> = x.iter().chain(y).copied().collect();
                    both.sort_unstable();
                    both.dedup();
                    both
                })
                .collect(),
        }
    }
}

/// Cost of a release: Σ over rows and attributes of the units of the group's node, as a
/// cost ([`CostModel::units_to_cost`]); under [`LevelCost::Range`], Σ over groups of
/// `|G| · Σ_j weight_j · NCP_j(G)` of the observed values (the sum of
/// [`CostModel::group_cost`] over the groups).
///
/// # Errors
/// [`KernelError::InvalidArgument`](crate::error::KernelError::InvalidArgument) or [`KernelError::LengthMismatch`](crate::error::KernelError::LengthMismatch) for inconsistent
/// inputs.
///
/// # Complexity
/// As [`group_levels`](crate::forest::improve::group_levels), plus O(rows · m).
pub fn release_cost(
    model: &CostModel,
    tuples: &[u32],
    m: usize,
    tuple_of_row: &[u32],
    group_of_row: &[u32],
    groups: usize,
) -> Result<f64> {
    release_cost_in(
        &Table::new(model, tuples, m, tuple_of_row),
        group_of_row,
        groups,
    )
}

/// [`release_cost`] of `table`.
pub(crate) fn release_cost_in(
    table: &Table<'_>,
    group_of_row: &[u32],
    groups: usize,
) -> Result<f64> {
    let Table {
        model,
        tuples,
        m,
        tuple_of_row,
    } = *table;
    if model.kind() == LevelCost::Range {
        table.check("release_cost", group_of_row, groups)?;
        let extents = Extents::new(model, m);
        let units: u128 = extents
            .of_groups(table, group_of_row, groups)
            .iter()
            .map(|e| e.size as u128 * u128::from(extents.units(e)))
            .sum();
        return Ok(units as f64 / model.scale());
    }
    let levels = group_levels_in(table, group_of_row, groups)?;
    let units: u64 = tuple_of_row
        .iter()
        .zip(group_of_row)
        .map(|(&t, &g)| {
            let row = &tuples[t as usize * m..(t as usize + 1) * m];
            (0..m)
                .map(|j| model.level_units(j, levels[g as usize * m + j] as usize, row[j]))
                .sum::<u64>()
        })
        .sum();
    Ok(model.units_to_cost(units))
}
