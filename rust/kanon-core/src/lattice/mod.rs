//! Optimal full-domain generalization: the lattice of level vectors (one level per
//! quasi-identifier for the whole table) searched for the node of lowest cost whose
//! equivalence classes satisfy k-anonymity once at most a given number of rows are
//! suppressed (ARX's search, Prasser et al.).
//!
//! The input is a histogram of distinct leaf-code tuples with their counts, so a node is
//! checked by grouping at most one entry per distinct tuple. The search is exact:
//!
//! * every node gets a **lower bound** of its cost that is also a lower bound of every
//!   coarser node (the generalization part of the metric, counting every row as kept;
//!   for the class-size metrics a bound from the number of labels);
//! * nodes are visited in order of their lower bound and the search stops at the first
//!   bound above the best cost found (branch and bound);
//! * a node whose classes need more suppression than allowed tags all finer nodes the
//!   same way without grouping them (**predictive tagging**: the rows in classes of
//!   fewer than k can only grow when a node is made finer);
//! * the search **rolls up** the classes of a cached finer node (merging classes by the
//!   parent maps of the levels that differ), which touches one entry per class instead
//!   of one per distinct tuple; without one, it rolls up from a **base**: the histogram
//!   grouped once at the finest node every node still to be checked lies above (it
//!   rises as nodes get classified); from a large base, nodes that differ high in the
//!   lattice first roll up a **hub**, the finest node below two of them, which later
//!   nodes above it roll up from (`State::hub`);
//! * every feasible node met while classifying gives an **incumbent** cost; unclassified
//!   nodes whose lower bound exceeds it are not classified at all (the bound only grows
//!   going up, so neither they nor their coarser nodes can win);
//! * with suppression, a node's bound is raised by the **suppression penalty** of the
//!   coarsest node checked above it (for the loss and height metrics: the rows below k
//!   at a coarser node are below k at every finer one and cost at least as much there).
//!
//! Grouping uses an open-addressing table sized by the number of possible labels; for
//! large inputs another thread computes the next chunk of keys while one sums the
//! current chunk. Results do not depend on the number of threads.
//!
//! Suppression: the rows of classes with fewer than `k` rows are suppressed (all their
//! quasi-identifiers become `*`) if they are at most `max_suppressed`. When suppressed
//! rows stay in the release they form one more class, which must then hold at least `k`
//! rows itself; this makes the feasible set of nodes non-monotone, so only the bound on
//! suppressed rows (which is monotone) is used for tagging.

use std::rc::Rc;

use crate::cancel;
use crate::error::{KernelError, Result};
use crate::hierarchy::{check_histogram, Hierarchy};
use crate::models::{ModelCheck, PrivacyModels};

mod group;
mod models;

use group::{sum_items, KeyMap, PackedKey, PARALLEL_ITEMS};
use models::Verdict;
pub use models::{ModelInput, NO_LABEL};
use rayon::prelude::*;

const KERNEL: &str = "optimal";

/// Largest lattice the search accepts (nodes).
const MAX_NODES: u128 = 1 << 26;

/// Relative tolerance under which two costs are equal (ties are then broken by the
/// level vector).
const TIE: f64 = 1e-12;

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
    /// Classes of the node, suppressed ones included.
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
type Class<K> = (K, u64);

/// The search state over one histogram.
struct Search<'a> {
    m: usize,
    tuples: &'a [u32],
    counts: &'a [u64],
    hierarchies: &'a [Hierarchy],
    options: &'a LatticeOptions,
    rows: u64,
    /// Bits of attribute `j`'s codes in a packed key and their shift.
    bits: Vec<u32>,
    /// Whether packed keys fit in 63 bits (grouping then uses `u64` keys).
    narrow: bool,
    shift: Vec<u32>,
    /// `parent[j][l][code]`: the label at level `l + 1` of label `code` at level `l`.
    parent: Vec<Vec<Vec<u32>>>,
    /// Per attribute and level, the generalization part of the metric summed over all
    /// rows (the additive lower bound), and per label the per-row cost.
    additive: Vec<Vec<f64>>,
    per_label: Vec<Vec<Vec<f64>>>,
    /// Nodes: levels = min_level + digits in mixed radix `span`; a digit of attribute
    /// `j` counts `stride[j]` in a node's index.
    span: Vec<u32>,
    stride: Vec<usize>,
    nodes: usize,
    /// The models besides k, checked class by class (None: k-anonymity only).
    check: Option<ModelCheck>,
    /// Sensitive entries of tuple `t`: `entries[entry_start[t]..entry_start[t + 1]]`.
    entry_start: Vec<usize>,
    entries: Vec<(u32, u64)>,
    /// Population: offset of attribute `j` in a path, path length, rows.
    path_offset: Vec<usize>,
    path_len: usize,
    population: &'a [u32],
    population_counts: &'a [u64],
    population_rows: u64,
    /// The models besides k (for messages).
    models: PrivacyModels,
    /// Whether the rows of failing classes are monotone (phase 1 may tag by them);
    /// otherwise phase 1 tags by the rows below k only, a bound of them.
    tag_full: bool,
    /// Nodes phase 1 may still check that must lie above a hub ([`State::hub`]):
    /// [`HUB_CANDIDATES`], changed only by tests.
    hub_candidates: usize,
}

