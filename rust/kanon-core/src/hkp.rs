//! (h,k,p)-coherence of transaction data (Xu, Wang, Fung and Yu, "Anonymizing transaction
//! databases for publication", KDD 2008): suppress public items from the whole table until
//! no attacker who knows at most `p` public items of a person can narrow them down to fewer
//! than `k` transactions or infer one of their private items with probability above `h`.
//!
//! # Definitions
//! Items are public (an attacker may know them) or private (what must not be inferred).
//! For a set β of public items, its *cohort* is the set of transactions containing β and
//! `sup(β)` its size. β is a **mole** if `1 ≤ |β| ≤ p`, `sup(β) > 0` and either
//! `sup(β) < k` or, for some private item e, `sup(β ∪ {e}) / sup(β) > h` (a set no
//! transaction contains is not a mole: an attacker cannot match it). A table is
//! *(h,k,p)-coherent* when it has no mole. A mole is *minimal* when no proper subset of it
//! is a mole; a table is coherent exactly when it has no minimal mole.
//!
//! Suppressing a public item removes it from every transaction and leaves the support of
//! every set without it unchanged, so the moles of the release are the moles of the input
//! that contain no suppressed item. The release is therefore coherent exactly when every
//! minimal mole contains a suppressed item; private items are never suppressed.
//!
//! # Algorithm ([`hkp`])
//! 1. *Preprocessing* (optional): items whose support is below a fraction of the
//!    transactions are dropped from the data (the paper's 0.1 % rule).
//! 2. Public items that are moles on their own (size-1 moles) are suppressed.
//! 3. Minimal moles of size 2 to `p` are found level by level: only non-moles are extended,
//!    candidates are the sets that occur in some transaction and all of whose subsets one
//!    item smaller are non-moles. Supports are counted over tid-lists, one prefix per task,
//!    in parallel.
//! 4. The minimal moles go into the MOLE-tree (each mole a path, its items ordered by
//!    decreasing MM, the number of minimal moles holding the item) with its score table
//!    (MM, IL = support, the nodes of each item). The item with the best score is
//!    suppressed: the subtrees under its nodes are removed and the counts of their
//!    ancestors and the MM of every item on the removed moles updated; until no minimal
//!    mole is left.
//!
//! Every choice depends on the item codes and the data only (ties go by code), never on the
//! order of the transactions or on the number of threads.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rayon::prelude::*;

use crate::cancel;
use crate::error::{KernelError, Result};

const KERNEL: &str = "hkp";

/// The default of [`HkpOptions::max_itemsets`]: ten million candidate sets (a few
/// seconds of search and a few hundred MB at most).
pub const DEFAULT_MAX_ITEMSETS: u64 = 10_000_000;

/// Most transaction ids the cohorts of one level may hold (2^28: 1 GiB of `u32`).
const MAX_COHORT_ENTRIES: u64 = 1 << 28;

/// How the greedy phase chooses the next public item to suppress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removal {
    /// The highest MM(e) / IL(e): most minimal moles removed per unit of information lost
    /// (the paper's choice). Ties: the higher MM, then the lower code.
    MmIl,
    /// The highest 1 / IL(e) among the items of remaining minimal moles: the least
    /// frequent first. Ties: the higher MM, then the lower code.
    OneIl,
    /// The highest MM(e). Ties: the lower IL, then the lower code.
    Mm,
    /// Every public item of every minimal mole at once (the baseline).
    RmAll,
}

impl Removal {
    /// The removal method called `name`: `"mmil"`, `"1il"`, `"mm"` or `"rmall"`.
    ///
    /// # Errors
    /// [`KernelError::InvalidArgument`] for any other name.
    pub fn from_name(name: &str) -> Result<Self> {
        match name {
            "mmil" => Ok(Self::MmIl),
            "1il" => Ok(Self::OneIl),
            "mm" => Ok(Self::Mm),
            "rmall" => Ok(Self::RmAll),
            other => Err(invalid(format!(
                "method must be 'mmil', '1il', 'mm' or 'rmall', got {other:?}"
            ))),
        }
    }

    /// The name [`Removal::from_name`] reads.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::MmIl => "mmil",
            Self::OneIl => "1il",
            Self::Mm => "mm",
            Self::RmAll => "rmall",
        }
    }
}

/// Which items are private.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Roles<'a> {
    /// These item codes are private (each must occur in some transaction); every other
    /// item is public. An empty list makes every item public.
    Private(&'a [u32]),
    /// A seeded random `fraction` of the items left after preprocessing is public
    /// (`round(fraction × items)` of them, drawn uniformly), the rest private: the
    /// paper's experimental setting (the course report's `--delta`).
    PublicFraction {
        /// Share of public items, in `[0, 1]`.
        fraction: f64,
        /// Seed of the draw: the same seed and items give the same split.
        seed: u64,
    },
}

/// Parameters of [`hkp`].
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HkpOptions {
    /// Largest allowed probability of inferring a private item, in `(0, 1]`.
    pub h: f64,
    /// Smallest allowed cohort of a set of public items an attacker may know (`k ≥ 1`).
    pub k: u64,
    /// Most public items an attacker knows (`p ≥ 1`).
    pub p: usize,
    /// How the greedy phase picks items.
    pub removal: Removal,
    /// Preprocessing: items whose support is below `min_support × transactions` are
    /// dropped first (`0`: none), in `[0, 1]`.
    pub min_support: f64,
    /// Most candidate sets of 2 to `p` public items whose mole status the search may
    /// decide ([`DEFAULT_MAX_ITEMSETS`]; at least 1): a dense table makes their number
    /// grow like C(items, p), so the search stops with an error past this budget instead
    /// of exhausting memory.
    pub max_itemsets: u64,
}

