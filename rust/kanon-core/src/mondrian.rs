//! Strict multidimensional Mondrian (LeFevre, DeWitt & Ramakrishnan 2006, "Mondrian
//! Multidimensional K-Anonymity"): recursive median cuts of the quasi-identifier space
//! into parts of at least k rows, each optionally satisfying further privacy models.
//!
//! # The cut rule
//! A part is cut on the attribute with the widest normalized range (times its weight, 1
//! unless given: [`mondrian_weighted`]) that admits an allowed cut. *Strict*: tuples with
//! equal keys always stay on the same side, so the candidate cuts of an attribute are the
//! boundaries between its consecutive distinct key values in the part. The boundary whose
//! left row count is closest to half the part's rows (the weighted median; ties to the
//! left one) is tried first, then the others outward from it in order of that distance
//! (ties to the left). A cut is allowed when both sides hold at least `k` rows and, with
//! models, both sides satisfy them.
//!
//! The result depends on the tuples' contents only, never on their order nor on the
//! number of threads: permuting the input tuples permutes `part_of_tuple` the same way
//! and changes nothing else.

use rayon::prelude::*;

use crate::cancel;
use crate::error::{KernelError, Result};
use crate::hierarchy::{check_histogram, Hierarchy};
use crate::models::{merge_sorted, ModelCheck};

const KERNEL: &str = "mondrian";

/// A cut whose sides both hold at least this many tuples splits them in parallel
/// (`rayon::join`); other sides are split on the current thread.
const PARALLEL_MIN: usize = 10_000;

/// What to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct MondrianOptions {
    /// Every part holds at least `k` rows (`k >= 1`).
    pub k: u64,
    /// Parts of at most `stop` rows are not split further (blocking mode); 0: split as
    /// long as any cut is allowed.
    pub stop: u64,
}

/// The parts of a Mondrian run.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Partition {
    /// Part of every input tuple; ids are dense `0..parts`, numbered left to right in
    /// the cut tree (the left side of a cut holds the lower keys).
    pub part_of_tuple: Vec<u32>,
    /// Number of parts.
    pub parts: usize,
    /// `levels[p * m + j]`: the lowest level of hierarchy `j` at which all leaves of part
    /// `p` share one ancestor (0 when the part holds one leaf of `j`).
    pub levels: Vec<u32>,
    /// Rows per part.
    pub rows: Vec<u64>,
}

/// Partition a histogram of tuples with strict multidimensional Mondrian.
///
/// Starting from one part holding every tuple, a part is final when it holds at most
/// `stop` rows (if `stop > 0`) or when no attribute admits an allowed cut; otherwise it
/// is cut and both sides are partitioned in turn. Attributes are tried by decreasing
/// normalized range over the part, `(max key − min key) / spans[j]` (ties: the lower
/// index first; attributes with span 0 or a single key in the part are never cut), and
/// the first that admits an allowed cut is cut as described in the [module
/// documentation](self). LeFevre et al., ICDE 2006, <https://doi.org/10.1109/ICDE.2006.101>.
///
/// # Arguments
/// * `tuples` – row-major leaf codes, `m` per tuple (normally distinct; equal tuples are
///   allowed: equal keys are never separated, so they always share a part).
/// * `m` – attributes per tuple (at least 1).
/// * `counts` – rows of each tuple (each positive).
/// * `keys` – per attribute `j`, one finite key per leaf of its hierarchy: `keys[j][leaf]`
///   orders leaf `leaf` (the number for numeric attributes, the leaf's position for
///   categorical ones).
/// * `spans` – per attribute, the finite, non-negative table-wide `max key − min key`
///   that normalizes ranges (given by the caller so that blocks of one table share it);
///   0 marks an attribute that is never cut.
/// * `hierarchies` – one per attribute, for [`Partition::levels`].
/// * `sensitive` – optionally, the sensitive code of every tuple (tuples with equal
///   quasi-identifiers but different sensitive codes are separate tuples) and the models
///   that both sides of a cut must satisfy ([`ModelCheck::class_ok`] with the side's
///   sensitive histogram and population 0).
/// * `options` – `k` and `stop`.
///
/// # Returns
/// The [`Partition`]: every part holds at least `k` rows and, with models, satisfies
/// them.
///
/// # Errors
/// * [`KernelError::LengthMismatch`] for `m = 0` or lengths that do not fit together
///   (`tuples` = n · m, `keys`, `spans` and `hierarchies` = m, sensitive codes = n).
/// * [`KernelError::InvalidArgument`] for `k = 0`, a count of 0, more than 2³² − 1
///   tuples, a code outside its hierarchy, keys not one per leaf of the hierarchy, a
///   non-finite key, a non-finite or negative span, counts that overflow 64 bits, fewer
///   rows than `k`, or a table that as a whole violates the models (nothing can be
///   released).
///
/// # Complexity
/// With n tuples, m attributes and D the depth of the cut tree (about log₂(n / k) for
/// balanced cuts): O(D · n · (m + log n)) time, the log factor only for parts whose key
/// range is much wider than their number of tuples (a counting sort is used otherwise).
/// With models, each tried cut also costs O(s) for the s distinct sensitive codes of the
/// part. O(n · m) auxiliary space. Large parts are split in parallel.
///
/// # Examples
/// ```
/// use kanon_core::mondrian::{mondrian, MondrianOptions};
/// use kanon_core::Hierarchy;
/// let age = Hierarchy::try_from_levels(&[&[0, 1, 2, 3], &[0, 0, 1, 1], &[0, 0, 0, 0]]).unwrap();
/// let keys = vec![vec![20.0, 30.0, 40.0, 50.0]];
/// let options = MondrianOptions { k: 2, stop: 0 };
/// // One tuple per age, one row each: the median cut separates {20, 30} from {40, 50}.
/// let p = mondrian(&[0, 1, 2, 3], 1, &[1; 4], &keys, &[30.0], &[age], None, &options)
///     .unwrap();
/// assert_eq!(p.part_of_tuple, vec![0, 0, 1, 1]);
/// assert_eq!(p.levels, vec![1, 1]);
/// assert_eq!(p.rows, vec![2, 2]);
/// ```
#[allow(clippy::too_many_arguments)]
pub fn mondrian(
    tuples: &[u32],
    m: usize,
    counts: &[u64],
    keys: &[Vec<f64>],
    spans: &[f64],
    hierarchies: &[Hierarchy],
    sensitive: Option<(&[u32], &ModelCheck)>,
    options: &MondrianOptions,
) -> Result<Partition> {
    let sets = vec![false; m];
    mondrian_with_sets(
        tuples,
        m,
        counts,
        keys,
        spans,
        &sets,
        hierarchies,
        sensitive,
        options,
    )
}

