//! Integration tests of `kanon_core::class_stats` against a naive reference computed from
//! a list of rows (class, sensitive code).

use std::collections::BTreeMap;

use kanon_core::{class_stats, ClassStats, GroundDistance, KernelError, StatsOptions};
use proptest::prelude::*;

const TOL: f64 = 1e-9;

/// A table: the sensitive code of every row, grouped by class.
type Rows = Vec<Vec<u32>>;

/// A histogram in the layout `class_stats` takes.
#[derive(Debug, Clone, PartialEq)]
struct Histogram {
    offsets: Vec<u64>,
    counts: Vec<u64>,
    sensitive: Vec<u32>,
}

impl Histogram {
    /// Canonical layout: one entry per (class, code), codes ascending.
    fn canonical(rows: &Rows) -> Self {
        Self::from_entries(rows.iter().map(|class| {
            let mut counts: BTreeMap<u32, u64> = BTreeMap::new();
            for &code in class {
                *counts.entry(code).or_default() += 1;
            }
            counts.into_iter().collect()
        }))
    }

    /// Rows in their given order; a row joins the previous entry when it has the same code
    /// and its `merge` bit is set, so one code may be split over several entries.
    fn split(rows: &Rows, merge: &[Vec<bool>]) -> Self {
        Self::from_entries(rows.iter().zip(merge).map(|(class, bits)| {
            let mut entries: Vec<(u32, u64)> = Vec::new();
            for (&code, &join) in class.iter().zip(bits) {
                match entries.last_mut() {
                    Some(last) if join && last.0 == code => last.1 += 1,
                    _ => entries.push((code, 1)),
                }
            }
            entries
        }))
    }

    fn from_entries(classes: impl Iterator<Item = Vec<(u32, u64)>>) -> Self {
        let mut h = Self {
            offsets: vec![0],
            counts: Vec::new(),
            sensitive: Vec::new(),
        };
        for entries in classes {
            for (code, count) in entries {
                h.sensitive.push(code);
                h.counts.push(count);
            }
            h.offsets.push(h.counts.len() as u64);
        }
        h
    }

    fn stats(&self, population: Option<&[u64]>, options: &StatsOptions) -> ClassStats {
        class_stats(
            Some(&self.offsets),
            &self.counts,
            Some(&self.sensitive),
            population,
            options,
        )
        .unwrap()
    }
}

