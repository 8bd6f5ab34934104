//! Sweeney's Datafly and μ-Argus against hand-worked examples and against naive
//! re-implementations that work row by row (every tuple repeated by its count), with
//! independent checks of the release: k-anonymity, rows preserved, masks consistent,
//! independence of the input order.

use std::collections::{BTreeMap, BTreeSet};

use kanon_core::historic::{datafly, mu_argus, HistoricRelease, HistoricReport};
use kanon_core::{Hierarchy, KernelError};
use proptest::prelude::*;

mod common;

use common::{random_hierarchy, Rng};

#[derive(Debug, Clone)]
struct Instance {
    hierarchies: Vec<Hierarchy>,
    tuples: Vec<u32>,
    counts: Vec<u64>,
    k: u64,
    max_suppressed: u64,
    keep_suppressed: bool,
}

impl Instance {
    fn m(&self) -> usize {
        self.hierarchies.len()
    }

    fn rows(&self) -> u64 {
        self.counts.iter().sum()
    }

    fn datafly(&self) -> HistoricRelease {
        datafly(
            &self.tuples,
            self.m(),
            &self.counts,
            &self.hierarchies,
            self.k,
            self.max_suppressed,
            self.keep_suppressed,
        )
        .unwrap()
    }

    fn mu_argus(&self) -> HistoricRelease {
        mu_argus(
            &self.tuples,
            self.m(),
            &self.counts,
            &self.hierarchies,
            self.k,
            self.keep_suppressed,
        )
        .unwrap()
    }

    fn tuple(&self, t: usize) -> &[u32] {
        &self.tuples[t * self.m()..(t + 1) * self.m()]
    }

    /// The rows: (tuple index, leaf codes), each tuple repeated by its count.
    fn expanded(&self) -> Vec<(usize, Vec<u32>)> {
        (0..self.counts.len())
            .flat_map(|t| std::iter::repeat_n((t, self.tuple(t).to_vec()), self.counts[t] as usize))
            .collect()
    }

    fn labels(&self, levels: &[u32], leaves: &[u32]) -> Vec<u32> {
        leaves
            .iter()
            .enumerate()
            .map(|(j, &x)| self.hierarchies[j].generalize(levels[j] as usize, x))
            .collect()
    }
}

fn instance(seed: u64) -> Instance {
    let mut rng = Rng(seed);
    let m = 1 + rng.below(5) as usize;
    let hierarchies: Vec<Hierarchy> = (0..m)
        .map(|_| {
            let leaves = 1 + rng.below(6) as u32;
            let height = 1 + rng.below(3) as usize;
            random_hierarchy(&mut rng, leaves, height)
        })
        .collect();
    let n = 1 + rng.below(16) as usize;
    let mut tuples = Vec::new();
    let mut counts = Vec::new();
    for _ in 0..n {
        for h in &hierarchies {
            tuples.push(rng.below(h.leaves() as u64) as u32);
        }
        // Now and then a tuple of no rows.
        counts.push(if rng.below(10) == 0 {
            0
        } else {
            1 + rng.below(3)
        });
    }
    if counts.iter().sum::<u64>() == 0 {
        counts[0] = 1;
    }
    let rows: u64 = counts.iter().sum();
    Instance {
        hierarchies,
        tuples,
        counts,
        k: 1 + rng.below(rows.min(5)),
        max_suppressed: match rng.below(3) {
            0 => 0,
            _ => rng.below(rows + 1),
        },
        keep_suppressed: rng.below(2) == 0,
    }
}

const MARKER: u32 = u32::MAX;

