//! The lattice search against brute force: every node of small random lattices grouped
//! and priced by a naive implementation of the definitions, row by row.

use std::collections::BTreeMap;

use kanon_core::emd::{Emd, GroundDistance};
use kanon_core::lattice::{
    evaluate_node, key_bits, optimal, optimal_keys, optimal_with, unpack_keys, LatticeOptions,
    Metric, ModelInput, NO_LABEL,
};
use kanon_core::models::{LDiversity, PrivacyModels};
use kanon_core::Hierarchy;
use proptest::prelude::*;

mod common;

use common::{random_hierarchy, Rng};

#[derive(Debug, Clone)]
struct Instance {
    hierarchies: Vec<Hierarchy>,
    tuples: Vec<u32>,
    counts: Vec<u64>,
    options: LatticeOptions,
    models: PrivacyModels,
    sensitive: Sensitive,
    population: Population,
}

/// Sensitive entries (tuple, code, rows) and the number of codes.
type Sensitive = (Vec<u32>, Vec<u32>, Vec<u64>, usize);
/// Population label paths and their rows.
type Population = (Vec<u32>, Vec<u64>);

impl Instance {
    fn input(&self) -> ModelInput<'_> {
        ModelInput {
            models: self.models.clone(),
            sensitive_tuples: &self.sensitive.0,
            sensitive_codes: &self.sensitive.1,
            sensitive_counts: &self.sensitive.2,
            sensitive_values: self.sensitive.3,
            population_paths: &self.population.0,
            population_counts: &self.population.1,
        }
    }
}

/// Random privacy models (or none), the sensitive entries and a population holding
/// every table row.
fn random_models(
    rng: &mut Rng,
    hierarchies: &[Hierarchy],
    tuples: &[u32],
    counts: &[u64],
) -> (PrivacyModels, Sensitive, Population) {
    let m = hierarchies.len();
    let mut models = PrivacyModels::default();
    if rng.below(2) == 0 {
        return (
            models,
            (Vec::new(), Vec::new(), Vec::new(), 0),
            (Vec::new(), Vec::new()),
        );
    }
    let values = 1 + rng.below(4) as u32;
    match rng.below(4) {
        0 => models.l_diversity = Some(LDiversity::Distinct(1 + rng.below(3))),
        1 => {
            models.l_diversity = Some(LDiversity::Entropy(
                [1.0, 1.5, 2.0, 2.5][rng.below(4) as usize],
            ))
        }
        2 => {
            models.l_diversity = Some(LDiversity::Recursive {
                c: [0.5, 1.0, 2.0, 3.0][rng.below(4) as usize],
                l: 1 + rng.below(3),
            });
        }
        _ => {}
    }
    if rng.below(2) == 0 {
        let distance = match rng.below(3) {
            0 => GroundDistance::Equal,
            1 => GroundDistance::Ordered,
            _ => {
                let height = 1 + rng.below(2) as usize;
                GroundDistance::Hierarchical(random_hierarchy(rng, values, height))
            }
        };
        models.t_closeness = Some(([0.1, 0.3, 0.5][rng.below(3) as usize], distance));
    }
    if rng.below(3) == 0 {
        let alpha = [0.4, 0.6, 0.8, 1.0][rng.below(4) as usize];
        models.thresholds.push(("alpha".to_owned(), alpha));
    }
    if models.is_empty() || rng.below(3) == 0 {
        let lo = [0.0, 0.1, 0.3][rng.below(3) as usize];
        models.delta_presence = Some((lo, [0.5, 0.8, 1.0][rng.below(3) as usize]));
    }
    // Sensitive entries: every row of a tuple draws a code.
    let mut per: BTreeMap<(u32, u32), u64> = BTreeMap::new();
    for (t, &c) in counts.iter().enumerate() {
        for _ in 0..c {
            *per.entry((t as u32, rng.below(u64::from(values)) as u32))
                .or_insert(0) += 1;
        }
    }
    let sensitive = (
        per.keys().map(|k| k.0).collect(),
        per.keys().map(|k| k.1).collect(),
        per.values().copied().collect(),
        values as usize,
    );
    // Population: the table's rows, some more of the same tuples, and rows of other
    // leaves (some unseen by the table at level 0).
    let path = |row: &[u32], unseen: bool| -> Vec<u32> {
        let mut p = Vec::new();
        for (j, h) in hierarchies.iter().enumerate() {
            for l in 0..=h.height() {
                p.push(if l == 0 && unseen {
                    NO_LABEL
                } else {
                    h.generalize(l, row[j])
                });
            }
        }
        p
    };
    let mut paths = Vec::new();
    let mut pop_counts = Vec::new();
    for (row, &c) in tuples.chunks_exact(m).zip(counts) {
        paths.extend(path(row, false));
        pop_counts.push(c + rng.below(3));
    }
    for _ in 0..rng.below(4) {
        let row: Vec<u32> = hierarchies
            .iter()
            .map(|h| rng.below(h.leaves() as u64) as u32)
            .collect();
        paths.extend(path(&row, rng.below(3) == 0));
        pop_counts.push(1 + rng.below(3));
    }
    (models, sensitive, (paths, pop_counts))
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
    let (models, sensitive, population) = random_models(&mut rng, &hierarchies, &tuples, &counts);
    Instance {
        hierarchies,
        tuples,
        counts,
        options,
        models,
        sensitive,
        population,
    }
}

