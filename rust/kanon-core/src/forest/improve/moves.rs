//! The passes over a grouping: split, local search of moves and swaps, eject, and the
//! regroup pass of pools solved from scratch.

use rayon::prelude::*;

use crate::cancel;
use crate::forest::improve::effort::{
    NARROW, NEAR, REGROUP_BATCH, REGROUP_GROUPS, REGROUP_ROWS_PER_K, REGROUP_WIDTH, SEARCH_PASSES,
};
use crate::forest::improve::regroup::Pool;
use crate::forest::improve::scratch::{Change, Scratch};
use crate::forest::improve::space::{Space, NOT_SET};
use crate::forest::improve::state::{ceil_units, PoolJob, State};
use crate::forest::improve::tally::Tally;

impl State {
    /// Split every group of at least `2k` rows by [`Space::split`] (in parallel, applied
    /// in group order); returns the number of groups added.
    pub(crate) fn split_pass(&mut self, space: &Space<'_>) -> usize {
        let big: Vec<u32> = (0..self.members.len() as u32)
            .filter(|&g| self.members[g as usize].len() >= 2 * space.k)
            .collect();
        let members = &self.members;
        let parts: Vec<Vec<Vec<u32>>> = big
            .par_iter()
            .map(|&g| {
                if cancel::requested() {
                    return vec![members[g as usize].clone()]; // unchanged
                }
                space.split(members[g as usize].clone())
            })
            .collect();
        let mut added = 0;
        for (&g, parts) in big.iter().zip(parts) {
            if parts.len() > 1 {
                added += parts.len() - 1;
                self.replace(space, &[g], parts);
            }
        }
        added
    }