impl<'a> Search<'a> {
    fn new(
        tuples: &'a [u32],
        m: usize,
        counts: &'a [u64],
        hierarchies: &'a [Hierarchy],
        options: &'a LatticeOptions,
        input: &ModelInput<'a>,
    ) -> Result<Self> {
        let invalid = |message: String| KernelError::InvalidArgument {
            kernel: KERNEL,
            message,
        };
        let rows = check_histogram(KERNEL, tuples, m, counts, hierarchies)?;
        for (name, list) in [
            ("min_level", options.min_level.len()),
            ("max_level", options.max_level.len()),
            ("weights", options.weights.len()),
        ] {
            if list != m {
                return Err(KernelError::LengthMismatch {
                    kernel: KERNEL,
                    argument: name,
                    got: list,
                    expected: m,
                });
            }
        }
        if options.k == 0 {
            return Err(invalid("k must be at least 1".to_owned()));
        }
        for (j, h) in hierarchies.iter().enumerate() {
            let (lo, hi) = (options.min_level[j], options.max_level[j]);
            if lo > hi || hi as usize > h.height() {
                return Err(invalid(format!(
                    "levels of attribute {j} must satisfy min_level <= max_level <= {}, got \
                     {lo} and {hi}",
                    h.height()
                )));
            }
            let w = options.weights[j];
            if !(w.is_finite() && w > 0.0) {
                return Err(invalid(format!(
                    "the weight of attribute {j} must be positive and finite, got {w}"
                )));
            }
        }
        if options.metric == Metric::Loss && !options.node_loss.is_empty() {
            if options.node_loss.len() != m {
                return Err(KernelError::LengthMismatch {
                    kernel: KERNEL,
                    argument: "node_loss",
                    got: options.node_loss.len(),
                    expected: m,
                });
            }
            for (j, (levels, h)) in options.node_loss.iter().zip(hierarchies).enumerate() {
                let shape_ok = levels.len() == h.height() + 1
                    && levels
                        .iter()
                        .enumerate()
                        .all(|(l, v)| v.len() == h.width(l) as usize);
                if !shape_ok {
                    return Err(invalid(format!(
                        "node_loss of attribute {j} needs one value per label of every level"
                    )));
                }
                if let Some(bad) = levels.iter().flatten().find(|x| !(0.0..=1.0).contains(*x)) {
                    return Err(invalid(format!(
                        "node_loss of attribute {j} must lie in [0, 1], got {bad}"
                    )));
                }
                // The bounds need a label to lose at least as much as any label below it.
                for l in 0..h.height() {
                    for leaf in 0..h.leaves() as u32 {
                        let (below, above) = (h.generalize(l, leaf), h.generalize(l + 1, leaf));
                        if levels[l + 1][above as usize] < levels[l][below as usize] {
                            return Err(invalid(format!(
                                "node_loss of attribute {j} decreases from level {l} to level                                  {}: a label must lose at least as much as the labels under it",
                                l + 1
                            )));
                        }
                    }
                }
            }
        }
        let span: Vec<u32> = (0..m)
            .map(|j| options.max_level[j] - options.min_level[j] + 1)
            .collect();
        let nodes: u128 = span.iter().map(|&s| u128::from(s)).product();
        if nodes > MAX_NODES {
            return Err(invalid(format!(
                "the lattice has {nodes} nodes, more than the limit of {MAX_NODES}; narrow it \
                 with min_level / max_level or use fewer quasi-identifiers"
            )));
        }
        let bits = key_bits(hierarchies)?;
        let mut shift = Vec::with_capacity(m);
        let mut acc = 0;
        for &b in &bits {
            shift.push(acc);
            acc += b;
        }
        let parent = hierarchies.iter().map(parents).collect();
        let mut stride = vec![1usize; m];
        for j in (0..m.saturating_sub(1)).rev() {
            stride[j] = stride[j + 1] * span[j + 1] as usize;
        }
        let mut search = Self {
            m,
            tuples,
            counts,
            hierarchies,
            options,
            rows,
            narrow: bits.iter().sum::<u32>() <= 63,
            hub_candidates: HUB_CANDIDATES,
            bits,
            shift,
            parent,
            additive: Vec::new(),
            per_label: Vec::new(),
            span,
            stride,
            nodes: nodes as usize,
            check: None,
            entry_start: Vec::new(),
            entries: Vec::new(),
            path_offset: Vec::new(),
            path_len: 0,
            population: input.population_paths,
            population_counts: input.population_counts,
            population_rows: 0,
            models: input.models.clone(),
            tag_full: (options.max_suppressed == 0 && input.models.monotone_without_suppression())
                || input.models.failing_rows_monotone(),
        };
        search.load_models(input)?;
        search.per_label = (0..m).map(|j| search.label_costs(j)).collect();
        search.additive = (0..m).map(|j| search.level_sums(j)).collect();
        Ok(search)
    }

    /// Per level and label of attribute `j`, the metric's per-row generalization cost
    /// (weighted), for the additive metrics; empty levels otherwise.
    fn label_costs(&self, j: usize) -> Vec<Vec<f64>> {
        let h = &self.hierarchies[j];
        let w = self.options.weights[j];
        let height = h.height();
        match self.options.metric {
            Metric::Loss => (0..=height)
                .map(|l| {
                    if self.options.node_loss.is_empty() {
                        let mut under = vec![0u64; h.width(l) as usize];
                        for &code in h.level(l) {
                            under[code as usize] += 1;
                        }
                        let denominator = (h.leaves().max(2) - 1) as f64;
                        under
                            .iter()
                            .map(|&u| w * (u.saturating_sub(1)) as f64 / denominator)
                            .collect()
                    } else {
                        self.options.node_loss[j][l]
                            .iter()
                            .map(|&x| w * x)
                            .collect()
                    }
                })
                .collect(),
            Metric::Height => (0..=height)
                .map(|l| {
                    let cost = if height == 0 {
                        0.0
                    } else {
                        w * l as f64 / height as f64
                    };
                    vec![cost; h.width(l) as usize]
                })
                .collect(),
            _ => Vec::new(),
        }
    }

    /// Per level of attribute `j`, the generalization part of the metric over all rows.
    fn level_sums(&self, j: usize) -> Vec<f64> {
        let h = &self.hierarchies[j];
        let m = self.m;
        let height = h.height();
        match self.options.metric {
            Metric::Loss | Metric::Height => {
                // Rows per leaf, then per label.
                let mut per_leaf = vec![0u64; h.leaves()];
                for (row, &c) in self.tuples.chunks_exact(m).zip(self.counts) {
                    per_leaf[row[j] as usize] += c;
                }
                (0..=height)
                    .map(|l| {
                        let costs = &self.per_label[j][l];
                        per_leaf
                            .iter()
                            .enumerate()
                            .map(|(leaf, &c)| {
                                c as f64 * costs[h.generalize(l, leaf as u32) as usize]
                            })
                            .sum()
                    })
                    .collect()
            }
            Metric::Nue | Metric::NueNonMonotonic => {
                let w = self.options.weights[j];
                let mut per_leaf = vec![0u64; h.leaves()];
                for (row, &c) in self.tuples.chunks_exact(m).zip(self.counts) {
                    per_leaf[row[j] as usize] += c;
                }
                (0..=height)
                    .map(|l| {
                        let mut per_label = vec![0u64; h.width(l) as usize];
                        for (leaf, &c) in per_leaf.iter().enumerate() {
                            per_label[h.generalize(l, leaf as u32) as usize] += c;
                        }
                        w * per_leaf
                            .iter()
                            .enumerate()
                            .filter(|(_, &c)| c > 0)
                            .map(|(leaf, &c)| {
                                let under = per_label[h.generalize(l, leaf as u32) as usize];
                                c as f64 * (under as f64 / c as f64).log2()
                            })
                            .sum::<f64>()
                    })
                    .collect()
            }
            Metric::Dm | Metric::DmStar | Metric::Aecs => vec![0.0; height + 1],
        }
    }

    fn levels_of(&self, node: usize) -> Vec<u32> {
        (0..self.m).map(|j| self.level(node, j)).collect()
    }

    /// Attribute `j`'s level in `node`.
    fn level(&self, node: usize, j: usize) -> u32 {
        self.options.min_level[j] + self.digit(node, j) as u32
    }

    /// Attribute `j`'s level in `node` above its lowest level.
    fn digit(&self, node: usize, j: usize) -> usize {
        node / self.stride[j] % self.span[j] as usize
    }

    fn index_of(&self, levels: &[u32]) -> usize {
        levels.iter().enumerate().fold(0usize, |acc, (j, &l)| {
            acc * self.span[j] as usize + (l - self.options.min_level[j]) as usize
        })
    }