/// Naive model check of one class: its sensitive histogram, rows and population.
fn naive_ok(case: &Instance, hist: &BTreeMap<u32, u64>, size: u64, pop: u64) -> bool {
    let models = &case.models;
    let hist: Vec<(u32, u64)> = hist
        .iter()
        .filter(|(_, &c)| c > 0)
        .map(|(&v, &c)| (v, c))
        .collect();
    let n = size as f64;
    match models.l_diversity {
        Some(LDiversity::Distinct(l)) if (hist.len() as u64) < l => return false,
        Some(LDiversity::Entropy(l)) => {
            let h: f64 = hist
                .iter()
                .map(|&(_, c)| -(c as f64 / n) * (c as f64 / n).ln())
                .sum();
            if h < l.ln() - 1e-12 {
                return false;
            }
        }
        Some(LDiversity::Recursive { c, l }) => {
            let mut r: Vec<u64> = hist.iter().map(|&(_, x)| x).collect();
            r.sort_unstable_by(|a, b| b.cmp(a));
            let tail: u64 = r.iter().skip(l as usize - 1).sum();
            if tail == 0 || r[0] as f64 >= c * tail as f64 {
                return false;
            }
        }
        _ => {}
    }
    if let Some((t, distance)) = &models.t_closeness {
        let values = case.sensitive.3;
        let mut global = vec![0u64; values];
        for (&code, &c) in case.sensitive.1.iter().zip(&case.sensitive.2) {
            global[code as usize] += c;
        }
        let total: u64 = global.iter().sum();
        let q: Vec<f64> = global.iter().map(|&g| g as f64 / total as f64).collect();
        let mut p = vec![0.0; values];
        for &(v, c) in &hist {
            p[v as usize] = c as f64 / n;
        }
        let d = match distance {
            GroundDistance::Equal => {
                0.5 * p.iter().zip(&q).map(|(a, b)| (a - b).abs()).sum::<f64>()
            }
            GroundDistance::Ordered => {
                let (mut acc, mut sum) = (0.0, 0.0);
                for i in 0..values {
                    acc += p[i] - q[i];
                    sum += acc.abs();
                }
                if values > 1 {
                    sum / (values - 1) as f64
                } else {
                    0.0
                }
            }
            GroundDistance::Hierarchical(_) => Emd::new(distance, &global).unwrap().distance(&hist),
        };
        if d > t + 1e-12 {
            return false;
        }
    }
    for (name, alpha) in &models.thresholds {
        assert_eq!(name, "alpha");
        let top = hist.iter().map(|&(_, c)| c).max().unwrap_or(0);
        if size == 0 || top as f64 > alpha * n + 1e-9 {
            return false;
        }
    }
    if let Some((lo, hi)) = models.delta_presence {
        if pop == 0 {
            return false;
        }
        let delta = size as f64 / pop as f64;
        if delta < lo - 1e-12 || delta > hi + 1e-12 {
            return false;
        }
    }
    true
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
    let fails = naive_fails(case, levels);
    let small = |g: &Vec<u32>| fails[g];
    let suppressed: u64 = classes
        .iter()
        .filter(|(g, _)| fails[*g])
        .map(|(_, &s)| s)
        .sum();
    let star_ok = {
        let mut hist: BTreeMap<u32, u64> = BTreeMap::new();
        for ((&t, &code), &c) in case
            .sensitive
            .0
            .iter()
            .zip(&case.sensitive.1)
            .zip(&case.sensitive.2)
        {
            let row = &case.tuples[t as usize * m..(t as usize + 1) * m];
            if fails[&gen(row)] {
                *hist.entry(code).or_insert(0) += c;
            }
        }
        let population: u64 = case.population.1.iter().sum();
        suppressed >= o.k
            && (case.models.is_empty() || naive_ok(case, &hist, suppressed, population))
    };
    let feasible =
        suppressed <= o.max_suppressed && (suppressed == 0 || !o.keep_suppressed || star_ok);
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
            .iter()
            .map(|(g, &s)| {
                if fails[g] {
                    nf * s as f64
                } else {
                    (s * s) as f64
                }
            })
            .sum(),
        Metric::Aecs => {
            let kept = classes.keys().filter(|g| !fails[*g]).count() as f64;
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

/// Per class of a node: whether it fails k or a model.
fn naive_fails(case: &Instance, levels: &[u32]) -> BTreeMap<Vec<u32>, bool> {
    let m = case.hierarchies.len();
    let gen = |row: &[u32]| -> Vec<u32> {
        (0..m)
            .map(|j| case.hierarchies[j].generalize(levels[j] as usize, row[j]))
            .collect()
    };
    let mut classes: BTreeMap<Vec<u32>, (u64, BTreeMap<u32, u64>, u64)> = BTreeMap::new();
    for (row, &c) in case.tuples.chunks_exact(m).zip(&case.counts) {
        classes.entry(gen(row)).or_default().0 += c;
    }
    for ((&t, &code), &c) in case
        .sensitive
        .0
        .iter()
        .zip(&case.sensitive.1)
        .zip(&case.sensitive.2)
    {
        let row = &case.tuples[t as usize * m..(t as usize + 1) * m];
        *classes
            .get_mut(&gen(row))
            .unwrap()
            .1
            .entry(code)
            .or_insert(0) += c;
    }
    let stride: usize = case.hierarchies.iter().map(|h| h.height() + 1).sum();
    for (path, &c) in case
        .population
        .0
        .chunks_exact(stride.max(1))
        .zip(&case.population.1)
    {
        let mut key = Vec::new();
        let mut offset = 0;
        for (j, h) in case.hierarchies.iter().enumerate() {
            key.push(path[offset + levels[j] as usize]);
            offset += h.height() + 1;
        }
        if let Some(class) = classes.get_mut(&key) {
            class.2 += c;
        }
    }
    classes
        .into_iter()
        .map(|(g, (size, hist, pop))| {
            let fails = size < case.options.k
                || (!case.models.is_empty() && !naive_ok(case, &hist, size, pop));
            (g, fails)
        })
        .collect()
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
    #![proptest_config(ProptestConfig::with_cases(5000))]

    #[test]
    fn the_search_finds_the_brute_force_optimum(seed in any::<u64>()) {
        let case = instance(seed);
        let m = case.hierarchies.len();
        let evals: Vec<(Vec<u32>, (bool, u64, f64))> =
            nodes(&case).into_iter().map(|l| { let e = naive(&case, &l); (l, e) }).collect();
        // The kernel's evaluation of every node agrees with the naive one.
        for (levels, (feasible, suppressed, cost)) in &evals {
            let e = evaluate_node(&case.tuples, m, &case.counts, &case.hierarchies, levels, &case.options, &case.input())
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
        let found = optimal_with(&case.tuples, m, &case.counts, &case.hierarchies, &case.options, &case.input());
        // The same search over the tuples' packed keys finds the same node.
        let (low, high) = pack(&case.tuples, &case.hierarchies);
        let by_keys = optimal_keys(&low, &high, &case.counts, &case.hierarchies, &case.options, &case.input());
        match (&found, &by_keys) {
            (Ok(a), Ok(b)) => {
                prop_assert_eq!(&a.levels, &b.levels);
                prop_assert_eq!(&a.suppressed, &b.suppressed);
            }
            (Err(a), Err(b)) => prop_assert_eq!(a.to_string(), b.to_string()),
            (a, b) => prop_assert!(false, "codes {:?}, keys {:?}", a, b),
        }
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
                let fails = naive_fails(&case, &opt.levels);
                let expected: Vec<bool> =
                    case.tuples.chunks_exact(m).map(|row| fails[&gen(row)]).collect();
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

#[test]
fn delta_presence_with_a_lower_bound_is_not_monotone() {
    // One attribute, leaves 0..3 under one root. The table holds leaf 0 twice; the
    // population holds leaf 0 five times and leaf 3 (absent from the table) four times.
    let h = Hierarchy::try_from_levels(&[&[0, 1, 2, 3], &[0, 0, 0, 0]]).unwrap();
    let options = LatticeOptions {
        k: 1,
        max_suppressed: 0,
        keep_suppressed: true,
        min_level: vec![0],
        max_level: vec![1],
        weights: vec![1.0],
        metric: Metric::Height,
        node_loss: Vec::new(),
    };
    let input = ModelInput {
        models: PrivacyModels {
            delta_presence: Some((0.3, 0.8)),
            ..PrivacyModels::default()
        },
        population_paths: &[0, 0, NO_LABEL, 0],
        population_counts: &[5, 4],
        ..ModelInput::default()
    };
    // Level 0: 2 / 5 = 0.4 holds; level 1 (the root): 2 / 9 is below 0.3.
    let best = optimal_with(&[0], 1, &[2], &[h], &options, &input).unwrap();
    assert_eq!(best.levels, vec![0]);
    assert_eq!(best.eval.suppressed, 0);
}

#[test]
fn keys_wider_than_64_bits_give_the_brute_force_optimum() {
    // Five attributes of 8192 leaves need 65 bits per packed key (the u128 path).
    let mut rng = Rng(7);
    let leaves = 8192u32;
    let hierarchy = |rng: &mut Rng| {
        let shuffle: Vec<u32> = (0..leaves).map(|_| rng.below(64) as u32).collect();
        let mut dense = BTreeMap::new();
        let mid: Vec<u32> = shuffle
            .iter()
            .map(|&g| {
                let next = dense.len() as u32;
                *dense.entry(g).or_insert(next)
            })
            .collect();
        let leaf_codes: Vec<u32> = (0..leaves).collect();
        Hierarchy::try_from_levels(&[&leaf_codes, &mid, &vec![0; leaves as usize]]).unwrap()
    };
    let hierarchies: Vec<Hierarchy> = (0..5).map(|_| hierarchy(&mut rng)).collect();
    let mut tuples = Vec::new();
    let mut counts = Vec::new();
    for _ in 0..150 {
        // Few distinct values per attribute, so that classes form below the top; 0 and
        // 4096 differ only in the bit that a 64-bit key would lose.
        for _ in 0..5 {
            tuples.push([0, 4096, 8191][rng.below(3) as usize]);
        }
        counts.push(1 + rng.below(3));
    }
    for (metric, max_suppressed) in [
        (Metric::Height, 0),
        (Metric::Loss, 20),
        (Metric::DmStar, 40),
    ] {
        let case = Instance {
            hierarchies: hierarchies.clone(),
            tuples: tuples.clone(),
            counts: counts.clone(),
            options: LatticeOptions {
                k: 3,
                max_suppressed,
                keep_suppressed: true,
                min_level: vec![0; 5],
                max_level: vec![2; 5],
                weights: vec![1.0; 5],
                metric,
                node_loss: Vec::new(),
            },
            models: PrivacyModels::default(),
            sensitive: (Vec::new(), Vec::new(), Vec::new(), 0),
            population: (Vec::new(), Vec::new()),
        };
        let best = nodes(&case)
            .into_iter()
            .filter_map(|l| {
                let (feasible, _, cost) = naive(&case, &l);
                feasible.then_some((cost, l))
            })
            .min_by(|a, b| a.0.total_cmp(&b.0))
            .unwrap();
        let found = optimal(
            &case.tuples,
            5,
            &case.counts,
            &case.hierarchies,
            &case.options,
        )
        .unwrap();
        assert!(
            close(found.eval.cost, best.0),
            "{metric:?}: {} vs {}",
            found.eval.cost,
            best.0
        );
    }
}

/// Tuples of leaf codes packed as [`key_bits`] lays them out, in low and high halves.
fn pack(tuples: &[u32], hierarchies: &[Hierarchy]) -> (Vec<u64>, Vec<u64>) {
    let bits = key_bits(hierarchies).unwrap();
    let (mut low, mut high) = (Vec::new(), Vec::new());
    for row in tuples.chunks(hierarchies.len()) {
        let mut key = 0u128;
        let mut shift = 0;
        for (&code, &b) in row.iter().zip(&bits) {
            key |= u128::from(code) << shift;
            shift += b;
        }
        low.push(key as u64);
        high.push((key >> 64) as u64);
    }
    (low, high)
}

#[test]
fn the_search_over_packed_keys_reads_them_as_their_codes() {
    // 96-bit keys (128-bit classes): leaves 8192, 3, 1 and 70000, three times; ages of a
    // 2-level hierarchy make the search generalize.
    let split = |leaves: u32| {
        let codes: Vec<u32> = (0..leaves).collect();
        let halves: Vec<u32> = (0..leaves).map(|c| c * 2 / leaves.max(1)).collect();
        Hierarchy::try_from_levels(&[&codes, &halves, &vec![0; leaves as usize]]).unwrap()
    };
    let four: Vec<Hierarchy> = [8192, 3, 1, 70000].into_iter().map(split).collect();
    let hierarchies: Vec<Hierarchy> = (0..3).flat_map(|_| four.clone()).collect();
    let m = hierarchies.len();
    let mut rng = Rng(5);
    let tuples: Vec<u32> = (0..300)
        .flat_map(|_| [8192u32, 3, 1, 70000].repeat(3))
        .map(|leaves| rng.below(u64::from(leaves)) as u32)
        .collect();
    let counts: Vec<u64> = (0..300).map(|t| 1 + t % 3).collect();
    let options = LatticeOptions {
        k: 4,
        max_suppressed: 40,
        keep_suppressed: true,
        min_level: vec![0; m],
        max_level: vec![2; m],
        weights: vec![1.0; m],
        metric: Metric::Loss,
        node_loss: Vec::new(),
    };
    let input = ModelInput::default();
    let (low, high) = pack(&tuples, &hierarchies);
    let by_codes = optimal_with(&tuples, m, &counts, &hierarchies, &options, &input).unwrap();
    let by_keys = optimal_keys(&low, &high, &counts, &hierarchies, &options, &input).unwrap();
    assert_eq!(by_keys.levels, by_codes.levels);
    assert_eq!(by_keys.eval.cost.to_bits(), by_codes.eval.cost.to_bits());
    assert_eq!(by_keys.suppressed, by_codes.suppressed);
    assert!(by_keys.eval.suppressed > 0, "{:?}", by_keys.eval);
    // A code past its leaves (3 in the 2 bits of a 3-leaf attribute), bits above the
    // codes and halves of unequal length are errors.
    let err = optimal_keys(&[3 << 13], &[0], &[1], &hierarchies, &options, &input).unwrap_err();
    assert!(
        err.to_string()
            .contains("code 3 in attribute 1, which has 3 leaves"),
        "{err}"
    );
    let err = optimal_keys(&[0], &[1 << 32], &[1], &hierarchies, &options, &input).unwrap_err();
    assert!(
        err.to_string().contains("bits set above its 96 bits"),
        "{err}"
    );
    let err = optimal_keys(&low, &high[1..], &counts, &hierarchies, &options, &input).unwrap_err();
    assert!(err.to_string().contains("high"), "{err}");
}

#[test]
fn packed_keys_unpack_to_their_codes() {
    // Leaves 8192, 3, 1 and 70000 per attribute: 13 + 2 + 0 + 17 bits; five times that
    // is 160 bits, too many; three times is 96 bits, reaching into the high word.
    let flat = |leaves: u32| {
        let codes: Vec<u32> = (0..leaves).collect();
        Hierarchy::try_from_levels(&[&codes, &vec![0; leaves as usize]]).unwrap()
    };
    let four: Vec<Hierarchy> = [8192, 3, 1, 70000].into_iter().map(flat).collect();
    let hierarchies: Vec<Hierarchy> = (0..3).flat_map(|_| four.clone()).collect();
    let bits = key_bits(&hierarchies).unwrap();
    assert_eq!(bits, [13, 2, 0, 17].repeat(3));
    let mut rng = Rng(11);
    let tuples: Vec<u32> = (0..200)
        .flat_map(|_| [8192u32, 3, 1, 70000].repeat(3))
        .map(|leaves| rng.below(u64::from(leaves)) as u32)
        .collect();
    let (low, high) = pack(&tuples, &hierarchies);
    assert!(high.iter().any(|&h| h != 0));
    assert_eq!(unpack_keys(&low, &high, &hierarchies).unwrap(), tuples);
    let err = unpack_keys(&low, &high[1..], &hierarchies).unwrap_err();
    assert!(err.to_string().contains("high"), "{err}");
    let err = unpack_keys(&[0], &[1 << 32], &hierarchies).unwrap_err();
    assert!(
        err.to_string().contains("bits set above its 96 bits"),
        "{err}"
    );
    let five: Vec<Hierarchy> = (0..5).flat_map(|_| four.clone()).collect();
    let err = unpack_keys(&[0], &[0], &five).unwrap_err();
    assert!(
        err.to_string()
            .contains("pack a tuple into 128 bits (160 bits)"),
        "{err}"
    );
}
