//! Strict multidimensional Mondrian against hand-worked examples and a naive
//! re-implementation of the cut rule (sort by key, try every boundary in order of distance
//! from the weighted median), with independent checks of the partition: parts of at least
//! k rows satisfying the models, no final part admitting an allowed cut, levels, and
//! independence of the input order and of the number of threads.

use std::collections::BTreeMap;

use kanon_core::emd::GroundDistance;
use kanon_core::models::{LDiversity, ModelCheck, PrivacyModels};
use kanon_core::mondrian::{mondrian, MondrianOptions, Partition};
use kanon_core::{Hierarchy, KernelError};
use proptest::prelude::*;

mod common;

use common::{random_hierarchy, Rng};

#[derive(Debug, Clone)]
struct Instance {
    hierarchies: Vec<Hierarchy>,
    tuples: Vec<u32>,
    counts: Vec<u64>,
    keys: Vec<Vec<f64>>,
    spans: Vec<f64>,
    sensitive: Option<(Vec<u32>, ModelCheck)>,
    k: u64,
    stop: u64,
}

impl Instance {
    fn m(&self) -> usize {
        self.hierarchies.len()
    }

    fn n(&self) -> usize {
        self.counts.len()
    }

    fn run(&self) -> Result<Partition, KernelError> {
        mondrian(
            &self.tuples,
            self.m(),
            &self.counts,
            &self.keys,
            &self.spans,
            &self.hierarchies,
            self.sensitive
                .as_ref()
                .map(|(c, check)| (c.as_slice(), check)),
            &MondrianOptions {
                k: self.k,
                stop: self.stop,
            },
        )
    }

    fn key(&self, t: usize, j: usize) -> f64 {
        self.keys[j][self.tuples[t * self.m() + j] as usize]
    }

    fn rows(&self, part: &[usize]) -> u64 {
        part.iter().map(|&t| self.counts[t]).sum()
    }

    /// Whether a set of tuples satisfies the models (always without models).
    fn models_ok(&self, part: &[usize]) -> bool {
        let Some((codes, check)) = &self.sensitive else {
            return true;
        };
        let mut histogram: BTreeMap<u32, u64> = BTreeMap::new();
        for &t in part {
            *histogram.entry(codes[t]).or_insert(0) += self.counts[t];
        }
        let list: Vec<(u32, u64)> = histogram.into_iter().collect();
        check.class_ok(&list, self.rows(part), 0)
    }

    fn allowed(&self, left: &[usize], right: &[usize]) -> bool {
        self.rows(left) >= self.k
            && self.rows(right) >= self.k
            && self.models_ok(left)
            && self.models_ok(right)
    }

    /// Whether some attribute of span > 0 has a threshold value splitting the part
    /// (keys ≤ value left, the others right, both non-empty) into an allowed cut.
    fn any_allowed_cut(&self, part: &[usize]) -> bool {
        (0..self.m()).filter(|&j| self.spans[j] > 0.0).any(|j| {
            part.iter().any(|&pivot| {
                let v = self.key(pivot, j);
                let (left, right): (Vec<usize>, Vec<usize>) =
                    part.iter().partition(|&&t| self.key(t, j) <= v);
                !right.is_empty() && self.allowed(&left, &right)
            })
        })
    }
}

/// The cut rule of the specification, naively: returns the two sides or `None`.
fn naive_cut(case: &Instance, part: &[usize]) -> Option<(Vec<usize>, Vec<usize>)> {
    let total = case.rows(part);
    if case.stop > 0 && total <= case.stop {
        return None;
    }
    let mut attributes: Vec<(f64, usize)> = Vec::new();
    for j in 0..case.m() {
        if case.spans[j] == 0.0 {
            continue;
        }
        let keys = part.iter().map(|&t| case.key(t, j));
        let max = keys.clone().fold(f64::NEG_INFINITY, f64::max);
        let min = keys.fold(f64::INFINITY, f64::min);
        let range = (max - min) / case.spans[j];
        if range > 0.0 {
            attributes.push((range, j));
        }
    }
    attributes.sort_by(|a, b| b.0.partial_cmp(&a.0).unwrap().then(a.1.cmp(&b.1)));
    for &(_, j) in &attributes {
        let mut sorted = part.to_vec();
        sorted.sort_by(|&a, &b| {
            case.key(a, j)
                .partial_cmp(&case.key(b, j))
                .unwrap()
                .then(a.cmp(&b))
        });
        // (distance from half, position) of every boundary between distinct keys.
        let mut boundaries: Vec<(u128, usize)> = Vec::new();
        let mut left = 0u64;
        for i in 1..sorted.len() {
            left += case.counts[sorted[i - 1]];
            if case.key(sorted[i - 1], j) != case.key(sorted[i], j) {
                let distance = (2 * u128::from(left)).abs_diff(u128::from(total));
                boundaries.push((distance, i));
            }
        }
        boundaries.sort_unstable();
        for &(_, i) in &boundaries {
            let (l, r) = sorted.split_at(i);
            if case.allowed(l, r) {
                return Some((l.to_vec(), r.to_vec()));
            }
        }
    }
    None
}