/// Naive reference, straight from the definitions.
fn reference(
    rows: &Rows,
    with_sensitive: bool,
    population: Option<&[u64]>,
    opts: &StatsOptions,
) -> ClassStats {
    let sizes: Vec<u64> = rows.iter().map(|c| c.len() as u64).collect();
    let n_rows: u64 = sizes.iter().sum();
    let mut out = ClassStats {
        k: sizes.iter().copied().min().unwrap_or(0),
        classes: sizes.len() as u64,
        rows: n_rows,
        ..ClassStats::default()
    };
    if n_rows == 0 {
        return out;
    }
    let n = n_rows as f64;
    out.prosecutor_max = 1.0 / out.k as f64;
    out.prosecutor_avg = sizes.len() as f64 / n;
    out.marketer = sizes.len() as f64 / n;
    out.prosecutor_at_risk = sizes
        .iter()
        .filter(|&&s| 1.0 / s as f64 > opts.risk_threshold)
        .map(|&s| s as f64)
        .sum::<f64>()
        / n;
    if let Some(pop) = population {
        out.journalist_max = Some(1.0 / *pop.iter().min().unwrap() as f64);
        out.journalist_avg = Some(
            sizes
                .iter()
                .zip(pop)
                .map(|(&f, &big)| f as f64 * (1.0 / big as f64))
                .sum::<f64>()
                / n,
        );
        out.journalist_at_risk = Some(
            sizes
                .iter()
                .zip(pop)
                .filter(|(_, &big)| 1.0 / big as f64 > opts.risk_threshold)
                .map(|(&f, _)| f as f64)
                .sum::<f64>()
                / n,
        );
        let ratios: Vec<f64> = sizes
            .iter()
            .zip(pop)
            .map(|(&f, &big)| f as f64 / big as f64)
            .collect();
        out.delta_min = ratios.iter().copied().reduce(f64::min);
        out.delta_max = ratios.iter().copied().reduce(f64::max);
    }
    if !with_sensitive {
        return out;
    }
    let m = rows.iter().flatten().max().map_or(0, |&c| c as usize + 1);
    let mut global = vec![0u64; m];
    for &code in rows.iter().flatten() {
        global[code as usize] += 1;
    }
    let q: Vec<f64> = global.iter().map(|&g| g as f64 / n).collect();
    let mut l_distinct = u64::MAX;
    let mut min_entropy = f64::INFINITY;
    let mut t: f64 = 0.0;
    let mut sorted_counts: Vec<Vec<u64>> = Vec::new();
    for class in rows {
        let mut counts = vec![0u64; m];
        for &code in class {
            counts[code as usize] += 1;
        }
        let size = class.len() as f64;
        let p: Vec<f64> = counts.iter().map(|&c| c as f64 / size).collect();
        l_distinct = l_distinct.min(counts.iter().filter(|&&c| c > 0).count() as u64);
        let entropy: f64 = p
            .iter()
            .filter(|&&pi| pi > 0.0)
            .map(|&pi| -pi * pi.ln())
            .sum();
        min_entropy = min_entropy.min(entropy);
        let emd = match opts.distance {
            GroundDistance::Equal => {
                0.5 * p.iter().zip(&q).map(|(a, b)| (a - b).abs()).sum::<f64>()
            }
            GroundDistance::Ordered => {
                if m < 2 {
                    0.0
                } else {
                    let mut cum = 0.0;
                    let mut total = 0.0;
                    for i in 0..m {
                        cum += p[i] - q[i];
                        total += f64::abs(cum);
                    }
                    total / (m - 1) as f64
                }
            }
            GroundDistance::Hierarchical(_) => unreachable!("covered by tests/emd.rs"),
        };
        t = t.max(emd);
        let mut r: Vec<u64> = counts.into_iter().filter(|&c| c > 0).collect();
        r.sort_unstable_by(|a, b| b.cmp(a));
        sorted_counts.push(r);
    }
    out.l_distinct = Some(l_distinct);
    out.l_entropy = Some(min_entropy.exp());
    out.t = Some(t);
    let l = opts.recursive_l.unwrap_or(l_distinct);
    out.recursive_l = Some(l);
    // r_l + ... + r_m (1-based l), 0 when the class has fewer than l values.
    let tail = |r: &[u64]| -> u64 { r.iter().skip(l.saturating_sub(1) as usize).sum() };
    if l >= 1 {
        let mut c_needed: f64 = 1.0;
        for r in &sorted_counts {
            let tl = tail(r);
            // floor(r1 / tail) + 1, or infinity when the class has fewer than l values.
            let c = r[0]
                .checked_div(tl)
                .map_or(f64::INFINITY, |d| (d + 1) as f64);
            c_needed = c_needed.max(c);
        }
        out.recursive_c = Some(c_needed);
        out.recursive_ok = opts.recursive_c.map(|c| {
            sorted_counts
                .iter()
                .all(|r| (r[0] as f64) < c * tail(r) as f64)
        });
    }
    out
}

fn close(a: f64, b: f64) -> bool {
    (a.is_infinite() && a == b) || (a - b).abs() <= TOL * b.abs().max(1.0)
}

fn close_opt(a: Option<f64>, b: Option<f64>) -> bool {
    match (a, b) {
        (Some(a), Some(b)) => close(a, b),
        (None, None) => true,
        _ => false,
    }
}

