//! Reusable buffers of the improvement passes, and the change a row search proposes.
use crate::forest::improve::tally::Tally;

/// One improving change of the local search.
#[derive(Debug, Clone, Copy)]
pub(crate) enum Change {
    /// Move the row to this group.
    Move(u32),
    /// Swap the row with this row.
    Swap(u32),
}

/// Reusable buffers of the passes.
pub(crate) struct Scratch {
    /// `marks[g] == mark`: group `g` is already listed.
    pub(crate) marks: Vec<u64>,
    pub(crate) mark: u64,
    pub(crate) candidates: Vec<u32>,
    /// What the current row's group keeps without it, per attribute.
    pub(crate) rest: Vec<(u32, u32)>,
    /// Groups that received rows in [`State::place_rows`]: id, size and units of one row
    /// after receiving them.
    pub(crate) touched: Vec<(u32, i128, i128)>,
    /// Rank ranges of the touched groups, `m` per group.
    pub(crate) ranges: Vec<(u32, u32)>,
    /// Target group of every placed row.
    pub(crate) targets: Vec<u32>,
    /// Tallies of the touched groups, one per set attribute each.
    pub(crate) tallies: Vec<Tally>,
    /// Per set attribute: the distinct values the current row's group keeps without it,
    /// and whether a candidate group holds the row's value.
    pub(crate) rest_distinct: Vec<usize>,
    pub(crate) holds: Vec<bool>,
    /// Per set attribute and value: `held_mark` if the current row's group holds it.
    pub(crate) held: Vec<Vec<u64>>,
    pub(crate) held_mark: u64,
    /// Groups around the group being worked on.
    pub(crate) hood: Vec<u32>,
}

impl Scratch {
    pub(crate) fn new(m: usize) -> Self {
        Self {
            marks: Vec::new(),
            mark: 0,
            candidates: Vec::new(),
            rest: vec![(0, 0); m],
            touched: Vec::new(),
            ranges: Vec::new(),
            targets: Vec::new(),
            tallies: Vec::new(),
            rest_distinct: Vec::new(),
            holds: Vec::new(),
            held: Vec::new(),
            held_mark: 0,
            hood: Vec::new(),
        }
    }

    /// Start a new list of distinct groups among `groups` ids.
    pub(crate) fn new_list(&mut self, groups: usize) {
        if self.marks.len() < groups {
            self.marks.resize(groups, 0);
        }
        self.mark += 1;
    }

    /// Whether group `g` is new to the current list (and list it).
    pub(crate) fn fresh(&mut self, g: u32) -> bool {
        let seen = &mut self.marks[g as usize];
        let fresh = *seen != self.mark;
        *seen = self.mark;
        fresh
    }
}