/// [`mondrian`] where the attributes flagged in `sets` are measured by their distinct
/// keys rather than their extent: such an attribute's normalized range over a part is
/// `(distinct keys in the part − 1) / spans[j]` (give `spans[j]` = the number of leaves
/// − 1). This is the loss of publishing a categorical attribute as the set of its
/// values (`{a, b}`), so the cuts go where the published sets are widest.
///
/// # Errors
/// As [`mondrian`], and [`KernelError::LengthMismatch`] if `sets` does not hold `m`
/// flags.
#[allow(clippy::too_many_arguments)]
pub fn mondrian_with_sets(
    tuples: &[u32],
    m: usize,
    counts: &[u64],
    keys: &[Vec<f64>],
    spans: &[f64],
    sets: &[bool],
    hierarchies: &[Hierarchy],
    sensitive: Option<(&[u32], &ModelCheck)>,
    options: &MondrianOptions,
) -> Result<Partition> {
    let weights = vec![1.0; m];
    mondrian_weighted(
        tuples,
        m,
        counts,
        keys,
        spans,
        sets,
        &weights,
        hierarchies,
        sensitive,
        options,
    )
}

/// [`mondrian_with_sets`] trying attributes by decreasing `weights[j] × normalized range`
/// (ties: the lower index first). Cutting an attribute narrows its ranges, so a heavy
/// (important) attribute ends up more precise: prioritized quasi-identifiers weigh the
/// choice so (PrioPrivacy's weights). All weights 1 is [`mondrian_with_sets`] exactly.
///
/// # Errors
/// As [`mondrian_with_sets`], and for `weights` not `m` positive finite numbers.
///
/// # Examples
/// ```
/// use kanon_core::mondrian::{mondrian_weighted, MondrianOptions};
/// use kanon_core::Hierarchy;
/// let h = Hierarchy::try_from_levels(&[&[0, 1, 2, 3], &[0, 0, 1, 1], &[0, 0, 0, 0]]).unwrap();
/// let (hs, keys) = ([h.clone(), h], vec![vec![0.0, 1.0, 2.0, 3.0]; 2]);
/// // Four tuples (a, b): (0, 0), (1, 2), (2, 1), (3, 3), both attributes equally wide.
/// let tuples = [0, 0, 1, 2, 2, 1, 3, 3];
/// let run = |w: &[f64]| mondrian_weighted(&tuples, 2, &[1; 4], &keys, &[3.0, 3.0],
///     &[false; 2], w, &hs, None, &MondrianOptions { k: 2, stop: 0 }).unwrap();
/// // Unweighted, the tie goes to `a`; weighted, `b` (the heavier) is cut.
/// assert_eq!(run(&[1.0, 1.0]).part_of_tuple, vec![0, 0, 1, 1]);
/// assert_eq!(run(&[0.5, 1.0]).part_of_tuple, vec![0, 1, 0, 1]);
/// ```
#[allow(clippy::too_many_arguments)]
pub fn mondrian_weighted(
    tuples: &[u32],
    m: usize,
    counts: &[u64],
    keys: &[Vec<f64>],
    spans: &[f64],
    sets: &[bool],
    weights: &[f64],
    hierarchies: &[Hierarchy],
    sensitive: Option<(&[u32], &ModelCheck)>,
    options: &MondrianOptions,
) -> Result<Partition> {
    cancel::check(KERNEL)?;
    let invalid = |message: String| KernelError::InvalidArgument {
        kernel: KERNEL,
        message,
    };
    let total = check_histogram(KERNEL, tuples, m, counts, hierarchies)?;
    let n = counts.len();
    let lengths = [keys.len(), spans.len(), sets.len(), weights.len()];
    for (argument, got) in std::iter::zip(["keys", "spans", "sets", "weights"], lengths) {
        if got != m {
            return Err(KernelError::LengthMismatch {
                kernel: KERNEL,
                argument,
                got,
                expected: m,
            });
        }
    }
    if let Some((codes, _)) = sensitive {
        if codes.len() != n {
            return Err(KernelError::LengthMismatch {
                kernel: KERNEL,
                argument: "sensitive",
                got: codes.len(),
                expected: n,
            });
        }
    }
    if u32::try_from(n).is_err() {
        return Err(invalid(format!(
            "at most {} tuples are supported, got {n}",
            u32::MAX
        )));
    }
    let k = options.k;
    if k == 0 {
        return Err(invalid("k must be at least 1".to_owned()));
    }
    if let Some(t) = counts.iter().position(|&c| c == 0) {
        return Err(invalid(format!("tuple {t} has count 0")));
    }
    if total < k {
        return Err(invalid(format!(
            "k exceeds the number of rows: k = {k} but there are {total} rows"
        )));
    }
    for (j, ((key, &span), h)) in keys.iter().zip(spans).zip(hierarchies).enumerate() {
        if key.len() != h.leaves() {
            return Err(invalid(format!(
                "attribute {j} has {} keys but its hierarchy has {} leaves",
                key.len(),
                h.leaves()
            )));
        }
        if let Some(leaf) = key.iter().position(|x| !x.is_finite()) {
            return Err(invalid(format!(
                "the key of leaf {leaf} of attribute {j} is {}, not a finite number",
                key[leaf]
            )));
        }
        if !(span.is_finite() && span >= 0.0) {
            return Err(invalid(format!(
                "the span of attribute {j} is {span}; it must be finite and non-negative"
            )));
        }
        let w = weights[j];
        if !(w.is_finite() && w > 0.0) {
            let message = format!("the weight of attribute {j} is {w}, not a positive number");
            return Err(invalid(message));
        }
    }
    if let Some((codes, check)) = sensitive {
        let mut histogram: Vec<(u32, u64)> =
            codes.iter().copied().zip(counts.iter().copied()).collect();
        merge_sorted(&mut histogram);
        if !check.class_ok(&histogram, total, 0) {
            return Err(invalid(
                "the table as a whole violates the privacy models, so no part can satisfy \
                 them: nothing can be released"
                    .to_owned(),
            ));
        }
    }

    let orders: Vec<KeyOrder> = keys.iter().map(|key| KeyOrder::new(key)).collect();
    let mut ranks = vec![0u32; n * m];
    for (row, codes) in ranks.chunks_exact_mut(m).zip(tuples.chunks_exact(m)) {
        for ((slot, &code), order) in row.iter_mut().zip(codes).zip(&orders) {
            *slot = order.rank_of[code as usize];
        }
    }
    let (values, leaf_at): (Vec<Vec<f64>>, Vec<Vec<u32>>) = orders
        .into_iter()
        .map(|order| (order.key_at, order.leaf_at))
        .unzip();
    let attribute_weights = weights;
    let mut order: Vec<u32> = (0..n as u32).collect();
    let mut weights = counts.to_vec();
    let mut codes: Vec<u32> = sensitive.map_or_else(Vec::new, |(c, _)| c.to_vec());
    let key_of_rank: Vec<Vec<u32>> = values
        .iter()
        .zip(sets)
        .map(|(values, &set)| {
            if !set {
                return Vec::new();
            }
            let mut index = 0u32;
            values
                .iter()
                .enumerate()
                .map(|(rank, key)| {
                    if rank > 0 && values[rank - 1] != *key {
                        index += 1;
                    }
                    index
                })
                .collect()
        })
        .collect();
    let context = Context {
        m,
        k,
        stop: options.stop,
        key_of_rank,
        values,
        spans,
        sets,
        weights: attribute_weights,
        models: sensitive.map(|(_, check)| check),
        sensitive_domain: codes.iter().max().map_or(0, |&c| c as usize + 1),
    };
    let slab = Slab {
        ranks: &mut ranks,
        tuple: &mut order,
        count: &mut weights,
        sensitive: &mut codes,
        base: 0,
        rows: total,
    };
    let mut starts = split_owned(&context, slab);
    // A cancelled split stops cutting and leaves a partial partition: drop it.
    cancel::check(KERNEL)?;
    starts.sort_unstable();

    let parts = starts.len();
    starts.push(n);
    let mut part_of_tuple = vec![0u32; n];
    for (p, bounds) in starts.windows(2).enumerate() {
        for &t in &order[bounds[0]..bounds[1]] {
            part_of_tuple[t as usize] = p as u32;
        }
    }
    let rows: Vec<u64> = starts
        .windows(2)
        .map(|bounds| weights[bounds[0]..bounds[1]].iter().sum())
        .collect();
    let levels = part_levels(&ranks, m, hierarchies, &leaf_at, &starts);
    Ok(Partition {
        part_of_tuple,
        parts,
        levels,
        rows,
    })
}

