//! PrioPrivacy's greedy local recoding with prioritized quasi-identifiers (Bampoulidis,
//! Markopoulos and Lupu 2019, Listing 1), made strict: a suppressed cell `*` is a
//! released value like any other, so every released combination holds at least k rows.
//!
//! The quasi-identifiers join the work one at a time, least important first. After each
//! joins, the rows not yet released (all still at their original values) are generalized
//! level by level with rule combinations of 1, 2, … of the joined attributes, the
//! combination forming the largest group first; then suppressed, fewest cells first. A
//! combination is a *pattern* (a level per attribute): every row matches exactly one
//! rule per attribute (its ancestor), so the groups of all rule combinations of a pattern
//! are one grouping of the rows. Beyond the paper:
//! * unreleased rows may join a released group with the same labels (it already holds
//!   k rows);
//! * before a more important attribute joins, rows left over are released with every
//!   joined attribute suppressed when the table holds at least k rows with their values
//!   of the attributes still to join: rows released earlier with those values are moved
//!   over, a released group's surplus first, then whole groups. So the attributes still
//!   to join keep their values on every row whose values of them are shared by k rows.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap, HashSet};

use crate::cancel;
use crate::error::{KernelError, Result};
use crate::hierarchy::{check_recoding_inputs, Hierarchy};

const KERNEL: &str = "priority";

/// Patterns of one size tried per pass at most (the paper tries every combination of
/// the joined attributes: exponential in their number); patterns are enumerated least
/// important attributes first.
pub const MAX_PATTERNS: usize = 4096;

/// Tuples grouped (patterns × unreleased tuples) at most per joined attribute and level
/// of the generalization, and per joined attribute in the suppression: the cost stays
/// bounded on wide tables (16 attributes: 2^16 patterns a level). Patterns beyond it are
/// skipped; the rows they would have released are released by later patterns or, at
/// the latest, by the final suppression of every attribute.
pub const PASS_WORK: usize = 1 << 20;

/// Marks a tuple not yet released.
const UNRELEASED: u32 = u32::MAX;

/// The release: a group per tuple, and per group its level of every attribute.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Recoding {
    /// Group of every input tuple (dense ids `0..groups`).
    pub group_of_tuple: Vec<u32>,
    /// Number of groups.
    pub groups: usize,
    /// `levels[g * m + j]`: the level of attribute `j` in group `g` (its height: `*`).
    pub levels: Vec<u32>,
    /// Rows per group.
    pub rows: Vec<u64>,
}

/// Anonymize a histogram (`m` leaf codes per distinct tuple, `counts` rows each) so that
/// every released combination of labels holds at least `k` rows, generalizing and
/// suppressing the least important attributes first. `ranks[j]`: attribute `j`'s
/// priority, lower = more important; ties join in attribute order.
///
/// # Errors
/// [`KernelError::InvalidArgument`] or [`KernelError::LengthMismatch`] for inconsistent
/// inputs, `k = 0`, or fewer than `k` rows (but some); [`KernelError::Cancelled`] when
/// cancelled.
///
/// # Complexity
/// Per joined attribute and level, one grouping of the unreleased tuples per pattern
/// (at most [`MAX_PATTERNS`] per pattern size, and [`PASS_WORK`] tuples grouped per
/// attribute and level): O(m · levels · PASS_WORK · m) hashing at most.
pub fn priority(
    tuples: &[u32],
    m: usize,
    counts: &[u64],
    hierarchies: &[Hierarchy],
    ranks: &[u32],
    k: u64,
) -> Result<Recoding> {
    cancel::check(KERNEL)?;
    check_recoding_inputs(KERNEL, tuples, m, counts, hierarchies, ("ranks", ranks), k)?;
    // Least important first; ties in attribute order.
    let mut order: Vec<usize> = (0..m).collect();
    order.sort_by_key(|&j| (Reverse(ranks[j]), j));
    let mut state = State::new(tuples, m, counts, hierarchies, k);
    state.pass(&[vec![0; m]]);
    for step in 0..m {
        if state.unreleased.is_empty() {
            break;
        }
        let joined = &order[..=step];
        state.generalize(joined)?;
        state.suppress(joined)?;
        state.borrow(joined);
    }
    if !state.unreleased.is_empty() {
        return Err(KernelError::InvalidArgument {
            kernel: KERNEL,
            message: format!(
                "{} tuples are left unreleased (an internal error)",
                state.unreleased.len()
            ),
        });
    }
    Ok(state.finish())
}

