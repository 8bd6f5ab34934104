//! Integration tests of `kanon_core::Hierarchy`: building from wide tables and validation.

mod common;

use common::{
    as_slices, branching_table_with_order, hierarchy_of, nested_table, nested_table_with_order,
    permute_rows, width,
};
use kanon_core::{Hierarchy, KernelError};
use proptest::prelude::*;

/// Assert that `h` describes `table` (given in leaf order).
fn assert_describes(h: &Hierarchy, table: &[Vec<u32>]) {
    let n = table[0].len();
    assert_eq!(h.height(), table.len() - 1);
    assert_eq!(h.leaves(), n);
    for (level, labels) in table.iter().enumerate() {
        assert_eq!(h.width(level), width(labels), "width of level {level}");
        assert_eq!(h.level(level), labels.as_slice(), "level {level}");
        for (leaf, &label) in labels.iter().enumerate() {
            let leaf = u32::try_from(leaf).unwrap();
            assert_eq!(
                h.generalize(level, leaf),
                label,
                "level {level} leaf {leaf}"
            );
        }
    }
    assert_eq!(h.width(h.height()), 1, "a single root");
}

fn is_invalid_argument(err: &KernelError, needle: &str) -> bool {
    matches!(err, KernelError::InvalidArgument { kernel: "hierarchy", message } if message.contains(needle))
}

#[test]
fn generator_produces_valid_nested_tables() {
    // Sanity check of the test generator itself on a fixed example.
    let table = common::build_nested(6, &[(2, vec![0, 1, 0, 1, 0, 1]), (0, vec![0; 6])]);
    assert_eq!(
        table,
        vec![
            vec![0, 1, 2, 3, 4, 5],
            vec![0, 1, 0, 1, 0, 1],
            vec![0, 0, 0, 0, 0, 0]
        ]
    );
}

#[test]
fn single_leaf_single_level_is_its_own_root() {
    let h = Hierarchy::try_from_levels(&[&[0]]).unwrap();
    assert_eq!(h.height(), 0);
    assert_eq!(h.leaves(), 1);
    assert_eq!(h.width(0), 1);
    assert_eq!(h.generalize(0, 0), 0);
}

#[test]
fn no_levels_is_invalid() {
    let err = Hierarchy::try_from_levels(&[]).unwrap_err();
    assert!(is_invalid_argument(&err, "at least one level"), "{err}");
}

#[test]
fn empty_hierarchy_equals_flat_zero() {
    // Zero leaves: no root at all; accepted (the top level does not have *more* than one label).
    let h = Hierarchy::try_from_levels(&[&[], &[]]).unwrap();
    assert_eq!(h, Hierarchy::flat(0));
    assert_eq!(h.leaves(), 0);
    assert_eq!(h.width(1), 0);
}

#[test]
fn flat_matches_its_table() {
    for leaves in [1u32, 2, 7, 300] {
        let h = Hierarchy::flat(leaves);
        let leaf_level: Vec<u32> = (0..leaves).collect();
        let root = vec![0u32; leaves as usize];
        assert_describes(&h, &[leaf_level.clone(), root.clone()]);
        assert_eq!(
            h,
            Hierarchy::try_from_levels(&[&leaf_level, &root]).unwrap()
        );
        assert_eq!(h.height(), 1);
        assert_eq!(h.width(0), leaves);
        assert_eq!(h.width(1), 1);
    }
}

#[test]
fn single_level_with_several_leaves_has_several_roots() {
    let err = Hierarchy::try_from_levels(&[&[1, 0, 2]]).unwrap_err();
    assert_eq!(err, KernelError::NotSingleRoot { level: 0, roots: 3 });
}

#[test]
fn leaf_code_out_of_range_is_invalid() {
    let err = Hierarchy::try_from_levels(&[&[0, 2], &[0, 0]]).unwrap_err();
    assert!(is_invalid_argument(&err, "not below 2"), "{err}");
}

#[test]
fn duplicated_leaf_is_invalid() {
    let err = Hierarchy::try_from_levels(&[&[0, 1, 1], &[0, 0, 0]]).unwrap_err();
    assert!(is_invalid_argument(&err, "listed twice"), "{err}");
}

#[test]
fn gap_in_upper_level_codes_is_invalid() {
    let err = Hierarchy::try_from_levels(&[&[0, 1, 2], &[0, 0, 2], &[0, 0, 0]]).unwrap_err();
    assert!(is_invalid_argument(&err, "code 1 is unused"), "{err}");
}

