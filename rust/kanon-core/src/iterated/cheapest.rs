//! Local recoding by releasing the cheapest class first: of all classes of at least k
//! unreleased rows, at any full-domain generalization, the one whose labels lose least
//! per row (ARX's loss metric, weighted) is released, until fewer than k rows are left;
//! those join a group as in [`super::iterated_by`].
//!
//! ARX's iteration picks a generalization by its loss over all rows left and releases
//! every class of k rows there; this orders the classes themselves, so a row is released
//! at the cheapest label that k rows left still share. A class's cost never changes and
//! its rows only leave, so each generalization is grouped once, when the least cost it
//! could still give a class is not above the cheapest class waiting; its classes of k
//! rows then wait in a heap with their tuples, and one popped with fewer than k rows left
//! is dropped.

use std::cmp::Reverse;
use std::collections::BinaryHeap;

use rayon::prelude::*;

use super::state::{State, Table};
use super::units::{check_inputs, StepCost, Units, KERNEL};
use crate::cancel;
use crate::error::{KernelError, Result};
use crate::hierarchy::Hierarchy;
use crate::priority::Recoding;

/// A cost as an integer, finely enough that different label sets rarely tie (ties fall
/// to the lower generalization, then the lower node id and first tuple).
fn fine(cost: f64) -> u64 {
    (cost * f64::from(1u32 << 30)).round() as u64
}

/// A class waiting: cost, height, node, first tuple, slot of its tuples in `lists`.
type Entry = Reverse<(u64, u32, u32, u32, u32)>;

/// The classes waiting to be released, cheapest on top.
#[derive(Default)]
struct Waiting {
    heap: BinaryHeap<Entry>,
    lists: Vec<Vec<u32>>,
    free: Vec<u32>,
    /// Tuples listed, all classes together.
    tuples: usize,
}

impl Waiting {
    fn push(&mut self, cost: u64, height: u32, node: u32, class: Vec<u32>) {
        self.tuples += class.len();
        let first = class[0];
        let slot = match self.free.pop() {
            Some(slot) => {
                self.lists[slot as usize] = class;
                slot
            }
            None => {
                self.lists.push(class);
                (self.lists.len() - 1) as u32
            }
        };
        self.heap.push(Reverse((cost, height, node, first, slot)));
    }

    fn cheapest(&self) -> Option<u64> {
        self.heap.peek().map(|Reverse(c)| c.0)
    }

    /// The cheapest class's node and tuples.
    fn pop(&mut self) -> Option<(u32, Vec<u32>)> {
        let Reverse((_, _, node, _, slot)) = self.heap.pop()?;
        let class = std::mem::take(&mut self.lists[slot as usize]);
        self.free.push(slot);
        self.tuples -= class.len();
        Some((node, class))
    }
}