fn naive_split(case: &Instance, part: Vec<usize>, out: &mut Vec<Vec<usize>>) {
    match naive_cut(case, &part) {
        Some((left, right)) => {
            naive_split(case, left, out);
            naive_split(case, right, out);
        }
        None => out.push(part),
    }
}

/// The part of every tuple by the naive rule, or `None` if the table violates the models.
fn naive_parts(case: &Instance) -> Option<Vec<u32>> {
    let all: Vec<usize> = (0..case.n()).collect();
    if !case.models_ok(&all) {
        return None;
    }
    let mut parts = Vec::new();
    naive_split(case, all, &mut parts);
    let mut part_of = vec![u32::MAX; case.n()];
    for (p, part) in parts.iter().enumerate() {
        for &t in part {
            part_of[t] = p as u32;
        }
    }
    Some(part_of)
}

/// The tuples of every part.
fn members(partition: &Partition) -> Vec<Vec<usize>> {
    let mut out = vec![Vec::new(); partition.parts];
    for (t, &p) in partition.part_of_tuple.iter().enumerate() {
        out[p as usize].push(t);
    }
    out
}

/// Check a partition against the instance, independently of how it was found.
fn check_partition(case: &Instance, partition: &Partition) -> Result<(), TestCaseError> {
    let m = case.m();
    prop_assert_eq!(partition.part_of_tuple.len(), case.n());
    prop_assert_eq!(partition.rows.len(), partition.parts);
    prop_assert_eq!(partition.levels.len(), partition.parts * m);
    let parts = members(partition);
    for (p, part) in parts.iter().enumerate() {
        // Dense ids, every part non-empty.
        prop_assert!(!part.is_empty());
        prop_assert_eq!(partition.rows[p], case.rows(part));
        prop_assert!(partition.rows[p] >= case.k);
        prop_assert!(case.models_ok(part));
        if case.stop == 0 || partition.rows[p] > case.stop {
            prop_assert!(!case.any_allowed_cut(part), "part {} admits a cut", p);
        }
        for j in 0..m {
            let h = &case.hierarchies[j];
            let level = (0..=h.height())
                .find(|&l| {
                    let first = h.generalize(l, case.tuples[part[0] * m + j]);
                    part.iter()
                        .all(|&t| h.generalize(l, case.tuples[t * m + j]) == first)
                })
                .unwrap();
            prop_assert_eq!(partition.levels[p * m + j] as usize, level);
        }
    }
    Ok(())
}

/// The instance with its tuples listed in a seeded random order: `order[i]` is the
/// original index of new tuple `i`.
fn shuffled(case: &Instance, seed: u64) -> (Instance, Vec<usize>) {
    let mut rng = Rng(seed ^ 0x5EED);
    let n = case.n();
    let mut order: Vec<usize> = (0..n).collect();
    for i in (1..n).rev() {
        order.swap(i, rng.below(i as u64 + 1) as usize);
    }
    let m = case.m();
    let mut other = case.clone();
    other.tuples = order
        .iter()
        .flat_map(|&t| case.tuples[t * m..(t + 1) * m].to_vec())
        .collect();
    other.counts = order.iter().map(|&t| case.counts[t]).collect();
    if let Some((codes, check)) = &case.sensitive {
        other.sensitive = Some((order.iter().map(|&t| codes[t]).collect(), check.clone()));
    }
    (other, order)
}

