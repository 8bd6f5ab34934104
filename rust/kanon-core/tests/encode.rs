//! Integration tests of `kanon_core::encode`: dense codes in value order.

use std::collections::BTreeSet;
use std::fmt::Debug;
use std::hash::Hash;

use kanon_core::{encode, Dictionary};
use proptest::prelude::*;

/// Check every documented property of the dictionary of `values`.
fn check<T: Ord + Hash + Debug>(values: &[T]) -> Dictionary {
    let d = encode(values).unwrap();
    assert_eq!(d.codes.len(), values.len(), "one code per row");
    let distinct: Vec<&T> = values
        .iter()
        .collect::<BTreeSet<&T>>()
        .into_iter()
        .collect();
    assert_eq!(
        d.cardinality(),
        distinct.len(),
        "cardinality = distinct values"
    );
    assert_eq!(d.first_row.len(), distinct.len());
    // Dense: every code of 0..d is used and none is out of range.
    let used: BTreeSet<u32> = d.codes.iter().copied().collect();
    let expected: BTreeSet<u32> = (0..u32::try_from(distinct.len()).unwrap()).collect();
    assert_eq!(used, expected, "codes are dense 0..d");
    // The code of a value is its rank among the distinct values.
    for (row, value) in values.iter().enumerate() {
        let rank = distinct.binary_search(&value).unwrap();
        assert_eq!(d.codes[row] as usize, rank, "code of row {row} ({value:?})");
    }
    // Equality and order of codes are those of values.
    for (i, a) in values.iter().enumerate() {
        for (j, b) in values.iter().enumerate() {
            assert_eq!(
                a.cmp(b),
                d.codes[i].cmp(&d.codes[j]),
                "rows {i} ({a:?}) and {j} ({b:?})"
            );
        }
    }
    // first_row points at the first row holding that code.
    for (code, &row) in d.first_row.iter().enumerate() {
        assert!(row < values.len());
        assert_eq!(
            d.codes[row] as usize, code,
            "first_row[{code}] holds code {code}"
        );
        assert!(
            !d.codes[..row].iter().any(|&c| c as usize == code),
            "first_row[{code}] = {row} is the first row with that code"
        );
        assert_eq!(&values[row], distinct[code]);
    }
    d
}

#[test]
fn empty_input_gives_empty_dictionary_for_every_type() {
    for d in [
        check::<i64>(&[]),
        check::<&str>(&[]),
        check::<String>(&[]),
        check::<u8>(&[]),
    ] {
        assert!(d.codes.is_empty());
        assert!(d.first_row.is_empty());
        assert_eq!(d.cardinality(), 0);
    }
}

#[test]
fn integers_with_duplicates() {
    let d = check(&[30i64, -5, 30, 7, -5, i64::MIN, i64::MAX, 7]);
    assert_eq!(d.codes, vec![3, 1, 3, 2, 1, 0, 4, 2]);
    assert_eq!(d.first_row, vec![5, 1, 3, 0, 6]);
}

#[test]
fn str_slices_and_owned_strings_agree() {
    let strs = ["b", "a", "", "b", "ä", "B", "a"];
    let owned: Vec<String> = strs.iter().map(|s| (*s).to_owned()).collect();
    let d1 = check(&strs);
    let d2 = check(&owned);
    assert_eq!(d1, d2);
    // Byte order: "" < "B" < "a" < "b" < "ä".
    assert_eq!(d1.codes, vec![3, 2, 0, 3, 4, 1, 2]);
    assert_eq!(d1.first_row, vec![2, 5, 1, 0, 4]);
}

#[test]
fn all_equal_values_share_code_zero() {
    let d = check(&["x"; 5]);
    assert_eq!(d.codes, vec![0; 5]);
    assert_eq!(d.first_row, vec![0]);
}

#[test]
fn single_value() {
    let d = check(&[42i64]);
    assert_eq!(d.codes, vec![0]);
    assert_eq!(d.first_row, vec![0]);
}

#[test]
fn already_sorted_and_reversed_input() {
    let up: Vec<i64> = (0..20).collect();
    let d = check(&up);
    assert_eq!(d.codes, (0..20).collect::<Vec<u32>>());
    let down: Vec<i64> = (0..20).rev().collect();
    let d = check(&down);
    assert_eq!(d.codes, (0..20).rev().collect::<Vec<u32>>());
    assert_eq!(d.first_row, (0..20).rev().collect::<Vec<usize>>());
}

#[test]
fn tuples_encode_lexicographically() {
    let d = check(&[(1, "b"), (0, "z"), (1, "a"), (0, "z")]);
    assert_eq!(d.codes, vec![2, 0, 1, 0]);
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn i64_with_many_duplicates(values in prop::collection::vec(-6i64..6, 0..64)) {
        check(&values);
    }

    #[test]
    fn i64_full_range(values in prop::collection::vec(any::<i64>(), 0..64)) {
        check(&values);
    }

    #[test]
    fn owned_strings(values in prop::collection::vec("[ab]{0,3}", 0..48)) {
        check(&values);
    }

    #[test]
    fn str_slices_match_owned_strings(values in prop::collection::vec("[a-c\u{e4}]{0,2}", 0..48)) {
        let slices: Vec<&str> = values.iter().map(String::as_str).collect();
        prop_assert_eq!(check(&slices), check(&values));
    }

    /// Encoding is determined by values only: permuting rows permutes codes.
    #[test]
    fn permuting_rows_permutes_codes(
        (values, perm) in prop::collection::vec(-8i64..8, 0..48).prop_flat_map(|v| {
            let n = v.len();
            (Just(v), Just((0..n).collect::<Vec<usize>>()).prop_shuffle())
        })
    ) {
        let d = check(&values);
        let shuffled: Vec<i64> = perm.iter().map(|&i| values[i]).collect();
        let e = check(&shuffled);
        prop_assert_eq!(d.cardinality(), e.cardinality());
        for (new_row, &old_row) in perm.iter().enumerate() {
            prop_assert_eq!(e.codes[new_row], d.codes[old_row]);
        }
    }
}
