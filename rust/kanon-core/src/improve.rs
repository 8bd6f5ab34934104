//! Group-level passes after DECOMPOSE: the repair pass that guarantees every group holds
//! at least k rows, improvement passes that lower the release cost while keeping every
//! group at k rows or more, and the generalization level of each group.
//!
//! Rows are *units*: row `r` carries the leaf codes of tuple `tuple_of_row[r]` (row-major
//! `tuples`, `m` codes per tuple) and belongs to group `group_of_row[r]` (dense ids
//! `0..groups`). The cost of a group is `|G| · Σ_j units(j, meet_j(G))`, where `meet_j(G)`
//! is the lowest node of hierarchy `j` holding every value of the group; the cost of a
//! release is the sum over its groups (the model's units, see [`crate::cost`]).
//!
//! Leaves are ranked in depth-first order of their hierarchy, so the leaves under any node
//! form a range of ranks and `meet_j(G)` is the meet of the lowest- and highest-ranked
//! leaf of `G`: a group is summarized per attribute by its rank range.
//!
//! Under [`LevelCost::Range`] the cost of a group is `|G| · Σ_j weight_j · NCP_j(G)` of
//! its observed values instead (see [`crate::cost`]). A numeric attribute is still an
//! interval: its leaves are ranked by key, and the units of a group are those of its
//! lowest- and highest-ranked leaves (`(max − min key) / span`). A categorical attribute
//! is not: it costs `(distinct values − 1)` units of one extra value, so the passes keep
//! the count of every value per group (a *tally*) beside the rank ranges, and every cost
//! they compare (the repair pass's merges, the split pass's cuts, moves, swaps, ejected
//! rows and the regroup pass's pools) adds the categorical attributes' terms from the
//! tallies. The levels reported per group are still the hierarchy meets.

use rayon::prelude::*;

use crate::cancel;
use crate::cost::{CostModel, LevelCost};
use crate::error::{KernelError, Result};
use crate::regroup::Pool;

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
    let ranks: Vec<Vec<u32>> = (0..m).map(|j| model.hierarchy(j).dfs_ranks()).collect();
    let leaf_at: Vec<Vec<u32>> = ranks.iter().map(|r| inverse(r)).collect();
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