/// A random instance: up to 3 attributes of up to 6 leaves, keys with ties (and -0.0),
/// spans from the table (sometimes 0 or rescaled), up to 24 tuples, optional models.
fn instance(seed: u64) -> Instance {
    let mut rng = Rng(seed);
    let m = 1 + rng.below(3) as usize;
    let hierarchies: Vec<Hierarchy> = (0..m)
        .map(|_| {
            let leaves = 1 + rng.below(6) as u32;
            let height = 1 + rng.below(3) as usize;
            random_hierarchy(&mut rng, leaves, height)
        })
        .collect();
    const VALUES: [f64; 6] = [-1.5, -0.0, 0.0, 0.5, 2.0, 7.0];
    let keys: Vec<Vec<f64>> = hierarchies
        .iter()
        .map(|h| {
            let positional = rng.below(2) == 0;
            (0..h.leaves())
                .map(|leaf| {
                    if positional {
                        leaf as f64
                    } else {
                        VALUES[rng.below(VALUES.len() as u64) as usize]
                    }
                })
                .collect()
        })
        .collect();
    let spans: Vec<f64> = keys
        .iter()
        .map(|key| {
            let max = key.iter().copied().fold(f64::NEG_INFINITY, f64::max);
            let min = key.iter().copied().fold(f64::INFINITY, f64::min);
            match rng.below(6) {
                0 => 0.0,
                1 => (max - min) * 3.0,
                _ => max - min,
            }
        })
        .collect();
    let with_models = rng.below(2) == 0;
    let sensitive_values = 1 + rng.below(4);
    let target = 1 + rng.below(24) as usize;
    let mut seen: BTreeMap<Vec<u32>, ()> = BTreeMap::new();
    let mut tuples = Vec::new();
    let mut codes = Vec::new();
    for _ in 0..target {
        let mut row: Vec<u32> = hierarchies
            .iter()
            .map(|h| rng.below(h.leaves() as u64) as u32)
            .collect();
        let code = rng.below(sensitive_values) as u32;
        row.push(if with_models { code } else { 0 });
        if seen.insert(row.clone(), ()).is_none() {
            tuples.extend_from_slice(&row[..m]);
            codes.push(code);
        }
    }
    let n = codes.len();
    let counts: Vec<u64> = (0..n).map(|_| 1 + rng.below(4)).collect();
    let rows: u64 = counts.iter().sum();
    let sensitive = with_models.then(|| {
        let mut global = vec![0u64; sensitive_values as usize];
        for (&c, &w) in codes.iter().zip(&counts) {
            global[c as usize] += w;
        }
        let models = match rng.below(4) {
            0 => PrivacyModels {
                l_diversity: Some(LDiversity::Distinct(1 + rng.below(3))),
                ..PrivacyModels::default()
            },
            1 => PrivacyModels {
                l_diversity: Some(LDiversity::Entropy(1.0 + rng.below(15) as f64 / 10.0)),
                ..PrivacyModels::default()
            },
            2 => PrivacyModels {
                l_diversity: Some(LDiversity::Recursive {
                    c: 1.0 + rng.below(3) as f64,
                    l: 1 + rng.below(2),
                }),
                ..PrivacyModels::default()
            },
            _ => PrivacyModels {
                t_closeness: Some((rng.below(6) as f64 / 10.0, GroundDistance::Equal)),
                ..PrivacyModels::default()
            },
        };
        let check = ModelCheck::new("test", &models, &global).unwrap();
        (codes, check)
    });
    Instance {
        hierarchies,
        tuples,
        counts,
        keys,
        spans,
        sensitive,
        k: 1 + rng.below(rows.min(6)),
        stop: if rng.below(4) == 0 {
            1 + rng.below(rows)
        } else {
            0
        },
    }
}

/// One attribute of `leaves` leaves under a single root, keyed by position.
fn line(leaves: u32) -> (Hierarchy, Vec<f64>) {
    (
        Hierarchy::flat(leaves),
        (0..leaves).map(f64::from).collect(),
    )
}

