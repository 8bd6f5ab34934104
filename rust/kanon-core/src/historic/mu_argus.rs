//! Sweeney's μ-Argus: each attribute up to k on its own, then cells of rare 2- and 3-combinations.

use std::collections::HashMap;

use super::release::{
    fill_labels, finish, validate, Fixed, Histogram, HistoricRelease, HistoricReport, MARKER,
    MAX_ATTRIBUTES,
};
use crate::cancel;
use crate::error::{KernelError, Result};
use crate::hierarchy::Hierarchy;

/// Its name in [`super::ALGORITHMS`] and in errors.
pub(super) const NAME: &str = "mu_argus";

/// μ-Argus on a histogram; it takes no `max_suppressed`.
pub(super) fn on_histogram(h: &Histogram<'_>) -> Result<HistoricRelease> {
    if h.max_suppressed.is_some() {
        return Err(KernelError::InvalidArgument {
            kernel: NAME,
            message: "max_suppressed applies to method 'datafly' only; 'mu_argus' suppresses \
                      what its own rules leave below k"
                .to_owned(),
        });
    }
    mu_argus(
        h.tuples,
        h.m,
        h.counts,
        h.hierarchies,
        h.k,
        h.keep_suppressed,
    )
}

/// Sweeney's μ-Argus, every attribute treated as "most identifying".
///
/// 1. **Levels.** Each attribute separately goes up one level at a time until every
///    label of it that occurs (in at least one row) occurs in at least `k` rows, or to
///    its top level.
/// 2. **Outliers.** For every combination of 2 and of 3 attributes, the combinations of
///    labels (at the chosen levels) occurring in fewer than `k` rows are outliers. The
///    frequencies are counted once, before any suppression.
/// 3. **Cell suppression.** Every tuple taking part in outliers is handled on its own:
///    repeatedly, the cell of the attribute that lies in the most of the tuple's
///    still-outlying combinations is suppressed (ties: the lowest attribute index), until
///    none is left. A combination containing a suppressed cell of the tuple no longer
///    counts as that combination (it stops being an outlier of the tuple); the others
///    keep the frequencies of step 2 (one sweep over the outliers found there, as in
///    Sweeney's description; suppressions in other tuples are not recounted). This is
///    greedy set cover, so at most `m − 1` cells of a row are suppressed.
///
/// Combinations of 4 or more attributes are not checked, so the output may not be
/// k-anonymous: [`HistoricReport::unprotected_rows`] / `unprotected_classes` count the
/// rows and classes of this output (suppressed cells as the marker) in classes of fewer
/// than `k` rows, and [`HistoricReport::suppressed_cells`] the cells of step 3 (in
/// rows). The release then finishes as described in the [module documentation](super):
/// the unprotected rows are suppressed entirely, then the kept `*` class is topped up.
/// `cells[t]` of a tuple that is not suppressed entirely holds its step-3 cells.
///
/// # Arguments
/// As [`datafly`], without the suppression limit.
///
/// # Errors
/// As [`datafly`].
///
/// # Complexity
/// O(Σ_j (L_j · leaves_j) + n · m) for the levels, O(n · C) time for the C = m(m−1)/2 +
/// m(m−1)(m−2)/6 combinations (hash maps, or dense arrays when the labels of a
/// combination are few, over the n tuples of the histogram, never over rows), plus
/// O(o · m) for the o (tuple, outlying combination) pairs, which are also the extra
/// space.
///
/// # Examples
/// ```
/// use kanon_core::historic::mu_argus;
/// use kanon_core::Hierarchy;
/// let h = || Hierarchy::flat(2);
/// // Four binary attributes, all 16 tuples once: every 3-combination occurs twice, so
/// // μ-Argus sees no outlier, yet every row is unique on all four attributes.
/// let tuples: Vec<u32> = (0..16u32).flat_map(|x| (0..4).map(move |j| (x >> j) & 1)).collect();
/// let release = mu_argus(&tuples, 4, &[1; 16], &[h(), h(), h(), h()], 2, true).unwrap();
/// assert_eq!(release.levels, vec![0; 4]);
/// assert_eq!(release.report.suppressed_cells, 0);
/// assert_eq!(release.report.unprotected_rows, 16);
/// assert_eq!(release.suppressed, vec![true; 16]); // finished: all in the `*` class
/// ```
pub fn mu_argus(
    tuples: &[u32],
    m: usize,
    counts: &[u64],
    hierarchies: &[Hierarchy],
    k: u64,
    keep_suppressed: bool,
) -> Result<HistoricRelease> {
    cancel::check(NAME)?;
    validate(NAME, tuples, m, counts, hierarchies, k)?;
    let n = counts.len();
    // Step 1: per attribute, the lowest level at which every occurring label has k rows.
    let levels: Vec<u32> = hierarchies
        .iter()
        .enumerate()
        .map(|(j, h)| attribute_level(h, tuples, m, j, counts, k))
        .collect();
    let steps = levels.iter().map(|&l| u64::from(l)).sum();
    let mut keys = vec![0u32; n * m];
    fill_labels(&mut keys, tuples, m, hierarchies, &levels);
    // Step 2: (tuple, combination) pairs whose combination of labels is an outlier.
    let widths: Vec<u32> = hierarchies
        .iter()
        .zip(&levels)
        .map(|(h, &l)| h.width(l as usize).max(1))
        .collect();
    let combos = combinations(m);
    let mut outliers: Vec<(u32, u32)> = Vec::new();
    let mut combo_keys: Vec<u128> = vec![0; n];
    let mut sparse: HashMap<u128, u64, Fixed> = HashMap::default();
    let mut dense: Vec<u64> = Vec::new();
    let dense_limit = (2 * n).max(1 << 11) as u128;
    for (id, combo) in combos.iter().enumerate() {
        cancel::check(NAME)?;
        let attrs = combo.attributes();
        let size: u128 = attrs.iter().map(|&j| u128::from(widths[j])).product();
        for (key, row) in combo_keys.iter_mut().zip(keys.chunks_exact(m)) {
            *key = attrs.iter().fold(0u128, |acc, &j| {
                acc * u128::from(widths[j]) + u128::from(row[j])
            });
        }
        if size <= dense_limit {
            dense.clear();
            dense.resize(size as usize, 0);
            for (&key, &c) in combo_keys.iter().zip(counts) {
                dense[key as usize] += c;
            }
            for (t, &key) in combo_keys.iter().enumerate() {
                if dense[key as usize] < k {
                    outliers.push((t as u32, id as u32));
                }
            }
        } else {
            sparse.clear();
            for (&key, &c) in combo_keys.iter().zip(counts) {
                *sparse.entry(key).or_insert(0) += c;
            }
            for (t, key) in combo_keys.iter().enumerate() {
                if sparse.get(key).is_some_and(|&rows| rows < k) {
                    outliers.push((t as u32, id as u32));
                }
            }
        }
    }
    // Step 3: per tuple, greedy set cover of its outlying combinations by attributes.
    let mut start = vec![0usize; n + 1];
    for &(t, _) in &outliers {
        start[t as usize + 1] += 1;
    }
    for t in 0..n {
        start[t + 1] += start[t];
    }
    let mut by_tuple = vec![0u64; outliers.len()];
    let mut next = start.clone();
    for &(t, id) in &outliers {
        by_tuple[next[t as usize]] = combos[id as usize].mask;
        next[t as usize] += 1;
    }
    drop(outliers);
    let mut cells = vec![0u64; n];
    let mut suppressed_cells = 0u64;
    let mut score = [0u32; MAX_ATTRIBUTES];
    let mut left: Vec<u64> = Vec::new();
    let mut poll = cancel::Poll::new(NAME, 4096);
    for t in 0..n {
        poll.tick()?;
        left.clear();
        left.extend_from_slice(&by_tuple[start[t]..start[t + 1]]);
        let mut mask = 0u64;
        while !left.is_empty() {
            score[..m].fill(0);
            for &combo in &left {
                let mut bits = combo;
                while bits != 0 {
                    score[bits.trailing_zeros() as usize] += 1;
                    bits &= bits - 1;
                }
            }
            // The first maximum: ties go to the lowest attribute index.
            let j = (1..m).fold(0, |best, i| if score[i] > score[best] { i } else { best });
            mask |= 1u64 << j;
            left.retain(|&combo| combo & (1u64 << j) == 0);
        }
        cells[t] = mask;
        // Saturating: at most 64 cells per row, but the rows may be close to 2^64.
        suppressed_cells =
            suppressed_cells.saturating_add(u64::from(mask.count_ones()).saturating_mul(counts[t]));
        for (j, key) in keys[t * m..(t + 1) * m].iter_mut().enumerate() {
            if mask & (1u64 << j) != 0 {
                *key = MARKER;
            }
        }
    }
    let release = HistoricRelease {
        levels,
        cells,
        suppressed: Vec::new(),
        report: HistoricReport {
            steps,
            suppressed_cells,
            ..HistoricReport::default()
        },
    };
    Ok(finish(&keys, m, counts, k, keep_suppressed, release))
}