/// The greedy's state: which tuples are released, into which group.
struct State<'a> {
    tuples: &'a [u32],
    m: usize,
    counts: &'a [u64],
    hierarchies: &'a [Hierarchy],
    k: u64,
    /// `offset[j][l]`: the first node id of attribute `j`'s labels at level `l` (node
    /// ids number every label of every level of one attribute).
    offset: Vec<Vec<u32>>,
    group_of: Vec<u32>,
    /// Tuples not yet released, in input order.
    unreleased: Vec<u32>,
    released: HashMap<Box<[u32]>, u32>,
    levels: Vec<Vec<u32>>,
    rows: Vec<u64>,
}

impl<'a> State<'a> {
    fn new(
        tuples: &'a [u32],
        m: usize,
        counts: &'a [u64],
        hierarchies: &'a [Hierarchy],
        k: u64,
    ) -> Self {
        let offset = hierarchies
            .iter()
            .map(|h| {
                let mut at = 0u32;
                (0..=h.height())
                    .map(|l| {
                        let first = at;
                        at = at.saturating_add(h.width(l));
                        first
                    })
                    .collect()
            })
            .collect();
        let n = counts.len();
        Self {
            tuples,
            m,
            counts,
            hierarchies,
            k,
            offset,
            group_of: vec![UNRELEASED; n],
            unreleased: (0..n as u32).filter(|&t| counts[t as usize] > 0).collect(),
            released: HashMap::new(),
            levels: Vec::new(),
            rows: Vec::new(),
        }
    }

    fn height(&self, j: usize) -> u32 {
        self.hierarchies[j].height() as u32
    }

    /// Tuple `t`'s labels (node ids) at `levels`.
    fn key(&self, t: u32, levels: &[u32]) -> Box<[u32]> {
        let row = &self.tuples[t as usize * self.m..(t as usize + 1) * self.m];
        (0..self.m)
            .map(|j| {
                let l = levels[j] as usize;
                self.offset[j][l] + self.hierarchies[j].generalize(l, row[j])
            })
            .collect()
    }

    fn released_rows(&self, key: &[u32]) -> u64 {
        self.released.get(key).map_or(0, |&g| self.rows[g as usize])
    }

    /// Release tuples `ts` into the group of `key` (made at `levels` if new).
    fn release(&mut self, key: Box<[u32]>, levels: &[u32], ts: &[u32]) {
        let g = match self.released.get(&key) {
            Some(&g) => g,
            None => {
                let g = self.rows.len() as u32;
                self.released.insert(key, g);
                self.levels.push(levels.to_vec());
                self.rows.push(0);
                g
            }
        };
        for &t in ts {
            self.group_of[t as usize] = g;
            self.rows[g as usize] += self.counts[t as usize];
        }
    }

    /// Listing 1's `while` over one pattern size: group the unreleased tuples by every
    /// pattern; repeatedly release the largest group of at least k rows (its rows plus a
    /// released group's with the same labels), preferring earlier patterns, then smaller
    /// keys. Releasing only shrinks other groups: they are re-sized when popped.
    fn pass(&mut self, patterns: &[Vec<u32>]) {
        // (key, tuples, pattern): the candidate groups; the heap holds their sizes.
        let mut candidates: Vec<(Box<[u32]>, Vec<u32>, usize)> = Vec::new();
        let mut heap: BinaryHeap<(u64, Reverse<usize>, Reverse<usize>)> = BinaryHeap::new();
        for (p, levels) in patterns.iter().enumerate() {
            let mut groups: HashMap<Box<[u32]>, Vec<u32>> = HashMap::new();
            for &t in &self.unreleased {
                groups.entry(self.key(t, levels)).or_default().push(t);
            }
            // Keys are distinct within a pattern: ordered by key, ids are deterministic.
            let mut found: Vec<_> = groups.into_iter().collect();
            found.sort_unstable_by(|a, b| a.0.cmp(&b.0));
            for (key, ts) in found {
                let size = self.size(&key, &ts);
                if size >= self.k {
                    heap.push((size, Reverse(p), Reverse(candidates.len())));
                    candidates.push((key, ts, p));
                }
            }
        }
        while let Some((size, p, Reverse(i))) = heap.pop() {
            let ts: Vec<u32> = candidates[i]
                .1
                .iter()
                .copied()
                .filter(|&t| self.group_of[t as usize] == UNRELEASED)
                .collect();
            let now = self.size(&candidates[i].0, &ts);
            if ts.is_empty() || now < self.k {
                continue;
            }
            if now < size {
                candidates[i].1 = ts;
                heap.push((now, p, Reverse(i)));
                continue;
            }
            let key = std::mem::take(&mut candidates[i].0);
            self.release(key, &patterns[candidates[i].2], &ts);
        }
        let group_of = &self.group_of;
        self.unreleased
            .retain(|&t| group_of[t as usize] == UNRELEASED);
    }

