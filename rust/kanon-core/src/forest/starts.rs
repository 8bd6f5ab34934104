//! A second starting point for the improvement passes: the classes of full-domain
//! generalizations, cheapest first.
//!
//! The forest's groups are a good start at small k; at larger k the passes end lower from
//! a local recoding that releases, of the classes of k rows at any full-domain
//! generalization, the one of least loss per row first ([`cheapest_first`]; on Adult it
//! loses 0.6 to 2.6 % less than ARX's own local recoding, whose iteration releases every
//! class of a generalization chosen by its loss over all rows left; benches/README.md,
//! issue 24). [`improve_best`] improves the cheaper start, or both when their costs are
//! within [`BOTH_WITHIN`] of each other (then the passes may still reverse the order),
//! and keeps the cheaper result.

use crate::error::{KernelError, Result};
use crate::forest::cost::model::LevelCost;
use crate::forest::improve::effort::Effort;
use crate::forest::improve::extents::release_cost_in;
use crate::forest::improve::passes::improve_in;
use crate::forest::table::Table;
use crate::iterated::{cheapest_first, lattice_nodes};

/// The start is built when the lattice's nodes times the distinct tuples stay within
/// this: each node groups at most the unreleased tuples, once, so this bounds the
/// start's grouping work (Adult's 9 QIs: 12,960 nodes × 19,502 tuples).
pub(crate) const ITERATED_WORK: u64 = 1 << 28;

/// The start is given up (the forest's groups alone are improved) when more tuples than
/// this wait in classes at once, 64 MiB of tuple ids (Adult: at most 0.66 million).
pub(crate) const WAITING_TUPLES: usize = 1 << 24;

/// Both starts are improved when the costlier one costs at most this many times the
/// other: the passes lower the forest's groups by 16 to 60 % on Adult, the cheapest-first
/// start's by 0.1 to 7 %, so a start that far behind does not catch up.
pub(crate) const BOTH_WITHIN: f64 = 1.25;

/// A grouping the passes may start from, and its cost.
pub(crate) struct Start {
    /// Group of every row.
    pub group_of_row: Vec<u32>,
    /// Number of groups.
    pub groups: usize,
    /// Release cost.
    pub cost: f64,
}

/// The improved grouping, its cost, the cost of the start it came from, and whether that
/// start was the cheapest-first classes.
pub(crate) struct Best {
    pub group_of_row: Vec<u32>,
    pub groups: usize,
    pub cost: f64,
    pub start_cost: f64,
    pub classes: bool,
}

/// Improve the forest's grouping `forest` of `table` (its tuples occurring `counts`
/// times) or, under the full effort, the cheapest-first classes: the cheaper start, or
/// both when within [`BOTH_WITHIN`]; the cheaper result (the forest's on a tie).
///
/// # Errors
/// Errors of the kernels it calls (cancellation).
pub(crate) fn improve_best(
    table: &Table<'_>,
    counts: &[u64],
    forest: Start,
    k: usize,
    effort: Effort,
) -> Result<Best> {
    let other = match effort {
        Effort::Full => classes_start(table, counts, k)?,
        Effort::Fast => None,
    };
    let mut starts = vec![(forest, false)];
    if let Some((group_of_row, groups)) = other {
        let cost = release_cost_in(table, &group_of_row, groups)?;
        let classes = Start {
            group_of_row,
            groups,
            cost,
        };
        let (low, high) = (cost.min(starts[0].0.cost), cost.max(starts[0].0.cost));
        if high <= low * BOTH_WITHIN {
            starts.push((classes, true));
        } else if cost < starts[0].0.cost {
            starts = vec![(classes, true)];
        }
    }
    let mut best: Option<Best> = None;
    for (mut start, classes) in starts {
        let (groups, _) = improve_in(table, &mut start.group_of_row, start.groups, k, effort)?;
        let cost = release_cost_in(table, &start.group_of_row, groups)?;
        if best.as_ref().is_none_or(|b| cost < b.cost) {
            best = Some(Best {
                group_of_row: start.group_of_row,
                groups,
                cost,
                start_cost: start.cost,
                classes,
            });
        }
    }
    best.ok_or_else(|| KernelError::InvalidArgument {
        kernel: "anonymize",
        message: "internal error: no start was improved".to_owned(),
    })
}

