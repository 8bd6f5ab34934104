//! Integration tests of `kanon_core::forest::improve`: `group_levels`, `release_cost` and `repair`
//! against naive references; the improvement passes never raise the cost, never leave a
//! group below k, keep every row, report their cost exactly and give the same grouping
//! whatever the number of threads; hand-made cases a move, a swap or a split fixes; the
//! error cases.

mod common;

use common::{hierarchy_of, nested_table};
use kanon_core::forest::cost::{CostModel, LevelCost};
use kanon_core::forest::improve::{
    group_levels, improve, improve_with_stats, release_cost, repair, Effort,
};
use kanon_core::{Hierarchy, KernelError};
use proptest::prelude::*;

/// A generated instance: hierarchies, tuples (row-major), the tuple of every row, a
/// grouping (ids below `groups`, possibly with small groups) and the cost model.
#[derive(Debug, Clone)]
struct Instance {
    model: CostModel,
    m: usize,
    tuples: Vec<u32>,
    tuple_of_row: Vec<u32>,
    group_of_row: Vec<u32>,
    groups: usize,
}

/// Up to 3 nested hierarchies of up to 6 leaves, up to 8 tuples (duplicates allowed),
/// `rows` rows and a random grouping into up to `max_groups` ids.
fn instance(
    rows: std::ops::RangeInclusive<usize>,
    max_groups: u32,
) -> impl Strategy<Value = Instance> {
    (
        prop::collection::vec(nested_table(6, 3), 1..=3),
        prop::collection::vec(1u32..4, 3),
        any::<bool>(),
        1usize..=8,
        rows,
        1..=max_groups,
    )
        .prop_flat_map(|(tables, weights, ncp, n, rows, groups)| {
            let leaves: Vec<u32> = tables.iter().map(|t| t[0].len() as u32).collect();
            let tuple: Vec<BoxedStrategy<u32>> = leaves.iter().map(|&l| (0..l).boxed()).collect();
            (
                Just(tables),
                Just(weights),
                Just(ncp),
                prop::collection::vec(tuple, n),
                prop::collection::vec(0..n as u32, rows),
                prop::collection::vec(0..groups, rows),
                Just(groups as usize),
            )
        })
        .prop_map(
            |(tables, weights, ncp, tuples, tuple_of_row, group_of_row, groups)| {
                let m = tables.len();
                let kind = if ncp {
                    LevelCost::Ncp
                } else {
                    LevelCost::Height
                };
                let model = CostModel::try_new(
                    tables.iter().map(|t| hierarchy_of(t)).collect(),
                    weights[..m].iter().map(|&w| f64::from(w)).collect(),
                    kind,
                )
                .unwrap();
                Instance {
                    model,
                    m,
                    tuples: tuples.concat(),
                    tuple_of_row,
                    group_of_row,
                    groups,
                }
            },
        )
}

/// The rows of every group.
fn members(group_of_row: &[u32], groups: usize) -> Vec<Vec<usize>> {
    let mut out = vec![Vec::new(); groups];
    for (r, &g) in group_of_row.iter().enumerate() {
        out[g as usize].push(r);
    }
    out
}

/// Naive meet level of a set of leaves: the lowest level where all their labels agree.
fn naive_level(h: &Hierarchy, leaves: &[u32]) -> u32 {
    (0..=h.height())
        .find(|&l| {
            leaves
                .iter()
                .all(|&x| h.generalize(l, x) == h.generalize(l, leaves[0]))
        })
        .unwrap() as u32
}

/// Naive levels of every group (0 for groups without rows).
fn naive_levels(case: &Instance, group_of_row: &[u32], groups: usize) -> Vec<u32> {
    let m = case.m;
    let mut out = vec![0u32; groups * m];
    for (g, rows) in members(group_of_row, groups).iter().enumerate() {
        if rows.is_empty() {
            continue;
        }
        for j in 0..m {
            let leaves: Vec<u32> = rows
                .iter()
                .map(|&r| case.tuples[case.tuple_of_row[r] as usize * m + j])
                .collect();
            out[g * m + j] = naive_level(case.model.hierarchy(j), &leaves);
        }
    }
    out
}

