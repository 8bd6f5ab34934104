//! The group-level passes after DECOMPOSE: the repair pass that guarantees every group
//! holds at least k rows, improvement passes that lower the release cost, and the
//! generalization level of each group.
//!
//! One job per file: `levels` (group levels, row checks), `repair` (every group ≥ k),
//! `extents` (observed extents, release cost), `effort` (limits and statistics), `passes`
//! (the improvement loop), `space` (ranks, spans, near tuples), `state` (the grouping and
//! its summaries), `moves` (split, search, eject and regroup passes), `tally`, `scratch`,
//! `bound`, `cut` (the best binary cut) and `regroup` (pools solved from scratch).

mod bound;
mod cut;
pub(crate) mod effort;
pub(crate) mod extents;
pub(crate) mod levels;
mod moves;
pub(crate) mod passes;
mod regroup;
pub(crate) mod repair;
mod scratch;
mod space;
mod state;
mod tally;

pub use effort::{Effort, ImproveStats, PassStats};
pub use extents::release_cost;
pub use levels::group_levels;
pub use passes::{improve, improve_with_stats};
pub use repair::{repair, Repaired};