/// The inverse of a permutation of `0..n`.
fn inverse(permutation: &[u32]) -> Vec<u32> {
    let mut out = vec![0u32; permutation.len()];
    for (i, &p) in permutation.iter().enumerate() {
        out[p as usize] = i as u32;
    }
    out
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
    fn row_units(&self, model: &CostModel, tuples: &[u32], m: usize) -> u64 {
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
    k: usize,
) -> Result<Repaired> {
    let kernel = "repair";
    let n = model.check_tuples(tuples, m, kernel)?;
    check_rows(kernel, n, tuple_of_row, group_of_row, groups)?;
    let invalid = |message: String| KernelError::InvalidArgument { kernel, message };
    if k == 0 {
        return Err(invalid("k must be at least 1".to_owned()));
    }
    if tuple_of_row.len() < k {
        return Err(invalid(format!(
            "k exceeds the number of rows: k = {k} but there are {} rows",
            tuple_of_row.len()
        )));
    }
    let merges = if model.kind() == LevelCost::Range {
        merge_extents(model, tuples, m, tuple_of_row, group_of_row, groups, k)
    } else {
        merge_meets(model, tuples, m, tuple_of_row, group_of_row, groups, k)?
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
    model: &CostModel,
    tuples: &[u32],
    m: usize,
    tuple_of_row: &[u32],
    group_of_row: &[u32],
    groups: usize,
    k: usize,
) -> Result<Option<Merges>> {
    let levels = group_levels(model, tuples, m, tuple_of_row, group_of_row, groups)?;
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
        let small_units = small.row_units(model, tuples, m) * small.size as u64;
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
            let before = small_units + other.row_units(model, tuples, m) * other.size as u64;
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
    model: &CostModel,
    tuples: &[u32],
    m: usize,
    tuple_of_row: &[u32],
    group_of_row: &[u32],
    groups: usize,
    k: usize,
) -> Option<Merges> {
    let extents = Extents::new(model, m);
    let mut live: Vec<Option<Extent>> = extents
        .of_groups(tuples, tuple_of_row, group_of_row, groups)
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

/// A group summarized for its cost: its row count, the rank range of every attribute
/// priced by a leaf order ([`CostModel::interval_ranks`]) and the sorted distinct ranks
/// of every categorical attribute under [`LevelCost::Range`] ([`CostModel::is_set`]).
struct Extent {
    size: usize,
    ranges: Vec<(u32, u32)>,
    /// Per attribute of [`Extents::sets`].
    sets: Vec<Vec<u32>>,
}

/// The leaf ranks that [`Extent`]s are made of.
struct Extents<'a> {
    model: &'a CostModel,
    m: usize,
    /// `ranks[j][leaf]`, and `leaf_at[j][rank]`.
    ranks: Vec<Vec<u32>>,
    leaf_at: Vec<Vec<u32>>,
    /// The attributes priced by their distinct values.
    sets: Vec<usize>,
}

impl<'a> Extents<'a> {
    fn new(model: &'a CostModel, m: usize) -> Self {
        let ranks: Vec<Vec<u32>> = (0..m).map(|j| model.interval_ranks(j)).collect();
        let leaf_at = ranks.iter().map(|r| inverse(r)).collect();
        Self {
            model,
            m,
            ranks,
            leaf_at,
            sets: (0..m).filter(|&j| model.is_set(j)).collect(),
        }
    }

    /// The extents of groups `0..groups` of the rows.
    fn of_groups(
        &self,
        tuples: &[u32],
        tuple_of_row: &[u32],
        group_of_row: &[u32],
        groups: usize,
    ) -> Vec<Extent> {
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
    fn units(&self, e: &Extent) -> u64 {
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
    fn union(&self, a: &Extent, b: &Extent) -> Extent {
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
/// [`KernelError::InvalidArgument`] or [`KernelError::LengthMismatch`] for inconsistent
/// inputs.
///
/// # Complexity
/// As [`group_levels`], plus O(rows · m).
pub fn release_cost(
    model: &CostModel,
    tuples: &[u32],
    m: usize,
    tuple_of_row: &[u32],
    group_of_row: &[u32],
    groups: usize,
) -> Result<f64> {
    if model.kind() == LevelCost::Range {
        let n = model.check_tuples(tuples, m, "release_cost")?;
        check_rows("release_cost", n, tuple_of_row, group_of_row, groups)?;
        let extents = Extents::new(model, m);
        let units: u128 = extents
            .of_groups(tuples, tuple_of_row, group_of_row, groups)
            .iter()
            .map(|e| e.size as u128 * u128::from(extents.units(e)))
            .sum();
        return Ok(units as f64 / model.scale());
    }
    let levels = group_levels(model, tuples, m, tuple_of_row, group_of_row, groups)?;
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

/// Attributes with at most this many leaves get a dense `rank × rank → units` table of
/// interval meets (at most 2 MiB each); larger ones walk the hierarchy per lookup.
const SPAN_TABLE_LEAVES: usize = 512;
/// Near tuples listed per tuple: the candidate groups of a row are the groups holding a
/// row of its tuple or of one of these.
const NEAR: usize = 40;
/// Tuples read on each side of a tuple, in every sorted order, when listing its near
/// tuples.
const WINDOW: usize = 10;
/// Near tuples whose groups a row of a cheap group (per-row units below the average)
/// considers in the local search; rows of the other groups consider all [`NEAR`].
const NARROW: usize = 8;
/// A tuple is marked for re-evaluation when the group of one of its first `REACH` near
/// tuples changes (the groups of farther ones rarely make a difference).
const REACH: usize = 8;
/// Hard cap on the passes of one local search over the rows.
const SEARCH_PASSES: usize = 12;
/// Groups pooled and re-partitioned from scratch by the regroup pass: a group and the
/// neighbouring groups of the cheapest union meets.
const REGROUP_GROUPS: usize = 4;
/// Near tuples per row of a group whose groups are its neighbours in the regroup pass.
const REGROUP_WIDTH: usize = 4;
/// Pools solved in parallel before any is applied by the regroup pass.
const REGROUP_BATCH: usize = 64;
/// Hard cap on the rounds of the improvement loop.
const ROUNDS: usize = 8;
/// [`NEAR`] under [`Effort::Fast`].
const FAST_NEAR: usize = 10;
/// [`WINDOW`] under [`Effort::Fast`].
const FAST_WINDOW: usize = 3;
/// A cut whose smaller side has at least this many rows (and an eighth of the group)
/// splits its two sides in parallel.
const PARALLEL_SPLIT_ROWS: usize = 2048;

/// How much work [`improve_with_stats`] does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effort {
    /// Eject, split and search passes, then rounds that add regroup until a round changes
    /// nothing; 40 near tuples per tuple from windows of 10.
    Full,
    /// One eject, one split and one search pass; 10 near tuples per tuple from windows of
    /// 3. On 240k generated census rows in blocks of 50,000 it took a sixth of the time
    /// of [`Effort::Full`] for 12 % more loss (which is still a quarter of Mondrian's).
    Fast,
}

/// What one pass of [`improve_with_stats`] did.
#[derive(Debug, Clone, PartialEq)]
pub struct PassStats {
    /// The pass: `"eject"`, `"split"`, `"regroup"` or `"search"`.
    pub pass: &'static str,
    /// Changes it applied (groups ejected or merged and cut, groups added by splits, rows
    /// moved or swapped).
    pub changes: usize,
    /// Release cost after the pass (as [`release_cost`]).
    pub cost: f64,
    /// Wall-clock seconds the pass took.
    pub seconds: f64,
}

/// Trace of one run of [`improve_with_stats`].
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImproveStats {
    /// Release cost of the input.
    pub cost_before: f64,
    /// Wall-clock seconds spent ranking leaves and listing near tuples before the passes.
    pub setup_seconds: f64,
    /// Every pass in the order it ran.
    pub passes: Vec<PassStats>,
}

/// Improvement passes: lower the release cost while every group keeps at least `k` rows.
///
/// Same as [`improve_with_stats`] without the trace.
///
/// # Errors
/// As [`improve_with_stats`].
///
/// # Complexity
/// As [`improve_with_stats`].
///
/// # Examples
/// ```
/// use kanon_core::cost::{CostModel, LevelCost};
/// use kanon_core::improve::{improve, release_cost, Effort};
/// use kanon_core::Hierarchy;
/// let age = Hierarchy::try_from_levels(&[&[0, 1, 2, 3], &[0, 0, 1, 1], &[0, 0, 0, 0]]).unwrap();
/// let model = CostModel::try_new(vec![age], vec![1.0], LevelCost::Ncp).unwrap();
/// let tuples = [0, 1, 2, 3];
/// let tuple_of_row = [0, 1, 2, 3];
/// // {0, 2} and {1, 3} both need the root; {0, 1} and {2, 3} only the pairs.
/// let mut group_of_row = [0, 1, 0, 1];
/// let before = release_cost(&model, &tuples, 1, &tuple_of_row, &group_of_row, 2).unwrap();
/// let groups =
///     improve(&model, &tuples, 1, &tuple_of_row, &mut group_of_row, 2, 2, Effort::Full).unwrap();
/// let after = release_cost(&model, &tuples, 1, &tuple_of_row, &group_of_row, groups).unwrap();
/// assert_eq!((groups, group_of_row), (2, [0, 0, 1, 1]));
/// assert!(after < before);
/// ```
#[allow(clippy::too_many_arguments)]
pub fn improve(
    model: &CostModel,
    tuples: &[u32],
    m: usize,
    tuple_of_row: &[u32],
    group_of_row: &mut [u32],
    groups: usize,
    k: usize,
    effort: Effort,
) -> Result<usize> {
    improve_with_stats(
        model,
        tuples,
        m,
        tuple_of_row,
        group_of_row,
        groups,
        k,
        effort,
    )
    .map(|(count, _)| count)
}

/// Improvement passes: lower the release cost of a grouping while every group keeps at
/// least `k` rows, and report what each pass did.
///
/// The cost is the release cost ([`release_cost`], in the model's exact units). Every
/// change is applied only if it strictly lowers the cost, so the result never costs more
/// than the input, and no change ever leaves a group with fewer than `k` rows.
///
/// The passes:
/// * **eject**: a group keeps only its rows under one hierarchy node below its meet in
///   one attribute (at least `k` of them), or none; each other row moves to the
///   candidate group where it costs least (counting the rows placed before it). The
///   best such change of the group, if it lowers the cost.
/// * **split**: every group of at least `2k` rows is cut in two by the best binary cut
///   (rows sorted by their depth-first rank in one attribute, ties by the ranks in the
///   others; every attribute and every position leaving both sides `≥ k`) while the cut
///   lowers the cost, recursively.
/// * **regroup** (a large-neighbourhood move): a group is pooled with the 3 groups whose
///   union with it has the cheapest meet among the groups holding the tuple or one of the
///   4 nearest tuples of one of its rows, and the pool's rows are grouped again from
///   scratch (top-down cuts and k-member clustering from several seeds, each polished by
///   moves and swaps inside the pool, see `regroup.rs`); the cheapest grouping replaces
///   the pool's if it lowers the cost. Pools are solved in parallel in batches of 64 and
///   applied in order, skipping a pool an earlier one of its batch changed.
/// * **search**: every row, in row order, takes the best of moving to a candidate group
///   (only if its own group keeps `≥ k` rows) or swapping with a row of a candidate
///   group, if it lowers the cost; passes repeat until one changes nothing (at most
///   12). Candidate groups of a row hold its tuple or one of its near tuples: the 40
///   tuples closest by pair cost among those within 10 places of it in one sorted order
///   per attribute (that attribute compared last, the others by decreasing cost of their
///   cheapest mismatch); rows of groups cheaper per row than the average look at the
///   groups of the 8 closest only.
///
/// Under [`Effort::Full`] the order is eject, eject, split, eject, split, search, then
/// rounds of eject, split, regroup and search until a round changes nothing (at most 8
/// rounds); under [`Effort::Fast`] it is eject, split, search, with 10 near tuples listed
/// from windows of 3. Under
/// [`LevelCost::Range`] the rounds leave regroup out (it cost 3 to 15 times the time of
/// the other passes on Adult for 7 to 15 % lower loss). A row or group is
/// looked at again only if it or its neighbourhood changed since it last found nothing
/// to do.
///
/// Ties are broken by group and row index, and parallel work (listing near tuples,
/// splits, regroup batches) is joined in a fixed order: the grouping depends only on the
/// input, not on the number of threads.
///
/// # Arguments
/// * `model`, `tuples`, `m` – the cost model and the distinct rows (`m` leaf codes each).
/// * `tuple_of_row` – the tuple of every row.
/// * `group_of_row` – the group of every row (ids below `groups`; ids without rows are
///   allowed); overwritten with the improved grouping, ids `0..count` numbered in order
///   of each group's first row.
/// * `groups` – the number of group ids.
/// * `k` – the smallest allowed group size; every input group with rows must have at
///   least `k` of them (run [`repair`] first).
/// * `effort` – which passes run, see above.
///
/// # Returns
/// The number of groups after the passes, and the trace.
///
/// # Errors
/// [`KernelError::InvalidArgument`] or [`KernelError::LengthMismatch`] for inconsistent
/// inputs, `k = 0`, an input group with fewer than `k` rows, or more than `u32::MAX` rows
/// and group ids together.
///
/// # Complexity
/// For `r` rows of `n` tuples, `m` attributes and groups of at most `s` rows: listing
/// near tuples takes O(m · n · (log n + W · m)) for W = 10; a split pass takes
/// O(m · r · (log s + m)) per level of cuts; an eject pass O(r · (L · s + c) · m) for L
/// levels and `c ≤ 41` candidate groups per row; a search pass O(r · c · m) plus
/// O(s · m) per swap partner not ruled out by a lower bound; a regroup pass, per group,
/// O(p · log p · m) for the cuts and O(p² · m) per k-member seed (at most 8) and per sweep
/// of the pool's local search (at most 16), for pools of p ≤ 4s rows. Each pass is run a
/// bounded number of times. Space O(r + n · (m + 40) + Σ_j n_j²) with n_j² for each attribute of at most
/// 512 leaves.
#[allow(clippy::too_many_arguments)]
pub fn improve_with_stats(
    model: &CostModel,
    tuples: &[u32],
    m: usize,
    tuple_of_row: &[u32],
    group_of_row: &mut [u32],
    groups: usize,
    k: usize,
    effort: Effort,
) -> Result<(usize, ImproveStats)> {
    let kernel = "improve";
    cancel::check(kernel)?;
    let n = model.check_tuples(tuples, m, kernel)?;
    check_rows(kernel, n, tuple_of_row, group_of_row, groups)?;
    let invalid = |message: String| KernelError::InvalidArgument { kernel, message };
    if k == 0 {
        return Err(invalid("k must be at least 1".to_owned()));
    }
    if tuple_of_row.len().saturating_add(groups) > u32::MAX as usize {
        return Err(invalid(format!(
            "{} rows and {groups} group ids exceed the limit of 4294967295 together",
            tuple_of_row.len()
        )));
    }
    let mut sizes = vec![0usize; groups];
    for &g in group_of_row.iter() {
        sizes[g as usize] += 1;
    }
    if let Some((g, &size)) = sizes.iter().enumerate().find(|(_, &s)| s > 0 && s < k) {
        return Err(invalid(format!(
            "group {g} has {size} rows, fewer than k = {k}; run the repair pass first"
        )));
    }
    let start = std::time::Instant::now();
    let space = Space::new(model, tuples, m, n, tuple_of_row, k);
    let near = match effort {
        Effort::Full => space.near_tuples(n, NEAR, WINDOW),
        Effort::Fast => space.near_tuples(n, FAST_NEAR, FAST_WINDOW),
    };
    let mut state = State::new(&space, group_of_row, groups, &near);
    drop(near);
    let mut stats = ImproveStats {
        cost_before: state.total_units() as f64 / model.scale(),
        setup_seconds: start.elapsed().as_secs_f64(),
        passes: Vec::new(),
    };
    let mut scratch = Scratch::new(m);
    let mut run = |state: &mut State, pass: Pass, stats: &mut ImproveStats| -> usize {
        // Cancelled: the passes left are skipped (each stops early too; the state stays
        // a valid grouping) and the error is returned before compacting.
        if cancel::requested() {
            return 0;
        }
        let clock = std::time::Instant::now();
        let changes = match pass {
            Pass::Eject => state.eject_pass(&space, &mut scratch),
            Pass::Split => state.split_pass(&space),
            Pass::Search => state.local_search(&space, &mut scratch),
            Pass::Regroup => state.regroup_pass(&space, &mut scratch),
        };
        stats.passes.push(PassStats {
            pass: pass.name(),
            changes,
            cost: state.total_units() as f64 / model.scale(),
            seconds: clock.elapsed().as_secs_f64(),
        });
        changes
    };
    if effort == Effort::Fast {
        for pass in [Pass::Eject, Pass::Split, Pass::Search] {
            run(&mut state, pass, &mut stats);
        }
        cancel::check(kernel)?;
        let count = state.compact(group_of_row, k)?;
        return Ok((count, stats));
    }
    for pass in [
        Pass::Eject,
        Pass::Eject,
        Pass::Split,
        Pass::Eject,
        Pass::Split,
        Pass::Search,
    ] {
        run(&mut state, pass, &mut stats);
    }
    // Under range costs the regroup pass is left out: on Adult (9 QIs, range labels) it
    // took 3 to 15 times the time of the other passes for 7 to 15 % lower loss.
    let regroup = model.kind() != LevelCost::Range;
    for _ in 0..ROUNDS {
        let changes: usize = [Pass::Eject, Pass::Split, Pass::Regroup, Pass::Search]
            .into_iter()
            .filter(|pass| regroup || !matches!(pass, Pass::Regroup))
            .map(|pass| run(&mut state, pass, &mut stats))
            .sum();
        if changes == 0 {
            break;
        }
    }
    cancel::check(kernel)?;
    let count = state.compact(group_of_row, k)?;
    Ok((count, stats))
}

/// The passes of [`improve_with_stats`].
#[derive(Debug, Clone, Copy)]
enum Pass {
    Eject,
    Split,
    Regroup,
    Search,
}

impl Pass {
    fn name(self) -> &'static str {
        match self {
            Self::Eject => "eject",
            Self::Split => "split",
            Self::Regroup => "regroup",
            Self::Search => "search",
        }
    }
}

/// Read-only view of the rows for the passes: depth-first ranks and interval costs.
struct Space<'a> {
    model: &'a CostModel,
    m: usize,
    k: usize,
    tuple_of_row: &'a [u32],
    /// `rank[t · m + j]`: depth-first rank of tuple `t`'s leaf in hierarchy `j`.
    rank: Vec<u32>,
    spans: Vec<Span>,
    /// Attributes by decreasing units of their cheapest mismatch (ties by index).
    importance: Vec<usize>,
    /// `split_key[a][t]`: position of tuple `t` among all tuples sorted by their rank in
    /// attribute `a`, then by their ranks in the other attributes in `importance` order.
    split_key: Vec<Vec<u32>>,
    /// The attributes priced by their distinct values ([`CostModel::is_set`]); their
    /// ranks are their values, and [`Self::span`] prices them 0.
    sets: Vec<usize>,
    /// Units of one distinct value beyond the first, per attribute of `sets`.
    set_unit: Vec<u64>,
    /// Per attribute: its index in `sets`, [`NOT_SET`] for a range attribute.
    set_of: Vec<usize>,
}

/// [`Space::set_of`] of an attribute priced by its range.
const NOT_SET: usize = usize::MAX;

/// Units of the meet of a rank range of one attribute.
struct Span {
    leaves: usize,
    /// `table[lo · leaves + hi]` for `lo < hi`, if the attribute is small enough.
    table: Option<Vec<u64>>,
    /// The leaf of every rank ([`CostModel::interval_ranks`]).
    leaf_at: Vec<u32>,
    /// Priced by its distinct values, not by a range: every range costs 0 here.
    set: bool,
}

impl Span {
    fn new(model: &CostModel, j: usize, ranks: &[u32]) -> Self {
        let leaves = ranks.len();
        let leaf_at = inverse(ranks);
        let set = model.is_set(j);
        let table = (leaves <= SPAN_TABLE_LEAVES && !set).then(|| {
            let mut table = vec![0u64; leaves * leaves];
            for lo in 0..leaves {
                for hi in lo + 1..leaves {
                    table[lo * leaves + hi] = model.attribute_units(j, leaf_at[lo], leaf_at[hi]);
                }
            }
            table
        });
        Self {
            leaves,
            table,
            leaf_at,
            set,
        }
    }
}

impl<'a> Space<'a> {
    fn new(
        model: &'a CostModel,
        tuples: &[u32],
        m: usize,
        n: usize,
        tuple_of_row: &'a [u32],
        k: usize,
    ) -> Self {
        let ranks: Vec<Vec<u32>> = (0..m).map(|j| model.interval_ranks(j)).collect();
        let rank: Vec<u32> = tuples
            .chunks_exact(m)
            .flat_map(|row| row.iter().zip(&ranks).map(|(&c, r)| r[c as usize]))
            .collect();
        let spans: Vec<Span> = (0..m).map(|j| Span::new(model, j, &ranks[j])).collect();
        let sets: Vec<usize> = (0..m).filter(|&j| model.is_set(j)).collect();
        let set_unit = sets.iter().map(|&j| model.set_units(j)).collect();
        let mut set_of = vec![NOT_SET; m];
        for (s, &j) in sets.iter().enumerate() {
            set_of[j] = s;
        }
        let mut space = Self {
            model,
            m,
            k,
            tuple_of_row,
            rank,
            spans,
            importance: Vec::new(),
            split_key: Vec::new(),
            sets,
            set_unit,
            set_of,
        };
        // The cheapest mismatch of an attribute is the meet of two neighbouring ranks (one
        // more distinct value for a categorical range attribute).
        let cheapest: Vec<u64> = (0..m)
            .map(|j| {
                (1..space.spans[j].leaves as u32)
                    .map(|r| {
                        if space.spans[j].set {
                            model.set_units(j)
                        } else {
                            space.span(j, r - 1, r)
                        }
                    })
                    .min()
                    .unwrap_or(u64::MAX)
            })
            .collect();
        let mut importance: Vec<usize> = (0..m).collect();
        importance.sort_by(|&a, &b| cheapest[b].cmp(&cheapest[a]).then(a.cmp(&b)));
        space.importance = importance;
        let split_key: Vec<Vec<u32>> = (0..m)
            .into_par_iter()
            .map(|a| {
                let attributes: Vec<usize> = std::iter::once(a)
                    .chain(space.importance.iter().copied().filter(|&j| j != a))
                    .collect();
                inverse(&space.sorted_tuples(n, &attributes))
            })
            .collect();
        space.split_key = split_key;
        space
    }

    /// Ranks of tuple `t`.
    fn ranks(&self, t: u32) -> &[u32] {
        &self.rank[t as usize * self.m..(t as usize + 1) * self.m]
    }

    /// Ranks of the tuple of row `r`.
    fn row_ranks(&self, r: u32) -> &[u32] {
        self.ranks(self.tuple_of_row[r as usize])
    }

    /// Units of the meet of ranks `lo..=hi` of attribute `j` (0 for `lo ≥ hi`, and for an
    /// attribute of [`Self::sets`]).
    fn span(&self, j: usize, lo: u32, hi: u32) -> u64 {
        if lo >= hi {
            return 0;
        }
        let span = &self.spans[j];
        match &span.table {
            Some(table) => table[lo as usize * span.leaves + hi as usize],
            None if span.set => 0,
            None => {
                self.model
                    .attribute_units(j, span.leaf_at[lo as usize], span.leaf_at[hi as usize])
            }
        }
    }

    /// Units of one row of a group holding `distinct` values of set attribute `s` (an
    /// index into [`Self::sets`]).
    #[inline]
    fn set_units(&self, s: usize, distinct: usize) -> u64 {
        distinct.saturating_sub(1) as u64 * self.set_unit[s]
    }

    /// Units of one row of a group made of `rows` in the set attributes.
    fn set_units_of(&self, rows: &[u32]) -> u64 {
        if self.sets.is_empty() {
            return 0;
        }
        let mut values: Vec<u32> = Vec::with_capacity(rows.len());
        (0..self.sets.len())
            .map(|s| {
                let j = self.sets[s];
                values.clear();
                values.extend(rows.iter().map(|&r| self.row_ranks(r)[j]));
                values.sort_unstable();
                values.dedup();
                self.set_units(s, values.len())
            })
            .sum()
    }

    /// Units of one row of a group with rank ranges `ranges` (`(lo, hi)` per attribute;
    /// `lo > hi` for none), widened to hold ranks `x`.
    fn units_with(&self, ranges: &[(u32, u32)], x: &[u32]) -> u64 {
        ranges
            .iter()
            .zip(x)
            .enumerate()
            .map(|(j, (&(lo, hi), &x))| self.span(j, lo.min(x), hi.max(x)))
            .sum()
    }

    /// Units of one row of a group with rank ranges `ranges`.
    fn units_in(&self, ranges: &[(u32, u32)]) -> u64 {
        ranges
            .iter()
            .enumerate()
            .map(|(j, &(lo, hi))| self.span(j, lo, hi))
            .sum()
    }

    /// Rank ranges of a group made of `rows`, into `out`.
    fn ranges_of(&self, rows: &[u32], out: &mut [(u32, u32)]) {
        out.fill((u32::MAX, 0));
        for &r in rows {
            for (range, &x) in out.iter_mut().zip(self.row_ranks(r)) {
                *range = (range.0.min(x), range.1.max(x));
            }
        }
    }

    /// Units of one row of a group made of `rows`.
    fn units_of(&self, rows: &[u32]) -> u64 {
        let mut ranges = vec![(u32::MAX, 0u32); self.m];
        self.ranges_of(rows, &mut ranges);
        self.units_in(&ranges) + self.set_units_of(rows)
    }

    /// Pair cost of tuples `a` and `b` in units.
    fn pair_units(&self, a: u32, b: u32) -> u64 {
        let (x, y) = (self.ranks(a), self.ranks(b));
        let ranged: u64 = (0..self.m)
            .map(|j| self.span(j, x[j].min(y[j]), x[j].max(y[j])))
            .sum();
        let counted: u64 = self
            .sets
            .iter()
            .zip(&self.set_unit)
            .filter(|&(&j, _)| x[j] != y[j])
            .map(|(_, &unit)| unit)
            .sum();
        ranged + counted
    }

    /// Tuple ids sorted by their ranks in `attributes`, in that order, ties by id.
    fn sorted_tuples(&self, n: usize, attributes: &[usize]) -> Vec<u32> {
        let bits: Vec<u32> = attributes
            .iter()
            .map(|&j| usize::BITS - self.spans[j].leaves.saturating_sub(1).leading_zeros())
            .collect();
        if bits.iter().sum::<u32>() <= u64::BITS {
            // Pack the ranks into one key, first attribute most significant.
            let mut keyed: Vec<(u64, u32)> = (0..n as u32)
                .map(|t| {
                    let x = self.ranks(t);
                    let key = attributes.iter().zip(&bits).fold(0u64, |key, (&j, &b)| {
                        key.checked_shl(b).unwrap_or(0) | u64::from(x[j])
                    });
                    (key, t)
                })
                .collect();
            keyed.sort_unstable();
            return keyed.into_iter().map(|(_, t)| t).collect();
        }
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.sort_unstable_by(|&a, &b| {
            let (x, y) = (self.ranks(a), self.ranks(b));
            attributes
                .iter()
                .map(|&j| x[j].cmp(&y[j]))
                .find(|o| o.is_ne())
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(a.cmp(&b))
        });
        order
    }

    /// The near tuples of every tuple: the `count` closest (by pair cost, ties by id)
    /// among the `window` tuples on each side of it in one sorted order per attribute of
    /// more than one leaf (the other attributes by importance, that attribute last).
    fn near_tuples(&self, n: usize, count: usize, window: usize) -> Vec<Vec<u32>> {
        let lasts: Vec<usize> = (0..self.m).filter(|&j| self.spans[j].leaves > 1).collect();
        let orders: Vec<Vec<u32>> = lasts
            .into_par_iter()
            .map(|last| {
                let attributes: Vec<usize> = self
                    .importance
                    .iter()
                    .copied()
                    .filter(|&j| j != last)
                    .chain(std::iter::once(last))
                    .collect();
                self.sorted_tuples(n, &attributes)
            })
            .collect();
        let places: Vec<Vec<u32>> = orders.iter().map(|order| inverse(order)).collect();
        (0..n as u32)
            .into_par_iter()
            .map_init(
                || (Vec::new(), vec![u32::MAX; n]),
                |(found, seen): &mut (Vec<(u64, u32)>, Vec<u32>), t| {
                    if cancel::requested() {
                        return Vec::new();
                    }
                    found.clear();
                    seen[t as usize] = t;
                    for (order, place) in orders.iter().zip(&places) {
                        let i = place[t as usize] as usize;
                        for &u in &order[i.saturating_sub(window)..(i + window + 1).min(n)] {
                            if seen[u as usize] != t {
                                seen[u as usize] = t;
                                found.push((self.pair_units(t, u), u));
                            }
                        }
                    }
                    if count < found.len() {
                        found.select_nth_unstable(count);
                        found.truncate(count);
                    }
                    found.sort_unstable();
                    found.iter().map(|&(_, u)| u).collect()
                },
            )
            .collect()
    }

    /// `out[p]`: units of one row of a group made of the first `p` rows of `order`
    /// (`out[0] = 0`), or of the last `p` rows when `reverse`, counting only the
    /// attributes in `active` (the others are constant over `order`).
    fn running_units(&self, order: &[u32], active: &[usize], reverse: bool, out: &mut Vec<u64>) {
        let mut ranges: Vec<(u32, u32, u64)> = vec![(u32::MAX, 0, 0); active.len()];
        let mut sum = 0u64;
        out.clear();
        out.push(0);
        let mut counted: Vec<Counted> = (0..self.sets.len())
            .filter(|&s| active.contains(&self.sets[s]))
            .map(|s| {
                let j = self.sets[s];
                let mut values: Vec<u32> = order.iter().map(|&r| self.row_ranks(r)[j]).collect();
                values.sort_unstable();
                values.dedup();
                let seen = vec![false; values.len()];
                (s, j, values, seen, 0)
            })
            .collect();
        let mut step = |r: u32| {
            let x = self.row_ranks(r);
            for (range, &j) in ranges.iter_mut().zip(active) {
                let xj = x[j];
                if xj < range.0 || xj > range.1 {
                    range.0 = range.0.min(xj);
                    range.1 = range.1.max(xj);
                    let units = self.span(j, range.0, range.1);
                    sum = sum - range.2 + units;
                    range.2 = units;
                }
            }
            for (s, j, values, seen, distinct) in &mut counted {
                // Present: `values` holds every value of `order`.
                let i = values.binary_search(&x[*j]).unwrap_or(0);
                if !seen[i] {
                    seen[i] = true;
                    *distinct += 1;
                    if *distinct > 1 {
                        sum += self.set_unit[*s];
                    }
                }
            }
            sum
        };
        if reverse {
            out.extend(order.iter().rev().map(|&r| step(r)));
        } else {
            out.extend(order.iter().map(|&r| step(r)));
        }
    }

    /// The best binary cut of a group made of `rows` into two parts of at least `k` rows
    /// (ties to the first attribute, then the smallest left part), if it costs strictly
    /// less than the group.
    fn best_cut(&self, rows: &[u32]) -> Option<(Vec<u32>, Vec<u32>)> {
        let s = rows.len();
        let k = self.k;
        if s < 2 * k {
            return None;
        }
        let mut ranges = vec![(u32::MAX, 0u32); self.m];
        self.ranges_of(rows, &mut ranges);
        let whole = s as u128 * u128::from(self.units_in(&ranges) + self.set_units_of(rows));
        // Attributes that vary in the group; sorting by any constant one gives the same
        // order (by the others in importance order), so only the first is tried.
        let active: Vec<usize> = (0..self.m).filter(|&j| ranges[j].0 < ranges[j].1).collect();
        let first_constant = (0..self.m).find(|&j| ranges[j].0 == ranges[j].1);
        let mut order = rows.to_vec();
        let mut prefix = Vec::with_capacity(s + 1);
        let mut suffix = Vec::with_capacity(s + 1);
        let mut best: Option<(u128, usize, usize)> = None;
        for (a, key) in self.split_key.iter().enumerate() {
            if ranges[a].0 == ranges[a].1 && Some(a) != first_constant {
                continue;
            }
            order.sort_unstable_by_key(|&r| (key[self.tuple_of_row[r as usize] as usize], r));
            self.running_units(&order, &active, false, &mut prefix);
            self.running_units(&order, &active, true, &mut suffix);
            for p in k..=s - k {
                let cost =
                    p as u128 * u128::from(prefix[p]) + (s - p) as u128 * u128::from(suffix[s - p]);
                if best.is_none_or(|(c, _, _)| cost < c) {
                    best = Some((cost, a, p));
                }
            }
        }
        let (cost, a, p) = best?;
        if cost >= whole {
            return None;
        }
        let key = &self.split_key[a];
        order.sort_unstable_by_key(|&r| (key[self.tuple_of_row[r as usize] as usize], r));
        let right = order.split_off(p);
        Some((order, right))
    }

    /// Cut `rows` recursively by [`Self::best_cut`] while cuts lower the cost; the parts
    /// in a fixed order (left before right).
    fn split(&self, rows: Vec<u32>) -> Vec<Vec<u32>> {
        let mut done = Vec::new();
        let mut stack = vec![rows];
        while let Some(rows) = stack.pop() {
            match self.best_cut(&rows) {
                None => done.push(rows),
                Some((left, right)) => {
                    let small = left.len().min(right.len());
                    if small >= PARALLEL_SPLIT_ROWS && small * 8 >= rows.len() {
                        // Both sides large: recurse in parallel (depth O(log rows)).
                        let (a, b) = rayon::join(|| self.split(left), || self.split(right));
                        done.extend(a);
                        done.extend(b);
                    } else {
                        stack.push(right);
                        stack.push(left);
                    }
                }
            }
        }
        done
    }
}

/// A set attribute active in [`Space::running_units`]: its index in [`Space::sets`], the
/// attribute, the values of the rows, whether each was seen, and the distinct values seen.
type Counted = (usize, usize, Vec<u32>, Vec<bool>, usize);

/// Rank range of one attribute in a group, with what removing one row leaves.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bound {
    /// Lowest rank, its multiplicity and the next distinct rank (`u32::MAX` if none).
    pub(crate) lo: u32,
    lo_count: u32,
    lo_next: u32,
    /// Highest rank, its multiplicity and the previous distinct rank (0 if none).
    pub(crate) hi: u32,
    hi_count: u32,
    hi_next: u32,
}

impl Bound {
    pub(crate) const EMPTY: Self = Self {
        lo: u32::MAX,
        lo_count: 0,
        lo_next: u32::MAX,
        hi: 0,
        hi_count: 0,
        hi_next: 0,
    };

    pub(crate) fn add(&mut self, x: u32) {
        if x < self.lo {
            self.lo_next = self.lo;
            self.lo = x;
            self.lo_count = 1;
        } else if x == self.lo {
            self.lo_count += 1;
        } else if x < self.lo_next {
            self.lo_next = x;
        }
        if x > self.hi {
            self.hi_next = self.hi;
            self.hi = x;
            self.hi_count = 1;
        } else if x == self.hi {
            self.hi_count += 1;
        } else if x > self.hi_next {
            self.hi_next = x;
        }
    }

    /// The range after removing one row of rank `x` (a member): `(lo, hi)`, `lo > hi` if
    /// nothing is left.
    pub(crate) fn without(&self, x: u32) -> (u32, u32) {
        let lo = if x == self.lo && self.lo_count == 1 {
            self.lo_next
        } else {
            self.lo
        };
        let hi = if x == self.hi && self.hi_count == 1 {
            self.hi_next
        } else {
            self.hi
        };
        (lo, hi)
    }

    /// A range inside the range left after removing any one row (`lo > hi` if none).
    pub(crate) fn inner(&self) -> (u32, u32) {
        let lo = if self.lo_count >= 2 {
            self.lo
        } else {
            self.lo_next
        };
        let hi = if self.hi_count >= 2 {
            self.hi
        } else {
            self.hi_next
        };
        (lo, hi)
    }
}

/// One improving change of the local search.
#[derive(Debug, Clone, Copy)]
enum Change {
    /// Move the row to this group.
    Move(u32),
    /// Swap the row with this row.
    Swap(u32),
}

/// Reusable buffers of the passes.
struct Scratch {
    /// `marks[g] == mark`: group `g` is already listed.
    marks: Vec<u64>,
    mark: u64,
    candidates: Vec<u32>,
    /// What the current row's group keeps without it, per attribute.
    rest: Vec<(u32, u32)>,
    /// Groups that received rows in [`State::place_rows`]: id, size and units of one row
    /// after receiving them.
    touched: Vec<(u32, i128, i128)>,
    /// Rank ranges of the touched groups, `m` per group.
    ranges: Vec<(u32, u32)>,
    /// Target group of every placed row.
    targets: Vec<u32>,
    /// Tallies of the touched groups, one per set attribute each.
    tallies: Vec<Tally>,
    /// Per set attribute: the distinct values the current row's group keeps without it,
    /// and whether a candidate group holds the row's value.
    rest_distinct: Vec<usize>,
    holds: Vec<bool>,
    /// Per set attribute and value: `held_mark` if the current row's group holds it.
    held: Vec<Vec<u64>>,
    held_mark: u64,
    /// Groups around the group being worked on.
    hood: Vec<u32>,
}

impl Scratch {
    fn new(m: usize) -> Self {
        Self {
            marks: Vec::new(),
            mark: 0,
            candidates: Vec::new(),
            rest: vec![(0, 0); m],
            touched: Vec::new(),
            ranges: Vec::new(),
            targets: Vec::new(),
            tallies: Vec::new(),
            rest_distinct: Vec::new(),
            holds: Vec::new(),
            held: Vec::new(),
            held_mark: 0,
            hood: Vec::new(),
        }
    }

    /// Start a new list of distinct groups among `groups` ids.
    fn new_list(&mut self, groups: usize) {
        if self.marks.len() < groups {
            self.marks.resize(groups, 0);
        }
        self.mark += 1;
    }

    /// Whether group `g` is new to the current list (and list it).
    fn fresh(&mut self, g: u32) -> bool {
        let seen = &mut self.marks[g as usize];
        let fresh = *seen != self.mark;
        *seen = self.mark;
        fresh
    }
}

/// The count of every value of one set attribute in a group, sorted by value.
#[derive(Debug, Clone, Default)]
struct Tally {
    counts: Vec<(u32, u32)>,
    /// Values counted once.
    singles: u32,
}

impl Tally {
    /// Count the values `sorted` (ascending) afresh.
    fn rebuild(&mut self, sorted: &[u32]) {
        self.counts.clear();
        for &x in sorted {
            match self.counts.last_mut() {
                Some((v, c)) if *v == x => *c += 1,
                _ => self.counts.push((x, 1)),
            }
        }
        self.singles = self.counts.iter().filter(|&&(_, c)| c == 1).count() as u32;
    }

    fn count(&self, x: u32) -> u32 {
        self.counts
            .binary_search_by_key(&x, |&(v, _)| v)
            .map_or(0, |i| self.counts[i].1)
    }

    fn distinct(&self) -> usize {
        self.counts.len()
    }

    fn add(&mut self, x: u32) {
        match self.counts.binary_search_by_key(&x, |&(v, _)| v) {
            Ok(i) => {
                if self.counts[i].1 == 1 {
                    self.singles -= 1;
                }
                self.counts[i].1 += 1;
            }
            Err(i) => {
                self.counts.insert(i, (x, 1));
                self.singles += 1;
            }
        }
    }

    /// Distinct values of the union with another tally.
    fn union_distinct(&self, other: &Self) -> usize {
        let (mut i, mut j, mut n) = (0, 0, 0);
        let (a, b) = (&self.counts, &other.counts);
        while i < a.len() && j < b.len() {
            match a[i].0.cmp(&b[j].0) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    i += 1;
                    j += 1;
                }
            }
            n += 1;
        }
        n + (a.len() - i) + (b.len() - j)
    }
}

/// A pool of the regroup pass: its groups, their rows, and the grouping of the rows by
/// position (`groups[i]` lists positions in `rows` of group `old[i]`).
struct PoolJob {
    old: Vec<u32>,
    rows: Vec<u32>,
    groups: Vec<Vec<usize>>,
}

/// The grouping being improved, with per-group summaries.
struct State {
    m: usize,
    of_row: Vec<u32>,
    /// Rows of every group, ascending.
    members: Vec<Vec<u32>>,
    /// `bounds[g · m + j]`: rank range of group `g` in attribute `j`.
    bounds: Vec<Bound>,
    /// `boxes[g · m + j]`: lowest and highest rank of group `g` in attribute `j`, and the
    /// range every group left after removing one row still holds ([`Bound::inner`]).
    boxes: Vec<[u32; 4]>,
    /// Units of one row of each group.
    unit: Vec<u64>,
    /// `tally[g · S + s]`: the values of group `g` in set attribute `s` of the `S`
    /// attributes of [`Space::sets`].
    tally: Vec<Tally>,
    /// `S`, the number of set attributes.
    sets: usize,
    /// Groups holding rows of every tuple, with their row counts, by group id.
    tuple_groups: Vec<Vec<(u32, u32)>>,
    /// The one group holding all rows of a tuple, or [`SPREAD`].
    home: Vec<u32>,
    /// Near tuples of every tuple, nearest first.
    near: Lists,
    /// The tuples listing a tuple among their first [`REACH`] near tuples.
    near_of: Lists,
    /// Average units of a row when the current local search started.
    average: u64,
    /// Counter of changes.
    clock: u64,
    /// `clock` when a group holding a row of the tuple or of one of the tuples it reaches
    /// last changed.
    dirty: Vec<u64>,
    /// `clock` when the local search last found nothing to do for the row.
    settled: Vec<u64>,
    /// `clock` when [`Self::eject`] and the regroup pass last found nothing to do for
    /// each group.
    ejected: Vec<u64>,
    regrouped: Vec<u64>,
    /// Ids of groups without rows (reused last freed first once ids reach `id_limit`, the
    /// number of input ids plus rows), and whether each id is among them.
    free: Vec<u32>,
    freed: Vec<bool>,
    id_limit: usize,
}

impl State {
    fn new(space: &Space<'_>, group_of_row: &[u32], groups: usize, near: &[Vec<u32>]) -> Self {
        let m = space.m;
        let tuples = near.len();
        let mut members = vec![Vec::new(); groups];
        let mut tuple_groups: Vec<Vec<(u32, u32)>> = vec![Vec::new(); tuples];
        for (r, &g) in group_of_row.iter().enumerate() {
            members[g as usize].push(r as u32);
            join(&mut tuple_groups[space.tuple_of_row[r] as usize], g);
        }
        let home = tuple_groups.iter().map(|list| home_of(list)).collect();
        let mut reverse: Vec<Vec<u32>> = vec![Vec::new(); tuples];
        for (t, list) in near.iter().enumerate() {
            for &u in list.iter().take(REACH) {
                reverse[u as usize].push(t as u32);
            }
        }
        let mut state = Self {
            m,
            of_row: group_of_row.to_vec(),
            members,
            bounds: vec![Bound::EMPTY; groups * m],
            boxes: vec![[0; 4]; groups * m],
            unit: vec![0; groups],
            tally: vec![Tally::default(); groups * space.sets.len()],
            sets: space.sets.len(),
            tuple_groups,
            home,
            near: Lists::new(near),
            near_of: Lists::new(&reverse),
            average: 0,
            clock: 1,
            dirty: vec![1; tuples],
            settled: vec![0; group_of_row.len()],
            ejected: vec![0; groups],
            regrouped: vec![0; groups],
            free: Vec::new(),
            freed: vec![false; groups],
            id_limit: groups + group_of_row.len(),
        };
        // Unused input ids, the smallest reused first.
        for g in (0..groups).rev() {
            if state.members[g].is_empty() {
                state.freed[g] = true;
                state.free.push(g as u32);
            }
        }
        for g in 0..groups {
            state.refresh(space, g);
        }
        state
    }

    /// Recompute the summary of group `g` from its members.
    fn refresh(&mut self, space: &Space<'_>, g: usize) {
        let m = self.m;
        let bounds = &mut self.bounds[g * m..(g + 1) * m];
        bounds.fill(Bound::EMPTY);
        for &r in &self.members[g] {
            for (b, &x) in bounds.iter_mut().zip(space.row_ranks(r)) {
                b.add(x);
            }
        }
        self.unit[g] = bounds
            .iter()
            .enumerate()
            .map(|(j, b)| space.span(j, b.lo, b.hi))
            .sum();
        for (slot, b) in self.boxes[g * m..(g + 1) * m].iter_mut().zip(bounds.iter()) {
            let (lo, hi) = b.inner();
            *slot = [b.lo, b.hi, lo, hi];
        }
        let mut values: Vec<u32> = Vec::new();
        for (s, &j) in space.sets.iter().enumerate() {
            values.clear();
            values.extend(self.members[g].iter().map(|&r| space.row_ranks(r)[j]));
            values.sort_unstable();
            let tally = &mut self.tally[g * self.sets + s];
            tally.rebuild(&values);
            self.unit[g] += space.set_units(s, tally.distinct());
        }
    }

    /// Tallies of group `g`.
    fn tallies(&self, g: u32) -> &[Tally] {
        &self.tally[g as usize * self.sets..(g as usize + 1) * self.sets]
    }

    /// Total cost in units.
    fn total_units(&self) -> u128 {
        self.members
            .iter()
            .zip(&self.unit)
            .map(|(rows, &u)| rows.len() as u128 * u128::from(u))
            .sum()
    }

    /// Size and cost in units of group `g`.
    fn size_cost(&self, g: u32) -> (i128, i128) {
        let size = self.members[g as usize].len() as i128;
        (size, size * i128::from(self.unit[g as usize]))
    }

    /// Rank ranges of group `g`.
    fn ranges(&self, g: u32) -> impl Iterator<Item = (u32, u32)> + '_ {
        let m = self.m;
        self.boxes[g as usize * m..(g as usize + 1) * m]
            .iter()
            .map(|b| (b[0], b[1]))
    }

    /// Record that tuple `t` has one more row in group `h` and one fewer in group `g`.
    fn shift(&mut self, t: usize, g: u32, h: u32) {
        let list = &mut self.tuple_groups[t];
        leave(list, g);
        join(list, h);
        self.home[t] = home_of(list);
    }

    /// Put row `r` into group `h` (members and tuple groups only; see [`Self::touch`]).
    fn relocate(&mut self, space: &Space<'_>, r: u32, h: u32) {
        let g = self.of_row[r as usize];
        let from = &mut self.members[g as usize];
        if let Ok(i) = from.binary_search(&r) {
            from.remove(i);
        }
        let to = &mut self.members[h as usize];
        if let Err(i) = to.binary_search(&r) {
            to.insert(i, r);
        }
        self.of_row[r as usize] = h;
        self.shift(space.tuple_of_row[r as usize] as usize, g, h);
    }

    /// Refresh the summaries of `groups` after their members changed, and mark the
    /// tuples whose candidate groups they are.
    fn touch(&mut self, space: &Space<'_>, groups: &[u32]) {
        self.clock += 1;
        for &g in groups {
            self.refresh(space, g as usize);
            if self.members[g as usize].is_empty() && !self.freed[g as usize] {
                self.freed[g as usize] = true;
                self.free.push(g);
            }
            for &r in &self.members[g as usize] {
                let t = space.tuple_of_row[r as usize] as usize;
                if self.dirty[t] != self.clock {
                    self.dirty[t] = self.clock;
                    for &u in self.near_of.get(t) {
                        self.dirty[u as usize] = self.clock;
                    }
                }
            }
        }
    }

    /// Whether a row of group `g` or one of its candidate groups may have changed since
    /// `clock` was `stamp`.
    fn stale(&self, space: &Space<'_>, g: u32, stamp: u64) -> bool {
        self.members[g as usize]
            .iter()
            .any(|&r| self.dirty[space.tuple_of_row[r as usize] as usize] > stamp)
    }

    /// An empty group to fill: a new id, or past the limit the last id freed.
    fn add_group(&mut self) -> u32 {
        // Fresh ids while there is room below the input ids plus rows; past that some id
        // is free (a group being cut has two rows, so fewer groups than rows have rows).
        if self.members.len() >= self.id_limit {
            if let Some(id) = self.free.pop() {
                self.freed[id as usize] = false;
                self.ejected[id as usize] = 0;
                self.regrouped[id as usize] = 0;
                return id;
            }
        }
        let id = self.members.len() as u32;
        self.freed.push(false);
        self.members.push(Vec::new());
        self.bounds
            .extend(std::iter::repeat_n(Bound::EMPTY, self.m));
        self.boxes.extend(std::iter::repeat_n([0; 4], self.m));
        self.unit.push(0);
        self.tally
            .extend(std::iter::repeat_n(Tally::default(), self.sets));
        self.ejected.push(0);
        self.regrouped.push(0);
        id
    }

    /// Replace groups `old` by `parts` (the same rows): the parts take the old ids first,
    /// then new ones; old ids left over become empty.
    fn replace(&mut self, space: &Space<'_>, old: &[u32], parts: Vec<Vec<u32>>) {
        let mut ids = old.to_vec();
        while ids.len() < parts.len() {
            let id = self.add_group();
            ids.push(id);
        }
        for &g in old {
            self.members[g as usize].clear();
        }
        for (&h, mut part) in ids.iter().zip(parts) {
            for &r in &part {
                let g = self.of_row[r as usize];
                if g != h {
                    self.shift(space.tuple_of_row[r as usize] as usize, g, h);
                    self.of_row[r as usize] = h;
                }
            }
            part.sort_unstable();
            self.members[h as usize] = part;
        }
        self.touch(space, &ids);
    }

    /// Call `f` on every group holding a row of tuple `u`.
    fn groups_of(&self, u: u32, mut f: impl FnMut(u32)) {
        match self.home[u as usize] {
            SPREAD => self.tuple_groups[u as usize]
                .iter()
                .for_each(|&(h, _)| f(h)),
            h => f(h),
        }
    }

    /// Candidate groups for a row of tuple `t` in group `g`, into `scratch.candidates`:
    /// the groups holding `t` or one of its first `width` near tuples, other than `g`,
    /// nearest tuples first.
    fn candidates(&self, t: u32, g: u32, width: usize, scratch: &mut Scratch) {
        scratch.new_list(self.members.len());
        scratch.fresh(g);
        let mut out = std::mem::take(&mut scratch.candidates);
        out.clear();
        let near = self.near.get(t as usize);
        for &u in std::iter::once(&t).chain(&near[..width.min(near.len())]) {
            self.groups_of(u, |h| {
                if scratch.fresh(h) {
                    out.push(h);
                }
            });
        }
        scratch.candidates = out;
    }

    /// The groups holding a row of the tuple or of one of the first `width` near tuples
    /// of a row of group `g`, other than `g`, ascending, into `scratch.hood`.
    fn neighbourhood(&self, space: &Space<'_>, g: u32, width: usize, scratch: &mut Scratch) {
        scratch.new_list(self.members.len());
        scratch.fresh(g);
        let mut hood = std::mem::take(&mut scratch.hood);
        hood.clear();
        for &r in &self.members[g as usize] {
            let t = space.tuple_of_row[r as usize];
            let near = self.near.get(t as usize);
            for &u in std::iter::once(&t).chain(&near[..width.min(near.len())]) {
                self.groups_of(u, |h| {
                    if scratch.fresh(h) {
                        hood.push(h);
                    }
                });
            }
        }
        hood.sort_unstable();
        scratch.hood = hood;
    }

    /// Split every group of at least `2k` rows by [`Space::split`] (in parallel, applied
    /// in group order); returns the number of groups added.
    fn split_pass(&mut self, space: &Space<'_>) -> usize {
        let big: Vec<u32> = (0..self.members.len() as u32)
            .filter(|&g| self.members[g as usize].len() >= 2 * space.k)
            .collect();
        let members = &self.members;
        let parts: Vec<Vec<Vec<u32>>> = big
            .par_iter()
            .map(|&g| {
                if cancel::requested() {
                    return vec![members[g as usize].clone()]; // unchanged
                }
                space.split(members[g as usize].clone())
            })
            .collect();
        let mut added = 0;
        for (&g, parts) in big.iter().zip(parts) {
            if parts.len() > 1 {
                added += parts.len() - 1;
                self.replace(space, &[g], parts);
            }
        }
        added
    }

    /// The move of row `r` to one of `scratch.candidates`, or its swap with a row of one,
    /// that lowers the cost most (the first found on ties), if any lowers it.
    fn best_change(&self, space: &Space<'_>, r: u32, scratch: &mut Scratch) -> Option<Change> {
        let m = self.m;
        let t = space.tuple_of_row[r as usize];
        let x = space.ranks(t);
        let g = self.of_row[r as usize];
        let gu = g as usize;
        let (size_g, cost_g) = self.size_cost(g);
        let u_g = i128::from(self.unit[gu]);
        let bg = &self.bounds[gu * m..(gu + 1) * m];
        let mut u_rest = 0u64;
        for (j, (rest, b)) in scratch.rest.iter_mut().zip(bg).enumerate() {
            *rest = b.without(x[j]);
            u_rest += space.span(j, rest.0, rest.1);
        }
        // Set attributes: the distinct values g keeps without the row.
        let tg = self.tallies(g);
        scratch.rest_distinct.clear();
        for (s, (&j, tally)) in space.sets.iter().zip(tg).enumerate() {
            let kept = tally.distinct() - usize::from(tally.count(x[j]) == 1);
            scratch.rest_distinct.push(kept);
            u_rest += space.set_units(s, kept);
        }
        // The values g holds, to price a swapped-in row in O(1) per set attribute.
        if scratch.held.len() != space.sets.len() {
            scratch.held = space
                .sets
                .iter()
                .map(|&j| vec![0; space.spans[j].leaves])
                .collect();
        }
        scratch.held_mark += 1;
        let mark = scratch.held_mark;
        for (marks, tally) in scratch.held.iter_mut().zip(tg) {
            for &(v, _) in &tally.counts {
                marks[v as usize] = mark;
            }
        }
        let held = &scratch.held;
        let rest = &scratch.rest;
        let rest_distinct = &scratch.rest_distinct;
        let holds = &mut scratch.holds;
        // The change of g's cost when it swaps the row for another (a lower bound: ≤ 0),
        // and what g saves by giving it away.
        let leave_g = size_g * (i128::from(u_rest) - u_g);
        let saving_g = cost_g - (size_g - 1) * i128::from(u_rest);
        let can_move = self.members[gu].len() > space.k;
        let mut best = 0i128;
        let mut choice = None;
        for &h in &scratch.candidates {
            let hu = h as usize;
            let boxes = &self.boxes[hu * m..(hu + 1) * m];
            let (size_h, cost_h) = self.size_cost(h);
            let u_h = i128::from(self.unit[hu]);
            // Set attributes: whether h holds the row's value; h's distinct values with
            // the row, and a lower bound of them after a swap (h gives away at most one
            // value it holds once, and receives the row's).
            let th = self.tallies(h);
            holds.clear();
            let (mut set_joined, mut set_floor) = (0u64, 0u64);
            for (s, (&j, tally)) in space.sets.iter().zip(th).enumerate() {
                let held = tally.count(x[j]) > 0;
                holds.push(held);
                let d = tally.distinct();
                set_joined += space.set_units(s, d + usize::from(!held));
                let lost = usize::from(tally.singles > 0);
                set_floor += space.set_units(s, d - lost + usize::from(!held));
            }
            if can_move {
                let u_joined: u64 = (0..m)
                    .map(|j| space.span(j, boxes[j][0].min(x[j]), boxes[j][1].max(x[j])))
                    .sum::<u64>()
                    + set_joined;
                let delta = (size_h + 1) * i128::from(u_joined) - cost_h - saving_g;
                if delta < best {
                    best = delta;
                    choice = Some(Change::Move(h));
                }
            }
            // A lower bound of h's side of any swap: whatever h gives away, it keeps its
            // inner range, and it receives the row.
            let floor: u64 = (0..m)
                .map(|j| {
                    let [_, _, lo, hi] = boxes[j];
                    if lo <= hi {
                        space.span(j, lo.min(x[j]), hi.max(x[j]))
                    } else {
                        0
                    }
                })
                .sum::<u64>()
                + set_floor;
            let floor_h = size_h * (i128::from(floor) - u_h);
            if leave_g + floor_h >= best {
                continue;
            }
            let bh = &self.bounds[hu * m..(hu + 1) * m];
            // g's side of a swap must leave room: size_g · (u_gs − u_g) + floor_h < best.
            let mut gs_cap = ceil_units(best - floor_h + cost_g, size_g);
            let mut previous = u32::MAX;
            for &s in &self.members[hu] {
                let ts = space.tuple_of_row[s as usize];
                if ts == t || ts == previous {
                    continue;
                }
                previous = ts;
                let y = space.ranks(ts);
                // Each side is summed attribute by attribute in importance order and
                // stops once it leaves no room (a partial sum is a lower bound): g's side
                // is g without the row plus y, h's side h without y plus the row. A set
                // attribute changes nothing where the two rows agree.
                let mut u_gs = 0u64;
                for &j in &space.importance {
                    u_gs += match space.set_of[j] {
                        NOT_SET => space.span(j, rest[j].0.min(y[j]), rest[j].1.max(y[j])),
                        i if y[j] == x[j] => space.set_units(i, tg[i].distinct()),
                        i => {
                            let gained = usize::from(held[i][y[j] as usize] != mark);
                            space.set_units(i, rest_distinct[i] + gained)
                        }
                    };
                    if u_gs >= gs_cap {
                        break;
                    }
                }
                if u_gs >= gs_cap {
                    continue;
                }
                let side_g = size_g * (i128::from(u_gs) - u_g);
                let hs_cap = ceil_units(best - side_g + cost_h, size_h);
                let mut u_hs = 0u64;
                for &j in &space.importance {
                    u_hs += match space.set_of[j] {
                        NOT_SET => {
                            let (lo, hi) = bh[j].without(y[j]);
                            space.span(j, lo.min(x[j]), hi.max(x[j]))
                        }
                        i if y[j] == x[j] => space.set_units(i, th[i].distinct()),
                        i => {
                            let lost = usize::from(th[i].count(y[j]) == 1);
                            space.set_units(i, th[i].distinct() - lost + usize::from(!holds[i]))
                        }
                    };
                    if u_hs >= hs_cap {
                        break;
                    }
                }
                if u_hs < hs_cap {
                    best = side_g + size_h * (i128::from(u_hs) - u_h);
                    gs_cap = ceil_units(best - floor_h + cost_g, size_g);
                    choice = Some(Change::Swap(s));
                }
            }
        }
        choice
    }

    /// Moves and swaps of single rows, in row order, while they lower the cost (at most
    /// [`SEARCH_PASSES`] passes). A row is skipped while nothing around it changed since
    /// it last found nothing to do, and so is a row of a group costing nothing. Returns
    /// the number of changes.
    fn local_search(&mut self, space: &Space<'_>, scratch: &mut Scratch) -> usize {
        let rows = self.of_row.len();
        self.average = u64::try_from(self.total_units() / rows.max(1) as u128).unwrap_or(u64::MAX);
        let mut changes = 0;
        for _ in 0..SEARCH_PASSES {
            let before = changes;
            // (tuple, group, clock) of the last row that found nothing: another row of
            // the same tuple in the same group would find nothing either.
            let mut last = (u32::MAX, u32::MAX, 0u64);
            for r in 0..rows as u32 {
                if r % 1024 == 0 && cancel::requested() {
                    return changes;
                }
                let t = space.tuple_of_row[r as usize];
                if self.dirty[t as usize] <= self.settled[r as usize] {
                    continue;
                }
                let g = self.of_row[r as usize];
                if self.unit[g as usize] == 0 || (t, g, self.clock) == last {
                    self.settled[r as usize] = self.clock;
                    continue;
                }
                let width = if self.unit[g as usize] >= self.average {
                    NEAR
                } else {
                    NARROW
                };
                self.candidates(t, g, width, scratch);
                match self.best_change(space, r, scratch) {
                    None => {
                        self.settled[r as usize] = self.clock;
                        last = (t, g, self.clock);
                    }
                    Some(Change::Move(h)) => {
                        self.relocate(space, r, h);
                        self.touch(space, &[g, h]);
                        changes += 1;
                    }
                    Some(Change::Swap(s)) => {
                        let h = self.of_row[s as usize];
                        self.relocate(space, r, h);
                        self.relocate(space, s, g);
                        self.touch(space, &[g, h]);
                        changes += 1;
                    }
                }
            }
            if changes == before {
                break;
            }
        }
        changes
    }

    /// Place the rows `leaving` group `g`, one by one, each in the candidate group where
    /// it costs least (counting the rows placed before it; ties to the first candidate);
    /// the targets go to `scratch.targets`. Returns the cost of the placements, or `None`
    /// as soon as it reaches `limit` or a row has no candidate.
    fn place_rows(
        &self,
        space: &Space<'_>,
        g: u32,
        leaving: &[u32],
        limit: i128,
        scratch: &mut Scratch,
    ) -> Option<i128> {
        let m = self.m;
        let sets = self.sets;
        scratch.touched.clear();
        scratch.ranges.clear();
        scratch.targets.clear();
        scratch.tallies.clear();
        // Set units of one row of a group with `tallies` once it receives ranks `x`.
        let with_row = |tallies: &[Tally], x: &[u32]| -> u64 {
            space
                .sets
                .iter()
                .zip(tallies)
                .enumerate()
                .map(|(s, (&j, tally))| {
                    space.set_units(s, tally.distinct() + usize::from(tally.count(x[j]) == 0))
                })
                .sum()
        };
        let mut total = 0i128;
        for &r in leaving {
            let t = space.tuple_of_row[r as usize];
            let x = space.ranks(t);
            self.candidates(t, g, NEAR, scratch);
            let mut best: Option<(i128, u32)> = None;
            for &h in &scratch.candidates {
                let (size, unit, units) = match scratch.touched.iter().position(|e| e.0 == h) {
                    Some(i) => (
                        scratch.touched[i].1,
                        scratch.touched[i].2,
                        space.units_with(&scratch.ranges[i * m..(i + 1) * m], x)
                            + with_row(&scratch.tallies[i * sets..(i + 1) * sets], x),
                    ),
                    None => {
                        let boxes = &self.boxes[h as usize * m..(h as usize + 1) * m];
                        let units: u64 = (0..m)
                            .map(|j| space.span(j, boxes[j][0].min(x[j]), boxes[j][1].max(x[j])))
                            .sum();
                        let (size, _) = self.size_cost(h);
                        let units = units + with_row(self.tallies(h), x);
                        (size, i128::from(self.unit[h as usize]), units)
                    }
                };
                let cost = (size + 1) * i128::from(units) - size * unit;
                if best.is_none_or(|(c, _)| cost < c) {
                    best = Some((cost, h));
                }
            }
            let (cost, h) = best?;
            total += cost;
            if total >= limit {
                return None;
            }
            scratch.targets.push(h);
            let i = match scratch.touched.iter().position(|e| e.0 == h) {
                Some(i) => i,
                None => {
                    scratch.ranges.extend(self.ranges(h));
                    scratch.tallies.extend_from_slice(self.tallies(h));
                    let (size, _) = self.size_cost(h);
                    scratch
                        .touched
                        .push((h, size, i128::from(self.unit[h as usize])));
                    scratch.touched.len() - 1
                }
            };
            let ranges = &mut scratch.ranges[i * m..(i + 1) * m];
            for (range, &x) in ranges.iter_mut().zip(x) {
                *range = (range.0.min(x), range.1.max(x));
            }
            let mut units = space.units_in(ranges);
            let tallies = &mut scratch.tallies[i * sets..(i + 1) * sets];
            for (s, (&j, tally)) in space.sets.iter().zip(tallies.iter_mut()).enumerate() {
                tally.add(x[j]);
                units += space.set_units(s, tally.distinct());
            }
            scratch.touched[i].1 += 1;
            scratch.touched[i].2 = i128::from(units);
        }
        Some(total)
    }

    /// Keep only the rows of group `g` under one hierarchy node below its meet in one
    /// attribute (at least `k` of them), or none, and place the others
    /// ([`Self::place_rows`]); apply the best such change if it lowers the cost (ties to
    /// dissolving, then the first attribute, level and node). Returns whether it changed
    /// anything.
    fn eject(&mut self, space: &Space<'_>, g: u32, scratch: &mut Scratch) -> bool {
        let m = self.m;
        let k = space.k;
        let rows = self.members[g as usize].clone();
        let size = rows.len();
        if size == 0 {
            return false;
        }
        let (_, whole) = self.size_cost(g);
        // Best: (delta, attribute, start, end) of the kept slice in that attribute's
        // rank order; attribute m means dissolve.
        let mut best: Option<(i128, usize, usize, usize)> = self
            .place_rows(space, g, &rows, whole, scratch)
            .map(|placed| (placed - whole, m, 0, 0));
        let mut order = rows.clone();
        let mut seen: Vec<(usize, usize)> = Vec::new();
        let mut leaving = Vec::new();
        for j in 0..m {
            let b = self.bounds[g as usize * m + j];
            if b.lo >= b.hi || size <= k {
                continue;
            }
            let hierarchy = space.model.hierarchy(j);
            let leaf_at = &space.spans[j].leaf_at;
            // Under range costs a numeric attribute is ranked by key: where the hierarchy
            // does not follow the keys, the runs below are parts of nodes and `top` may be
            // below the group's meet. They are candidates only; every one is priced.
            let top = space
                .model
                .meet_level(j, leaf_at[b.lo as usize], leaf_at[b.hi as usize]);
            order.sort_unstable_by_key(|&r| (space.row_ranks(r)[j], r));
            seen.clear();
            for level in 0..top {
                let ancestor =
                    |r: u32| hierarchy.generalize(level, leaf_at[space.row_ranks(r)[j] as usize]);
                // The rows under one node at `level` are a slice of the rank order.
                let mut start = 0;
                while start < size {
                    let node = ancestor(order[start]);
                    let mut end = start + 1;
                    while end < size && ancestor(order[end]) == node {
                        end += 1;
                    }
                    if end - start >= k && end - start < size && !seen.contains(&(start, end)) {
                        seen.push((start, end));
                        let kept = &order[start..end];
                        let change = kept.len() as i128 * i128::from(space.units_of(kept)) - whole;
                        let limit = best.map_or(0, |b| b.0) - change;
                        if limit > 0 {
                            leaving.clear();
                            leaving.extend_from_slice(&order[..start]);
                            leaving.extend_from_slice(&order[end..]);
                            if let Some(placed) =
                                self.place_rows(space, g, &leaving, limit, scratch)
                            {
                                best = Some((change + placed, j, start, end));
                            }
                        }
                    }
                    start = end;
                }
            }
        }
        let Some((delta, j, start, end)) = best else {
            return false;
        };
        if delta >= 0 {
            return false;
        }
        leaving.clear();
        if j == m {
            leaving.extend_from_slice(&rows);
        } else {
            order.sort_unstable_by_key(|&r| (space.row_ranks(r)[j], r));
            leaving.extend_from_slice(&order[..start]);
            leaving.extend_from_slice(&order[end..]);
        }
        // Recompute the chosen placement (the scratch holds the last one tried).
        if self
            .place_rows(space, g, &leaving, i128::MAX, scratch)
            .is_none()
        {
            return false;
        }
        let mut changed = vec![g];
        for (&r, &h) in leaving.iter().zip(&scratch.targets) {
            self.relocate(space, r, h);
            changed.push(h);
        }
        changed.sort_unstable();
        changed.dedup();
        self.touch(space, &changed);
        true
    }

    /// [`Self::eject`] on every group, in id order, that changed or whose neighbourhood
    /// changed since it last found nothing to do; returns the number of changes.
    fn eject_pass(&mut self, space: &Space<'_>, scratch: &mut Scratch) -> usize {
        let mut changes = 0;
        for g in 0..self.members.len() as u32 {
            if g % 256 == 0 && cancel::requested() {
                break;
            }
            if !self.stale(space, g, self.ejected[g as usize]) {
                continue;
            }
            if self.eject(space, g, scratch) {
                changes += 1;
            } else {
                self.ejected[g as usize] = self.clock;
            }
        }
        changes
    }

    /// The pool of group `g`: `g` and its [`REGROUP_GROUPS`] − 1 neighbouring groups of the
    /// cheapest union meet (ties by id), or `None` if `g` has no rows, costs nothing or
    /// has no neighbour.
    fn pool_of(&self, space: &Space<'_>, g: u32, scratch: &mut Scratch) -> Option<PoolJob> {
        if self.members[g as usize].is_empty() || self.unit[g as usize] == 0 {
            return None;
        }
        self.neighbourhood(space, g, REGROUP_WIDTH, scratch);
        let own: Vec<(u32, u32)> = self.ranges(g).collect();
        let mut scored: Vec<(u64, u32)> = scratch
            .hood
            .iter()
            .map(|&h| {
                let ranged: u64 = self
                    .ranges(h)
                    .zip(&own)
                    .enumerate()
                    .map(|(j, ((lo, hi), &(a, b)))| space.span(j, lo.min(a), hi.max(b)))
                    .sum();
                let counted: u64 = self
                    .tallies(h)
                    .iter()
                    .zip(self.tallies(g))
                    .enumerate()
                    .map(|(s, (a, b))| space.set_units(s, a.union_distinct(b)))
                    .sum();
                (ranged + counted, h)
            })
            .collect();
        scored.sort_unstable();
        scored.truncate(REGROUP_GROUPS - 1);
        if scored.is_empty() {
            return None;
        }
        let old: Vec<u32> = std::iter::once(g)
            .chain(scored.iter().map(|&(_, h)| h))
            .collect();
        let rows: Vec<u32> = old
            .iter()
            .flat_map(|&h| self.members[h as usize].iter().copied())
            .collect();
        let mut start = 0;
        let groups = old
            .iter()
            .map(|&h| {
                let size = self.members[h as usize].len();
                start += size;
                (start - size..start).collect()
            })
            .collect();
        Some(PoolJob { old, rows, groups })
    }

    /// Re-partition the pools ([`Self::pool_of`], [`Pool::solve`]) of every group, in id
    /// order, that changed or whose neighbourhood changed since it last found nothing to
    /// do. Pools are solved in parallel in batches of [`REGROUP_BATCH`] and applied in
    /// order; a pool holding a group that an earlier pool of its batch changed is left
    /// for the next pass. Returns the number of changes.
    fn regroup_pass(&mut self, space: &Space<'_>, scratch: &mut Scratch) -> usize {
        let mut changes = 0;
        let stale: Vec<u32> = (0..self.members.len() as u32)
            .filter(|&g| self.stale(space, g, self.regrouped[g as usize]))
            .collect();
        let sets: Vec<(usize, u64)> = space
            .sets
            .iter()
            .copied()
            .zip(space.set_unit.iter().copied())
            .collect();
        for batch in stale.chunks(REGROUP_BATCH) {
            if cancel::requested() {
                break;
            }
            let jobs: Vec<(u32, Option<PoolJob>)> = batch
                .iter()
                .map(|&g| (g, self.pool_of(space, g, scratch)))
                .collect();
            let solved: Vec<Option<Vec<Vec<usize>>>> = jobs
                .par_iter()
                .map(|(_, job)| {
                    let job = job.as_ref()?;
                    let ranks: Vec<u32> = job
                        .rows
                        .iter()
                        .flat_map(|&r| space.row_ranks(r).iter().copied())
                        .collect();
                    let pool = Pool::new(
                        space.m,
                        space.k,
                        &ranks,
                        |j, lo, hi| space.span(j, lo, hi),
                        &sets,
                    );
                    pool.solve(&job.groups).map(|(parts, _)| parts)
                })
                .collect();
            scratch.new_list(self.members.len());
            for ((g, job), parts) in jobs.into_iter().zip(solved) {
                let Some(job) = job else {
                    self.regrouped[g as usize] = self.clock;
                    continue;
                };
                if job.old.iter().any(|&h| {
                    (h as usize) < scratch.marks.len() && scratch.marks[h as usize] == scratch.mark
                }) {
                    continue;
                }
                let Some(parts) = parts else {
                    self.regrouped[g as usize] = self.clock;
                    continue;
                };
                let parts: Vec<Vec<u32>> = parts
                    .into_iter()
                    .map(|part| part.into_iter().map(|i| job.rows[i]).collect())
                    .collect();
                let before = self.members.len();
                self.replace(space, &job.old, parts);
                if scratch.marks.len() < self.members.len() {
                    scratch.marks.resize(self.members.len(), 0);
                }
                for &h in &job.old {
                    scratch.marks[h as usize] = scratch.mark;
                }
                for h in before..self.members.len() {
                    scratch.marks[h] = scratch.mark;
                }
                changes += 1;
            }
        }
        changes
    }

    /// Write the grouping to `group_of_row` with dense ids in order of first row, after
    /// checking that every group has at least `k` rows.
    fn compact(&self, group_of_row: &mut [u32], k: usize) -> Result<usize> {
        if let Some(rows) = self
            .members
            .iter()
            .find(|rows| !rows.is_empty() && rows.len() < k)
        {
            return Err(KernelError::InvalidArgument {
                kernel: "improve",
                message: format!(
                    "internal error: a group of {} rows is below k = {k}",
                    rows.len()
                ),
            });
        }
        let mut id = vec![u32::MAX; self.members.len()];
        let mut next = 0u32;
        for (out, &g) in group_of_row.iter_mut().zip(&self.of_row) {
            if id[g as usize] == u32::MAX {
                id[g as usize] = next;
                next += 1;
            }
            *out = id[g as usize];
        }
        Ok(next as usize)
    }
}