/// Naive release cost: Σ over rows and attributes of weight · node cost.
fn naive_cost(case: &Instance, group_of_row: &[u32], groups: usize) -> f64 {
    let m = case.m;
    let levels = naive_levels(case, group_of_row, groups);
    let weights = case.model.weights();
    group_of_row
        .iter()
        .zip(&case.tuple_of_row)
        .map(|(&g, &t)| {
            (0..m)
                .map(|j| {
                    let leaf = case.tuples[t as usize * m + j];
                    weights[j]
                        * case
                            .model
                            .node_cost(j, levels[g as usize * m + j] as usize, leaf)
                })
                .sum::<f64>()
        })
        .sum()
}

/// Naive repair: groups in id order; a group with fewer than `k` rows (counting rows it
/// received) joins the live group whose cost grows least (ties to the smaller id); the
/// result numbered densely in id order of the surviving groups.
fn naive_repair(case: &Instance, k: usize) -> (Vec<u32>, usize) {
    let m = case.m;
    let mut groups: Vec<Option<Vec<usize>>> = members(&case.group_of_row, case.groups)
        .into_iter()
        .map(|rows| (!rows.is_empty()).then_some(rows))
        .collect();
    let cost = |rows: &[usize]| -> f64 {
        let weights = case.model.weights();
        (0..m)
            .map(|j| {
                let leaves: Vec<u32> = rows
                    .iter()
                    .map(|&r| case.tuples[case.tuple_of_row[r] as usize * m + j])
                    .collect();
                let level = naive_level(case.model.hierarchy(j), &leaves) as usize;
                weights[j] * case.model.node_cost(j, level, leaves[0]) * rows.len() as f64
            })
            .sum()
    };
    for g in 0..groups.len() {
        let Some(small) = groups[g].clone().filter(|rows| rows.len() < k) else {
            continue;
        };
        groups[g] = None;
        let mut best: Option<(f64, usize)> = None;
        for (h, other) in groups.iter().enumerate() {
            let Some(other) = other else { continue };
            let union: Vec<usize> = small.iter().chain(other).copied().collect();
            let delta = cost(&union) - cost(&small) - cost(other);
            // Costs are sums of exact rationals here; compare with a tolerance.
            if best.is_none_or(|(d, _)| delta < d - 1e-9) {
                best = Some((delta, h));
            }
        }
        let (_, h) = best.unwrap();
        groups[h].as_mut().unwrap().extend(small);
    }
    let mut out = vec![u32::MAX; case.tuple_of_row.len()];
    let mut next = 0u32;
    for rows in groups.iter().flatten() {
        for &r in rows {
            out[r] = next;
        }
        next += 1;
    }
    (out, next as usize)
}

/// A valid input for `improve`: the instance's grouping after `repair`.
fn repaired(case: &Instance, k: usize) -> (Vec<u32>, usize) {
    let mut group_of_row = case.group_of_row.clone();
    let r = repair(
        &case.model,
        &case.tuples,
        case.m,
        &case.tuple_of_row,
        &mut group_of_row,
        case.groups,
        k as u64,
    )
    .unwrap();
    (group_of_row, r.groups)
}

