//! The minimal moles: size-1 moles, then level by level extensions of the non-moles.

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};

use rayon::prelude::*;

use super::data::{Budget, Data, Extension, Level, Moles, Scratch};
use super::types::{invalid, KERNEL};
use crate::cancel;
use crate::error::{KernelError, Result};

impl Data {
    /// The size-1 moles (public indices) and the non-moles among the public items.
    pub(super) fn size1(&self) -> (Vec<u32>, Level) {
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
    pub(super) fn minimal_moles(&self, f1: &Level, max_itemsets: u64) -> Result<(Moles, u64)> {
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
