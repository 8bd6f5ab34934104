//! Local recoding by iterated global recoding, ARX's local recoding (Prasser et al.,
//! ARX 3.7 `optimizeIterativeFast` with a suppression limit of all but one row, as ARX's
//! GUI and the PrioPrivacy experiments run it), made strict.
//!
//! Each step takes the rows not yet released and the full-domain generalization (a level
//! per attribute) of least weighted cost over those rows, among the generalizations where
//! some class holds at least k rows; every class of at least k rows is released there.
//! The cost ([`StepCost`]) is ARX's non-uniform entropy of attribute `j` at level `l`
//! over rows `R`, `Σ_x a_x · log2(b_g / a_x)` (`a_x` the rows of `R` with leaf `x`, `b_g`
//! those under its ancestor `g` at `l`), or its loss metric (with gs-factor 0:
//! suppression is free), `Σ_g b_g · (leaves under g − 1) / (leaves − 1)`. Rows only ever
//! leave, so a generalization without such a class never gets one: each is checked at
//! most once until it is chosen. ARX leaves the last rows (fewer than k) suppressed in a
//! class of their own; here they join the released class that is cheapest to generalize
//! to hold them.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rayon::prelude::*;

use super::state::State;
use super::units::{check_inputs, StepCost, Units, KERNEL};
use crate::cancel;
use crate::error::{KernelError, Result};
use crate::hierarchy::Hierarchy;
use crate::lattice::group::KeyMap;
use crate::priority::Recoding;

/// Anonymize a histogram (`m` leaf codes per distinct tuple, `counts` rows each) by
/// iterated global recoding, least weighted non-uniform entropy first; `weights[j]`
/// (≥ 0) weighs attribute `j`'s entropy.
///
/// # Errors
/// [`KernelError::InvalidArgument`] or [`KernelError::LengthMismatch`] for inconsistent
/// inputs, `k = 0`, fewer than `k` rows (but some), negative or non-finite weights, or a
/// lattice of more than [`MAX_NODES`] nodes; [`KernelError::Cancelled`] when cancelled.
///
/// # Complexity
/// At most `rows / k` steps, each ordering the lattice (O(nodes · m) and a heap pop per
/// node checked) and grouping the unreleased tuples once; at most `nodes + rows / k`
/// checks, each a pass over the unreleased tuples (O(tuples · m)) that stops at the
/// first class of k rows.
pub fn iterated(
    tuples: &[u32],
    m: usize,
    counts: &[u64],
    hierarchies: &[Hierarchy],
    weights: &[f64],
    k: u64,
) -> Result<Recoding> {
    iterated_by(
        tuples,
        m,
        counts,
        hierarchies,
        weights,
        k,
        StepCost::Entropy,
    )
}