    /// The move of row `r` to one of `scratch.candidates`, or its swap with a row of one,
    /// that lowers the cost most (the first found on ties), if any lowers it.
    fn best_change(&self, space: &Space<'_>, r: u32, scratch: &mut Scratch) -> Option<Change> {
        let m = self.m;
        let t = space.table.tuple_of_row[r as usize];
        let x = space.ranks(t);
        let g = self.of_row[r as usize];
        let gu = g as usize;
        let (size_g, cost_g) = self.size_cost(g);
        let u_g = i128::from(self.unit[gu]);
        let bg = &self.bounds[gu * m..(gu + 1) * m];
        let mut u_rest = 0u64;
        for (j, (rest, b)) in scratch.rest.iter_mut().zip(bg).enumerate() {
            *rest = b.without(x[j]);
            u_rest += space.span(j, rest.0, rest.1);
        }
        // Set attributes: the distinct values g keeps without the row.
        let tg = self.tallies(g);
        scratch.rest_distinct.clear();
        for (s, (&j, tally)) in space.sets.iter().zip(tg).enumerate() {
            let kept = tally.distinct() - usize::from(tally.count(x[j]) == 1);
            scratch.rest_distinct.push(kept);
            u_rest += space.set_units(s, kept);
        }
        // The values g holds, to price a swapped-in row in O(1) per set attribute.
        if scratch.held.len() != space.sets.len() {
            scratch.held = space
                .sets
                .iter()
                .map(|&j| vec![0; space.spans[j].leaves])
                .collect();
        }
        scratch.held_mark += 1;
        let mark = scratch.held_mark;
        for (marks, tally) in scratch.held.iter_mut().zip(tg) {
            for &(v, _) in &tally.counts {
                marks[v as usize] = mark;
            }
        }
        let held = &scratch.held;
        let rest = &scratch.rest;
        let rest_distinct = &scratch.rest_distinct;
        let holds = &mut scratch.holds;
        // The change of g's cost when it swaps the row for another (a lower bound: ≤ 0),
        // and what g saves by giving it away.
        let leave_g = size_g * (i128::from(u_rest) - u_g);
        let saving_g = cost_g - (size_g - 1) * i128::from(u_rest);
        let can_move = self.members[gu].len() > space.k;
        let mut best = 0i128;
        let mut choice = None;
        for &h in &scratch.candidates {
            let hu = h as usize;
            let boxes = &self.boxes[hu * m..(hu + 1) * m];
            let (size_h, cost_h) = self.size_cost(h);
            let u_h = i128::from(self.unit[hu]);
            // Set attributes: whether h holds the row's value; h's distinct values with
            // the row, and a lower bound of them after a swap (h gives away at most one
            // value it holds once, and receives the row's).
            let th = self.tallies(h);
            holds.clear();
            let (mut set_joined, mut set_floor) = (0u64, 0u64);
            for (s, (&j, tally)) in space.sets.iter().zip(th).enumerate() {
                let held = tally.count(x[j]) > 0;
                holds.push(held);
                let d = tally.distinct();
                set_joined += space.set_units(s, d + usize::from(!held));
                let lost = usize::from(tally.singles > 0);
                set_floor += space.set_units(s, d - lost + usize::from(!held));
            }
            if can_move {
                let u_joined: u64 = (0..m)
                    .map(|j| space.span(j, boxes[j][0].min(x[j]), boxes[j][1].max(x[j])))
                    .sum::<u64>()
                    + set_joined;
                let delta = (size_h + 1) * i128::from(u_joined) - cost_h - saving_g;
                if delta < best {
                    best = delta;
                    choice = Some(Change::Move(h));
                }
            }
            // A lower bound of h's side of any swap: whatever h gives away, it keeps its
            // inner range, and it receives the row.
            let floor: u64 = (0..m)
                .map(|j| {
                    let [_, _, lo, hi] = boxes[j];
                    if lo <= hi {
                        space.span(j, lo.min(x[j]), hi.max(x[j]))
                    } else {
                        0
                    }
                })
                .sum::<u64>()
                + set_floor;
            let floor_h = size_h * (i128::from(floor) - u_h);
            if leave_g + floor_h >= best {
                continue;
            }
            let bh = &self.bounds[hu * m..(hu + 1) * m];
            // g's side of a swap must leave room: size_g · (u_gs − u_g) + floor_h < best.
            let mut gs_cap = ceil_units(best - floor_h + cost_g, size_g);
            let mut previous = u32::MAX;
            for &s in &self.members[hu] {
                let ts = space.table.tuple_of_row[s as usize];
                if ts == t || ts == previous {
                    continue;
                }
                previous = ts;
                let y = space.ranks(ts);
                // Each side is summed attribute by attribute in importance order and
                // stops once it leaves no room (a partial sum is a lower bound): g's side
                // is g without the row plus y, h's side h without y plus the row. A set
                // attribute changes nothing where the two rows agree.
                let mut u_gs = 0u64;
                for &j in &space.importance {
                    u_gs += match space.set_of[j] {
                        NOT_SET => space.span(j, rest[j].0.min(y[j]), rest[j].1.max(y[j])),
                        i if y[j] == x[j] => space.set_units(i, tg[i].distinct()),
                        i => {
                            let gained = usize::from(held[i][y[j] as usize] != mark);
                            space.set_units(i, rest_distinct[i] + gained)
                        }
                    };
                    if u_gs >= gs_cap {
                        break;
                    }
                }
                if u_gs >= gs_cap {
                    continue;
                }
                let side_g = size_g * (i128::from(u_gs) - u_g);
                let hs_cap = ceil_units(best - side_g + cost_h, size_h);
                let mut u_hs = 0u64;
                for &j in &space.importance {
                    u_hs += match space.set_of[j] {
                        NOT_SET => {
                            let (lo, hi) = bh[j].without(y[j]);
                            space.span(j, lo.min(x[j]), hi.max(x[j]))
                        }
                        i if y[j] == x[j] => space.set_units(i, th[i].distinct()),
                        i => {
                            let lost = usize::from(th[i].count(y[j]) == 1);
                            space.set_units(i, th[i].distinct() - lost + usize::from(!holds[i]))
                        }
                    };
                    if u_hs >= hs_cap {
                        break;
                    }
                }
                if u_hs < hs_cap {
                    best = side_g + size_h * (i128::from(u_hs) - u_h);
                    gs_cap = ceil_units(best - floor_h + cost_g, size_g);
                    choice = Some(Change::Swap(s));
                }
            }
        }
        choice
    }