/// `⌈a / d⌉` as units for `a > 0` (`d > 0`), 0 otherwise: a group of `d` rows costs less
/// than `a` iff its units per row are below this.
fn ceil_units(a: i128, d: i128) -> u64 {
    if a <= 0 || d <= 0 {
        0
    } else if let (Ok(a), Ok(d)) = (u64::try_from(a), u64::try_from(d)) {
        // The common case, without the far slower 128-bit division.
        a.div_ceil(d)
    } else {
        u64::try_from((a + d - 1) / d).unwrap_or(u64::MAX)
    }
}

/// [`State::home`] of a tuple whose rows are in several groups (or none).
const SPREAD: u32 = u32::MAX;

/// The one group of a tuple's group list, or [`SPREAD`].
fn home_of(list: &[(u32, u32)]) -> u32 {
    match list {
        [(g, _)] => *g,
        _ => SPREAD,
    }
}

/// Lists of ids, one per index, stored contiguously.
struct Lists {
    start: Vec<usize>,
    items: Vec<u32>,
}

impl Lists {
    fn new(lists: &[Vec<u32>]) -> Self {
        let mut start = Vec::with_capacity(lists.len() + 1);
        start.push(0);
        let mut items = Vec::with_capacity(lists.iter().map(Vec::len).sum());
        for list in lists {
            items.extend_from_slice(list);
            start.push(items.len());
        }
        Self { start, items }
    }

