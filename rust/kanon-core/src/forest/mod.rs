//! The forest family: Aggarwal et al.'s FOREST and DECOMPOSE, and the group-level passes
//! that follow them.
//!
//! - [`cost`]: pair and group costs under a cost model (units, exactly comparable);
//!   `scale` turns weights into exact integer units, `paths` prices deep attributes,
//!   `range` prices an attribute under range labels.
//! - [`nearest_neighbours`] (`neighbours`) and [`forest`] / [`build_forest`] (`build`):
//!   exact nearest neighbours and the FOREST itself.
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

pub mod anonymize;
pub mod blocked;
mod bound;
mod build;
pub mod cost;
mod cut;
pub mod decompose;
mod effort;
pub mod extend;
mod extents;
mod levels;
mod moves;
mod neighbours;
mod orders;
mod passes;
mod paths;
mod range;
mod regroup;
mod repair;
mod scale;
mod scratch;
mod space;
mod starts;
mod state;
mod tally;

pub use build::{build_forest, forest, forest_groups};
pub use neighbours::{nearest_neighbours, nearest_neighbours_scan, nearest_neighbours_trie};

/// The group-level passes after DECOMPOSE: the repair pass that guarantees every group
/// holds at least k rows, improvement passes that lower the release cost, and the
/// generalization level of each group.
pub mod improve {
    pub use super::effort::{Effort, ImproveStats, PassStats};
    pub use super::extents::release_cost;
    pub use super::levels::group_levels;
    pub use super::passes::{improve, improve_with_stats};
    pub use super::repair::{repair, Repaired};
}
