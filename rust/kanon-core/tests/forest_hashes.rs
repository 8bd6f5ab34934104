//! Fingerprints of the forest kernels' outputs on seeded inputs, so a restructuring can show
//! that every output stays bit-identical (`cargo test --test forest_hashes -- --nocapture`
//! prints one `HASH name value` line per output); the total is asserted against the one
//! recorded before the forest was restructured.

use kanon_core::forest::anonymize::{anonymize, ForestOptions};
use kanon_core::forest::blocked::blocked_forest;
use kanon_core::forest::cost::{CostModel, LevelCost};
use kanon_core::forest::decompose::{decompose, decompose_component, max_group_size};
use kanon_core::forest::extend::{extend, NEW};
use kanon_core::forest::improve::{group_levels, improve_with_stats, release_cost, repair, Effort};
use kanon_core::forest::neighbours::{
    build_forest, forest_groups, nearest_neighbours, nearest_neighbours_scan,
    nearest_neighbours_trie,
};
use kanon_core::Hierarchy;

/// FNV-1a of the `Debug` text of a value (`f64` prints round-trip exact).
fn fingerprint<T: std::fmt::Debug>(value: &T) -> u64 {
    let text = format!("{value:?}");
    text.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0100_0000_01b3)
    })
}

fn emit<T: std::fmt::Debug>(out: &mut Vec<(String, u64)>, name: String, value: &T) {
    out.push((name, fingerprint(value)));
}

/// A fixed LCG.
struct Lcg(u64);

impl Lcg {
    fn next(&mut self) -> u32 {
        self.0 = self
            .0
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (self.0 >> 33) as u32
    }
}

/// Binary splits of `leaves` leaves (a power of two) up to a root.
fn halves(leaves: u32) -> Hierarchy {
    let height = leaves.trailing_zeros();
    let levels: Vec<Vec<u32>> = (0..=height)
        .map(|l| (0..leaves).map(|x| x >> l).collect())
        .collect();
    let slices: Vec<&[u32]> = levels.iter().map(Vec::as_slice).collect();
    Hierarchy::try_from_levels(&slices).unwrap()
}

/// Leaves 0..12 in groups of three, then pairs of those groups, then a root.
fn uneven() -> Hierarchy {
    let l0: Vec<u32> = (0..12).collect();
    let l1: Vec<u32> = (0..12).map(|x| x / 3).collect();
    let l2: Vec<u32> = (0..12).map(|x| x / 6).collect();
    let l3: Vec<u32> = vec![0; 12];
    Hierarchy::try_from_levels(&[&l0, &l1, &l2, &l3]).unwrap()
}

/// One seeded case: distinct tuples over three attributes and their counts.
struct Case {
    name: String,
    tuples: Vec<u32>,
    counts: Vec<u64>,
}

const M: usize = 3;
const LEAVES: [u32; M] = [16, 12, 5];

fn case(name: &str, seed: u64, n: usize, skew: bool, clustered: bool) -> Case {
    let mut rng = Lcg(seed);
    let mut seen = std::collections::BTreeSet::new();
    let mut tuples = Vec::new();
    let mut counts = Vec::new();
    let mut tries = 0;
    while seen.len() < n && tries < 100_000 {
        tries += 1;
        let centre = rng.next() % 3;
        let row: Vec<u32> = LEAVES
            .iter()
            .map(|&l| {
                if clustered {
                    (centre * (l / 3) + rng.next() % 3).min(l - 1)
                } else {
                    rng.next() % l
                }
            })
            .collect();
        if seen.insert(row.clone()) {
            tuples.extend(row);
            let c = if skew && counts.is_empty() {
                u64::from(7 + rng.next() % 5)
            } else if rng.next() % 4 == 0 {
                u64::from(1 + rng.next() % 3)
            } else {
                1
            };
            counts.push(c);
        }
    }
    Case {
        name: name.to_owned(),
        tuples,
        counts,
    }
}

