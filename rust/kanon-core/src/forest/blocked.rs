//! The forest on large tables: Mondrian cuts into blocks, the forest in every block.
//!
//! The forest's exact neighbour search is quadratic in the distinct tuples it is given.
//! Above `block_size` rows, the tuples are first cut by strict Mondrian cuts
//! ([`crate::mondrian`]: median cuts on the attribute of widest normalized range, both
//! sides ≥ k rows) until every block holds at most `block_size` rows (or admits no cut),
//! and the forest ([`crate::anonymize::anonymize`]) runs in every block, blocks in
//! parallel. Every block holds ≥ k rows and every group of the forest ≥ k rows, so the
//! release is k-anonymous across block boundaries; each group's levels are its own
//! lowest common hierarchy nodes, so labels stay truthful.

use rayon::prelude::*;

use super::anonymize::{anonymize, ForestOptions, ForestStats, Release};
use super::cost::CostModel;
use crate::error::{KernelError, Result};
use crate::hierarchy::Hierarchy;
use crate::mondrian::{mondrian, MondrianOptions};

/// Called with the rows of every finished block; returning `false` stops the run with
/// an error (a cancellation).
pub type Progress<'a> = &'a (dyn Fn(u64) -> bool + Sync);

/// Anonymize distinct `tuples` (row-major, `m` leaf codes each) occurring `counts` times
/// with the forest, in blocks of at most `block_size` rows cut by Mondrian.
///
/// `keys` and `spans` order and normalize the attributes for the cuts (see
/// [`crate::mondrian::mondrian`]). Rows are numbered tuple by tuple in the caller's
/// order, as in [`crate::anonymize`]; group ids are dense, block after block.
///
/// # Errors
/// The errors of [`mondrian`] and [`anonymize`]; [`KernelError::InvalidArgument`] when
/// `progress` asks to stop.
#[allow(clippy::too_many_arguments)]
pub fn blocked_forest(
    tuples: &[u32],
    m: usize,
    counts: &[u64],
    keys: &[Vec<f64>],
    spans: &[f64],
    model: &CostModel,
    options: &ForestOptions,
    block_size: u64,
    progress: Option<Progress<'_>>,
) -> Result<Release> {
    const KERNEL: &str = "blocked forest";
    let rows: u64 = counts.iter().sum();
    if rows <= block_size {
        let release = anonymize(tuples, m, counts, model, options)?;
        advance(progress, rows, KERNEL)?;
        return Ok(release);
    }
    let hierarchies: Vec<Hierarchy> = (0..model.attributes())
        .map(|j| model.hierarchy(j).clone())
        .collect();
    let cut = MondrianOptions {
        k: options.k,
        stop: block_size,
    };
    let partition = mondrian(tuples, m, counts, keys, spans, &hierarchies, None, &cut)?;
    let mut members: Vec<Vec<usize>> = vec![Vec::new(); partition.parts];
    for (t, &p) in partition.part_of_tuple.iter().enumerate() {
        members[p as usize].push(t);
    }
    let releases: Vec<Release> = members
        .par_iter()
        .map(|block| {
            let block_tuples: Vec<u32> = block
                .iter()
                .flat_map(|&t| tuples[t * m..(t + 1) * m].iter().copied())
                .collect();
            let block_counts: Vec<u64> = block.iter().map(|&t| counts[t]).collect();
            let release = anonymize(&block_tuples, m, &block_counts, model, options)?;
            advance(progress, block_counts.iter().sum(), KERNEL)?;
            Ok(release)
        })
        .collect::<Result<_>>()?;
    let mut start = Vec::with_capacity(counts.len());
    let mut acc = 0usize;
    for &c in counts {
        start.push(acc);
        acc += c as usize;
    }
    let mut group_of_row = vec![0u32; acc];
    let mut levels = Vec::new();
    let mut groups = 0usize;
    let mut stats = ForestStats::default();
    for (block, release) in members.iter().zip(&releases) {
        let offset = u32::try_from(groups).map_err(|_| KernelError::InvalidArgument {
            kernel: KERNEL,
            message: "more than 2^32 groups".to_owned(),
        })?;
        let mut local = 0usize;
        for &t in block {
            for i in 0..counts[t] as usize {
                group_of_row[start[t] + i] = offset + release.group_of_row[local];
                local += 1;
            }
        }
        levels.extend_from_slice(&release.levels);
        groups += release.groups;
        add_stats(&mut stats, &release.stats);
    }
    Ok(Release {
        group_of_row,
        groups,
        levels,
        stats,
    })
}

fn advance(progress: Option<Progress<'_>>, rows: u64, kernel: &'static str) -> Result<()> {
    match progress {
        Some(report) if !report(rows) => Err(KernelError::InvalidArgument {
            kernel,
            message: "cancelled".to_owned(),
        }),
        _ => Ok(()),
    }
}

fn add_stats(total: &mut ForestStats, block: &ForestStats) {
    total.tuples += block.tuples;
    total.vertices += block.vertices;
    total.own_groups += block.own_groups;
    for (a, b) in total.cuts.iter_mut().zip(block.cuts) {
        *a += b;
    }
    total.repaired += block.repaired;
    total.cost_before_improve += block.cost_before_improve;
    total.cost += block.cost;
}
