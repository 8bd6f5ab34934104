//! Re-partitioning a small pool of rows — the rows of a few neighbouring groups — into
//! groups of at least k rows at a lower cost: the repair step of the large-neighbourhood
//! pass of [`crate::forest::improve`].
//!
//! A pool is solved from scratch, ignoring its current grouping: by recursive binary cuts
//! (top-down), and by greedy k-member clustering (Byun, Kamra, Bertino and Li, "Efficient
//! k-anonymization using clustering techniques", DASFAA 2007) from a few deterministic
//! first seeds; each result is polished by a local search of row moves and swaps inside
//! the pool, and the cheapest wins if it beats the current grouping. As everywhere in
//! [`crate::forest::improve`], the cost of a group of `s` rows is `s · Σ_j span_j(lo_j, hi_j)`
//! for its rank range `lo_j..=hi_j` in every attribute, plus, for the categorical
//! attributes of range labels (*set attributes*), `s · (distinct values − 1) · unit_j`.

use crate::cancel;
use crate::forest::improve::bound::Bound;
use crate::forest::improve::cut::best_cut;

/// Rank range of a group in one attribute; `lo > hi` for an empty group.
type Range = (u32, u32);

const EMPTY: Range = (u32::MAX, 0);

/// Hard cap on the sweeps of one pool local search.
const SWEEPS: usize = 16;
/// First seeds of k-member clustering tried per pool.
const SEEDS: usize = 8;
/// A k-member clustering is polished only if it costs at most this many % of the pool's
/// current grouping.
const PROMISING: u128 = 120;
/// After two seeds, more are tried only while the best candidate costs at most this
/// many % of the pool's current grouping.
const CLOSE: u128 = 110;

/// A pool of rows with the interval cost, on pool-local ranks: in every attribute the
/// distinct ranks of the pool's rows are renumbered `0..d_j` in order, and the units of
/// every local range are one table lookup.
pub(crate) struct Pool {
    m: usize,
    k: usize,
    /// `ranks[i · m + j]`: local rank of pool row `i` in attribute `j`.
    ranks: Vec<u32>,
    /// Distinct ranks per attribute (`d_j`).
    distinct: Vec<usize>,
    /// Where the `d_j × d_j` table of attribute `j` starts in `table`.
    offset: Vec<usize>,
    /// `table[offset_j + lo · d_j + hi]`: units of one row of a group spanning local
    /// ranks `lo..=hi` of attribute `j` (0 for `lo ≥ hi`, and for set attributes).
    table: Vec<u64>,
    /// Set attributes: `(attribute, units of one distinct value beyond the first)`. Their
    /// local ranks are their values, `0..d_j`.
    sets: Vec<(usize, u64)>,
    /// `set_of[j]`: the index of attribute `j` in `sets`, if it is one.
    set_of: Vec<Option<usize>>,
    /// Counts of a group's values in every set attribute, in one block of `stride`
    /// counts: those of set `s` start at `set_offset[s]` (`d_j` of them).
    set_offset: Vec<usize>,
    stride: usize,
}

impl Pool {
    /// A pool of `ranks.len() / m` rows given by their ranks (`ranks[i · m + j]`), with
    /// `span(j, lo, hi)` the units of one row of a group spanning ranks `lo < hi`, and the
    /// set attributes `sets` as `(attribute, units of one distinct value beyond the
    /// first)` (their ranges are not priced).
    pub(crate) fn new(
        m: usize,
        k: usize,
        ranks: &[u32],
        span: impl Fn(usize, u32, u32) -> u64,
        sets: &[(usize, u64)],
    ) -> Self {
        let mut set_of = vec![None; m];
        for (s, &(j, _)) in sets.iter().enumerate() {
            set_of[j] = Some(s);
        }
        let n = ranks.len() / m;
        let mut local = vec![0u32; ranks.len()];
        let mut distinct = Vec::with_capacity(m);
        let mut offset = Vec::with_capacity(m);
        let mut table = Vec::new();
        let mut values = Vec::with_capacity(n);
        for j in 0..m {
            values.clear();
            values.extend((0..n).map(|i| ranks[i * m + j]));
            values.sort_unstable();
            values.dedup();
            for i in 0..n {
                // Present by construction.
                local[i * m + j] = values.binary_search(&ranks[i * m + j]).unwrap_or(0) as u32;
            }
            let d = values.len();
            distinct.push(d);
            offset.push(table.len());
            let base = table.len();
            table.resize(base + d * d, 0);
            if set_of[j].is_some() {
                continue;
            }
            for lo in 0..d {
                for hi in lo + 1..d {
                    table[base + lo * d + hi] = span(j, values[lo], values[hi]);
                }
            }
        }
        let mut set_offset = Vec::with_capacity(sets.len());
        let mut stride = 0;
        for &(j, _) in sets {
            set_offset.push(stride);
            stride += distinct[j];
        }
        Self {
            m,
            k,
            ranks: local,
            distinct,
            offset,
            table,
            sets: sets.to_vec(),
            set_of,
            set_offset,
            stride,
        }
    }