/// The leaves of one attribute in key order.
struct KeyOrder {
    /// `key_at[rank]`: the key of the leaf of that rank (non-decreasing; `-0.0` as `0.0`).
    key_at: Vec<f64>,
    /// `rank_of[leaf]`: the leaf's position when leaves are sorted by (key, leaf code).
    rank_of: Vec<u32>,
    /// `leaf_at[rank]`: the leaf of that rank.
    leaf_at: Vec<u32>,
}

impl KeyOrder {
    fn new(key: &[f64]) -> Self {
        // Adding 0.0 turns -0.0 into 0.0, so that both compare equal under total_cmp.
        let normal: Vec<f64> = key.iter().map(|&x| x + 0.0).collect();
        let mut leaf_at: Vec<u32> = (0..key.len() as u32).collect();
        leaf_at.sort_unstable_by(|&a, &b| {
            normal[a as usize]
                .total_cmp(&normal[b as usize])
                .then(a.cmp(&b))
        });
        let mut rank_of = vec![0u32; key.len()];
        for (rank, &leaf) in leaf_at.iter().enumerate() {
            rank_of[leaf as usize] = rank as u32;
        }
        let key_at = leaf_at.iter().map(|&leaf| normal[leaf as usize]).collect();
        Self {
            key_at,
            rank_of,
            leaf_at,
        }
    }
}