/// Check a grouping: ids dense in `0..groups`, each used, each group at least `k` rows.
fn check_grouping(group_of_row: &[u32], groups: usize, k: usize) {
    let sizes: Vec<usize> = members(group_of_row, groups).iter().map(Vec::len).collect();
    assert_eq!(sizes.iter().sum::<usize>(), group_of_row.len());
    for (g, &s) in sizes.iter().enumerate() {
        assert!(s >= k.max(1), "group {g} has {s} rows, k = {k}");
    }
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * (1.0 + a.abs().max(b.abs()))
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(200))]

    #[test]
    fn group_levels_and_cost_match_naive(case in instance(0..=30, 6)) {
        let levels = group_levels(&case.model, &case.tuples, case.m, &case.tuple_of_row,
                                  &case.group_of_row, case.groups).unwrap();
        prop_assert_eq!(&levels, &naive_levels(&case, &case.group_of_row, case.groups));
        let cost = release_cost(&case.model, &case.tuples, case.m, &case.tuple_of_row,
                                &case.group_of_row, case.groups).unwrap();
        let naive = naive_cost(&case, &case.group_of_row, case.groups);
        prop_assert!(close(cost, naive), "{} vs naive {}", cost, naive);
    }

    #[test]
    fn repair_matches_naive(case in instance(1..=30, 8), k in 1usize..=5) {
        prop_assume!(case.tuple_of_row.len() >= k);
        let (group_of_row, groups) = repaired(&case, k);
        check_grouping(&group_of_row, groups, k);
        let (naive, naive_groups) = naive_repair(&case, k);
        prop_assert_eq!(groups, naive_groups);
        prop_assert_eq!(group_of_row, naive);
    }

    #[test]
    fn improve_lowers_cost_and_keeps_groups(case in instance(1..=40, 8), k in 1usize..=4,
                                            fast in any::<bool>()) {
        let effort = if fast { Effort::Fast } else { Effort::Full };
        prop_assume!(case.tuple_of_row.len() >= k);
        let (start, groups) = repaired(&case, k);
        let before = release_cost(&case.model, &case.tuples, case.m, &case.tuple_of_row,
                                  &start, groups).unwrap();
        let mut group_of_row = start.clone();
        let (count, stats) = improve_with_stats(&case.model, &case.tuples, case.m,
            &case.tuple_of_row, &mut group_of_row, groups, k as u64, effort).unwrap();
        check_grouping(&group_of_row, count, k);
        let after = release_cost(&case.model, &case.tuples, case.m, &case.tuple_of_row,
                                 &group_of_row, count).unwrap();
        prop_assert!(after <= before, "cost rose from {} to {}", before, after);
        // The passes track the cost exactly (in units); a pass changes something iff it
        // lowers the cost.
        prop_assert_eq!(stats.cost_before, before);
        let mut last = before;
        for pass in &stats.passes {
            prop_assert!(pass.cost <= last);
            prop_assert_eq!(pass.changes == 0, pass.cost == last, "{:?}", pass);
            last = pass.cost;
        }
        prop_assert_eq!(last, after);
        // First-row order numbering.
        let mut seen = 0u32;
        for &g in &group_of_row {
            prop_assert!(g <= seen);
            if g == seen {
                seen += 1;
            }
        }
        // Same input, same output.
        let mut again = start.clone();
        let count_again = improve(&case.model, &case.tuples, case.m, &case.tuple_of_row,
                                  &mut again, groups, k as u64, effort).unwrap();
        prop_assert_eq!(count_again, count);
        prop_assert_eq!(again, group_of_row);
    }

    #[test]
    fn k_one_reaches_zero_cost(case in instance(1..=20, 3)) {
        // With k = 1 a group costing anything can be cut into two cheaper ones, down to
        // groups of equal tuples.
        let (start, groups) = repaired(&case, 1);
        let mut group_of_row = start;
        let count = improve(&case.model, &case.tuples, case.m, &case.tuple_of_row,
                            &mut group_of_row, groups, 1, Effort::Full).unwrap();
        check_grouping(&group_of_row, count, 1);
        let cost = release_cost(&case.model, &case.tuples, case.m, &case.tuple_of_row,
                                &group_of_row, count).unwrap();
        prop_assert_eq!(cost, 0.0);
    }
}

