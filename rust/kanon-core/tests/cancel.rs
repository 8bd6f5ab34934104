//! Cooperative cancellation: once [`cancel::request`] is called, every kernel returns the
//! cancellation error instead of a result, and runs normally again after [`cancel::clear`].
//!
//! The flag is process-wide, so all checks live in one test of their own binary (the
//! tests of one binary run in parallel threads).

use kanon_core::cancel;
use kanon_core::forest::anonymize::{anonymize, ForestOptions};
use kanon_core::forest::cost::{CostModel, LevelCost};
use kanon_core::forest::improve::Effort;
use kanon_core::historic::{datafly, mu_argus};
use kanon_core::hkp::{hkp, HkpOptions, Removal, Roles, DEFAULT_MAX_ITEMSETS};
use kanon_core::lattice::{optimal, LatticeOptions, Metric};
use kanon_core::mondrian::{mondrian, MondrianOptions};
use kanon_core::{Hierarchy, KernelError};

fn is_cancelled<T: std::fmt::Debug>(result: Result<T, KernelError>) -> bool {
    matches!(result, Err(KernelError::InvalidArgument { message, .. }) if message == cancel::MESSAGE)
}

/// Every kernel on a small table, each `Ok` or the cancellation.
fn run_all() -> Vec<(&'static str, bool, bool)> {
    let age = Hierarchy::try_from_levels(&[
        &[0, 1, 2, 3, 4, 5, 6, 7],
        &[0, 0, 1, 1, 2, 2, 3, 3],
        &[0, 0, 0, 0, 1, 1, 1, 1],
        &[0; 8],
    ])
    .unwrap();
    let sex = Hierarchy::flat(2);
    // The 16 distinct (age, sex) tuples, 1 to 3 rows each.
    let tuples: Vec<u32> = (0..16u32).flat_map(|i| [i % 8, i / 8]).collect();
    let counts: Vec<u64> = (0..16u64).map(|i| 1 + i % 3).collect();
    let n = 400usize;
    let hierarchies = vec![age.clone(), sex.clone()];
    let mut out = Vec::new();
    let mut record =
        |name: &'static str, ok: bool, cancelled: bool| out.push((name, ok, cancelled));

    for improve in [None, Some(Effort::Fast), Some(Effort::Full)] {
        for kind in [LevelCost::Height, LevelCost::Range] {
            let model = if kind == LevelCost::Range {
                CostModel::try_new_range(hierarchies.clone(), vec![1.0, 1.0], vec![None, None])
                    .unwrap()
            } else {
                CostModel::try_new(hierarchies.clone(), vec![1.0, 1.0], kind).unwrap()
            };
            let options = ForestOptions {
                k: 3,
                seed: 0,
                improve,
            };
            let r = anonymize(&tuples, 2, &counts, &model, &options);
            record("forest", r.is_ok(), is_cancelled(r));
        }
    }
    let keys = vec![(0..8).map(f64::from).collect(), vec![0.0, 1.0]];
    let r = mondrian(
        &tuples,
        2,
        &counts,
        &keys,
        &[7.0, 1.0],
        &hierarchies,
        None,
        &MondrianOptions { k: 3, stop: 0 },
    );
    record("mondrian", r.is_ok(), is_cancelled(r));
    let options = LatticeOptions {
        k: 3,
        max_suppressed: 0,
        keep_suppressed: true,
        min_level: vec![0, 0],
        max_level: vec![3, 1],
        weights: vec![1.0, 1.0],
        metric: Metric::Loss,
        node_loss: Vec::new(),
    };
    let r = optimal(&tuples, 2, &counts, &hierarchies, &options);
    record("optimal", r.is_ok(), is_cancelled(r));
    let r = datafly(&tuples, 2, &counts, &hierarchies, 3, 0, true);
    record("datafly", r.is_ok(), is_cancelled(r));
    let r = mu_argus(&tuples, 2, &counts, &hierarchies, 3, true);
    record("mu_argus", r.is_ok(), is_cancelled(r));
    let offsets: Vec<u64> = (0..=n as u64).map(|t| 3 * t).collect();
    let items: Vec<u32> = (0..n as u32).flat_map(|t| [t % 5, 5 + t % 3, 8]).collect();
    let options = HkpOptions {
        h: 0.9,
        k: 2,
        p: 3,
        removal: Removal::MmIl,
        min_support: 0.0,
        max_itemsets: DEFAULT_MAX_ITEMSETS,
    };
    let r = hkp(&offsets, &items, 9, Roles::Private(&[8]), &options);
    record("hkp", r.is_ok(), is_cancelled(r));
    out
}

#[test]
fn every_kernel_stops_on_a_cancellation_and_runs_again_after_clear() {
    cancel::clear();
    for (name, ok, _) in run_all() {
        assert!(ok, "{name} fails without a cancellation");
    }
    cancel::request();
    assert!(cancel::requested());
    // A poll reads the flag every `every` ticks.
    let mut poll = cancel::Poll::new("test", 3);
    assert!(poll.tick().is_ok() && poll.tick().is_ok());
    assert_eq!(
        poll.tick().unwrap_err().to_string(),
        format!("test: {}", cancel::MESSAGE)
    );
    for (name, _, cancelled) in run_all() {
        assert!(cancelled, "{name} ran on after a cancellation");
    }
    cancel::clear();
    for (name, ok, _) in run_all() {
        assert!(ok, "{name} fails after the cancellation was cleared");
    }
}