    /// Moves and swaps of single rows, in row order, while they lower the cost (at most
    /// [`SEARCH_PASSES`] passes). A row is skipped while nothing around it changed since
    /// it last found nothing to do, and so is a row of a group costing nothing. Returns
    /// the number of changes.
    pub(crate) fn local_search(&mut self, space: &Space<'_>, scratch: &mut Scratch) -> usize {
        let rows = self.of_row.len();
        self.average = u64::try_from(self.total_units() / rows.max(1) as u128).unwrap_or(u64::MAX);
        let mut changes = 0;
        for _ in 0..SEARCH_PASSES {
            let before = changes;
            // (tuple, group, clock) of the last row that found nothing: another row of
            // the same tuple in the same group would find nothing either.
            let mut last = (u32::MAX, u32::MAX, 0u64);
            for r in 0..rows as u32 {
                if r % 1024 == 0 && cancel::requested() {
                    return changes;
                }
                let t = space.table.tuple_of_row[r as usize];
                if self.dirty[t as usize] <= self.settled[r as usize] {
                    continue;
                }
                let g = self.of_row[r as usize];
                if self.unit[g as usize] == 0 || (t, g, self.clock) == last {
                    self.settled[r as usize] = self.clock;
                    continue;
                }
                let width = if self.unit[g as usize] >= self.average {
                    NEAR
                } else {
                    NARROW
                };
                self.candidates(t, g, width, scratch);
                match self.best_change(space, r, scratch) {
                    None => {
                        self.settled[r as usize] = self.clock;
                        last = (t, g, self.clock);
                    }
                    Some(Change::Move(h)) => {
                        self.relocate(space, r, h);
                        self.touch(space, &[g, h]);
                        changes += 1;
                    }
                    Some(Change::Swap(s)) => {
                        let h = self.of_row[s as usize];
                        self.relocate(space, r, h);
                        self.relocate(space, s, g);
                        self.touch(space, &[g, h]);
                        changes += 1;
                    }
                }
            }
            if changes == before {
                break;
            }
        }
        changes
    }

    /// Place the rows `leaving` group `g`, one by one, each in the candidate group where
    /// it costs least (counting the rows placed before it; ties to the first candidate);
    /// the targets go to `scratch.targets`. Returns the cost of the placements, or `None`
    /// as soon as it reaches `limit` or a row has no candidate.
    fn place_rows(
        &self,
        space: &Space<'_>,
        g: u32,
        leaving: &[u32],
        limit: i128,
        scratch: &mut Scratch,
    ) -> Option<i128> {
        let m = self.m;
        let sets = self.sets;
        scratch.touched.clear();
        scratch.ranges.clear();
        scratch.targets.clear();
        scratch.tallies.clear();
        // Set units of one row of a group with `tallies` once it receives ranks `x`.
        let with_row = |tallies: &[Tally], x: &[u32]| -> u64 {
            space
                .sets
                .iter()
                .zip(tallies)
                .enumerate()
                .map(|(s, (&j, tally))| {
                    space.set_units(s, tally.distinct() + usize::from(tally.count(x[j]) == 0))
                })
                .sum()
        };
        let mut total = 0i128;
        for &r in leaving {
            let t = space.table.tuple_of_row[r as usize];
            let x = space.ranks(t);
            self.candidates(t, g, NEAR, scratch);
            let mut best: Option<(i128, u32)> = None;
            for &h in &scratch.candidates {
                let (size, unit, units) = match scratch.touched.iter().position(|e| e.0 == h) {
                    Some(i) => (
                        scratch.touched[i].1,
                        scratch.touched[i].2,
                        space.units_with(&scratch.ranges[i * m..(i + 1) * m], x)
                            + with_row(&scratch.tallies[i * sets..(i + 1) * sets], x),
                    ),
                    None => {
                        let boxes = &self.boxes[h as usize * m..(h as usize + 1) * m];
                        let units: u64 = (0..m)
                            .map(|j| space.span(j, boxes[j][0].min(x[j]), boxes[j][1].max(x[j])))
                            .sum();
                        let (size, _) = self.size_cost(h);
                        let units = units + with_row(self.tallies(h), x);
                        (size, i128::from(self.unit[h as usize]), units)
                    }
                };
                let cost = (size + 1) * i128::from(units) - size * unit;
                if best.is_none_or(|(c, _)| cost < c) {
                    best = Some((cost, h));
                }
            }
            let (cost, h) = best?;
            total += cost;
            if total >= limit {
                return None;
            }
            scratch.targets.push(h);
            let i = match scratch.touched.iter().position(|e| e.0 == h) {
                Some(i) => i,
                None => {
                    scratch.ranges.extend(self.ranges(h));
                    scratch.tallies.extend_from_slice(self.tallies(h));
                    let (size, _) = self.size_cost(h);
                    scratch
                        .touched
                        .push((h, size, i128::from(self.unit[h as usize])));
                    scratch.touched.len() - 1
                }
            };
            let ranges = &mut scratch.ranges[i * m..(i + 1) * m];
            for (range, &x) in ranges.iter_mut().zip(x) {
                *range = (range.0.min(x), range.1.max(x));
            }
            let mut units = space.units_in(ranges);
            let tallies = &mut scratch.tallies[i * sets..(i + 1) * sets];
            for (s, (&j, tally)) in space.sets.iter().zip(tallies.iter_mut()).enumerate() {
                tally.add(x[j]);
                units += space.set_units(s, tally.distinct());
            }
            scratch.touched[i].1 += 1;
            scratch.touched[i].2 = i128::from(units);
        }
        Some(total)
    }

