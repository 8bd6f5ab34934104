//! The repair pass after DECOMPOSE: every group below k rows merges into the group
//! whose union meet costs least, until every group holds at least k rows.

use crate::error::{KernelError, Result};
use crate::forest::cost::model::{CostModel, LevelCost};
use crate::forest::improve::extents::{Extent, Extents};
use crate::forest::improve::levels::group_levels_in;
use crate::forest::table::Table;

/// Outcome of [`repair`].
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct Repaired {
    /// Number of groups after the pass (ids renumbered densely, order kept).
    pub groups: usize,
    /// Number of groups with fewer than k rows that were merged into another.
    pub merged: usize,
}

/// The meet of a group: one member tuple and the level per attribute.
struct Meet {
    rep: u32,
    levels: Vec<u32>,
    size: usize,
}

impl Meet {
    /// Units of one row of the group.
    fn row_units(&self, table: &Table<'_>) -> u64 {
        let Table {
            model, tuples, m, ..
        } = *table;
        let rep = &tuples[self.rep as usize * m..(self.rep as usize + 1) * m];
        (0..m)
            .map(|j| model.level_units(j, self.levels[j] as usize, rep[j]))
            .sum()
    }
}

/// Validation pass: merge every group with fewer than `k` rows into the group whose cost
/// grows least when it joins (ties to the smaller id), until every group holds at least
/// `k` rows. Group ids are renumbered densely in their original order.
///
/// Costs are the model's group costs ([`CostModel::group_cost`]): the meets of the groups,
/// or under [`LevelCost::Range`] the NCP of their observed values.
///
/// # Errors
/// [`KernelError::InvalidArgument`] for inconsistent inputs, `k = 0`, or fewer than `k`
/// rows in all.
///
/// # Complexity
/// O(rows · m) plus O(s · g · m · L) for `s` small groups among `g` (under
/// [`LevelCost::Range`], O(rows · m · log rows) plus O(s · g · m) and the sizes of the
/// groups' sets of categorical values).
pub fn repair(
    model: &CostModel,
    tuples: &[u32],
    m: usize,
    tuple_of_row: &[u32],
    group_of_row: &mut [u32],
    groups: usize,
    k: u64,
) -> Result<Repaired> {
    repair_in(
        &Table::new(model, tuples, m, tuple_of_row),
        group_of_row,
        groups,
        usize::try_from(k).unwrap_or(usize::MAX),
    )
}

/// [`repair`] of `table`.
pub(crate) fn repair_in(
    table: &Table<'_>,
    group_of_row: &mut [u32],
    groups: usize,
    k: usize,
) -> Result<Repaired> {
    let kernel = "repair";
    table.check(kernel, group_of_row, groups)?;
    let invalid = |message: String| KernelError::InvalidArgument { kernel, message };
    if k == 0 {
        return Err(invalid("k must be at least 1".to_owned()));
    }
    if table.tuple_of_row.len() < k {
        return Err(invalid(format!(
            "k exceeds the number of rows: k = {k} but there are {} rows",
            table.tuple_of_row.len()
        )));
    }
    let merges = if table.model.kind() == LevelCost::Range {
        merge_extents(table, group_of_row, groups, k)
    } else {
        merge_meets(table, group_of_row, groups, k)?
    };
    let Some(Merges { into, live, merged }) = merges else {
        return Err(invalid("internal error: no group to merge into".to_owned()));
    };
    // Resolve merge chains (a group merged into one that merged later) and renumber.
    let mut dense = vec![u32::MAX; groups];
    let mut next = 0u32;
    for (g, &alive) in live.iter().enumerate() {
        if alive {
            dense[g] = next;
            next += 1;
        }
    }
    let resolve = |mut g: usize| {
        while !live[g] {
            g = into[g] as usize;
        }
        dense[g]
    };
    let map: Vec<u32> = (0..groups)
        .map(|g| {
            if into[g] as usize == g && !live[g] {
                u32::MAX
            } else {
                resolve(g)
            }
        })
        .collect();
    for g in group_of_row.iter_mut() {
        *g = map[*g as usize];
    }
    Ok(Repaired {
        groups: next as usize,
        merged,
    })
}

/// The merges of the repair pass: the group each group merged into (itself if none),
/// whether each group is left with rows, and the number of merges.
struct Merges {
    into: Vec<u32>,
    live: Vec<bool>,
    merged: usize,
}

