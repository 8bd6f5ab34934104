//! Time the optimal full-domain search on a histogram dumped to files (for profiling the
//! lattice search on large inputs without DuckDB).
//!
//! `cargo run --release -p kanon-core --example lattice_file -- PREFIX [--k=5]
//! [--suppress=0.05] [--metric=loss|nue|dm|dmstar|height|aecs] [--repeat=N]` reads `PREFIX.tuples`
//! (little-endian u32, m per tuple), `PREFIX.counts` (u64), `PREFIX.hier` (per attribute,
//! one line of label codes per level, a blank line after each attribute) and, if present,
//! `PREFIX.loss` (the same layout with the loss of every label).
#![allow(clippy::print_stdout)]

use std::time::Instant;

use kanon_core::lattice::{optimal, LatticeOptions, Metric};

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
    let metric = match value("metric").as_deref() {
        Some("nue") => Metric::Nue,
        Some("dm") => Metric::Dm,
        Some("dmstar") => Metric::DmStar,
        Some("height") => Metric::Height,
        Some("aecs") => Metric::Aecs,
        _ => Metric::Loss,
    };
    let node_loss = match std::fs::read_to_string(format!("{prefix}.loss")) {
        Ok(text) if metric == Metric::Loss => dump::blocks(&text),
        _ => Vec::new(),
    };
    let k: u64 = value("k").and_then(|v| v.parse().ok()).unwrap_or(5);
    let suppress: f64 = value("suppress")
        .and_then(|v| v.parse().ok())
        .unwrap_or(0.0);
    let rows: u64 = counts.iter().sum();
    let options = LatticeOptions {
        k,
        max_suppressed: (suppress * rows as f64).floor() as u64,
        keep_suppressed: true,
        min_level: vec![0; m],
        max_level: hierarchies.iter().map(|h| h.height() as u32).collect(),
        weights: vec![1.0; m],
        metric,
        node_loss,
    };
    let repeat: usize = value("repeat").and_then(|v| v.parse().ok()).unwrap_or(1);
    let mut fastest = f64::INFINITY;
    let mut best = None;
    for _ in 0..repeat.max(1) {
        let t0 = Instant::now();
        best = Some(optimal(&tuples, m, &counts, &hierarchies, &options).expect("optimum"));
        fastest = fastest.min(t0.elapsed().as_secs_f64());
    }
    let best = best.expect("one run");
    println!(
        "{} tuples, {rows} rows: levels {:?} cost {:.6} suppressed {} nodes {} checked {} \
         rolled up {} tagged {} in {:.3} s (fastest of {repeat})",
        counts.len(),
        best.levels,
        best.eval.cost,
        best.eval.suppressed,
        best.nodes,
        best.checked,
        best.rolled_up,
        best.tagged,
        fastest,
    );
}