/// Sweeney's Datafly loop, row by row: the levels and the number of steps.
fn naive_datafly_levels(case: &Instance) -> (Vec<u32>, u64) {
    let m = case.m();
    let rows = case.expanded();
    let mut levels = vec![0u32; m];
    let mut steps = 0;
    loop {
        let mut classes: BTreeMap<Vec<u32>, u64> = BTreeMap::new();
        for (_, r) in &rows {
            *classes.entry(case.labels(&levels, r)).or_insert(0) += 1;
        }
        let below: u64 = classes.values().filter(|&&s| s < case.k).sum();
        if below <= case.max_suppressed {
            return (levels, steps);
        }
        let mut best: Option<(usize, usize)> = None;
        for j in 0..m {
            if levels[j] as usize == case.hierarchies[j].height() {
                continue;
            }
            let distinct: BTreeSet<u32> = rows
                .iter()
                .map(|(_, r)| case.labels(&levels, r)[j])
                .collect();
            if best.is_none() || distinct.len() > best.unwrap().1 {
                best = Some((j, distinct.len()));
            }
        }
        let Some((j, _)) = best else {
            return (levels, steps);
        };
        levels[j] += 1;
        steps += 1;
    }
}

/// μ-Argus step 1 row by row: per attribute, the lowest level whose labels all hold at
/// least k rows.
fn naive_mu_levels(case: &Instance) -> Vec<u32> {
    let rows = case.expanded();
    (0..case.m())
        .map(|j| {
            let h = &case.hierarchies[j];
            (0..=h.height())
                .find(|&l| {
                    let mut per: BTreeMap<u32, u64> = BTreeMap::new();
                    for (_, r) in &rows {
                        *per.entry(h.generalize(l, r[j])).or_insert(0) += 1;
                    }
                    l == h.height() || per.values().all(|&c| c >= case.k)
                })
                .unwrap() as u32
        })
        .collect()
}

/// μ-Argus steps 2 and 3 row by row: the suppressed cells of every tuple.
fn naive_mu_cells(case: &Instance, levels: &[u32]) -> Vec<u64> {
    let m = case.m();
    let rows = case.expanded();
    let mut subsets: Vec<Vec<usize>> = Vec::new();
    for a in 0..m {
        for b in a + 1..m {
            subsets.push(vec![a, b]);
            for c in b + 1..m {
                subsets.push(vec![a, b, c]);
            }
        }
    }
    (0..case.counts.len())
        .map(|t| {
            let mine = case.labels(levels, case.tuple(t));
            let mut outlying: Vec<&Vec<usize>> = subsets
                .iter()
                .filter(|s| {
                    let freq = rows
                        .iter()
                        .filter(|(_, r)| {
                            let lab = case.labels(levels, r);
                            s.iter().all(|&j| lab[j] == mine[j])
                        })
                        .count() as u64;
                    freq < case.k
                })
                .collect();
            let mut cells = 0u64;
            while !outlying.is_empty() {
                let score = |j: usize| outlying.iter().filter(|s| s.contains(&j)).count();
                let mut j = 0;
                for i in 0..m {
                    if score(i) > score(j) {
                        j = i;
                    }
                }
                cells |= 1 << j;
                outlying.retain(|s| !s.contains(&j));
            }
            cells
        })
        .collect()
}

/// The class key of tuple `t` with the given levels and suppressed cells.
fn key(case: &Instance, levels: &[u32], cells: u64, t: usize) -> Vec<u32> {
    case.labels(levels, case.tuple(t))
        .into_iter()
        .enumerate()
        .map(|(j, l)| if cells & (1 << j) != 0 { MARKER } else { l })
        .collect()
}