/// The merges of [`repair`] by hierarchy meets; `None` if a small group found no group to
/// merge into.
fn merge_meets(
    table: &Table<'_>,
    group_of_row: &[u32],
    groups: usize,
    k: usize,
) -> Result<Option<Merges>> {
    let Table {
        model,
        tuples,
        m,
        tuple_of_row,
    } = *table;
    let levels = group_levels_in(table, group_of_row, groups)?;
    let mut meets: Vec<Option<Meet>> = (0..groups)
        .map(|g| {
            Some(Meet {
                rep: u32::MAX,
                levels: levels[g * m..(g + 1) * m].to_vec(),
                size: 0,
            })
        })
        .collect();
    for (&t, &g) in tuple_of_row.iter().zip(group_of_row.iter()) {
        if let Some(meet) = meets[g as usize].as_mut() {
            if meet.rep == u32::MAX {
                meet.rep = t;
            }
            meet.size += 1;
        }
    }
    // Empty group ids are dropped.
    for meet in &mut meets {
        if meet.as_ref().is_some_and(|x| x.size == 0) {
            *meet = None;
        }
    }
    let mut into: Vec<u32> = (0..groups as u32).collect();
    let mut merged = 0;
    for g in 0..groups {
        let Some(small) = meets[g].take_if(|x| x.size < k) else {
            continue;
        };
        let small_units = small.row_units(table) * small.size as u64;
        let a = &tuples[small.rep as usize * m..(small.rep as usize + 1) * m];
        let mut best: Option<(u64, usize, Vec<u32>)> = None;
        for (h, other) in meets.iter().enumerate() {
            let Some(other) = other else { continue };
            let b = &tuples[other.rep as usize * m..(other.rep as usize + 1) * m];
            let joined: Vec<u32> = (0..m)
                .map(|j| {
                    (small.levels[j].max(other.levels[j]))
                        .max(model.meet_level(j, a[j], b[j]) as u32)
                })
                .collect();
            let per_row: u64 = (0..m)
                .map(|j| model.level_units(j, joined[j] as usize, b[j]))
                .sum();
            let after = per_row * (small.size + other.size) as u64;
            let before = small_units + other.row_units(table) * other.size as u64;
            let delta = after - before;
            if best.as_ref().is_none_or(|(d, _, _)| delta < *d) {
                best = Some((delta, h, joined));
            }
        }
        let Some((_, h, joined)) = best else {
            return Ok(None);
        };
        let target = meets[h].as_mut().expect("chosen group exists");
        target.levels = joined;
        target.size += small.size;
        into[g] = h as u32;
        merged += 1;
    }
    Ok(Some(Merges {
        into,
        live: meets.iter().map(Option::is_some).collect(),
        merged,
    }))
}

/// The merges of [`repair`] by range costs ([`LevelCost::Range`]); `None` if a small group
/// found no group to merge into.
fn merge_extents(
    table: &Table<'_>,
    group_of_row: &[u32],
    groups: usize,
    k: usize,
) -> Option<Merges> {
    let extents = Extents::new(table.model, table.m);
    let mut live: Vec<Option<Extent>> = extents
        .of_groups(table, group_of_row, groups)
        .into_iter()
        .map(|e| (e.size > 0).then_some(e))
        .collect();
    let mut into: Vec<u32> = (0..groups as u32).collect();
    let mut merged = 0;
    for g in 0..groups {
        let Some(small) = live[g].take_if(|x| x.size < k) else {
            continue;
        };
        let small_cost = small.size as u128 * u128::from(extents.units(&small));
        let mut best: Option<(u128, usize, Extent)> = None;
        for (h, other) in live.iter().enumerate() {
            let Some(other) = other else { continue };
            let joined = extents.union(&small, other);
            let after = joined.size as u128 * u128::from(extents.units(&joined));
            let before = small_cost + other.size as u128 * u128::from(extents.units(other));
            // The units of a group never drop when it grows: the delta is not negative.
            let delta = after.saturating_sub(before);
            if best.as_ref().is_none_or(|(d, _, _)| delta < *d) {
                best = Some((delta, h, joined));
            }
        }
        let (_, h, joined) = best?;
        live[h] = Some(joined);
        into[g] = h as u32;
        merged += 1;
    }
    Some(Merges {
        into,
        live: live.iter().map(Option::is_some).collect(),
        merged,
    })
}