/// A one-attribute instance, keyed by position, one tuple per leaf.
fn single(counts: &[u64], k: u64, stop: u64) -> Instance {
    let leaves = counts.len() as u32;
    let (h, key) = line(leaves);
    Instance {
        hierarchies: vec![h],
        tuples: (0..leaves).collect(),
        counts: counts.to_vec(),
        keys: vec![key],
        spans: vec![f64::from(leaves.max(2) - 1)],
        sensitive: None,
        k,
        stop,
    }
}

fn distinct(l: u64, global: &[u64]) -> ModelCheck {
    let models = PrivacyModels {
        l_diversity: Some(LDiversity::Distinct(l)),
        ..PrivacyModels::default()
    };
    ModelCheck::new("test", &models, global).unwrap()
}

#[test]
fn the_weighted_median_is_cut_first() {
    let p = single(&[1; 6], 2, 0).run().unwrap();
    assert_eq!(p.part_of_tuple, vec![0, 0, 0, 1, 1, 1]);
    assert_eq!(p.rows, vec![3, 3]);
    // By rows, not tuples: the first tuple alone holds half of them.
    let p = single(&[3, 1, 1, 1], 2, 0).run().unwrap();
    assert_eq!(p.part_of_tuple, vec![0, 1, 1, 1]);
    assert_eq!(p.rows, vec![3, 3]);
}

#[test]
fn equally_close_boundaries_go_left() {
    // 3 rows: left 1 and left 2 are equally far from 1.5; stop = 2 keeps the sides whole.
    let p = single(&[1, 1, 1], 1, 2).run().unwrap();
    assert_eq!(p.part_of_tuple, vec![0, 1, 1]);
}

#[test]
fn a_median_forbidden_by_k_means_no_cut() {
    // Rows 2, 6, 2 with k = 3: both boundaries are 3 rows from half and leave 2 rows on
    // one side.
    let p = single(&[2, 6, 2], 3, 0).run().unwrap();
    assert_eq!(p.parts, 1);
}

#[test]
fn equal_keys_stay_together() {
    let mut case = single(&[1; 4], 1, 0);
    case.keys = vec![vec![0.0, 0.0, -0.0, 1.0]];
    case.spans = vec![1.0];
    // The only boundary lies between the three zeros and the one.
    let p = case.run().unwrap();
    assert_eq!(p.part_of_tuple, vec![0, 0, 0, 1]);
    // With k = 2 that boundary leaves 1 row on the right: no cut at all.
    case.k = 2;
    let p = case.run().unwrap();
    assert_eq!(p.part_of_tuple, vec![0; 4]);
    assert_eq!(p.parts, 1);
}

#[test]
fn no_allowed_cut_leaves_one_part() {
    let p = single(&[1; 5], 3, 0).run().unwrap();
    assert_eq!(p.parts, 1);
    assert_eq!(p.part_of_tuple, vec![0; 5]);
    assert_eq!(p.rows, vec![5]);
    assert_eq!(p.levels, vec![1]);
}

#[test]
fn stop_blocks_small_parts() {
    // k = 1 would cut down to single tuples; stop = 4 leaves parts of at most 4 rows.
    let p = single(&[1; 8], 1, 4).run().unwrap();
    assert_eq!(p.part_of_tuple, vec![0, 0, 0, 0, 1, 1, 1, 1]);
    let p = single(&[1; 8], 1, 3).run().unwrap();
    assert_eq!(p.part_of_tuple, vec![0, 0, 1, 1, 2, 2, 3, 3]);
    let p = single(&[1; 8], 1, 0).run().unwrap();
    assert_eq!(p.part_of_tuple, (0..8).collect::<Vec<u32>>());
    assert_eq!(p.levels, vec![0; 8]);
}