    /// Units of one row of a group holding `distinct` values of set attribute `s`.
    #[inline]
    fn set_units(&self, s: usize, distinct: usize) -> u64 {
        distinct.saturating_sub(1) as u64 * self.sets[s].1
    }

    /// Where the count of row `i`'s value of set attribute `s` sits in a block.
    #[inline]
    fn slot(&self, s: usize, i: usize) -> usize {
        self.set_offset[s] + self.row(i)[self.sets[s].0] as usize
    }

    /// Set units of one row of a group made of `rows`.
    fn set_units_of(&self, rows: &[usize]) -> u64 {
        if self.sets.is_empty() {
            return 0;
        }
        self.set_units_in(
            rows,
            &mut vec![0; self.stride],
            &mut vec![0; self.sets.len()],
        )
    }

    /// [`Self::set_units_of`] counting in `counts` and `distinct` (all zero, and left so).
    fn set_units_in(&self, rows: &[usize], counts: &mut [u32], distinct: &mut [usize]) -> u64 {
        for &i in rows {
            self.count_row(i, 1, counts, distinct, &mut []);
        }
        let units = (0..self.sets.len())
            .map(|s| self.set_units(s, distinct[s]))
            .sum();
        for &i in rows {
            self.count_row(i, -1, counts, distinct, &mut []);
        }
        units
    }

    /// Add row `i` to (`delta = 1`) or remove it from (`delta = −1`) a group's block of
    /// `counts`, keeping its `distinct` values (and `singles`, values counted once, when
    /// given one per set attribute) per set attribute.
    fn count_row(
        &self,
        i: usize,
        delta: i32,
        counts: &mut [u32],
        distinct: &mut [usize],
        singles: &mut [usize],
    ) {
        for s in 0..self.sets.len() {
            let c = &mut counts[self.slot(s, i)];
            let before = *c;
            *c = c.wrapping_add_signed(delta);
            match (before, *c) {
                (0, _) => distinct[s] += 1,
                (_, 0) => distinct[s] -= 1,
                _ => {}
            }
            if let Some(single) = singles.get_mut(s) {
                if before == 1 {
                    *single -= 1;
                }
                if *c == 1 {
                    *single += 1;
                }
            }
        }
    }

    fn len(&self) -> usize {
        self.ranks.len() / self.m
    }

    fn row(&self, i: usize) -> &[u32] {
        &self.ranks[i * self.m..(i + 1) * self.m]
    }

    /// Units of one row spanning local ranks `lo..=hi` of attribute `j`.
    #[inline]
    fn span(&self, j: usize, lo: u32, hi: u32) -> u64 {
        if lo < hi {
            self.table[self.offset[j] + lo as usize * self.distinct[j] + hi as usize]
        } else {
            0
        }
    }

    /// Units of one row of a group with `ranges`.
    fn units(&self, ranges: &[Range]) -> u64 {
        ranges
            .iter()
            .enumerate()
            .map(|(j, &(lo, hi))| self.span(j, lo, hi))
            .sum()
    }

    /// Units of one row of a group with `ranges` widened to hold row `i`.
    fn units_with(&self, ranges: &[Range], i: usize) -> u64 {
        ranges
            .iter()
            .zip(self.row(i))
            .enumerate()
            .map(|(j, (&(lo, hi), &x))| self.span(j, lo.min(x), hi.max(x)))
            .sum()
    }

    fn ranges_of(&self, rows: &[usize], out: &mut [Range]) {
        out.fill(EMPTY);
        for &i in rows {
            for (range, &x) in out.iter_mut().zip(self.row(i)) {
                *range = (range.0.min(x), range.1.max(x));
            }
        }
    }

    /// Cost of a grouping in units.
    pub(crate) fn cost(&self, groups: &[Vec<usize>]) -> u128 {
        let mut ranges = vec![EMPTY; self.m];
        let mut counts = vec![0; self.stride];
        let mut distinct = vec![0; self.sets.len()];
        groups
            .iter()
            .map(|rows| {
                self.ranges_of(rows, &mut ranges);
                let units =
                    self.units(&ranges) + self.set_units_in(rows, &mut counts, &mut distinct);
                rows.len() as u128 * u128::from(units)
            })
            .sum()
    }