/// What [`hkp`] did, in counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HkpStats {
    /// Transactions, empty ones included.
    pub transactions: u64,
    /// Distinct items after preprocessing.
    pub items: u64,
    /// Public items after preprocessing.
    pub public_items: u64,
    /// Item occurrences (transaction × distinct item) after preprocessing, public and
    /// private: the denominator of the information loss.
    pub occurrences: u64,
    /// Occurrences of the suppressed items (the sum of their supports).
    pub suppressed_occurrences: u64,
    /// Occurrences of the items dropped by the preprocessing.
    pub dropped_occurrences: u64,
    /// Candidate sets of 2 or more public items whose mole status was decided.
    pub candidates: u64,
    /// Nodes of the MOLE-tree (root excluded; 0 for [`Removal::RmAll`]).
    pub tree_nodes: u64,
}

/// The result of [`hkp`]: what to suppress and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HkpRelease {
    /// Public item codes to remove from every transaction: the size-1 moles in code
    /// order, then the items the greedy phase chose, in the order it chose them.
    pub suppressed: Vec<u32>,
    /// The public items that are moles on their own, in code order.
    pub size1_moles: Vec<u32>,
    /// Minimal moles of 2 to `p` items, each in code order, by size and then
    /// lexicographically: mole `i` is `mole_items[mole_offsets[i]..mole_offsets[i + 1]]`.
    pub mole_offsets: Vec<usize>,
    /// Items of the minimal moles (see `mole_offsets`).
    pub mole_items: Vec<u32>,
    /// Items dropped by the preprocessing, in code order (removed from the release too).
    pub dropped: Vec<u32>,
    /// The private items after preprocessing, in code order.
    pub private: Vec<u32>,
    /// Counters.
    pub stats: HkpStats,
}

impl HkpRelease {
    /// The minimal moles of size 2 to `p`, each a slice of item codes in code order.
    pub fn moles(&self) -> impl Iterator<Item = &[u32]> + '_ {
        self.mole_offsets
            .windows(2)
            .map(|w| &self.mole_items[w[0]..w[1]])
    }

    /// Number of minimal moles of size 2 to `p`.
    #[must_use]
    pub fn mole_count(&self) -> usize {
        self.mole_offsets.len().saturating_sub(1)
    }

    /// Information loss: occurrences of the suppressed items over all item occurrences of
    /// the data after preprocessing (0 when there are none).
    #[must_use]
    pub fn information_loss(&self) -> f64 {
        if self.stats.occurrences == 0 {
            0.0
        } else {
            self.stats.suppressed_occurrences as f64 / self.stats.occurrences as f64
        }
    }
}

fn invalid(message: String) -> KernelError {
    KernelError::InvalidArgument {
        kernel: KERNEL,
        message,
    }
}

