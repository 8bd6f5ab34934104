//! The rows, tuples and cost model the improvement passes work in: per-attribute leaf
//! ranks, span tables, near tuples, and the best binary cut of a group.

use rayon::prelude::*;

use crate::cancel;
use crate::forest::cost::orders::inverse;
use crate::forest::cost::scale::{numeric_units, PerKey};
use crate::forest::improve::cut::best_cut;
use crate::forest::improve::effort::PARALLEL_SPLIT_ROWS;
use crate::forest::table::Table;

/// A set attribute active in [`Space::running_units`]: its index in [`Space::sets`], the
/// attribute, the values of the rows, whether each was seen, and the distinct values seen.
type Counted = (usize, usize, Vec<u32>, Vec<bool>, usize);

/// Read-only view of the rows for the passes: depth-first ranks and interval costs.
pub(crate) struct Space<'a> {
    /// The cost model, the tuples and the tuple of every row.
    pub(crate) table: Table<'a>,
    pub(crate) k: usize,
    /// `rank[t · m + j]`: depth-first rank of tuple `t`'s leaf in hierarchy `j`.
    rank: Vec<u32>,
    pub(crate) spans: Vec<Span<'a>>,
    /// Attributes by decreasing units of their cheapest mismatch (ties by index).
    pub(crate) importance: Vec<usize>,
    /// `split_key[a][t]`: position of tuple `t` among all tuples sorted by their rank in
    /// attribute `a`, then by their ranks in the other attributes in `importance` order.
    split_key: Vec<Vec<u32>>,
    /// The attributes priced by their distinct values
    /// ([`CostModel::is_set`](crate::forest::cost::CostModel::is_set)); their ranks are
    /// their values, and [`Self::span`] prices them 0.
    pub(crate) sets: Vec<usize>,
    /// Units of one distinct value beyond the first, per attribute of `sets`.
    pub(crate) set_unit: Vec<u64>,
    /// Per attribute: its index in `sets`, [`NOT_SET`] for a range attribute.
    pub(crate) set_of: Vec<usize>,
}

/// [`Space::set_of`] of an attribute priced by its range.
pub(crate) const NOT_SET: usize = usize::MAX;

/// Units of the meet of a rank range of one attribute (the model's, see
/// [`crate::forest::cost::orders::Orders`]).
pub(crate) struct Span<'a> {
    pub(crate) leaves: usize,
    /// `table[lo · leaves + hi]` for `lo < hi`, if the attribute is small enough.
    table: Option<&'a [u64]>,
    /// The leaf of every rank
    /// ([`CostModel::interval_ranks`](crate::forest::cost::CostModel::interval_ranks)).
    pub(crate) leaf_at: &'a [u32],
    /// Priced by its distinct values, not by a range: every range costs 0 here.
    set: bool,
    /// A numeric attribute of range costs without a table: keys by rank, units of a key
    /// difference and of the whole weight
    /// ([`CostModel::rank_keys`](crate::forest::cost::CostModel::rank_keys)).
    numeric: Option<(&'a [f64], PerKey, u64)>,
}

impl<'a> Space<'a> {
    pub(crate) fn new(table: &Table<'a>, n: usize, k: usize) -> Self {
        let Table {
            model, tuples, m, ..
        } = *table;
        let orders = model.orders();
        let ranks: Vec<&[u32]> = (0..m).map(|j| model.interval_ranks(j)).collect();
        let rank: Vec<u32> = tuples
            .chunks_exact(m)
            .flat_map(|row| row.iter().zip(&ranks).map(|(&c, r)| r[c as usize]))
            .collect();
        let spans: Vec<Span> = (0..m)
            .map(|j| Span {
                leaves: ranks[j].len(),
                table: orders.span_table(j),
                leaf_at: &orders.interval(j).leaf_at,
                set: model.is_set(j),
                numeric: model.rank_keys(j),
            })
            .collect();
        let sets: Vec<usize> = (0..m).filter(|&j| model.is_set(j)).collect();
        let set_unit = sets.iter().map(|&j| model.set_units(j)).collect();
        let mut set_of = vec![NOT_SET; m];
        for (s, &j) in sets.iter().enumerate() {
            set_of[j] = s;
        }
        let mut space = Self {
            table: *table,
            k,
            rank,
            spans,
            importance: Vec::new(),
            split_key: Vec::new(),
            sets,
            set_unit,
            set_of,
        };
        let cheapest: Vec<u64> = (0..m).map(|j| orders.cheapest(j)).collect();
        let mut importance: Vec<usize> = (0..m).collect();
        importance.sort_by(|&a, &b| cheapest[b].cmp(&cheapest[a]).then(a.cmp(&b)));
        space.importance = importance;
        let split_key: Vec<Vec<u32>> = (0..m)
            .into_par_iter()
            .map(|a| {
                let attributes: Vec<usize> = std::iter::once(a)
                    .chain(space.importance.iter().copied().filter(|&j| j != a))
                    .collect();
                inverse(&space.sorted_tuples(n, &attributes))
            })
            .collect();
        space.split_key = split_key;
        space
    }