    /// Keep only the rows of group `g` under one hierarchy node below its meet in one
    /// attribute (at least `k` of them), or none, and place the others
    /// ([`Self::place_rows`]); apply the best such change if it lowers the cost (ties to
    /// dissolving, then the first attribute, level and node). Returns whether it changed
    /// anything.
    fn eject(&mut self, space: &Space<'_>, g: u32, scratch: &mut Scratch) -> bool {
        let m = self.m;
        let k = space.k;
        let rows = self.members[g as usize].clone();
        let size = rows.len();
        if size == 0 {
            return false;
        }
        let (_, whole) = self.size_cost(g);
        // Best: (delta, attribute, start, end) of the kept slice in that attribute's
        // rank order; attribute m means dissolve.
        let mut best: Option<(i128, usize, usize, usize)> = self
            .place_rows(space, g, &rows, whole, scratch)
            .map(|placed| (placed - whole, m, 0, 0));
        let mut order = rows.clone();
        let mut seen: Vec<(usize, usize)> = Vec::new();
        let mut leaving = Vec::new();
        for j in 0..m {
            let b = self.bounds[g as usize * m + j];
            if b.lo >= b.hi || size <= k {
                continue;
            }
            let hierarchy = space.table.model.hierarchy(j);
            let leaf_at = &space.spans[j].leaf_at;
            // Under range costs a numeric attribute is ranked by key: where the hierarchy
            // does not follow the keys, the runs below are parts of nodes and `top` may be
            // below the group's meet. They are candidates only; every one is priced.
            let top =
                space
                    .table
                    .model
                    .meet_level(j, leaf_at[b.lo as usize], leaf_at[b.hi as usize]);
            order.sort_unstable_by_key(|&r| (space.row_ranks(r)[j], r));
            seen.clear();
            for level in 0..top {
                let ancestor =
                    |r: u32| hierarchy.generalize(level, leaf_at[space.row_ranks(r)[j] as usize]);
                // The rows under one node at `level` are a slice of the rank order.
                let mut start = 0;
                while start < size {
                    let node = ancestor(order[start]);
                    let mut end = start + 1;
                    while end < size && ancestor(order[end]) == node {
                        end += 1;
                    }
                    if end - start >= k && end - start < size && !seen.contains(&(start, end)) {
                        seen.push((start, end));
                        let kept = &order[start..end];
                        let change = kept.len() as i128 * i128::from(space.units_of(kept)) - whole;
                        let limit = best.map_or(0, |b| b.0) - change;
                        if limit > 0 {
                            leaving.clear();
                            leaving.extend_from_slice(&order[..start]);
                            leaving.extend_from_slice(&order[end..]);
                            if let Some(placed) =
                                self.place_rows(space, g, &leaving, limit, scratch)
                            {
                                best = Some((change + placed, j, start, end));
                            }
                        }
                    }
                    start = end;
                }
            }
        }
        let Some((delta, j, start, end)) = best else {
            return false;
        };
        if delta >= 0 {
            return false;
        }
        leaving.clear();
        if j == m {
            leaving.extend_from_slice(&rows);
        } else {
            order.sort_unstable_by_key(|&r| (space.row_ranks(r)[j], r));
            leaving.extend_from_slice(&order[..start]);
            leaving.extend_from_slice(&order[end..]);
        }
        // Recompute the chosen placement (the scratch holds the last one tried).
        if self
            .place_rows(space, g, &leaving, i128::MAX, scratch)
            .is_none()
        {
            return false;
        }
        let mut changed = vec![g];
        for (&r, &h) in leaving.iter().zip(&scratch.targets) {
            self.relocate(space, r, h);
            changed.push(h);
        }
        changed.sort_unstable();
        changed.dedup();
        self.touch(space, &changed);
        true
    }