/// The finishing step row by row, from the algorithm's levels and cells.
fn naive_finish(
    case: &Instance,
    levels: Vec<u32>,
    cells: Vec<u64>,
    mut report: HistoricReport,
) -> HistoricRelease {
    let m = case.m();
    let full = if m == 64 { u64::MAX } else { (1 << m) - 1 };
    let n = case.counts.len();
    let keys: Vec<Vec<u32>> = (0..n).map(|t| key(case, &levels, cells[t], t)).collect();
    let mut sizes: BTreeMap<Vec<u32>, u64> = BTreeMap::new();
    for (t, _) in case.expanded() {
        *sizes.entry(keys[t].clone()).or_insert(0) += 1;
    }
    for &s in sizes.values() {
        if s < case.k {
            report.unprotected_rows += s;
            report.unprotected_classes += 1;
        }
    }
    let mut star: BTreeSet<Vec<u32>> = BTreeSet::new();
    for key in &keys {
        let s = sizes.get(key).copied().unwrap_or(0);
        if s < case.k || key.iter().all(|&c| c == MARKER) {
            star.insert(key.clone());
        }
    }
    let mut star_rows: u64 = star
        .iter()
        .map(|key| sizes.get(key).copied().unwrap_or(0))
        .sum();
    if case.keep_suppressed && star_rows > 0 && star_rows < case.k {
        let mut rest: Vec<(u64, Vec<u32>)> = sizes
            .iter()
            .filter(|(key, _)| !star.contains(*key))
            .map(|(key, &s)| (s, key.clone()))
            .collect();
        rest.sort();
        for (s, key) in rest {
            if star_rows >= case.k {
                break;
            }
            star_rows += s;
            report.topped_up_rows += s;
            star.insert(key);
        }
    }
    report.suppressed_rows = star_rows;
    let suppressed: Vec<bool> = keys.iter().map(|key| star.contains(key)).collect();
    let cells = cells
        .iter()
        .zip(&suppressed)
        .map(|(&c, &s)| if s { full } else { c })
        .collect();
    HistoricRelease {
        levels,
        cells,
        suppressed,
        report,
    }
}

fn naive_datafly(case: &Instance) -> HistoricRelease {
    let (levels, steps) = naive_datafly_levels(case);
    let report = HistoricReport {
        steps,
        ..HistoricReport::default()
    };
    naive_finish(case, levels, vec![0; case.counts.len()], report)
}

fn naive_mu_argus(case: &Instance) -> HistoricRelease {
    let levels = naive_mu_levels(case);
    let cells = naive_mu_cells(case, &levels);
    let suppressed_cells = cells
        .iter()
        .zip(&case.counts)
        .map(|(&c, &n)| u64::from(c.count_ones()) * n)
        .sum();
    let report = HistoricReport {
        steps: levels.iter().map(|&l| u64::from(l)).sum(),
        suppressed_cells,
        ..HistoricReport::default()
    };
    naive_finish(case, levels, cells, report)
}

/// Independent checks of a finished release: k-anonymous (the kept `*` class
/// included), every row in exactly one class, `suppressed` ⇔ all cells, counters
/// consistent.
fn check_release(
    case: &Instance,
    release: &HistoricRelease,
) -> std::result::Result<(), TestCaseError> {
    let m = case.m();
    let n = case.counts.len();
    prop_assert_eq!(release.levels.len(), m);
    prop_assert_eq!(release.cells.len(), n);
    prop_assert_eq!(release.suppressed.len(), n);
    for (j, &l) in release.levels.iter().enumerate() {
        prop_assert!(l as usize <= case.hierarchies[j].height());
    }
    let full = if m == 64 { u64::MAX } else { (1u64 << m) - 1 };
    for t in 0..n {
        prop_assert_eq!(
            release.suppressed[t],
            release.cells[t] == full,
            "tuple {}",
            t
        );
        prop_assert_eq!(release.cells[t] & !full, 0);
    }
    // Group the released rows: per attribute Some(label) or None for '*'.
    let mut classes: BTreeMap<Vec<Option<u32>>, u64> = BTreeMap::new();
    for (t, leaves) in case.expanded() {
        let key: Vec<Option<u32>> = (0..m)
            .map(|j| {
                if release.suppressed[t] || release.cells[t] & (1 << j) != 0 {
                    None
                } else {
                    Some(case.hierarchies[j].generalize(release.levels[j] as usize, leaves[j]))
                }
            })
            .collect();
        *classes.entry(key).or_insert(0) += 1;
    }
    prop_assert_eq!(classes.values().sum::<u64>(), case.rows());
    let star_key = vec![None; m];
    let star_rows = classes.get(&star_key).copied().unwrap_or(0);
    for (key, &size) in &classes {
        if *key == star_key && !case.keep_suppressed {
            continue;
        }
        prop_assert!(
            size >= case.k,
            "class {:?} has {} rows, k = {}",
            key,
            size,
            case.k
        );
    }
    let report = &release.report;
    let suppressed_rows: u64 = (0..n)
        .filter(|&t| release.suppressed[t])
        .map(|t| case.counts[t])
        .sum();
    prop_assert_eq!(report.suppressed_rows, suppressed_rows);
    prop_assert_eq!(report.suppressed_rows, star_rows);
    prop_assert_eq!(
        report.suppressed_rows,
        report.unprotected_rows + report.topped_up_rows
    );
    if !case.keep_suppressed {
        prop_assert_eq!(report.topped_up_rows, 0);
    }
    prop_assert_eq!(
        report.steps,
        release.levels.iter().map(|&l| u64::from(l)).sum::<u64>()
    );
    Ok(())
}