/// Make a table of transactions (h,k,p)-coherent by suppressing public items.
///
/// Runs the algorithm of Xu et al. (KDD 2008) described in the [module
/// documentation](self): preprocessing, size-1 moles, minimal moles of size 2 to `p` found
/// level by level over tid-lists (in parallel), then greedy suppression over the MOLE-tree
/// with the chosen [`Removal`] method. Removing [`HkpRelease::suppressed`] and
/// [`HkpRelease::dropped`] from every transaction gives an (h,k,p)-coherent table.
///
/// P(e | β) = sup(β ∪ {e}) / sup(β) is compared with `h` as an IEEE double division.
///
/// # Arguments
/// * `offsets` – transaction `t` holds `items[offsets[t]..offsets[t + 1]]`
///   (`transactions + 1` non-decreasing entries, the first 0, the last `items.len()`).
/// * `items` – item codes, each below `n_items`; an item repeated within a transaction
///   counts once.
/// * `n_items` – size of the code space (at most 2^32); memory is linear in it.
/// * `roles` – which items are private.
/// * `options` – h, k, p, the removal method and the preprocessing threshold.
///
/// # Returns
/// The items to suppress, the moles found, the dropped and private items and counters.
///
/// # Errors
/// [`KernelError::InvalidArgument`] for `h` outside `(0, 1]`, `k = 0`, `p = 0`,
/// `max_itemsets = 0`, `min_support` or a public fraction outside `[0, 1]`, malformed
/// offsets, a code outside the code space, a private item that occurs in no transaction,
/// a search that would decide more than `max_itemsets` candidate sets or keep cohorts of
/// more than 2^28 transaction ids in one level (the message names the largest `p` that
/// fits), a code space too large to allocate, or a cancellation ([`crate::cancel`]).
///
/// # Complexity
/// With n transactions, N item occurrences and C candidate sets with cohorts of total
/// size S: O(N log N + S · (l + q)) time for transactions of at most l public and q
/// private items, plus O(M · P) for the greedy phase over M mole items and P public
/// items; O(N + S) space.
///
/// # Examples
/// ```
/// use kanon_core::hkp::{hkp, HkpOptions, Removal, Roles};
/// // The course report's example: private items 3 and 4, h = 0.5, k = 3, p = 3.
/// let items = [0, 2, 6, 0, 2, 5, 1, 2, 0, 1, 5, 0, 1, 2, 0, 1, 2, 3, 4, 5];
/// let offsets = [0, 3, 6, 8, 11, 14, 20];
/// let options = HkpOptions {
///     h: 0.5, k: 3, p: 3, removal: Removal::MmIl, min_support: 0.0, max_itemsets: 1000,
/// };
/// let release = hkp(&offsets, &items, 7, Roles::Private(&[3, 4]), &options).unwrap();
/// assert_eq!(release.size1_moles, vec![6]);
/// let moles: Vec<&[u32]> = release.moles().collect();
/// assert_eq!(moles, vec![&[1, 5][..], &[2, 5], &[0, 1, 2]]);
/// assert_eq!(release.suppressed, vec![6, 5, 1]);
/// ```
pub fn hkp(
    offsets: &[u64],
    items: &[u32],
    n_items: usize,
    roles: Roles<'_>,
    options: &HkpOptions,
) -> Result<HkpRelease> {
    validate(offsets, items, n_items, roles, options)?;
    let data = Data::new(offsets, items, n_items, roles, options)?;
    cancel::check(KERNEL)?;
    let (size1_moles, f1) = data.size1();
    let (moles, candidates) = data.minimal_moles(&f1, options.max_itemsets)?;
    let mut suppressed: Vec<u32> = size1_moles.clone();
    let (chosen, tree_nodes) = greedy(&data, &moles, options.removal)?;
    suppressed.extend(chosen);
    let suppressed_occurrences = suppressed
        .iter()
        .map(|&i| data.support[data.public[i as usize] as usize])
        .sum();
    let code = |i: &u32| data.public[*i as usize];
    // Public indices follow the codes' order, so each mole stays sorted.
    let mole_items = moles.items.iter().map(code).collect();
    let mole_offsets = moles.offsets;
    Ok(HkpRelease {
        suppressed: suppressed.iter().map(code).collect(),
        size1_moles: size1_moles.iter().map(code).collect(),
        mole_offsets,
        mole_items,
        dropped: data.dropped.clone(),
        private: data.private.clone(),
        stats: HkpStats {
            transactions: data.transactions as u64,
            items: (data.public.len() + data.private.len()) as u64,
            public_items: data.public.len() as u64,
            occurrences: data.occurrences,
            suppressed_occurrences,
            dropped_occurrences: data.dropped_occurrences,
            candidates,
            tree_nodes,
        },
    })
}

fn validate(
    offsets: &[u64],
    items: &[u32],
    n_items: usize,
    roles: Roles<'_>,
    options: &HkpOptions,
) -> Result<()> {
    let h = options.h;
    if !(h > 0.0 && h <= 1.0) {
        return Err(invalid(format!(
            "h must lie in (0, 1] (the largest allowed probability of inferring a private \
             item), got {h}"
        )));
    }
    if options.k == 0 {
        return Err(invalid(
            "k must be at least 1 (the smallest allowed cohort), got 0".to_owned(),
        ));
    }
    if options.p == 0 {
        return Err(invalid(
            "p must be at least 1 (the most public items an attacker knows), got 0".to_owned(),
        ));
    }
    if options.max_itemsets == 0 {
        return Err(invalid(
            "max_itemsets must be at least 1 (the most candidate sets the search may \
             decide), got 0"
                .to_owned(),
        ));
    }
    let s = options.min_support;
    if !(0.0..=1.0).contains(&s) {
        return Err(invalid(format!(
            "min_support must lie in [0, 1] (a fraction of the transactions), got {s}"
        )));
    }
    if let Roles::PublicFraction { fraction, .. } = roles {
        if !(0.0..=1.0).contains(&fraction) {
            return Err(invalid(format!(
                "public_fraction must lie in [0, 1], got {fraction}"
            )));
        }
    }
    let Some((&first, _)) = offsets.split_first() else {
        return Err(KernelError::LengthMismatch {
            kernel: KERNEL,
            argument: "offsets",
            got: 0,
            expected: 1,
        });
    };
    if offsets.len() - 1 > u32::MAX as usize {
        return Err(invalid(format!(
            "at most 2^32 - 1 transactions are supported, got {}",
            offsets.len() - 1
        )));
    }
    if first != 0 {
        return Err(invalid(format!("offsets must start at 0, got {first}")));
    }
    if let Some(w) = offsets.windows(2).position(|w| w[1] < w[0]) {
        return Err(invalid(format!(
            "offsets must not decrease: entry {} is {} after {}",
            w + 1,
            offsets[w + 1],
            offsets[w]
        )));
    }
    let last = offsets[offsets.len() - 1];
    if usize::try_from(last).ok() != Some(items.len()) {
        return Err(invalid(format!(
            "the last offset must equal the number of items ({}), got {last}",
            items.len()
        )));
    }
    if n_items > 1 << 32 {
        return Err(invalid(format!(
            "n_items ({n_items}) exceeds the 2^32 codes of a u32 item code"
        )));
    }
    if let Some(&c) = items.iter().find(|&&c| c as usize >= n_items) {
        return Err(invalid(format!(
            "item code {c} is outside the code space 0..{n_items}"
        )));
    }
    if let Roles::Private(p) = roles {
        if let Some(&c) = p.iter().find(|&&c| c as usize >= n_items) {
            return Err(invalid(format!(
                "private item code {c} is outside the code space 0..{n_items}"
            )));
        }
    }
    Ok(())
}

