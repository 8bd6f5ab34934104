//! The options, roles and release of (h,k,p)-coherence, and its limits.

use crate::error::{KernelError, Result};

pub(super) const KERNEL: &str = "hkp";

/// The default of [`HkpOptions::max_itemsets`]: ten million candidate sets (a few
/// seconds of search and a few hundred MB at most).
pub const DEFAULT_MAX_ITEMSETS: u64 = 10_000_000;

/// Most transaction ids the cohorts of one level may hold (2^28: 1 GiB of `u32`).
pub(super) const MAX_COHORT_ENTRIES: u64 = 1 << 28;

/// How the greedy phase chooses the next public item to suppress.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Removal {
    /// The highest MM(e) / IL(e): most minimal moles removed per unit of information lost
    /// (the paper's choice). Ties: the higher MM, then the lower code.
    MmIl,
    /// The highest 1 / IL(e) among the items of remaining minimal moles: the least
    /// frequent first. Ties: the higher MM, then the lower code.
    OneIl,
    /// The highest MM(e). Ties: the lower IL, then the lower code.
    Mm,
    /// Every public item of every minimal mole at once (the baseline).
    RmAll,
}

impl Removal {
    /// The removal method called `name`: `"mmil"`, `"1il"`, `"mm"` or `"rmall"`.
    ///
    /// # Errors
    /// [`KernelError::InvalidArgument`] for any other name.
    pub fn from_name(name: &str) -> Result<Self> {
        match name {
            "mmil" => Ok(Self::MmIl),
            "1il" => Ok(Self::OneIl),
            "mm" => Ok(Self::Mm),
            "rmall" => Ok(Self::RmAll),
            other => Err(invalid(format!(
                "method must be 'mmil', '1il', 'mm' or 'rmall', got {other:?}"
            ))),
        }
    }

    /// The name [`Removal::from_name`] reads.
    #[must_use]
    pub fn name(self) -> &'static str {
        match self {
            Self::MmIl => "mmil",
            Self::OneIl => "1il",
            Self::Mm => "mm",
            Self::RmAll => "rmall",
        }
    }
}

/// Which items are private.
#[derive(Debug, Clone, Copy, PartialEq)]
pub enum Roles<'a> {
    /// These item codes are private (each must occur in some transaction); every other
    /// item is public. An empty list makes every item public.
    Private(&'a [u32]),
    /// A seeded random `fraction` of the items left after preprocessing is public
    /// (`round(fraction × items)` of them, drawn uniformly), the rest private: the
    /// paper's experimental setting (the course report's `--delta`).
    PublicFraction {
        /// Share of public items, in `[0, 1]`.
        fraction: f64,
        /// Seed of the draw: the same seed and items give the same split.
        seed: u64,
    },
}

/// Parameters of [`hkp`](crate::hkp::hkp).
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct HkpOptions {
    /// Largest allowed probability of inferring a private item, in `(0, 1]`.
    pub h: f64,
    /// Smallest allowed cohort of a set of public items an attacker may know (`k ≥ 1`).
    pub k: u64,
    /// Most public items an attacker knows (`p ≥ 1`).
    pub p: usize,
    /// How the greedy phase picks items.
    pub removal: Removal,
    /// Preprocessing: items whose support is below `min_support × transactions` are
    /// dropped first (`0`: none), in `[0, 1]`.
    pub min_support: f64,
    /// Most candidate sets of 2 to `p` public items whose mole status the search may
    /// decide ([`DEFAULT_MAX_ITEMSETS`]; at least 1): a dense table makes their number
    /// grow like C(items, p), so the search stops with an error past this budget instead
    /// of exhausting memory.
    pub max_itemsets: u64,
}

/// What [`hkp`](crate::hkp::hkp) did, in counts.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Default)]
pub struct HkpStats {
    /// Transactions, empty ones included.
    pub transactions: u64,
    /// Distinct items after preprocessing.
    pub items: u64,
    /// Public items after preprocessing.
    pub public_items: u64,
    /// Item occurrences (transaction × distinct item) after preprocessing, public and
    /// private: the denominator of the information loss.
    pub occurrences: u64,
    /// Occurrences of the suppressed items (the sum of their supports).
    pub suppressed_occurrences: u64,
    /// Occurrences of the items dropped by the preprocessing.
    pub dropped_occurrences: u64,
    /// Candidate sets of 2 or more public items whose mole status was decided.
    pub candidates: u64,
    /// Nodes of the MOLE-tree (root excluded; 0 for [`Removal::RmAll`]).
    pub tree_nodes: u64,
}

/// The result of [`hkp`](crate::hkp::hkp): what to suppress and why.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct HkpRelease {
    /// Public item codes to remove from every transaction: the size-1 moles in code
    /// order, then the items the greedy phase chose, in the order it chose them.
    pub suppressed: Vec<u32>,
    /// The public items that are moles on their own, in code order.
    pub size1_moles: Vec<u32>,
    /// Minimal moles of 2 to `p` items, each in code order, by size and then
    /// lexicographically: mole `i` is `mole_items[mole_offsets[i]..mole_offsets[i + 1]]`.
    pub mole_offsets: Vec<usize>,
    /// Items of the minimal moles (see `mole_offsets`).
    pub mole_items: Vec<u32>,
    /// Items dropped by the preprocessing, in code order (removed from the release too).
    pub dropped: Vec<u32>,
    /// The private items after preprocessing, in code order.
    pub private: Vec<u32>,
    /// Counters.
    pub stats: HkpStats,
}

impl HkpRelease {
    /// The minimal moles of size 2 to `p`, each a slice of item codes in code order.
    pub fn moles(&self) -> impl Iterator<Item = &[u32]> + '_ {
        self.mole_offsets
            .windows(2)
            .map(|w| &self.mole_items[w[0]..w[1]])
    }

    /// Number of minimal moles of size 2 to `p`.
    #[must_use]
    pub fn mole_count(&self) -> usize {
        self.mole_offsets.len().saturating_sub(1)
    }

    /// Information loss: occurrences of the suppressed items over all item occurrences of
    /// the data after preprocessing (0 when there are none).
    #[must_use]
    pub fn information_loss(&self) -> f64 {
        if self.stats.occurrences == 0 {
            0.0
        } else {
            self.stats.suppressed_occurrences as f64 / self.stats.occurrences as f64
        }
    }
}

pub(super) fn invalid(message: String) -> KernelError {
    KernelError::InvalidArgument {
        kernel: KERNEL,
        message,
    }
}