/// The cheapest-first start of `table`, its tuples occurring `counts` times (group of
/// every row, groups), or `None` when the model is not the hierarchy NCP (the loss the
/// start minimizes), the work would exceed [`ITERATED_WORK`] or the classes waiting
/// [`WAITING_TUPLES`].
///
/// # Errors
/// Errors of the kernels it calls (cancellation).
pub(crate) fn classes_start(
    table: &Table<'_>,
    counts: &[u64],
    k: usize,
) -> Result<Option<(Vec<u32>, usize)>> {
    let Table {
        model,
        tuples,
        m,
        tuple_of_row,
    } = *table;
    if model.kind() != LevelCost::Ncp || counts.is_empty() {
        return Ok(None);
    }
    let hierarchies = model.hierarchies();
    let Some(nodes) = lattice_nodes(hierarchies) else {
        return Ok(None);
    };
    if (nodes as u64).saturating_mul(counts.len() as u64) > ITERATED_WORK {
        return Ok(None);
    }
    let Some(recoding) = cheapest_first(
        tuples,
        m,
        counts,
        hierarchies,
        model.weights(),
        k as u64,
        WAITING_TUPLES,
    )?
    else {
        return Ok(None);
    };
    let group_of_row: Vec<u32> = tuple_of_row
        .iter()
        .map(|&t| recoding.group_of_tuple[t as usize])
        .collect();
    Ok(Some((group_of_row, recoding.groups)))
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forest::cost::model::CostModel;
    use crate::hierarchy::Hierarchy;

    fn pairs(n: u32) -> Hierarchy {
        let leaves: Vec<u32> = (0..n).collect();
        let halves: Vec<u32> = (0..n).map(|x| x / 2).collect();
        Hierarchy::try_from_levels(&[&leaves, &halves, &vec![0; n as usize]]).unwrap()
    }

    #[test]
    fn only_the_hierarchy_ncp_within_the_work_bound_gets_a_start() {
        let tuples = [0, 0, 1, 1, 2, 2, 3, 3];
        let counts = [2, 1, 1, 2];
        let tuple_of_row = [0, 0, 1, 2, 3, 3];
        let hs = vec![pairs(4), pairs(4)];
        let ncp = CostModel::try_new(hs.clone(), vec![1.0, 1.0], LevelCost::Ncp).unwrap();
        let (groups_of_row, groups) =
            classes_start(&Table::new(&ncp, &tuples, 2, &tuple_of_row), &counts, 3)
                .unwrap()
                .unwrap();
        let mut sizes = vec![0; groups];
        for &g in &groups_of_row {
            sizes[g as usize] += 1;
        }
        assert!(sizes.iter().all(|&n| n >= 3), "{sizes:?}");
        let height = CostModel::try_new(hs, vec![1.0, 1.0], LevelCost::Height).unwrap();
        assert!(
            classes_start(&Table::new(&height, &tuples, 2, &tuple_of_row), &counts, 3)
                .unwrap()
                .is_none()
        );
        // 15 binary attributes (2^15 nodes) and 8,193 tuples: over the work bound.
        let m = 15;
        let flat = Hierarchy::flat(2);
        let wide = CostModel::try_new(vec![flat; m], vec![1.0; m], LevelCost::Ncp).unwrap();
        let n = (ITERATED_WORK >> m) as usize + 1;
        let tuples: Vec<u32> = (0..n)
            .flat_map(|t| (0..m).map(move |j| ((t >> j) & 1) as u32))
            .collect();
        let counts = vec![1; n];
        let rows: Vec<u32> = (0..n as u32).collect();
        assert!(
            classes_start(&Table::new(&wide, &tuples, m, &rows), &counts, 2)
                .unwrap()
                .is_none()
        );
    }
}
