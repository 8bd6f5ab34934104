//! How much work the improvement passes do: their limits, and their statistics.

/// Attributes with at most this many leaves get a dense `rank × rank → units` table of
/// interval meets (at most 2 MiB each); larger ones walk the hierarchy per lookup.
pub(crate) const SPAN_TABLE_LEAVES: usize = 512;
/// Near tuples listed per tuple: the candidate groups of a row are the groups holding a
/// row of its tuple or of one of these.
pub(crate) const NEAR: usize = 40;
/// Tuples read on each side of a tuple, in every sorted order, when listing its near
/// tuples.
pub(crate) const WINDOW: usize = 10;
/// Near tuples whose groups a row of a cheap group (per-row units below the average)
/// considers in the local search; rows of the other groups consider all [`NEAR`].
pub(crate) const NARROW: usize = 8;
/// A tuple is marked for re-evaluation when the group of one of its first `REACH` near
/// tuples changes (the groups of farther ones rarely make a difference).
pub(crate) const REACH: usize = 8;
/// Hard cap on the passes of one local search over the rows.
pub(crate) const SEARCH_PASSES: usize = 12;
/// Groups pooled and re-partitioned from scratch by the regroup pass: a group and the
/// neighbouring groups of the cheapest union meets.
pub(crate) const REGROUP_GROUPS: usize = 4;
/// Near tuples per row of a group whose groups are its neighbours in the regroup pass.
pub(crate) const REGROUP_WIDTH: usize = 4;
/// Rows of a regroup pool, per k: a pool takes neighbouring groups (best first) only
/// while it holds at most this many times k rows, and a larger group is not pooled (a
/// pool costs time quadratic in its rows). DECOMPOSE's groups hold fewer than 3k rows;
/// how many pools of the benchmarks were larger, and what the bound changed there:
/// benches/README.md.
pub(crate) const REGROUP_ROWS_PER_K: usize = 16;
/// Pools solved in parallel before any is applied by the regroup pass.
pub(crate) const REGROUP_BATCH: usize = 64;
/// Hard cap on the rounds of the improvement loop.
pub(crate) const ROUNDS: usize = 8;
/// The improvement loop stops after a round that lowered the cost by less than
/// `1 / ROUND_GAIN` of it (0.5 %).
pub(crate) const ROUND_GAIN: u128 = 200;
/// [`NEAR`] under [`Effort::Fast`].
pub(crate) const FAST_NEAR: usize = 10;
/// [`WINDOW`] under [`Effort::Fast`].
pub(crate) const FAST_WINDOW: usize = 3;
/// A cut whose smaller side has at least this many rows (and an eighth of the group)
/// splits its two sides in parallel.
pub(crate) const PARALLEL_SPLIT_ROWS: usize = 2048;

/// How much work [`improve_with_stats`](crate::forest::improve::improve_with_stats) does.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Effort {
    /// Eject, split and search passes, then rounds that add regroup until a round changes
    /// nothing; 40 near tuples per tuple from windows of 10.
    Full,
    /// One eject, one split and one search pass; 10 near tuples per tuple from windows of
    /// 3: far less time than [`Effort::Full`] for a somewhat higher loss.
    Fast,
}

/// What one pass of [`improve_with_stats`](crate::forest::improve::improve_with_stats) did.
#[derive(Debug, Clone, PartialEq)]
pub struct PassStats {
    /// The pass: `"eject"`, `"split"`, `"regroup"` or `"search"`.
    pub pass: &'static str,
    /// Changes it applied (groups ejected or merged and cut, groups added by splits, rows
    /// moved or swapped).
    pub changes: usize,
    /// Release cost after the pass (as [`release_cost`](crate::forest::improve::release_cost)).
    pub cost: f64,
    /// Wall-clock seconds the pass took.
    pub seconds: f64,
}

/// Trace of one run of [`improve_with_stats`](crate::forest::improve::improve_with_stats).
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ImproveStats {
    /// Release cost of the input.
    pub cost_before: f64,
    /// Wall-clock seconds spent ranking leaves and listing near tuples before the passes.
    pub setup_seconds: f64,
    /// Every pass in the order it ran.
    pub passes: Vec<PassStats>,
}

/// Cost lookups per query above which a block whose neighbour search would scan is cut
/// smaller by [`crate::forest::blocked::blocked_forest`] (the scan is quadratic in a block's
/// tuples). Adult's 19,502 tuples read about 78,000 (4 packs) and stay whole.
pub(crate) const SCAN_LOOKUPS: usize = 100_000;

/// [`SCAN_LOOKUPS`] under [`Effort::Fast`]: large tables get the fast passes, and there
/// the scans of large blocks took most of the time.
pub(crate) const FAST_SCAN_LOOKUPS: usize = 25_000;

/// The scan budget per query of blocks improved with `effort` (see [`SCAN_LOOKUPS`]).
pub(crate) fn scan_lookups(effort: Option<Effort>) -> usize {
    match effort {
        Some(Effort::Fast) => FAST_SCAN_LOOKUPS,
        _ => SCAN_LOOKUPS,
    }
}