    /// A cheaper grouping of the pool than `groups` (every group at least `k` rows), if
    /// one is found, with its cost; groups in a fixed order, rows ascending.
    ///
    /// Candidates, each polished by [`Self::local_search`]: the pool cut top-down
    /// ([`Self::cut_all`]), then k-member clusterings ([`Self::k_member`]) from up to
    /// [`SEEDS`] first seeds ([`Self::seeds`]). A clustering costing more than
    /// [`PROMISING`] % of `groups` is not polished, and after two seeds the rest are tried
    /// only while the best candidate so far is within [`CLOSE`] % of `groups`.
    pub(crate) fn solve(&self, groups: &[Vec<usize>]) -> Option<(Vec<Vec<usize>>, u128)> {
        if self.len() < self.k {
            return None;
        }
        let before = self.cost(groups);
        let mut best: Option<(Vec<Vec<usize>>, u128)> = None;
        let mut lowest = u128::MAX;
        let mut polish = |mut candidate: Vec<Vec<usize>>, lowest: &mut u128| {
            self.local_search(&mut candidate);
            let cost = self.cost(&candidate);
            *lowest = (*lowest).min(cost);
            if cost < before && best.as_ref().is_none_or(|(_, c)| cost < *c) {
                best = Some((candidate, cost));
            }
        };
        polish(self.cut_all(), &mut lowest);
        for (tried, seed) in self.seeds(SEEDS).into_iter().enumerate() {
            if (tried >= 2 && lowest * 100 > before * CLOSE) || cancel::requested() {
                break;
            }
            // A clustering over PROMISING % is not polished: stop building it there.
            if let Some(candidate) = self.k_member(seed, before * PROMISING) {
                if self.cost(&candidate) * 100 <= before * PROMISING {
                    polish(candidate, &mut lowest);
                }
            }
        }
        // Cancelled: a candidate cut short is no result (the pass stops too).
        if cancel::requested() {
            return None;
        }
        best.map(|(mut groups, cost)| {
            groups.retain(|g| !g.is_empty());
            for g in &mut groups {
                g.sort_unstable();
            }
            groups.sort_unstable();
            (groups, cost)
        })
    }

    /// Up to `count` distinct first seeds: the two ends of the pool's widest spread (the
    /// row farthest from row 0, and the row farthest from that one), then rows spread
    /// over the pool by index and the rows farthest from them.
    fn seeds(&self, count: usize) -> Vec<usize> {
        let n = self.len();
        let a = self.farthest(0, |_| true);
        let b = self.farthest(a, |_| true);
        let mut seeds = vec![a];
        if b != a {
            seeds.push(b);
        }
        for e in 0..=count {
            if seeds.len() >= count.min(n) {
                break;
            }
            let c = e * n / count;
            for s in [self.farthest(c, |_| true), c] {
                if !seeds.contains(&s) && seeds.len() < count {
                    seeds.push(s);
                }
            }
        }
        seeds
    }

    /// The pool cut recursively in two by the best cut of rows sorted by one attribute
    /// (ties by the others in index order), both sides at least `k` rows, while a cut
    /// lowers the cost.
    fn cut_all(&self) -> Vec<Vec<usize>> {
        let mut done = Vec::new();
        let mut stack = vec![(0..self.len()).collect::<Vec<usize>>()];
        while let Some(rows) = stack.pop() {
            match self.best_cut(&rows) {
                Some((left, right)) => {
                    stack.push(right);
                    stack.push(left);
                }
                None => done.push(rows),
            }
        }
        done
    }

    /// The cheapest cut of `rows` sorted by one attribute into two parts of at least `k`
    /// rows, if it costs strictly less than `rows` as one group.
    fn best_cut(&self, rows: &[usize]) -> Option<(Vec<usize>, Vec<usize>)> {
        let (m, k, s) = (self.m, self.k, rows.len());
        if s < 2 * k {
            return None;
        }
        let mut ranges = vec![EMPTY; m];
        self.ranges_of(rows, &mut ranges);
        let whole = s as u128 * u128::from(self.units(&ranges) + self.set_units_of(rows));
        let attributes = (0..m).filter(|&a| ranges[a].0 < ranges[a].1);
        let mut acc = vec![EMPTY; m];
        best_cut(
            rows,
            k,
            whole,
            attributes,
            |order, a| self.sort_by_attribute(order, a),
            |order, reverse, out| {
                out.resize(s + 1, 0);
                if reverse {
                    self.running_units(order.iter().rev(), &mut acc, out);
                } else {
                    self.running_units(order.iter(), &mut acc, out);
                }
            },
        )
    }

