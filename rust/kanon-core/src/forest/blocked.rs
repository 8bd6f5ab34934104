//! The forest on large tables: Mondrian cuts into blocks, the forest in every block.
//!
//! The forest's exact neighbour search is quadratic in the distinct tuples it is given.
//! Above `block_size` rows, the tuples are first cut by strict Mondrian cuts
//! ([`crate::mondrian`]: median cuts on the attribute of widest normalized range, both
//! sides ≥ k rows) until every block holds at most `block_size` rows (or admits no cut),
//! and the forest ([`crate::forest::anonymize::anonymize`]) runs in every block, blocks in
//! parallel. Every block holds ≥ k rows and every group of the forest ≥ k rows, so the
//! release is k-anonymous across block boundaries; each group's levels are its own
//! lowest common hierarchy nodes, so labels stay truthful.

use rayon::prelude::*;

use crate::error::{KernelError, Result};
use crate::forest::anonymize::{anonymize, ForestOptions, ForestStats, Release};
use crate::forest::cost::model::{CostModel, LevelCost};
use crate::forest::improve::effort::scan_lookups;
use crate::forest::neighbours::nearest::{query_lookups, Scan};
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
/// order, as in [`crate::forest::anonymize`]; group ids are dense, block after block.
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
    let n = counts.len();
    let count = usize::try_from(options.k.saturating_sub(1).max(1)).unwrap_or(usize::MAX);
    let all: Vec<usize> = (0..n).collect();
    let budget = scan_lookups(options.improve);
    let small = rows <= block_size;
    let scan_all = if small {
        scan_limit(tuples, m, rows, &all, model, count, budget)?
    } else {
        None
    };
    if small && scan_all.is_none() {
        let release = anonymize(tuples, m, counts, model, options)?;
        advance(progress, rows, KERNEL)?;
        return Ok(release);
    }
    let hierarchies: Vec<Hierarchy> = (0..model.attributes())
        .map(|j| model.hierarchy(j).clone())
        .collect();
    let cut = |members: &[usize], stop: u64| -> Result<Vec<Vec<usize>>> {
        let part = gather(tuples, m, members);
        let part_counts: Vec<u64> = members.iter().map(|&t| counts[t]).collect();
        let cut = MondrianOptions { k: options.k, stop };
        let partition = mondrian(
            &part,
            m,
            &part_counts,
            keys,
            spans,
            &hierarchies,
            None,
            &cut,
        )?;
        let mut blocks: Vec<Vec<usize>> = vec![Vec::new(); partition.parts];
        for (i, &p) in partition.part_of_tuple.iter().enumerate() {
            blocks[p as usize].push(members[i]);
        }
        Ok(blocks)
    };
    // A block whose neighbour search would scan, in time quadratic in its size, is cut
    // further (see `scan_limit`).
    let members: Vec<Vec<usize>> = cut(&all, scan_all.unwrap_or(block_size))?
        .into_par_iter()
        .map(|block| {
            let block_rows: u64 = block.iter().map(|&t| counts[t]).sum();
            match scan_limit(tuples, m, block_rows, &block, model, count, budget)? {
                Some(stop) => cut(&block, stop),
                None => Ok(vec![block]),
            }
        })
        .collect::<Result<Vec<_>>>()?
        .into_iter()
        .flatten()
        .collect();
    let releases: Vec<Release> = members
        .par_iter()
        .map(|block| {
            let block_tuples = gather(tuples, m, block);
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

/// Blocks are not cut below this many tuples for their scans' sake: smaller ones lost
/// more than they saved (`uniform` at 100k rows, benches/README.md).
const MIN_SCAN_TUPLES: usize = 4096;

/// The rows a block of `rows` rows (tuples `members`) is cut to, if any: where a query
/// of its neighbour search would read more than `budget` cost lookups
/// ([`scan_lookups`]; the trie's where its bounds prune, else a scan's, see
/// [`query_lookups`]), the block is cut so that it would read about that many (both are
/// about linear in the block's tuples where they cost most), or hold
/// [`MIN_SCAN_TUPLES`]. Range costs aside (their blocks are small by default).
fn scan_limit(
    tuples: &[u32],
    m: usize,
    rows: u64,
    members: &[usize],
    model: &CostModel,
    count: usize,
    budget: usize,
) -> Result<Option<u64>> {
    if model.kind() == LevelCost::Range {
        return Ok(None);
    }
    let part = gather(tuples, m, members);
    let n = model.check_tuples(&part, m, "blocked forest")?;
    let scan = Scan::new(&part, m, model);
    // Small blocks, and those a scan reads within the budget, stay whole untried.
    if n <= MIN_SCAN_TUPLES || n.saturating_mul(scan.lookups()) <= budget {
        return Ok(None);
    }
    let lookups = query_lookups(&part, m, model, &scan, count);
    if lookups <= budget {
        return Ok(None);
    }
    let vertices = (n as u128 * budget as u128 / lookups as u128).max(MIN_SCAN_TUPLES as u128);
    if n as u128 <= vertices {
        return Ok(None);
    }
    let stop = u128::from(rows) * vertices / n as u128;
    Ok(Some(u64::try_from(stop).unwrap_or(u64::MAX).max(1)))
}

/// The rows of tuples `members` (row-major, `m` codes each), in that order.
fn gather(tuples: &[u32], m: usize, members: &[usize]) -> Vec<u32> {
    members
        .iter()
        .flat_map(|&t| tuples[t * m..(t + 1) * m].iter().copied())
        .collect()
}

fn advance(progress: Option<Progress<'_>>, rows: u64, kernel: &'static str) -> Result<()> {
    match progress {
        // A refused progress report is the statement's interruption: the same error as a
        // cancellation seen by the kernel's own polls.
        Some(report) if !report(rows) => Err(crate::cancel::error(kernel)),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn halves(leaves: u32) -> Hierarchy {
        let height = leaves.trailing_zeros();
        let levels: Vec<Vec<u32>> = (0..=height)
            .map(|l| (0..leaves).map(|x| x >> l).collect())
            .collect();
        let slices: Vec<&[u32]> = levels.iter().map(Vec::as_slice).collect();
        Hierarchy::try_from_levels(&slices).unwrap()
    }

    /// `n` distinct rows of `m` codes in four tight clusters of `leaves` leaves: the
    /// trie's bounds prune, and it beats a scan.
    fn clustered(n: usize, m: usize, leaves: u32) -> Vec<u32> {
        let mut state = 0x2545_f491_4f6c_dd1du64;
        let mut next = move || {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            (state >> 33) as u32
        };
        let mut seen = std::collections::BTreeSet::new();
        let mut out = Vec::new();
        while seen.len() < n {
            let centre = next() % 4;
            let row: Vec<u32> = (0..m)
                .map(|_| (centre * (leaves / 4) + next() % 16).min(leaves - 1))
                .collect();
            if seen.insert(row.clone()) {
                out.extend(row);
            }
        }
        out
    }

    #[test]
    fn a_trie_that_pays_but_reads_over_the_budget_is_cut() {
        let (n, m, leaves) = (3 * MIN_SCAN_TUPLES, 4, 4096);
        let tuples = clustered(n, m, leaves);
        let model =
            CostModel::try_new(vec![halves(leaves); m], vec![1.0; m], LevelCost::Ncp).unwrap();
        let members: Vec<usize> = (0..n).collect();
        let rows = n as u64;
        let scan = Scan::new(&tuples, m, &model);
        let lookups = query_lookups(&tuples, m, &model, &scan, 4);
        // The trie pays: its queries read less than a scan's.
        assert!(0 < lookups && lookups < n * scan.lookups(), "{lookups}");
        let limit = |budget| scan_limit(&tuples, m, rows, &members, &model, 4, budget).unwrap();
        assert_eq!(limit(lookups), None);
        // A third of the reads: cut to about a third of the rows.
        let cut = limit(lookups / 3).expect("not cut");
        assert!((rows / 3 - 2..=rows / 3 + 2).contains(&cut), "{cut}");
        // Never below MIN_SCAN_TUPLES tuples.
        assert_eq!(limit(1), Some(MIN_SCAN_TUPLES as u64));
    }
}