/// Field-by-field comparison: integers exactly, floats within `TOL`.
fn assert_same(got: &ClassStats, want: &ClassStats) {
    assert_eq!(
        (got.k, got.classes, got.rows),
        (want.k, want.classes, want.rows),
        "k / classes / rows"
    );
    assert_eq!(got.l_distinct, want.l_distinct, "l_distinct");
    assert_eq!(got.recursive_l, want.recursive_l, "recursive_l");
    assert_eq!(got.recursive_c, want.recursive_c, "recursive_c");
    assert_eq!(got.recursive_ok, want.recursive_ok, "recursive_ok");
    let floats = [
        ("l_entropy", got.l_entropy, want.l_entropy),
        ("t", got.t, want.t),
        (
            "prosecutor_max",
            Some(got.prosecutor_max),
            Some(want.prosecutor_max),
        ),
        (
            "prosecutor_avg",
            Some(got.prosecutor_avg),
            Some(want.prosecutor_avg),
        ),
        (
            "prosecutor_at_risk",
            Some(got.prosecutor_at_risk),
            Some(want.prosecutor_at_risk),
        ),
        ("marketer", Some(got.marketer), Some(want.marketer)),
        ("journalist_max", got.journalist_max, want.journalist_max),
        ("journalist_avg", got.journalist_avg, want.journalist_avg),
        (
            "journalist_at_risk",
            got.journalist_at_risk,
            want.journalist_at_risk,
        ),
        ("delta_min", got.delta_min, want.delta_min),
        ("delta_max", got.delta_max, want.delta_max),
    ];
    for (name, g, w) in floats {
        assert!(close_opt(g, w), "{name}: got {g:?}, want {w:?}");
    }
}

#[derive(Debug, Clone)]
struct Case {
    rows: Rows,
    merge: Vec<Vec<bool>>,
    extra: Option<Vec<u64>>,
    options: StatsOptions,
}

impl Case {
    fn population(&self) -> Option<Vec<u64>> {
        self.extra.as_ref().map(|extra| {
            self.rows
                .iter()
                .zip(extra)
                .map(|(class, &e)| class.len() as u64 + e)
                .collect()
        })
    }
}

fn options() -> impl Strategy<Value = StatsOptions> {
    (
        prop_oneof![Just(GroundDistance::Equal), Just(GroundDistance::Ordered)],
        prop::option::of(1u64..=5),
        prop::option::of(prop_oneof![
            Just(1.0),
            Just(2.0),
            Just(3.0),
            Just(0.5),
            0.05f64..6.0
        ]),
        prop_oneof![
            Just(0.0),
            Just(0.2),
            Just(1.0 / 3.0),
            Just(0.5),
            Just(1.0),
            0.0f64..=1.0
        ],
    )
        .prop_map(
            |(distance, recursive_l, recursive_c, risk_threshold)| StatsOptions {
                distance,
                recursive_l,
                recursive_c,
                risk_threshold,
            },
        )
}

fn case() -> impl Strategy<Value = Case> {
    (1u32..=6)
        .prop_flat_map(|m| prop::collection::vec(prop::collection::vec(0..m, 1..10), 1..6))
        .prop_flat_map(|rows| {
            let merge: Vec<_> = rows
                .iter()
                .map(|c| prop::collection::vec(any::<bool>(), c.len()))
                .collect();
            let classes = rows.len();
            (
                Just(rows),
                merge,
                prop::option::of(prop::collection::vec(
                    prop_oneof![Just(0u64), 0u64..20],
                    classes,
                )),
                options(),
            )
        })
        .prop_map(|(rows, merge, extra, options)| Case {
            rows,
            merge,
            extra,
            options,
        })
}

fn opts() -> StatsOptions {
    StatsOptions::default()
}

fn is_invalid(err: &KernelError, needle: &str) -> bool {
    matches!(err, KernelError::InvalidArgument { kernel: "class_stats", message } if message.contains(needle))
}

#[test]
fn empty_table() {
    for offsets in [None, Some(&[0u64][..]), Some(&[][..])] {
        let s = class_stats(offsets, &[], Some(&[]), Some(&[]), &opts()).unwrap();
        assert_eq!((s.k, s.classes, s.rows), (0, 0, 0));
        assert_eq!(s.l_distinct, None);
        assert_eq!(s.journalist_max, None);
    }
}