#[test]
fn the_widest_normalized_range_is_cut_first() {
    // Attribute 0 spans 10 of 100 (0.1), attribute 1 spans 1 of 2 (0.5).
    let (h0, _) = line(2);
    let (h1, _) = line(2);
    let mut case = Instance {
        hierarchies: vec![h0, h1],
        tuples: vec![0, 0, 0, 1, 1, 0, 1, 1],
        counts: vec![1; 4],
        keys: vec![vec![0.0, 10.0], vec![0.0, 1.0]],
        spans: vec![100.0, 2.0],
        sensitive: None,
        k: 2,
        stop: 0,
    };
    let p = case.run().unwrap();
    assert_eq!(p.part_of_tuple, vec![0, 1, 0, 1]);
    // Equal normalized ranges: the lower index first.
    case.spans = vec![20.0, 2.0];
    let p = case.run().unwrap();
    assert_eq!(p.part_of_tuple, vec![0, 0, 1, 1]);
    // Span 0: never cut, whatever the range.
    case.spans = vec![0.0, 0.0];
    assert_eq!(case.run().unwrap().parts, 1);
}

#[test]
fn the_next_attribute_is_tried_when_the_widest_has_no_allowed_cut() {
    // Attribute 0 (widest) puts 3 rows on one key and 1 on the other; k = 2 forbids it.
    let (h0, _) = line(2);
    let (h1, _) = line(2);
    let case = Instance {
        hierarchies: vec![h0, h1],
        tuples: vec![0, 0, 0, 1, 0, 1, 1, 0],
        counts: vec![1; 4],
        keys: vec![vec![0.0, 10.0], vec![0.0, 1.0]],
        spans: vec![10.0, 2.0],
        sensitive: None,
        k: 2,
        stop: 0,
    };
    let p = case.run().unwrap();
    // Attribute 1: tuples 0 and 3 have key 0, tuples 1 and 2 key 1.
    assert_eq!(p.part_of_tuple, vec![0, 1, 1, 0]);
    assert_eq!(p.levels, vec![1, 0, 0, 0]);
}

#[test]
fn levels_are_the_lowest_common_ancestor() {
    // Leaves 0..4 keyed by position; level 1 pairs {0,1} {2,3}; level 2 the root.
    let h = Hierarchy::try_from_levels(&[&[0, 1, 2, 3], &[0, 0, 1, 1], &[0, 0, 0, 0]]).unwrap();
    let case = |counts: Vec<u64>, tuples: Vec<u32>| Instance {
        hierarchies: vec![h.clone()],
        tuples,
        counts,
        keys: vec![vec![0.0, 1.0, 2.0, 3.0]],
        spans: vec![3.0],
        sensitive: None,
        k: 3,
        stop: 0,
    };
    // Rows 2, 2, 1, 1: half 3 falls inside leaf 1; the cut after it (left 4, right 2)
    // is forbidden, the one before (2 | 4) too, so one part under the root.
    let p = case(vec![2, 2, 1, 1], vec![0, 1, 2, 3]).run().unwrap();
    assert_eq!(p.levels, vec![2]);
    // Rows 2, 1, 1, 2: {0, 1} | {2, 3}, each under one label of level 1.
    let p = case(vec![2, 1, 1, 2], vec![0, 1, 2, 3]).run().unwrap();
    assert_eq!(p.part_of_tuple, vec![0, 0, 1, 1]);
    assert_eq!(p.levels, vec![1, 1]);
    // Rows 3, 1, 2: {0} | {1, 3}: one leaf, then leaves 1 and 3 meet at the root.
    let p = case(vec![3, 1, 2], vec![0, 1, 3]).run().unwrap();
    assert_eq!(p.part_of_tuple, vec![0, 1, 1]);
    assert_eq!(p.levels, vec![0, 2]);
}

#[test]
fn models_push_the_cut_away_from_the_median() {
    // Sensitive codes 0 0 0 1 0 1 with distinct 2-diversity: the cuts after 3 and after 2
    // tuples leave a left side of a single code; the cut after 4 works.
    let mut case = single(&[1; 6], 1, 0);
    case.sensitive = Some((vec![0, 0, 0, 1, 0, 1], distinct(2, &[4, 2])));
    let p = case.run().unwrap();
    assert_eq!(p.part_of_tuple, vec![0, 0, 0, 0, 1, 1]);
    // Tuples of equal keys (here differing only in the sensitive value) never separate.
    let mut case = single(&[1; 4], 1, 0);
    case.keys = vec![vec![0.0, 0.0, 1.0, 1.0]];
    case.sensitive = Some((vec![0, 1, 0, 1], distinct(2, &[2, 2])));
    let p = case.run().unwrap();
    assert_eq!(p.part_of_tuple, vec![0, 0, 1, 1]);
}

