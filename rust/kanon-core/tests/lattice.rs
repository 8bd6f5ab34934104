//! The lattice search against brute force: every node of small random lattices grouped
//! and priced by a naive implementation of the definitions, row by row.

use std::collections::BTreeMap;

use kanon_core::lattice::{evaluate_node, optimal, LatticeOptions, Metric};
use kanon_core::Hierarchy;
use proptest::prelude::*;

/// splitmix64, for building random instances from one proptest seed.
struct Rng(u64);

impl Rng {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// A random hierarchy: `leaves` leaves, `height` levels above them, each level a random
/// coarsening of the one below, the top a single root.
fn random_hierarchy(rng: &mut Rng, leaves: u32, height: usize) -> Hierarchy {
    let mut levels: Vec<Vec<u32>> = vec![(0..leaves).collect()];
    for l in 1..=height {
        let below = &levels[l - 1];
        let width = below.iter().max().map_or(0, |&x| x + 1);
        let groups = if l == height {
            1
        } else {
            1 + rng.below(u64::from(width)) as u32
        };
        // Map every label of the level below to a group; relabel densely in order.
        let map: Vec<u32> = (0..width)
            .map(|_| rng.below(u64::from(groups)) as u32)
            .collect();
        let mut dense: BTreeMap<u32, u32> = BTreeMap::new();
        let column: Vec<u32> = below
            .iter()
            .map(|&c| {
                let g = map[c as usize];
                let next = dense.len() as u32;
                *dense.entry(g).or_insert(next)
            })
            .collect();
        levels.push(column);
    }
    let views: Vec<&[u32]> = levels.iter().map(Vec::as_slice).collect();
    Hierarchy::try_from_levels(&views).unwrap()
}

#[derive(Debug, Clone)]
struct Instance {
    hierarchies: Vec<Hierarchy>,
    tuples: Vec<u32>,
    counts: Vec<u64>,
    options: LatticeOptions,
}

const METRICS: [Metric; 7] = [
    Metric::Loss,
    Metric::Height,
    Metric::Nue,
    Metric::NueNonMonotonic,
    Metric::Dm,
    Metric::DmStar,
    Metric::Aecs,
];

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
    let n = 1 + rng.below(14) as usize;
    let mut tuples = Vec::new();
    let mut counts = Vec::new();
    for _ in 0..n {
        for h in &hierarchies {
            tuples.push(rng.below(h.leaves() as u64) as u32);
        }
        counts.push(1 + rng.below(4));
    }
    let rows: u64 = counts.iter().sum();
    let mut min_level = Vec::new();
    let mut max_level = Vec::new();
    for h in &hierarchies {
        let height = h.height() as u64;
        let (a, b) = (rng.below(height + 1), rng.below(height + 1));
        // Usually the whole range, sometimes a narrower one.
        if rng.below(3) == 0 {
            min_level.push(a.min(b) as u32);
            max_level.push(a.max(b) as u32);
        } else {
            min_level.push(0);
            max_level.push(height as u32);
        }
    }
    let weights = (0..m)
        .map(|_| [1.0, 2.0, 0.5][rng.below(3) as usize])
        .collect();
    let metric = METRICS[rng.below(METRICS.len() as u64) as usize];
    // Sometimes a given per-label loss (the square of the leaf-count NCP, monotone).
    let node_loss = if metric == Metric::Loss && rng.below(2) == 0 {
        hierarchies
            .iter()
            .map(|h| {
                (0..=h.height())
                    .map(|l| {
                        (0..h.width(l))
                            .map(|label| squared_ncp(h, l, label))
                            .collect()
                    })
                    .collect()
            })
            .collect()
    } else {
        Vec::new()
    };
    let options = LatticeOptions {
        k: 1 + rng.below(5),
        max_suppressed: if rng.below(3) == 0 {
            0
        } else {
            rng.below(rows + 1)
        },
        keep_suppressed: rng.below(2) == 0,
        min_level,
        max_level,
        weights,
        metric,
        node_loss,
    };
    Instance {
        hierarchies,
        tuples,
        counts,
        options,
    }
}

/// `((leaves under the label − 1) / (leaves − 1))²`.
fn squared_ncp(h: &Hierarchy, level: usize, label: u32) -> f64 {
    let under = (0..h.leaves() as u32)
        .filter(|&x| h.generalize(level, x) == label)
        .count();
    ((under - 1) as f64 / (h.leaves().max(2) - 1) as f64).powi(2)
}