/// The lowest level of each hierarchy at which all leaves of each part share an ancestor:
/// the meet of the part's lowest and highest leaves in depth-first order. Part `p` holds
/// the tuples at positions `bounds[p]..bounds[p + 1]` of the working array `ranks` (`m`
/// key ranks per tuple; `leaf_at[j][rank]` is the leaf of a rank of attribute `j`).
fn part_levels(
    ranks: &[u32],
    m: usize,
    hierarchies: &[Hierarchy],
    leaf_at: &[Vec<u32>],
    bounds: &[usize],
) -> Vec<u32> {
    // Per attribute: the depth-first rank of the leaf of each key rank, and the leaf of
    // each depth-first rank.
    let (dfs_of, leaf_of_dfs): (Vec<Vec<u32>>, Vec<Vec<u32>>) = hierarchies
        .iter()
        .zip(leaf_at)
        .map(|(h, leaves)| {
            let dfs = h.dfs_ranks();
            let mut leaf_of = vec![0u32; dfs.len()];
            for (leaf, &d) in dfs.iter().enumerate() {
                leaf_of[d as usize] = leaf as u32;
            }
            (
                leaves.iter().map(|&leaf| dfs[leaf as usize]).collect(),
                leaf_of,
            )
        })
        .unzip();
    let mut levels = vec![0u32; (bounds.len() - 1) * m];
    levels
        .par_chunks_mut(m)
        .zip(bounds.par_windows(2))
        .with_min_len(256)
        .for_each_init(Vec::new, |range, (out, bounds)| {
            range.clear();
            range.resize(m, (u32::MAX, 0u32));
            for row in ranks[bounds[0] * m..bounds[1] * m].chunks_exact(m) {
                for ((slot, &r), dfs) in range.iter_mut().zip(row).zip(&dfs_of) {
                    let d = dfs[r as usize];
                    *slot = (slot.0.min(d), slot.1.max(d));
                }
            }
            for (j, (level, &(lo, hi))) in out.iter_mut().zip(range.iter()).enumerate() {
                if lo < hi {
                    let h = &hierarchies[j];
                    let (a, b) = (leaf_of_dfs[j][lo as usize], leaf_of_dfs[j][hi as usize]);
                    *level = (1..=h.height())
                        .find(|&l| h.generalize(l, a) == h.generalize(l, b))
                        .unwrap_or(h.height()) as u32;
                }
            }
        });
    levels
}