#[test]
fn the_outward_search_breaks_ties_to_the_left() {
    // Seven rows, codes 0 1 0 0 1 0 1, recursive (2,2)-diversity (r1 < 2 · r2). The
    // boundaries after 3 and 4 rows (1 row from half) fail on their left side; those
    // after 2 and 5 rows are 3 rows from half and both allowed: the left one wins. Parts
    // of at most 5 rows stop.
    let mut case = single(&[1; 7], 1, 5);
    let models = PrivacyModels {
        l_diversity: Some(LDiversity::Recursive { c: 2.0, l: 2 }),
        ..PrivacyModels::default()
    };
    let check = ModelCheck::new("test", &models, &[4, 3]).unwrap();
    case.sensitive = Some((vec![0, 1, 0, 0, 1, 0, 1], check));
    let p = case.run().unwrap();
    assert_eq!(p.part_of_tuple, vec![0, 0, 1, 1, 1, 1, 1]);
}

#[test]
fn a_table_violating_the_models_is_an_error() {
    let mut case = single(&[1; 4], 1, 0);
    case.sensitive = Some((vec![0, 0, 1, 1], distinct(3, &[2, 2])));
    let err = case.run().unwrap_err();
    assert!(err.to_string().contains("as a whole violates"), "{err}");
}

/// The message of the error an instance fails with.
fn error_of(case: &Instance) -> String {
    case.run().unwrap_err().to_string()
}

#[test]
fn bad_inputs_are_errors() {
    let base = single(&[1; 4], 2, 0);
    let mut case = base.clone();
    case.k = 0;
    assert!(error_of(&case).contains("k must be at least 1"));
    let mut case = base.clone();
    case.k = 5;
    assert!(error_of(&case).contains("exceeds the number of rows"));
    let mut case = base.clone();
    case.counts[2] = 0;
    assert!(error_of(&case).contains("count 0"));
    let mut case = base.clone();
    case.keys[0][1] = f64::NAN;
    assert!(error_of(&case).contains("not a finite number"));
    let mut case = base.clone();
    case.keys[0].pop();
    assert!(error_of(&case).contains("3 keys but its hierarchy has 4 leaves"));
    let mut case = base.clone();
    case.spans[0] = -1.0;
    assert!(error_of(&case).contains("non-negative"));
    let mut case = base.clone();
    case.spans[0] = f64::INFINITY;
    assert!(error_of(&case).contains("finite"));
    let mut case = base.clone();
    case.tuples[0] = 9;
    assert!(error_of(&case).contains("code 9"));
    let length_error = |case: &Instance| match case.run().unwrap_err() {
        KernelError::LengthMismatch { argument, .. } => argument,
        other => panic!("expected a length mismatch, got {other}"),
    };
    let mut case = base.clone();
    case.spans.push(1.0);
    assert_eq!(length_error(&case), "spans");
    let mut case = base.clone();
    case.keys.clear();
    assert_eq!(length_error(&case), "keys");
    let mut case = base.clone();
    case.counts.pop();
    assert_eq!(length_error(&case), "tuples");
    let mut case = base.clone();
    case.sensitive = Some((vec![0, 1, 0], distinct(1, &[2, 2])));
    assert_eq!(length_error(&case), "sensitive");
    let none = MondrianOptions { k: 1, stop: 0 };
    let err = mondrian(&[], 0, &[], &[], &[], &[], None, &none).unwrap_err();
    assert!(matches!(err, KernelError::LengthMismatch { .. }));
}

