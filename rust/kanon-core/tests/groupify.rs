//! Integration tests of `kanon_core::groupify` against a naive reference partition.

mod common;

use std::collections::BTreeMap;
use std::sync::LazyLock;

use common::{hierarchy_of, nested_table};
use kanon_core::{groupify, Classes, Hierarchy, KernelError};
use proptest::prelude::*;

/// Naive reference: generalized tuples in a BTreeMap, class ids by first occurrence.
fn reference(
    columns: &[&[u32]],
    hierarchies: &[&Hierarchy],
    levels: &[usize],
    weights: Option<&[u64]>,
) -> Classes {
    let n = columns.first().map_or(0, |c| c.len());
    let mut ids: BTreeMap<Vec<u32>, u32> = BTreeMap::new();
    let mut out = Classes {
        class_of_row: Vec::new(),
        sizes: Vec::new(),
        first_row: Vec::new(),
    };
    for row in 0..n {
        let tuple: Vec<u32> = columns
            .iter()
            .zip(hierarchies)
            .zip(levels)
            .map(|((col, h), &level)| h.generalize(level, col[row]))
            .collect();
        let next = u32::try_from(ids.len()).unwrap();
        let id = *ids.entry(tuple).or_insert_with(|| {
            out.sizes.push(0);
            out.first_row.push(row);
            next
        });
        out.class_of_row.push(id);
        out.sizes[id as usize] += weights.map_or(1, |w| w[row]);
    }
    out
}

/// Whether the packed-u64 path applies (product of the level widths fits in a u64).
fn packable(hierarchies: &[&Hierarchy], levels: &[usize]) -> bool {
    hierarchies
        .iter()
        .zip(levels)
        .try_fold(1u64, |acc, (h, &l)| {
            acc.checked_mul(u64::from(h.width(l).max(1)))
        })
        .is_some()
}

/// Run groupify, compare with the reference and check the invariants of a partition.
fn check(
    columns: &[&[u32]],
    hierarchies: &[&Hierarchy],
    levels: &[usize],
    weights: Option<&[u64]>,
) -> Classes {
    let got = groupify(columns, hierarchies, levels, weights).unwrap();
    let want = reference(columns, hierarchies, levels, weights);
    assert_eq!(got, want, "levels {levels:?}");
    let n = columns.first().map_or(0, |c| c.len());
    assert_eq!(got.class_of_row.len(), n);
    assert_eq!(got.sizes.len(), got.first_row.len());
    let total: u64 = got.sizes.iter().sum();
    let expected_total = weights.map_or(n as u64, |w| w.iter().sum());
    assert_eq!(total, expected_total, "sizes add up to the rows / weights");
    // Classes are numbered by first occurrence.
    for (class, &row) in got.first_row.iter().enumerate() {
        assert_eq!(got.class_of_row[row] as usize, class);
        assert!(got.class_of_row[..row].iter().all(|&c| c as usize != class));
    }
    if weights.is_none() {
        for (class, &size) in got.sizes.iter().enumerate() {
            let count = got
                .class_of_row
                .iter()
                .filter(|&&c| c as usize == class)
                .count();
            assert_eq!(size, count as u64);
            assert!(size > 0);
        }
    }
    got
}

/// A generated problem: hierarchy tables, rows of leaf codes, levels and optional weights.
#[derive(Debug, Clone)]
struct Problem {
    tables: Vec<Vec<Vec<u32>>>,
    columns: Vec<Vec<u32>>,
    levels: Vec<usize>,
    weights: Option<Vec<u64>>,
}

fn problem() -> impl Strategy<Value = Problem> {
    prop::collection::vec(nested_table(12, 3), 1..=4)
        .prop_flat_map(|tables| (Just(tables), 0usize..48))
        .prop_flat_map(|(tables, n)| {
            let leaves: Vec<u32> = tables
                .iter()
                .map(|t| u32::try_from(t[0].len()).unwrap())
                .collect();
            let heights: Vec<usize> = tables.iter().map(|t| t.len() - 1).collect();
            let columns: Vec<_> = leaves
                .iter()
                .map(|&l| prop::collection::vec(0..l, n))
                .collect();
            let levels: Vec<_> = heights.iter().map(|&h| 0..=h).collect();
            (
                Just(tables),
                columns,
                levels,
                prop::option::of(prop::collection::vec(0u64..10, n)),
            )
        })
        .prop_map(|(tables, columns, levels, weights)| Problem {
            tables,
            columns,
            levels,
            weights,
        })
}

impl Problem {
    fn hierarchies(&self) -> Vec<Hierarchy> {
        self.tables.iter().map(|t| hierarchy_of(t)).collect()
    }
    fn columns(&self) -> Vec<&[u32]> {
        self.columns.iter().map(Vec::as_slice).collect()
    }
}