#[test]
fn hand_computed_example() {
    // Classes {a, a, b} and {b, c}; Q = (2, 2, 1) / 5.
    let rows: Rows = vec![vec![0, 0, 1], vec![1, 2]];
    let h = Histogram::canonical(&rows);
    assert_eq!(h.offsets, vec![0, 2, 4]);
    for distance in [GroundDistance::Equal, GroundDistance::Ordered] {
        let o = StatsOptions {
            distance: distance.clone(),
            recursive_c: Some(2.0),
            ..opts()
        };
        let s = h.stats(Some(&[3, 10]), &o);
        assert_same(&s, &reference(&rows, true, Some(&[3, 10]), &o));
        assert_eq!((s.k, s.classes, s.rows, s.l_distinct), (2, 2, 5, Some(2)));
        // Class 1: P = (2/3, 1/3, 0); equal EMD = ½(|2/3 − 2/5| + |1/3 − 2/5| + 1/5) = 4/15.
        // Class 2: P = (0, 1/2, 1/2); equal EMD = ½(2/5 + 1/10 + 3/10) = 2/5.
        // Ordered, class 2: cumulative differences (−2/5, −3/10, 0) → 7/10 / 2 = 7/20.
        let t = if distance == GroundDistance::Equal {
            0.4
        } else {
            7.0 / 20.0
        };
        assert!(close(s.t.unwrap(), t), "{distance:?}: {:?}", s.t);
        // l = 2 (distinct): r1 / r2 = 2/1 in class 1 → c = 3; class 2 → c = 2.
        assert_eq!(s.recursive_c, Some(3.0));
        assert_eq!(s.recursive_ok, Some(false));
        let entropy = -(2.0f64 / 3.0 * (2.0f64 / 3.0).ln() + 1.0 / 3.0 * (1.0f64 / 3.0).ln());
        assert!(close(s.l_entropy.unwrap(), entropy.exp()));
        assert!(close(s.journalist_max.unwrap(), 1.0 / 3.0));
        assert!(close(
            s.journalist_avg.unwrap(),
            (3.0 / 3.0 + 2.0 / 10.0) / 5.0
        ));
        // 1/3 > 0.2 for the first class (3 rows), 1/10 is not.
        assert!(close(s.journalist_at_risk.unwrap(), 0.6));
        assert!(close(s.prosecutor_at_risk, 1.0));
    }
}

#[test]
fn zero_count_entries_are_ignored() {
    // A zero-count entry with a code that the class does not otherwise hold (but that
    // exists in the table, so the number of sensitive values m is unchanged).
    let rows: Rows = vec![vec![0, 0, 2], vec![1, 2, 2]];
    let base = Histogram::canonical(&rows);
    let with_zero = Histogram {
        offsets: vec![0, 3, 5],
        counts: vec![2, 0, 1, 1, 2],
        sensitive: vec![0, 1, 2, 1, 2],
    };
    for distance in [GroundDistance::Equal, GroundDistance::Ordered] {
        let o = StatsOptions {
            distance,
            recursive_c: Some(2.5),
            ..opts()
        };
        let want = reference(&rows, true, None, &o);
        assert_same(&base.stats(None, &o), &want);
        assert_same(&with_zero.stats(None, &o), &want);
    }
}

#[test]
fn zero_count_entries_do_not_count_as_values() {
    // Class 1 holds only code 0; a zero-count entry for code 1 must not make it 2-diverse.
    let rows: Rows = vec![vec![0, 0, 0], vec![1, 2]];
    let with_zero = Histogram {
        offsets: vec![0, 2, 4],
        counts: vec![3, 0, 1, 1],
        sensitive: vec![0, 1, 1, 2],
    };
    for distance in [GroundDistance::Equal, GroundDistance::Ordered] {
        let o = StatsOptions {
            distance,
            recursive_l: Some(2),
            recursive_c: Some(3.0),
            ..opts()
        };
        let s = with_zero.stats(None, &o);
        assert_eq!(s.l_distinct, Some(1));
        assert_eq!(s.l_entropy, Some(1.0));
        assert_eq!(s.recursive_c, Some(f64::INFINITY));
        assert_same(&s, &reference(&rows, true, None, &o));
    }
}