/// The transactions split into public and private items, in dense indices.
struct Data {
    transactions: usize,
    /// Code of each public index (ascending).
    public: Vec<u32>,
    /// Private codes (ascending).
    private: Vec<u32>,
    dropped: Vec<u32>,
    dropped_occurrences: u64,
    occurrences: u64,
    /// Support per code.
    support: Vec<u64>,
    /// Public indices of each transaction (ascending), CSR.
    pub_offsets: Vec<usize>,
    pub_items: Vec<u32>,
    /// Private indices of each transaction, CSR.
    priv_offsets: Vec<usize>,
    priv_items: Vec<u32>,
    /// Cohort (ascending transaction ids) of each public index, CSR.
    tid_offsets: Vec<usize>,
    tids: Vec<u32>,
    h: f64,
    k: u64,
    p: usize,
}

/// `n` copies of `value`, or an error naming the code space when they cannot be allocated
/// (`n_items` comes from the caller).
fn filled<T: Clone>(n: usize, value: T) -> Result<Vec<T>> {
    let mut v = Vec::new();
    v.try_reserve_exact(n).map_err(|_| {
        invalid(format!(
            "cannot allocate {n} entries for the item code space (n_items = {n}): pass \
             the number of distinct items, not a larger code"
        ))
    })?;
    v.resize(n, value);
    Ok(v)
}

/// The work done so far by the search for minimal moles, shared by its parallel tasks.
struct Budget {
    /// Candidates decided (or about to be) over all levels.
    candidates: AtomicU64,
    /// Transaction ids kept for the cohorts of the level being built.
    entries: AtomicU64,
    max_candidates: u64,
    /// Set once a limit is passed or a cancellation seen: the other tasks stop early.
    stop: AtomicBool,
}

impl Budget {
    /// Reserve `n` candidates; `false` (and the stop flag) when the budget would be passed.
    fn spend(&self, n: u64) -> bool {
        let before = self.candidates.fetch_add(n, Ordering::Relaxed);
        if before.saturating_add(n) > self.max_candidates {
            self.stop.store(true, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// Keep `n` more cohort entries; `false` (and the stop flag) past the cap.
    fn keep(&self, n: u64) -> bool {
        let before = self.entries.fetch_add(n, Ordering::Relaxed);
        if before.saturating_add(n) > MAX_COHORT_ENTRIES {
            self.stop.store(true, Ordering::Relaxed);
            return false;
        }
        true
    }

    fn stopped(&self) -> bool {
        if cancel::requested() {
            self.stop.store(true, Ordering::Relaxed);
        }
        self.stop.load(Ordering::Relaxed)
    }
}

/// Smallest count c with c / sup > h (sup + 1 if none): a private item counted c times in
/// a cohort of sup transactions makes it a mole exactly when its count reaches this.
fn breach_threshold(h: f64, sup: u64) -> u64 {
    let sf = sup as f64;
    let over = |c: u64| c as f64 / sf > h;
    let mut c = ((h * sf).floor() as u64).min(sup + 1);
    while c > 0 && over(c - 1) {
        c -= 1;
    }
    while c <= sup && !over(c) {
        c += 1;
    }
    c
}

/// splitmix64: a small seeded generator for the public / private draw.
struct SplitMix(u64);

impl SplitMix {
    fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// A value in `0..n` (n ≥ 1).
    fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next()) * n as u128) >> 64) as usize
    }
}

/// Per-task scratch space of the mole search.
struct Scratch {
    /// Per public index: the transactions of the current cohort holding it.
    ext: Vec<Vec<u32>>,
    touched: Vec<u32>,
    /// Per private index: its count in the cohort being checked.
    counts: Vec<u64>,
    counted: Vec<u32>,
    /// Per public index: how many subsets one item smaller of prefix + it are non-moles.
    allowed: Vec<u32>,
    marked: Vec<u32>,
}

impl Scratch {
    fn new(public: usize, private: usize) -> Self {
        Self {
            ext: vec![Vec::new(); public],
            touched: Vec::new(),
            counts: vec![0; private],
            counted: Vec::new(),
            allowed: vec![0; public],
            marked: Vec::new(),
        }
    }
}

/// The non-moles of one level: sets of `size` public indices, flat and sorted
/// lexicographically, with their cohorts when the next level needs them.
struct Level {
    size: usize,
    sets: Vec<u32>,
    tid_offsets: Vec<usize>,
    tids: Vec<u32>,
}

impl Level {
    fn len(&self) -> usize {
        self.sets.len() / self.size
    }

    fn set(&self, i: usize) -> &[u32] {
        &self.sets[i * self.size..(i + 1) * self.size]
    }

    /// The sets whose first `size - 1` items are `head` (contiguous: sets are sorted).
    fn block(&self, head: &[u32]) -> std::ops::Range<usize> {
        let n = head.len();
        let first = |lo: usize, hi: usize, after: bool| {
            let (mut lo, mut hi) = (lo, hi);
            while lo < hi {
                let mid = (lo + hi) / 2;
                let order = self.set(mid)[..n].cmp(head);
                if order.is_lt() || (after && order.is_eq()) {
                    lo = mid + 1;
                } else {
                    hi = mid;
                }
            }
            lo
        };
        let start = first(0, self.len(), false);
        start..first(start, self.len(), true)
    }
}