    /// A lower bound of the cost of the node and of every coarser node.
    fn lower_bound(&self, levels: &[u32]) -> f64 {
        let n = self.rows as f64;
        match self.options.metric {
            Metric::Loss => {
                let total: f64 = self.options.weights.iter().sum();
                let sum: f64 = (0..self.m)
                    .map(|j| self.additive[j][levels[j] as usize])
                    .sum();
                if self.rows == 0 {
                    0.0
                } else {
                    sum / (n * total)
                }
            }
            Metric::Height | Metric::Nue | Metric::NueNonMonotonic => (0..self.m)
                .map(|j| self.additive[j][levels[j] as usize])
                .sum(),
            Metric::Dm | Metric::DmStar => {
                // At most Π widths classes (and at most one per distinct tuple), and the
                // sum of squares of sizes adding up to N is smallest when they are equal.
                let classes = self.max_classes(levels);
                if classes == 0.0 {
                    0.0
                } else {
                    n * n / classes
                }
            }
            Metric::Aecs => {
                let classes = self.max_classes(levels);
                if classes == 0.0 {
                    0.0
                } else {
                    (n - self.options.max_suppressed.min(self.rows) as f64).max(0.0)
                        / (classes + 1.0)
                }
            }
        }
    }

    fn max_classes(&self, levels: &[u32]) -> f64 {
        let product: f64 = (0..self.m)
            .map(|j| f64::from(self.hierarchies[j].width(levels[j] as usize)))
            .product();
        product.min(self.counts.len() as f64)
    }

    /// Pack the generalized codes of a tuple at `levels`.
    fn key(&self, row: &[u32], levels: &[u32]) -> u128 {
        row.iter()
            .zip(levels)
            .enumerate()
            .fold(0u128, |key, (j, (&code, &l))| {
                key | u128::from(self.hierarchies[j].generalize(l as usize, code)) << self.shift[j]
            })
    }

    /// Per attribute, the packed contribution of every leaf at `levels` (its label code
    /// shifted into place), so that a key is the OR of one lookup per attribute.
    fn key_tables(&self, levels: &[u32]) -> Vec<Vec<u128>> {
        (0..self.m)
            .map(|j| {
                self.hierarchies[j]
                    .level(levels[j] as usize)
                    .iter()
                    .map(|&code| u128::from(code) << self.shift[j])
                    .collect()
            })
            .collect()
    }

    fn code(&self, key: u128, j: usize) -> u32 {
        ((key >> self.shift[j]) & ((1u128 << self.bits[j]) - 1)) as u32
    }

    /// The classes of a node, grouped from the histogram.
    fn group<K: PackedKey>(&self, levels: &[u32], out: Vec<Class<K>>) -> Vec<Class<K>> {
        let expected = self.expected_classes(levels, self.counts.len());
        sum_items(self.counts.len(), self.keyed(levels), expected, out)
    }

    /// The histogram's tuples packed at `levels`, one class each (equal keys are not
    /// merged: only a source to roll up from, which merges them).
    fn packed<K: PackedKey>(&self, levels: &[u32]) -> Vec<Class<K>> {
        let keyed = self.keyed(levels);
        if self.counts.len() < PARALLEL_ITEMS {
            (0..self.counts.len()).map(keyed).collect()
        } else {
            (0..self.counts.len()).into_par_iter().map(keyed).collect()
        }
    }

    /// Tuple `t` of the histogram as a class at `levels`: its packed key and count.
    fn keyed<K: PackedKey>(&self, levels: &[u32]) -> impl Fn(usize) -> Class<K> + Sync + '_ {
        // Per attribute, the packed contribution of every leaf: a key is the OR of one
        // lookup per attribute.
        let tables: Vec<Vec<K>> = self
            .key_tables(levels)
            .iter()
            .map(|t| t.iter().map(|&x| K::narrow(x)).collect())
            .collect();
        let m = self.m;
        move |t| {
            let row = &self.tuples[t * m..(t + 1) * m];
            let key = row
                .iter()
                .zip(&tables)
                .fold(K::default(), |key, (&code, table)| {
                    key | table[code as usize]
                });
            (key, self.counts[t])
        }
    }

    /// How many classes a node may have at most, given `source` classes below it.
    fn expected_classes(&self, levels: &[u32], source: usize) -> usize {
        let labels = (0..self.m).try_fold(1usize, |acc, j| {
            acc.checked_mul(self.hierarchies[j].width(levels[j] as usize) as usize)
        });
        labels.map_or(source, |l| l.min(source))
    }

    /// The classes of the node at `levels`, rolled up from the classes of the finer node
    /// at `below` (every level at most the target's).
    fn roll_up_to<K: PackedKey>(
        &self,
        below: &[Class<K>],
        levels_below: &[u32],
        levels: &[u32],
        out: Vec<Class<K>>,
    ) -> Vec<Class<K>> {
        // Per changed attribute: its shift, its code mask, and the packed label at the
        // target level of every label at the finer level (parent maps composed once).
        let mut keep = u128::MAX;
        let changed: Vec<(u32, u64, Vec<K>)> = (0..self.m)
            .filter(|&j| levels_below[j] != levels[j])
            .map(|j| {
                keep &= !(((1u128 << self.bits[j]) - 1) << self.shift[j]);
                let width = self.hierarchies[j].width(levels_below[j] as usize);
                let table = (0..width)
                    .map(|code| {
                        let mut code = code;
                        for l in levels_below[j]..levels[j] {
                            code = self.parent[j][l as usize][code as usize];
                        }
                        K::narrow(u128::from(code) << self.shift[j])
                    })
                    .collect();
                (self.shift[j], (1u64 << self.bits[j]) - 1, table)
            })
            .collect();
        let keep = K::narrow(keep);
        let up = |&(key, size): &Class<K>| -> (K, u64) {
            let up = changed.iter().fold(key & keep, |up, (shift, mask, table)| {
                up | table[(key.field(*shift) & mask) as usize]
            });
            (up, size)
        };
        let expected = self.expected_classes(levels, below.len());
        sum_items(below.len(), |c| up(&below[c]), expected, out)
    }

    /// For the loss and height metrics, what suppressing the rows of classes below k
    /// adds to the cost beyond the additive part (Σ over those rows of the weights
    /// minus the row's generalization cost), unnormalized; 0 for the other metrics.
    ///
    /// It only shrinks as a node gets coarser (a class below k at a coarser node is a
    /// union of classes below k at a finer one, whose rows cost no more there), so the
    /// value at a node bounds it at every finer node; with models, the rows failing
    /// them come on top, so it stays a lower bound.
    fn penalty<K: PackedKey>(&self, levels: &[u32], classes: &[Class<K>]) -> f64 {
        if !matches!(self.options.metric, Metric::Loss | Metric::Height) {
            return 0.0;
        }
        let k = self.options.k;
        self.kept_penalty(levels, classes.iter().filter(|&&(_, size)| size < k))
    }

    /// Σ over `classes` of rows · (total weight − the row's generalization cost).
    fn kept_penalty<'c, K: PackedKey>(
        &self,
        levels: &[u32],
        classes: impl Iterator<Item = &'c Class<K>>,
    ) -> f64 {
        let total: f64 = self.options.weights.iter().sum();
        // Per attribute: its shift, its code mask and the costs of its labels at the level.
        let fields: Vec<(u32, u64, &[f64])> = (0..self.m)
            .map(|j| {
                (
                    self.shift[j],
                    (1u64 << self.bits[j]) - 1,
                    self.per_label[j][levels[j] as usize].as_slice(),
                )
            })
            .collect();
        classes
            .map(|&(key, size)| {
                let row: f64 = fields
                    .iter()
                    .map(|&(shift, mask, costs)| costs[(key.field(shift) & mask) as usize])
                    .sum();
                size as f64 * (total - row)
            })
            .sum()
    }

    /// The cost of a node of the loss or height metric from its additive part and its
    /// suppression penalty.
    fn additive_cost(&self, levels: &[u32], penalty: f64) -> f64 {
        let sum: f64 = (0..self.m)
            .map(|j| self.additive[j][levels[j] as usize])
            .sum::<f64>()
            + penalty;
        if self.options.metric == Metric::Loss {
            let total: f64 = self.options.weights.iter().sum();
            if self.rows == 0 {
                0.0
            } else {
                sum / (self.rows as f64 * total)
            }
        } else {
            sum
        }
    }

    /// Rows in classes below k.
    fn small_rows<K: PackedKey>(&self, classes: &[Class<K>]) -> u64 {
        classes
            .iter()
            .filter(|&&(_, s)| s < self.options.k)
            .map(|&(_, s)| s)
            .sum()
    }

    /// Evaluate a node from its classes.
    fn evaluate<K: PackedKey>(&self, levels: &[u32], classes: &[Class<K>]) -> NodeEval {
        self.evaluate_verdict(levels, classes, &self.verdict(levels, classes))
    }

    /// Whether a node that suppresses `suppressed` rows is feasible: within the limit,
    /// and the suppressed rows, when kept, form a class that satisfies k and the models
    /// (`star_ok`).
    fn feasible(&self, suppressed: u64, star_ok: bool) -> bool {
        suppressed <= self.options.max_suppressed
            && (suppressed == 0 || !self.options.keep_suppressed || star_ok)
    }

    /// Evaluate a node from its classes and their verdict.
    fn evaluate_verdict<K: PackedKey>(
        &self,
        levels: &[u32],
        classes: &[Class<K>],
        verdict: &Verdict,
    ) -> NodeEval {
        let suppressed = verdict.suppressed;
        let feasible = self.feasible(suppressed, verdict.star_ok);
        let n = self.rows as f64;
        let s = suppressed as f64;
        let small = || {
            classes
                .iter()
                .zip(&verdict.fails)
                .filter(|(_, &f)| f)
                .map(|(c, _)| c)
        };
        let kept = || {
            classes
                .iter()
                .zip(&verdict.fails)
                .filter(|(_, &f)| !f)
                .map(|(c, _)| c)
        };
        let cost = match self.options.metric {
            Metric::Loss | Metric::Height => {
                self.additive_cost(levels, self.kept_penalty(levels, small()))
            }
            Metric::Nue | Metric::NueNonMonotonic => {
                let mut sum: f64 = (0..self.m)
                    .map(|j| self.additive[j][levels[j] as usize])
                    .sum();
                if self.options.metric == Metric::NueNonMonotonic && suppressed > 0 {
                    for j in 0..self.m {
                        let mut per_label: Vec<(u32, u64)> = small()
                            .map(|&(key, size)| (self.code(key.wide(), j), size))
                            .collect();
                        per_label.sort_unstable();
                        let mut i = 0;
                        let mut penalty = 0.0;
                        while i < per_label.len() {
                            let label = per_label[i].0;
                            let mut c = 0u64;
                            while i < per_label.len() && per_label[i].0 == label {
                                c += per_label[i].1;
                                i += 1;
                            }
                            penalty += c as f64 * (s / c as f64).log2();
                        }
                        sum += self.options.weights[j] * penalty;
                    }
                }
                sum
            }
            Metric::DmStar => classes.iter().map(|&(_, size)| (size as f64).powi(2)).sum(),
            Metric::Dm => {
                kept().map(|&(_, size)| (size as f64).powi(2)).sum::<f64>()
                    + small().map(|&(_, size)| n * size as f64).sum::<f64>()
            }
            Metric::Aecs => {
                let kept_classes = kept().count() as f64;
                let (released, groups) = if self.options.keep_suppressed {
                    (n, kept_classes + f64::from(u8::from(suppressed > 0)))
                } else {
                    (n - s, kept_classes)
                };
                if groups == 0.0 {
                    0.0
                } else {
                    released / groups
                }
            }
        };
        NodeEval {
            feasible,
            suppressed,
            classes: classes.len(),
            cost,
        }
    }
}

