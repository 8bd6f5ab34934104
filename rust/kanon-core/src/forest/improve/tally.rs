//! Per-group counts of categorical values (tallies) and per-tuple group lists.

/// The count of every value of one set attribute in a group, sorted by value.
#[derive(Debug, Clone, Default)]
pub(crate) struct Tally {
    pub(crate) counts: Vec<(u32, u32)>,
    /// Values counted once.
    pub(crate) singles: u32,
}

impl Tally {
    /// Count the values `sorted` (ascending) afresh.
    pub(crate) fn rebuild(&mut self, sorted: &[u32]) {
        self.counts.clear();
        for &x in sorted {
            match self.counts.last_mut() {
                Some((v, c)) if *v == x => *c += 1,
                _ => self.counts.push((x, 1)),
            }
        }
        self.singles = self.counts.iter().filter(|&&(_, c)| c == 1).count() as u32;
    }

    pub(crate) fn count(&self, x: u32) -> u32 {
        self.counts
            .binary_search_by_key(&x, |&(v, _)| v)
            .map_or(0, |i| self.counts[i].1)
    }

    pub(crate) fn distinct(&self) -> usize {
        self.counts.len()
    }

    pub(crate) fn add(&mut self, x: u32) {
        match self.counts.binary_search_by_key(&x, |&(v, _)| v) {
            Ok(i) => {
                if self.counts[i].1 == 1 {
                    self.singles -= 1;
                }
                self.counts[i].1 += 1;
            }
            Err(i) => {
                self.counts.insert(i, (x, 1));
                self.singles += 1;
            }
        }
    }

    /// Distinct values of the union with another tally.
    pub(crate) fn union_distinct(&self, other: &Self) -> usize {
        let (mut i, mut j, mut n) = (0, 0, 0);
        let (a, b) = (&self.counts, &other.counts);
        while i < a.len() && j < b.len() {
            match a[i].0.cmp(&b[j].0) {
                std::cmp::Ordering::Less => i += 1,
                std::cmp::Ordering::Greater => j += 1,
                std::cmp::Ordering::Equal => {
                    i += 1;
                    j += 1;
                }
            }
            n += 1;
        }
        n + (a.len() - i) + (b.len() - j)
    }
}

/// [`State::home`] of a tuple whose rows are in several groups (or none).
pub(crate) const SPREAD: u32 = u32::MAX;

/// The one group of a tuple's group list, or [`SPREAD`].
pub(crate) fn home_of(list: &[(u32, u32)]) -> u32 {
    match list {
        [(g, _)] => *g,
        _ => SPREAD,
    }
}

/// Lists of ids, one per index, stored contiguously.
pub(crate) struct Lists {
    start: Vec<usize>,
    items: Vec<u32>,
}

impl Lists {
    pub(crate) fn new(lists: &[Vec<u32>]) -> Self {
        let mut start = Vec::with_capacity(lists.len() + 1);
        start.push(0);
        let mut items = Vec::with_capacity(lists.iter().map(Vec::len).sum());
        for list in lists {
            items.extend_from_slice(list);
            start.push(items.len());
        }
        Self { start, items }
    }

    pub(crate) fn get(&self, i: usize) -> &[u32] {
        &self.items[self.start[i]..self.start[i + 1]]
    }
}

/// Count one more row of a tuple in group `g`.
pub(crate) fn join(list: &mut Vec<(u32, u32)>, g: u32) {
    match list.binary_search_by_key(&g, |&(h, _)| h) {
        Ok(i) => list[i].1 += 1,
        Err(i) => list.insert(i, (g, 1)),
    }
}

/// Count one row of a tuple fewer in group `g`.
pub(crate) fn leave(list: &mut Vec<(u32, u32)>, g: u32) {
    if let Ok(i) = list.binary_search_by_key(&g, |&(h, _)| h) {
        list[i].1 -= 1;
        if list[i].1 == 0 {
            list.remove(i);
        }
    }
}