#[test]
fn one_entry_per_class_without_offsets() {
    let counts = [4u64, 1, 3, 2];
    let codes = [2u32, 0, 0, 1];
    let rows: Rows = counts
        .iter()
        .zip(&codes)
        .map(|(&c, &code)| vec![code; c as usize])
        .collect();
    for distance in [GroundDistance::Equal, GroundDistance::Ordered] {
        let o = StatsOptions { distance, ..opts() };
        let pop = [4u64, 9, 3, 100];
        let none = class_stats(None, &counts, Some(&codes), Some(&pop), &o).unwrap();
        let some = class_stats(
            Some(&[0, 1, 2, 3, 4]),
            &counts,
            Some(&codes),
            Some(&pop),
            &o,
        )
        .unwrap();
        assert_eq!(none, some);
        assert_same(&none, &reference(&rows, true, Some(&pop), &o));
        assert_eq!(none.l_distinct, Some(1));
        // l = 1 (distinct): r1 = |class| in every class, so the smallest c is 2.
        assert_eq!(none.recursive_l, Some(1));
        assert_eq!(none.recursive_c, Some(2.0));
    }
}

#[test]
fn without_sensitive_only_sizes_and_risks() {
    let s = class_stats(Some(&[0, 2, 3]), &[1, 2, 5], None, None, &opts()).unwrap();
    let rows: Rows = vec![vec![0; 3], vec![0; 5]];
    assert_same(&s, &reference(&rows, false, None, &opts()));
    assert_eq!(s.l_distinct, None);
    assert_eq!(s.t, None);
    assert_eq!(s.recursive_ok, None);
}

#[test]
fn recursive_l_above_the_distinct_values_needs_infinite_c() {
    let rows: Rows = vec![vec![0, 1, 1], vec![0, 1, 2, 2]];
    let o = StatsOptions {
        recursive_l: Some(3),
        recursive_c: Some(100.0),
        ..opts()
    };
    let s = Histogram::canonical(&rows).stats(None, &o);
    assert_eq!(s.recursive_c, Some(f64::INFINITY));
    assert_eq!(s.recursive_ok, Some(false));
    assert_same(&s, &reference(&rows, true, None, &o));
}

/// Recursive (c,1)-diversity is r1 < c·(r1 + … + rm) = c·|class|, which holds for every
/// c > 1 (regression: the kernel used to report `Some(false)` for every c when l < 2).
#[test]
fn recursive_ok_with_l_one_follows_the_definition() {
    let rows: Rows = vec![vec![0, 0, 0], vec![0, 1]];
    for (c, ok) in [(2.0, true), (1.0, false), (1.5, true)] {
        let o = StatsOptions {
            recursive_l: Some(1),
            recursive_c: Some(c),
            ..opts()
        };
        let s = Histogram::canonical(&rows).stats(None, &o);
        // Class 1: r1 = 3 < c · 3 iff c > 1; class 2: r1 = 1 < c · 2 iff c > 1/2.
        assert_eq!(s.recursive_ok, Some(ok), "c = {c}");
        assert_eq!(s.recursive_c, Some(2.0));
        assert_same(&s, &reference(&rows, true, None, &o));
    }
}

#[test]
fn bad_offsets_are_invalid() {
    let counts = [1u64, 1, 1];
    let err = class_stats(Some(&[1, 3]), &counts, None, None, &opts()).unwrap_err();
    assert!(is_invalid(&err, "must start at 0"), "{err}");
    let err = class_stats(Some(&[0, 2, 1, 3]), &counts, None, None, &opts()).unwrap_err();
    assert!(is_invalid(&err, "decrease from 2 to 1"), "{err}");
    let err = class_stats(Some(&[0, 4, 3]), &counts, None, None, &opts()).unwrap_err();
    assert!(is_invalid(&err, "decrease from 4 to 3"), "{err}");
    let err = class_stats(Some(&[0, 2]), &counts, None, None, &opts()).unwrap_err();
    assert!(
        is_invalid(&err, "end at 2 but there are 3 entries"),
        "{err}"
    );
    let err = class_stats(Some(&[0, 1, 4]), &counts, None, None, &opts()).unwrap_err();
    assert!(is_invalid(&err, "end at 4"), "{err}");
    let err = class_stats(Some(&[]), &counts, None, None, &opts()).unwrap_err();
    assert!(is_invalid(&err, "end at 0"), "{err}");
}