/// What every part of one run shares.
struct Context<'a> {
    m: usize,
    k: u64,
    stop: u64,
    /// `values[j][rank]`: the key of the leaf of that rank of attribute `j` (leaves
    /// sorted by key, then by code, so equal keys have consecutive ranks).
    values: Vec<Vec<f64>>,
    spans: &'a [f64],
    /// Attributes measured by their distinct keys ([`mondrian_with_sets`]).
    sets: &'a [bool],
    /// The weight of each attribute's normalized range ([`mondrian_weighted`]).
    weights: &'a [f64],
    /// `key_of_rank[j][rank]`: the index of the rank's key among the distinct keys of
    /// attribute `j` (empty for attributes not in `sets`).
    key_of_rank: Vec<Vec<u32>>,
    models: Option<&'a ModelCheck>,
    /// Sensitive codes are below this (0 without models).
    sensitive_domain: usize,
}

/// The tuples of one part, stored contiguously and reordered in place by the cuts.
struct Slab<'s> {
    /// Key ranks, `m` per tuple.
    ranks: &'s mut [u32],
    /// Input index of each tuple.
    tuple: &'s mut [u32],
    /// Rows of each tuple.
    count: &'s mut [u64],
    /// Sensitive code of each tuple (empty without models).
    sensitive: &'s mut [u32],
    /// Position of the first tuple in the whole working array.
    base: usize,
    /// Rows of the part.
    rows: u64,
}

impl<'s> Slab<'s> {
    fn len(&self) -> usize {
        self.tuple.len()
    }

    /// Swap tuples `a < b`.
    fn swap(&mut self, a: usize, b: usize, m: usize) {
        self.tuple.swap(a, b);
        self.count.swap(a, b);
        if !self.sensitive.is_empty() {
            self.sensitive.swap(a, b);
        }
        let (front, back) = self.ranks.split_at_mut(b * m);
        front[a * m..(a + 1) * m].swap_with_slice(&mut back[..m]);
    }

    /// Move the tuples whose rank of attribute `j` is at most `cut` to the front (Hoare's
    /// scheme: only misplaced pairs are swapped) and return their number.
    fn partition(&mut self, j: usize, m: usize, cut: u32) -> usize {
        let (mut i, mut end) = (0, self.len());
        loop {
            while i < end && self.ranks[i * m + j] <= cut {
                i += 1;
            }
            while i < end && self.ranks[(end - 1) * m + j] > cut {
                end -= 1;
            }
            if i >= end {
                return i;
            }
            self.swap(i, end - 1, m);
            i += 1;
            end -= 1;
        }
    }

    /// The first `mid` tuples (holding `left_rows` rows) and the others.
    fn split_at(self, mid: usize, m: usize, left_rows: u64) -> (Slab<'s>, Slab<'s>) {
        let (ranks_a, ranks_b) = self.ranks.split_at_mut(mid * m);
        let (tuple_a, tuple_b) = self.tuple.split_at_mut(mid);
        let (count_a, count_b) = self.count.split_at_mut(mid);
        let (sensitive_a, sensitive_b) = if self.sensitive.is_empty() {
            (<&mut [u32]>::default(), <&mut [u32]>::default())
        } else {
            self.sensitive.split_at_mut(mid)
        };
        (
            Slab {
                ranks: ranks_a,
                tuple: tuple_a,
                count: count_a,
                sensitive: sensitive_a,
                base: self.base,
                rows: left_rows,
            },
            Slab {
                ranks: ranks_b,
                tuple: tuple_b,
                count: count_b,
                sensitive: sensitive_b,
                base: self.base + mid,
                rows: self.rows - left_rows,
            },
        )
    }
}

/// A sensitive histogram as [`ModelCheck::class_ok`] takes it: (code, rows) by code.
type Histogram = Vec<(u32, u64)>;

/// Buffers reused from part to part on one thread.
#[derive(Default)]
struct Scratch {
    /// Lowest and highest key rank per attribute over the part.
    low: Vec<u32>,
    high: Vec<u32>,
    /// (weighted normalized range, attribute) of the attributes that may be cut.
    attributes: Vec<(f64, usize)>,
    /// Per distinct key of the part, in increasing order: the highest rank of the key's
    /// leaves in the part.
    group_rank: Vec<u32>,
    /// `prefix[g]`: rows of the groups before `g` (one more entry than groups).
    prefix: Vec<u64>,
    /// With models: the part's positions sorted by key rank, and where each group starts.
    order: Vec<u32>,
    group_start: Vec<u32>,
    /// Counting sort buckets.
    bucket_rows: Vec<u64>,
    bucket_tuples: Vec<u32>,
    /// Comparison sort keys `rank << 32 | position`.
    packed: Vec<u64>,
    /// With models: the local sensitive id of each position, the codes of the local ids
    /// (empty when the local id is the code), and histograms over local ids.
    local: Vec<u32>,
    local_code: Vec<u32>,
    whole: Vec<u64>,
    left_low: Vec<u64>,
    left_high: Vec<u64>,
    list_left: Histogram,
    list_right: Histogram,
    /// Per distinct key, the stamp of the last [`distinct_keys`] call that saw it.
    seen: Vec<u32>,
    stamp: u32,
}