    /// Ranks of tuple `t`.
    pub(crate) fn ranks(&self, t: u32) -> &[u32] {
        &self.rank[t as usize * self.table.m..(t as usize + 1) * self.table.m]
    }

    /// Ranks of the tuple of row `r`.
    pub(crate) fn row_ranks(&self, r: u32) -> &[u32] {
        self.ranks(self.table.tuple_of_row[r as usize])
    }

    /// Units of the meet of ranks `lo..=hi` of attribute `j` (0 for `lo ≥ hi`, and for an
    /// attribute of [`Self::sets`]).
    pub(crate) fn span(&self, j: usize, lo: u32, hi: u32) -> u64 {
        if lo >= hi {
            return 0;
        }
        let span = &self.spans[j];
        match (&span.table, span.numeric) {
            (Some(table), _) => table[lo as usize * span.leaves + hi as usize],
            (None, _) if span.set => 0,
            (None, Some((keys, per, full))) => {
                numeric_units(keys[lo as usize], keys[hi as usize], per, full)
            }
            (None, None) => self.table.model.attribute_units(
                j,
                span.leaf_at[lo as usize],
                span.leaf_at[hi as usize],
            ),
        }
    }

    /// Units of one row of a group holding `distinct` values of set attribute `s` (an
    /// index into [`Self::sets`]).
    #[inline]
    pub(crate) fn set_units(&self, s: usize, distinct: usize) -> u64 {
        distinct.saturating_sub(1) as u64 * self.set_unit[s]
    }

    /// Units of one row of a group made of `rows` in the set attributes.
    fn set_units_of(&self, rows: &[u32]) -> u64 {
        if self.sets.is_empty() {
            return 0;
        }
        let mut values: Vec<u32> = Vec::with_capacity(rows.len());
        (0..self.sets.len())
            .map(|s| {
                let j = self.sets[s];
                values.clear();
                values.extend(rows.iter().map(|&r| self.row_ranks(r)[j]));
                values.sort_unstable();
                values.dedup();
                self.set_units(s, values.len())
            })
            .sum()
    }

    /// Units of one row of a group with rank ranges `ranges` (`(lo, hi)` per attribute;
    /// `lo > hi` for none), widened to hold ranks `x`.
    pub(crate) fn units_with(&self, ranges: &[(u32, u32)], x: &[u32]) -> u64 {
        ranges
            .iter()
            .zip(x)
            .enumerate()
            .map(|(j, (&(lo, hi), &x))| self.span(j, lo.min(x), hi.max(x)))
            .sum()
    }

    /// Units of one row of a group with rank ranges `ranges`.
    pub(crate) fn units_in(&self, ranges: &[(u32, u32)]) -> u64 {
        ranges
            .iter()
            .enumerate()
            .map(|(j, &(lo, hi))| self.span(j, lo, hi))
            .sum()
    }

    /// Rank ranges of a group made of `rows`, into `out`.
    fn ranges_of(&self, rows: &[u32], out: &mut [(u32, u32)]) {
        out.fill((u32::MAX, 0));
        for &r in rows {
            for (range, &x) in out.iter_mut().zip(self.row_ranks(r)) {
                *range = (range.0.min(x), range.1.max(x));
            }
        }
    }