    /// [`Self::eject`] on every group, in id order, that changed or whose neighbourhood
    /// changed since it last found nothing to do; returns the number of changes.
    pub(crate) fn eject_pass(&mut self, space: &Space<'_>, scratch: &mut Scratch) -> usize {
        let mut changes = 0;
        for g in 0..self.members.len() as u32 {
            if g % 256 == 0 && cancel::requested() {
                break;
            }
            if !self.stale(space, g, self.ejected[g as usize]) {
                continue;
            }
            if self.eject(space, g, scratch) {
                changes += 1;
            } else {
                self.ejected[g as usize] = self.clock;
            }
        }
        changes
    }

    /// The pool of group `g`: `g` and its [`REGROUP_GROUPS`] − 1 neighbouring groups of the
    /// cheapest union meet (ties by id) among those that keep the pool within
    /// [`REGROUP_ROWS_PER_K`] · k rows, or `None` if `g` has no rows, costs nothing, holds
    /// more rows than that or has no neighbour that fits.
    fn pool_of(&self, space: &Space<'_>, g: u32, scratch: &mut Scratch) -> Option<PoolJob> {
        if self.members[g as usize].is_empty() || self.unit[g as usize] == 0 {
            return None;
        }
        self.neighbourhood(space, g, REGROUP_WIDTH, scratch);
        let own: Vec<(u32, u32)> = self.ranges(g).collect();
        let mut scored: Vec<(u64, u32)> = scratch
            .hood
            .iter()
            .map(|&h| {
                let ranged: u64 = self
                    .ranges(h)
                    .zip(&own)
                    .enumerate()
                    .map(|(j, ((lo, hi), &(a, b)))| space.span(j, lo.min(a), hi.max(b)))
                    .sum();
                let counted: u64 = self
                    .tallies(h)
                    .iter()
                    .zip(self.tallies(g))
                    .enumerate()
                    .map(|(s, (a, b))| space.set_units(s, a.union_distinct(b)))
                    .sum();
                (ranged + counted, h)
            })
            .collect();
        scored.sort_unstable();
        // A pool is solved in time quadratic in its rows (k-member clustering, the pool's
        // local search): bounded in rows, the pass costs O(rows · k) however large the
        // groups grow where no cut makes them cheaper (a suppressed attribute of many
        // values).
        let cap = space.k.saturating_mul(REGROUP_ROWS_PER_K);
        let mut rows = self.members[g as usize].len();
        if rows > cap {
            return None;
        }
        scored.retain(|&(_, h)| {
            let size = self.members[h as usize].len();
            let fits = rows + size <= cap;
            if fits {
                rows += size;
            }
            fits
        });
        scored.truncate(REGROUP_GROUPS - 1);
        if scored.is_empty() {
            return None;
        }
        let old: Vec<u32> = std::iter::once(g)
            .chain(scored.iter().map(|&(_, h)| h))
            .collect();
        let rows: Vec<u32> = old
            .iter()
            .flat_map(|&h| self.members[h as usize].iter().copied())
            .collect();
        let mut start = 0;
        let groups = old
            .iter()
            .map(|&h| {
                let size = self.members[h as usize].len();
                start += size;
                (start - size..start).collect()
            })
            .collect();
        Some(PoolJob { old, rows, groups })
    }

