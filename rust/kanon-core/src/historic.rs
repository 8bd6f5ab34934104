//! The historic greedy algorithms of Sweeney (2002), "Achieving k-anonymity privacy
//! protection using generalization and suppression": **Datafly** and **μ-Argus**, as
//! baselines next to the optimal lattice search ([`crate::lattice`]).
//!
//! Both take the same histogram as [`crate::lattice::optimal`] (distinct leaf-code
//! tuples with their row counts) and return one full-domain generalization level per
//! attribute, the cells and rows they suppress, and a report of what the historic
//! algorithm alone would have left unprotected.
//!
//! # Classes of a release
//! Rows are grouped by, per attribute, the label code at the chosen level, or a distinct
//! *suppressed* marker if that cell is suppressed. A fully suppressed row has the marker
//! in every attribute, so all fully suppressed rows form one class, the `*` class (a row
//! whose cells μ-Argus happened to suppress all is in it too).
//!
//! # Finishing (both algorithms)
//! 1. The rows of classes of fewer than `k` rows are suppressed entirely (they join the
//!    `*` class).
//! 2. If `keep_suppressed` and the `*` class holds between 1 and `k − 1` rows, whole
//!    further classes are suppressed, smallest first, until it holds at least `k` rows
//!    (it always gets there: at worst every row is suppressed, and the table holds at
//!    least `k` rows). Ties between classes of equal size are broken by their key, label
//!    codes compared attribute by attribute with the marker after every label, so the
//!    result never depends on the order of the input tuples.
//!
//! After finishing the release is k-anonymous: every class holds at least `k` rows, the
//! `*` class included when it is kept (it is dropped from the release otherwise).
//!
//! Tuples with a count of 0 hold no rows: they never influence a choice, they get the
//! treatment of their class (a class holding only such tuples has 0 rows, fewer than
//! `k`, and is suppressed), and a class of 0 rows is not counted in
//! [`HistoricReport::unprotected_classes`].
//!
//! Every choice depends on the tuples' contents only, never on their order: permuting
//! the input tuples permutes `cells` and `suppressed` the same way and changes nothing
//! else.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::cancel;
use crate::error::{KernelError, Result};
use crate::hierarchy::{check_histogram, Hierarchy};

const DATAFLY: &str = "datafly";
const MU_ARGUS: &str = "mu_argus";

/// Most attributes the historic algorithms accept (cell masks are `u64`).
pub const MAX_ATTRIBUTES: usize = 64;

/// The marker of a suppressed cell in a class key (sorts after every label code).
const MARKER: u32 = u32::MAX;

/// One histogram and the options of the algorithms of this module, by name.
#[derive(Debug, Clone, Copy)]
pub struct Histogram<'a> {
    /// Row-major leaf codes, `m` per tuple.
    pub tuples: &'a [u32],
    /// Attributes per tuple.
    pub m: usize,
    /// Rows per tuple.
    pub counts: &'a [u64],
    /// One hierarchy per attribute.
    pub hierarchies: &'a [Hierarchy],
    /// Every released class holds at least `k` rows.
    pub k: u64,
    /// Datafly only: the rows its loop may leave below `k` (None: `k`, Sweeney's rule).
    pub max_suppressed: Option<u64>,
    /// Whether suppressed rows stay in the release as the `*` class.
    pub keep_suppressed: bool,
}

