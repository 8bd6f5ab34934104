//! The options and results of the lattice search, and its limits.

pub(super) const KERNEL: &str = "optimal";

/// Largest lattice the search accepts (nodes).
pub(super) const MAX_NODES: u128 = 1 << 26;

/// Relative tolerance under which two costs are equal (ties are then broken by the
/// level vector).
pub(super) const TIE: f64 = 1e-12;

/// The utility metric minimized by the search.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum Metric {
    /// Loss (GCP): the mean over cells of `weight_j · loss_j(label)`, divided by the mean
    /// weight; a suppressed cell loses 1. `loss_j` is given per node (e.g. NCP).
    Loss,
    /// The reference Go library's cost: Σ over cells of `weight_j · level_j / height_j`,
    /// a suppressed cell counting `weight_j`.
    Height,
    /// Non-uniform entropy, monotonic variant (ARX): Σ_j weight_j · Σ_rows
    /// −log2(count(value) / count(rows whose value has the same label)); suppressed rows
    /// are not penalized further.
    Nue,
    /// Non-uniform entropy, non-monotonic variant (ARX): [`Metric::Nue`] plus, for every
    /// attribute, Σ_v −c_v · log2(c_v / S) over the S suppressed rows, `c_v` counting the
    /// suppressed rows whose label is `v`.
    NueNonMonotonic,
    /// Discernibility (non-monotonic): Σ over kept classes |E|² plus N · |E| for every
    /// suppressed class.
    Dm,
    /// Discernibility DM* (monotonic): Σ over all classes |E|², suppressed ones included.
    DmStar,
    /// Average equivalence class size: rows released / classes released.
    Aecs,
}

/// What the search enforces and minimizes.
#[derive(Debug, Clone, PartialEq)]
pub struct LatticeOptions {
    /// Every released class holds at least `k` rows.
    pub k: u64,
    /// Rows that may be suppressed.
    pub max_suppressed: u64,
    /// Whether suppressed rows stay in the release (as one class of `*`, which must then
    /// hold at least `k` rows) rather than being dropped.
    pub keep_suppressed: bool,
    /// Lowest and highest level allowed per attribute.
    pub min_level: Vec<u32>,
    /// See `min_level`.
    pub max_level: Vec<u32>,
    /// Weight of every attribute (positive).
    pub weights: Vec<f64>,
    /// The metric minimized.
    pub metric: Metric,
    /// `node_loss[j][level][code]`: loss of a cell of attribute `j` generalized to label
    /// `code` at `level` (between 0 and 1), for [`Metric::Loss`]; when empty, the
    /// normalized certainty penalty `(leaves under the label − 1) / (leaves − 1)`.
    pub node_loss: Vec<Vec<Vec<f64>>>,
}

/// Evaluation of one node.
#[derive(Debug, Clone, PartialEq)]
pub struct NodeEval {
    /// Whether the node satisfies the privacy models within the suppression limit.
    pub feasible: bool,
    /// Rows in classes below `k` or failing a model (suppressed if the node is chosen).
    pub suppressed: u64,
    /// Classes of the node, suppressed ones included; in a search's optimum, the classes
    /// the release shows (the suppressed rows one class when kept, none when dropped).
    pub classes: usize,
    /// The metric's value.
    pub cost: f64,
}

/// The optimum.
#[derive(Debug, Clone, PartialEq)]
pub struct Optimum {
    /// Level of every attribute.
    pub levels: Vec<u32>,
    /// Its evaluation.
    pub eval: NodeEval,
    /// `suppressed[t]`: whether input tuple `t` lies in a suppressed class.
    pub suppressed: Vec<bool>,
    /// Nodes in the lattice (within the level bounds).
    pub nodes: usize,
    /// Nodes grouped (from the histogram or by roll-up).
    pub checked: usize,
    /// Nodes grouped by roll-up from a cached finer node or from the base (the
    /// histogram's classes at the finest node still to be checked), hubs included
    /// (nodes rolled up from a large base on the way to others).
    pub rolled_up: usize,
    /// Nodes skipped because predictive tagging already knew they suppress too much.
    pub tagged: usize,
}

/// One class of a node: its generalized codes (packed into a key of type `K`) and its
/// row count.
pub(super) type Class<K> = (K, u64);

/// Nodes phase 1 may still check that must lie above a hub (see `walk::State::hub`): a
/// hub pays only when enough nodes will roll up from it.
pub(super) const HUB_CANDIDATES: usize = 100;

/// Histograms of fewer tuples get no guess of where a path turns within the limit (see
/// `guess::Guess`): checking their nodes is cheap.
pub(super) const GUESS_TUPLES: usize = 1 << 16;