/// What one prefix contributes to the next level.
#[derive(Default)]
struct Extension {
    sets: Vec<u32>,
    tid_lens: Vec<usize>,
    tids: Vec<u32>,
    moles: Vec<u32>,
    candidates: u64,
}

/// Minimal moles of size 2 to p (public indices), flat: mole `i` is
/// `items[offsets[i]..offsets[i + 1]]`.
struct Moles {
    offsets: Vec<usize>,
    items: Vec<u32>,
}

impl Data {
    fn new(
        offsets: &[u64],
        items: &[u32],
        n_items: usize,
        roles: Roles<'_>,
        options: &HkpOptions,
    ) -> Result<Self> {
        let transactions = offsets.len() - 1;
        // Offsets were checked: they fit in usize and end at items.len().
        let bounds: Vec<usize> = offsets.iter().map(|&o| o as usize).collect();
        // Distinct items per transaction, sorted.
        let mut sorted: Vec<u32> = Vec::with_capacity(items.len());
        let mut starts: Vec<usize> = Vec::with_capacity(transactions + 1);
        starts.push(0);
        let mut support: Vec<u64> = filled(n_items, 0)?;
        let mut buf: Vec<u32> = Vec::new();
        for w in bounds.windows(2) {
            buf.clear();
            buf.extend_from_slice(&items[w[0]..w[1]]);
            buf.sort_unstable();
            buf.dedup();
            for &c in &buf {
                support[c as usize] += 1;
            }
            sorted.extend_from_slice(&buf);
            starts.push(sorted.len());
        }
        let n = transactions as f64;
        let kept = |c: usize| support[c] > 0 && support[c] as f64 >= options.min_support * n;
        let dropped: Vec<u32> = (0..n_items)
            .filter(|&c| support[c] > 0 && !kept(c))
            .map(|c| c as u32)
            .collect();
        let dropped_occurrences = dropped.iter().map(|&c| support[c as usize]).sum();
        let mut is_private: Vec<bool> = filled(n_items, false)?;
        match roles {
            Roles::Private(list) => {
                for &c in list {
                    if support[c as usize] == 0 {
                        return Err(invalid(format!(
                            "private item code {c} occurs in no transaction"
                        )));
                    }
                    is_private[c as usize] = true;
                }
            }
            Roles::PublicFraction { fraction, seed } => {
                let mut alive: Vec<u32> = (0..n_items)
                    .filter(|&c| kept(c))
                    .map(|c| c as u32)
                    .collect();
                let mut rng = SplitMix(seed);
                for i in (1..alive.len()).rev() {
                    let j = rng.below(i + 1);
                    alive.swap(i, j);
                }
                let public = ((fraction * alive.len() as f64).round() as usize).min(alive.len());
                for &c in &alive[public..] {
                    is_private[c as usize] = true;
                }
            }
        }
        let mut index: Vec<u32> = filled(n_items, u32::MAX)?;
        let mut public = Vec::new();
        let mut private = Vec::new();
        for c in 0..n_items {
            if !kept(c) {
                continue;
            }
            if is_private[c] {
                index[c] = private.len() as u32;
                private.push(c as u32);
            } else {
                index[c] = public.len() as u32;
                public.push(c as u32);
            }
        }
        let occurrences = (0..n_items).filter(|&c| kept(c)).map(|c| support[c]).sum();
        let mut pub_offsets = Vec::with_capacity(transactions + 1);
        let mut priv_offsets = Vec::with_capacity(transactions + 1);
        let mut pub_items = Vec::new();
        let mut priv_items = Vec::new();
        pub_offsets.push(0);
        priv_offsets.push(0);
        for w in starts.windows(2) {
            for &c in &sorted[w[0]..w[1]] {
                let c = c as usize;
                if !kept(c) {
                    continue;
                }
                if is_private[c] {
                    priv_items.push(index[c]);
                } else {
                    pub_items.push(index[c]);
                }
            }
            pub_offsets.push(pub_items.len());
            priv_offsets.push(priv_items.len());
        }
        // Cohorts of the public items (transactions ascending).
        let mut tid_offsets = vec![0usize; public.len() + 1];
        for &e in &pub_items {
            tid_offsets[e as usize + 1] += 1;
        }
        for e in 0..public.len() {
            tid_offsets[e + 1] += tid_offsets[e];
        }
        let mut fill = tid_offsets.clone();
        let mut tids = vec![0u32; pub_items.len()];
        for t in 0..transactions {
            for &e in &pub_items[pub_offsets[t]..pub_offsets[t + 1]] {
                tids[fill[e as usize]] = t as u32;
                fill[e as usize] += 1;
            }
        }
        Ok(Self {
            transactions,
            public,
            private,
            dropped,
            dropped_occurrences,
            occurrences,
            support,
            pub_offsets,
            pub_items,
            priv_offsets,
            priv_items,
            tid_offsets,
            tids,
            h: options.h,
            k: options.k,
            p: options.p,
        })
    }

    fn pub_of(&self, t: u32) -> &[u32] {
        let t = t as usize;
        &self.pub_items[self.pub_offsets[t]..self.pub_offsets[t + 1]]
    }

    fn priv_of(&self, t: u32) -> &[u32] {
        let t = t as usize;
        &self.priv_items[self.priv_offsets[t]..self.priv_offsets[t + 1]]
    }