/// An algorithm of this module on one histogram.
pub type Algorithm = fn(&Histogram<'_>) -> Result<HistoricRelease>;

/// The algorithms by name (the `method` of `kanon_historic`): a new full-domain
/// heuristic over the histogram is a function and a row here.
pub const ALGORITHMS: &[(&str, Algorithm)] = &[(DATAFLY, datafly_on), (MU_ARGUS, mu_argus_on)];

/// The algorithm named `name`.
///
/// # Errors
/// [`KernelError::InvalidArgument`] naming the algorithms, for an unknown name.
pub fn algorithm(kernel: &'static str, name: &str) -> Result<Algorithm> {
    ALGORITHMS
        .iter()
        .find(|(known, _)| *known == name)
        .map(|&(_, run)| run)
        .ok_or_else(|| {
            let known: Vec<&str> = ALGORITHMS.iter().map(|(known, _)| *known).collect();
            KernelError::InvalidArgument {
                kernel,
                message: format!("unknown method {name:?}, expected one of {known:?}"),
            }
        })
}

fn datafly_on(h: &Histogram<'_>) -> Result<HistoricRelease> {
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

fn mu_argus_on(h: &Histogram<'_>) -> Result<HistoricRelease> {
    if h.max_suppressed.is_some() {
        return Err(KernelError::InvalidArgument {
            kernel: MU_ARGUS,
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

/// A release of one of the historic algorithms.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HistoricRelease {
    /// One generalization level per attribute (full-domain, the same for every row).
    pub levels: Vec<u32>,
    /// Per input tuple: bitmask of the attributes whose cell is suppressed (`*`), bit `j`
    /// for attribute `j`; 0 when none is.
    pub cells: Vec<u64>,
    /// Per input tuple: the whole row is suppressed (all its cells are `*`); exactly when
    /// `cells[t]` has all `m` bits set.
    pub suppressed: Vec<bool>,
    /// What the algorithm did.
    pub report: HistoricReport,
}

/// Counters of a historic release, in rows (a tuple counts as many times as its count).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HistoricReport {
    /// Rows that the historic algorithm alone leaves in classes of fewer than `k` rows
    /// (before the finishing suppression).
    pub unprotected_rows: u64,
    /// Those classes (classes holding at least one row).
    pub unprotected_classes: u64,
    /// Cells (row × attribute) that the historic algorithm suppressed (μ-Argus; 0 for
    /// Datafly), before finishing (saturating at `u64::MAX`).
    pub suppressed_cells: u64,
    /// Rows finally suppressed entirely (the `*` class).
    pub suppressed_rows: u64,
    /// Rows suppressed only to make the kept `*` class reach `k` rows.
    pub topped_up_rows: u64,
    /// Generalization steps taken (one level of one attribute each).
    pub steps: u64,
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
/// documentation](self). No cell is suppressed: `cells[t]` is all bits for a suppressed
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
    validate(DATAFLY, tuples, m, counts, hierarchies, k)?;
    let n = counts.len();
    let mut levels = vec![0u32; m];
    let mut keys = vec![0u32; n * m];
    let mut steps = 0u64;
    let mut seen: Vec<bool> = Vec::new();
    loop {
        // Each step relabels and groups every tuple: poll once per step.
        cancel::check(DATAFLY)?;
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
/// rows). The release then finishes as described in the [module documentation](self):
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
    cancel::check(MU_ARGUS)?;
    validate(MU_ARGUS, tuples, m, counts, hierarchies, k)?;
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
        cancel::check(MU_ARGUS)?;
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
    let mut poll = cancel::Poll::new(MU_ARGUS, 4096);
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

/// Check the inputs shared by both algorithms.
fn validate(
    kernel: &'static str,
    tuples: &[u32],
    m: usize,
    counts: &[u64],
    hierarchies: &[Hierarchy],
    k: u64,
) -> Result<()> {
    let invalid = |message: String| KernelError::InvalidArgument { kernel, message };
    let rows = check_histogram(kernel, tuples, m, counts, hierarchies)?;
    if m > MAX_ATTRIBUTES {
        return Err(invalid(format!(
            "at most {MAX_ATTRIBUTES} quasi-identifiers are supported, got {m}"
        )));
    }
    if k == 0 {
        return Err(invalid("k must be at least 1".to_owned()));
    }
    if counts.len() > u32::MAX as usize {
        return Err(invalid(format!(
            "at most {} tuples are supported, got {}",
            u32::MAX,
            counts.len()
        )));
    }
    for (j, h) in hierarchies.iter().enumerate() {
        if h.leaves() >= MARKER as usize {
            return Err(invalid(format!(
                "the hierarchy of attribute {j} has {} leaves, more than supported",
                h.leaves()
            )));
        }
    }
    if rows < k {
        return Err(invalid(format!(
            "the table has {rows} rows, fewer than k = {k}: no release can be k-anonymous"
        )));
    }
    Ok(())
}

/// `keys[t * m + j]`: the label of tuple `t`'s attribute `j` at `levels[j]`.
fn fill_labels(
    keys: &mut [u32],
    tuples: &[u32],
    m: usize,
    hierarchies: &[Hierarchy],
    levels: &[u32],
) {
    for (key, row) in keys.chunks_exact_mut(m).zip(tuples.chunks_exact(m)) {
        for (j, (out, &code)) in key.iter_mut().zip(row).enumerate() {
            *out = hierarchies[j].generalize(levels[j] as usize, code);
        }
    }
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

/// A fixed, seedless hasher (FxHash-like words, a final avalanche).
#[derive(Default)]
struct WordHasher(u64);

impl WordHasher {
    fn mix(&mut self, word: u64) {
        self.0 = (self.0.rotate_left(5) ^ word).wrapping_mul(0x517c_c1b7_2722_0a95);
    }
}

impl Hasher for WordHasher {
    fn finish(&self) -> u64 {
        let x = self.0;
        let x = (x ^ (x >> 31)).wrapping_mul(0xbf58_476d_1ce4_e5b9);
        x ^ (x >> 29)
    }

    fn write(&mut self, bytes: &[u8]) {
        let mut chunks = bytes.chunks_exact(8);
        for chunk in &mut chunks {
            let mut word = [0u8; 8];
            word.copy_from_slice(chunk);
            self.mix(u64::from_le_bytes(word));
        }
        let rest = chunks.remainder();
        if !rest.is_empty() {
            let mut word = [0u8; 8];
            word[..rest.len()].copy_from_slice(rest);
            self.mix(u64::from_le_bytes(word));
        }
    }

    fn write_u32(&mut self, v: u32) {
        self.mix(u64::from(v));
    }

    fn write_u64(&mut self, v: u64) {
        self.mix(v);
    }

    fn write_usize(&mut self, v: usize) {
        self.mix(v as u64);
    }

    fn write_u128(&mut self, v: u128) {
        self.mix(v as u64);
        self.mix((v >> 64) as u64);
    }
}

type Fixed = BuildHasherDefault<WordHasher>;

/// Classes of keyed tuples: class of every tuple, rows and first tuple of every class.
struct Groups {
    of: Vec<u32>,
    rows: Vec<u64>,
    first: Vec<usize>,
}

/// Group the tuples by their keys (`m` codes each).
fn group(keys: &[u32], m: usize, counts: &[u64]) -> Groups {
    let mut index: HashMap<&[u32], u32, Fixed> =
        HashMap::with_capacity_and_hasher(counts.len(), Fixed::default());
    let mut groups = Groups {
        of: Vec::with_capacity(counts.len()),
        rows: Vec::new(),
        first: Vec::new(),
    };
    for (t, (key, &c)) in keys.chunks_exact(m).zip(counts).enumerate() {
        let next = groups.rows.len() as u32;
        let class = *index.entry(key).or_insert_with(|| {
            groups.first.push(t);
            groups.rows.push(0);
            next
        });
        groups.rows[class as usize] += c;
        groups.of.push(class);
    }
    groups
}

/// The shared finishing of the algorithm's output (`keys`, with the marker in suppressed
/// cells; `release` with its levels, cells and report so far): suppress the classes
/// below `k` (counted as unprotected), top up the kept `*` class, fill the release.
fn finish(
    keys: &[u32],
    m: usize,
    counts: &[u64],
    k: u64,
    keep_suppressed: bool,
    mut release: HistoricRelease,
) -> HistoricRelease {
    let report = &mut release.report;
    let groups = group(keys, m, counts);
    let key = |class: usize| &keys[groups.first[class] * m..(groups.first[class] + 1) * m];
    let classes = groups.rows.len();
    let mut star = vec![false; classes];
    let mut star_rows = 0u64;
    for (class, &rows) in groups.rows.iter().enumerate() {
        if rows < k {
            star[class] = true;
            star_rows += rows;
            if rows > 0 {
                report.unprotected_rows += rows;
                report.unprotected_classes += 1;
            }
        } else if key(class).iter().all(|&c| c == MARKER) {
            star[class] = true;
            star_rows += rows;
        }
    }
    if keep_suppressed && star_rows > 0 && star_rows < k {
        let mut order: Vec<usize> = (0..classes).filter(|&c| !star[c]).collect();
        order.sort_unstable_by(|&a, &b| {
            groups.rows[a]
                .cmp(&groups.rows[b])
                .then_with(|| key(a).cmp(key(b)))
        });
        for class in order {
            if star_rows >= k {
                break;
            }
            star[class] = true;
            star_rows += groups.rows[class];
            report.topped_up_rows += groups.rows[class];
        }
    }
    report.suppressed_rows = star_rows;
    let full = if m == MAX_ATTRIBUTES {
        u64::MAX
    } else {
        (1u64 << m) - 1
    };
    release.suppressed = groups.of.iter().map(|&c| star[c as usize]).collect();
    for (cell, &gone) in release.cells.iter_mut().zip(&release.suppressed) {
        if gone {
            *cell = full;
        }
    }
    release
}