    /// Units of one row of a group made of `rows`.
    pub(crate) fn units_of(&self, rows: &[u32]) -> u64 {
        let mut ranges = vec![(u32::MAX, 0u32); self.table.m];
        self.ranges_of(rows, &mut ranges);
        self.units_in(&ranges) + self.set_units_of(rows)
    }

    /// Pair cost of tuples `a` and `b` in units.
    pub(crate) fn pair_units(&self, a: u32, b: u32) -> u64 {
        let (x, y) = (self.ranks(a), self.ranks(b));
        let ranged: u64 = (0..self.table.m)
            .map(|j| self.span(j, x[j].min(y[j]), x[j].max(y[j])))
            .sum();
        let counted: u64 = self
            .sets
            .iter()
            .zip(&self.set_unit)
            .filter(|&(&j, _)| x[j] != y[j])
            .map(|(_, &unit)| unit)
            .sum();
        ranged + counted
    }

    /// Tuple ids sorted by their ranks in `attributes`, in that order, ties by id.
    fn sorted_tuples(&self, n: usize, attributes: &[usize]) -> Vec<u32> {
        let bits: Vec<u32> = attributes
            .iter()
            .map(|&j| usize::BITS - self.spans[j].leaves.saturating_sub(1).leading_zeros())
            .collect();
        if bits.iter().sum::<u32>() <= u64::BITS {
            // Pack the ranks into one key, first attribute most significant.
            let mut keyed: Vec<(u64, u32)> = (0..n as u32)
                .map(|t| {
                    let x = self.ranks(t);
                    let key = attributes.iter().zip(&bits).fold(0u64, |key, (&j, &b)| {
                        key.checked_shl(b).unwrap_or(0) | u64::from(x[j])
                    });
                    (key, t)
                })
                .collect();
            keyed.sort_unstable();
            return keyed.into_iter().map(|(_, t)| t).collect();
        }
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.sort_unstable_by(|&a, &b| {
            let (x, y) = (self.ranks(a), self.ranks(b));
            attributes
                .iter()
                .map(|&j| x[j].cmp(&y[j]))
                .find(|o| o.is_ne())
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(a.cmp(&b))
        });
        order
    }

    /// The near tuples of every tuple: the `count` closest (by pair cost, ties by id)
    /// among the `window` tuples on each side of it in one sorted order per attribute of
    /// more than one leaf (the other attributes by importance, that attribute last).
    pub(crate) fn near_tuples(&self, n: usize, count: usize, window: usize) -> Vec<Vec<u32>> {
        let lasts: Vec<usize> = (0..self.table.m)
            .filter(|&j| self.spans[j].leaves > 1)
            .collect();
        let orders: Vec<Vec<u32>> = lasts
            .into_par_iter()
            .map(|last| {
                let attributes: Vec<usize> = self
                    .importance
                    .iter()
                    .copied()
                    .filter(|&j| j != last)
                    .chain(std::iter::once(last))
                    .collect();
                self.sorted_tuples(n, &attributes)
            })
            .collect();
        let places: Vec<Vec<u32>> = orders.iter().map(|order| inverse(order)).collect();
        (0..n as u32)
            .into_par_iter()
            .map_init(
                || (Vec::new(), vec![u32::MAX; n]),
                |(found, seen): &mut (Vec<(u64, u32)>, Vec<u32>), t| {
                    if cancel::requested() {
                        return Vec::new();
                    }
                    found.clear();
                    seen[t as usize] = t;
                    for (order, place) in orders.iter().zip(&places) {
                        let i = place[t as usize] as usize;
                        for &u in &order[i.saturating_sub(window)..(i + window + 1).min(n)] {
                            if seen[u as usize] != t {
                                seen[u as usize] = t;
                                found.push((self.pair_units(t, u), u));
                            }
                        }
                    }
                    if count < found.len() {
                        found.select_nth_unstable(count);
                        found.truncate(count);
                    }
                    found.sort_unstable();
                    found.iter().map(|&(_, u)| u).collect()
                },
            )
            .collect()
    }