/// [`iterated`] with each step minimizing `step_cost`.
///
/// # Errors
/// As [`iterated`].
///
/// # Complexity
/// As [`iterated`].
pub fn iterated_by(
    tuples: &[u32],
    m: usize,
    counts: &[u64],
    hierarchies: &[Hierarchy],
    weights: &[f64],
    k: u64,
    step_cost: StepCost,
) -> Result<Recoding> {
    cancel::check(KERNEL)?;
    let (total, lattice) = check_inputs(tuples, m, counts, hierarchies, weights, k)?;
    let invalid = |message: String| KernelError::InvalidArgument {
        kernel: KERNEL,
        message,
    };
    let units = Units::new(hierarchies, step_cost);
    let mut state = State::new(tuples, m, counts, hierarchies, k, total);
    let mut infeasible = vec![false; lattice.nodes];
    let mut order: Vec<Reverse<(u64, u32, u32)>> = Vec::with_capacity(lattice.nodes);
    let mut levels = vec![0usize; m];
    while state.unreleased_rows >= k {
        cancel::check(KERNEL)?;
        let costs = match &units {
            Units::Entropy => state.entropies(weights),
            Units::Loss { extra, spread } => state.losses(extra, spread, weights),
        };
        order.clear();
        for node in (0..lattice.nodes).filter(|&node| !infeasible[node]) {
            lattice.levels(node, &mut levels);
            let cost: f64 = levels.iter().enumerate().map(|(j, &l)| costs[j][l]).sum();
            let height: usize = levels.iter().sum();
            order.push(Reverse((quantize(cost), height as u32, node as u32)));
        }
        // Nodes are checked in batches, one per thread; the first feasible one in order is
        // chosen, and every infeasible one stays so (rows only leave), so the result does
        // not depend on the batch size.
        let threads = rayon::current_num_threads().max(1);
        let mut heap = BinaryHeap::from(std::mem::take(&mut order));
        let mut nodes: Vec<(u32, Vec<usize>)> = Vec::with_capacity(threads);
        let mut released = false;
        // The first node alone: at small k it is mostly feasible.
        let mut batch = 1;
        while !released && !heap.is_empty() {
            nodes.clear();
            while nodes.len() < batch {
                let Some(Reverse((_, _, node))) = heap.pop() else {
                    break;
                };
                let mut at = vec![0usize; m];
                lattice.levels(node as usize, &mut at);
                nodes.push((node, at));
            }
            let feasible: Vec<bool> = nodes
                .par_iter()
                .map_init(KeyMap::default, |sums, (_, at)| state.has_class(at, sums))
                .collect();
            for ((node, at), feasible) in nodes.iter().zip(feasible) {
                if !feasible {
                    infeasible[*node as usize] = true;
                } else if !released {
                    released = state.release(at);
                }
            }
            batch = threads;
        }
        order = heap.into_vec();
        if !released {
            // The top node holds every unreleased row in one class: unreachable.
            return Err(invalid(
                "no generalization releases a class (an internal error)".to_owned(),
            ));
        }
    }
    state.place_leftover(&units, weights);
    Ok(state.finish())
}

/// Costs as integers, so that equal costs summed in another order still tie (the order
/// then falls to the lower node, as ARX's search prefers).
fn quantize(cost: f64) -> u64 {
    (cost * 1024.0).round() as u64
}

#[cfg(test)]
mod tests {
    use std::collections::HashMap;

    use super::super::state::Table;
    use super::super::testing::{check, random_table};
    use super::super::testing::{flat, pairs};
    use super::super::units::Lattice;
    use super::*;

    #[test]
    fn frequent_tuples_stay_exact() {
        // Ten copies of (0, 0), ten of (1, 1), and three odd tuples.
        let tuples = [0, 0, 1, 1, 2, 3, 3, 2, 3, 3];
        let counts = [10, 10, 1, 1, 1];
        let hs = [pairs(4), pairs(4)];
        let r = iterated(&tuples, 2, &counts, &hs, &[1.0, 1.0], 3).unwrap();
        check(&tuples, 2, &counts, &hs, 3, &r);
        for t in 0..2 {
            let g = r.group_of_tuple[t] as usize;
            assert_eq!(&r.levels[g * 2..g * 2 + 2], &[0, 0]);
        }
    }

    #[test]
    fn weights_decide_which_attribute_is_generalized() {
        // (0,0) (1,0) (0,1) (1,1), three rows each: k = 6 needs one attribute generalized.
        let tuples = [0, 0, 1, 0, 0, 1, 1, 1];
        let counts = [3, 3, 3, 3];
        let hs = [flat(2), flat(2)];
        for (weights, kept) in [([1.0, 0.1], 0), ([0.1, 1.0], 1)] {
            let r = iterated(&tuples, 2, &counts, &hs, &weights, 6).unwrap();
            check(&tuples, 2, &counts, &hs, 6, &r);
            for g in 0..r.groups {
                assert_eq!(r.levels[g * 2 + kept], 0, "{weights:?}: {r:?}");
            }
        }
    }

    #[test]
    fn loss_generalizes_the_attribute_that_loses_least() {
        // (0,0) (1,0) (0,1) (1,1), three rows each: k = 6 needs one attribute generalized.
        // Attribute 0 has 4 leaves in pairs (a pair loses 1/3 per row), attribute 1 three
        // flat leaves (its root loses 1 per row): the loss generalizes attribute 0.
        let tuples = [0, 0, 1, 0, 0, 1, 1, 1];
        let counts = [3, 3, 3, 3];
        let hs = [pairs(4), flat(3)];
        let r = iterated_by(&tuples, 2, &counts, &hs, &[1.0, 1.0], 6, StepCost::Loss).unwrap();
        check(&tuples, 2, &counts, &hs, 6, &r);
        for g in 0..r.groups {
            assert_eq!(&r.levels[g * 2..g * 2 + 2], &[1, 0], "{r:?}");
        }
        // Weighted ten times as much, attribute 0 is kept instead.
        let r = iterated_by(&tuples, 2, &counts, &hs, &[10.0, 1.0], 6, StepCost::Loss).unwrap();
        for g in 0..r.groups {
            assert_eq!(&r.levels[g * 2..g * 2 + 2], &[0, 1], "{r:?}");
        }
    }