/// `parent[l][code]`: the label at level `l + 1` above label `code` of level `l`.
fn parents(h: &Hierarchy) -> Vec<Vec<u32>> {
    (0..h.height())
        .map(|l| {
            let mut up = vec![0u32; h.width(l) as usize];
            for leaf in 0..h.leaves() as u32 {
                up[h.generalize(l, leaf) as usize] = h.generalize(l + 1, leaf);
            }
            up
        })
        .collect()
}

/// Whether `(cost, levels)` is better than `(best_cost, best_levels)`: a lower cost
/// (beyond the tie tolerance), then a lower sum of levels, then the lexicographically
/// smaller level vector.
fn better(cost: f64, levels: &[u32], best_cost: f64, best_levels: &[u32]) -> bool {
    let tolerance = TIE * best_cost.abs().max(cost.abs()).max(1.0);
    if cost < best_cost - tolerance {
        return true;
    }
    if cost > best_cost + tolerance {
        return false;
    }
    let (a, b): (u32, u32) = (levels.iter().sum(), best_levels.iter().sum());
    (a, levels) < (b, best_levels)
}

/// Evaluate one node: its classes, suppressed rows, feasibility and cost (for checks and
/// tests; the search uses the same code).
///
/// # Errors
/// As [`optimal`], and [`KernelError::InvalidArgument`] if `levels` is outside the
/// bounds.
pub fn evaluate_node(
    tuples: &[u32],
    m: usize,
    counts: &[u64],
    hierarchies: &[Hierarchy],
    levels: &[u32],
    options: &LatticeOptions,
    input: &ModelInput<'_>,
) -> Result<NodeEval> {
    let search = Search::new(tuples, m, counts, hierarchies, options, input)?;
    check_levels(&search, levels)?;
    Ok(if search.narrow {
        search.evaluate(levels, &search.group::<u64>(levels, Vec::new()))
    } else {
        search.evaluate(levels, &search.group::<u128>(levels, Vec::new()))
    })
}

fn check_levels(search: &Search<'_>, levels: &[u32]) -> Result<()> {
    let ok = levels.len() == search.m
        && levels.iter().enumerate().all(|(j, &l)| {
            (search.options.min_level[j]..=search.options.max_level[j]).contains(&l)
        });
    if ok {
        Ok(())
    } else {
        Err(KernelError::InvalidArgument {
            kernel: KERNEL,
            message: format!("levels {levels:?} are outside the lattice"),
        })
    }
}

/// The bits of each attribute's leaf code in a packed tuple: enough for its leaves'
/// codes (0 for a single leaf). Attribute 0 takes the lowest bits.
///
/// # Errors
/// [`KernelError::InvalidArgument`] when the bits add up to more than 127.
pub fn key_bits(hierarchies: &[Hierarchy]) -> Result<Vec<u32>> {
    let bits: Vec<u32> = hierarchies
        .iter()
        .map(|h| u32::BITS - (h.leaves().max(1) as u32 - 1).leading_zeros())
        .collect();
    let total: u32 = bits.iter().sum();
    if total > 127 {
        return Err(KernelError::InvalidArgument {
            kernel: KERNEL,
            message: format!(
                "the quasi-identifiers have too many distinct values to pack a tuple into \
                 128 bits ({total} bits)"
            ),
        });
    }
    Ok(bits)
}