/// Naive evaluation of a node straight from the definitions: (feasible, suppressed, cost).
fn naive(case: &Instance, levels: &[u32]) -> (bool, u64, f64) {
    let m = case.hierarchies.len();
    let o = &case.options;
    let gen = |row: &[u32]| -> Vec<u32> {
        (0..m)
            .map(|j| case.hierarchies[j].generalize(levels[j] as usize, row[j]))
            .collect()
    };
    let mut classes: BTreeMap<Vec<u32>, u64> = BTreeMap::new();
    for (row, &c) in case.tuples.chunks_exact(m).zip(&case.counts) {
        *classes.entry(gen(row)).or_insert(0) += c;
    }
    let small = |g: &Vec<u32>| classes[g] < o.k;
    let suppressed: u64 = classes
        .iter()
        .filter(|(_, &s)| s < o.k)
        .map(|(_, &s)| s)
        .sum();
    let feasible = suppressed <= o.max_suppressed
        && (suppressed == 0 || !o.keep_suppressed || suppressed >= o.k);
    let n: u64 = case.counts.iter().sum();
    let (nf, sf) = (n as f64, suppressed as f64);
    let total_w: f64 = o.weights.iter().sum();
    // Rows as (leaf tuple, generalized tuple), repeated by count.
    let rows: Vec<(Vec<u32>, Vec<u32>)> = case
        .tuples
        .chunks_exact(m)
        .zip(&case.counts)
        .flat_map(|(row, &c)| std::iter::repeat_n((row.to_vec(), gen(row)), c as usize))
        .collect();
    let leaves_under = |j: usize, l: usize, label: u32| -> usize {
        let h = &case.hierarchies[j];
        (0..h.leaves() as u32)
            .filter(|&x| h.generalize(l, x) == label)
            .count()
    };
    let count_value = |j: usize, v: u32| rows.iter().filter(|(r, _)| r[j] == v).count() as f64;
    let count_label =
        |j: usize, label: u32| rows.iter().filter(|(_, g)| g[j] == label).count() as f64;
    let cost = match o.metric {
        Metric::Loss | Metric::Height => {
            let mut sum = 0.0;
            for (_, g) in &rows {
                for j in 0..m {
                    let h = &case.hierarchies[j];
                    let w = o.weights[j];
                    sum += if small(g) {
                        w
                    } else if o.metric == Metric::Loss && !o.node_loss.is_empty() {
                        w * squared_ncp(h, levels[j] as usize, g[j])
                    } else if o.metric == Metric::Loss {
                        let under = leaves_under(j, levels[j] as usize, g[j]);
                        w * (under - 1) as f64 / (h.leaves().max(2) - 1) as f64
                    } else {
                        w * f64::from(levels[j]) / h.height() as f64
                    };
                }
            }
            if o.metric == Metric::Loss {
                sum / (nf * total_w)
            } else {
                sum
            }
        }
        Metric::Nue | Metric::NueNonMonotonic => {
            let mut sum = 0.0;
            for (r, g) in &rows {
                for j in 0..m {
                    sum += o.weights[j] * (count_label(j, g[j]) / count_value(j, r[j])).log2();
                }
            }
            if o.metric == Metric::NueNonMonotonic && suppressed > 0 {
                for j in 0..m {
                    let mut per: BTreeMap<u32, f64> = BTreeMap::new();
                    for (_, g) in rows.iter().filter(|(_, g)| small(g)) {
                        *per.entry(g[j]).or_insert(0.0) += 1.0;
                    }
                    sum += o.weights[j] * per.values().map(|&c| c * (sf / c).log2()).sum::<f64>();
                }
            }
            sum
        }
        Metric::DmStar => classes.values().map(|&s| (s * s) as f64).sum(),
        Metric::Dm => classes
            .values()
            .map(|&s| {
                if s < o.k {
                    nf * s as f64
                } else {
                    (s * s) as f64
                }
            })
            .sum(),
        Metric::Aecs => {
            let kept = classes.values().filter(|&&s| s >= o.k).count() as f64;
            let (released, groups) = if o.keep_suppressed {
                (nf, kept + if suppressed > 0 { 1.0 } else { 0.0 })
            } else {
                (nf - sf, kept)
            };
            if groups == 0.0 {
                0.0
            } else {
                released / groups
            }
        }
    };
    (feasible, suppressed, cost)
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() <= 1e-9 * a.abs().max(b.abs()).max(1.0)
}

