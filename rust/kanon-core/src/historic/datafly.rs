//! Sweeney's Datafly: generalize the attribute with the most distinct labels until k nearly holds.

use super::release::{
    fill_labels, finish, group, validate, Histogram, HistoricRelease, HistoricReport,
};
use crate::cancel;
use crate::error::Result;
use crate::hierarchy::Hierarchy;

/// Its name in [`super::ALGORITHMS`] and in errors.
pub(super) const NAME: &str = "datafly";

/// Datafly on a histogram: `max_suppressed` None is Sweeney's rule, `k` rows.
pub(super) fn on_histogram(h: &Histogram<'_>) -> Result<HistoricRelease> {
    let limit = h.max_suppressed.unwrap_or(h.k);
    datafly(
        h.tuples,
        h.m,
        h.counts,
        h.hierarchies,
        h.k,
        limit,
        h.keep_suppressed,
    )
}

/// Sweeney's Datafly.
///
/// Starts at level 0 everywhere. While the rows in classes of fewer than `k` rows are
/// more than `max_suppressed` (Sweeney uses `k`), generalizes by one level the attribute
/// with the most distinct labels among the rows at the current levels: ties go to the
/// lowest attribute index, and an attribute at its top level is never chosen (if none
/// can be generalized the loop stops; it cannot happen, since at the top of every
/// hierarchy all rows form one class of at least `k`). Then suppresses the rows of the
/// classes below `k` entirely and finishes as described in the [module
/// documentation](super). No cell is suppressed: `cells[t]` is all bits for a suppressed
/// tuple and 0 otherwise.
///
/// [`HistoricReport::unprotected_rows`] / [`HistoricReport::unprotected_classes`]: what
/// remained in classes below `k` when the loop stopped; `unprotected_rows` is therefore
/// at most `max_suppressed`.
///
/// # Arguments
/// * `tuples` – row-major leaf codes, `m` per tuple (distinct tuples of a table, or any
///   rows: equal tuples simply add up).
/// * `counts` – rows per tuple.
/// * `hierarchies` – one per attribute.
/// * `k` – every released class holds at least `k` rows (`k >= 1`).
/// * `max_suppressed` – the rows the loop may leave below `k` (they are suppressed).
/// * `keep_suppressed` – whether suppressed rows stay in the release as the `*` class
///   (which must then hold at least `k` rows).
///
/// # Errors
/// [`KernelError::LengthMismatch`] for `m = 0` or lengths that do not fit together,
/// [`KernelError::InvalidArgument`] for `m > 64`, `k = 0`, a code outside its
/// hierarchy, counts that overflow 64 bits or a table of fewer than `k` rows.
///
/// # Complexity
/// O(s · n · m) time for s generalization steps (at most the sum of the heights) over n
/// tuples, O(n · m) space.
///
/// # Examples
/// ```
/// use kanon_core::historic::datafly;
/// use kanon_core::Hierarchy;
/// let age = Hierarchy::try_from_levels(&[&[0, 1, 2, 3], &[0, 0, 1, 1], &[0, 0, 0, 0]]).unwrap();
/// let sex = Hierarchy::flat(2);
/// // (age, sex), one row each: age has 4 distinct values, sex 2, so age goes up first.
/// let tuples = [0, 0, 1, 0, 2, 1, 3, 1];
/// let release = datafly(&tuples, 2, &[1, 1, 1, 1], &[age, sex], 2, 0, true).unwrap();
/// assert_eq!(release.levels, vec![1, 0]);
/// assert_eq!(release.report.steps, 1);
/// assert_eq!(release.suppressed, vec![false; 4]);
/// ```
pub fn datafly(
    tuples: &[u32],
    m: usize,
    counts: &[u64],
    hierarchies: &[Hierarchy],
    k: u64,
    max_suppressed: u64,
    keep_suppressed: bool,
) -> Result<HistoricRelease> {
    validate(NAME, tuples, m, counts, hierarchies, k)?;
    let n = counts.len();
    let mut levels = vec![0u32; m];
    let mut keys = vec![0u32; n * m];
    let mut steps = 0u64;
    let mut seen: Vec<bool> = Vec::new();
    loop {
        // Each step relabels and groups every tuple: poll once per step.
        cancel::check(NAME)?;
        fill_labels(&mut keys, tuples, m, hierarchies, &levels);
        let classes = group(&keys, m, counts);
        let below: u64 = classes.rows.iter().filter(|&&r| r < k).sum();
        if below <= max_suppressed {
            break;
        }
        let mut best: Option<(usize, usize)> = None;
        for (j, h) in hierarchies.iter().enumerate() {
            let level = levels[j] as usize;
            if level >= h.height() {
                continue;
            }
            seen.clear();
            seen.resize(h.width(level) as usize, false);
            let mut distinct = 0usize;
            for (row, &c) in keys.chunks_exact(m).zip(counts) {
                let label = row[j] as usize;
                if c > 0 && !seen[label] {
                    seen[label] = true;
                    distinct += 1;
                }
            }
            if best.is_none_or(|(_, most)| distinct > most) {
                best = Some((j, distinct));
            }
        }
        let Some((j, _)) = best else {
            break;
        };
        levels[j] += 1;
        steps += 1;
    }
    let release = HistoricRelease {
        levels,
        cells: vec![0u64; n],
        suppressed: Vec::new(),
        report: HistoricReport {
            steps,
            ..HistoricReport::default()
        },
    };
    Ok(finish(&keys, m, counts, k, keep_suppressed, release))
}