    fn cohort(&self, e: usize) -> &[u32] {
        &self.tids[self.tid_offsets[e]..self.tid_offsets[e + 1]]
    }

    /// Whether a set with this (non-empty) cohort is a mole.
    fn is_mole(&self, cohort: &[u32], scratch: &mut Scratch) -> bool {
        let sup = cohort.len() as u64;
        if sup < self.k {
            return true;
        }
        let threshold = breach_threshold(self.h, sup);
        if threshold > sup {
            return false;
        }
        let mut breach = false;
        'count: for &t in cohort {
            for &q in self.priv_of(t) {
                let c = &mut scratch.counts[q as usize];
                if *c == 0 {
                    scratch.counted.push(q);
                }
                *c += 1;
                if *c >= threshold {
                    breach = true;
                    break 'count;
                }
            }
        }
        for &q in &scratch.counted {
            scratch.counts[q as usize] = 0;
        }
        scratch.counted.clear();
        breach
    }

    /// The size-1 moles (public indices) and the non-moles among the public items.
    fn size1(&self) -> (Vec<u32>, Level) {
        let np = self.public.len();
        let verdicts: Vec<bool> = (0..np)
            .into_par_iter()
            .map_init(
                || Scratch::new(0, self.private.len()),
                |scratch, e| self.is_mole(self.cohort(e), scratch),
            )
            .collect();
        let moles = (0..np as u32).filter(|&e| verdicts[e as usize]).collect();
        let sets: Vec<u32> = (0..np as u32).filter(|&e| !verdicts[e as usize]).collect();
        let mut tid_offsets = vec![0];
        let mut tids = Vec::new();
        if self.p > 1 {
            for &e in &sets {
                tids.extend_from_slice(self.cohort(e as usize));
                tid_offsets.push(tids.len());
            }
        }
        (
            moles,
            Level {
                size: 1,
                sets,
                tid_offsets,
                tids,
            },
        )
    }

    /// Minimal moles of size 2 to p (public indices, each ascending, by size then
    /// lexicographically) and the number of candidates checked.
    ///
    /// # Errors
    /// When the level of `size` sets would pass `max_itemsets` candidates in all or
    /// [`MAX_COHORT_ENTRIES`] kept transaction ids, or on a cancellation.
    fn minimal_moles(&self, f1: &Level, max_itemsets: u64) -> Result<(Moles, u64)> {
        let np = self.public.len();
        let mut alive = vec![false; np];
        for &e in &f1.sets {
            alive[e as usize] = true;
        }
        let mut moles = Moles {
            offsets: vec![0],
            items: Vec::new(),
        };
        let mut candidates = 0u64;
        let mut level: Option<Level> = None;
        let budget = Budget {
            candidates: AtomicU64::new(0),
            entries: AtomicU64::new(0),
            max_candidates: max_itemsets,
            stop: AtomicBool::new(false),
        };
        for size in 2..=self.p {
            let prev = level.as_ref().unwrap_or(f1);
            if prev.len() == 0 {
                break;
            }
            let keep_tids = size < self.p;
            budget.entries.store(0, Ordering::Relaxed);
            let parts: Vec<Extension> = (0..prev.len())
                .into_par_iter()
                .map_init(
                    || Scratch::new(np, self.private.len()),
                    |scratch, i| self.extend(prev, i, &alive, keep_tids, scratch, &budget),
                )
                .collect();
            cancel::check(KERNEL)?;
            if budget.stop.load(Ordering::Relaxed) {
                return Err(self.over_budget(size, max_itemsets));
            }
            let mut next = Level {
                size,
                sets: Vec::new(),
                tid_offsets: vec![0],
                tids: Vec::new(),
            };
            let sets: usize = parts.iter().map(|p| p.sets.len()).sum();
            let tids: usize = parts.iter().map(|p| p.tids.len()).sum();
            let offsets: usize = parts.iter().map(|p| p.tid_lens.len()).sum();
            let mole_items: usize = parts.iter().map(|p| p.moles.len()).sum();
            let reserved = next.sets.try_reserve_exact(sets).is_ok()
                && next.tids.try_reserve_exact(tids).is_ok()
                && next.tid_offsets.try_reserve_exact(offsets).is_ok()
                && moles.items.try_reserve(mole_items).is_ok()
                && moles.offsets.try_reserve(mole_items / size).is_ok();
            if !reserved {
                return Err(self.over_budget(size, max_itemsets));
            }
            for part in parts {
                candidates += part.candidates;
                for mole in part.moles.chunks_exact(size) {
                    moles.items.extend_from_slice(mole);
                    moles.offsets.push(moles.items.len());
                }
                next.sets.extend_from_slice(&part.sets);
                let mut at = 0;
                for len in part.tid_lens {
                    next.tids.extend_from_slice(&part.tids[at..at + len]);
                    at += len;
                    next.tid_offsets.push(next.tids.len());
                }
            }
            level = Some(next);
        }
        Ok((moles, candidates))
    }

    /// The error of a search stopped while deciding the sets of `size` items.
    fn over_budget(&self, size: usize, max_itemsets: u64) -> KernelError {
        let fits = if size > 2 {
            format!("sets of up to {} items fit: p = {}", size - 1, size - 1)
        } else {
            "no set of 2 items fits: p = 1".to_owned()
        };
        invalid(format!(
            "p = {} is too large for this data: the search for minimal moles passed its \
             budget at sets of {size} public items (more than max_itemsets = {max_itemsets} \
             candidate sets, or cohorts of more than 2^28 transaction ids in one level); \
             lower p ({fits}), raise k or lower h (more sets become moles and are not \
             extended), or raise max_itemsets",
            self.p
        ))
    }

    /// Extend non-mole `i` of `prev` by every later public item its cohort holds.
    ///
    /// A candidate prefix + b needs every subset one item smaller to be a non-mole: the
    /// prefix is; (prefix − x) + b, for each item x of the prefix, lies in the block of
    /// `prev` headed by prefix − x. Counting, per b, the blocks holding it gives the
    /// allowed b with a few binary searches per prefix instead of one per candidate.
    fn extend(
        &self,
        prev: &Level,
        i: usize,
        alive: &[bool],
        keep_tids: bool,
        scratch: &mut Scratch,
        budget: &Budget,
    ) -> Extension {
        let prefix = prev.set(i);
        let size = prefix.len();
        let last = prefix[size - 1];
        let mut out = Extension::default();
        if budget.stopped() {
            return out;
        }
        if size >= 2 {
            let mut head: Vec<u32> = Vec::with_capacity(size - 1);
            for x in 0..size {
                head.clear();
                head.extend(
                    prefix
                        .iter()
                        .enumerate()
                        .filter(|&(y, _)| y != x)
                        .map(|(_, &e)| e),
                );
                for j in prev.block(&head) {
                    let b = prev.set(j)[size - 1];
                    if b <= last {
                        continue;
                    }
                    let count = &mut scratch.allowed[b as usize];
                    if *count == 0 {
                        scratch.marked.push(b);
                    }
                    *count += 1;
                }
            }
        }
        let required = u32::try_from(size).unwrap_or(u32::MAX);
        let allowed = |b: u32, scratch: &Scratch| {
            if size >= 2 {
                scratch.allowed[b as usize] == required
            } else {
                alive[b as usize]
            }
        };
        if size < 2 || !scratch.marked.is_empty() {
            let cohort = &prev.tids[prev.tid_offsets[i]..prev.tid_offsets[i + 1]];
            for &t in cohort {
                let items = self.pub_of(t);
                let from = items.partition_point(|&e| e <= last);
                for &b in &items[from..] {
                    if !allowed(b, scratch) {
                        continue;
                    }
                    let list = &mut scratch.ext[b as usize];
                    if list.is_empty() {
                        scratch.touched.push(b);
                    }
                    list.push(t);
                }
            }
        }
        for &b in &scratch.marked {
            scratch.allowed[b as usize] = 0;
        }
        scratch.marked.clear();
        scratch.touched.sort_unstable();
        let touched = std::mem::take(&mut scratch.touched);
        // Past the budget, the lists are emptied and nothing is decided.
        let mut go = budget.spend(touched.len() as u64);
        for &b in &touched {
            let list = std::mem::take(&mut scratch.ext[b as usize]);
            if !go {
                let mut list = list;
                list.clear();
                scratch.ext[b as usize] = list;
                continue;
            }
            out.candidates += 1;
            if self.is_mole(&list, scratch) {
                out.moles.extend_from_slice(prefix);
                out.moles.push(b);
            } else {
                out.sets.extend_from_slice(prefix);
                out.sets.push(b);
                if keep_tids {
                    go = budget.keep(list.len() as u64);
                    out.tid_lens.push(list.len());
                    out.tids.extend_from_slice(&list);
                } else {
                    out.tid_lens.push(0);
                }
            }
            let mut list = list;
            list.clear();
            scratch.ext[b as usize] = list;
        }
        let mut touched = touched;
        touched.clear();
        scratch.touched = touched;
        out
    }
}