    /// Rows of tuples `ts` that are unreleased, plus the released group of `key`.
    fn size(&self, key: &[u32], ts: &[u32]) -> u64 {
        let own: u64 = ts
            .iter()
            .filter(|&&t| self.group_of[t as usize] == UNRELEASED)
            .map(|&t| self.counts[t as usize])
            .sum();
        own + self.released_rows(key)
    }

    /// Listing 1's generalization: per level (1 up to the highest below a root), rule
    /// combinations of 1, 2, … joined attributes that have that level below their root.
    fn generalize(&mut self, joined: &[usize]) -> Result<()> {
        let top = joined.iter().map(|&j| self.height(j)).max().unwrap_or(0);
        for level in 1..top {
            let eligible: Vec<usize> = joined
                .iter()
                .copied()
                .filter(|&j| level < self.height(j))
                .collect();
            let mut work = PASS_WORK;
            for size in 1..=eligible.len() {
                cancel::check(KERNEL)?;
                if self.unreleased.is_empty() {
                    return Ok(());
                }
                let patterns = self.patterns(&eligible, size, |_| level);
                if !self.pass_within(&patterns, &mut work) {
                    break;
                }
            }
        }
        Ok(())
    }

    /// Listing 1's suppression: 1, 2, … joined attributes set to `*`.
    fn suppress(&mut self, joined: &[usize]) -> Result<()> {
        let mut work = PASS_WORK;
        for size in 1..=joined.len() {
            cancel::check(KERNEL)?;
            if self.unreleased.is_empty() {
                return Ok(());
            }
            let patterns = self.patterns(joined, size, |j| self.height(j));
            if !self.pass_within(&patterns, &mut work) {
                break;
            }
        }
        Ok(())
    }

    /// [`State::pass`] over as many of `patterns` as `work` allows (each groups every
    /// unreleased tuple); false once it is spent.
    fn pass_within(&mut self, patterns: &[Vec<u32>], work: &mut usize) -> bool {
        let fit = (*work / self.unreleased.len().max(1)).min(patterns.len());
        *work -= fit * self.unreleased.len();
        self.pass(&patterns[..fit]);
        fit == patterns.len()
    }

    /// The patterns setting `size` of `attributes` to `level_of(j)` (the others at their
    /// values), in lexicographic order of positions, at most [`MAX_PATTERNS`].
    fn patterns(
        &self,
        attributes: &[usize],
        size: usize,
        level_of: impl Fn(usize) -> u32,
    ) -> Vec<Vec<u32>> {
        let mut out = Vec::new();
        let mut pick: Vec<usize> = (0..size).collect();
        let n = attributes.len();
        loop {
            let mut levels = vec![0u32; self.m];
            for &i in &pick {
                levels[attributes[i]] = level_of(attributes[i]);
            }
            out.push(levels);
            if out.len() >= MAX_PATTERNS {
                return out;
            }
            // The next combination: raise the last position that can still rise.
            let Some(i) = (0..size).rev().find(|&i| pick[i] < n - size + i) else {
                return out;
            };
            pick[i] += 1;
            for j in i + 1..size {
                pick[j] = pick[j - 1] + 1;
            }
        }
    }

