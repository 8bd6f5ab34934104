//! Cross-kernel properties: the encode → hierarchy → groupify → class_stats pipeline on raw
//! values agrees with a naive computation, and generalizing further is monotone
//! (k, l-diversity and t-closeness never get worse, risks never rise).

use std::collections::BTreeMap;

use kanon_core::{
    class_stats, encode, groupify, ClassStats, GroundDistance, Hierarchy, StatsOptions,
};
use proptest::prelude::*;

const TOL: f64 = 1e-9;

/// Label of raw value `v` at `level` of a binary-bucket hierarchy of height `top`:
/// `v >> level` below the top (nested: buckets of 2^level), one root at the top.
fn label(v: i64, level: usize, top: usize) -> i64 {
    if level == top {
        0
    } else {
        v >> level
    }
}

/// One quasi-identifier column: its dictionary codes and its bucket hierarchy.
struct Encoded {
    codes: Vec<u32>,
    hierarchy: Hierarchy,
}

/// Encode a raw column and build its bucket hierarchy of height `top` over the distinct
/// values, with every level's labels dictionary-encoded too.
fn encode_column(values: &[i64], top: usize) -> Encoded {
    let dict = encode(values).unwrap();
    let leaves: Vec<i64> = dict.first_row.iter().map(|&r| values[r]).collect();
    let levels: Vec<Vec<u32>> = (0..=top)
        .map(|level| {
            let labels: Vec<i64> = leaves.iter().map(|&v| label(v, level, top)).collect();
            encode(&labels).unwrap().codes
        })
        .collect();
    // Level 0 labels are the leaves themselves, already in code order.
    assert_eq!(
        levels[0],
        (0..u32::try_from(leaves.len()).unwrap()).collect::<Vec<_>>()
    );
    let refs: Vec<&[u32]> = levels.iter().map(Vec::as_slice).collect();
    Encoded {
        codes: dict.codes,
        hierarchy: Hierarchy::try_from_levels(&refs).unwrap(),
    }
}

#[derive(Debug, Clone)]
struct Table {
    /// Raw quasi-identifier values, column-major.
    qis: Vec<Vec<i64>>,
    /// Raw sensitive value of each row.
    sensitive: Vec<i64>,
    /// Height of each column's hierarchy.
    tops: Vec<usize>,
    /// Levels to generalize to.
    levels: Vec<usize>,
}

fn table() -> impl Strategy<Value = Table> {
    (1usize..=3, 1usize..40)
        .prop_flat_map(|(m, n)| {
            (
                prop::collection::vec(prop::collection::vec(-20i64..20, n), m),
                prop::collection::vec(prop_oneof![Just(7i64), -3i64..3], n),
                prop::collection::vec(1usize..=6, m),
                prop::collection::vec(0usize..=6, m),
            )
        })
        .prop_map(|(qis, sensitive, tops, levels)| {
            let levels = levels.iter().zip(&tops).map(|(&l, &t)| l.min(t)).collect();
            Table {
                qis,
                sensitive,
                tops,
                levels,
            }
        })
}

/// Everything the pipeline computes for one choice of levels.
struct Outcome {
    class_of_row: Vec<u32>,
    stats: ClassStats,
}

fn pipeline(t: &Table, levels: &[usize], options: &StatsOptions) -> Outcome {
    let encoded: Vec<Encoded> = t
        .qis
        .iter()
        .zip(&t.tops)
        .map(|(values, &top)| encode_column(values, top))
        .collect();
    let columns: Vec<&[u32]> = encoded.iter().map(|e| e.codes.as_slice()).collect();
    let hierarchies: Vec<&Hierarchy> = encoded.iter().map(|e| &e.hierarchy).collect();
    let classes = groupify(&columns, &hierarchies, levels, None).unwrap();
    let sensitive = encode(&t.sensitive).unwrap().codes;
    // Histogram: per class, one entry per sensitive code.
    let mut per_class: Vec<BTreeMap<u32, u64>> = vec![BTreeMap::new(); classes.sizes.len()];
    for (&class, &code) in classes.class_of_row.iter().zip(&sensitive) {
        *per_class[class as usize].entry(code).or_default() += 1;
    }
    let mut offsets = vec![0u64];
    let mut counts = Vec::new();
    let mut codes = Vec::new();
    for entries in &per_class {
        for (&code, &count) in entries {
            codes.push(code);
            counts.push(count);
        }
        offsets.push(counts.len() as u64);
    }
    for (class, entries) in per_class.iter().enumerate() {
        assert_eq!(entries.values().sum::<u64>(), classes.sizes[class]);
    }
    let stats = class_stats(Some(&offsets), &counts, Some(&codes), None, options).unwrap();
    Outcome {
        class_of_row: classes.class_of_row,
        stats,
    }
}

/// Naive classes of raw rows: generalized raw tuples, ids by first occurrence.
fn naive_classes(t: &Table, levels: &[usize]) -> Vec<u32> {
    let mut ids: BTreeMap<Vec<i64>, u32> = BTreeMap::new();
    (0..t.sensitive.len())
        .map(|row| {
            let key: Vec<i64> = t
                .qis
                .iter()
                .zip(levels.iter().zip(&t.tops))
                .map(|(col, (&l, &top))| label(col[row], l, top))
                .collect();
            let next = u32::try_from(ids.len()).unwrap();
            *ids.entry(key).or_insert(next)
        })
        .collect()
}

fn options(distance: GroundDistance) -> StatsOptions {
    StatsOptions {
        distance,
        recursive_l: Some(2),
        ..StatsOptions::default()
    }
}