/// The instance with its tuples in a random order, and `order[new] = old`.
fn shuffled(case: &Instance, seed: u64) -> (Instance, Vec<usize>) {
    let mut rng = Rng(seed ^ 0x5EED);
    let n = case.counts.len();
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        order.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let mut other = case.clone();
    other.tuples = order.iter().flat_map(|&t| case.tuple(t).to_vec()).collect();
    other.counts = order.iter().map(|&t| case.counts[t]).collect();
    (other, order)
}

fn check_order_independent(
    a: &HistoricRelease,
    b: &HistoricRelease,
    order: &[usize],
) -> std::result::Result<(), TestCaseError> {
    prop_assert_eq!(&a.levels, &b.levels);
    prop_assert_eq!(a.report, b.report);
    for (new, &old) in order.iter().enumerate() {
        prop_assert_eq!(a.cells[old], b.cells[new]);
        prop_assert_eq!(a.suppressed[old], b.suppressed[new]);
    }
    Ok(())
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    #[test]
    fn datafly_matches_the_naive_loop_and_is_k_anonymous(seed in any::<u64>()) {
        let case = instance(seed);
        let release = case.datafly();
        let (levels, steps) = naive_datafly_levels(&case);
        prop_assert_eq!(&release.levels, &levels);
        prop_assert_eq!(release.report.steps, steps);
        prop_assert_eq!(release.report.suppressed_cells, 0);
        prop_assert!(release.report.unprotected_rows <= case.max_suppressed);
        prop_assert_eq!(&release, &naive_datafly(&case));
        check_release(&case, &release)?;
        // No cell suppression: a tuple is either untouched or suppressed entirely.
        for t in 0..case.counts.len() {
            prop_assert!(release.suppressed[t] || release.cells[t] == 0);
        }
        let (other, order) = shuffled(&case, seed);
        check_order_independent(&release, &other.datafly(), &order)?;
    }

    #[test]
    fn mu_argus_matches_the_naive_rules_and_is_k_anonymous(seed in any::<u64>()) {
        let case = instance(seed);
        let release = case.mu_argus();
        let levels = naive_mu_levels(&case);
        prop_assert_eq!(&release.levels, &levels);
        let cells = naive_mu_cells(&case, &levels);
        // The tuples kept (not suppressed entirely) carry μ-Argus's cells.
        for (t, &mine) in cells.iter().enumerate() {
            if !release.suppressed[t] {
                prop_assert_eq!(release.cells[t], mine, "tuple {}", t);
            }
            // Greedy cover of 2- and 3-combinations never suppresses all m cells.
            prop_assert!(case.m() == 1 || mine.count_ones() < case.m() as u32);
        }
        prop_assert_eq!(&release, &naive_mu_argus(&case));
        check_release(&case, &release)?;
        let (other, order) = shuffled(&case, seed);
        check_order_independent(&release, &other.mu_argus(), &order)?;
    }
}

fn age() -> Hierarchy {
    // 0..4; level 1 pairs {0,1}, {2,3}; level 2 the root.
    Hierarchy::try_from_levels(&[&[0, 1, 2, 3], &[0, 0, 1, 1], &[0, 0, 0, 0]]).unwrap()
}

