//! The input of the privacy models (sensitive entries, population paths) and the
//! verdict of a node under them.

use crate::models::PrivacyModels;

/// The privacy models besides k-anonymity and the data they need: the sensitive values
/// of the histogram's tuples and the population for δ-presence.
#[derive(Debug, Clone, Default)]
pub struct ModelInput<'a> {
    /// The models; none by default (k-anonymity only).
    pub models: PrivacyModels,
    /// Sensitive entries: tuple index, sensitive code and rows, the rows of every tuple
    /// split by its sensitive values (they must add up to the tuple's count).
    pub sensitive_tuples: &'a [u32],
    /// See `sensitive_tuples`.
    pub sensitive_codes: &'a [u32],
    /// See `sensitive_tuples`.
    pub sensitive_counts: &'a [u64],
    /// Number of sensitive codes (for a hierarchical ground distance, its leaves).
    pub sensitive_values: usize,
    /// Population rows for δ-presence, row-major: per attribute `j`, the label code of
    /// the row at every level `0..=height_j` ([`NO_LABEL`] where the label does not occur
    /// in the table's hierarchy codes).
    pub population_paths: &'a [u32],
    /// Rows per population path.
    pub population_counts: &'a [u64],
}

/// A population label that matches no label of the table.
pub const NO_LABEL: u32 = u32::MAX;

/// Which classes of a node fail (below k or a model), their rows, and whether the class
/// they form when kept (`*`) satisfies k and the models.
pub(super) struct Verdict {
    pub(super) fails: Vec<bool>,
    pub(super) suppressed: u64,
    pub(super) star_ok: bool,
}
