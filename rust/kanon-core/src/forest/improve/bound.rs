//! Rank range of one attribute in a group, with what removing one row leaves (shared by
//! the improvement passes and the regroup pools).

/// Rank range of one attribute in a group, with what removing one row leaves.
#[derive(Debug, Clone, Copy)]
pub(crate) struct Bound {
    /// Lowest rank, its multiplicity and the next distinct rank (`u32::MAX` if none).
    pub(crate) lo: u32,
    lo_count: u32,
    lo_next: u32,
    /// Highest rank, its multiplicity and the previous distinct rank (0 if none).
    pub(crate) hi: u32,
    hi_count: u32,
    hi_next: u32,
}

impl Bound {
    pub(crate) const EMPTY: Self = Self {
        lo: u32::MAX,
        lo_count: 0,
        lo_next: u32::MAX,
        hi: 0,
        hi_count: 0,
        hi_next: 0,
    };

    pub(crate) fn add(&mut self, x: u32) {
        if x < self.lo {
            self.lo_next = self.lo;
            self.lo = x;
            self.lo_count = 1;
        } else if x == self.lo {
            self.lo_count += 1;
        } else if x < self.lo_next {
            self.lo_next = x;
        }
        if x > self.hi {
            self.hi_next = self.hi;
            self.hi = x;
            self.hi_count = 1;
        } else if x == self.hi {
            self.hi_count += 1;
        } else if x > self.hi_next {
            self.hi_next = x;
        }
    }

    /// The range after removing one row of rank `x` (a member): `(lo, hi)`, `lo > hi` if
    /// nothing is left.
    pub(crate) fn without(&self, x: u32) -> (u32, u32) {
        let lo = if x == self.lo && self.lo_count == 1 {
            self.lo_next
        } else {
            self.lo
        };
        let hi = if x == self.hi && self.hi_count == 1 {
            self.hi_next
        } else {
            self.hi
        };
        (lo, hi)
    }

    /// A range inside the range left after removing any one row (`lo > hi` if none).
    pub(crate) fn inner(&self) -> (u32, u32) {
        let lo = if self.lo_count >= 2 {
            self.lo
        } else {
            self.lo_next
        };
        let hi = if self.hi_count >= 2 {
            self.hi
        } else {
            self.hi_next
        };
        (lo, hi)
    }
}