/// The leaf codes of tuples packed as [`key_bits`] lays them out, each key split into
/// its low and high 64 bits: `m` codes per tuple, attribute 0 first.
///
/// # Errors
/// [`KernelError::LengthMismatch`] when `low` and `high` differ in length, and
/// [`KernelError::InvalidArgument`] as [`key_bits`] or for a key with bits set above
/// the packed codes.
///
/// # Examples
/// ```
/// use kanon_core::lattice::unpack_keys;
/// use kanon_core::Hierarchy;
/// let four = Hierarchy::try_from_levels(&[&[0, 1, 2, 3], &[0, 0, 0, 0]]).unwrap();
/// let two = Hierarchy::try_from_levels(&[&[0, 1], &[0, 0]]).unwrap();
/// // Codes (3, 1): 3 in bits 0-1, 1 in bit 2.
/// assert_eq!(unpack_keys(&[0b111], &[0], &[four, two]).unwrap(), vec![3, 1]);
/// ```
pub fn unpack_keys(low: &[u64], high: &[u64], hierarchies: &[Hierarchy]) -> Result<Vec<u32>> {
    if low.len() != high.len() {
        return Err(KernelError::LengthMismatch {
            kernel: KERNEL,
            argument: "high",
            got: high.len(),
            expected: low.len(),
        });
    }
    let bits = key_bits(hierarchies)?;
    let total: u32 = bits.iter().sum();
    let mut out = Vec::with_capacity(low.len() * bits.len());
    for (&lo, &hi) in low.iter().zip(high) {
        let mut key = u128::from(hi) << 64 | u128::from(lo);
        if total < 128 && key >> total != 0 {
            return Err(KernelError::InvalidArgument {
                kernel: KERNEL,
                message: format!("packed tuple {key} has bits set above its {total} bits"),
            });
        }
        for &b in &bits {
            out.push((key & ((1u128 << b) - 1)) as u32);
            key >>= b;
        }
    }
    Ok(out)
}

/// The optimal full-domain generalization of a histogram of tuples.
///
/// Finds the level vector (within `min_level..=max_level`) of lowest cost under
/// `options.metric` among those whose classes of fewer than `k` rows hold at most
/// `max_suppressed` rows (and, with `keep_suppressed`, none or at least `k`). Ties are
/// broken by the lower sum of levels, then the lexicographically smaller vector.
///
/// # Arguments
/// * `tuples` – row-major leaf codes, `m` per tuple (distinct tuples of a table, or any
///   rows: equal tuples simply add up).
/// * `counts` – rows per tuple.
/// * `hierarchies` – one per attribute.
/// * `options` – the privacy model, the suppression limit, the level bounds, the weights
///   and the metric.
///
/// # Returns
/// The optimum with its evaluation and the tuples it suppresses, and counters of the
/// search.
///
/// # Errors
/// [`KernelError::LengthMismatch`] / [`KernelError::InvalidArgument`] for inconsistent
/// inputs (lengths, codes outside a hierarchy, bad bounds or weights, `k = 0`, a lattice
/// of more than 2^26 nodes, tuples that do not pack into 128 bits), and
/// [`KernelError::InvalidArgument`] naming the smallest suppression that would do if no
/// node is feasible.
///
/// # Complexity
/// O(V · m) to rank the V nodes by their lower bounds, plus, for every node grouped,
/// O(n · m) from the histogram of n tuples or O(c) by roll-up from a node of c classes.
///
/// # Examples
/// ```
/// use kanon_core::lattice::{optimal, LatticeOptions, Metric};
/// use kanon_core::Hierarchy;
/// let age = Hierarchy::try_from_levels(&[&[0, 1, 2, 3], &[0, 0, 1, 1], &[0, 0, 0, 0]]).unwrap();
/// let options = LatticeOptions {
///     k: 2,
///     max_suppressed: 0,
///     keep_suppressed: true,
///     min_level: vec![0],
///     max_level: vec![2],
///     weights: vec![1.0],
///     metric: Metric::Loss,
///     node_loss: Vec::new(),
/// };
/// // Ages 0, 1, 2, 3 once each: pairs at level 1 are 2-anonymous.
/// let best = optimal(&[0, 1, 2, 3], 1, &[1, 1, 1, 1], &[age], &options).unwrap();
/// assert_eq!(best.levels, vec![1]);
/// assert!((best.eval.cost - 1.0 / 3.0).abs() < 1e-12);
/// ```
pub fn optimal(
    tuples: &[u32],
    m: usize,
    counts: &[u64],
    hierarchies: &[Hierarchy],
    options: &LatticeOptions,
) -> Result<Optimum> {
    optimal_with(
        tuples,
        m,
        counts,
        hierarchies,
        options,
        &ModelInput::default(),
    )
}

/// [`optimal`] under privacy models besides k-anonymity.
///
/// A class fails when it has fewer than `k` rows or violates a model of `input`; the
/// rows of failing classes are suppressed (at most `max_suppressed`), and when kept they
/// form one class (`*`) that must satisfy k and the models itself. When the rows of
/// failing classes are not monotone (entropy or recursive l-diversity, t-closeness or
/// δ-presence with suppression allowed, and δ-presence with a lower bound always),
/// predictive tagging uses the rows below k, a monotone lower bound of them, and every
/// candidate is then checked in full.
///
/// # Errors
/// As [`optimal`], and [`KernelError::InvalidArgument`] / [`KernelError::LengthMismatch`]
/// for model parameters out of range, sensitive entries that do not add up to the
/// tuples' counts, or table rows missing from the population.
pub fn optimal_with(
    tuples: &[u32],
    m: usize,
    counts: &[u64],
    hierarchies: &[Hierarchy],
    options: &LatticeOptions,
    input: &ModelInput<'_>,
) -> Result<Optimum> {
    cancel::check("optimal")?;
    let search = Search::new(tuples, m, counts, hierarchies, options, input)?;
    if search.narrow {
        search_lattice::<u64>(&search)
    } else {
        search_lattice::<u128>(&search)
    }
}

