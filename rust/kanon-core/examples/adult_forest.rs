//! Run the forest anonymizer on UCI Adult (9 QIs, ARX hierarchies) and print GCP and timings.
//!
//! `cargo run --release -p kanon-core --example adult_forest -- [k ...]`
//! (reads `$KANON_DATA/adult`, default `../shared/data/adult`; add `--improve` for the
//! improvement passes, `--height` for the paper's level cost, `--phases` to print, after
//! each row, the time and effect of every improvement pass of a separate run).
//! `--optimal` runs the lattice search instead (`--suppress=0.05`, `--metric=loss|nue|dm`,
//! `--drop=occupation` to leave an attribute out). With `--phases`, `--global=0.5` starts
//! the improvement passes from an iterated global recoding instead of the forest's groups
//! (each step the optimal node under the loss metric, suppressing up to that share of the
//! rows left, releases its classes; the suppressed rows go round again).
#![allow(clippy::print_stdout)]

use std::collections::{BTreeMap, HashMap};
use std::time::Instant;

use kanon_core::forest::anonymize::{anonymize, ForestOptions};
use kanon_core::forest::cost::{CostModel, LevelCost};
use kanon_core::forest::improve::{improve_with_stats, Effort};
use kanon_core::lattice::{optimal, LatticeOptions, Metric};
use kanon_core::Hierarchy;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let improve = args.iter().any(|a| a == "--improve");
    let phases = args.iter().any(|a| a == "--phases");
    let kind = if args.iter().any(|a| a == "--height") {
        LevelCost::Height
    } else {
        LevelCost::Ncp
    };
    let seed: u64 = args
        .iter()
        .find_map(|a| a.strip_prefix("--seed=").and_then(|s| s.parse().ok()))
        .unwrap_or(0);
    let ks: Vec<u64> = args.iter().filter_map(|a| a.parse().ok()).collect();
    let ks = if ks.is_empty() {
        vec![2, 5, 10, 25, 50, 100]
    } else {
        ks
    };
    let dir =
        std::env::var("KANON_DATA").unwrap_or_else(|_| "../shared/data".to_owned()) + "/adult";
    let text = std::fs::read_to_string(format!("{dir}/adult.csv")).expect("adult.csv");
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(';').collect();
    let rows: Vec<Vec<&str>> = lines
        .filter(|l| !l.is_empty())
        .map(|l| l.split(';').collect())
        .collect();
    let m = header.len();
    let mut hierarchies = Vec::new();
    let mut codes_of: Vec<HashMap<String, u32>> = Vec::new();
    for (j, name) in header.iter().enumerate() {
        let h = std::fs::read_to_string(format!("{dir}/adult_hierarchy_{name}.csv"))
            .expect("hierarchy");
        let present: std::collections::HashSet<&str> = rows.iter().map(|r| r[j]).collect();
        let mut table: Vec<Vec<String>> = h
            .lines()
            .map(|l| l.split(';').map(str::to_owned).collect::<Vec<_>>())
            .filter(|r| present.contains(r[0].as_str()))
            .collect();
        // DFS order: sort by the path from the root down.
        table.sort_by(|a, b| a.iter().rev().cmp(b.iter().rev()));
        let height = table[0].len();
        let mut levels: Vec<Vec<u32>> = Vec::new();
        for l in 0..height {
            let mut ids: BTreeMap<Vec<String>, u32> = BTreeMap::new();
            let col: Vec<u32> = table
                .iter()
                .map(|r| {
                    let key: Vec<String> = r[l..].to_vec();
                    let next = ids.len() as u32;
                    *ids.entry(key).or_insert(next)
                })
                .collect();
            levels.push(col);
        }
        // ids by first appearance in DFS order are dense and ordered.
        let views: Vec<&[u32]> = levels.iter().map(Vec::as_slice).collect();
        hierarchies.push(Hierarchy::try_from_levels(&views).expect("valid hierarchy"));
        codes_of.push(
            table
                .iter()
                .zip(&levels[0])
                .map(|(r, &c)| (r[0].clone(), c))
                .collect(),
        );
    }
    let mut counts: BTreeMap<Vec<u32>, u64> = BTreeMap::new();
    for r in &rows {
        let t: Vec<u32> = (0..m).map(|j| codes_of[j][r[j]]).collect();
        *counts.entry(t).or_insert(0) += 1;
    }
    let tuples: Vec<u32> = counts.keys().flatten().copied().collect();
    let weights: Vec<u64> = counts.values().copied().collect();
    if args.iter().any(|a| a == "--optimal") {
        run_optimal(&tuples, m, &weights, &hierarchies, &header, &ks, &args);
        return;
    }
    let n = rows.len() as f64;
    let gcp_model = CostModel::try_new(hierarchies.clone(), vec![1.0; m], LevelCost::Ncp).unwrap();
    let model = CostModel::try_new(hierarchies, vec![1.0; m], kind).unwrap();
    println!(
        "rows {} distinct {} improve {improve} cost {kind:?}",
        rows.len(),
        weights.len()
    );
    println!(
        "{:>4} {:>8} {:>8} {:>8} {:>8} {:>8}",
        "k", "groups", "GCP%", "before%", "C_AVG", "secs"
    );
    for k in ks {
        let t0 = Instant::now();
        let r = anonymize(
            &tuples,
            m,
            &weights,
            &model,
            &ForestOptions {
                k,
                seed,
                improve: improve.then_some(Effort::Full),
            },
        )
        .unwrap();
        let secs = t0.elapsed().as_secs_f64();
        // GCP from the released levels.
        let mut units = 0.0;
        let mut row = 0usize;
        let mut sizes = vec![0usize; r.groups];
        for (t, &c) in weights.iter().enumerate() {
            for _ in 0..c {
                let g = r.group_of_row[row] as usize;
                sizes[g] += 1;
                for j in 0..m {
                    units +=
                        gcp_model.node_cost(j, r.levels[g * m + j] as usize, tuples[t * m + j]);
                }
                row += 1;
            }
        }
        assert!(sizes.iter().all(|&s| s as u64 >= k), "a group below k");
        let before = if kind == LevelCost::Ncp {
            100.0 * r.stats.cost_before_improve / (n * m as f64)
        } else {
            f64::NAN
        };
        println!(
            "{k:>4} {:>8} {:>8.3} {:>8.3} {:>8.3} {:>8.3}",
            r.groups,
            100.0 * units / (n * m as f64),
            before,
            n / r.groups as f64 / k as f64,
            secs
        );
        if phases {
            print_phases(&tuples, m, &weights, &model, k, n * m as f64);
        }
    }
}

