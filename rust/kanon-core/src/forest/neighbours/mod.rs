//! Exact nearest neighbours of the rows, and the FOREST built from them.
//!
//! - `nearest`: exact nearest neighbours under the cost model (trie search and scan).
//! - `build`: FOREST, a forest whose trees hold at least k rows, and its groups.

pub(crate) mod build;
pub(crate) mod nearest;

pub use build::{build_forest, forest, forest_groups};
pub use nearest::{nearest_neighbours, nearest_neighbours_scan, nearest_neighbours_trie};