/// Partition a slab on a fresh scratch and return the start positions of its parts.
fn split_owned(context: &Context<'_>, slab: Slab<'_>) -> Vec<usize> {
    let mut scratch = Scratch::default();
    let mut starts = Vec::new();
    split(context, slab, &mut scratch, &mut starts);
    starts
}

/// Partition a slab, pushing the start position of each final part (in no set order).
///
/// The smaller side of a cut is handled by a recursive call and the larger one by the
/// loop, so the recursion depth stays below log₂ n (plus one level per `rayon::join`,
/// which needs both sides of at least [`PARALLEL_MIN`] tuples).
fn split(
    context: &Context<'_>,
    mut slab: Slab<'_>,
    scratch: &mut Scratch,
    starts: &mut Vec<usize>,
) {
    loop {
        // Each cut costs O(slab) work: polling here stops within a cut of the top slab.
        if cancel::requested() {
            starts.push(slab.base);
            return;
        }
        let Some((j, cut, left_rows)) = find_cut(context, &slab, scratch) else {
            starts.push(slab.base);
            return;
        };
        let mid = slab.partition(j, context.m, cut);
        let (left, right) = slab.split_at(mid, context.m, left_rows);
        if left.len().min(right.len()) >= PARALLEL_MIN {
            let (mut a, mut b) = rayon::join(
                || split_owned(context, left),
                || split_owned(context, right),
            );
            starts.append(&mut a);
            starts.append(&mut b);
            return;
        }
        let (small, large) = if left.len() <= right.len() {
            (left, right)
        } else {
            (right, left)
        };
        split(context, small, scratch, starts);
        slab = large;
    }
}

/// The attribute, the highest key rank of the left side and the left side's rows of the
/// cut of a part, or `None` when the part is final.
fn find_cut(context: &Context<'_>, slab: &Slab<'_>, s: &mut Scratch) -> Option<(usize, u32, u64)> {
    let (m, k, rows) = (context.m, context.k, slab.rows);
    if (context.stop > 0 && rows <= context.stop) || rows / 2 < k {
        return None;
    }
    key_ranges(slab.ranks, m, &mut s.low, &mut s.high);
    s.attributes.clear();
    for j in 0..m {
        let span = context.spans[j];
        if span > 0.0 && s.high[j] > s.low[j] {
            let values = &context.values[j];
            let range = if context.sets[j] {
                let key_of_rank = &context.key_of_rank[j];
                let distinct =
                    distinct_keys(slab.ranks, m, j, key_of_rank, &mut s.seen, &mut s.stamp);
                (distinct - 1) as f64 / span
            } else {
                (values[s.high[j] as usize] - values[s.low[j] as usize]) / span
            };
            if range > 0.0 {
                // Of two equally wide attributes the heavier (more important) is cut
                // first, so it ends more precise; a weight of 1 changes nothing.
                s.attributes.push((range * context.weights[j], j));
            }
        }
    }
    s.attributes
        .sort_unstable_by(|a, b| b.0.total_cmp(&a.0).then(a.1.cmp(&b.1)));
    if s.attributes.is_empty() {
        return None;
    }
    if context.models.is_some() {
        local_sensitive(context, slab, s);
    }
    for a in 0..s.attributes.len() {
        let j = s.attributes[a].1;
        build_groups(context, slab, j, s);
        if let Some(b) = search(context, slab, s) {
            return Some((j, s.group_rank[b - 1], s.prefix[b]));
        }
    }
    None
}

/// The number of distinct keys of attribute `j` over rows of `m` ranks, given the
/// distinct key of every rank (`key_of_rank`). `seen` and `stamp` are scratch: a key was
/// seen in this call when its entry equals the call's stamp.
fn distinct_keys(
    ranks: &[u32],
    m: usize,
    j: usize,
    key_of_rank: &[u32],
    seen: &mut Vec<u32>,
    stamp: &mut u32,
) -> usize {
    if *stamp == u32::MAX {
        seen.iter_mut().for_each(|s| *s = 0);
        *stamp = 0;
    }
    *stamp += 1;
    let keys = key_of_rank.last().map_or(0, |&k| k as usize + 1);
    if seen.len() < keys {
        seen.resize(keys, 0);
    }
    let mut distinct = 0;
    for row in ranks.chunks_exact(m) {
        let key = key_of_rank[row[j] as usize] as usize;
        if seen[key] != *stamp {
            seen[key] = *stamp;
            distinct += 1;
        }
    }
    distinct
}