/// Run the pipeline without improvement, then the improvement passes on its grouping,
/// timing each part; costs as % of the cells (GCP for the NCP cost).
fn print_phases(tuples: &[u32], m: usize, weights: &[u64], model: &CostModel, k: u64, cells: f64) {
    let t0 = Instant::now();
    let base = anonymize(
        tuples,
        m,
        weights,
        model,
        &ForestOptions {
            k,
            seed: 0,
            improve: None,
        },
    )
    .unwrap();
    let base_secs = t0.elapsed().as_secs_f64();
    let tuple_of_row: Vec<u32> = weights
        .iter()
        .enumerate()
        .flat_map(|(t, &c)| std::iter::repeat_n(t as u32, c as usize))
        .collect();
    let topdown = std::env::args().any(|a| a == "--topdown");
    let global: Option<f64> =
        std::env::args().find_map(|a| a.strip_prefix("--global=").and_then(|v| v.parse().ok()));
    let (mut group_of_row, base_groups) = if let Some(sigma) = global {
        let t = Instant::now();
        let (g, n) = iterated_global(tuples, m, weights, model, k, sigma);
        println!(
            "     iterated global start: {n} groups in {:.3}s",
            t.elapsed().as_secs_f64()
        );
        (g, n)
    } else if topdown {
        (vec![0u32; base.group_of_row.len()], 1)
    } else {
        (base.group_of_row.clone(), base.groups)
    };
    let t1 = Instant::now();
    let (groups, stats) = improve_with_stats(
        model,
        tuples,
        m,
        &tuple_of_row,
        &mut group_of_row,
        base_groups,
        k,
        Effort::Full,
    )
    .unwrap();
    let improve_secs = t1.elapsed().as_secs_f64();
    println!(
        "     pipeline without improve {base_secs:.3}s; improve {improve_secs:.3}s -> {groups} groups \
         (setup {:.3}s, cost {:.3}%)",
        stats.setup_seconds,
        100.0 * stats.cost_before / cells
    );
    for p in &stats.passes {
        println!(
            "       {:<8} {:>6} changes  cost {:>7.3}%  {:.3}s",
            p.pass,
            p.changes,
            100.0 * p.cost / cells,
            p.seconds
        );
    }
}

