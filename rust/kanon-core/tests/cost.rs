//! Integration tests of `kanon_core::forest::cost`: meet levels and pair costs on hand-made
//! hierarchies, exact ties, and the metric properties on generated hierarchies.

mod common;

use common::{hierarchy_of, nested_table};
use kanon_core::forest::cost::{CostModel, LevelCost};
use kanon_core::{Hierarchy, KernelError};
use proptest::prelude::*;

/// Ages 0..8: leaves, intervals of 2, intervals of 4, `*` (height 3).
fn ages() -> Hierarchy {
    let leaves: Vec<u32> = (0..8).collect();
    let pairs: Vec<u32> = leaves.iter().map(|a| a / 2).collect();
    let quads: Vec<u32> = leaves.iter().map(|a| a / 4).collect();
    Hierarchy::try_from_levels(&[&leaves, &pairs, &quads, &[0; 8]]).unwrap()
}

/// Two leaves that stay apart below level `t` and merge at `t`, under `height` levels.
fn merging_at(t: usize, height: usize) -> Hierarchy {
    let levels: Vec<[u32; 2]> = (0..=height)
        .map(|l| if l < t { [0, 1] } else { [0, 0] })
        .collect();
    let slices: Vec<&[u32]> = levels.iter().map(|l| l.as_slice()).collect();
    Hierarchy::try_from_levels(&slices).unwrap()
}

fn model(kind: LevelCost, weights: &[f64]) -> CostModel {
    CostModel::try_new(vec![ages(), Hierarchy::flat(3)], weights.to_vec(), kind).unwrap()
}

#[test]
fn meet_levels_of_the_age_hierarchy() {
    let m = model(LevelCost::Height, &[1.0, 1.0]);
    let cases = [
        (0, 0, 0),
        (0, 1, 1),
        (6, 7, 1),
        (1, 2, 2),
        (4, 7, 2),
        (3, 4, 3),
        (0, 7, 3),
    ];
    for (a, b, level) in cases {
        assert_eq!(m.meet_level(0, a, b), level, "ages {a} and {b}");
        assert_eq!(m.meet_level(0, b, a), level, "ages {b} and {a}");
    }
    assert_eq!(m.meet_level(1, 2, 2), 0);
    assert_eq!(m.meet_level(1, 0, 2), 1);
}

#[test]
fn node_costs_of_both_kinds() {
    let height = model(LevelCost::Height, &[1.0, 1.0]);
    let ncp = model(LevelCost::Ncp, &[1.0, 1.0]);
    for (level, h, n) in [
        (0, 0.0, 0.0),
        (1, 1.0 / 3.0, 1.0 / 7.0),
        (2, 2.0 / 3.0, 3.0 / 7.0),
        (3, 1.0, 1.0),
    ] {
        assert_eq!(height.node_cost(0, level, 5), h, "level {level}");
        assert_eq!(ncp.node_cost(0, level, 5), n, "level {level}");
    }
    assert_eq!(height.node_cost(1, 1, 0), 1.0);
    assert_eq!(ncp.node_cost(1, 1, 0), 1.0);
    assert_eq!(ncp.node_cost(1, 0, 2), 0.0);
}

#[test]
fn pair_costs_of_both_kinds() {
    let height = model(LevelCost::Height, &[1.0, 2.0]);
    let ncp = model(LevelCost::Ncp, &[1.0, 2.0]);
    assert!(height.is_exact() && ncp.is_exact());
    assert_eq!(height.scale(), 3.0);
    assert_eq!(ncp.scale(), 14.0);
    // (a, b, height cost, ncp cost)
    let cases: [([u32; 2], [u32; 2], f64, f64); 5] = [
        ([0, 0], [1, 2], 7.0 / 3.0, 15.0 / 7.0),
        ([3, 1], [4, 1], 1.0, 1.0),
        ([5, 2], [6, 0], 8.0 / 3.0, 17.0 / 7.0),
        ([6, 1], [7, 1], 1.0 / 3.0, 1.0 / 7.0),
        ([2, 0], [2, 0], 0.0, 0.0),
    ];
    for (a, b, h, n) in cases {
        assert_eq!(height.pair_cost(&a, &b), h, "{a:?} {b:?}");
        assert_eq!(height.pair_cost(&b, &a), h, "{b:?} {a:?}");
        assert_eq!(ncp.pair_cost(&a, &b), n, "{a:?} {b:?}");
        assert_eq!(ncp.pair_cost(&b, &a), n, "{b:?} {a:?}");
    }
    assert_eq!(height.pair_units(&[0, 0], &[1, 2]), 7);
    assert_eq!(ncp.pair_units(&[0, 0], &[1, 2]), 30);
}

