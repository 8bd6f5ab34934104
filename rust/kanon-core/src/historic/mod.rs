//! The historic greedy algorithms of Sweeney (2002), "Achieving k-anonymity privacy
//! protection using generalization and suppression": **Datafly** and **μ-Argus**, as
//! baselines next to the optimal lattice search ([`crate::lattice`]).
//!
//! Both take the same histogram as [`crate::lattice::optimal`] (distinct leaf-code
//! tuples with their row counts) and return one full-domain generalization level per
//! attribute, the cells and rows they suppress, and a report of what the historic
//! algorithm alone would have left unprotected.
//!
//! # Classes of a release
//! Rows are grouped by, per attribute, the label code at the chosen level, or a distinct
//! *suppressed* marker if that cell is suppressed. A fully suppressed row has the marker
//! in every attribute, so all fully suppressed rows form one class, the `*` class (a row
//! whose cells μ-Argus happened to suppress all is in it too).
//!
//! # Finishing (both algorithms)
//! 1. The rows of classes of fewer than `k` rows are suppressed entirely (they join the
//!    `*` class).
//! 2. If `keep_suppressed` and the `*` class holds between 1 and `k − 1` rows, whole
//!    further classes are suppressed, smallest first, until it holds at least `k` rows
//!    (it always gets there: at worst every row is suppressed, and the table holds at
//!    least `k` rows). Ties between classes of equal size are broken by their key, label
//!    codes compared attribute by attribute with the marker after every label, so the
//!    result never depends on the order of the input tuples.
//!
//! After finishing the release is k-anonymous: every class holds at least `k` rows, the
//! `*` class included when it is kept (it is dropped from the release otherwise).
//!
//! Tuples with a count of 0 hold no rows: they never influence a choice, they get the
//! treatment of their class (a class holding only such tuples has 0 rows, fewer than
//! `k`, and is suppressed), and a class of 0 rows is not counted in
//! [`HistoricReport::unprotected_classes`].
//!
//! Every choice depends on the tuples' contents only, never on their order: permuting
//! the input tuples permutes `cells` and `suppressed` the same way and changes nothing
//! else.
//!
//! # Files
//! `release.rs` holds what the algorithms share (the histogram, the release, the
//! validation and the finishing), one file each algorithm; this file lists them by name
//! ([`ALGORITHMS`]), so that no file it names depends on it.

mod datafly;
mod mu_argus;
mod release;

pub use datafly::datafly;
pub use mu_argus::mu_argus;
pub use release::{Algorithm, Histogram, HistoricRelease, HistoricReport, MAX_ATTRIBUTES};

use crate::error::{KernelError, Result};

/// The algorithms by name (the `method` of `kanon_historic`): a new full-domain
/// heuristic over the histogram is a file of this folder and a row here.
pub const ALGORITHMS: &[(&str, Algorithm)] = &[
    (datafly::NAME, datafly::on_histogram),
    (mu_argus::NAME, mu_argus::on_histogram),
];

/// The algorithm named `name`.
///
/// # Errors
/// [`KernelError::InvalidArgument`] naming the algorithms, for an unknown name.
pub fn algorithm(kernel: &'static str, name: &str) -> Result<Algorithm> {
    ALGORITHMS
        .iter()
        .find(|(known, _)| *known == name)
        .map(|&(_, run)| run)
        .ok_or_else(|| {
            let known: Vec<&str> = ALGORITHMS.iter().map(|(known, _)| *known).collect();
            KernelError::InvalidArgument {
                kernel,
                message: format!("unknown method {name:?}, expected one of {known:?}"),
            }
        })
}