/// Ages 0..8 as intervals of 2, then 4, then `*`, with leaf codes not in depth-first
/// order (codes 0..8 are the ages 0, 7, 1, 6, 2, 5, 3, 4).
fn shuffled_ages() -> Hierarchy {
    let age_of_code = [0u32, 7, 1, 6, 2, 5, 3, 4];
    let leaves: Vec<u32> = (0..8).collect();
    let pairs: Vec<u32> = age_of_code.iter().map(|a| a / 2).collect();
    let quads: Vec<u32> = age_of_code.iter().map(|a| a / 4).collect();
    Hierarchy::try_from_levels(&[&leaves, &pairs, &quads, &[0; 8]]).unwrap()
}

/// Code of age `a` in [`shuffled_ages`].
fn code(a: u32) -> u32 {
    [0u32, 7, 1, 6, 2, 5, 3, 4]
        .iter()
        .position(|&x| x == a)
        .unwrap() as u32
}

/// Run `improve` on one attribute of shuffled ages, one tuple per row.
fn improve_ages(ages: &[u32], group_of_row: &[u32], k: usize) -> (Vec<u32>, usize, f64, f64) {
    let model = CostModel::try_new(vec![shuffled_ages()], vec![1.0], LevelCost::Ncp).unwrap();
    let tuples: Vec<u32> = ages.iter().map(|&a| code(a)).collect();
    let tuple_of_row: Vec<u32> = (0..ages.len() as u32).collect();
    let groups = *group_of_row.iter().max().unwrap() as usize + 1;
    let before = release_cost(&model, &tuples, 1, &tuple_of_row, group_of_row, groups).unwrap();
    let mut out = group_of_row.to_vec();
    let count = improve(
        &model,
        &tuples,
        1,
        &tuple_of_row,
        &mut out,
        groups,
        k as u64,
        Effort::Full,
    )
    .unwrap();
    let after = release_cost(&model, &tuples, 1, &tuple_of_row, &out, count).unwrap();
    (out, count, before, after)
}

#[test]
fn a_move_lowers_the_cost() {
    // {0, 1, 4} needs the root; {5, 5} is exact. Moving age 4 to the second group gives
    // {0, 1} (a pair) and {4, 5, 5} (a pair): 3 · 1 → 2/7 + 3/7.
    let (groups, count, before, after) = improve_ages(&[0, 1, 4, 5, 5], &[0, 0, 0, 1, 1], 2);
    assert_eq!(before, 3.0);
    assert_eq!(count, 2);
    assert_eq!(groups, vec![0, 0, 1, 1, 1]);
    assert!((after - 5.0 / 7.0).abs() < 1e-12, "{after}");
}

#[test]
fn a_swap_lowers_the_cost() {
    // {0, 4} and {1, 5} both need the root and hold exactly k = 2 rows, so no row can
    // move; swapping 4 and 1 gives two pairs.
    let (groups, count, before, after) = improve_ages(&[0, 4, 1, 5], &[0, 0, 1, 1], 2);
    assert_eq!(before, 4.0);
    assert_eq!(count, 2);
    assert_eq!(groups, vec![0, 1, 0, 1]);
    assert!((after - 4.0 / 7.0).abs() < 1e-12, "{after}");
}

#[test]
fn a_large_group_is_split() {
    // One group of four ages in two pairs, k = 2: cut into the pairs.
    let (groups, count, before, after) = improve_ages(&[0, 6, 1, 7], &[0, 0, 0, 0], 2);
    assert_eq!(before, 4.0);
    assert_eq!(count, 2);
    assert_eq!(groups, vec![0, 1, 0, 1]);
    assert!((after - 4.0 / 7.0).abs() < 1e-12, "{after}");
}

#[test]
fn an_optimal_grouping_is_left_alone() {
    let (groups, count, before, after) = improve_ages(&[0, 1, 6, 7], &[0, 0, 1, 1], 2);
    assert_eq!((groups, count), (vec![0, 0, 1, 1], 2));
    assert_eq!(before, after);
}