#[test]
fn empty_classes_are_invalid() {
    let err = class_stats(Some(&[0, 1, 1, 2]), &[1, 1], None, None, &opts()).unwrap_err();
    assert!(is_invalid(&err, "class 1 has no rows"), "{err}");
    let err = class_stats(Some(&[0, 1, 3]), &[1, 0, 0], None, None, &opts()).unwrap_err();
    assert!(is_invalid(&err, "class 1 has no rows"), "{err}");
    let err = class_stats(None, &[2, 0], None, None, &opts()).unwrap_err();
    assert!(is_invalid(&err, "class 1 has no rows"), "{err}");
}

#[test]
fn population_smaller_than_sample_is_invalid() {
    let err = class_stats(None, &[2, 3], None, Some(&[2, 2]), &opts()).unwrap_err();
    assert!(
        is_invalid(&err, "class 1 has 3 rows in the sample but only 2"),
        "{err}"
    );
    // Equal sizes are fine: the population may be the sample itself.
    let s = class_stats(None, &[2, 3], None, Some(&[2, 3]), &opts()).unwrap();
    assert!(close(s.journalist_max.unwrap(), s.prosecutor_max));
    assert!(close(s.journalist_avg.unwrap(), s.prosecutor_avg));
}

#[test]
fn bad_threshold_and_c_are_invalid() {
    for t in [-0.1, 1.1, f64::NAN, f64::INFINITY] {
        let o = StatsOptions {
            risk_threshold: t,
            ..opts()
        };
        let err = class_stats(None, &[1], None, None, &o).unwrap_err();
        assert!(
            is_invalid(&err, "risk threshold must lie in [0, 1]"),
            "{err}"
        );
    }
    for c in [0.0, -0.0, -1.0, f64::NAN, f64::NEG_INFINITY] {
        let o = StatsOptions {
            recursive_c: Some(c),
            ..opts()
        };
        let err = class_stats(None, &[1], Some(&[0]), None, &o).unwrap_err();
        assert!(is_invalid(&err, "recursive c must be positive"), "{err}");
    }
}