    /// Before the other attributes join: release the tuples left over with every
    /// `joined` attribute suppressed wherever the table holds at least k rows with their
    /// values of the others, moving released rows with those values over (a group's surplus
    /// above k first, smallest tuples first; then whole groups, smallest first).
    fn borrow(&mut self, joined: &[usize]) {
        if self.unreleased.is_empty() {
            return;
        }
        let m = self.m;
        let mut levels = vec![0u32; m];
        for &j in joined {
            levels[j] = self.height(j);
        }
        // Rows of the table and tuples per key (the values of the other attributes).
        let mut by_key: HashMap<Box<[u32]>, (u64, Vec<u32>)> = HashMap::new();
        for t in 0..self.counts.len() as u32 {
            if self.counts[t as usize] > 0 {
                let entry = by_key.entry(self.key(t, &levels)).or_default();
                entry.0 += self.counts[t as usize];
                entry.1.push(t);
            }
        }
        let mut keys: Vec<Box<[u32]>> = self
            .unreleased
            .iter()
            .map(|&t| self.key(t, &levels))
            .collect();
        keys.sort_unstable();
        keys.dedup();
        for key in keys {
            let (table_rows, members) = &by_key[&key];
            if *table_rows < self.k {
                continue;
            }
            let target = self.released.get(&key).copied();
            let mine: Vec<u32> = members
                .iter()
                .copied()
                .filter(|&t| self.group_of[t as usize] == UNRELEASED)
                .collect();
            let have: u64 = mine.iter().map(|&t| self.counts[t as usize]).sum::<u64>()
                + target.map_or(0, |g| self.rows[g as usize]);
            let mut need = self.k.saturating_sub(have);
            // Donors: released tuples with these values, by group (not the target).
            let mut donors: HashMap<u32, Vec<u32>> = HashMap::new();
            for &t in members {
                let g = self.group_of[t as usize];
                if g != UNRELEASED && Some(g) != target {
                    donors.entry(g).or_default().push(t);
                }
            }
            let mut donors: Vec<(u32, Vec<u32>)> = donors.into_iter().collect();
            donors.sort_unstable();
            let mut moved: Vec<u32> = Vec::new();
            let mut taken: HashSet<u32> = HashSet::new();
            // A group's surplus first: its smallest tuples that leave it at k rows.
            for (g, ts) in &mut donors {
                if need == 0 {
                    break;
                }
                ts.sort_unstable_by_key(|&t| (self.counts[t as usize], t));
                for &t in ts.iter() {
                    let c = self.counts[t as usize];
                    if need == 0 || self.rows[*g as usize] - c < self.k {
                        continue;
                    }
                    self.rows[*g as usize] -= c;
                    taken.insert(t);
                    moved.push(t);
                    need = need.saturating_sub(c);
                }
            }
            // Then whole groups, smallest first (their rows all share the values).
            donors.sort_unstable_by_key(|(g, _)| (self.rows[*g as usize], *g));
            for (g, ts) in &donors {
                if need == 0 {
                    break;
                }
                for &t in ts {
                    if !taken.contains(&t) {
                        self.rows[*g as usize] -= self.counts[t as usize];
                        need = need.saturating_sub(self.counts[t as usize]);
                        moved.push(t);
                    }
                }
            }
            moved.extend(mine);
            self.release(key, &levels, &moved);
        }
        let group_of = &self.group_of;
        self.unreleased
            .retain(|&t| group_of[t as usize] == UNRELEASED);
    }