#[test]
fn mathematically_equal_costs_are_equal() {
    // 0.1 + 0.2 (two attributes) against 0.3 (one attribute): not equal in plain f64.
    assert_ne!(0.1 + 0.2, 0.3);
    for kind in [LevelCost::Height, LevelCost::Ncp] {
        let hierarchies = vec![merging_at(1, 10), merging_at(2, 10), merging_at(3, 10)];
        let m = CostModel::try_new(hierarchies, vec![1.0; 3], kind).unwrap();
        assert!(m.is_exact());
        let split = m.pair_units(&[0, 0, 0], &[1, 1, 0]);
        let single = m.pair_units(&[0, 0, 0], &[0, 0, 1]);
        match kind {
            LevelCost::Height => {
                assert_eq!(split, single);
                assert_eq!(
                    m.pair_cost(&[0, 0, 0], &[1, 1, 0]),
                    m.pair_cost(&[0, 0, 0], &[0, 0, 1])
                );
            }
            // two leaves: every merge costs the whole attribute
            LevelCost::Ncp => assert_eq!(split, 2 * single),
            LevelCost::Range => unreachable!("not in the loop"),
        }
    }
}

#[test]
fn fractional_weights_keep_exact_sums_of_equal_terms() {
    let hierarchies = vec![ages(), ages(), ages()];
    let m = CostModel::try_new(hierarchies, vec![0.3, 0.3, 0.3], LevelCost::Ncp).unwrap();
    assert!(!m.is_exact());
    // the same terms in different attributes give the same cost
    let a = m.pair_cost(&[0, 0, 0], &[1, 2, 4]);
    let b = m.pair_cost(&[0, 0, 0], &[4, 1, 2]);
    let c = m.pair_cost(&[0, 0, 0], &[2, 4, 1]);
    assert_eq!(a, b);
    assert_eq!(b, c);
    let expected = 0.3 * (1.0 / 7.0 + 3.0 / 7.0 + 1.0);
    assert!((a - expected).abs() < 1e-12, "{a} vs {expected}");
}

#[test]
fn large_hierarchies_walk_the_levels() {
    // 600 leaves: no dense table; intervals of 10 and 100.
    let leaves: Vec<u32> = (0..600).collect();
    let tens: Vec<u32> = leaves.iter().map(|a| a / 10).collect();
    let hundreds: Vec<u32> = leaves.iter().map(|a| a / 100).collect();
    let h = Hierarchy::try_from_levels(&[&leaves, &tens, &hundreds, &[0; 600]]).unwrap();
    let m = CostModel::try_new(vec![h], vec![1.0], LevelCost::Ncp).unwrap();
    assert_eq!(m.meet_level(0, 13, 17), 1);
    assert_eq!(m.pair_cost(&[13], &[17]), 9.0 / 599.0);
    assert_eq!(m.pair_cost(&[13], &[99]), 99.0 / 599.0);
    assert_eq!(m.pair_cost(&[130], &[599]), 1.0);
    assert_eq!(m.pair_cost(&[599], &[599]), 0.0);
}

#[test]
fn bad_inputs_are_errors() {
    let err = CostModel::try_new(vec![ages()], vec![1.0, 1.0], LevelCost::Height).unwrap_err();
    assert!(matches!(
        err,
        KernelError::LengthMismatch {
            argument: "weights",
            got: 2,
            expected: 1,
            ..
        }
    ));
    let err = CostModel::try_new(Vec::new(), Vec::new(), LevelCost::Ncp).unwrap_err();
    assert!(err.to_string().contains("at least one"));
    for bad in [0.0, -1.0, f64::NAN, f64::INFINITY, f64::NEG_INFINITY] {
        let err = CostModel::try_new(vec![ages()], vec![bad], LevelCost::Ncp).unwrap_err();
        assert!(
            err.to_string().contains("not a positive finite number"),
            "{bad}: {err}"
        );
    }
    let err =
        CostModel::try_new(vec![ages(), ages()], vec![1e308, 1e308], LevelCost::Ncp).unwrap_err();
    assert!(err.to_string().contains("must be finite"), "{err}");
}

#[test]
#[should_panic(expected = "pair_units")]
fn pair_cost_of_a_short_row_panics() {
    let _ = model(LevelCost::Ncp, &[1.0, 1.0]).pair_cost(&[0], &[1]);
}

/// Hierarchy tables, attribute weights, whether costs are NCP, and three rows.
type Case = (Vec<Vec<Vec<u32>>>, Vec<f64>, bool, [Vec<u32>; 3]);