    /// Re-partition the pools ([`Self::pool_of`], [`Pool::solve`]) of every group, in id
    /// order, that changed or whose neighbourhood changed since it last found nothing to
    /// do. Pools are solved in parallel in batches of [`REGROUP_BATCH`] and applied in
    /// order; a pool holding a group that an earlier pool of its batch changed is left
    /// for the next pass. Returns the number of changes.
    pub(crate) fn regroup_pass(&mut self, space: &Space<'_>, scratch: &mut Scratch) -> usize {
        let mut changes = 0;
        let stale: Vec<u32> = (0..self.members.len() as u32)
            .filter(|&g| self.stale(space, g, self.regrouped[g as usize]))
            .collect();
        let sets: Vec<(usize, u64)> = space
            .sets
            .iter()
            .copied()
            .zip(space.set_unit.iter().copied())
            .collect();
        for batch in stale.chunks(REGROUP_BATCH) {
            if cancel::requested() {
                break;
            }
            let jobs: Vec<(u32, Option<PoolJob>)> = batch
                .iter()
                .map(|&g| (g, self.pool_of(space, g, scratch)))
                .collect();
            let solved: Vec<Option<Vec<Vec<usize>>>> = jobs
                .par_iter()
                .map(|(_, job)| {
                    if cancel::requested() {
                        return None;
                    }
                    let job = job.as_ref()?;
                    let ranks: Vec<u32> = job
                        .rows
                        .iter()
                        .flat_map(|&r| space.row_ranks(r).iter().copied())
                        .collect();
                    let pool = Pool::new(
                        space.table.m,
                        space.k,
                        &ranks,
                        |j, lo, hi| space.span(j, lo, hi),
                        &sets,
                    );
                    pool.solve(&job.groups).map(|(parts, _)| parts)
                })
                .collect();
            scratch.new_list(self.members.len());
            for ((g, job), parts) in jobs.into_iter().zip(solved) {
                let Some(job) = job else {
                    self.regrouped[g as usize] = self.clock;
                    continue;
                };
                if job.old.iter().any(|&h| {
                    (h as usize) < scratch.marks.len() && scratch.marks[h as usize] == scratch.mark
                }) {
                    continue;
                }
                let Some(parts) = parts else {
                    self.regrouped[g as usize] = self.clock;
                    continue;
                };
                let parts: Vec<Vec<u32>> = parts
                    .into_iter()
                    .map(|part| part.into_iter().map(|i| job.rows[i]).collect())
                    .collect();
                let before = self.members.len();
                self.replace(space, &job.old, parts);
                if scratch.marks.len() < self.members.len() {
                    scratch.marks.resize(self.members.len(), 0);
                }
                for &h in &job.old {
                    scratch.marks[h as usize] = scratch.mark;
                }
                for h in before..self.members.len() {
                    scratch.marks[h] = scratch.mark;
                }
                changes += 1;
            }
        }
        changes
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::forest::cost::model::{CostModel, LevelCost};
    use crate::forest::improve::bound::Bound;
    use crate::forest::improve::effort::WINDOW;
    use crate::forest::improve::extents::release_cost;
    use crate::forest::table::Table;
    use crate::hierarchy::Hierarchy;

    /// Ages 0..8 as intervals of 2, then 4, then `*`; codes are the ages 0, 7, 1, 6, 2,
    /// 5, 3, 4 (not in depth-first order).
    fn shuffled_ages() -> Hierarchy {
        let age_of_code = [0u32, 7, 1, 6, 2, 5, 3, 4];
        let leaves: Vec<u32> = (0..8).collect();
        let pairs: Vec<u32> = age_of_code.iter().map(|a| a / 2).collect();
        let quads: Vec<u32> = age_of_code.iter().map(|a| a / 4).collect();
        Hierarchy::try_from_levels(&[&leaves, &pairs, &quads, &[0; 8]]).unwrap()
    }

    fn code(age: u32) -> u32 {
        [0u32, 7, 1, 6, 2, 5, 3, 4]
            .iter()
            .position(|&x| x == age)
            .unwrap() as u32
    }

    #[test]
    fn depth_first_ranks_keep_nodes_contiguous() {
        let h = shuffled_ages();
        let ranks = h.dfs_ranks();
        let mut sorted = ranks.clone();
        sorted.sort_unstable();
        assert_eq!(sorted, (0..8).collect::<Vec<u32>>());
        for level in 0..=h.height() {
            for node in 0..h.width(level) {
                let under: Vec<u32> = (0..8)
                    .filter(|&leaf| h.generalize(level, leaf) == node)
                    .map(|leaf| ranks[leaf as usize])
                    .collect();
                let (lo, hi) = (under.iter().min().unwrap(), under.iter().max().unwrap());
                assert_eq!(
                    (hi - lo + 1) as usize,
                    under.len(),
                    "level {level} node {node}"
                );
            }
        }
        // Not the code order: codes 0 and 1 (ages 0 and 7) are in different halves.
        assert!(ranks[1] > ranks[2]);
    }

    #[test]
    fn bound_without_and_inner() {
        let mut b = Bound::EMPTY;
        for x in [5, 9, 3, 5] {
            b.add(x);
        }
        assert_eq!((b.lo, b.hi), (3, 9));
        assert_eq!(b.without(3), (5, 9));
        assert_eq!(b.without(9), (3, 5));
        assert_eq!(b.without(5), (3, 9));
        assert_eq!(b.inner(), (5, 5));
        let mut one = Bound::EMPTY;
        one.add(4);
        let (lo, hi) = one.without(4);
        assert!(lo > hi);
        let (lo, hi) = one.inner();
        assert!(lo > hi);
        let mut two = Bound::EMPTY;
        two.add(2);
        two.add(2);
        assert_eq!(two.without(2), (2, 2));
        assert_eq!(two.inner(), (2, 2));
    }

    /// The best change of row `r` of one attribute of shuffled ages, one tuple per row.
    fn change_of(ages: &[u32], group_of_row: &[u32], k: usize, r: u32) -> Option<Change> {
        let model = CostModel::try_new(vec![shuffled_ages()], vec![1.0], LevelCost::Ncp).unwrap();
        let tuples: Vec<u32> = ages.iter().map(|&a| code(a)).collect();
        let tuple_of_row: Vec<u32> = (0..ages.len() as u32).collect();
        let groups = *group_of_row.iter().max().unwrap() as usize + 1;
        let n = tuples.len();
        let space = Space::new(&Table::new(&model, &tuples, 1, &tuple_of_row), n, k);
        let near = space.near_tuples(n, NEAR, WINDOW);
        let state = State::new(&space, group_of_row, groups, &near);
        let mut scratch = Scratch::new(1);
        state.candidates(
            tuple_of_row[r as usize],
            group_of_row[r as usize],
            NEAR,
            &mut scratch,
        );
        state.best_change(&space, r, &mut scratch)
    }

    #[test]
    fn best_change_moves_a_row() {
        // {0, 1, 4} and {5, 5}: age 4 moves to the second group.
        let change = change_of(&[0, 1, 4, 5, 5], &[0, 0, 0, 1, 1], 2, 2);
        assert!(matches!(change, Some(Change::Move(1))), "{change:?}");
        // Not with k = 3: the first group would keep 2 rows.
        assert!(change_of(&[0, 1, 4, 5, 5], &[0, 0, 0, 1, 1], 3, 2).is_none());
    }

    #[test]
    fn best_change_swaps_rows() {
        // {0, 4} and {1, 5} at k = 2: age 4 swaps with age 1 (row 2), not with age 5.
        let change = change_of(&[0, 4, 1, 5], &[0, 0, 1, 1], 2, 1);
        assert!(matches!(change, Some(Change::Swap(2))), "{change:?}");
    }

    #[test]
    fn free_ids_are_reused_at_the_limit() {
        let model = CostModel::try_new(vec![shuffled_ages()], vec![1.0], LevelCost::Ncp).unwrap();
        let tuples: Vec<u32> = [0, 1, 6, 7].iter().map(|&a| code(a)).collect();
        let tuple_of_row: Vec<u32> = (0..4).collect();
        // Group 1 has no rows.
        let space = Space::new(&Table::new(&model, &tuples, 1, &tuple_of_row), 4, 2);
        let near = space.near_tuples(4, NEAR, WINDOW);
        let mut state = State::new(&space, &[0, 0, 0, 0], 2, &near);
        state.id_limit = 2;
        assert_eq!(state.split_pass(&space), 1);
        assert_eq!(state.members, vec![vec![0, 1], vec![2, 3]]);
        let mut out = [9u32; 4];
        assert_eq!(state.compact(&mut out, 2).unwrap(), 2);
        assert_eq!(out, [0, 0, 1, 1]);
    }

    #[test]
    fn range_categories_are_priced_by_distinct_values() {
        // A categorical range attribute of 3 values: {a, b} twice costs 2 · 2 · 1/2; the
        // search swaps to {a, a} and {b, b}, which cost nothing.
        let model =
            CostModel::try_new(vec![Hierarchy::flat(3)], vec![1.0], LevelCost::Range).unwrap();
        let tuples = [0, 1];
        let tuple_of_row = [0, 1, 0, 1];
        let group_of_row = [0, 0, 1, 1];
        let before = release_cost(&model, &tuples, 1, &tuple_of_row, &group_of_row, 2).unwrap();
        assert_eq!(before, 2.0);
        let space = Space::new(&Table::new(&model, &tuples, 1, &tuple_of_row), 2, 2);
        assert_eq!(space.sets, vec![0]);
        assert_eq!(space.pair_units(0, 1), model.pair_units(&[0], &[1]));
        let near = space.near_tuples(2, NEAR, WINDOW);
        let mut state = State::new(&space, &group_of_row, 2, &near);
        assert_eq!(state.total_units() as f64 / model.scale(), 2.0);
        let mut scratch = Scratch::new(1);
        assert!(state.local_search(&space, &mut scratch) > 0);
        assert_eq!(state.total_units(), 0);
        let mut out = [9u32; 4];
        assert_eq!(state.compact(&mut out, 2).unwrap(), 2);
        assert_eq!(out[0], out[2]);
        assert_eq!(out[1], out[3]);
    }

    #[test]
    fn regroup_pools_hold_at_most_rows_per_k_times_k_rows() {
        // One suppressed attribute of 200 values, every row its own value: a group of
        // several values costs the same per row however it is cut, so no split pass
        // makes the large groups smaller. k = 2: pools of at most 32 rows.
        let (k, n) = (2usize, 200usize);
        let cap = k * REGROUP_ROWS_PER_K;
        let model =
            CostModel::try_new(vec![Hierarchy::flat(n as u32)], vec![1.0], LevelCost::Ncp).unwrap();
        let tuples: Vec<u32> = (0..n as u32).collect();
        let tuple_of_row: Vec<u32> = (0..n as u32).collect();
        // Group 0: rows 0..40 (over the cap); group 1: rows 40..70 (under it); then pairs.
        let group_of_row: Vec<u32> = (0..n as u32)
            .map(|r| match r {
                0..40 => 0,
                40..70 => 1,
                _ => 2 + (r - 70) / 2,
            })
            .collect();
        let groups = 2 + (n - 70) / 2;
        let space = Space::new(&Table::new(&model, &tuples, 1, &tuple_of_row), n, k);
        let near = space.near_tuples(n, NEAR, WINDOW);
        let state = State::new(&space, &group_of_row, groups, &near);
        let mut scratch = Scratch::new(1);
        assert!(state.pool_of(&space, 0, &mut scratch).is_none());
        let mut pooled = 0;
        for g in 1..groups as u32 {
            let Some(job) = state.pool_of(&space, g, &mut scratch) else {
                continue;
            };
            pooled += 1;
            assert!(
                job.rows.len() <= cap,
                "pool of group {g}: {} rows",
                job.rows.len()
            );
            assert_eq!(job.old[0], g);
            assert!(!job.old.contains(&0), "pool of group {g} holds group 0");
            assert!(job.old.len() <= REGROUP_GROUPS);
        }
        assert!(pooled > 0);
    }

    #[test]
    fn local_search_reaches_the_pairs() {
        let model = CostModel::try_new(vec![shuffled_ages()], vec![1.0], LevelCost::Ncp).unwrap();
        let tuples: Vec<u32> = [0, 4, 1, 5, 6, 2, 7, 3].iter().map(|&a| code(a)).collect();
        let tuple_of_row: Vec<u32> = (0..8).collect();
        let group_of_row = [0, 0, 1, 1, 2, 2, 3, 3];
        let space = Space::new(&Table::new(&model, &tuples, 1, &tuple_of_row), 8, 2);
        let near = space.near_tuples(8, NEAR, WINDOW);
        let mut state = State::new(&space, &group_of_row, 4, &near);
        let mut scratch = Scratch::new(1);
        assert!(state.local_search(&space, &mut scratch) > 0);
        // Four pairs of 2/7 each.
        assert_eq!(state.total_units() as f64 / model.scale(), 8.0 / 7.0);
    }
}
