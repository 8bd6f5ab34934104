//! The grouping being improved, with per-group summaries kept up to date.

use crate::error::{KernelError, Result};
use crate::forest::improve::bound::Bound;
use crate::forest::improve::effort::REACH;
use crate::forest::improve::scratch::Scratch;
use crate::forest::improve::space::Space;
use crate::forest::improve::tally::{home_of, join, leave, Lists, Tally, SPREAD};

/// A pool of the regroup pass: its groups, their rows, and the grouping of the rows by
/// position (`groups[i]` lists positions in `rows` of group `old[i]`).
pub(crate) struct PoolJob {
    pub(crate) old: Vec<u32>,
    pub(crate) rows: Vec<u32>,
    pub(crate) groups: Vec<Vec<usize>>,
}

/// The grouping being improved, with per-group summaries.
pub(crate) struct State {
    pub(crate) m: usize,
    pub(crate) of_row: Vec<u32>,
    /// Rows of every group, ascending.
    pub(crate) members: Vec<Vec<u32>>,
    /// `bounds[g · m + j]`: rank range of group `g` in attribute `j`.
    pub(crate) bounds: Vec<Bound>,
    /// `boxes[g · m + j]`: lowest and highest rank of group `g` in attribute `j`, and the
    /// range every group left after removing one row still holds ([`Bound::inner`]).
    pub(crate) boxes: Vec<[u32; 4]>,
    /// Units of one row of each group.
    pub(crate) unit: Vec<u64>,
    /// `tally[g · S + s]`: the values of group `g` in set attribute `s` of the `S`
    /// attributes of [`Space::sets`].
    tally: Vec<Tally>,
    /// `S`, the number of set attributes.
    pub(crate) sets: usize,
    /// Groups holding rows of every tuple, with their row counts, by group id.
    tuple_groups: Vec<Vec<(u32, u32)>>,
    /// The one group holding all rows of a tuple, or [`SPREAD`].
    home: Vec<u32>,
    /// Near tuples of every tuple, nearest first.
    near: Lists,
    /// The tuples listing a tuple among their first [`REACH`] near tuples.
    near_of: Lists,
    /// Average units of a row when the current local search started.
    pub(crate) average: u64,
    /// Counter of changes.
    pub(crate) clock: u64,
    /// `clock` when a group holding a row of the tuple or of one of the tuples it reaches
    /// last changed.
    pub(crate) dirty: Vec<u64>,
    /// `clock` when the local search last found nothing to do for the row.
    pub(crate) settled: Vec<u64>,
    /// `clock` when [`Self::eject`] and the regroup pass last found nothing to do for
    /// each group.
    pub(crate) ejected: Vec<u64>,
    pub(crate) regrouped: Vec<u64>,
    /// Ids of groups without rows (reused last freed first once ids reach `id_limit`, the
    /// number of input ids plus rows), and whether each id is among them.
    free: Vec<u32>,
    freed: Vec<bool>,
    pub(crate) id_limit: usize,
}

impl State {
    pub(crate) fn new(
        space: &Space<'_>,
        group_of_row: &[u32],
        groups: usize,
        near: &[Vec<u32>],
    ) -> Self {
        let m = space.table.m;
        let tuples = near.len();
        let mut members = vec![Vec::new(); groups];
        let mut tuple_groups: Vec<Vec<(u32, u32)>> = vec![Vec::new(); tuples];
        for (r, &g) in group_of_row.iter().enumerate() {
            members[g as usize].push(r as u32);
            join(&mut tuple_groups[space.table.tuple_of_row[r] as usize], g);
        }
        let home = tuple_groups.iter().map(|list| home_of(list)).collect();
        let mut reverse: Vec<Vec<u32>> = vec![Vec::new(); tuples];
        for (t, list) in near.iter().enumerate() {
            for &u in list.iter().take(REACH) {
                reverse[u as usize].push(t as u32);
            }
        }
        let mut state = Self {
            m,
            of_row: group_of_row.to_vec(),
            members,
            bounds: vec![Bound::EMPTY; groups * m],
            boxes: vec![[0; 4]; groups * m],
            unit: vec![0; groups],
            tally: vec![Tally::default(); groups * space.sets.len()],
            sets: space.sets.len(),
            tuple_groups,
            home,
            near: Lists::new(near),
            near_of: Lists::new(&reverse),
            average: 0,
            clock: 1,
            dirty: vec![1; tuples],
            settled: vec![0; group_of_row.len()],
            ejected: vec![0; groups],
            regrouped: vec![0; groups],
            free: Vec::new(),
            freed: vec![false; groups],
            id_limit: groups + group_of_row.len(),
        };
        // Unused input ids, the smallest reused first.
        for g in (0..groups).rev() {
            if state.members[g].is_empty() {
                state.freed[g] = true;
                state.free.push(g as u32);
            }
        }
        for g in 0..groups {
            state.refresh(space, g);
        }
        state
    }