/// A deterministic instance of `rows` rows over 3 attributes, one group.
fn big_instance(rows: usize) -> (CostModel, Vec<u32>, Vec<u32>) {
    let intervals = |leaves: u32, width: u32| {
        let mut levels: Vec<Vec<u32>> = Vec::new();
        let mut size = 1u32;
        while size < leaves {
            levels.push((0..leaves).map(|a| a / size).collect());
            size *= width;
        }
        levels.push(vec![0; leaves as usize]);
        let slices: Vec<&[u32]> = levels.iter().map(Vec::as_slice).collect();
        Hierarchy::try_from_levels(&slices).unwrap()
    };
    let model = CostModel::try_new(
        vec![intervals(64, 4), intervals(9, 3), Hierarchy::flat(2)],
        vec![1.0, 1.0, 1.0],
        LevelCost::Ncp,
    )
    .unwrap();
    let mut state = 0x9e37_79b9_7f4a_7c15u64;
    let mut next = |n: u32| {
        state ^= state << 13;
        state ^= state >> 7;
        state ^= state << 17;
        (state % u64::from(n)) as u32
    };
    let tuples: Vec<u32> = (0..rows)
        .flat_map(|_| [next(64), next(9), next(2)])
        .collect();
    let tuple_of_row: Vec<u32> = (0..rows as u32).collect();
    (model, tuples, tuple_of_row)
}

#[test]
fn same_grouping_with_any_number_of_threads() {
    let (model, tuples, tuple_of_row) = big_instance(6000);
    let run = |threads: usize| {
        let pool = rayon::ThreadPoolBuilder::new()
            .num_threads(threads)
            .build()
            .unwrap();
        pool.install(|| {
            let mut group_of_row = vec![0u32; tuple_of_row.len()];
            let count = improve(
                &model,
                &tuples,
                3,
                &tuple_of_row,
                &mut group_of_row,
                1,
                3,
                Effort::Full,
            )
            .unwrap();
            (count, group_of_row)
        })
    };
    let (count, one) = run(1);
    check_grouping(&one, count, 3);
    assert!(count > 100);
    assert_eq!(run(4), (count, one));
}

#[test]
fn errors() {
    let model = CostModel::try_new(vec![shuffled_ages()], vec![1.0], LevelCost::Ncp).unwrap();
    let tuples = [0u32, 1, 2];
    let invalid = |e: KernelError| matches!(e, KernelError::InvalidArgument { .. });
    // k = 0.
    let mut g = [0u32, 0, 0];
    assert!(invalid(
        improve(&model, &tuples, 1, &[0, 1, 2], &mut g, 1, 0, Effort::Full).unwrap_err()
    ));
    // A group below k.
    let mut g = [0u32, 0, 1];
    let e = improve(&model, &tuples, 1, &[0, 1, 2], &mut g, 2, 2, Effort::Full).unwrap_err();
    assert!(e.to_string().contains("fewer than k"), "{e}");
    assert_eq!(g, [0, 0, 1], "the grouping is untouched on error");
    // Lengths and ids.
    let mut g = [0u32, 0];
    assert!(matches!(
        improve(&model, &tuples, 1, &[0, 1, 2], &mut g, 1, 1, Effort::Full).unwrap_err(),
        KernelError::LengthMismatch { .. }
    ));
    let mut g = [0u32, 0, 5];
    assert!(invalid(
        improve(&model, &tuples, 1, &[0, 1, 2], &mut g, 2, 1, Effort::Full).unwrap_err()
    ));
    let mut g = [0u32, 0, 0];
    assert!(invalid(
        improve(&model, &tuples, 1, &[0, 1, 7], &mut g, 1, 1, Effort::Full).unwrap_err()
    ));
    assert!(invalid(
        improve(&model, &[0, 9], 1, &[0, 1, 0], &mut g, 1, 1, Effort::Full).unwrap_err()
    ));
    assert!(invalid(
        improve(&model, &tuples, 2, &[0, 1, 0], &mut g, 1, 1, Effort::Full).unwrap_err()
    ));
    // No rows: nothing to do.
    let mut none: [u32; 0] = [];
    assert_eq!(
        improve(&model, &tuples, 1, &[], &mut none, 3, 2, Effort::Full).unwrap(),
        0
    );
}