#[test]
fn length_mismatches_are_reported() {
    let err = class_stats(Some(&[0, 2]), &[1, 1], Some(&[0]), None, &opts()).unwrap_err();
    assert_eq!(
        err,
        KernelError::LengthMismatch {
            kernel: "class_stats",
            argument: "sensitive",
            got: 1,
            expected: 2
        }
    );
    let err = class_stats(Some(&[0, 2]), &[1, 1], None, Some(&[5, 5]), &opts()).unwrap_err();
    assert_eq!(
        err,
        KernelError::LengthMismatch {
            kernel: "class_stats",
            argument: "population",
            got: 2,
            expected: 1
        }
    );
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    /// Canonical and split/shuffled histograms both match the reference.
    #[test]
    fn matches_the_reference(c in case()) {
        let pop = c.population();
        let want = reference(&c.rows, true, pop.as_deref(), &c.options);
        let canonical = Histogram::canonical(&c.rows).stats(pop.as_deref(), &c.options);
        assert_same(&canonical, &want);
        let split = Histogram::split(&c.rows, &c.merge).stats(pop.as_deref(), &c.options);
        assert_same(&split, &want);
        // Without sensitive values only sizes and risks are reported.
        let h = Histogram::canonical(&c.rows);
        let plain = class_stats(Some(&h.offsets), &h.counts, None, pop.as_deref(), &c.options)
            .unwrap();
        assert_same(&plain, &reference(&c.rows, false, pop.as_deref(), &c.options));
    }

    /// Order of a class's entries and splitting one code over several entries do not
    /// change the result.
    #[test]
    fn entry_order_and_splitting_do_not_matter(c in case()) {
        let pop = c.population();
        let a = Histogram::canonical(&c.rows).stats(pop.as_deref(), &c.options);
        let b = Histogram::split(&c.rows, &c.merge).stats(pop.as_deref(), &c.options);
        assert_same(&b, &a);
        // Reversing every class's entries as well.
        let reversed: Rows = c.rows.iter().map(|r| r.iter().rev().copied().collect()).collect();
        let merge: Vec<Vec<bool>> = c.merge.iter().map(|m| m.iter().rev().copied().collect()).collect();
        let r = Histogram::split(&reversed, &merge).stats(pop.as_deref(), &c.options);
        assert_same(&r, &a);
    }

    /// Zero-count entries (for codes below the largest one, so the number m of sensitive
    /// values is unchanged) anywhere in a class change nothing.
    #[test]
    fn zero_count_entries_change_nothing(
        c in case(),
        zeros in prop::collection::vec((any::<prop::sample::Index>(), any::<prop::sample::Index>()), 0..8),
    ) {
        let canonical = Histogram::canonical(&c.rows);
        let m = c.rows.iter().flatten().max().map_or(0, |&x| x as usize + 1);
        let mut classes: Vec<Vec<(u32, u64)>> = (0..c.rows.len())
            .map(|k| {
                let (lo, hi) = (canonical.offsets[k] as usize, canonical.offsets[k + 1] as usize);
                canonical.sensitive[lo..hi].iter().copied().zip(canonical.counts[lo..hi].iter().copied()).collect()
            })
            .collect();
        for (class, code) in &zeros {
            let k = class.index(classes.len());
            let at = code.index(classes[k].len() + 1);
            let code = u32::try_from(code.index(m)).unwrap();
            classes[k].insert(at, (code, 0));
        }
        let padded = Histogram::from_entries(classes.into_iter());
        let want = reference(&c.rows, true, None, &c.options);
        let got = padded.stats(None, &c.options);
        assert_same(&got, &want);
        assert_same(&got, &canonical.stats(None, &c.options));
    }

    /// The reported smallest c is the threshold of recursive_ok for integer c.
    #[test]
    fn recursive_c_is_the_smallest_passing_integer(c in case(), l in 1u64..=4) {
        let opts_for = |cc: Option<f64>| StatsOptions {
            recursive_l: Some(l),
            recursive_c: cc,
            ..c.options.clone()
        };
        let h = Histogram::canonical(&c.rows);
        let s = h.stats(None, &opts_for(None));
        let c_min = s.recursive_c.unwrap();
        prop_assert!(c_min >= 1.0);
        prop_assert_eq!(s.recursive_ok, None);
        if c_min.is_finite() {
            prop_assert_eq!(h.stats(None, &opts_for(Some(c_min))).recursive_ok, Some(true));
            if c_min >= 2.0 {
                let below = h.stats(None, &opts_for(Some(c_min - 1.0))).recursive_ok;
                prop_assert_eq!(below, Some(false));
            }
        } else {
            prop_assert_eq!(h.stats(None, &opts_for(Some(1e300))).recursive_ok, Some(false));
        }
    }

    /// Population sizes equal to sample sizes make journalist risk equal prosecutor risk;
    /// larger populations never raise it.
    #[test]
    fn journalist_risk_is_at_most_prosecutor_risk(c in case()) {
        let h = Histogram::canonical(&c.rows);
        let sizes: Vec<u64> = c.rows.iter().map(|r| r.len() as u64).collect();
        let same = h.stats(Some(&sizes), &c.options);
        prop_assert!(close(same.journalist_max.unwrap(), same.prosecutor_max));
        prop_assert!(close(same.journalist_avg.unwrap(), same.prosecutor_avg));
        prop_assert!(close(same.journalist_at_risk.unwrap(), same.prosecutor_at_risk));
        if let Some(pop) = c.population() {
            let s = h.stats(Some(&pop), &c.options);
            prop_assert!(s.journalist_max.unwrap() <= s.prosecutor_max + TOL);
            prop_assert!(s.journalist_avg.unwrap() <= s.prosecutor_avg + TOL);
            prop_assert!(s.journalist_at_risk.unwrap() <= s.prosecutor_at_risk + TOL);
        }
    }
}