    /// Recompute the summary of group `g` from its members.
    fn refresh(&mut self, space: &Space<'_>, g: usize) {
        let m = self.m;
        let bounds = &mut self.bounds[g * m..(g + 1) * m];
        bounds.fill(Bound::EMPTY);
        for &r in &self.members[g] {
            for (b, &x) in bounds.iter_mut().zip(space.row_ranks(r)) {
                b.add(x);
            }
        }
        self.unit[g] = bounds
            .iter()
            .enumerate()
            .map(|(j, b)| space.span(j, b.lo, b.hi))
            .sum();
        for (slot, b) in self.boxes[g * m..(g + 1) * m].iter_mut().zip(bounds.iter()) {
            let (lo, hi) = b.inner();
            *slot = [b.lo, b.hi, lo, hi];
        }
        let mut values: Vec<u32> = Vec::new();
        for (s, &j) in space.sets.iter().enumerate() {
            values.clear();
            values.extend(self.members[g].iter().map(|&r| space.row_ranks(r)[j]));
            values.sort_unstable();
            let tally = &mut self.tally[g * self.sets + s];
            tally.rebuild(&values);
            self.unit[g] += space.set_units(s, tally.distinct());
        }
    }

    /// Tallies of group `g`.
    pub(crate) fn tallies(&self, g: u32) -> &[Tally] {
        &self.tally[g as usize * self.sets..(g as usize + 1) * self.sets]
    }

    /// Total cost in units.
    pub(crate) fn total_units(&self) -> u128 {
        self.members
            .iter()
            .zip(&self.unit)
            .map(|(rows, &u)| rows.len() as u128 * u128::from(u))
            .sum()
    }

    /// Size and cost in units of group `g`.
    pub(crate) fn size_cost(&self, g: u32) -> (i128, i128) {
        let size = self.members[g as usize].len() as i128;
        (size, size * i128::from(self.unit[g as usize]))
    }