#[test]
fn unequal_column_lengths_are_invalid() {
    let err = Hierarchy::try_from_levels(&[&[0, 1], &[0], &[0, 0]]).unwrap_err();
    assert!(is_invalid_argument(&err, "level 1 has 1 rows"), "{err}");
    let err = Hierarchy::try_from_levels(&[&[0, 1], &[0, 0], &[0, 0, 0]]).unwrap_err();
    assert!(is_invalid_argument(&err, "level 2 has 3 rows"), "{err}");
}

/// Regression: a label code of `u32::MAX` above the leaves used to make `try_from_levels`
/// panic (`max + 1` overflowed in debug; in release the width wrapped to 0 and `used[code]`
/// indexed out of bounds), and any huge code allocated `max + 1` bytes before the density
/// check. It must be an `InvalidArgument` for non-dense codes.
#[test]
fn huge_upper_level_code_is_an_error_not_a_panic() {
    for big in [u32::MAX, u32::MAX - 1, 2] {
        let result = std::panic::catch_unwind(|| Hierarchy::try_from_levels(&[&[0, 1], &[0, big]]));
        let err = result.expect("try_from_levels must not panic").unwrap_err();
        assert!(is_invalid_argument(&err, "not dense"), "{err}");
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(128))]

    /// A generated nested table builds, in any row order, to the hierarchy it describes.
    #[test]
    fn generated_tables_build_and_generalize(
        (table, perm) in prop_oneof![nested_table_with_order(40, 5), branching_table_with_order(40, 5)],
    ) {
        let h = hierarchy_of(&table);
        assert_describes(&h, &table);
        let shuffled = permute_rows(&table, &perm);
        let h2 = Hierarchy::try_from_levels(&as_slices(&shuffled)).unwrap();
        prop_assert_eq!(&h2, &h);
        // Generalizing is transitive: every level is a function of the one below it.
        for level in 1..=h.height() {
            for leaf in 0..u32::try_from(h.leaves()).unwrap() {
                let below = h.generalize(level - 1, leaf);
                for other in 0..u32::try_from(h.leaves()).unwrap() {
                    if h.generalize(level - 1, other) == below {
                        prop_assert_eq!(h.generalize(level, other), h.generalize(level, leaf));
                    }
                }
            }
        }
    }

    /// Moving one row to another existing label at a level, while its label below is shared
    /// with another row, breaks nesting between that level and the one below.
    #[test]
    fn perturbed_label_is_not_nested(
        (table, perm) in branching_table_with_order(30, 4),
        pick in any::<prop::sample::Index>(),
        shift in 1u32..1000,
    ) {
        let mut candidates = Vec::new();
        for level in 1..table.len() {
            let w = width(&table[level]);
            if w < 2 {
                continue;
            }
            for leaf in 0..table[0].len() {
                let below = table[level - 1][leaf];
                let shared = table[level - 1].iter().filter(|&&l| l == below).count() > 1;
                if shared {
                    candidates.push((level, leaf));
                }
            }
        }
        // Level 2 of a branching table repeats level 1, whose label of leaves 0 and 1 is shared.
        prop_assert!(candidates.contains(&(2, 0)));
        let (level, leaf) = candidates[pick.index(candidates.len())];
        let mut broken = table.clone();
        let w = width(&table[level]);
        broken[level][leaf] = (table[level][leaf] + shift % (w - 1) + 1) % w;
        prop_assert_ne!(broken[level][leaf], table[level][leaf]);
        let broken = permute_rows(&broken, &perm);
        let err = Hierarchy::try_from_levels(&as_slices(&broken)).unwrap_err();
        let label_below = table[level - 1][leaf];
        match err {
            KernelError::NotNested { level: l, next_level, code, row } => {
                prop_assert_eq!(l, level - 1);
                prop_assert_eq!(next_level, level);
                prop_assert_eq!(code, label_below);
                prop_assert_eq!(broken[level - 1][row], label_below);
            }
            other => prop_assert!(false, "expected NotNested, got {other}"),
        }
    }

    /// Dropping the root (and any levels of width 1) leaves several labels at the top.
    #[test]
    fn missing_root_is_not_single_root((table, perm) in branching_table_with_order(30, 5)) {
        let keep = table.iter().take_while(|l| width(l) > 1).count();
        prop_assert!(keep >= 3, "levels 0 to 2 of a branching table have several labels");
        let truncated = permute_rows(&table[..keep], &perm);
        let err = Hierarchy::try_from_levels(&as_slices(&truncated)).unwrap_err();
        prop_assert_eq!(
            err,
            KernelError::NotSingleRoot { level: keep - 1, roots: width(&table[keep - 1]) as usize }
        );
    }

    /// Two different labels on top of the highest level with several labels (the levels
    /// above it dropped): still nested, but NotSingleRoot at the new top level.
    #[test]
    fn two_labels_on_top_is_not_single_root(
        (table, perm) in branching_table_with_order(30, 4),
        split in any::<prop::sample::Index>(),
    ) {
        let below = (0..table.len()).rev().find(|&l| width(&table[l]) >= 2).unwrap();
        let w = width(&table[below]);
        let cut = 1 + u32::try_from(split.index(w as usize - 1)).unwrap();
        let mut with_two = table[..=below].to_vec();
        with_two.push(table[below].iter().map(|&l| u32::from(l >= cut)).collect());
        let with_two = permute_rows(&with_two, &perm);
        let err = Hierarchy::try_from_levels(&as_slices(&with_two)).unwrap_err();
        prop_assert_eq!(err, KernelError::NotSingleRoot { level: below + 1, roots: 2 });
    }

    /// A leaf listed twice (so another is missing) is an invalid argument.
    #[test]
    fn duplicated_leaf_is_invalid_argument(
        (table, perm) in branching_table_with_order(30, 4),
        a in any::<prop::sample::Index>(),
        b in any::<prop::sample::Index>(),
    ) {
        let n = table[0].len();
        let mut rows = permute_rows(&table, &perm);
        let i = a.index(n);
        let j = (i + 1 + b.index(n - 1)) % n;
        rows[0][i] = rows[0][j];
        let err = Hierarchy::try_from_levels(&as_slices(&rows)).unwrap_err();
        prop_assert!(is_invalid_argument(&err, "listed twice"), "{}", err);
    }

    /// Opening a gap in the codes of one level (a bijective relabelling, so still nested)
    /// is an invalid argument naming the unused code.
    #[test]
    fn non_dense_codes_are_invalid_argument(
        (table, perm) in nested_table_with_order(30, 4),
        level_pick in any::<prop::sample::Index>(),
        gap_pick in any::<prop::sample::Index>(),
    ) {
        let level = 1 + level_pick.index(table.len() - 1);
        let w = width(&table[level]);
        let gap = u32::try_from(gap_pick.index(w as usize)).unwrap();
        let mut rows = permute_rows(&table, &perm);
        for code in &mut rows[level] {
            if *code >= gap {
                *code += 1;
            }
        }
        let err = Hierarchy::try_from_levels(&as_slices(&rows)).unwrap_err();
        // Either the gap is reported, or (when the shifted largest code reaches the number of
        // rows) the code that cannot belong to a dense level of n rows.
        let n = table[0].len();
        let prefix = format!("codes of level {level} are not dense: ");
        let unused = format!("{prefix}code {gap} is unused");
        let too_big = format!("{prefix}code {w} is not below {n}");
        let needle = if w as usize >= n { &too_big } else { &unused };
        prop_assert!(is_invalid_argument(&err, needle), "{} (expected {})", err, needle);
    }

    /// A level with one row too few or too many is an invalid argument.
    #[test]
    fn unequal_lengths_are_invalid_argument(
        table in nested_table(30, 4),
        level_pick in any::<prop::sample::Index>(),
        longer in any::<bool>(),
    ) {
        let n = table[0].len();
        let level = 1 + level_pick.index(table.len() - 1);
        let mut rows = table.clone();
        if longer {
            rows[level].push(0);
        } else {
            rows[level].pop();
        }
        let got = rows[level].len();
        let err = Hierarchy::try_from_levels(&as_slices(&rows)).unwrap_err();
        let needle = format!("level {level} has {got} rows but level 0 has {n}");
        prop_assert!(is_invalid_argument(&err, &needle), "{}", err);
    }

    #[test]
    fn flat_generalizes_everything_to_the_root(leaves in 1u32..500) {
        let h = Hierarchy::flat(leaves);
        prop_assert_eq!(h.height(), 1);
        prop_assert_eq!(h.leaves(), leaves as usize);
        for leaf in [0, leaves / 2, leaves - 1] {
            prop_assert_eq!(h.generalize(0, leaf), leaf);
            prop_assert_eq!(h.generalize(1, leaf), 0);
        }
    }
}