/// [`optimal_with`] over a validated search, with class keys of type `K`.
fn search_lattice<K: PackedKey>(search: &Search<'_>) -> Result<Optimum> {
    let (options, tuples, m) = (search.options, search.tuples, search.m);
    let nodes = search.nodes;
    let mut state = State::<K>::new(search);
    // Phase 1: which nodes keep their classes below k within the suppression limit.
    state.classify();
    cancel::check("optimal")?;
    state.candidates = Vec::new();
    // Phase 2: branch and bound over those nodes in order of their lower bounds.
    // The cost bound of every node, raised by the suppression penalty of the coarsest
    // node checked above it in phase 1 (the penalty only shrinks going up).
    let penalties = state.penalties_above();
    let bounds: Vec<f64> = (0..nodes)
        .map(|v| {
            let levels = search.levels_of(v);
            if penalties[v] > 0.0 {
                search.additive_cost(&levels, penalties[v])
            } else {
                state.bounds[v]
            }
        })
        .collect();
    let mut order: Vec<usize> = (0..nodes)
        .filter(|&v| state.status[v] == Status::Within)
        .collect();
    order.sort_unstable_by(|&a, &b| bounds[a].total_cmp(&bounds[b]).then(a.cmp(&b)));
    // With no suppression allowed, a node within the limit suppresses nothing, and the
    // additive metrics equal their bound.
    let exact_bound = options.max_suppressed == 0
        && search.tag_full
        && matches!(
            options.metric,
            Metric::Loss | Metric::Height | Metric::Nue | Metric::NueNonMonotonic
        );
    let mut best: Option<(Vec<u32>, NodeEval)> = None;
    for &v in &order {
        // Each node groups every row: poll once per node.
        cancel::check("optimal")?;
        if let Some((_, eval)) = &best {
            let tolerance = TIE * eval.cost.abs().max(1.0);
            if bounds[v] > eval.cost + tolerance {
                break;
            }
        }
        let levels = search.levels_of(v);
        let eval = if exact_bound {
            NodeEval {
                feasible: true,
                suppressed: 0,
                classes: 0,
                cost: bounds[v],
            }
        } else {
            let classes = state.classes(&levels);
            search.evaluate(&levels, &classes)
        };
        if eval.feasible
            && best
                .as_ref()
                .is_none_or(|(bl, be)| better(eval.cost, &levels, be.cost, bl))
        {
            best = Some((levels, eval));
        }
    }
    let Some((levels, _)) = best else {
        return Err(state.infeasible());
    };
    let classes = state.classes(&levels);
    let verdict = search.verdict(&levels, &classes);
    let eval = search.evaluate_verdict(&levels, &classes, &verdict);
    let small: KeyMap<()> = classes
        .iter()
        .zip(&verdict.fails)
        .filter(|(_, &f)| f)
        .map(|(&(key, _), _)| (key.wide(), ()))
        .collect();
    let suppressed = tuples
        .chunks_exact(m)
        .map(|row| small.contains_key(&search.key(row, &levels)))
        .collect();
    Ok(Optimum {
        levels,
        eval,
        suppressed,
        nodes,
        checked: state.checked,
        rolled_up: state.rolled_up,
        tagged: state.tagged,
    })
}

/// What phase 1 knows of a node.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
enum Status {
    Unknown,
    /// Its classes below k hold at most `max_suppressed` rows (so do those of every
    /// coarser node).
    Within,
    /// They hold more (so do those of every finer node).
    Over,
}

/// A grouped node: its levels and classes.
type Grouped<K> = (Vec<u32>, Rc<Vec<Class<K>>>);

/// Whether the node at `finer` lies at or below the node at `levels` (every level at
/// most the other's): a source it can roll up from.
fn at_or_below(finer: &[u32], levels: &[u32]) -> bool {
    finer.iter().zip(levels).all(|(f, l)| f <= l)
}

/// The search's mutable state: statuses, the class cache and counters.
struct State<'s, 'a, K: PackedKey> {
    search: &'s Search<'a>,
    status: Vec<Status>,
    /// Grouped nodes kept for roll-up: levels and classes, most recent last.
    cache: Vec<Grouped<K>>,
    cached: usize,
    /// Class lists evicted from the cache, reused.
    spare: Vec<Vec<Class<K>>>,
    /// The source of a node with no cached finer node: the histogram packed at the
    /// lowest levels, rolled up as the finest node every node still to be checked lies
    /// above rises (see [`State::rebase`]).
    base: Option<Grouped<K>>,
    /// The last node rolled up from the base, or the last hub (see [`State::hub`]).
    from_base: Option<Vec<u32>>,
    /// Whether hubs have stopped (one held more than half the base's classes).
    hubs_off: bool,
    /// Nodes phase 1 may still check or start a path from (a superset: pruned lazily);
    /// empty once phase 1 is over.
    candidates: Vec<usize>,
    fewest_suppressed: u64,
    checked: usize,
    rolled_up: usize,
    tagged: usize,
    /// Suppression penalty (see `Search::penalty`) of every node checked in phase 1.
    penalty: Vec<f64>,
    /// Lower bound of the cost of every node (`Search::lower_bound`).
    bounds: Vec<f64>,
    /// The lowest cost of a feasible node checked so far.
    incumbent: f64,
    /// Checked nodes with a positive suppression penalty, largest first.
    penalized: Vec<(f64, Vec<u32>)>,
}

/// Classes kept in the roll-up cache at most (all nodes together).
const CACHE_CLASSES: usize = 1 << 24;

/// Bases of fewer classes get no hubs (see [`State::hub`]): rolling up from them is
/// cheap.
const HUB_BASE: usize = 1 << 16;

/// Nodes phase 1 may still check that must lie above a hub (see [`State::hub`]).
/// Measured on 1.2M generated rows (`lattice_file`, fastest of 5, three alternating
/// rounds): at 0 % suppression 0.58-0.64 s with 100 or 500 against 0.68-0.72 s
/// without hubs; at 5 % 0.48-0.53 s with 100 against 0.52-0.55 s.
const HUB_CANDIDATES: usize = 100;

impl<'s, 'a, K: PackedKey> State<'s, 'a, K> {
    fn new(search: &'s Search<'a>) -> Self {
        Self {
            search,
            status: vec![Status::Unknown; search.nodes],
            cache: Vec::new(),
            cached: 0,
            spare: Vec::new(),
            base: None,
            from_base: None,
            hubs_off: false,
            candidates: (0..search.nodes).collect(),
            fewest_suppressed: u64::MAX,
            checked: 0,
            rolled_up: 0,
            tagged: 0,
            penalty: vec![0.0; search.nodes],
            bounds: (0..search.nodes)
                .map(|v| search.lower_bound(&search.levels_of(v)))
                .collect(),
            incumbent: f64::INFINITY,
            penalized: Vec::new(),
        }
    }

    /// Per node, the largest penalty recorded at it or at any coarser node: a lower
    /// bound of its own penalty.
    fn penalties_above(&self) -> Vec<f64> {
        let search = self.search;
        let mut out = self.penalty.clone();
        // A coarser neighbour has a larger index: sweep downwards.
        for v in (0..search.nodes).rev() {
            for j in 0..search.m {
                if search.digit(v, j) + 1 < search.span[j] as usize {
                    out[v] = out[v].max(out[v + search.stride[j]]);
                }
            }
        }
        out
    }

    /// The classes of a node: rolled up from the cached finer node with the fewest
    /// classes, else from the base (see [`State::rebase`]); cached.
    fn classes(&mut self, levels: &[u32]) -> Rc<Vec<Class<K>>> {
        let search = self.search;
        self.checked += 1;
        let below = |other: &[u32]| at_or_below(other, levels);
        let source = self
            .cache
            .iter()
            .enumerate()
            .filter(|(_, (other, _))| below(other))
            .min_by_key(|(i, (_, classes))| (classes.len(), usize::MAX - i))
            .map(|(i, _)| i);
        if let Some(i) = source.filter(|&i| self.cache[i].0 == levels) {
            return Rc::clone(&self.cache[i].1);
        }
        let mut source = source;
        if source.is_none() {
            self.rebase(levels);
            source = self.hub(levels);
        }
        let spare = self.spare.pop().unwrap_or_default();
        let finer = match (source, &self.base) {
            (Some(i), _) => Some(&self.cache[i]),
            (None, Some(base)) if below(&base.0) => Some(base),
            (None, _) => None,
        };
        let classes = Rc::new(match finer {
            Some((below, classes)) => {
                self.rolled_up += 1;
                search.roll_up_to(classes, below, levels, spare)
            }
            None => search.group(levels, spare),
        });
        self.keep(levels.to_vec(), Rc::clone(&classes));
        classes
    }