/// A node of the MOLE-tree.
struct Node {
    /// Public index of the item (unused for the root).
    label: u32,
    parent: u32,
    /// Minimal moles passing through the node.
    count: u64,
    alive: bool,
    /// First child and next sibling (`NONE`: none): children without an allocation each.
    first_child: u32,
    next_sibling: u32,
}

/// No node.
const NONE: u32 = u32::MAX;

/// The MOLE-tree and its score table.
struct MoleTree {
    nodes: Vec<Node>,
    /// MM per public index: remaining minimal moles holding the item.
    mm: Vec<u64>,
    /// Node links per public index.
    links: Vec<Vec<u32>>,
}

impl MoleTree {
    /// Build the tree: each mole a path from the root, its items by decreasing MM (ties:
    /// the higher code first, as in the course report's example).
    fn build(moles: &Moles, public: usize) -> Self {
        let mut mm = vec![0u64; public];
        for &e in &moles.items {
            mm[e as usize] += 1;
        }
        // Items by decreasing MM, then decreasing code: rank 0 comes first on a path.
        let mut order: Vec<u32> = (0..public as u32).collect();
        order.sort_unstable_by(|&a, &b| mm[b as usize].cmp(&mm[a as usize]).then(b.cmp(&a)));
        let mut rank = vec![0u32; public];
        for (r, &e) in order.iter().enumerate() {
            rank[e as usize] = r as u32;
        }
        // Each mole as its items' ranks, ascending; the moles sorted by those paths.
        let mut ranked: Vec<u32> = moles.items.iter().map(|&e| rank[e as usize]).collect();
        for w in moles.offsets.windows(2) {
            ranked[w[0]..w[1]].sort_unstable();
        }
        let path = |m: usize| &ranked[moles.offsets[m]..moles.offsets[m + 1]];
        let mut sorted: Vec<usize> = (0..moles.offsets.len() - 1).collect();
        sorted.sort_unstable_by(|&a, &b| path(a).cmp(path(b)));
        let mut nodes = vec![Node {
            label: NONE,
            parent: NONE,
            count: 0,
            alive: true,
            first_child: NONE,
            next_sibling: NONE,
        }];
        let mut links = vec![Vec::new(); public];
        // The path of the previous mole: equal prefixes share nodes (paths are sorted).
        let mut stack: Vec<u32> = Vec::new();
        let mut previous: &[u32] = &[];
        for &m in &sorted {
            let path = path(m);
            let common = path
                .iter()
                .zip(previous)
                .take_while(|(a, b)| a == b)
                .count();
            stack.truncate(common);
            for &r in &path[common..] {
                let e = order[r as usize];
                let parent = stack.last().copied().unwrap_or(0);
                let id = nodes.len() as u32;
                let next_sibling = nodes[parent as usize].first_child;
                nodes.push(Node {
                    label: e,
                    parent,
                    count: 0,
                    alive: true,
                    first_child: NONE,
                    next_sibling,
                });
                nodes[parent as usize].first_child = id;
                links[e as usize].push(id);
                stack.push(id);
            }
            for &id in &stack {
                nodes[id as usize].count += 1;
            }
            nodes[0].count += 1;
            previous = path;
        }
        Self { nodes, mm, links }
    }