#[test]
fn datafly_generalizes_the_attribute_with_most_distinct_values() {
    // (age, sex) once each: age has 4 values, sex 2, so age goes up; then both have 2
    // (a tie: the lower index, age, goes up again) and the pairs are 2-anonymous.
    let tuples = [0, 0, 1, 1, 2, 0, 3, 1];
    let h = [age(), Hierarchy::flat(2)];
    let release = datafly(&tuples, 2, &[1; 4], &h, 2, 0, true).unwrap();
    assert_eq!(release.levels, vec![2, 0]);
    assert_eq!(release.report.steps, 2);
    assert_eq!(release.suppressed, vec![false; 4]);
    assert_eq!(release.cells, vec![0; 4]);
    assert_eq!(
        release.report,
        HistoricReport {
            steps: 2,
            ..HistoricReport::default()
        }
    );
    // With sex listed first the tie at the second step goes to sex instead.
    let swapped = [0, 0, 1, 1, 0, 2, 1, 3];
    let h = [Hierarchy::flat(2), age()];
    let release = datafly(&swapped, 2, &[1; 4], &h, 2, 0, true).unwrap();
    assert_eq!(release.levels, vec![1, 1]);
    // Allowed to suppress every row, Datafly generalizes nothing.
    let h = [age(), Hierarchy::flat(2)];
    let release = datafly(&tuples, 2, &[1; 4], &h, 2, 4, true).unwrap();
    assert_eq!(release.levels, vec![0, 0]);
    assert_eq!(release.suppressed, vec![true; 4]);
    assert_eq!(release.cells, vec![0b11; 4]);
    assert_eq!(release.report.unprotected_rows, 4);
    assert_eq!(release.report.unprotected_classes, 4);
    assert_eq!(release.report.suppressed_rows, 4);
}

#[test]
fn datafly_tops_up_a_small_kept_star_class() {
    // One unique row (age 3, sex 1) within the limit of 1 suppressed row.
    let tuples = [0, 0, 1, 0, 2, 1, 3, 1];
    let counts = [2, 2, 2, 1];
    let h = [age(), Hierarchy::flat(2)];
    let dropped = datafly(&tuples, 2, &counts, &h, 2, 1, false).unwrap();
    assert_eq!(dropped.levels, vec![0, 0]);
    assert_eq!(dropped.suppressed, vec![false, false, false, true]);
    assert_eq!(dropped.report.unprotected_rows, 1);
    assert_eq!(dropped.report.suppressed_rows, 1);
    assert_eq!(dropped.report.topped_up_rows, 0);
    // Kept, the '*' class of 1 row is too small: the smallest class joins it, ties
    // broken by the key (age 0, sex 0 first).
    let kept = datafly(&tuples, 2, &counts, &h, 2, 1, true).unwrap();
    assert_eq!(kept.levels, vec![0, 0]);
    assert_eq!(kept.suppressed, vec![true, false, false, true]);
    assert_eq!(kept.cells, vec![0b11, 0, 0, 0b11]);
    assert_eq!(kept.report.unprotected_rows, 1);
    assert_eq!(kept.report.unprotected_classes, 1);
    assert_eq!(kept.report.topped_up_rows, 2);
    assert_eq!(kept.report.suppressed_rows, 3);
}

fn binary(m: usize) -> Vec<Hierarchy> {
    vec![Hierarchy::flat(2); m]
}

#[test]
fn mu_argus_suppresses_the_cell_in_most_outliers() {
    // k = 2. Background 000 ×2, 001 ×2; p = 110 and q = 111 once each. Every single
    // label has >= 2 rows (levels stay 0). On attributes {0, 1} p and q share (1, 1);
    // on {0, 2}, {1, 2} and {0, 1, 2} each is alone: attribute 2 lies in all three of
    // their outliers (0 and 1 in two), so both lose attribute 2 and form (1, 1, *).
    let tuples = [0, 0, 0, 0, 0, 1, 1, 1, 0, 1, 1, 1];
    let counts = [2, 2, 1, 1];
    let release = mu_argus(&tuples, 3, &counts, &binary(3), 2, true).unwrap();
    assert_eq!(release.levels, vec![0, 0, 0]);
    assert_eq!(release.cells, vec![0, 0, 0b100, 0b100]);
    assert_eq!(release.suppressed, vec![false; 4]);
    assert_eq!(
        release.report,
        HistoricReport {
            suppressed_cells: 2,
            ..HistoricReport::default()
        }
    );
}