/// The lowest and highest key rank of every attribute over rows of `m` ranks.
fn key_ranges(ranks: &[u32], m: usize, low: &mut Vec<u32>, high: &mut Vec<u32>) {
    /// The same with `M` known at compile time: the bounds stay in registers.
    fn fixed<const M: usize>(ranks: &[u32], low: &mut [u32], high: &mut [u32]) {
        let (mut lo, mut hi) = ([u32::MAX; M], [0u32; M]);
        for row in ranks.chunks_exact(M) {
            for j in 0..M {
                lo[j] = lo[j].min(row[j]);
                hi[j] = hi[j].max(row[j]);
            }
        }
        low.copy_from_slice(&lo);
        high.copy_from_slice(&hi);
    }
    low.clear();
    low.resize(m, u32::MAX);
    high.clear();
    high.resize(m, 0);
    match m {
        1 => fixed::<1>(ranks, low, high),
        2 => fixed::<2>(ranks, low, high),
        3 => fixed::<3>(ranks, low, high),
        4 => fixed::<4>(ranks, low, high),
        5 => fixed::<5>(ranks, low, high),
        6 => fixed::<6>(ranks, low, high),
        7 => fixed::<7>(ranks, low, high),
        8 => fixed::<8>(ranks, low, high),
        _ => {
            for row in ranks.chunks_exact(m) {
                for ((lo, hi), &r) in low.iter_mut().zip(high.iter_mut()).zip(row) {
                    *lo = (*lo).min(r);
                    *hi = (*hi).max(r);
                }
            }
        }
    }
}

/// Give the part's sensitive codes dense local ids in code order (the code itself when
/// the table's codes are few compared with the part's tuples) and the part's histogram.
fn local_sensitive(context: &Context<'_>, slab: &Slab<'_>, s: &mut Scratch) {
    s.local.clear();
    s.local_code.clear();
    let size = if context.sensitive_domain <= 2 * slab.len() {
        s.local.extend_from_slice(slab.sensitive);
        context.sensitive_domain
    } else {
        s.local_code.extend_from_slice(slab.sensitive);
        s.local_code.sort_unstable();
        s.local_code.dedup();
        let codes = &s.local_code;
        s.local.extend(slab.sensitive.iter().map(|c| {
            // Every code of the part is in `codes`, which was built from them.
            codes.binary_search(c).expect("code of the part") as u32
        }));
        s.local_code.len()
    };
    s.whole.clear();
    s.whole.resize(size, 0);
    for (&id, &c) in s.local.iter().zip(slab.count.iter()) {
        s.whole[id as usize] += c;
    }
}

/// Group the part's tuples by their key of attribute `j`: fill `group_rank` (the highest
/// key rank of each group in the part), `prefix`, and with models `order` and
/// `group_start`.
fn build_groups(context: &Context<'_>, slab: &Slab<'_>, j: usize, s: &mut Scratch) {
    let (m, n) = (context.m, slab.len());
    let models = context.models.is_some();
    let key_at = &context.values[j];
    let (low, high) = (s.low[j], s.high[j]);
    let width = (high - low) as usize + 1;
    s.group_rank.clear();
    s.prefix.clear();
    s.prefix.push(0);
    s.order.clear();
    s.group_start.clear();
    // Ranks come in increasing order; a rank of the key of the last group joins it.
    let mut rows = 0u64;
    let mut last_key = None;
    let mut add = |s: &mut Scratch, rank: u32, c: u64, start: u32| {
        let key = key_at[rank as usize];
        rows += c;
        if last_key == Some(key) {
            *s.group_rank.last_mut().expect("a group was started") = rank;
            *s.prefix.last_mut().expect("prefix starts with 0") = rows;
        } else {
            last_key = Some(key);
            s.group_rank.push(rank);
            s.prefix.push(rows);
            if models {
                s.group_start.push(start);
            }
        }
    };
    let column = slab.ranks.iter().skip(j).step_by(m);
    if width <= 2 * n {
        // Counting sort over the part's key ranks.
        s.bucket_rows.clear();
        s.bucket_rows.resize(width, 0);
        if models {
            s.bucket_tuples.clear();
            s.bucket_tuples.resize(width, 0);
        }
        for (&r, &c) in column.clone().zip(slab.count.iter()) {
            let b = (r - low) as usize;
            s.bucket_rows[b] += c;
            if models {
                s.bucket_tuples[b] += 1;
            }
        }
        let mut tuples = 0u32;
        for b in 0..width {
            let c = s.bucket_rows[b];
            if c > 0 {
                add(s, low + b as u32, c, tuples);
                if models {
                    // From now on the bucket holds the next free slot of its tuples.
                    let here = s.bucket_tuples[b];
                    s.bucket_tuples[b] = tuples;
                    tuples += here;
                }
            }
        }
        if models {
            s.group_start.push(tuples);
            s.order.resize(n, 0);
            for (position, &r) in column.enumerate() {
                let slot = &mut s.bucket_tuples[(r - low) as usize];
                s.order[*slot as usize] = position as u32;
                *slot += 1;
            }
        }
    } else {
        s.packed.clear();
        s.packed.extend(
            column
                .enumerate()
                .map(|(position, &r)| (u64::from(r) << 32) | position as u64),
        );
        s.packed.sort_unstable();
        for i in 0..n {
            let key = s.packed[i];
            let position = (key & u64::from(u32::MAX)) as usize;
            add(s, (key >> 32) as u32, slab.count[position], i as u32);
            if models {
                s.order.push(position as u32);
            }
        }
        if models {
            s.group_start.push(n as u32);
        }
    }
}