fn models() -> Vec<(&'static str, CostModel)> {
    let hs = || vec![halves(16), uneven(), Hierarchy::flat(5)];
    let weights = vec![1.0, 2.5, 0.75];
    let keys = vec![
        Some((0..16).map(|x| f64::from(x * x)).collect::<Vec<f64>>()),
        None,
        Some(vec![1.0, 2.0, 4.0, 8.0, 9.5]),
    ];
    vec![
        (
            "height",
            CostModel::try_new(hs(), weights.clone(), LevelCost::Height).unwrap(),
        ),
        (
            "ncp",
            CostModel::try_new(hs(), weights.clone(), LevelCost::Ncp).unwrap(),
        ),
        (
            "range",
            CostModel::try_new_range(hs(), weights, keys).unwrap(),
        ),
    ]
}

/// Rows tuple by tuple, as the kernels number them.
fn tuple_of_row(counts: &[u64]) -> Vec<u32> {
    counts
        .iter()
        .enumerate()
        .flat_map(|(t, &c)| std::iter::repeat_n(t as u32, c as usize))
        .collect()
}

/// Every output of every case, named.
fn all() -> Vec<(String, u64)> {
    let mut out = Vec::new();
    let cases = vec![
        case("uniform40", 1, 40, false, false),
        case("clustered60", 2, 60, true, true),
        case("skew25", 3, 25, true, false),
        case("dups30", 4, 30, false, true),
        case("one", 5, 1, false, false),
        case("two", 6, 2, true, false),
        case("big150", 7, 150, true, true),
    ];
    for c in &cases {
        let n = c.counts.len();
        let rows: u64 = c.counts.iter().sum();
        let rows_of = tuple_of_row(&c.counts);
        let mut ks: Vec<u64> = vec![1, 2, 3, 5, rows];
        ks.retain(|&k| k <= rows);
        ks.dedup();
        for (mname, model) in models() {
            let tag = format!("{}/{mname}", c.name);
            for count in [1usize, 3, 8] {
                emit(
                    &mut out,
                    format!("{tag}/nn{count}"),
                    &nearest_neighbours(&c.tuples, M, &model, count),
                );
                emit(
                    &mut out,
                    format!("{tag}/nntrie{count}"),
                    &nearest_neighbours_trie(&c.tuples, M, &model, count),
                );
                emit(
                    &mut out,
                    format!("{tag}/nnscan{count}"),
                    &nearest_neighbours_scan(&c.tuples, M, &model, count),
                );
            }
            for &k in &ks {
                let kt = format!("{tag}/k{k}");
                let ku = k as usize;
                for (ename, improve) in [
                    ("none", None),
                    ("fast", Some(Effort::Fast)),
                    ("full", Some(Effort::Full)),
                ] {
                    for seed in [0u64, 11] {
                        let options = ForestOptions { k, seed, improve };
                        let r = anonymize(&c.tuples, M, &c.counts, &model, &options);
                        emit(&mut out, format!("{kt}/anonymize/{ename}/{seed}"), &r);
                    }
                    let options = ForestOptions {
                        k,
                        seed: 0,
                        improve,
                    };
                    let keys: Vec<Vec<f64>> = LEAVES
                        .iter()
                        .map(|&l| (0..l).map(f64::from).collect())
                        .collect();
                    let spans: Vec<f64> = LEAVES.iter().map(|&l| f64::from(l - 1)).collect();
                    for block in [rows, (2 * k).max(rows / 3)] {
                        let r = blocked_forest(
                            &c.tuples, M, &c.counts, &keys, &spans, &model, &options, block, None,
                        );
                        emit(&mut out, format!("{kt}/blocked/{ename}/{block}"), &r);
                    }
                }
                // FOREST over the tuples, one weighted vertex each, then DECOMPOSE of
                // the rows (a tuple's extra rows hang on its first row).
                let parent = build_forest(&c.tuples, M, &c.counts, k, &model);
                emit(&mut out, format!("{kt}/build_forest"), &parent);
                let Ok(parent) = parent else { continue };
                emit(
                    &mut out,
                    format!("{kt}/forest_groups"),
                    &forest_groups(&parent),
                );
                let mut base = Vec::new();
                let mut edges = Vec::new();
                let mut next = 0u32;
                for &cnt in &c.counts {
                    base.push(next);
                    for i in 1..cnt as u32 {
                        edges.push((next, next + i));
                    }
                    next += cnt as u32;
                }
                for (v, p) in parent.iter().enumerate() {
                    if let Some(p) = p {
                        edges.push((base[v], base[*p as usize]));
                    }
                }
                let d = decompose(rows as usize, &edges, k);
                emit(&mut out, format!("{kt}/decompose"), &d);
                emit(&mut out, format!("{kt}/max_group_size"), &max_group_size(k));
                let vertices: Vec<u32> = (0..rows as u32).collect();
                emit(
                    &mut out,
                    format!("{kt}/decompose_component"),
                    &decompose_component(&vertices, &edges, k, 0),
                );
                let Ok(d) = d else { continue };
                let mut group_of_row = vec![0u32; rows as usize];
                for (g, members) in d.groups.iter().enumerate() {
                    for &r in members {
                        group_of_row[r as usize] = g as u32;
                    }
                }
                let groups = d.groups.len();
                emit(
                    &mut out,
                    format!("{kt}/group_levels"),
                    &group_levels(&model, &c.tuples, M, &rows_of, &group_of_row, groups),
                );
                emit(
                    &mut out,
                    format!("{kt}/release_cost"),
                    &release_cost(&model, &c.tuples, M, &rows_of, &group_of_row, groups),
                );
                // Repair a grouping with groups under k: rows in groups of two by tuple.
                let mut small: Vec<u32> = (0..rows as u32).map(|r| r / 2).collect();
                let small_groups = (rows as usize).div_ceil(2);
                let rep = repair(&model, &c.tuples, M, &rows_of, &mut small, small_groups, k);
                emit(&mut out, format!("{kt}/repair"), &(&rep, &small));
                for effort in [Effort::Fast, Effort::Full] {
                    let mut g = group_of_row.clone();
                    let r = improve_with_stats(
                        &model, &c.tuples, M, &rows_of, &mut g, groups, k, effort,
                    )
                    .map(|(groups, stats)| {
                        let passes: Vec<_> = stats
                            .passes
                            .iter()
                            .map(|p| (p.pass, p.changes, p.cost))
                            .collect();
                        (groups, stats.cost_before, passes)
                    });
                    emit(&mut out, format!("{kt}/improve/{effort:?}"), &(&r, &g));
                }
                // Continuous mode: the last third of the tuples' rows arrive later.
                if n >= 3 {
                    let cut = rows_of.len() * 2 / 3;
                    let mut old: Vec<u32> = group_of_row.clone();
                    for g in old.iter_mut().skip(cut) {
                        *g = NEW;
                    }
                    // Keep only groups fully before the cut; others become new rows.
                    let mut size = vec![0usize; groups];
                    let mut whole = vec![0usize; groups];
                    for (r, &g) in group_of_row.iter().enumerate() {
                        whole[g as usize] += 1;
                        if r < cut {
                            size[g as usize] += 1;
                        }
                    }
                    let mut renumber = vec![u32::MAX; groups];
                    let mut kept = 0u32;
                    for g in 0..groups {
                        if size[g] == whole[g] && size[g] >= ku {
                            renumber[g] = kept;
                            kept += 1;
                        }
                    }
                    for g in old.iter_mut() {
                        if *g != NEW {
                            *g = renumber[*g as usize];
                            if *g == u32::MAX {
                                *g = NEW;
                            }
                        }
                    }
                    let e = extend(&c.tuples, M, &model, &rows_of, &old, kept as usize, k);
                    emit(&mut out, format!("{kt}/extend"), &e);
                }
            }
        }
    }
    out
}

#[test]
fn forest_outputs_fingerprints() {
    let out = all();
    let mut total = 0u64;
    for (name, h) in &out {
        eprintln!("HASH {name} {h:016x}");
        total = total.rotate_left(7) ^ h;
    }
    eprintln!("HASH total-{} {total:016x}", out.len());
    // Recorded before the forest was restructured: a change here changed an output.
    assert_eq!((out.len(), total), (2310, 0xfe0c_add0_a5bd_3d63));
}