#[test]
fn mu_argus_generalizes_each_attribute_until_its_labels_hold_k_rows() {
    // Age alone: 0, 1 once, 2, 3 twice: level 1 gives {0,1}: 2 and {2,3}: 4 rows.
    let tuples = [0, 1, 2, 3];
    let release = mu_argus(&tuples, 1, &[1, 1, 2, 2], &[age()], 2, true).unwrap();
    assert_eq!(release.levels, vec![1]);
    assert_eq!(release.report.steps, 1);
    assert_eq!(release.suppressed, vec![false; 4]);
    // With k = 3 the pair {0, 1} is too small: the root.
    let release = mu_argus(&tuples, 1, &[1, 1, 2, 2], &[age()], 3, true).unwrap();
    assert_eq!(release.levels, vec![2]);
}

#[test]
fn mu_argus_misses_a_unique_four_attribute_combination() {
    // k = 2, four binary attributes. x = 0011 once; 0010, 0001, 0111, 1011 twice each.
    // Each 3-combination of x is shared with one of the others (and every 2-combination
    // with more), every label holds >= 2 rows: μ-Argus sees no outlier, yet x is alone.
    let tuples = [
        0, 0, 1, 1, // x
        0, 0, 1, 0, //
        0, 0, 0, 1, //
        0, 1, 1, 1, //
        1, 0, 1, 1, //
    ];
    let counts = [1, 2, 2, 2, 2];
    let dropped = mu_argus(&tuples, 4, &counts, &binary(4), 2, false).unwrap();
    assert_eq!(dropped.levels, vec![0; 4]);
    assert_eq!(dropped.report.suppressed_cells, 0);
    assert_eq!(dropped.report.unprotected_rows, 1);
    assert_eq!(dropped.report.unprotected_classes, 1);
    // Finishing suppresses x.
    assert_eq!(dropped.suppressed, vec![true, false, false, false, false]);
    assert_eq!(dropped.cells, vec![0b1111, 0, 0, 0, 0]);
    assert_eq!(dropped.report.suppressed_rows, 1);
    assert_eq!(dropped.report.topped_up_rows, 0);
    // Kept, the '*' class of x alone is too small: the smallest class with the lowest
    // key (0001) joins it.
    let kept = mu_argus(&tuples, 4, &counts, &binary(4), 2, true).unwrap();
    assert_eq!(kept.suppressed, vec![true, false, true, false, false]);
    assert_eq!(kept.report.unprotected_rows, 1);
    assert_eq!(kept.report.topped_up_rows, 2);
    assert_eq!(kept.report.suppressed_rows, 3);
}

#[test]
fn k_of_one_changes_nothing() {
    let tuples = [0, 0, 1, 1, 2, 0, 3, 1];
    let h = [age(), Hierarchy::flat(2)];
    for release in [
        datafly(&tuples, 2, &[1; 4], &h, 1, 0, true).unwrap(),
        mu_argus(&tuples, 2, &[1; 4], &h, 1, true).unwrap(),
    ] {
        assert_eq!(release.levels, vec![0, 0]);
        assert_eq!(release.cells, vec![0; 4]);
        assert_eq!(release.report, HistoricReport::default());
    }
}