    /// Cache the classes of the node at `levels`, evicting the oldest nodes beyond
    /// [`CACHE_CLASSES`] (the newest stays).
    fn keep(&mut self, levels: Vec<u32>, classes: Rc<Vec<Class<K>>>) {
        self.cached += classes.len();
        self.cache.push((levels, classes));
        while self.cached > CACHE_CLASSES && self.cache.len() > 1 {
            let (_, old) = self.cache.remove(0);
            self.cached -= old.len();
            // Its memory is reused for the next node's classes (fresh memory costs a
            // page fault per page).
            if let Ok(old) = Rc::try_unwrap(old) {
                self.spare.push(old);
            }
        }
    }

    /// Before `levels` rolls up from a large base (no cached node lies below it): roll
    /// up and cache a hub, the finest node below both `levels` and the last node that
    /// rolled up from the base (or the last hub), when at least [`HUB_CANDIDATES`] nodes
    /// phase 1 may still check lie above it. Later nodes above the hub then roll up from
    /// it, not from the base: on 1.2M nearly distinct tuples, the nodes phase 1 checks
    /// differ in a few levels high in the lattice, and a roll-up from the base costs as
    /// much whatever its output. Hubs stop once one holds more than half the base's
    /// classes (they then save too little to pay for themselves). Returns the hub's
    /// index in the cache.
    fn hub(&mut self, levels: &[u32]) -> Option<usize> {
        let search = self.search;
        let previous = self.from_base.replace(levels.to_vec())?;
        let (base, classes) = self.base.as_ref()?;
        if self.hubs_off || classes.len() < HUB_BASE {
            return None;
        }
        let meet: Vec<u32> = previous
            .iter()
            .zip(levels)
            .map(|(a, b)| *a.min(b))
            .collect();
        if !at_or_below(base, &meet) || meet == *base || meet == levels {
            return None;
        }
        let above = |v: usize| (0..search.m).all(|j| search.level(v, j) >= meet[j]);
        if self.candidates.iter().filter(|&&v| above(v)).count() < search.hub_candidates {
            return None;
        }
        let spare = self.spare.pop().unwrap_or_default();
        self.rolled_up += 1;
        let hub = search.roll_up_to(classes, base, &meet, spare);
        self.hubs_off = 2 * hub.len() > classes.len();
        self.from_base = Some(meet.clone());
        self.keep(meet, Rc::new(hub));
        Some(self.cache.len() - 1)
    }

    /// When no cached node lies below `levels`: make sure there is a base (first the
    /// histogram grouped at the lowest levels: packed keys, so a roll-up looks up only
    /// the attributes that change), and move it up to the finest node below `levels`
    /// and below every node phase 1 may still check (the levels' minimum over unknown
    /// nodes whose bound does not exceed the incumbent, and `levels`) if that lies above
    /// it. Later nodes then roll up from a base with fewer classes than the histogram
    /// has tuples.
    fn rebase(&mut self, levels: &[u32]) {
        let search = self.search;
        let mut candidates = std::mem::take(&mut self.candidates);
        candidates.retain(|&v| self.status[v] == Status::Unknown && !self.beyond_incumbent(v));
        self.candidates = candidates;
        let mut floor = levels.to_vec();
        for &v in &self.candidates {
            for (j, f) in floor.iter_mut().enumerate() {
                *f = (*f).min(search.level(v, j));
            }
        }
        let lowest = &search.options.min_level;
        let (base, classes) = self
            .base
            .get_or_insert_with(|| (lowest.clone(), Rc::new(search.packed(lowest))));
        if floor == levels || floor == *base {
            return;
        }
        // The floor only rises (candidates only leave), so the base lies below it.
        let above = if at_or_below(base, &floor) {
            search.roll_up_to(classes, base, &floor, Vec::new())
        } else {
            search.group(&floor, Vec::new())
        };
        self.base = Some((floor, Rc::new(above)));
    }

    /// Check one node's suppression and tag it and its coarser (within) or finer (over)
    /// nodes.
    fn check(&mut self, v: usize) -> Status {
        let search = self.search;
        let levels = search.levels_of(v);
        let classes = self.classes(&levels);
        // The verdict is needed for tagging by failing rows under models, and for a node
        // within the limit (its cost); it is computed once. Without models the failing
        // rows are the rows below k.
        let mut verdict = None;
        let suppressed = if search.tag_full && search.check.is_some() {
            verdict.insert(search.verdict(&levels, &classes)).suppressed
        } else {
            search.small_rows(&classes)
        };
        self.fewest_suppressed = self.fewest_suppressed.min(suppressed);
        if suppressed > search.options.max_suppressed {
            // Every finer node is over the limit too, so this node's penalty, a bound
            // for finer nodes, would never be read.
            self.tag(v, Status::Over);
            return Status::Over;
        }
        self.penalty[v] = search.penalty(&levels, &classes);
        if self.penalty[v] > 0.0 {
            // Kept by decreasing penalty: the first one above a node bounds its penalty.
            let at = self
                .penalized
                .partition_point(|(p, _)| *p >= self.penalty[v]);
            self.penalized.insert(at, (self.penalty[v], levels.clone()));
        }
        // A feasible node's cost bounds the optimum: nodes whose lower bound exceeds it
        // need no classification.
        let eval = if search.check.is_none()
            && matches!(search.options.metric, Metric::Loss | Metric::Height)
        {
            // What `evaluate_verdict` computes, from the penalty (the failing classes
            // are those below k, and their class of '*' needs k rows).
            NodeEval {
                feasible: search.feasible(suppressed, suppressed >= search.options.k),
                suppressed,
                classes: classes.len(),
                cost: search.additive_cost(&levels, self.penalty[v]),
            }
        } else {
            let verdict = verdict.unwrap_or_else(|| search.verdict(&levels, &classes));
            search.evaluate_verdict(&levels, &classes, &verdict)
        };
        if eval.feasible {
            self.incumbent = self.incumbent.min(eval.cost);
        }
        self.tag(v, Status::Within);
        Status::Within
    }

    /// Whether node `v` cannot beat the best feasible cost found so far.
    fn beyond_incumbent(&self, v: usize) -> bool {
        let tolerance = TIE * self.incumbent.abs().max(1.0);
        self.bounds[v] > self.incumbent + tolerance
    }