    /// Sort rows by their rank in attribute `a`, then by all their ranks, then by index.
    fn sort_by_attribute(&self, order: &mut [usize], a: usize) {
        order.sort_unstable_by(|&x, &y| {
            self.row(x)[a]
                .cmp(&self.row(y)[a])
                .then_with(|| self.row(x).cmp(self.row(y)))
                .then(x.cmp(&y))
        });
    }

    /// `out[p]`: units of one row of a group made of the first `p` rows of `order`.
    fn running_units<'r>(
        &self,
        order: impl Iterator<Item = &'r usize>,
        acc: &mut [Range],
        out: &mut [u64],
    ) {
        acc.fill(EMPTY);
        let mut counts = vec![0u32; self.stride];
        let mut distinct = vec![0usize; self.sets.len()];
        for (p, &i) in order.enumerate() {
            for (range, &x) in acc.iter_mut().zip(self.row(i)) {
                *range = (range.0.min(x), range.1.max(x));
            }
            self.count_row(i, 1, &mut counts, &mut distinct, &mut []);
            let counted: u64 = (0..self.sets.len())
                .map(|s| self.set_units(s, distinct[s]))
                .sum();
            out[p + 1] = self.units(acc) + counted;
        }
    }

    /// The row (among those `allowed`) whose pair cost with row `from` is highest, ties
    /// to the lowest index.
    fn farthest(&self, from: usize, allowed: impl Fn(usize) -> bool) -> usize {
        let mut ranges = vec![EMPTY; self.m];
        self.ranges_of(&[from], &mut ranges);
        let mut best = (0u64, from);
        for i in (0..self.len()).filter(|&i| allowed(i)) {
            let counted: u64 = self
                .sets
                .iter()
                .filter(|&&(j, _)| self.row(i)[j] != self.row(from)[j])
                .map(|&(_, unit)| unit)
                .sum();
            let units = self.units_with(&ranges, i) + counted;
            if units > best.0 || (best.1 == from && i != from && units == best.0) {
                best = (units, i);
            }
        }
        best.1
    }

    /// Greedy k-member clustering from seed row `first`: grow a group from a seed by the
    /// row that raises its cost least until it has `k` rows; the next seed is the row
    /// left that is farthest from the previous seed; the last fewer than `k` rows join
    /// the group where each costs least. None once 100 times the cost of the groups
    /// grown so far exceeds `limit` (rows joining groups only raise it).
    fn k_member(&self, first: usize, limit: u128) -> Option<Vec<Vec<usize>>> {
        let (m, k, n) = (self.m, self.k, self.len());
        let mut free = vec![true; n];
        let mut left = n;
        let mut groups: Vec<Vec<usize>> = Vec::new();
        let mut ranges: Vec<Range> = Vec::new();
        let mut seed = first;
        let mut own = vec![EMPTY; m];
        // `part[i · m + j]`: units of attribute j if free row i joined the growing group;
        // `total[i]`: their sum. Only the attributes whose range grew are recomputed.
        let mut part = vec![0u64; n * m];
        let mut total = vec![0u64; n];
        let mut grown: Vec<usize> = Vec::with_capacity(m);
        // Set attributes: value counts and distinct values of the growing group, and of
        // every finished group (`counts[g · stride..]`, `distinct[g · S..]`).
        let sets = self.sets.len();
        let mut own_counts = vec![0u32; self.stride];
        let mut own_distinct = vec![0usize; sets];
        let mut counts: Vec<u32> = Vec::new();
        let mut distinct: Vec<usize> = Vec::new();
        let mut grown_cost = 0u128;
        while left >= k {
            if cancel::requested() {
                return None;
            }
            free[seed] = false;
            left -= 1;
            let mut rows = vec![seed];
            self.ranges_of(&rows, &mut own);
            own_counts.fill(0);
            own_distinct.fill(0);
            self.count_row(seed, 1, &mut own_counts, &mut own_distinct, &mut []);
            grown.clear();
            grown.extend(0..m);
            while rows.len() < k {
                let mut best: Option<(u64, usize)> = None;
                for i in (0..n).filter(|&i| free[i]) {
                    let x = self.row(i);
                    let p = &mut part[i * m..(i + 1) * m];
                    for &j in &grown {
                        let units = match self.set_of[j] {
                            Some(s) => {
                                let new = own_counts[self.slot(s, i)] == 0;
                                self.set_units(s, own_distinct[s] + usize::from(new))
                            }
                            None => {
                                let (lo, hi) = own[j];
                                self.span(j, lo.min(x[j]), hi.max(x[j]))
                            }
                        };
                        total[i] = total[i] - p[j] + units;
                        p[j] = units;
                    }
                    if best.is_none_or(|(c, _)| total[i] < c) {
                        best = Some((total[i], i));
                    }
                }
                let Some((_, i)) = best else { break };
                free[i] = false;
                left -= 1;
                rows.push(i);
                grown.clear();
                for (j, (range, &x)) in own.iter_mut().zip(self.row(i)).enumerate() {
                    let grew = match self.set_of[j] {
                        // A new value changes every free row's units of the attribute.
                        Some(s) => own_counts[self.slot(s, i)] == 0,
                        None => x < range.0 || x > range.1,
                    };
                    if grew {
                        grown.push(j);
                    }
                    *range = (range.0.min(x), range.1.max(x));
                }
                self.count_row(i, 1, &mut own_counts, &mut own_distinct, &mut []);
            }
            let set_units: u64 = (0..sets).map(|s| self.set_units(s, own_distinct[s])).sum();
            grown_cost += rows.len() as u128 * u128::from(self.units(&own) + set_units);
            if grown_cost * 100 > limit {
                return None;
            }
            groups.push(rows);
            ranges.extend_from_slice(&own);
            counts.extend_from_slice(&own_counts);
            distinct.extend_from_slice(&own_distinct);
            if left > 0 {
                seed = self.farthest(seed, |i| free[i]);
            }
        }
        for i in (0..n).filter(|&i| free[i]) {
            let mut best: Option<(i128, usize)> = None;
            for (g, rows) in groups.iter().enumerate() {
                let r = &ranges[g * m..(g + 1) * m];
                let size = rows.len() as i128;
                let (mut with, mut without) = (self.units_with(r, i), self.units(r));
                for s in 0..sets {
                    let d = distinct[g * sets + s];
                    let new = counts[g * self.stride + self.slot(s, i)] == 0;
                    with += self.set_units(s, d + usize::from(new));
                    without += self.set_units(s, d);
                }
                let delta = (size + 1) * i128::from(with) - size * i128::from(without);
                if best.is_none_or(|(d, _)| delta < d) {
                    best = Some((delta, g));
                }
            }
            // `n ≥ k` rows make at least one group.
            let Some((_, g)) = best else { break };
            groups[g].push(i);
            for (range, &x) in ranges[g * m..(g + 1) * m].iter_mut().zip(self.row(i)) {
                *range = (range.0.min(x), range.1.max(x));
            }
            self.count_row(
                i,
                1,
                &mut counts[g * self.stride..(g + 1) * self.stride],
                &mut distinct[g * sets..(g + 1) * sets],
                &mut [],
            );
        }
        Some(groups)
    }

    /// Moves (from groups of more than `k` rows) and swaps of single rows between the
    /// groups while they lower the cost; rows in index order, each taking its best change.
    fn local_search(&self, groups: &mut [Vec<usize>]) {
        let m = self.m;
        let g_count = groups.len();
        let (sets, stride) = (self.sets.len(), self.stride);
        let mut group_of = vec![0usize; self.len()];
        let mut bounds = vec![Bound::EMPTY; g_count * m];
        let mut unit = vec![0u64; g_count];
        // `inner[g · m..]`: the range every group left after removing one row holds.
        let mut inner = vec![EMPTY; g_count * m];
        let mut rest = vec![EMPTY; m];
        // Set attributes: per group, value counts, distinct values and values counted once.
        let mut tally = Tallies {
            counts: vec![0; g_count * stride],
            distinct: vec![0; g_count * sets],
            singles: vec![0; g_count * sets],
        };
        let mut rest_distinct = vec![0usize; sets];
        let mut holds = vec![false; sets];
        let refresh = |g: usize,
                       groups: &[Vec<usize>],
                       bounds: &mut [Bound],
                       inner: &mut [Range],
                       unit: &mut [u64],
                       tally: &mut Tallies| {
            let b = &mut bounds[g * m..(g + 1) * m];
            b.fill(Bound::EMPTY);
            for &i in &groups[g] {
                for (bound, &x) in b.iter_mut().zip(self.row(i)) {
                    bound.add(x);
                }
            }
            unit[g] = b
                .iter()
                .enumerate()
                .map(|(j, bound)| self.span(j, bound.lo, bound.hi))
                .sum();
            for (slot, bound) in inner[g * m..(g + 1) * m].iter_mut().zip(b.iter()) {
                *slot = bound.inner();
            }
            if sets > 0 {
                let counts = &mut tally.counts[g * stride..(g + 1) * stride];
                let distinct = &mut tally.distinct[g * sets..(g + 1) * sets];
                let singles = &mut tally.singles[g * sets..(g + 1) * sets];
                counts.fill(0);
                distinct.fill(0);
                singles.fill(0);
                for &i in &groups[g] {
                    self.count_row(i, 1, counts, distinct, singles);
                }
                unit[g] += (0..sets)
                    .map(|s| self.set_units(s, distinct[s]))
                    .sum::<u64>();
            }
        };
        for g in 0..g_count {
            for &i in &groups[g] {
                group_of[i] = g;
            }
            refresh(g, groups, &mut bounds, &mut inner, &mut unit, &mut tally);
        }
        for _ in 0..SWEEPS {
            let mut changed = false;
            for i in 0..self.len() {
                // A row's best change reads every row of the pool at worst.
                if i % 64 == 0 && cancel::requested() {
                    return;
                }
                let g = group_of[i];
                let x = self.row(i);
                let size_g = groups[g].len() as i128;
                let cost_g = size_g * i128::from(unit[g]);
                for ((slot, bound), &xj) in rest.iter_mut().zip(&bounds[g * m..(g + 1) * m]).zip(x)
                {
                    *slot = bound.without(xj);
                }
                let mut u_rest = self.units(&rest);
                for (s, kept) in rest_distinct.iter_mut().enumerate() {
                    let alone = tally.count(g, stride, self.slot(s, i)) == 1;
                    *kept = tally.distinct[g * sets + s] - usize::from(alone);
                    u_rest += self.set_units(s, *kept);
                }
                let u_rest = i128::from(u_rest);
                let mut best: (i128, usize, Option<usize>) = (0, g, None);
                // What g's side of a swap costs at least (it keeps the rest).
                let g_floor = size_g * u_rest - cost_g;
                for h in (0..g_count).filter(|&h| h != g) {
                    let size_h = groups[h].len() as i128;
                    let cost_h = size_h * i128::from(unit[h]);
                    let bh = &bounds[h * m..(h + 1) * m];
                    // Set attributes: h's units with row i, and a lower bound of them
                    // after a swap (h gives away at most one value it holds once).
                    let (mut set_joined, mut set_floor) = (0u64, 0u64);
                    for (s, held) in holds.iter_mut().enumerate() {
                        *held = tally.count(h, stride, self.slot(s, i)) > 0;
                        let d = tally.distinct[h * sets + s];
                        set_joined += self.set_units(s, d + usize::from(!*held));
                        let lost = usize::from(tally.singles[h * sets + s] > 0);
                        set_floor += self.set_units(s, d - lost + usize::from(!*held));
                    }
                    if groups[g].len() > self.k {
                        let joined: u64 = bh
                            .iter()
                            .zip(x)
                            .enumerate()
                            .map(|(j, (bound, &xj))| {
                                self.span(j, bound.lo.min(xj), bound.hi.max(xj))
                            })
                            .sum::<u64>()
                            + set_joined;
                        let delta = (size_h + 1) * i128::from(joined) + (size_g - 1) * u_rest
                            - cost_g
                            - cost_h;
                        if delta < best.0 {
                            best = (delta, h, None);
                        }
                    }
                    // h's side of any swap: it keeps the range left after removing any
                    // one row, and receives row i.
                    let floor = self.units_with(&inner[h * m..(h + 1) * m], i) + set_floor;
                    let h_floor = size_h * i128::from(floor) - cost_h;
                    if g_floor + h_floor >= best.0 {
                        continue;
                    }
                    for (q, &s) in groups[h].iter().enumerate() {
                        let y = self.row(s);
                        if y == x {
                            continue;
                        }
                        // Set attributes of both sides: g without row i plus row s, h
                        // without row s plus row i.
                        let (mut set_gs, mut set_hs) = (0u64, 0u64);
                        for (t, &(j, _)) in self.sets.iter().enumerate() {
                            let (dg, dh) =
                                (tally.distinct[g * sets + t], tally.distinct[h * sets + t]);
                            if y[j] == x[j] {
                                set_gs += self.set_units(t, dg);
                                set_hs += self.set_units(t, dh);
                            } else {
                                let at = self.slot(t, s);
                                let gained = usize::from(tally.count(g, stride, at) == 0);
                                set_gs += self.set_units(t, rest_distinct[t] + gained);
                                let lost = usize::from(tally.count(h, stride, at) == 1);
                                set_hs += self.set_units(t, dh - lost + usize::from(!holds[t]));
                            }
                        }
                        let g_units = self.units_with(&rest, s) + set_gs;
                        let g_side = size_g * i128::from(g_units) - cost_g;
                        if g_side + h_floor >= best.0 {
                            continue;
                        }
                        let h_units: u64 = bh
                            .iter()
                            .zip(y)
                            .zip(x)
                            .enumerate()
                            .map(|(j, ((bound, &yj), &xj))| {
                                let (lo, hi) = bound.without(yj);
                                self.span(j, lo.min(xj), hi.max(xj))
                            })
                            .sum::<u64>()
                            + set_hs;
                        let delta = g_side + size_h * i128::from(h_units) - cost_h;
                        if delta < best.0 {
                            best = (delta, h, Some(q));
                        }
                    }
                }
                let (delta, h, swap) = best;
                if delta >= 0 {
                    continue;
                }
                if let Some(p) = groups[g].iter().position(|&r| r == i) {
                    groups[g].swap_remove(p);
                }
                if let Some(q) = swap {
                    let s = groups[h].swap_remove(q);
                    groups[g].push(s);
                    group_of[s] = g;
                }
                groups[h].push(i);
                group_of[i] = h;
                refresh(g, groups, &mut bounds, &mut inner, &mut unit, &mut tally);
                refresh(h, groups, &mut bounds, &mut inner, &mut unit, &mut tally);
                changed = true;
            }
            if !changed {
                break;
            }
        }
    }
}