#[test]
fn errors_name_the_problem() {
    let h = || vec![Hierarchy::flat(2), Hierarchy::flat(2)];
    let tuples = [0, 1, 1, 0];
    type Call = fn(&[u32], usize, &[u64], &[Hierarchy], u64) -> kanon_core::Result<HistoricRelease>;
    let calls: [Call; 2] = [
        |t, m, c, h, k| datafly(t, m, c, h, k, 0, true),
        |t, m, c, h, k| mu_argus(t, m, c, h, k, true),
    ];
    for call in calls {
        // Lengths: tuples vs counts, hierarchies vs m, m = 0.
        let err = call(&tuples, 2, &[1, 1, 1], &h(), 1).unwrap_err();
        assert!(
            matches!(
                err,
                KernelError::LengthMismatch {
                    argument: "tuples",
                    got: 4,
                    expected: 6,
                    ..
                }
            ),
            "{err}"
        );
        let err = call(&tuples, 2, &[1, 1], &h()[..1], 1).unwrap_err();
        assert!(
            matches!(
                err,
                KernelError::LengthMismatch {
                    argument: "hierarchies",
                    ..
                }
            ),
            "{err}"
        );
        let err = call(&[], 0, &[], &[], 1).unwrap_err();
        assert!(matches!(err, KernelError::LengthMismatch { .. }), "{err}");
        // k = 0.
        let err = call(&tuples, 2, &[1, 1], &h(), 0).unwrap_err();
        assert!(err.to_string().contains("k must be at least 1"), "{err}");
        // A code outside its hierarchy.
        let err = call(&[0, 2, 1, 0], 2, &[1, 1], &h(), 1).unwrap_err();
        assert!(
            err.to_string()
                .contains("tuple 0 has code 2 in attribute 1"),
            "{err}"
        );
        // Fewer rows than k (an empty table included).
        let err = call(&tuples, 2, &[1, 1], &h(), 3).unwrap_err();
        assert!(err.to_string().contains("fewer than k = 3"), "{err}");
        let err = call(&[], 2, &[], &h(), 1).unwrap_err();
        assert!(err.to_string().contains("0 rows"), "{err}");
        // Counts that overflow.
        let err = call(&tuples, 2, &[u64::MAX, 1], &h(), 1).unwrap_err();
        assert!(err.to_string().contains("overflow"), "{err}");
        // More than 64 attributes.
        let wide = vec![Hierarchy::flat(1); 65];
        let err = call(&[0; 65], 65, &[1], &wide, 1).unwrap_err();
        assert!(err.to_string().contains("at most 64"), "{err}");
    }
}

#[test]
fn sixty_four_attributes_are_accepted() {
    // Two rows differing in the last attribute only: k = 2 needs it generalized.
    let h = vec![Hierarchy::flat(2); 64];
    let mut tuples = vec![0u32; 128];
    tuples[127] = 1;
    let d = datafly(&tuples, 64, &[1, 1], &h, 2, 0, true).unwrap();
    assert_eq!(d.levels[63], 1);
    assert_eq!(d.levels[..63], [0; 63]);
    let a = mu_argus(&tuples, 64, &[1, 1], &h, 2, true).unwrap();
    assert_eq!(a.levels[63], 1);
    assert_eq!(a.suppressed, vec![false; 2]);
    // Suppressing everything fills all 64 bits.
    let d = datafly(&tuples, 64, &[1, 1], &h, 2, 2, true).unwrap();
    assert_eq!(d.cells, vec![u64::MAX; 2]);
}

/// An Adult-sized histogram: m = 9 attributes with Adult's domain sizes, tens of
/// thousands of distinct tuples. Both algorithms must give k-anonymous releases (their
/// speed is checked in release builds: `cargo test --release -- --ignored`).
fn adult_like() -> (Vec<Hierarchy>, Vec<u32>, Vec<u64>) {
    let mut rng = Rng(2002);
    let domains: [(u32, usize); 9] = [
        (74, 4),
        (9, 2),
        (16, 3),
        (7, 2),
        (14, 2),
        (6, 2),
        (5, 1),
        (2, 1),
        (41, 2),
    ];
    let hierarchies: Vec<Hierarchy> = domains
        .iter()
        .map(|&(leaves, height)| random_hierarchy(&mut rng, leaves, height))
        .collect();
    let mut histogram: BTreeMap<Vec<u32>, u64> = BTreeMap::new();
    while histogram.len() < 30_000 {
        // Skewed values: the minimum of two draws favours low codes.
        let row: Vec<u32> = domains
            .iter()
            .map(|&(leaves, _)| {
                rng.below(u64::from(leaves))
                    .min(rng.below(u64::from(leaves))) as u32
            })
            .collect();
        *histogram.entry(row).or_insert(0) += 1;
    }
    let tuples = histogram.keys().flatten().copied().collect();
    let counts = histogram.values().copied().collect();
    (hierarchies, tuples, counts)
}