/// Anonymize a histogram (`m` leaf codes per distinct tuple, `counts` rows each) by
/// releasing, of the classes of at least `k` unreleased rows at any full-domain
/// generalization, the cheapest per row first (`weights[j]` weighs attribute `j`'s loss).
///
/// Returns `None` when more than `max_waiting` tuples would wait in classes at once (the
/// memory bound: at most every node's grouping of every tuple).
///
/// # Errors
/// As [`super::iterated`].
///
/// # Complexity
/// Each generalization groups the unreleased tuples at most once (O(tuples · m)); each
/// class found is pushed and popped once (O(log classes) plus its tuples); after each
/// release the bounds are recomputed (O(labels of every level)).
pub fn cheapest_first(
    tuples: &[u32],
    m: usize,
    counts: &[u64],
    hierarchies: &[Hierarchy],
    weights: &[f64],
    k: u64,
    max_waiting: usize,
) -> Result<Option<Recoding>> {
    cancel::check(KERNEL)?;
    let (total, lattice) = check_inputs(tuples, m, counts, hierarchies, weights, k)?;
    let invalid = |message: String| KernelError::InvalidArgument {
        kernel: KERNEL,
        message,
    };
    let units = Units::new(hierarchies, StepCost::Loss);
    let Units::Loss { extra, spread } = &units else {
        return Err(invalid("internal error: loss units expected".to_owned()));
    };
    // Per attribute and level the cheapest label that k unreleased rows still share: a
    // class of k rows has such a label in every attribute, so their sum bounds its cost
    // (none: the generalization has no class left).
    let bounds = |state: &State| -> Vec<Vec<Option<f64>>> {
        (0..m)
            .map(|j| {
                state.label_rows[j]
                    .iter()
                    .zip(&extra[j])
                    .map(|(rows, extra)| {
                        rows.iter()
                            .filter(|&(_, &n)| n >= k)
                            .map(|(&g, _)| extra[g as usize])
                            .min()
                            .map(|e| weights[j] * e as f64 / spread[j] as f64)
                    })
                    .collect()
            })
            .collect()
    };
    let class_cost = |levels: &[usize], t: usize| -> u64 {
        fine(
            hierarchies
                .iter()
                .enumerate()
                .map(|(j, h)| {
                    let label = h.generalize(levels[j], tuples[t * m + j]);
                    weights[j] * units.unit(h, j, levels[j], label)
                })
                .sum(),
        )
    };
    let mut levels = vec![0usize; m];
    // Nodes by the bound last computed (bounds only rise as rows leave).
    let mut nodes: BinaryHeap<Reverse<(u64, u32, u32)>> = (0..lattice.nodes)
        .map(|node| {
            lattice.levels(node, &mut levels);
            Reverse((0, levels.iter().sum::<usize>() as u32, node as u32))
        })
        .collect();
    let mut state = State::new(tuples, m, counts, hierarchies, k, total);
    let mut bound = bounds(&state);
    let mut waiting = Waiting::default();
    let threads = rayon::current_num_threads().max(1);
    // Whether `state.unreleased` still lists released tuples.
    let mut stale = false;
    while state.unreleased_rows >= k {
        // Group every node that could hold a class as cheap as the cheapest waiting one,
        // a batch (one node per thread) at a time.
        loop {
            cancel::check(KERNEL)?;
            let cheapest = waiting.cheapest();
            let mut batch = Vec::with_capacity(threads);
            while batch.len() < threads {
                let Some(&Reverse((low, height, node))) = nodes.peek() else {
                    break;
                };
                if cheapest.is_some_and(|c| low > c) {
                    break;
                }
                nodes.pop();
                lattice.levels(node as usize, &mut levels);
                let Some(now) = (0..m).map(|j| bound[j][levels[j]]).sum::<Option<f64>>() else {
                    continue; // no class left there, ever
                };
                if fine(now) > low {
                    nodes.push(Reverse((fine(now), height, node)));
                } else {
                    batch.push(node as usize);
                }
            }
            if batch.is_empty() {
                break;
            }
            if stale {
                state.forget_released();
                stale = false;
            }
            let found: Vec<(Vec<usize>, Vec<Vec<u32>>)> = batch
                .par_iter()
                .map_init(Table::default, |table, &node| {
                    let mut at = vec![0usize; m];
                    lattice.levels(node, &mut at);
                    let classes = state.classes(&at, table);
                    (at, classes)
                })
                .collect();
            for (&node, (at, classes)) in batch.iter().zip(found) {
                let height = at.iter().sum::<usize>() as u32;
                for class in classes {
                    let cost = class_cost(&at, class[0] as usize);
                    waiting.push(cost, height, node as u32, class);
                }
            }
            if waiting.tuples > max_waiting {
                return Ok(None);
            }
        }
        let (node, class) = waiting.pop().ok_or_else(|| {
            // The top node holds every unreleased row in one class: unreachable.
            invalid("no generalization releases a class (an internal error)".to_owned())
        })?;
        let left: Vec<u32> = class
            .into_iter()
            .filter(|&t| state.group_of[t as usize] == u32::MAX)
            .collect();
        if left.iter().map(|&t| counts[t as usize]).sum::<u64>() >= k {
            lattice.levels(node as usize, &mut levels);
            state.release_class(&levels, &left);
            bound = bounds(&state);
            stale = true;
        }
    }
    state.forget_released();
    state.place_leftover(&units, weights);
    Ok(Some(state.finish()))
}

#[cfg(test)]
mod tests {
    use super::super::arx::iterated_by;
    use super::super::testing::{check, pairs, random_table};
    use super::*;

    /// Weighted loss of a recoding, per row of each tuple (the labels' leaves less one
    /// over the leaves less one).
    fn loss(tuples: &[u32], m: usize, counts: &[u64], hs: &[Hierarchy], r: &Recoding) -> f64 {
        counts
            .iter()
            .enumerate()
            .map(|(t, &c)| {
                let g = r.group_of_tuple[t] as usize;
                let row: f64 = (0..m)
                    .map(|j| {
                        let l = r.levels[g * m + j] as usize;
                        let label = hs[j].generalize(l, tuples[t * m + j]);
                        let under = hs[j].level(l).iter().filter(|&&x| x == label).count();
                        (under - 1) as f64 / (hs[j].leaves() - 1) as f64
                    })
                    .sum();
                c as f64 * row
            })
            .sum()
    }