/// μ-Argus step 1 for attribute `j`: the lowest level at which every label that occurs
/// holds at least `k` rows (the top level otherwise).
fn attribute_level(
    h: &Hierarchy,
    tuples: &[u32],
    m: usize,
    j: usize,
    counts: &[u64],
    k: u64,
) -> u32 {
    let mut leaf_rows = vec![0u64; h.leaves()];
    for (row, &c) in tuples.chunks_exact(m).zip(counts) {
        leaf_rows[row[j] as usize] += c;
    }
    let mut label_rows: Vec<u64> = Vec::new();
    for level in 0..h.height() {
        label_rows.clear();
        label_rows.resize(h.width(level) as usize, 0);
        for (&up, &rows) in h.level(level).iter().zip(&leaf_rows) {
            label_rows[up as usize] += rows;
        }
        if label_rows.iter().all(|&r| r == 0 || r >= k) {
            return level as u32;
        }
    }
    h.height() as u32
}

/// A combination of 2 or 3 attributes.
struct Combo {
    attrs: [usize; 3],
    len: usize,
    mask: u64,
}

impl Combo {
    fn attributes(&self) -> &[usize] {
        &self.attrs[..self.len]
    }
}

/// All combinations of 2 and of 3 of `m` attributes.
fn combinations(m: usize) -> Vec<Combo> {
    let mut all = Vec::new();
    for a in 0..m {
        for b in a + 1..m {
            all.push(Combo {
                attrs: [a, b, 0],
                len: 2,
                mask: (1 << a) | (1 << b),
            });
            for c in b + 1..m {
                all.push(Combo {
                    attrs: [a, b, c],
                    len: 3,
                    mask: (1 << a) | (1 << b) | (1 << c),
                });
            }
        }
    }
    all
}
