//! Group-level passes after DECOMPOSE: the repair pass that guarantees every group holds
//! at least k rows, improvement passes that lower the release cost while keeping every
//! group at k rows or more, and the generalization level of each group.
//!
//! Rows are *units*: row `r` carries the leaf codes of tuple `tuple_of_row[r]` (row-major
//! `tuples`, `m` codes per tuple) and belongs to group `group_of_row[r]` (dense ids
//! `0..groups`). The cost of a group is `|G| · Σ_j units(j, meet_j(G))`, where `meet_j(G)`
//! is the lowest node of hierarchy `j` holding every value of the group; the cost of a
//! release is the sum over its groups (the model's units, see [`crate::forest::cost`]).
//!
//! Leaves are ranked in depth-first order of their hierarchy, so the leaves under any node
//! form a range of ranks and `meet_j(G)` is the meet of the lowest- and highest-ranked
//! leaf of `G`: a group is summarized per attribute by its rank range.
//!
//! Under [`LevelCost::Range`] the cost of a group is `|G| · Σ_j weight_j · NCP_j(G)` of
//! its observed values instead (see [`crate::forest::cost`]). A numeric attribute is still an
//! interval: its leaves are ranked by key, and the units of a group are those of its
//! lowest- and highest-ranked leaves (`(max − min key) / span`). A categorical attribute
//! is not: it costs `(distinct values − 1)` units of one extra value, so the passes keep
//! the count of every value per group (a *tally*) beside the rank ranges, and every cost
//! they compare (the repair pass's merges, the split pass's cuts, moves, swaps, ejected
//! rows and the regroup pass's pools) adds the categorical attributes' terms from the
//! tallies. The levels reported per group are still the hierarchy meets.

use crate::cancel;
use crate::error::{KernelError, Result};
use crate::forest::cost::model::{CostModel, LevelCost};
use crate::forest::improve::effort::{
    Effort, ImproveStats, PassStats, FAST_NEAR, FAST_WINDOW, NEAR, ROUNDS, ROUND_GAIN, WINDOW,
};
use crate::forest::improve::scratch::Scratch;
use crate::forest::improve::space::Space;
use crate::forest::improve::state::State;
use crate::forest::table::Table;

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
/// use kanon_core::forest::cost::{CostModel, LevelCost};
/// use kanon_core::forest::improve::{improve, release_cost, Effort};
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
    k: u64,
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
/// The cost is the release cost ([`release_cost`](crate::forest::improve::release_cost), in the model's exact units). Every
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
///   4 nearest tuples of one of its rows (of those that keep the pool within 16k rows; a
///   group above that is not pooled), and the pool's rows are grouped again from
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
/// rounds of eject, split, regroup and search until a round changes nothing or lowers
/// the cost by less than 0.5 % (at most 8 rounds); under [`Effort::Fast`] it is eject, split, search, with 10 near tuples listed
/// from windows of 3. Under [`LevelCost::Range`] the rounds leave regroup out (it costs
/// several times the other passes for a small gain). A row or group is looked at again
/// only if it or its neighbourhood changed since it last found nothing to do.
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
///   least `k` of them (run [`repair`](crate::forest::improve::repair) first).
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
/// of the pool's local search (at most 16), for pools of p ≤ min(4s, 16k) rows: O(r · k ·
/// m) per pass whatever the groups' sizes (groups that no cut makes cheaper, such as those
/// of a suppressed attribute of many values, grow far beyond 2k rows). Each pass is run a
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
    k: u64,
    effort: Effort,
) -> Result<(usize, ImproveStats)> {
    improve_in(
        &Table::new(model, tuples, m, tuple_of_row),
        group_of_row,
        groups,
        usize::try_from(k).unwrap_or(usize::MAX),
        effort,
    )
}

/// [`improve_with_stats`] of `table`.
pub(crate) fn improve_in(
    table: &Table<'_>,
    group_of_row: &mut [u32],
    groups: usize,
    k: usize,
    effort: Effort,
) -> Result<(usize, ImproveStats)> {
    let Table {
        model,
        m,
        tuple_of_row,
        ..
    } = *table;
    let kernel = "improve";
    cancel::check(kernel)?;
    let n = table.check(kernel, group_of_row, groups)?;
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
    let space = Space::new(table, n, k);
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
    // Under range costs the regroup pass is left out: it costs several times the other
    // passes for a small gain in loss.
    let regroup = model.kind() != LevelCost::Range;
    for _ in 0..ROUNDS {
        let before = state.total_units();
        let changes: usize = [Pass::Eject, Pass::Split, Pass::Regroup, Pass::Search]
            .into_iter()
            .filter(|pass| regroup || !matches!(pass, Pass::Regroup))
            .map(|pass| run(&mut state, pass, &mut stats))
            .sum();
        // Diminishing returns: a round that gained less than 1 / ROUND_GAIN of the cost
        // is the last (on data without clusters a round costs as much as the first).
        let gain = before.saturating_sub(state.total_units());
        if changes == 0 || gain.saturating_mul(ROUND_GAIN) < before {
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