    #[test]
    fn the_cheapest_class_goes_first_whatever_its_generalization_costs_over_all_rows() {
        // Attribute 0: leaves 0..4 under {0, 1} and {2, 3, 4} (the triple loses 2/4 per
        // row); attribute 1: leaves 0..3 under {0} and {1, 2, 3} (2/3 per row); k = 3.
        let a = Hierarchy::try_from_levels(&[&[0, 1, 2, 3, 4], &[0, 0, 1, 1, 1], &[0; 5]]).unwrap();
        let b = Hierarchy::try_from_levels(&[&[0, 1, 2, 3], &[0, 1, 1, 1], &[0; 4]]).unwrap();
        let hs = [a, b];
        let tuples = [4, 1, 2, 2, 4, 0, 3, 2];
        let counts = [2, 3, 2, 2];
        // Both release (2, 2) x3 as it is. Of the six rows left, ARX's step takes the
        // generalization of least loss over all six, levels (1, 1) (6 · 1/2 + 4 · 2/3),
        // and releases its one class, (4, 1) and (3, 2) at 7/6 per row; (4, 0) x2 then
        // joins it at 3/2 per row: 9 in all. The cheapest class is (4, *) at 1 per row;
        // (3, 2) x2 then joins (2, 2) at 1/2 per row: 6.5.
        let r = cheapest_first(&tuples, 2, &counts, &hs, &[1.0, 1.0], 3, usize::MAX)
            .unwrap()
            .unwrap();
        check(&tuples, 2, &counts, &hs, 3, &r);
        let arx = iterated_by(&tuples, 2, &counts, &hs, &[1.0, 1.0], 3, StepCost::Loss).unwrap();
        assert!(
            (loss(&tuples, 2, &counts, &hs, &r) - 6.5).abs() < 1e-9,
            "{r:?}"
        );
        assert!(
            (loss(&tuples, 2, &counts, &hs, &arx) - 9.0).abs() < 1e-9,
            "{arx:?}"
        );
    }

    #[test]
    fn random_tables_are_k_anonymous_and_no_costlier_than_arx_on_average() {
        let (mut ours, mut arx) = (0.0, 0.0);
        for case in 0..60 {
            let (tuples, m, counts, hs, k, weights) = random_table(case);
            let total: u64 = counts.iter().sum();
            match cheapest_first(&tuples, m, &counts, &hs, &weights, k, usize::MAX) {
                Ok(Some(r)) => {
                    check(&tuples, m, &counts, &hs, k, &r);
                    let plain = vec![1.0; m];
                    if weights == plain {
                        let a = iterated_by(&tuples, m, &counts, &hs, &plain, k, StepCost::Loss)
                            .unwrap();
                        ours += loss(&tuples, m, &counts, &hs, &r);
                        arx += loss(&tuples, m, &counts, &hs, &a);
                    }
                }
                Ok(None) => panic!("unbounded waiting list refused"),
                Err(e) => assert!(total > 0 && total < k, "{e}"),
            }
        }
        assert!(ours <= arx + 1e-9, "{ours} > {arx}");
    }

    #[test]
    fn the_waiting_bound_and_threads_do_not_change_the_result() {
        let tuples: Vec<u32> = (0..40u32).flat_map(|t| [t % 6, (t * 7) % 6]).collect();
        let counts: Vec<u64> = (0..40u64).map(|t| 1 + t % 3).collect();
        let hs = [pairs(6), pairs(6)];
        let run = |threads: usize, bound: usize| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
                .install(|| cheapest_first(&tuples, 2, &counts, &hs, &[1.0, 1.0], 4, bound))
                .unwrap()
        };
        let one = run(1, usize::MAX).unwrap();
        check(&tuples, 2, &counts, &hs, 4, &one);
        let four = run(4, usize::MAX).unwrap();
        assert_eq!(one.group_of_tuple, four.group_of_tuple);
        assert_eq!(one.levels, four.levels);
        assert!(run(1, 3).is_none());
    }

    #[test]
    fn bad_inputs_are_errors_and_an_empty_table_releases_nothing() {
        let hs = [pairs(4)];
        assert!(cheapest_first(&[0, 1], 1, &[1, 1], &hs, &[1.0], 0, usize::MAX).is_err());
        assert!(cheapest_first(&[0, 1], 1, &[1, 1], &hs, &[1.0], 3, usize::MAX).is_err());
        assert!(cheapest_first(&[0, 1], 1, &[1, 1], &hs, &[f64::NAN], 1, usize::MAX).is_err());
        let r = cheapest_first(&[], 1, &[], &hs, &[1.0], 5, usize::MAX)
            .unwrap()
            .unwrap();
        assert_eq!(r.groups, 0);
    }
}