/// Value counts of the groups of [`Pool::local_search`] in the set attributes.
struct Tallies {
    /// `counts[g · stride + slot]` (see [`Pool::slot`]).
    counts: Vec<u32>,
    /// `distinct[g · S + s]` and `singles[g · S + s]`: distinct values of set attribute
    /// `s` in group `g`, and values counted once.
    distinct: Vec<usize>,
    singles: Vec<usize>,
}

impl Tallies {
    fn count(&self, g: usize, stride: usize, slot: usize) -> u32 {
        self.counts[g * stride + slot]
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// One attribute, ranks 0..8 in a binary hierarchy: the span of `lo..=hi` is the
    /// leaves under the meet, minus one.
    fn span(_: usize, lo: u32, hi: u32) -> u64 {
        let mut size = 1u32;
        while lo / size != hi / size {
            size *= 2;
        }
        u64::from(size - 1)
    }

    #[test]
    fn k_member_finds_the_tight_pairs() {
        let ranks = [0, 7, 1, 6, 2, 5, 3, 4];
        let pool = Pool::new(1, 2, &ranks, span, &[]);
        let bad = vec![vec![0, 1], vec![2, 3], vec![4, 5], vec![6, 7]];
        let (groups, cost) = pool.solve(&bad).unwrap();
        // {0,1}, {2,3}, {4,5}, {6,7} in rank terms: every pair costs 1 unit per row.
        assert_eq!(cost, 8);
        assert_eq!(pool.cost(&groups), 8);
        assert!(groups.iter().all(|g| g.len() >= 2));
        // Already optimal: nothing to report.
        assert!(pool.solve(&groups).is_none());
    }

    #[test]
    fn solve_keeps_every_row_and_groups_of_k() {
        let ranks: Vec<u32> = (0..23).map(|i| (i * 5 % 8) as u32).collect();
        for k in 1..=7 {
            let pool = Pool::new(1, k, &ranks, span, &[]);
            let one = vec![(0..23).collect::<Vec<usize>>()];
            if let Some((groups, cost)) = pool.solve(&one) {
                assert!(cost < pool.cost(&one));
                assert!(groups.iter().all(|g| g.len() >= k));
                let mut all: Vec<usize> = groups.concat();
                all.sort_unstable();
                assert_eq!(all, (0..23).collect::<Vec<_>>());
            }
        }
    }

    /// Span of `lo..=hi` in a binary hierarchy over 16 ranks, per attribute scaled by
    /// `j + 1` so the attributes differ.
    fn span2(j: usize, lo: u32, hi: u32) -> u64 {
        span(j, lo, hi) * (j as u64 + 1)
    }

    proptest::proptest! {
        #[test]
        fn solve_returns_a_cheaper_partition_of_groups_of_k(
            rows in proptest::collection::vec(proptest::collection::vec(0u32..16, 2), 1..=40),
            k in 1usize..=6,
            cut in 1usize..=4,
        ) {
            let n = rows.len();
            proptest::prop_assume!(n >= k);
            let ranks: Vec<u32> = rows.concat();
            let pool = Pool::new(2, k, &ranks, span2, &[]);
            // A valid starting grouping: consecutive chunks of at least k rows.
            let parts = (n / k).clamp(1, cut);
            let mut groups: Vec<Vec<usize>> = vec![Vec::new(); parts];
            for i in 0..n {
                groups[(i * parts / n).min(parts - 1)].push(i);
            }
            proptest::prop_assume!(groups.iter().all(|g| g.len() >= k));
            if let Some((found, cost)) = pool.solve(&groups) {
                proptest::prop_assert!(cost < pool.cost(&groups));
                proptest::prop_assert_eq!(cost, pool.cost(&found));
                proptest::prop_assert!(found.iter().all(|g| g.len() >= k));
                let mut all: Vec<usize> = found.concat();
                all.sort_unstable();
                proptest::prop_assert_eq!(all, (0..n).collect::<Vec<_>>());
                // Deterministic.
                proptest::prop_assert_eq!(pool.solve(&groups), Some((found, cost)));
            }
        }

        #[test]
        fn set_attributes_are_priced_by_distinct_values(
            rows in proptest::collection::vec(proptest::collection::vec(0u32..6, 3), 1..=40),
            k in 1usize..=5,
            cut in 1usize..=5,
        ) {
            // Attribute 0 is an interval (span2), attributes 1 and 2 are set attributes of
            // 3 and 5 units per extra value.
            let n = rows.len();
            proptest::prop_assume!(n >= k);
            let ranks: Vec<u32> = rows.concat();
            let pool = Pool::new(3, k, &ranks, span2, &[(1, 3), (2, 5)]);
            let naive = |groups: &[Vec<usize>]| -> u128 {
                groups
                    .iter()
                    .filter(|g| !g.is_empty())
                    .map(|g| {
                        let lo = g.iter().map(|&i| rows[i][0]).min().unwrap_or(0);
                        let hi = g.iter().map(|&i| rows[i][0]).max().unwrap_or(0);
                        let distinct = |j: usize| {
                            let mut v: Vec<u32> = g.iter().map(|&i| rows[i][j]).collect();
                            v.sort_unstable();
                            v.dedup();
                            v.len() as u64 - 1
                        };
                        let units = span2(0, lo, hi) + 3 * distinct(1) + 5 * distinct(2);
                        g.len() as u128 * u128::from(units)
                    })
                    .sum()
            };
            let parts = (n / k).clamp(1, cut);
            let mut groups: Vec<Vec<usize>> = vec![Vec::new(); parts];
            for i in 0..n {
                groups[(i * parts / n).min(parts - 1)].push(i);
            }
            proptest::prop_assume!(groups.iter().all(|g| g.len() >= k));
            proptest::prop_assert_eq!(pool.cost(&groups), naive(&groups));
            // The local search never raises the cost and keeps groups of k.
            let mut searched = groups.clone();
            pool.local_search(&mut searched);
            proptest::prop_assert!(pool.cost(&searched) <= pool.cost(&groups));
            proptest::prop_assert_eq!(pool.cost(&searched), naive(&searched));
            proptest::prop_assert!(searched.iter().all(|g| g.len() >= k));
            // k-member clustering and the cuts make partitions into groups of k.
            // k-member clustering stops only past its limit: within 100 times its cost it
            // runs to the end.
            let full = pool.k_member(0, u128::MAX).unwrap();
            let limit = pool.cost(&full) * 100;
            proptest::prop_assert_eq!(pool.k_member(0, limit), Some(full.clone()));
            for candidate in [full, pool.cut_all()] {
                proptest::prop_assert!(candidate.iter().all(|g| g.len() >= k));
                let mut all: Vec<usize> = candidate.concat();
                all.sort_unstable();
                proptest::prop_assert_eq!(all, (0..n).collect::<Vec<_>>());
                proptest::prop_assert_eq!(pool.cost(&candidate), naive(&candidate));
            }
            if let Some((found, cost)) = pool.solve(&groups) {
                proptest::prop_assert!(cost < pool.cost(&groups));
                proptest::prop_assert_eq!(cost, naive(&found));
            }
        }
    }

    #[test]
    fn k_member_groups_equal_categories() {
        // One set attribute: values 0, 1, 0, 1, 2, 2 at k = 2 group equal values together.
        let ranks = [0, 1, 0, 1, 2, 2];
        let pool = Pool::new(1, 2, &ranks, |_, _, _| 0, &[(0, 1)]);
        let bad = vec![vec![0, 1], vec![2, 3], vec![4, 5]];
        assert_eq!(pool.cost(&bad), 4);
        let (groups, cost) = pool.solve(&bad).unwrap();
        assert_eq!(cost, 0);
        assert_eq!(groups, vec![vec![0, 2], vec![1, 3], vec![4, 5]]);
    }
}