    /// [`State::beyond_incumbent`] with the bound raised by the largest suppression
    /// penalty checked at a coarser node (for the start of a path).
    fn beyond_incumbent_penalized(&self, v: usize) -> bool {
        if self.beyond_incumbent(v) {
            return true;
        }
        if !self.incumbent.is_finite() {
            return false;
        }
        let search = self.search;
        let levels = search.levels_of(v);
        let tolerance = TIE * self.incumbent.abs().max(1.0);
        // Penalties are sorted largest first: stop at the first that could not prune.
        self.penalized
            .iter()
            .take_while(|(penalty, _)| {
                search.additive_cost(&levels, *penalty) > self.incumbent + tolerance
            })
            .any(|(_, above)| at_or_below(&levels, above))
    }

    /// Give `v` and every node above (within) or below (over) it `status`.
    fn tag(&mut self, v: usize, status: Status) {
        let search = self.search;
        let mut stack = vec![v];
        while let Some(u) = stack.pop() {
            if self.status[u] == status {
                continue;
            }
            if u != v {
                self.tagged += 1;
            }
            self.status[u] = status;
            for j in 0..search.m {
                let (stride, digit) = (search.stride[j], search.digit(u, j));
                let w = if status == Status::Within && digit + 1 < search.span[j] as usize {
                    u + stride
                } else if status == Status::Over && digit > 0 {
                    u - stride
                } else {
                    continue;
                };
                if self.status[w] != status {
                    stack.push(w);
                }
            }
        }
    }

    /// Phase 1 (Flash): from every unknown node, bottom-up, walk up through unknown
    /// coarser nodes (one level of one attribute at a time, the attribute with the most
    /// levels left first), then binary-search that path for its lowest node within the
    /// limit; every check tags a whole cone of the lattice. Nodes whose lower bound
    /// exceeds the cost of a feasible node already checked are left unclassified (the
    /// bound only grows going up, so they cannot be the optimum).
    ///
    /// Paths start from nodes by increasing sum of levels without suppression, and by
    /// increasing lower bound with it (a low incumbent early leaves more nodes
    /// unclassified; measured on Adult and 1.2M generated rows at 5 %: 388 → 379 and
    /// 273 → 123 nodes checked; at 0 % the order by levels checks fewer large nodes).
    fn classify(&mut self) {
        let search = self.search;
        let mut order: Vec<usize> = (0..search.nodes).collect();
        if search.options.max_suppressed == 0 {
            // The key allocates a level vector: compute it once per node.
            order.sort_by_cached_key(|&v| (search.levels_of(v).iter().sum::<u32>(), v));
        } else {
            let bounds = &self.bounds;
            order.sort_by(|&a, &b| bounds[a].total_cmp(&bounds[b]).then(a.cmp(&b)));
        }
        for v in order {
            // Cancelled: stop classifying; the caller returns the error.
            if cancel::requested() {
                return;
            }
            if self.status[v] != Status::Unknown || self.beyond_incumbent_penalized(v) {
                continue;
            }
            let mut path = vec![v];
            let mut levels = search.levels_of(v);
            loop {
                let step = (0..search.m)
                    .filter(|&j| levels[j] < search.options.max_level[j])
                    .filter(|&j| {
                        let mut next = levels.clone();
                        next[j] += 1;
                        self.status[search.index_of(&next)] == Status::Unknown
                    })
                    .max_by_key(|&j| (search.options.max_level[j] - levels[j], usize::MAX - j));
                let Some(j) = step else { break };
                levels[j] += 1;
                path.push(search.index_of(&levels));
            }
            // The statuses along the path are monotone: find the first node within.
            let (mut lo, mut hi) = (0usize, path.len());
            while lo < hi {
                let mid = (lo + hi) / 2;
                let status = match self.status[path[mid]] {
                    Status::Unknown => self.check(path[mid]),
                    known => known,
                };
                if status == Status::Within {
                    hi = mid;
                } else {
                    lo = mid + 1;
                }
            }
        }
    }

    /// The error when no node is feasible.
    fn infeasible(&self) -> KernelError {
        let options = self.search.options;
        let message = if let Some(models) = self
            .search
            .check
            .as_ref()
            .map(|_| self.search.models.describe(options.k))
        {
            format!(
                "no generalization satisfies {models} with at most {} suppressed rows{}; \
                 raise max_suppression, relax the models or allow higher levels",
                options.max_suppressed,
                if options.keep_suppressed {
                    " (suppressed rows kept in the release form one class of '*' that must \
                     satisfy them too, or be dropped)"
                } else {
                    ""
                }
            )
        } else if self.fewest_suppressed <= options.max_suppressed {
            format!(
                "no generalization satisfies k = {k}: the nodes within the suppression limit \
                 of {limit} rows would suppress between 1 and {below} rows, and suppressed \
                 rows kept in the release form one class of '*' that needs at least k rows; \
                 raise max_suppression, lower k, or drop the suppressed rows",
                k = options.k,
                limit = options.max_suppressed,
                below = options.k - 1,
            )
        } else {
            format!(
                "no generalization satisfies k = {} with at most {} suppressed rows (the \
                 fewest rows any node leaves in classes below k: {}); raise \
                 max_suppression, lower k or allow higher levels",
                options.k, options.max_suppressed, self.fewest_suppressed,
            )
        };
        KernelError::InvalidArgument {
            kernel: KERNEL,
            message,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// Hubs change where nodes roll up from, never the result: the same optimum, cost
    /// and suppressed tuples with hubs wherever allowed and with none, on a histogram
    /// large enough for hubs (checked: they add roll-ups).
    #[test]
    fn hubs_leave_the_optimum_unchanged() {
        let (m, leaves) = (6, 16u32);
        let leaf: Vec<u32> = (0..leaves).collect();
        let mid: Vec<u32> = (0..leaves).map(|x| x / 4).collect();
        let high: Vec<u32> = (0..leaves).map(|x| x / 8).collect();
        let top = vec![0; leaves as usize];
        let hierarchy = Hierarchy::try_from_levels(&[&leaf, &mid, &high, &top]).unwrap();
        let hierarchies = vec![hierarchy; m];
        let mut state = 12_345u64;
        let mut next = |n: u32| {
            state = state
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((state >> 33) % u64::from(n)) as u32
        };
        let rows = 150_000;
        let tuples: Vec<u32> = (0..rows * m).map(|_| next(leaves)).collect();
        let counts = vec![1u64; rows];
        for max_suppressed in [0, 10_000] {
            let options = LatticeOptions {
                k: 5,
                max_suppressed,
                keep_suppressed: true,
                min_level: vec![0; m],
                max_level: vec![3; m],
                weights: vec![1.0; m],
                metric: Metric::Loss,
                node_loss: Vec::new(),
            };
            let input = ModelInput::default();
            let mut search =
                Search::new(&tuples, m, &counts, &hierarchies, &options, &input).unwrap();
            search.hub_candidates = 1;
            let with = search_lattice::<u64>(&search).unwrap();
            search.hub_candidates = usize::MAX;
            let without = search_lattice::<u64>(&search).unwrap();
            assert_eq!(with.levels, without.levels);
            assert_eq!(with.eval.cost.to_bits(), without.eval.cost.to_bits());
            assert_eq!(with.eval.suppressed, without.eval.suppressed);
            assert_eq!(with.suppressed, without.suppressed);
            assert_eq!(with.checked, without.checked);
            assert!(
                with.rolled_up > without.rolled_up,
                "no hub at {max_suppressed}: {} roll-ups",
                with.rolled_up
            );
        }
    }
}