    fn get(&self, i: usize) -> &[u32] {
        &self.items[self.start[i]..self.start[i + 1]]
    }
}

/// Count one more row of a tuple in group `g`.
fn join(list: &mut Vec<(u32, u32)>, g: u32) {
    match list.binary_search_by_key(&g, |&(h, _)| h) {
        Ok(i) => list[i].1 += 1,
        Err(i) => list.insert(i, (g, 1)),
    }
}

/// Count one row of a tuple fewer in group `g`.
fn leave(list: &mut Vec<(u32, u32)>, g: u32) {
    if let Ok(i) = list.binary_search_by_key(&g, |&(h, _)| h) {
        list[i].1 -= 1;
        if list[i].1 == 0 {
            list.remove(i);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cost::LevelCost;
    use crate::hierarchy::Hierarchy;

    /// Ages 0..8 as intervals of 2, then 4, then `*`; codes are the ages 0, 7, 1, 6, 2,
    /// 5, 3, 4 (not in depth-first order).
    fn shuffled_ages() -> Hierarchy {
        let age_of_code = [0u32, 7, 1, 6, 2, 5, 3, 4];
        let leaves: Vec<u32> = (0..8).collect();
        let pairs: Vec<u32> = age_of_code.iter().map(|a| a / 2).collect();
        let quads: Vec<u32> = age_of_code.iter().map(|a| a / 4).collect();
        Hierarchy::try_from_levels(&[&leaves, &pairs, &quads, &[0; 8]]).unwrap()
    }

    fn code(age: u32) -> u32 {
        [0u32, 7, 1, 6, 2, 5, 3, 4]
            .iter()
            .position(|&x| x == age)
            .unwrap() as u32
    }

    #[test]
    fn depth_first_ranks_keep_nodes_contiguous() {
        let h = shuffled_ages();
        let ranks = h.dfs_ranks();
        let mut sorted = ranks.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..8).collect::<Vec<u32>>());
        for level in 0..=h.height() {
            for node in 0..h.width(level) {
                let under: Vec<u32> = (0..8)
                    .filter(|&leaf| h.generalize(level, leaf) == node)
                    .map(|leaf| ranks[leaf as usize])
                    .collect();
                let (lo, hi) = (under.iter().min().unwrap(), under.iter().max().unwrap());
                assert_eq!(
                    (hi - lo + 1) as usize,
                    under.len(),
                    "level {level} node {node}"
                );
            }
        }
        // Not the code order: codes 0 and 1 (ages 0 and 7) are in different halves.
        assert!(ranks[1] > ranks[2]);
    }

    #[test]
    fn bound_without_and_inner() {
        let mut b = Bound::EMPTY;
        for x in [5, 9, 3, 5] {
            b.add(x);
        }
        assert_eq!((b.lo, b.hi), (3, 9));
        assert_eq!(b.without(3), (5, 9));
        assert_eq!(b.without(9), (3, 5));
        assert_eq!(b.without(5), (3, 9));
        assert_eq!(b.inner(), (5, 5));
        let mut one = Bound::EMPTY;
        one.add(4);
        let (lo, hi) = one.without(4);
        assert!(lo > hi);
        let (lo, hi) = one.inner();
        assert!(lo > hi);
        let mut two = Bound::EMPTY;
        two.add(2);
        two.add(2);
        assert_eq!(two.without(2), (2, 2));
        assert_eq!(two.inner(), (2, 2));
    }

    /// The best change of row `r` of one attribute of shuffled ages, one tuple per row.
    fn change_of(ages: &[u32], group_of_row: &[u32], k: usize, r: u32) -> Option<Change> {
        let model = CostModel::try_new(vec![shuffled_ages()], vec![1.0], LevelCost::Ncp).unwrap();
        let tuples: Vec<u32> = ages.iter().map(|&a| code(a)).collect();
        let tuple_of_row: Vec<u32> = (0..ages.len() as u32).collect();
        let groups = *group_of_row.iter().max().unwrap() as usize + 1;
        let n = tuples.len();
        let space = Space::new(&model, &tuples, 1, n, &tuple_of_row, k);
        let near = space.near_tuples(n, NEAR, WINDOW);
        let state = State::new(&space, group_of_row, groups, &near);
        let mut scratch = Scratch::new(1);
        state.candidates(
            tuple_of_row[r as usize],
            group_of_row[r as usize],
            NEAR,
            &mut scratch,
        );
        state.best_change(&space, r, &mut scratch)
    }

    #[test]
    fn best_change_moves_a_row() {
        // {0, 1, 4} and {5, 5}: age 4 moves to the second group.
        let change = change_of(&[0, 1, 4, 5, 5], &[0, 0, 0, 1, 1], 2, 2);
        assert!(matches!(change, Some(Change::Move(1))), "{change:?}");
        // Not with k = 3: the first group would keep 2 rows.
        assert!(change_of(&[0, 1, 4, 5, 5], &[0, 0, 0, 1, 1], 3, 2).is_none());
    }

    #[test]
    fn best_change_swaps_rows() {
        // {0, 4} and {1, 5} at k = 2: age 4 swaps with age 1 (row 2), not with age 5.
        let change = change_of(&[0, 4, 1, 5], &[0, 0, 1, 1], 2, 1);
        assert!(matches!(change, Some(Change::Swap(2))), "{change:?}");
    }

    #[test]
    fn free_ids_are_reused_at_the_limit() {
        let model = CostModel::try_new(vec![shuffled_ages()], vec![1.0], LevelCost::Ncp).unwrap();
        let tuples: Vec<u32> = [0, 1, 6, 7].iter().map(|&a| code(a)).collect();
        let tuple_of_row: Vec<u32> = (0..4).collect();
        // Group 1 has no rows.
        let space = Space::new(&model, &tuples, 1, 4, &tuple_of_row, 2);
        let near = space.near_tuples(4, NEAR, WINDOW);
        let mut state = State::new(&space, &[0, 0, 0, 0], 2, &near);
        state.id_limit = 2;
        assert_eq!(state.split_pass(&space), 1);
        assert_eq!(state.members, vec![vec![0, 1], vec![2, 3]]);
        let mut out = [9u32; 4];
        assert_eq!(state.compact(&mut out, 2).unwrap(), 2);
        assert_eq!(out, [0, 0, 1, 1]);
    }

    #[test]
    fn range_categories_are_priced_by_distinct_values() {
        // A categorical range attribute of 3 values: {a, b} twice costs 2 · 2 · 1/2; the
        // search swaps to {a, a} and {b, b}, which cost nothing.
        let model =
            CostModel::try_new(vec![Hierarchy::flat(3)], vec![1.0], LevelCost::Range).unwrap();
        let tuples = [0, 1];
        let tuple_of_row = [0, 1, 0, 1];
        let group_of_row = [0, 0, 1, 1];
        let before = release_cost(&model, &tuples, 1, &tuple_of_row, &group_of_row, 2).unwrap();
        assert_eq!(before, 2.0);
        let space = Space::new(&model, &tuples, 1, 2, &tuple_of_row, 2);
        assert_eq!(space.sets, vec![0]);
        assert_eq!(space.pair_units(0, 1), model.pair_units(&[0], &[1]));
        let near = space.near_tuples(2, NEAR, WINDOW);
        let mut state = State::new(&space, &group_of_row, 2, &near);
        assert_eq!(state.total_units() as f64 / model.scale(), 2.0);
        let mut scratch = Scratch::new(1);
        assert!(state.local_search(&space, &mut scratch) > 0);
        assert_eq!(state.total_units(), 0);
        let mut out = [9u32; 4];
        assert_eq!(state.compact(&mut out, 2).unwrap(), 2);
        assert_eq!(out[0], out[2]);
        assert_eq!(out[1], out[3]);
    }

    #[test]
    fn local_search_reaches_the_pairs() {
        let model = CostModel::try_new(vec![shuffled_ages()], vec![1.0], LevelCost::Ncp).unwrap();
        let tuples: Vec<u32> = [0, 4, 1, 5, 6, 2, 7, 3].iter().map(|&a| code(a)).collect();
        let tuple_of_row: Vec<u32> = (0..8).collect();
        let group_of_row = [0, 0, 1, 1, 2, 2, 3, 3];
        let space = Space::new(&model, &tuples, 1, 8, &tuple_of_row, 2);
        let near = space.near_tuples(8, NEAR, WINDOW);
        let mut state = State::new(&space, &group_of_row, 4, &near);
        let mut scratch = Scratch::new(1);
        assert!(state.local_search(&space, &mut scratch) > 0);
        // Four pairs of 2/7 each.
        assert_eq!(state.total_units() as f64 / model.scale(), 8.0 / 7.0);
    }
}
