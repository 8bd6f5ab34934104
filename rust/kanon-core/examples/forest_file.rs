//! Time the phases of the blocked forest on one pack dumped to files (profiling aid).
//!
//! `cargo run --release -p kanon-core --example forest_file -- PREFIX [--blocks=N]
//! [--block-size=S] [--fast] [--mondrian] [--blocked]` reads `PREFIX.tuples` (u32, m per tuple), `PREFIX.counts` (u64),
//! `PREFIX.hier` (as `lattice_file`), `PREFIX.cut` (one line of cut keys per attribute)
//! and `PREFIX.meta` (`k block_size cost`, the spans, the weights; with cost `range`,
//! `PREFIX.keys`: one line of leaf keys per attribute, empty for a categorical one),
//! cuts the pack into
//! blocks with Mondrian, and runs the forest's phases on the first N blocks one by one,
//! printing the time of each phase and improvement pass summed over those blocks
//! (`--fast`: [`Effort::Fast`]; `--mondrian`: also the cost of a full Mondrian run;
//! `--blocked`: only time `blocked_forest` on the whole pack, blocks in parallel).
#![allow(clippy::print_stdout)]

use std::collections::BTreeMap;
use std::time::Instant;

use kanon_core::forest::cost::{CostModel, LevelCost};
use kanon_core::forest::decompose::decompose;
use kanon_core::forest::improve::{improve_with_stats, release_cost, repair, Effort};
use kanon_core::forest::neighbours::build_forest;
use kanon_core::mondrian::{mondrian, MondrianOptions};

mod dump;

