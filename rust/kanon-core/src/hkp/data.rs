//! The transactions in dense indices, the budget of the search, and the helpers of the
//! mole search (levels, extensions, scratch buffers, a seeded generator).

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use super::types::{invalid, HkpOptions, Roles, MAX_COHORT_ENTRIES};
use crate::cancel;
use crate::error::Result;

/// The transactions split into public and private items, in dense indices.
pub(super) struct Data {
    pub(super) transactions: usize,
    /// Code of each public index (ascending).
    pub(super) public: Vec<u32>,
    /// Private codes (ascending).
    pub(super) private: Vec<u32>,
    pub(super) dropped: Vec<u32>,
    pub(super) dropped_occurrences: u64,
    pub(super) occurrences: u64,
    /// Support per code.
    pub(super) support: Vec<u64>,
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
    pub(super) p: usize,
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
pub(super) struct Budget {
    /// Candidates decided (or about to be) over all levels.
    pub(super) candidates: AtomicU64,
    /// Transaction ids kept for the cohorts of the level being built.
    pub(super) entries: AtomicU64,
    pub(super) max_candidates: u64,
    /// Set once a limit is passed or a cancellation seen: the other tasks stop early.
    pub(super) stop: AtomicBool,
}

impl Budget {
    /// Reserve `n` candidates; `false` (and the stop flag) when the budget would be passed.
    pub(super) fn spend(&self, n: u64) -> bool {
        let before = self.candidates.fetch_add(n, Ordering::Relaxed);
        if before.saturating_add(n) > self.max_candidates {
            self.stop.store(true, Ordering::Relaxed);
            return false;
        }
        true
    }

    /// Keep `n` more cohort entries; `false` (and the stop flag) past the cap.
    pub(super) fn keep(&self, n: u64) -> bool {
        let before = self.entries.fetch_add(n, Ordering::Relaxed);
        if before.saturating_add(n) > MAX_COHORT_ENTRIES {
            self.stop.store(true, Ordering::Relaxed);
            return false;
        }
        true
    }

    pub(super) fn stopped(&self) -> bool {
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
pub(super) struct Scratch {
    /// Per public index: the transactions of the current cohort holding it.
    pub(super) ext: Vec<Vec<u32>>,
    pub(super) touched: Vec<u32>,
    /// Per private index: its count in the cohort being checked.
    counts: Vec<u64>,
    counted: Vec<u32>,
    /// Per public index: how many subsets one item smaller of prefix + it are non-moles.
    pub(super) allowed: Vec<u32>,
    pub(super) marked: Vec<u32>,
}

impl Scratch {
    pub(super) fn new(public: usize, private: usize) -> Self {
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
pub(super) struct Level {
    pub(super) size: usize,
    pub(super) sets: Vec<u32>,
    pub(super) tid_offsets: Vec<usize>,
    pub(super) tids: Vec<u32>,
}

impl Level {
    pub(super) fn len(&self) -> usize {
        self.sets.len() / self.size
    }

    pub(super) fn set(&self, i: usize) -> &[u32] {
        &self.sets[i * self.size..(i + 1) * self.size]
    }

    /// The sets whose first `size - 1` items are `head` (contiguous: sets are sorted).
    pub(super) fn block(&self, head: &[u32]) -> std::ops::Range<usize> {
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
pub(super) struct Extension {
    pub(super) sets: Vec<u32>,
    pub(super) tid_lens: Vec<usize>,
    pub(super) tids: Vec<u32>,
    pub(super) moles: Vec<u32>,
    pub(super) candidates: u64,
}

/// Minimal moles of size 2 to p (public indices), flat: mole `i` is
/// `items[offsets[i]..offsets[i + 1]]`.
pub(super) struct Moles {
    pub(super) offsets: Vec<usize>,
    pub(super) items: Vec<u32>,
}

impl Data {
    pub(super) fn new(
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

    pub(super) fn pub_of(&self, t: u32) -> &[u32] {
        let t = t as usize;
        &self.pub_items[self.pub_offsets[t]..self.pub_offsets[t + 1]]
    }

    fn priv_of(&self, t: u32) -> &[u32] {
        let t = t as usize;
        &self.priv_items[self.priv_offsets[t]..self.priv_offsets[t + 1]]
    }

    pub(super) fn cohort(&self, e: usize) -> &[u32] {
        &self.tids[self.tid_offsets[e]..self.tid_offsets[e + 1]]
    }

    /// Whether a set with this (non-empty) cohort is a mole.
    pub(super) fn is_mole(&self, cohort: &[u32], scratch: &mut Scratch) -> bool {
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