    /// `out[p]`: units of one row of a group made of the first `p` rows of `order`
    /// (`out[0] = 0`), or of the last `p` rows when `reverse`, counting only the
    /// attributes in `active` (the others are constant over `order`).
    fn running_units(&self, order: &[u32], active: &[usize], reverse: bool, out: &mut Vec<u64>) {
        let mut ranges: Vec<(u32, u32, u64)> = vec![(u32::MAX, 0, 0); active.len()];
        let mut sum = 0u64;
        out.clear();
        out.push(0);
        let mut counted: Vec<Counted> = (0..self.sets.len())
            .filter(|&s| active.contains(&self.sets[s]))
            .map(|s| {
                let j = self.sets[s];
                let mut values: Vec<u32> = order.iter().map(|&r| self.row_ranks(r)[j]).collect();
                values.sort_unstable();
                values.dedup();
                let seen = vec![false; values.len()];
                (s, j, values, seen, 0)
            })
            .collect();
        let mut step = |r: u32| {
            let x = self.row_ranks(r);
            for (range, &j) in ranges.iter_mut().zip(active) {
                let xj = x[j];
                if xj < range.0 || xj > range.1 {
                    range.0 = range.0.min(xj);
                    range.1 = range.1.max(xj);
                    let units = self.span(j, range.0, range.1);
                    sum = sum - range.2 + units;
                    range.2 = units;
                }
            }
            for (s, j, values, seen, distinct) in &mut counted {
                // Present: `values` holds every value of `order`.
                let i = values.binary_search(&x[*j]).unwrap_or(0);
                if !seen[i] {
                    seen[i] = true;
                    *distinct += 1;
                    if *distinct > 1 {
                        sum += self.set_unit[*s];
                    }
                }
            }
            sum
        };
        if reverse {
            out.extend(order.iter().rev().map(|&r| step(r)));
        } else {
            out.extend(order.iter().map(|&r| step(r)));
        }
    }

    /// The best binary cut of a group made of `rows` into two parts of at least `k` rows
    /// (ties to the first attribute, then the smallest left part), if it costs strictly
    /// less than the group.
    fn best_cut(&self, rows: &[u32]) -> Option<(Vec<u32>, Vec<u32>)> {
        let s = rows.len();
        let k = self.k;
        if s < 2 * k {
            return None;
        }
        let mut ranges = vec![(u32::MAX, 0u32); self.table.m];
        self.ranges_of(rows, &mut ranges);
        let whole = s as u128 * u128::from(self.units_in(&ranges) + self.set_units_of(rows));
        // Attributes that vary in the group; sorting by any constant one gives the same
        // order (by the others in importance order), so only the first is tried.
        let active: Vec<usize> = (0..self.table.m)
            .filter(|&j| ranges[j].0 < ranges[j].1)
            .collect();
        let first_constant = (0..self.table.m).find(|&j| ranges[j].0 == ranges[j].1);
        let attributes = (0..self.split_key.len())
            .filter(|&a| ranges[a].0 != ranges[a].1 || Some(a) == first_constant);
        best_cut(
            rows,
            k,
            whole,
            attributes,
            |order, a| {
                let key = &self.split_key[a];
                order.sort_unstable_by_key(|&r| {
                    (key[self.table.tuple_of_row[r as usize] as usize], r)
                });
            },
            |order, reverse, out| self.running_units(order, &active, reverse, out),
        )
    }

    /// Cut `rows` recursively by [`Self::best_cut`] while cuts lower the cost; the parts
    /// in a fixed order (left before right).
    pub(crate) fn split(&self, rows: Vec<u32>) -> Vec<Vec<u32>> {
        let mut done = Vec::new();
        let mut stack = vec![rows];
        while let Some(rows) = stack.pop() {
            match self.best_cut(&rows) {
                None => done.push(rows),
                Some((left, right)) => {
                    let small = left.len().min(right.len());
                    if small >= PARALLEL_SPLIT_ROWS && small * 8 >= rows.len() {
                        // Both sides large: recurse in parallel (depth O(log rows)).
                        let (a, b) = rayon::join(|| self.split(left), || self.split(right));
                        done.extend(a);
                        done.extend(b);
                    } else {
                        stack.push(right);
                        stack.push(left);
                    }
                }
            }
        }
        done
    }
}