fn main() {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let prefix = args.first().expect("PREFIX").clone();
    let value = |name: &str| dump::option(&args, name);
    let dump::Dump {
        tuples,
        counts,
        hierarchies,
    } = dump::read(&prefix);
    let m = hierarchies.len();
    let cut = std::fs::read_to_string(format!("{prefix}.cut")).expect("cut");
    let keys: Vec<Vec<f64>> = cut.lines().map(dump::numbers).collect();
    let meta = std::fs::read_to_string(format!("{prefix}.meta")).expect("meta");
    let mut lines = meta.lines();
    let head: Vec<String> = lines
        .next()
        .expect("head")
        .split(' ')
        .map(str::to_owned)
        .collect();
    let k: u64 = head[0].parse().expect("k");
    let size: u64 = value("block-size")
        .and_then(|v| v.parse().ok())
        .unwrap_or_else(|| head[1].parse().expect("size"));
    let spans: Vec<f64> = dump::numbers(lines.next().expect("spans"));
    let weights: Vec<f64> = dump::numbers(lines.next().expect("weights"));
    let model = match head[2].as_str() {
        "range" => {
            // One line of leaf keys per attribute, empty for a categorical one.
            let text = std::fs::read_to_string(format!("{prefix}.keys")).expect("keys");
            let keys = text
                .lines()
                .map(|l| Some(dump::numbers(l)).filter(|k: &Vec<f64>| !k.is_empty()))
                .collect();
            CostModel::try_new_range(hierarchies.clone(), weights, keys).expect("model")
        }
        "height" => {
            CostModel::try_new(hierarchies.clone(), weights, LevelCost::Height).expect("model")
        }
        _ => CostModel::try_new(hierarchies.clone(), weights, LevelCost::Ncp).expect("model"),
    };
    let effort = if args.iter().any(|a| a == "--fast") {
        Effort::Fast
    } else {
        Effort::Full
    };
    // Mondrian cuts down to parts of at most `stop` rows (0: as far as they go).
    let cut = |stop: u64| {
        let options = MondrianOptions { k, stop };
        mondrian(
            &tuples,
            m,
            &counts,
            &keys,
            &spans,
            &hierarchies,
            None,
            &options,
        )
        .expect("cut")
    };
    let t0 = Instant::now();
    let partition = cut(size);
    println!(
        "{} tuples, {} rows, {} blocks, cut {:.3} s",
        counts.len(),
        counts.iter().sum::<u64>(),
        partition.parts,
        t0.elapsed().as_secs_f64()
    );
    if args.iter().any(|a| a == "--mondrian") {
        let t = Instant::now();
        let p = cut(0);
        let secs = t.elapsed().as_secs_f64();
        let mut tuple_of_row = Vec::new();
        let mut group_of_row = Vec::new();
        for (t, &c) in counts.iter().enumerate() {
            for _ in 0..c {
                tuple_of_row.push(t as u32);
                group_of_row.push(p.part_of_tuple[t]);
            }
        }
        let cost =
            release_cost(&model, &tuples, m, &tuple_of_row, &group_of_row, p.parts).expect("c");
        println!(
            "mondrian: {} parts, cost {:.4} %, {secs:.3} s",
            p.parts,
            100.0 * cost / (tuple_of_row.len() as f64 * m as f64)
        );
    }
    if args.iter().any(|a| a == "--blocked") {
        let t = Instant::now();
        let options = kanon_core::forest::anonymize::ForestOptions {
            k,
            seed: 0,
            improve: Some(effort),
        };
        let r = kanon_core::forest::blocked::blocked_forest(
            &tuples, m, &counts, &keys, &spans, &model, &options, size, None,
        )
        .expect("blocked");
        println!(
            "blocked_forest: {} groups, cost {:.4} %, {:.3} s",
            r.groups,
            100.0 * r.stats.cost / (counts.iter().sum::<u64>() as f64 * m as f64),
            t.elapsed().as_secs_f64()
        );
        return;
    }
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); partition.parts];
    for (t, &p) in partition.part_of_tuple.iter().enumerate() {
        members[p as usize].push(t);
    }
    let limit: usize = value("blocks")
        .and_then(|v| v.parse().ok())
        .unwrap_or(members.len());
    let mut phases: BTreeMap<String, (f64, usize)> = BTreeMap::new();
    let mut add = |name: &str, secs: f64, changes: usize| {
        let e = phases.entry(name.to_owned()).or_insert((0.0, 0));
        e.0 += secs;
        e.1 += changes;
    };
    let (mut before, mut after, mut rows_done) = (0.0, 0.0, 0u64);
    let mut trace: BTreeMap<usize, (&str, f64, f64)> = BTreeMap::new();
    for block in members.iter().take(limit) {
        let mut block: Vec<usize> = block.clone();
        block.sort_by(|&a, &b| tuples[a * m..(a + 1) * m].cmp(&tuples[b * m..(b + 1) * m]));
        let bt: Vec<u32> = block
            .iter()
            .flat_map(|&t| tuples[t * m..(t + 1) * m].iter().copied())
            .collect();
        let bc: Vec<u64> = block.iter().map(|&t| counts[t]).collect();
        let rows: usize = bc.iter().sum::<u64>() as usize;
        rows_done += rows as u64;
        let mut start = Vec::new();
        let mut acc = 0usize;
        for &c in &bc {
            start.push(acc);
            acc += c as usize;
        }
        let mut groups: Vec<Vec<u32>> = Vec::new();
        let light: Vec<usize> = (0..bc.len()).filter(|&t| bc[t] < k).collect();
        for t in (0..bc.len()).filter(|&t| bc[t] >= k) {
            groups.push(
                (start[t]..start[t] + bc[t] as usize)
                    .map(|r| r as u32)
                    .collect(),
            );
        }
        let lt: Vec<u32> = light
            .iter()
            .flat_map(|&t| bt[t * m..(t + 1) * m].iter().copied())
            .collect();
        let lw: Vec<u64> = light.iter().map(|&t| bc[t]).collect();
        let c = Instant::now();
        let parent = build_forest(&lt, m, &lw, k, &model).expect("forest");
        add("1 forest", c.elapsed().as_secs_f64(), 0);
        let c = Instant::now();
        let mut base = Vec::new();
        let mut local_to_row = Vec::new();
        let mut edges = Vec::new();
        for &t in &light {
            let b = local_to_row.len() as u32;
            base.push(b);
            for i in 0..bc[t] as usize {
                local_to_row.push((start[t] + i) as u32);
                if i > 0 {
                    edges.push((b, b + i as u32));
                }
            }
        }
        for (v, p) in parent.iter().enumerate() {
            if let Some(p) = p {
                edges.push((base[v], base[*p as usize]));
            }
        }
        let d = decompose(local_to_row.len(), &edges, k).expect("decompose");
        groups.extend(
            d.groups
                .into_iter()
                .map(|g| g.into_iter().map(|l| local_to_row[l as usize]).collect()),
        );
        add("2 decompose", c.elapsed().as_secs_f64(), 0);
        let mut tuple_of_row = vec![0u32; rows];
        for t in 0..bc.len() {
            tuple_of_row[start[t]..start[t] + bc[t] as usize].fill(t as u32);
        }
        let mut group_of_row = vec![0u32; rows];
        for (g, members) in groups.iter().enumerate() {
            for &r in members {
                group_of_row[r as usize] = g as u32;
            }
        }
        let c = Instant::now();
        let repaired = repair(
            &model,
            &bt,
            m,
            &tuple_of_row,
            &mut group_of_row,
            groups.len(),
            k,
        )
        .expect("repair");
        add("3 repair", c.elapsed().as_secs_f64(), repaired.merged);
        before += release_cost(
            &model,
            &bt,
            m,
            &tuple_of_row,
            &group_of_row,
            repaired.groups,
        )
        .expect("cost");
        let (count, stats) = improve_with_stats(
            &model,
            &bt,
            m,
            &tuple_of_row,
            &mut group_of_row,
            repaired.groups,
            k,
            effort,
        )
        .expect("improve");
        add("4 setup", stats.setup_seconds, 0);
        for (i, p) in stats.passes.iter().enumerate() {
            let round = if i < 6 {
                "5 first".to_owned()
            } else {
                format!("6 round {}", (i - 6) / 4)
            };
            add(&format!("{round} {}", p.pass), p.seconds, p.changes);
            add(&format!("7 all {}", p.pass), p.seconds, p.changes);
            let e = trace.entry(i).or_insert((p.pass, 0.0, 0.0));
            e.1 += p.cost;
            e.2 += p.seconds;
        }
        after += release_cost(&model, &bt, m, &tuple_of_row, &group_of_row, count).expect("cost");
    }
    let denom = rows_done as f64 * m as f64;
    println!(
        "{rows_done} rows: cost before improve {:.4} %, after {:.4} %",
        100.0 * before / denom,
        100.0 * after / denom
    );
    let mut clock = 0.0;
    for (i, (pass, cost, secs)) in &trace {
        clock += secs;
        println!(
            "{i:>3} {pass:<8} cost {:.4} % at {clock:.3} s",
            100.0 * cost / denom
        );
    }
    for (name, (secs, changes)) in &phases {
        println!("{name:<24} {secs:8.3} s {changes:>8}");
    }
}