    /// Rank ranges of group `g`.
    pub(crate) fn ranges(&self, g: u32) -> impl Iterator<Item = (u32, u32)> + '_ {
        let m = self.m;
        self.boxes[g as usize * m..(g as usize + 1) * m]
            .iter()
            .map(|b| (b[0], b[1]))
    }

    /// Record that tuple `t` has one more row in group `h` and one fewer in group `g`.
    fn shift(&mut self, t: usize, g: u32, h: u32) {
        let list = &mut self.tuple_groups[t];
        leave(list, g);
        join(list, h);
        self.home[t] = home_of(list);
    }

    /// Put row `r` into group `h` (members and tuple groups only; see [`Self::touch`]).
    pub(crate) fn relocate(&mut self, space: &Space<'_>, r: u32, h: u32) {
        let g = self.of_row[r as usize];
        let from = &mut self.members[g as usize];
        if let Ok(i) = from.binary_search(&r) {
            from.remove(i);
        }
        let to = &mut self.members[h as usize];
        if let Err(i) = to.binary_search(&r) {
            to.insert(i, r);
        }
        self.of_row[r as usize] = h;
        self.shift(space.table.tuple_of_row[r as usize] as usize, g, h);
    }

    /// Refresh the summaries of `groups` after their members changed, and mark the
    /// tuples whose candidate groups they are.
    pub(crate) fn touch(&mut self, space: &Space<'_>, groups: &[u32]) {
        self.clock += 1;
        for &g in groups {
            self.refresh(space, g as usize);
            if self.members[g as usize].is_empty() && !self.freed[g as usize] {
                self.freed[g as usize] = true;
                self.free.push(g);
            }
            for &r in &self.members[g as usize] {
                let t = space.table.tuple_of_row[r as usize] as usize;
                if self.dirty[t] != self.clock {
                    self.dirty[t] = self.clock;
                    for &u in self.near_of.get(t) {
                        self.dirty[u as usize] = self.clock;
                    }
                }
            }
        }
    }

    /// Whether a row of group `g` or one of its candidate groups may have changed since
    /// `clock` was `stamp`.
    pub(crate) fn stale(&self, space: &Space<'_>, g: u32, stamp: u64) -> bool {
        self.members[g as usize]
            .iter()
            .any(|&r| self.dirty[space.table.tuple_of_row[r as usize] as usize] > stamp)
    }

    /// An empty group to fill: a new id, or past the limit the last id freed.
    fn add_group(&mut self) -> u32 {
        // Fresh ids while there is room below the input ids plus rows; past that some id
        // is free (a group being cut has two rows, so fewer groups than rows have rows).
        if self.members.len() >= self.id_limit {
            if let Some(id) = self.free.pop() {
                self.freed[id as usize] = false;
                self.ejected[id as usize] = 0;
                self.regrouped[id as usize] = 0;
                return id;
            }
        }
        let id = self.members.len() as u32;
        self.freed.push(false);
        self.members.push(Vec::new());
        self.bounds
            .extend(std::iter::repeat_n(Bound::EMPTY, self.m));
        self.boxes.extend(std::iter::repeat_n([0; 4], self.m));
        self.unit.push(0);
        self.tally
            .extend(std::iter::repeat_n(Tally::default(), self.sets));
        self.ejected.push(0);
        self.regrouped.push(0);
        id
    }

    /// Replace groups `old` by `parts` (the same rows): the parts take the old ids first,
    /// then new ones; old ids left over become empty.
    pub(crate) fn replace(&mut self, space: &Space<'_>, old: &[u32], parts: Vec<Vec<u32>>) {
        let mut ids = old.to_vec();
        while ids.len() < parts.len() {
            let id = self.add_group();
            ids.push(id);
        }
        for &g in old {
            self.members[g as usize].clear();
        }
        for (&h, mut part) in ids.iter().zip(parts) {
            for &r in &part {
                let g = self.of_row[r as usize];
                if g != h {
                    self.shift(space.table.tuple_of_row[r as usize] as usize, g, h);
                    self.of_row[r as usize] = h;
                }
            }
            part.sort_unstable();
            self.members[h as usize] = part;
        }
        self.touch(space, &ids);
    }

    /// Call `f` on every group holding a row of tuple `u`.
    fn groups_of(&self, u: u32, mut f: impl FnMut(u32)) {
        match self.home[u as usize] {
            SPREAD => self.tuple_groups[u as usize]
                .iter()
                .for_each(|&(h, _)| f(h)),
            h => f(h),
        }
    }

    /// Candidate groups for a row of tuple `t` in group `g`, into `scratch.candidates`:
    /// the groups holding `t` or one of its first `width` near tuples, other than `g`,
    /// nearest tuples first.
    pub(crate) fn candidates(&self, t: u32, g: u32, width: usize, scratch: &mut Scratch) {
        scratch.new_list(self.members.len());
        scratch.fresh(g);
        let mut out = std::mem::take(&mut scratch.candidates);
        out.clear();
        let near = self.near.get(t as usize);
        for &u in std::iter::once(&t).chain(&near[..width.min(near.len())]) {
            self.groups_of(u, |h| {
                if scratch.fresh(h) {
                    out.push(h);
                }
            });
        }
        scratch.candidates = out;
    }

    /// The groups holding a row of the tuple or of one of the first `width` near tuples
    /// of a row of group `g`, other than `g`, ascending, into `scratch.hood`.
    pub(crate) fn neighbourhood(
        &self,
        space: &Space<'_>,
        g: u32,
        width: usize,
        scratch: &mut Scratch,
    ) {
        scratch.new_list(self.members.len());
        scratch.fresh(g);
        let mut hood = std::mem::take(&mut scratch.hood);
        hood.clear();
        for &r in &self.members[g as usize] {
            let t = space.table.tuple_of_row[r as usize];
            let near = self.near.get(t as usize);
            for &u in std::iter::once(&t).chain(&near[..width.min(near.len())]) {
                self.groups_of(u, |h| {
                    if scratch.fresh(h) {
                        hood.push(h);
                    }
                });
            }
        }
        hood.sort_unstable();
        scratch.hood = hood;
    }

    /// Write the grouping to `group_of_row` with dense ids in order of first row, after
    /// checking that every group has at least `k` rows.
    pub(crate) fn compact(&self, group_of_row: &mut [u32], k: usize) -> Result<usize> {
        if let Some(rows) = self
            .members
            .iter()
            .find(|rows| !rows.is_empty() && rows.len() < k)
        {
            return Err(KernelError::InvalidArgument {
                kernel: "improve",
                message: format!(
                    "internal error: a group of {} rows is below k = {k}",
                    rows.len()
                ),
            });
        }
        let mut id = vec![u32::MAX; self.members.len()];
        let mut next = 0u32;
        for (out, &g) in group_of_row.iter_mut().zip(&self.of_row) {
            if id[g as usize] == u32::MAX {
                id[g as usize] = next;
                next += 1;
            }
            *out = id[g as usize];
        }
        Ok(next as usize)
    }
}

/// `⌈a / d⌉` as units for `a > 0` (`d > 0`), 0 otherwise: a group of `d` rows costs less
/// than `a` iff its units per row are below this.
pub(crate) fn ceil_units(a: i128, d: i128) -> u64 {
    if a <= 0 || d <= 0 {
        0
    } else if let (Ok(a), Ok(d)) = (u64::try_from(a), u64::try_from(d)) {
        // The common case, without the far slower 128-bit division.
        a.div_ceil(d)
    } else {
        u64::try_from((a + d - 1) / d).unwrap_or(u64::MAX)
    }
}