/// Time the optimal full-domain search for every k.
fn run_optimal(
    tuples: &[u32],
    m: usize,
    counts: &[u64],
    hierarchies: &[Hierarchy],
    header: &[&str],
    ks: &[u64],
    args: &[String],
) {
    let value = |name: &str| {
        args.iter()
            .find_map(|a| a.strip_prefix(&format!("--{name}=")).map(str::to_owned))
    };
    let suppress: f64 = value("suppress")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    let metric = match value("metric").as_deref() {
        Some("nue") => Metric::Nue,
        Some("dm") => Metric::Dm,
        Some("dmstar") => Metric::DmStar,
        Some("height") => Metric::Height,
        Some("aecs") => Metric::Aecs,
        _ => Metric::Loss,
    };
    // Leave attributes out by collapsing them to the root.
    let dropped: Vec<usize> = value("drop")
        .map(|d| header.iter().position(|h| *h == d).into_iter().collect())
        .unwrap_or_default();
    let rows: u64 = counts.iter().sum();
    let mut max_level: Vec<u32> = hierarchies.iter().map(|h| h.height() as u32).collect();
    let mut min_level = vec![0u32; m];
    for &j in &dropped {
        min_level[j] = max_level[j];
        max_level[j] = hierarchies[j].height() as u32;
    }
    println!(
        "{:>4} {:>24} {:>10} {:>8} {:>8} {:>8} {:>8}",
        "k", "levels", "cost", "supp", "checked", "rolled", "secs"
    );
    for &k in ks {
        let options = LatticeOptions {
            k,
            max_suppressed: (suppress * rows as f64).floor() as u64,
            keep_suppressed: true,
            min_level: min_level.clone(),
            max_level: max_level.clone(),
            weights: vec![1.0; m],
            metric,
            node_loss: Vec::new(),
        };
        let t0 = Instant::now();
        let best = optimal(tuples, m, counts, hierarchies, &options).unwrap();
        let secs = t0.elapsed().as_secs_f64();
        println!(
            "{k:>4} {:>24} {:>10.5} {:>8} {:>8} {:>8} {secs:>8.4}",
            format!("{:?}", best.levels),
            best.eval.cost,
            best.eval.suppressed,
            best.checked,
            best.rolled_up,
        );
    }
}

/// ARX-style local recoding: the optimal full-domain node (loss, suppression up to
/// `sigma` of the rows left) releases its classes of at least k rows; the suppressed
/// rows go round again; the last rows join group 0. Returns group of every row (rows in
/// tuple order) and the group count.
fn iterated_global(
    tuples: &[u32],
    m: usize,
    weights: &[u64],
    model: &CostModel,
    k: u64,
    sigma: f64,
) -> (Vec<u32>, usize) {
    let hierarchies: Vec<Hierarchy> = (0..m).map(|j| model.hierarchy(j).clone()).collect();
    let mut left: Vec<usize> = (0..weights.len()).collect();
    let mut group_of_tuple = vec![u32::MAX; weights.len()];
    let mut groups = 0u32;
    let mut steps = 0;
    loop {
        let rows: u64 = left.iter().map(|&t| weights[t]).sum();
        if rows < k {
            break;
        }
        let sub: Vec<u32> = left
            .iter()
            .flat_map(|&t| tuples[t * m..(t + 1) * m].iter().copied())
            .collect();
        let counts: Vec<u64> = left.iter().map(|&t| weights[t]).collect();
        let options = LatticeOptions {
            k,
            max_suppressed: ((sigma * rows as f64).floor() as u64).min(rows - k.min(rows)),
            keep_suppressed: false,
            min_level: vec![0; m],
            max_level: hierarchies.iter().map(|h| h.height() as u32).collect(),
            weights: vec![1.0; m],
            metric: Metric::Loss,
            node_loss: Vec::new(),
        };
        let Ok(best) = optimal(&sub, m, &counts, &hierarchies, &options) else {
            break;
        };
        steps += 1;
        let mut class_of: HashMap<Vec<u32>, u32> = HashMap::new();
        let mut next = Vec::new();
        for (i, &t) in left.iter().enumerate() {
            if best.suppressed[i] {
                next.push(t);
                continue;
            }
            let key: Vec<u32> = (0..m)
                .map(|j| hierarchies[j].generalize(best.levels[j] as usize, tuples[t * m + j]))
                .collect();
            let g = *class_of.entry(key).or_insert_with(|| {
                groups += 1;
                groups - 1
            });
            group_of_tuple[t] = g;
        }
        if next.len() == left.len() {
            break;
        }
        left = next;
    }
    println!("     global steps {steps}, {} tuples left", left.len());
    for t in left {
        group_of_tuple[t] = 0;
    }
    let group_of_row = weights
        .iter()
        .enumerate()
        .flat_map(|(t, &c)| std::iter::repeat_n(group_of_tuple[t], c as usize))
        .collect();
    (group_of_row, groups.max(1) as usize)
}
