//! Local recodings built from full-domain generalizations: ARX's iterated global
//! recoding ([`iterated`], [`iterated_by`]) and the cheapest class first
//! ([`cheapest_first`], the forest's second start).

mod arx;
mod cheapest;
mod state;
#[cfg(test)]
mod testing;
mod units;

pub use arx::{iterated, iterated_by};
pub use cheapest::cheapest_first;
pub use units::{lattice_nodes, StepCost, MAX_NODES};
