//! The forest family: Aggarwal et al.'s FOREST and DECOMPOSE, and the group-level passes
//! that follow them.
//!
//! - [`cost`]: pair and group costs under a cost model (units, exactly comparable):
//!   `model` (the cost model), `scale` (weights as exact integer units), `paths` (deep
//!   attributes), `range` (an attribute under range labels), `orders` (leaf orders).
//! - [`neighbours`]: `nearest` (exact nearest neighbours) and `build` (the FOREST itself).
//! - [`decompose`]: DECOMPOSE cuts A–D of large trees into groups.
//! - [`improve`]: the group-level passes, one job per file: `levels` (group levels, row
//!   checks), `repair` (every group ≥ k), `extents` (observed extents, release cost),
//!   `effort` (limits and statistics), `passes` (the improvement loop), `space` (ranks,
//!   spans, near tuples), `state` (the grouping and its summaries), `moves` (split,
//!   search, eject and regroup passes), `tally`, `scratch`, `bound`, `cut` (the best
//!   binary cut) and `regroup` (pools solved from scratch).
//! - [`anonymize`]: the forest anonymizer end to end; `starts` gives its improvement
//!   passes a second start, the classes of full-domain generalizations, cheapest first.
//! - [`blocked`]: the forest on large tables, in blocks cut by Mondrian.
//! - [`extend`]: continuous mode, placing rows added after a release.
//! - `table`: the table as the group-level passes borrow it (the cost model, the distinct
//!   tuples, their width and the tuple of every row), and the checks of row arrays.
//! - `union_find`: the one union-find of FOREST, DECOMPOSE's forest check and [`extend`].

pub mod anonymize;
pub mod blocked;
pub mod cost;
pub mod decompose;
pub mod extend;
pub mod improve;
pub mod neighbours;
mod starts;
mod table;
mod union_find;