/// Sanity bounds every statistic must satisfy.
fn assert_bounds(s: &ClassStats) {
    let l = s.l_distinct.unwrap();
    assert!(l >= 1 && l <= s.k, "1 <= l_distinct {l} <= k {}", s.k);
    let le = s.l_entropy.unwrap();
    assert!(
        le >= 1.0 - TOL && le <= l as f64 + TOL,
        "1 <= l_entropy {le} <= {l}"
    );
    let t = s.t.unwrap();
    assert!((-TOL..=1.0 + TOL).contains(&t), "t = {t}");
    assert!(s.prosecutor_avg <= s.prosecutor_max + TOL);
    assert!((0.0..=1.0).contains(&s.prosecutor_at_risk));
    assert!((s.marketer - s.prosecutor_avg).abs() <= TOL);
    assert!((s.prosecutor_max - 1.0 / s.k as f64).abs() <= TOL);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(96))]

    /// encode + hierarchy + groupify reproduce the naive partition of raw values, and
    /// class_stats reports the naive k and number of classes.
    #[test]
    fn pipeline_matches_raw_values(t in table()) {
        let out = pipeline(&t, &t.levels, &options(GroundDistance::Equal));
        let naive = naive_classes(&t, &t.levels);
        prop_assert_eq!(&out.class_of_row, &naive);
        let classes = naive.iter().max().map_or(0, |&c| c + 1);
        let k = (0..classes).map(|c| naive.iter().filter(|&&x| x == c).count()).min().unwrap();
        prop_assert_eq!(out.stats.k, k as u64);
        prop_assert_eq!(out.stats.classes, u64::from(classes));
        prop_assert_eq!(out.stats.rows, t.sensitive.len() as u64);
        assert_bounds(&out.stats);
    }

    /// Generalizing one more level: never worse privacy, never higher risk.
    #[test]
    fn generalizing_is_monotone(t in table(), ordered in any::<bool>()) {
        let distance = if ordered { GroundDistance::Ordered } else { GroundDistance::Equal };
        let opts = options(distance);
        let base = pipeline(&t, &t.levels, &opts).stats;
        for j in 0..t.levels.len() {
            if t.levels[j] == t.tops[j] {
                continue;
            }
            let mut levels = t.levels.clone();
            levels[j] += 1;
            let up = pipeline(&t, &levels, &opts).stats;
            assert_bounds(&up);
            prop_assert!(up.k >= base.k);
            prop_assert!(up.classes <= base.classes);
            prop_assert!(up.l_distinct >= base.l_distinct);
            prop_assert!(up.l_entropy.unwrap() >= base.l_entropy.unwrap() - TOL);
            prop_assert!(up.t.unwrap() <= base.t.unwrap() + TOL);
            prop_assert!(up.recursive_c.unwrap() <= base.recursive_c.unwrap());
            prop_assert!(up.prosecutor_max <= base.prosecutor_max + TOL);
            prop_assert!(up.prosecutor_avg <= base.prosecutor_avg + TOL);
            prop_assert!(up.prosecutor_at_risk <= base.prosecutor_at_risk + TOL);
        }
        // Everything at the root: one class whose distribution is the table's.
        let top = pipeline(&t, &t.tops, &opts).stats;
        prop_assert_eq!(top.classes, 1);
        prop_assert_eq!(top.k, t.sensitive.len() as u64);
        prop_assert!(top.t.unwrap().abs() <= TOL);
    }

    /// The ordered ground distance is at most the equal one, so t is too.
    #[test]
    fn ordered_t_is_at_most_equal_t(t in table()) {
        let equal = pipeline(&t, &t.levels, &options(GroundDistance::Equal)).stats;
        let ordered = pipeline(&t, &t.levels, &options(GroundDistance::Ordered)).stats;
        prop_assert!(ordered.t.unwrap() <= equal.t.unwrap() + TOL);
        // Everything else does not depend on the distance.
        prop_assert_eq!(
            ClassStats { t: None, ..ordered },
            ClassStats { t: None, ..equal }
        );
    }

    /// Weighted distinct tuples give the same class sizes as the expanded rows.
    #[test]
    fn weights_equal_repeated_rows(t in table(), reps in prop::collection::vec(1u64..4, 40)) {
        let encoded: Vec<Encoded> =
            t.qis.iter().zip(&t.tops).map(|(v, &top)| encode_column(v, top)).collect();
        let hierarchies: Vec<&Hierarchy> = encoded.iter().map(|e| &e.hierarchy).collect();
        let n = t.sensitive.len();
        let weights = &reps[..n];
        let columns: Vec<&[u32]> = encoded.iter().map(|e| e.codes.as_slice()).collect();
        let weighted = groupify(&columns, &hierarchies, &t.levels, Some(weights)).unwrap();
        let expanded: Vec<Vec<u32>> = encoded
            .iter()
            .map(|e| {
                e.codes
                    .iter()
                    .zip(weights)
                    .flat_map(|(&c, &w)| std::iter::repeat_n(c, w as usize))
                    .collect()
            })
            .collect();
        let columns: Vec<&[u32]> = expanded.iter().map(Vec::as_slice).collect();
        let plain = groupify(&columns, &hierarchies, &t.levels, None).unwrap();
        prop_assert_eq!(&weighted.sizes, &plain.sizes);
        // And class_stats on either histogram agrees.
        let a = class_stats(None, &weighted.sizes, None, None, &StatsOptions::default()).unwrap();
        let b = class_stats(None, &plain.sizes, None, None, &StatsOptions::default()).unwrap();
        prop_assert_eq!(a, b);
    }
}
