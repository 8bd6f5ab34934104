//! What the historic algorithms share: the histogram, the release, validation and the finishing.

use std::collections::HashMap;
use std::hash::{BuildHasherDefault, Hasher};

use crate::error::{KernelError, Result};
use crate::hierarchy::{check_histogram, Hierarchy};

/// Most attributes the historic algorithms accept (cell masks are `u64`).
pub const MAX_ATTRIBUTES: usize = 64;

/// The marker of a suppressed cell in a class key (sorts after every label code).
pub(super) const MARKER: u32 = u32::MAX;

/// One histogram and the options of the historic algorithms.
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

/// A historic algorithm on one histogram.
pub type Algorithm = fn(&Histogram<'_>) -> Result<HistoricRelease>;

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

/// Check the inputs shared by both algorithms.
pub(super) fn validate(
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
pub(super) fn fill_labels(
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

/// A fixed, seedless hasher (FxHash-like words, a final avalanche).
#[derive(Default)]
pub(super) struct WordHasher(u64);

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

pub(super) type Fixed = BuildHasherDefault<WordHasher>;

/// Classes of keyed tuples: class of every tuple, rows and first tuple of every class.
pub(super) struct Groups {
    of: Vec<u32>,
    /// Rows per class.
    pub(super) rows: Vec<u64>,
    first: Vec<usize>,
}

/// Group the tuples by their keys (`m` codes each).
pub(super) fn group(keys: &[u32], m: usize, counts: &[u64]) -> Groups {
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
pub(super) fn finish(
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