fn check_adult(
    hierarchies: &[Hierarchy],
    tuples: &[u32],
    counts: &[u64],
    k: u64,
    release: &HistoricRelease,
) {
    let mut classes: std::collections::HashMap<Vec<u32>, u64> = std::collections::HashMap::new();
    for (t, row) in tuples.chunks_exact(9).enumerate() {
        let key = (0..9)
            .map(|j| {
                if release.cells[t] & (1 << j) != 0 {
                    u32::MAX
                } else {
                    hierarchies[j].generalize(release.levels[j] as usize, row[j])
                }
            })
            .collect();
        *classes.entry(key).or_insert(0) += counts[t];
    }
    assert!(classes.values().all(|&s| s >= k));
}

#[test]
fn adult_sized_histograms_are_handled() {
    let (h, tuples, counts) = adult_like();
    let rows: u64 = counts.iter().sum();
    for k in [2, 5, 10] {
        let d = datafly(&tuples, 9, &counts, &h, k, k, true).unwrap();
        check_adult(&h, &tuples, &counts, k, &d);
        let a = mu_argus(&tuples, 9, &counts, &h, k, true).unwrap();
        check_adult(&h, &tuples, &counts, k, &a);
        assert!(a.report.suppressed_rows <= rows);
    }
}

#[test]
#[ignore = "timing; run in release builds"]
fn adult_sized_histograms_take_well_under_a_second() {
    let (h, tuples, counts) = adult_like();
    for k in [2, 5, 10, 50] {
        let start = std::time::Instant::now();
        let d = datafly(&tuples, 9, &counts, &h, k, k, true).unwrap();
        let datafly_time = start.elapsed();
        let start = std::time::Instant::now();
        let a = mu_argus(&tuples, 9, &counts, &h, k, true).unwrap();
        let mu_time = start.elapsed();
        eprintln!(
            "k = {k}: datafly {datafly_time:?} ({} steps), mu-argus {mu_time:?} ({} cells, {} unprotected rows)",
            d.report.steps, a.report.suppressed_cells, a.report.unprotected_rows
        );
        assert!(datafly_time.as_secs_f64() < 0.5 && mu_time.as_secs_f64() < 0.5);
    }
}

#[test]
fn algorithms_are_found_by_name_and_run_as_their_functions() {
    use kanon_core::historic::{algorithm, Histogram, ALGORITHMS};
    let tuples = [0, 0, 1, 1, 2, 0, 3, 1];
    let h = [age(), Hierarchy::flat(2)];
    let input = Histogram {
        tuples: &tuples,
        m: 2,
        counts: &[1; 4],
        hierarchies: &h,
        k: 2,
        max_suppressed: None,
        keep_suppressed: true,
    };
    let names: Vec<&str> = ALGORITHMS.iter().map(|(name, _)| *name).collect();
    assert_eq!(names, ["datafly", "mu_argus"]);
    // Datafly's limit defaults to k rows (Sweeney's rule).
    let by_name = algorithm("historic", "datafly").unwrap()(&input).unwrap();
    assert_eq!(
        by_name,
        datafly(&tuples, 2, &[1; 4], &h, 2, 2, true).unwrap()
    );
    let by_name = algorithm("historic", "mu_argus").unwrap()(&input).unwrap();
    assert_eq!(by_name, mu_argus(&tuples, 2, &[1; 4], &h, 2, true).unwrap());
    let limited = Histogram {
        max_suppressed: Some(0),
        ..input
    };
    let err = algorithm("historic", "mu_argus").unwrap()(&limited).unwrap_err();
    assert!(err.to_string().contains("max_suppressed"), "{err}");
    let err = algorithm("historic", "nope").err().unwrap();
    assert!(err.to_string().contains("\"datafly\""), "{err}");
}