    #[test]
    fn leftover_rows_join_a_group() {
        // 7 rows of (0), 2 of (1), 1 of (2) with k = 3: the last three cannot form a
        // class of their own at level 0, and (1), (2) are fewer than k anyway.
        let tuples = [0, 1, 2, 3];
        let counts = [7, 2, 1, 0];
        let hs = [pairs(4)];
        let r = iterated(&tuples, 1, &counts, &hs, &[1.0], 3).unwrap();
        check(&tuples, 1, &counts, &hs, 3, &r);
        // Two rows left below k at the end (the pair (2, 3) has one row) join a group.
        let r = iterated(&tuples, 1, &counts, &hs, &[1.0], 8).unwrap();
        check(&tuples, 1, &counts, &hs, 8, &r);
        assert_eq!(r.groups, 1);
    }

    #[test]
    fn bad_inputs_are_errors() {
        let hs = [flat(2)];
        assert!(iterated(&[0, 1], 1, &[1, 1], &hs, &[1.0], 0).is_err());
        assert!(iterated(&[0, 1], 1, &[1, 1], &hs, &[1.0], 3).is_err());
        assert!(iterated(&[0, 1], 1, &[1, 1], &hs, &[-1.0], 1).is_err());
        assert!(iterated(&[0, 1], 1, &[1, 1], &hs, &[f64::NAN], 1).is_err());
        assert!(iterated(&[0, 1], 1, &[1, 1], &hs, &[1.0, 1.0], 1).is_err());
        // 16 attributes of height 2: 3^16 nodes.
        let wide: Vec<Hierarchy> = (0..16).map(|_| pairs(4)).collect();
        let err = iterated(&[0; 16], 16, &[1], &wide, &[1.0; 16], 1).unwrap_err();
        assert!(err.to_string().contains("lattice"), "{err}");
    }

    #[test]
    fn empty_table_releases_nothing() {
        let r = iterated(&[], 1, &[], &[flat(2)], &[1.0], 5).unwrap();
        assert_eq!(r.groups, 0);
    }

    #[test]
    fn random_tables_are_k_anonymous() {
        for case in 0..40 {
            let (tuples, m, counts, hs, k, weights) = random_table(case);
            let total: u64 = counts.iter().sum();
            for step_cost in [StepCost::Entropy, StepCost::Loss] {
                match iterated_by(&tuples, m, &counts, &hs, &weights, k, step_cost) {
                    Ok(r) => check(&tuples, m, &counts, &hs, k, &r),
                    Err(e) => assert!(total > 0 && total < k, "{e}"),
                }
            }
            // The early-stopping check agrees with a full grouping, at every node.
            if total >= k {
                let state = State::new(&tuples, m, &counts, &hs, k, total);
                let lattice = Lattice::new(&hs).unwrap();
                let mut levels = vec![0; m];
                let mut sums = KeyMap::default();
                for node in 0..lattice.nodes {
                    lattice.levels(node, &mut levels);
                    let (ids, rows) = state.group(&levels);
                    let full = rows.iter().any(|&n| n >= k);
                    assert_eq!(state.has_class(&levels, &mut sums), full, "{levels:?}");
                    // And the classes of k rows listed for the cheapest-first order.
                    let mut expected: Vec<Vec<u32>> = Vec::new();
                    let mut slot = HashMap::new();
                    for (&t, &c) in state.unreleased.iter().zip(&ids) {
                        if rows[c as usize] >= k {
                            let at = *slot.entry(c).or_insert(expected.len());
                            if at == expected.len() {
                                expected.push(Vec::new());
                            }
                            expected[at].push(t as u32);
                        }
                    }
                    let listed = state.classes(&levels, &mut Table::default());
                    assert_eq!(listed, expected, "{levels:?}");
                }
            }
        }
    }
}