/// 70,000 leaves; level 1 groups leaves by `leaf / 10` (7,000 labels); level 2 is the root.
static DECADES: LazyLock<Hierarchy> = LazyLock::new(|| {
    let leaves: Vec<u32> = (0..70_000).collect();
    let decades: Vec<u32> = leaves.iter().map(|l| l / 10).collect();
    let root = vec![0u32; leaves.len()];
    Hierarchy::try_from_levels(&[&leaves, &decades, &root]).unwrap()
});
static FLAT_70K: LazyLock<Hierarchy> = LazyLock::new(|| Hierarchy::flat(70_000));

const WIDE_POOL: [u32; 8] = [0, 1, 9, 10, 35_000, 35_009, 69_990, 69_999];

#[test]
fn empty_inputs() {
    let c = check(&[], &[], &[], None);
    assert!(c.class_of_row.is_empty() && c.sizes.is_empty());
    let h = Hierarchy::flat(3);
    let c = check(&[&[]], &[&h], &[0], Some(&[]));
    assert!(c.class_of_row.is_empty() && c.sizes.is_empty());
}

#[test]
fn zero_weights_keep_their_class() {
    let h = Hierarchy::flat(3);
    let c = check(&[&[2, 0, 2]], &[&h], &[0], Some(&[0, 4, 0]));
    assert_eq!(c.class_of_row, vec![0, 1, 0]);
    assert_eq!(c.sizes, vec![0, 4]);
}

#[test]
fn wide_hierarchies_use_the_boxed_path_and_agree() {
    let hs: Vec<&Hierarchy> = vec![&FLAT_70K; 5];
    assert!(!packable(&hs, &[0; 5]));
    let a: Vec<u32> = vec![69_999, 1, 69_999, 0, 1, 69_999];
    let b: Vec<u32> = vec![0, 0, 0, 0, 0, 1];
    let columns: Vec<&[u32]> = vec![&a, &b, &a, &a, &b];
    let c = check(&columns, &hs, &[0; 5], None);
    assert_eq!(c.class_of_row, vec![0, 1, 0, 2, 1, 3]);
    // 70,000^4 still overflows a u64 but 70,000^3 does not: generalizing the two `b`
    // columns to their root makes the key packable again.
    assert!(!packable(&hs, &[0, 1, 0, 0, 0]));
    assert!(packable(&hs, &[0, 1, 0, 0, 1]));
    let d = check(&columns, &hs, &[0, 1, 0, 0, 1], None);
    assert_eq!(d.class_of_row, vec![0, 1, 0, 2, 1, 0]);
}

#[test]
fn widths_at_the_u64_boundary() {
    // 65,535^4 < 2^64 is packed, 65,536^4 = 2^64 is not; both must agree with the reference.
    for leaves in [65_535u32, 65_536] {
        let h = Hierarchy::flat(leaves);
        let hs = vec![&h; 4];
        assert_eq!(packable(&hs, &[0; 4]), leaves == 65_535);
        let top = leaves - 1;
        let a = vec![top, 0, top, top, 1, top];
        let b = vec![top, 0, top, 0, 1, top];
        let columns: Vec<&[u32]> = vec![&a, &b, &a, &b];
        let c = check(&columns, &hs, &[0; 4], Some(&[1, 2, 3, 4, 5, 6]));
        assert_eq!(c.class_of_row, vec![0, 1, 0, 2, 3, 0]);
        assert_eq!(c.sizes, vec![10, 2, 4, 5]);
    }
}

#[test]
fn large_radix_packing_keeps_tuples_apart() {
    // Widths 2^21 · 2^21 · 3 fit in a u64 (packed path) with a radix far above u32 ranges
    // used elsewhere; tuples differing in any digit must stay apart.
    let big = Hierarchy::flat(1 << 21);
    let small = Hierarchy::flat(3);
    let hs = vec![&big, &big, &small];
    assert!(packable(&hs, &[0, 0, 0]));
    let top = (1u32 << 21) - 1;
    let half = 1u32 << 20;
    // Rows 7 and 8 would collide under a radix of 2^20 ((1, 0) vs (0, 2^20)).
    let a = vec![top, top, 0, 1, top, 0, top, 1, 0];
    let b = vec![top, 0, top, 0, top, 1, top, 0, half];
    let c = vec![2, 2, 2, 2, 1, 0, 2, 0, 0];
    let columns: Vec<&[u32]> = vec![&a, &b, &c];
    let classes = check(&columns, &hs, &[0, 0, 0], None);
    assert_eq!(classes.class_of_row, vec![0, 1, 2, 3, 4, 5, 0, 6, 7]);
}