/// A model over 1..=3 generated hierarchies with integer or fractional weights, and three
/// rows of leaf codes.
fn model_and_rows() -> impl Strategy<Value = Case> {
    (
        prop::collection::vec(nested_table(10, 4), 1..=3),
        any::<bool>(),
        any::<bool>(),
    )
        .prop_flat_map(|(tables, integral, ncp)| {
            let m = tables.len();
            let weight = if integral {
                (1u32..5).prop_map(f64::from).boxed()
            } else {
                (0.05f64..20.0).boxed()
            };
            let leaves: Vec<u32> = tables.iter().map(|t| t[0].len() as u32).collect();
            let row = leaves.iter().map(|&n| (0..n).boxed()).collect::<Vec<_>>();
            (
                Just(tables),
                prop::collection::vec(weight, m),
                Just(ncp),
                [row.clone(), row.clone(), row],
            )
        })
}

fn build(tables: &[Vec<Vec<u32>>], weights: &[f64], ncp: bool) -> CostModel {
    let kind = if ncp {
        LevelCost::Ncp
    } else {
        LevelCost::Height
    };
    CostModel::try_new(
        tables.iter().map(|t| hierarchy_of(t)).collect(),
        weights.to_vec(),
        kind,
    )
    .unwrap()
}

/// Independent exact numerator and denominator of attribute `j`'s cost for leaves a, b.
fn reference_fraction(table: &[Vec<u32>], ncp: bool, a: u32, b: u32) -> (u64, u64) {
    let (a, b) = (a as usize, b as usize);
    let level = (0..table.len())
        .find(|&l| table[l][a] == table[l][b])
        .unwrap();
    let height = table.len() as u64 - 1;
    if ncp {
        let under = table[level]
            .iter()
            .filter(|&&c| c == table[level][a])
            .count() as u64;
        (under - 1, table[0].len() as u64 - 1)
    } else {
        (level as u64, height)
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn pair_cost_is_a_metric((tables, weights, ncp, [a, b, c]) in model_and_rows()) {
        let m = build(&tables, &weights, ncp);
        prop_assert_eq!(m.pair_units(&a, &a), 0);
        prop_assert_eq!(m.pair_cost(&a, &a), 0.0);
        prop_assert_eq!(m.pair_units(&a, &b), m.pair_units(&b, &a));
        prop_assert!(m.pair_cost(&a, &b) >= 0.0);
        // exact in units, in both modes
        prop_assert!(m.pair_units(&a, &c) <= m.pair_units(&a, &b) + m.pair_units(&b, &c));
        // in f64 up to the rounding of the three divisions
        let (ab, bc) = (m.pair_cost(&a, &b), m.pair_cost(&b, &c));
        prop_assert!(m.pair_cost(&a, &c) <= (ab + bc) * (1.0 + 1e-15));
        // order of units is order of costs
        let (x, y) = (m.pair_units(&a, &b), m.pair_units(&a, &c));
        prop_assert_eq!(x.cmp(&y), m.pair_cost(&a, &b).total_cmp(&m.pair_cost(&a, &c)));
        // each attribute is an ultrametric in levels
        for j in 0..tables.len() {
            let ac = m.meet_level(j, a[j], c[j]);
            prop_assert!(ac <= m.meet_level(j, a[j], b[j]).max(m.meet_level(j, b[j], c[j])));
        }
    }

    #[test]
    fn pair_cost_matches_the_formula((tables, weights, ncp, [a, b, _c]) in model_and_rows()) {
        let m = build(&tables, &weights, ncp);
        let mut formula = 0.0;
        for j in 0..tables.len() {
            let level = m.meet_level(j, a[j], b[j]);
            let table = &tables[j];
            let reference = (0..table.len())
                .find(|&l| table[l][a[j] as usize] == table[l][b[j] as usize])
                .unwrap();
            prop_assert_eq!(level, reference);
            formula += weights[j] * m.node_cost(j, level, a[j]);
        }
        let cost = m.pair_cost(&a, &b);
        prop_assert!((cost - formula).abs() <= 1e-12 * (1.0 + formula), "{} vs {}", cost, formula);
        if m.is_exact() {
            // units are the exact rational times the lcm of the denominators
            let lcm = m.scale() as u64;
            let units: u64 = (0..tables.len())
                .map(|j| {
                    let (p, q) = reference_fraction(&tables[j], ncp, a[j], b[j]);
                    lcm.checked_div(q).map_or(0, |per| weights[j] as u64 * p * per)
                })
                .sum();
            prop_assert_eq!(m.pair_units(&a, &b), units);
        }
    }
}