    /// Number the groups that hold rows densely, in order of creation.
    fn finish(self) -> Recoding {
        let mut id = vec![UNRELEASED; self.rows.len()];
        let mut levels = Vec::new();
        let mut rows = Vec::new();
        for (g, &r) in self.rows.iter().enumerate() {
            if r > 0 {
                id[g] = rows.len() as u32;
                rows.push(r);
                levels.extend_from_slice(&self.levels[g]);
            }
        }
        // A tuple of no rows (never released) joins group 0.
        let group_of_tuple = self
            .group_of
            .iter()
            .map(|&g| if g == UNRELEASED { 0 } else { id[g as usize] })
            .collect();
        Recoding {
            group_of_tuple,
            groups: rows.len(),
            levels,
            rows,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flat(leaves: u32) -> Hierarchy {
        Hierarchy::flat(leaves)
    }

    /// Every group holds at least k rows, and every tuple's labels are its ancestors.
    fn check(tuples: &[u32], m: usize, counts: &[u64], hs: &[Hierarchy], r: &Recoding, k: u64) {
        let mut rows = vec![0u64; r.groups];
        for (t, &g) in r.group_of_tuple.iter().enumerate() {
            rows[g as usize] += counts[t];
        }
        assert_eq!(rows, r.rows);
        assert!(rows.iter().all(|&x| x >= k), "{rows:?}");
        // Tuples of one group share their labels.
        let mut labels: HashMap<u32, Vec<u32>> = HashMap::new();
        for (t, &g) in r.group_of_tuple.iter().enumerate() {
            let lv = &r.levels[g as usize * m..(g as usize + 1) * m];
            let l: Vec<u32> = (0..m)
                .map(|j| hs[j].generalize(lv[j] as usize, tuples[t * m + j]))
                .collect();
            assert_eq!(labels.entry(g).or_insert_with(|| l.clone()), &l);
        }
    }

    #[test]
    fn a_row_of_its_own_loses_the_least_important_attribute() {
        // (a, b): two rows (0, 0), two rows (1, 0), one row (0, 1); k = 2.
        let hs = [flat(2), flat(2)];
        let tuples = [0, 0, 1, 0, 0, 1];
        let counts = [2, 2, 1];
        // b least important: the lone row needs b suppressed and joins (0, *).
        let r = priority(&tuples, 2, &counts, &hs, &[1, 2], 2).unwrap();
        check(&tuples, 2, &counts, &hs, &r, 2);
        let g = r.group_of_tuple[2] as usize;
        assert_eq!(&r.levels[g * 2..g * 2 + 2], &[0, 1]);
        // a least important: suppressing a alone leaves (*, 1) with one row; the
        // table holds 1 row with b = 1, fewer than k: b is suppressed too.
        let r = priority(&tuples, 2, &counts, &hs, &[2, 1], 2).unwrap();
        check(&tuples, 2, &counts, &hs, &r, 2);
    }

    #[test]
    fn borrowing_keeps_the_important_value() {
        // a important: three rows (0, 0), (0, 1), (0, 2), each alone; k = 3: b
        // suppressed forms (0, *) of 3 rows.
        let hs = [flat(2), flat(3)];
        let tuples = [0, 0, 0, 1, 0, 2, 1, 0, 1, 0, 1, 0];
        let counts = [1, 1, 1, 1, 1, 1];
        let r = priority(&tuples, 2, &counts, &hs, &[1, 2], 3).unwrap();
        check(&tuples, 2, &counts, &hs, &r, 3);
        for (t, &g) in r.group_of_tuple.iter().enumerate() {
            assert_eq!(r.levels[g as usize * 2], 0, "tuple {t}");
        }
    }

    #[test]
    fn small_tables_are_refused_and_empty_ones_pass() {
        let hs = [flat(2)];
        assert!(priority(&[0, 1], 1, &[1, 1], &hs, &[1], 3).is_err());
        assert!(priority(&[0], 1, &[1], &hs, &[1], 0).is_err());
        let r = priority(&[], 1, &[], &hs, &[1], 3).unwrap();
        assert_eq!(r.groups, 0);
    }

    #[test]
    fn wide_tables_are_k_anonymous_within_the_work_bound() {
        // 16 attributes: far more patterns than PASS_WORK lets a pass group.
        let m = 16;
        let hs: Vec<Hierarchy> = (0..m)
            .map(|_| {
                Hierarchy::try_from_levels(&[&[0, 1, 2, 3], &[0, 0, 1, 1], &[0, 0, 0, 0]]).unwrap()
            })
            .collect();
        let n = 400usize;
        let tuples: Vec<u32> = (0..n * m)
            .map(|i| ((i * 2_654_435_761) >> 7) as u32 % 4)
            .collect();
        let counts = vec![1u64; n];
        let ranks: Vec<u32> = (0..m as u32).collect();
        let r = priority(&tuples, m, &counts, &hs, &ranks, 3).unwrap();
        check(&tuples, m, &counts, &hs, &r, 3);
    }

    #[test]
    fn random_histograms_are_k_anonymous() {
        // A small deterministic generator: skewed codes over 3 attributes.
        let mut seed = 7u64;
        let mut next = |n: u32| {
            seed = seed.wrapping_mul(6_364_136_223_846_793_005).wrapping_add(1);
            ((seed >> 33) as u32 % n).min((seed >> 40) as u32 % n)
        };
        let hs = [
            Hierarchy::try_from_levels(&[&[0, 1, 2, 3], &[0, 0, 1, 1], &[0, 0, 0, 0]]).unwrap(),
            flat(3),
            Hierarchy::try_from_levels(&[&[0, 1, 2, 3, 4], &[0, 0, 1, 1, 2], &[0; 5]]).unwrap(),
        ];
        for k in [1, 2, 3, 5, 8] {
            let mut seen = HashMap::new();
            for _ in 0..60 {
                let t = [next(4), next(3), next(5)];
                *seen.entry(t).or_insert(0u64) += 1;
            }
            let mut keys: Vec<_> = seen.keys().copied().collect();
            keys.sort_unstable();
            let tuples: Vec<u32> = keys.iter().flatten().copied().collect();
            let counts: Vec<u64> = keys.iter().map(|t| seen[t]).collect();
            for ranks in [[1, 2, 3], [3, 2, 1], [1, 1, 1], [2, 1, 2]] {
                let r = priority(&tuples, 3, &counts, &hs, &ranks, k).unwrap();
                check(&tuples, 3, &counts, &hs, &r, k);
            }
        }
    }
}