    /// Suppress item `e`: remove the subtrees under its nodes, updating the counts of
    /// their ancestors and the MM of every item on the removed moles.
    fn suppress(&mut self, e: u32) {
        let links = std::mem::take(&mut self.links[e as usize]);
        let mut stack: Vec<u32> = Vec::new();
        for &x in &links {
            if !self.nodes[x as usize].alive {
                continue;
            }
            let c = self.nodes[x as usize].count;
            let mut a = self.nodes[x as usize].parent;
            while a != 0 {
                let node = &mut self.nodes[a as usize];
                node.count -= c;
                self.mm[node.label as usize] -= c;
                a = node.parent;
            }
            self.nodes[0].count -= c;
            stack.push(x);
            while let Some(d) = stack.pop() {
                let node = &mut self.nodes[d as usize];
                if !node.alive {
                    continue;
                }
                node.alive = false;
                self.mm[node.label as usize] -= node.count;
                let mut child = node.first_child;
                while child != NONE {
                    stack.push(child);
                    child = self.nodes[child as usize].next_sibling;
                }
            }
        }
    }
}

/// Greedy suppression of the minimal moles: the items chosen (public indices, in order)
/// and the size of the MOLE-tree.
fn greedy(data: &Data, moles: &Moles, removal: Removal) -> Result<(Vec<u32>, u64)> {
    let np = data.public.len();
    let il = |e: u32| data.support[data.public[e as usize] as usize];
    if removal == Removal::RmAll {
        let mut in_mole = vec![false; np];
        for &e in &moles.items {
            in_mole[e as usize] = true;
        }
        let chosen = (0..np as u32).filter(|&e| in_mole[e as usize]).collect();
        return Ok((chosen, 0));
    }
    let mut tree = MoleTree::build(moles, np);
    let tree_nodes = tree.nodes.len() as u64 - 1;
    let mut table: Vec<u32> = (0..np as u32)
        .filter(|&e| tree.mm[e as usize] > 0)
        .collect();
    let mut chosen = Vec::new();
    while !table.is_empty() {
        cancel::check(KERNEL)?;
        let better = |a: u32, b: u32| -> bool {
            let (ma, mb) = (tree.mm[a as usize], tree.mm[b as usize]);
            let (la, lb) = (il(a), il(b));
            let order = match removal {
                Removal::MmIl => (u128::from(ma) * u128::from(lb))
                    .cmp(&(u128::from(mb) * u128::from(la)))
                    .then(ma.cmp(&mb)),
                Removal::OneIl => lb.cmp(&la).then(ma.cmp(&mb)),
                Removal::Mm | Removal::RmAll => ma.cmp(&mb).then(lb.cmp(&la)),
            };
            order.then(b.cmp(&a)) == std::cmp::Ordering::Greater
        };
        let mut best = table[0];
        for &e in &table[1..] {
            if better(e, best) {
                best = e;
            }
        }
        tree.suppress(best);
        // Every mole holding `best` went with its nodes, so its MM is 0 now; setting it
        // makes the loop end after at most one step per item whatever happens.
        tree.mm[best as usize] = 0;
        chosen.push(best);
        table.retain(|&e| tree.mm[e as usize] > 0);
    }
    Ok((chosen, tree_nodes))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn breach_threshold_is_the_first_count_over_h() {
        for sup in 1..50u64 {
            for h in [0.1, 0.3, 0.4, 0.5, 0.7, 1.0, 1e-9, 0.999_999] {
                let c = breach_threshold(h, sup);
                assert!(c == sup + 1 || c as f64 / sup as f64 > h);
                assert!(c == 0 || (c - 1) as f64 / sup as f64 <= h);
            }
        }
    }

    #[test]
    fn splitmix_below_stays_in_range() {
        let mut rng = SplitMix(7);
        for n in 1..100 {
            assert!(rng.below(n) < n);
        }
    }
}