/// Every level vector within the bounds.
fn nodes(case: &Instance) -> Vec<Vec<u32>> {
    let o = &case.options;
    let mut all = vec![Vec::new()];
    for j in 0..case.hierarchies.len() {
        all = all
            .into_iter()
            .flat_map(|prefix: Vec<u32>| {
                (o.min_level[j]..=o.max_level[j]).map(move |l| {
                    let mut next = prefix.clone();
                    next.push(l);
                    next
                })
            })
            .collect();
    }
    all
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(2000))]

    #[test]
    fn the_search_finds_the_brute_force_optimum(seed in any::<u64>()) {
        let case = instance(seed);
        let m = case.hierarchies.len();
        let evals: Vec<(Vec<u32>, (bool, u64, f64))> =
            nodes(&case).into_iter().map(|l| { let e = naive(&case, &l); (l, e) }).collect();
        // The kernel's evaluation of every node agrees with the naive one.
        for (levels, (feasible, suppressed, cost)) in &evals {
            let e = evaluate_node(&case.tuples, m, &case.counts, &case.hierarchies, levels, &case.options)
                .unwrap();
            prop_assert_eq!(e.feasible, *feasible, "levels {:?}", levels);
            prop_assert_eq!(e.suppressed, *suppressed);
            prop_assert!(close(e.cost, *cost), "levels {:?}: {} vs naive {}", levels, e.cost, cost);
        }
        let best = evals
            .iter()
            .filter(|(_, (f, _, _))| *f)
            .map(|(l, (_, _, c))| (l.clone(), *c))
            .fold(None::<(Vec<u32>, f64)>, |acc, (l, c)| match acc {
                None => Some((l, c)),
                Some((bl, bc)) => {
                    let tie = close(c, bc);
                    let key = |x: &Vec<u32>| (x.iter().sum::<u32>(), x.clone());
                    if (!tie && c < bc) || (tie && key(&l) < key(&bl)) {
                        Some((l, c))
                    } else {
                        Some((bl, bc))
                    }
                }
            });
        let found = optimal(&case.tuples, m, &case.counts, &case.hierarchies, &case.options);
        match (best, found) {
            (None, Err(e)) => prop_assert!(e.to_string().contains("no generalization")),
            (Some((levels, cost)), Ok(opt)) => {
                prop_assert!(close(opt.eval.cost, cost), "{} vs brute force {}", opt.eval.cost, cost);
                prop_assert!(opt.eval.feasible);
                prop_assert_eq!(&opt.levels, &levels);
                // The suppressed tuples are exactly those of classes below k.
                let gen = |row: &[u32]| -> Vec<u32> {
                    (0..m).map(|j| case.hierarchies[j].generalize(opt.levels[j] as usize, row[j])).collect()
                };
                let mut sizes: BTreeMap<Vec<u32>, u64> = BTreeMap::new();
                for (row, &c) in case.tuples.chunks_exact(m).zip(&case.counts) {
                    *sizes.entry(gen(row)).or_insert(0) += c;
                }
                let expected: Vec<bool> =
                    case.tuples.chunks_exact(m).map(|row| sizes[&gen(row)] < case.options.k).collect();
                prop_assert_eq!(&opt.suppressed, &expected);
            }
            (best, found) => prop_assert!(false, "brute force {:?}, search {:?}", best, found),
        }
    }
}

#[test]
fn adult_like_example_with_suppression() {
    // Ages 20..29 (intervals of 5, then *) and sex; the outlier age 29 alone.
    let age = Hierarchy::try_from_levels(&[
        &[0, 1, 2, 3, 4, 5, 6, 7, 8, 9],
        &[0, 0, 0, 0, 0, 1, 1, 1, 1, 1],
        &[0; 10],
    ])
    .unwrap();
    let sex = Hierarchy::flat(2);
    let tuples = [0, 0, 1, 0, 2, 0, 3, 1, 4, 1, 9, 0];
    let counts = [2, 2, 2, 2, 2, 1];
    let mut options = LatticeOptions {
        k: 2,
        max_suppressed: 0,
        keep_suppressed: false,
        min_level: vec![0, 0],
        max_level: vec![2, 1],
        weights: vec![1.0, 1.0],
        metric: Metric::Loss,
        node_loss: Vec::new(),
    };
    let strict = optimal(&tuples, 2, &counts, &[age.clone(), sex.clone()], &options).unwrap();
    assert_eq!(strict.eval.suppressed, 0);
    options.max_suppressed = 1;
    let loose = optimal(&tuples, 2, &counts, &[age.clone(), sex.clone()], &options).unwrap();
    // Suppressing the one row of age 29 keeps everything else exact.
    assert_eq!(loose.levels, vec![0, 0]);
    assert_eq!(loose.eval.suppressed, 1);
    assert_eq!(
        loose.suppressed,
        vec![false, false, false, false, false, true]
    );
    assert!(loose.eval.cost < strict.eval.cost);
    // Kept in the release, one suppressed row would be a class of one: not allowed.
    options.keep_suppressed = true;
    let kept = optimal(&tuples, 2, &counts, &[age, sex], &options).unwrap();
    assert_eq!(kept.eval.suppressed, 0);
}

#[test]
fn errors_name_the_problem() {
    let h = Hierarchy::flat(2);
    let options = LatticeOptions {
        k: 3,
        max_suppressed: 0,
        keep_suppressed: true,
        min_level: vec![0],
        max_level: vec![0],
        weights: vec![1.0],
        metric: Metric::Loss,
        node_loss: Vec::new(),
    };
    let err = optimal(&[0, 1], 1, &[1, 1], std::slice::from_ref(&h), &options).unwrap_err();
    assert!(
        err.to_string()
            .contains("no generalization satisfies k = 3"),
        "{err}"
    );
    let bad = LatticeOptions {
        max_level: vec![5],
        ..options.clone()
    };
    let err = optimal(&[0, 1], 1, &[1, 1], std::slice::from_ref(&h), &bad).unwrap_err();
    assert!(err.to_string().contains("max_level"), "{err}");
    let err = optimal(&[0, 7], 1, &[1, 1], std::slice::from_ref(&h), &options).unwrap_err();
    assert!(err.to_string().contains("code 7"), "{err}");
    let zero = LatticeOptions { k: 0, ..options };
    let err = optimal(&[0, 1], 1, &[1, 1], &[h], &zero).unwrap_err();
    assert!(err.to_string().contains("k must be at least 1"), "{err}");
}