/// The boundary `b` (left side: groups `0..b`) of the first allowed cut in order of
/// distance from the weighted median, or `None`.
fn search(context: &Context<'_>, slab: &Slab<'_>, s: &mut Scratch) -> Option<usize> {
    let k = context.k;
    let groups = s.group_rank.len();
    if groups < 2 {
        return None;
    }
    let prefix = &s.prefix;
    let total = prefix[groups];
    let distance = |b: usize| (2 * u128::from(prefix[b])).abs_diff(u128::from(total));
    // The first boundary whose left side holds at least half the rows, and the one before.
    let first = 1 + prefix[1..groups].partition_point(|&p| 2 * u128::from(p) < u128::from(total));
    let start = if first == groups || (first > 1 && distance(first - 1) <= distance(first)) {
        first - 1
    } else {
        first
    };
    let k_ok = |b: usize| prefix[b] >= k && total - prefix[b] >= k;
    let Some(models) = context.models else {
        // Without models the median is allowed or nothing is: if its left side holds
        // fewer than k rows, every boundary to its left does too, and the next one to its
        // right is at least as far from half, so its right side holds fewer than k rows
        // (and symmetrically), so the outward search would find nothing.
        return k_ok(start).then_some(start);
    };
    // With models: the histograms of the left side at the lowest and the highest boundary
    // tried so far, updated one group at a time as the search moves outward.
    s.left_low.clear();
    s.left_low.resize(s.whole.len(), 0);
    for &position in &s.order[..s.group_start[start] as usize] {
        s.left_low[s.local[position as usize] as usize] += slab.count[position as usize];
    }
    s.left_high.clone_from(&s.left_low);
    let (mut low, mut high) = (start, start);
    let mut b = start;
    let mut from_low = true;
    loop {
        if k_ok(b) {
            let left = if from_low { &s.left_low } else { &s.left_high };
            let lists = (&mut s.list_left, &mut s.list_right);
            let rows = (prefix[b], total - prefix[b]);
            if sides_ok(models, &s.whole, &s.local_code, left, rows, lists) {
                return Some(b);
            }
        }
        let go_low = low > 1 && prefix[low - 1] >= k;
        let go_high = high + 1 < groups && total - prefix[high + 1] >= k;
        from_low = match (go_low, go_high) {
            (false, false) => return None,
            (true, false) => true,
            (false, true) => false,
            (true, true) => distance(low - 1) <= distance(high + 1),
        };
        let group = if from_low {
            low -= 1;
            b = low;
            low
        } else {
            high += 1;
            b = high;
            high - 1
        };
        let range = s.group_start[group] as usize..s.group_start[group + 1] as usize;
        let hist = if from_low {
            &mut s.left_low
        } else {
            &mut s.left_high
        };
        for &position in &s.order[range] {
            let slot = &mut hist[s.local[position as usize] as usize];
            let c = slab.count[position as usize];
            if from_low {
                *slot -= c;
            } else {
                *slot += c;
            }
        }
    }
}

/// Whether both sides of a cut satisfy the models: `left` is the left side's histogram
/// over local ids, `whole` the part's; `lists` are buffers for the two sorted histograms.
fn sides_ok(
    models: &ModelCheck,
    whole: &[u64],
    local_code: &[u32],
    left: &[u64],
    (left_rows, right_rows): (u64, u64),
    lists: (&mut Histogram, &mut Histogram),
) -> bool {
    let (list_left, list_right) = lists;
    list_left.clear();
    list_right.clear();
    for (id, (&l, &w)) in left.iter().zip(whole).enumerate() {
        // Local ids are the codes themselves when `local_code` is empty.
        let code = local_code.get(id).copied().unwrap_or(id as u32);
        if l > 0 {
            list_left.push((code, l));
        }
        if w > l {
            list_right.push((code, w - l));
        }
    }
    models.class_ok(list_left, left_rows, 0) && models.class_ok(list_right, right_rows, 0)
}