/// A larger instance whose first cuts run in parallel: the result is the naive one and
/// does not depend on the number of threads.
#[test]
fn threads_do_not_change_the_result() {
    let mut rng = Rng(7);
    let m = 3;
    let leaves = [40u32, 60, 1000];
    let hierarchies: Vec<Hierarchy> = leaves
        .iter()
        .map(|&l| random_hierarchy(&mut rng, l, 3))
        .collect();
    let keys: Vec<Vec<f64>> = leaves
        .iter()
        .map(|&l| (0..l).map(|_| rng.below(500) as f64).collect())
        .collect();
    let mut seen = std::collections::BTreeSet::new();
    let mut tuples = Vec::new();
    let mut codes = Vec::new();
    while codes.len() < 30_000 {
        let row: Vec<u32> = leaves
            .iter()
            .map(|&l| rng.below(u64::from(l)) as u32)
            .collect();
        let code = rng.below(5) as u32;
        let mut key = row.clone();
        key.push(code);
        if seen.insert(key) {
            tuples.extend_from_slice(&row);
            codes.push(code);
        }
    }
    let n = codes.len();
    let counts: Vec<u64> = (0..n).map(|_| 1 + rng.below(3)).collect();
    let mut global = vec![0u64; 5];
    for (&c, &w) in codes.iter().zip(&counts) {
        global[c as usize] += w;
    }
    for with_models in [false, true] {
        let case = Instance {
            hierarchies: hierarchies.clone(),
            tuples: tuples.clone(),
            counts: counts.clone(),
            keys: keys.clone(),
            spans: vec![500.0; m],
            sensitive: with_models.then(|| (codes.clone(), distinct(2, &global))),
            k: 3,
            stop: 0,
        };
        let pool = |threads| {
            rayon::ThreadPoolBuilder::new()
                .num_threads(threads)
                .build()
                .unwrap()
        };
        let one = pool(1).install(|| case.run().unwrap());
        let two = pool(2).install(|| case.run().unwrap());
        assert_eq!(one, two);
        assert_eq!(Some(one.part_of_tuple.clone()), naive_parts(&case));
        assert!(one.parts > 1000);
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(1500))]

    #[test]
    fn mondrian_matches_the_naive_rule(seed in any::<u64>()) {
        let case = instance(seed);
        let result = case.run();
        let Some(expected) = naive_parts(&case) else {
            let err = result.unwrap_err();
            prop_assert!(err.to_string().contains("as a whole violates"));
            return Ok(());
        };
        let partition = result.unwrap();
        prop_assert_eq!(&partition.part_of_tuple, &expected);
        check_partition(&case, &partition)?;
        // Permuting the input permutes the parts of the tuples and changes nothing else.
        let (other, order) = shuffled(&case, seed);
        let moved = other.run().unwrap();
        prop_assert_eq!(moved.parts, partition.parts);
        prop_assert_eq!(&moved.rows, &partition.rows);
        prop_assert_eq!(&moved.levels, &partition.levels);
        for (i, &t) in order.iter().enumerate() {
            prop_assert_eq!(moved.part_of_tuple[i], partition.part_of_tuple[t]);
        }
    }
}

#[test]
fn set_attributes_are_measured_by_their_distinct_values() {
    use kanon_core::mondrian::mondrian_with_sets;
    // a: values at leaf positions 0 and 3 (wide extent, 2 values); b: 0, 1, 2 (3 values).
    let tuples = [0, 0, 3, 1, 0, 2, 3, 0, 0, 1, 3, 2];
    let counts = [1; 6];
    let keys = vec![vec![0.0, 1.0, 2.0, 3.0], vec![0.0, 1.0, 2.0, 3.0]];
    let spans = [3.0, 3.0];
    let hierarchies = [Hierarchy::flat(4), Hierarchy::flat(4)];
    let options = MondrianOptions { k: 2, stop: 4 };
    let by_extent = mondrian(
        &tuples,
        2,
        &counts,
        &keys,
        &spans,
        &hierarchies,
        None,
        &options,
    )
    .unwrap();
    // The extent of a (3 / 3) beats b's (2 / 3): a is cut, its two values apart.
    assert_eq!(by_extent.part_of_tuple, vec![0, 1, 0, 1, 0, 1]);
    let by_values = mondrian_with_sets(
        &tuples,
        2,
        &counts,
        &keys,
        &spans,
        &[true, true],
        &hierarchies,
        None,
        &options,
    )
    .unwrap();
    // Counting values, b (2 / 3) beats a (1 / 3): b is cut, {0} | {1, 2}.
    assert_eq!(by_values.part_of_tuple, vec![0, 1, 1, 0, 1, 1]);
    assert!(mondrian_with_sets(
        &tuples,
        2,
        &counts,
        &keys,
        &spans,
        &[true],
        &hierarchies,
        None,
        &options
    )
    .is_err());
}
