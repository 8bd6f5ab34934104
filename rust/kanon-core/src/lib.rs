//! Pure Rust kernels of kanon: no Python, no unsafe, plain slices in and owned values out.
//!
//! - [`encode`](mod@encode): dictionary encoding of a column to dense `u32` codes in value order.
//! - [`hierarchy`]: generalization hierarchies as dense `level × code → ancestor` matrices.
//! - [`groupify`](mod@groupify): equivalence classes of rows generalized to given levels.
//! - [`stats`]: per-class privacy statistics (k, l-diversity, t-closeness, risks).
//! - [`emd`]: the earth mover's distance of t-closeness (equal, ordered, hierarchical).
//! - [`forest`]: the Aggarwal et al. forest family: pair costs ([`forest::cost`]), exact
//!   nearest neighbours and FOREST ([`forest::neighbours`]), DECOMPOSE cuts A–D
//!   ([`forest::decompose`]), the repair and improvement passes ([`forest::improve`]), the
//!   anonymizer end to end ([`forest::anonymize`]), in blocks cut by Mondrian
//!   ([`forest::blocked`]) and in continuous mode ([`forest::extend`]).
//! - [`lattice`]: optimal full-domain generalization (lattice search with suppression).
//! - [`models`]: l-diversity, t-closeness and δ-presence checked class by class.
//! - [`historic`]: Sweeney's Datafly and μ-Argus (historic baselines).
//! - [`hkp`]: (h,k,p)-coherence of transaction data (minimal moles, MOLE-tree, greedy
//!   suppression of public items).
//! - [`mondrian`]: strict multidimensional Mondrian (median cuts into parts of ≥ k rows).
//! - [`iterated`]: ARX's local recoding by iterated global recoding, strict.
//! - [`priority`]: PrioPrivacy's local recoding of prioritized attributes, strict.
//! - [`splits`]: binary interval splits, the default hierarchy of numbers.
//!
//! The items re-exported here keep their own names; everything else is named by its
//! module's path.
//!
//! Modules never depend on each other in a cycle: `lib.rs` and every `mod.rs` only
//! declare modules and re-export (`historic/mod.rs` also lists its algorithms by name,
//! a table no file below it reads), and sibling files name each other by their own paths
//! (`tests/rust_cycles_check.py` checks it).
#![forbid(unsafe_code)]
#![warn(missing_docs)]

pub mod cancel;
pub mod emd;
pub mod encode;
pub mod error;
pub mod forest;
pub mod groupify;
pub mod hierarchy;
pub mod historic;
pub mod hkp;
pub mod iterated;
pub mod lattice;
pub mod models;
pub mod mondrian;
pub mod priority;
pub mod splits;
pub mod stats;

pub use emd::{Emd, GroundDistance};
pub use encode::{encode, Dictionary};
pub use error::{KernelError, Result};
pub use groupify::{groupify, Classes};
pub use hierarchy::Hierarchy;
pub use stats::{class_stats, ClassStats, StatsOptions};
