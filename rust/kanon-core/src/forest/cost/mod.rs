//! Pair and group costs of rows under a cost model, in exactly comparable integer units.
//!
//! - `model`: the [`CostModel`] and its [`LevelCost`] kinds (meet levels, pair, node and
//!   group costs).
//! - `scale`: fixed-point scaling of attribute weights to exact integer units.
//! - `paths`: leaf-major ancestor rows, the meet of two leaves of a deep attribute.
//! - `range`: an attribute priced under range labels ([`LevelCost::Range`]).
//! - `orders`: leaf orders of a cost model, computed once per model.

pub(crate) mod model;
pub(crate) mod orders;
pub(crate) mod paths;
mod range;
pub(crate) mod scale;

pub use model::{CostModel, LevelCost};