#[test]
fn length_mismatches_are_reported() {
    let h = Hierarchy::flat(3);
    let col: &[u32] = &[0, 1, 2];
    let short: &[u32] = &[0, 1];
    let mismatch = |err: KernelError, argument: &'static str, got: usize, expected: usize| {
        assert_eq!(
            err,
            KernelError::LengthMismatch {
                kernel: "groupify",
                argument,
                got,
                expected,
            }
        );
    };
    let err = groupify(&[col, col], &[&h], &[0, 0], None).unwrap_err();
    mismatch(err, "hierarchies", 1, 2);
    let err = groupify(&[col, col], &[&h, &h], &[0], None).unwrap_err();
    mismatch(err, "levels", 1, 2);
    let err = groupify(&[col, short], &[&h, &h], &[0, 0], None).unwrap_err();
    mismatch(err, "columns", 2, 3);
    let err = groupify(&[col], &[&h], &[0], Some(&[1, 1])).unwrap_err();
    mismatch(err, "weights", 2, 3);
    let err = groupify(&[], &[], &[], Some(&[1])).unwrap_err();
    mismatch(err, "weights", 1, 0);
}

#[test]
fn level_above_height_and_unknown_codes_are_invalid() {
    let h = Hierarchy::flat(3);
    let err = groupify(&[&[0, 1]], &[&h], &[2], None).unwrap_err();
    assert!(
        matches!(&err, KernelError::InvalidArgument { kernel: "groupify", message }
            if message.contains("level 2 of column 0 exceeds its hierarchy's height 1")),
        "{err}"
    );
    let err = groupify(&[&[0, 1], &[0, 3]], &[&h, &h], &[0, 0], None).unwrap_err();
    assert!(
        matches!(&err, KernelError::InvalidArgument { kernel: "groupify", message }
            if message.contains("code 3 of column 1 is not a leaf")),
        "{err}"
    );
    let err = groupify(&[&[u32::MAX]], &[&h], &[1], None).unwrap_err();
    assert!(matches!(err, KernelError::InvalidArgument { .. }), "{err}");
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    #[test]
    fn agrees_with_the_reference(p in problem()) {
        let hs = p.hierarchies();
        let hrefs: Vec<&Hierarchy> = hs.iter().collect();
        check(&p.columns(), &hrefs, &p.levels, p.weights.as_deref());
    }

    /// Raising any one level merges classes: never more classes, and rows that shared a
    /// class still share one.
    #[test]
    fn raising_a_level_coarsens_the_partition(p in problem(), raise in 1usize..4) {
        let hs = p.hierarchies();
        let hrefs: Vec<&Hierarchy> = hs.iter().collect();
        let columns = p.columns();
        let base = check(&columns, &hrefs, &p.levels, p.weights.as_deref());
        for j in 0..p.levels.len() {
            let mut levels = p.levels.clone();
            levels[j] = (levels[j] + raise).min(hs[j].height());
            let up = check(&columns, &hrefs, &levels, p.weights.as_deref());
            prop_assert!(up.sizes.len() <= base.sizes.len());
            for a in 0..base.class_of_row.len() {
                let b = base.first_row[base.class_of_row[a] as usize];
                prop_assert_eq!(up.class_of_row[a], up.class_of_row[b]);
            }
        }
        // All columns at their top level: a single class (if there are rows).
        let top: Vec<usize> = hs.iter().map(Hierarchy::height).collect();
        let all = check(&columns, &hrefs, &top, p.weights.as_deref());
        prop_assert_eq!(all.sizes.len(), usize::from(!p.columns[0].is_empty()));
    }

    /// Several columns of 70,000 leaves: packed and boxed paths both agree with the reference.
    #[test]
    fn wide_columns_agree_with_the_reference(
        picks in prop::collection::vec(prop::collection::vec(0usize..WIDE_POOL.len(), 5), 0..24),
        kinds in prop::collection::vec(any::<bool>(), 5),
        level_seeds in prop::collection::vec(0usize..3, 5),
        weights in prop::option::of(prop::collection::vec(0u64..5, 24)),
    ) {
        let hrefs: Vec<&Hierarchy> = kinds
            .iter()
            .map(|&decades| if decades { &*DECADES } else { &*FLAT_70K })
            .collect();
        let levels: Vec<usize> = level_seeds
            .iter()
            .zip(&hrefs)
            .map(|(&l, h)| l.min(h.height()))
            .collect();
        let columns: Vec<Vec<u32>> = (0..5)
            .map(|j| picks.iter().map(|row| WIDE_POOL[row[j]]).collect())
            .collect();
        let cols: Vec<&[u32]> = columns.iter().map(Vec::as_slice).collect();
        let weights = weights.map(|w| w[..picks.len()].to_vec());
        check(&cols, &hrefs, &levels, weights.as_deref());
        // Also with every column at the leaves, which is never packable.
        prop_assert!(!packable(&hrefs, &[0; 5]));
        check(&cols, &hrefs, &[0; 5], weights.as_deref());
    }
}
