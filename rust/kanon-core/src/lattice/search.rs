//! The search context: the histogram, hierarchies and metric, grouping a node's
//! classes (from the histogram or by rolling up a finer node) and evaluating a node.

use std::borrow::Cow;

use rayon::prelude::*;

use super::group::{sum_items, PackedKey, PARALLEL_ITEMS};
use super::input::{ModelInput, Verdict};
use super::keys::key_bits;
use super::tuples::Tuples;
use super::types::{
    Class, LatticeOptions, Metric, NodeEval, GUESS_TUPLES, HUB_CANDIDATES, KERNEL, MAX_NODES, TIE,
};
use crate::error::{KernelError, Result};
use crate::hierarchy::Hierarchy;
use crate::models::{ModelCheck, PrivacyModels};

/// The search state over one histogram.
pub(super) struct Search<'a> {
    pub(super) m: usize,
    pub(super) tuples: Tuples<'a>,
    pub(super) counts: &'a [u64],
    pub(super) hierarchies: &'a [Hierarchy],
    pub(super) options: &'a LatticeOptions,
    rows: u64,
    /// Bits of attribute `j`'s codes in a packed key and their shift.
    bits: Vec<u32>,
    /// Whether packed keys fit in 63 bits (grouping then uses `u64` keys).
    pub(super) narrow: bool,
    pub(super) shift: Vec<u32>,
    /// `parent[j][l][code]`: the label at level `l + 1` of label `code` at level `l`.
    parent: Vec<Vec<Vec<u32>>>,
    /// Per attribute and level, the generalization part of the metric summed over all
    /// rows (the additive lower bound), and per label the per-row cost.
    additive: Vec<Vec<f64>>,
    per_label: Vec<Vec<Vec<f64>>>,
    /// Nodes: levels = min_level + digits in mixed radix `span`; a digit of attribute
    /// `j` counts `stride[j]` in a node's index.
    pub(super) span: Vec<u32>,
    pub(super) stride: Vec<usize>,
    pub(super) nodes: usize,
    /// The models besides k, checked class by class (None: k-anonymity only).
    pub(super) check: Option<ModelCheck>,
    /// Sensitive entries of tuple `t`: `entries[entry_start[t]..entry_start[t + 1]]`.
    pub(super) entry_start: Vec<usize>,
    pub(super) entries: Vec<(u32, u64)>,
    /// Population: offset of attribute `j` in a path, path length, rows.
    pub(super) path_offset: Vec<usize>,
    pub(super) path_len: usize,
    pub(super) population: &'a [u32],
    pub(super) population_counts: &'a [u64],
    pub(super) population_rows: u64,
    /// The models besides k (for messages).
    pub(super) models: PrivacyModels,
    /// Whether the rows of failing classes are monotone (phase 1 may tag by them);
    /// otherwise phase 1 tags by the rows below k only, a bound of them.
    pub(super) tag_full: bool,
    /// Nodes phase 1 may still check that must lie above a hub ([`State::hub`]):
    /// [`HUB_CANDIDATES`], changed only by tests.
    pub(super) hub_candidates: usize,
    /// Tuples from which phase 1 guesses where a path turns within the limit
    /// ([`super::guess`]): [`GUESS_TUPLES`], changed only by tests.
    pub(super) guess_tuples: usize,
}

impl<'a> Search<'a> {
    pub(super) fn new(
        tuples: Tuples<'a>,
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
        let rows = tuples.check(m, counts, hierarchies)?;
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
            guess_tuples: GUESS_TUPLES,
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
        let height = h.height();
        match self.options.metric {
            Metric::Loss | Metric::Height => {
                let per_leaf = self.rows_per_leaf(j);
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
                let per_leaf = self.rows_per_leaf(j);
                (0..=height)
                    .map(|l| {
                        let per_label = self.rows_per_label(j, &per_leaf, l);
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

    /// Rows per leaf of attribute `j`.
    pub(super) fn rows_per_leaf(&self, j: usize) -> Vec<u64> {
        let mut per_leaf = vec![0u64; self.hierarchies[j].leaves()];
        for (t, &c) in self.counts.iter().enumerate() {
            per_leaf[self.leaf(t, j) as usize] += c;
        }
        per_leaf
    }

    /// Rows per label of attribute `j` at `level`, from its rows per leaf.
    pub(super) fn rows_per_label(&self, j: usize, per_leaf: &[u64], level: usize) -> Vec<u64> {
        let h = &self.hierarchies[j];
        let mut per_label = vec![0u64; h.width(level) as usize];
        for (leaf, &c) in per_leaf.iter().enumerate() {
            per_label[h.generalize(level, leaf as u32) as usize] += c;
        }
        per_label
    }

    pub(super) fn levels_of(&self, node: usize) -> Vec<u32> {
        (0..self.m).map(|j| self.level(node, j)).collect()
    }

    /// Attribute `j`'s level in `node`.
    pub(super) fn level(&self, node: usize, j: usize) -> u32 {
        self.options.min_level[j] + self.digit(node, j) as u32
    }

    /// Attribute `j`'s level in `node` above its lowest level.
    pub(super) fn digit(&self, node: usize, j: usize) -> usize {
        node / self.stride[j] % self.span[j] as usize
    }

    pub(super) fn index_of(&self, levels: &[u32]) -> usize {
        levels.iter().enumerate().fold(0usize, |acc, (j, &l)| {
            acc * self.span[j] as usize + (l - self.options.min_level[j]) as usize
        })
    }

    /// A lower bound of the cost of the node and of every coarser node.
    pub(super) fn lower_bound(&self, levels: &[u32]) -> f64 {
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

    /// The leaf code of tuple `t` in attribute `j`.
    pub(super) fn leaf(&self, t: usize, j: usize) -> u32 {
        match self.tuples {
            Tuples::Codes(codes) => codes[t * self.m + j],
            Tuples::Keys { low, high } => {
                self.code(u128::from(high[t]) << 64 | u128::from(low[t]), j)
            }
        }
    }

    /// Pack the generalized codes of tuple `t` at `levels`.
    pub(super) fn key(&self, t: usize, levels: &[u32]) -> u128 {
        levels.iter().enumerate().fold(0u128, |key, (j, &l)| {
            let label = self.hierarchies[j].generalize(l as usize, self.leaf(t, j));
            key | u128::from(label) << self.shift[j]
        })
    }

    fn code(&self, key: u128, j: usize) -> u32 {
        ((key >> self.shift[j]) & ((1u128 << self.bits[j]) - 1)) as u32
    }

    /// The classes of a node, grouped from the histogram; incomplete (false) once there
    /// are more than `cap` (see [`sum_items`]).
    pub(super) fn group<K: PackedKey>(
        &self,
        levels: &[u32],
        cap: usize,
        out: Vec<Class<K>>,
    ) -> (Vec<Class<K>>, bool) {
        let expected = self.expected_classes(levels, self.counts.len());
        sum_items(self.counts.len(), self.keyed(levels), expected, cap, out)
    }

    /// The number of classes above which a node leaves more than `max_suppressed` rows
    /// in classes below k. With C classes of N rows, S of them below k: the other C − S
    /// hold at least k rows each, so k·(C − S) ≤ N − S, and S·(k − 1) ≥ k·C − N; more
    /// than (N + max_suppressed·(k − 1)) / k classes force S > max_suppressed.
    pub(super) fn over_classes(&self) -> usize {
        let k = u128::from(self.options.k.max(1));
        let bound = (u128::from(self.rows) + u128::from(self.options.max_suppressed) * (k - 1)) / k;
        usize::try_from(bound).unwrap_or(usize::MAX)
    }

    /// The fewest rows in classes below k of a node with more than `cap` classes (see
    /// [`Search::over_classes`]): S ≥ (k·C − N) / (k − 1), rounded up.
    pub(super) fn small_rows_above(&self, cap: usize) -> u64 {
        let k = u128::from(self.options.k);
        let excess = (k * (cap as u128 + 1)).saturating_sub(u128::from(self.rows));
        let bound = if k < 2 { 0 } else { excess.div_ceil(k - 1) };
        u64::try_from(bound).unwrap_or(u64::MAX)
    }

    /// The histogram's tuples packed at `levels`, one class each (equal keys are not
    /// merged: only a source to roll up from, which merges them).
    pub(super) fn packed<K: PackedKey>(&self, levels: &[u32]) -> Vec<Class<K>> {
        let keyed = self.keyed(levels);
        if self.counts.len() < PARALLEL_ITEMS {
            (0..self.counts.len()).map(keyed).collect()
        } else {
            (0..self.counts.len()).into_par_iter().map(keyed).collect()
        }
    }

    /// Tuple `t` of the histogram as a class at `levels`: its packed key and count.
    fn keyed<K: PackedKey>(&self, levels: &[u32]) -> impl Fn(usize) -> Class<K> + Sync + '_ {
        // Per attribute, its label codes at the level and its shift: a key is the OR of
        // one lookup per attribute.
        let tables: Vec<(&[u32], u32)> = (0..self.m)
            .map(|j| (self.hierarchies[j].level(levels[j] as usize), self.shift[j]))
            .collect();
        let m = self.m;
        move |t| {
            let key = match self.tuples {
                Tuples::Codes(codes) => codes[t * m..(t + 1) * m]
                    .iter()
                    .zip(&tables)
                    .fold(K::default(), |key, (&code, &(table, shift))| {
                        key | K::place(table[code as usize], shift)
                    }),
                // The leaf codes lie at the shifts their labels take in the class key.
                Tuples::Keys { low, high } => {
                    let leaves = u128::from(high[t]) << 64 | u128::from(low[t]);
                    tables
                        .iter()
                        .enumerate()
                        .fold(K::default(), |key, (j, &(table, shift))| {
                            key | K::place(table[self.code(leaves, j) as usize], shift)
                        })
                }
            };
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
    /// at `below` (every level at most the target's); incomplete (false) once there are
    /// more than `cap`.
    pub(super) fn roll_up_to<K: PackedKey>(
        &self,
        below: &[Class<K>],
        levels_below: &[u32],
        levels: &[u32],
        cap: usize,
        out: Vec<Class<K>>,
    ) -> (Vec<Class<K>>, bool) {
        // Per changed attribute: its shift, its code mask, and the code at the target
        // level of every label at the finer level ([`Self::up_table`]; codes, not packed
        // keys: a wide attribute's table is 4 bytes a label, fewer cache misses).
        let mut keep = u128::MAX;
        let changed: Vec<(u32, u64, Cow<'_, [u32]>)> = (0..self.m)
            .filter(|&j| levels_below[j] != levels[j])
            .map(|j| {
                keep &= !(((1u128 << self.bits[j]) - 1) << self.shift[j]);
                (
                    self.shift[j],
                    (1u64 << self.bits[j]) - 1,
                    self.up_table(j, levels_below[j], levels[j]),
                )
            })
            .collect();
        let keep = K::narrow(keep);
        let up = |&(key, size): &Class<K>| -> (K, u64) {
            let up = changed.iter().fold(key & keep, |up, (shift, mask, table)| {
                up | K::place(table[(key.field(*shift) & mask) as usize], *shift)
            });
            (up, size)
        };
        let expected = self.expected_classes(levels, below.len());
        sum_items(below.len(), |c| up(&below[c]), expected, cap, out)
    }

    /// Attribute `j`'s label at level `to` of every label at level `from`: from the
    /// leaves, the hierarchy's own level (a wide attribute's leaves are many, and a
    /// roll-up from them would otherwise pay for a table as long); else the parent
    /// maps composed.
    fn up_table(&self, j: usize, from: u32, to: u32) -> Cow<'_, [u32]> {
        if from == 0 {
            return Cow::Borrowed(self.hierarchies[j].level(to as usize));
        }
        let mut table = self.parent[j][from as usize].clone();
        for l in from + 1..to {
            let parent = &self.parent[j][l as usize];
            for code in &mut table {
                *code = parent[*code as usize];
            }
        }
        Cow::Owned(table)
    }

    /// For the loss and height metrics, what suppressing the rows of classes below k
    /// adds to the cost beyond the additive part (Σ over those rows of the weights
    /// minus the row's generalization cost), unnormalized; 0 for the other metrics.
    ///
    /// It only shrinks as a node gets coarser (a class below k at a coarser node is a
    /// union of classes below k at a finer one, whose rows cost no more there), so the
    /// value at a node bounds it at every finer node; with models, the rows failing
    /// them come on top, so it stays a lower bound.
    pub(super) fn penalty<K: PackedKey>(&self, levels: &[u32], classes: &[Class<K>]) -> f64 {
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
    pub(super) fn additive_cost(&self, levels: &[u32], penalty: f64) -> f64 {
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
    pub(super) fn small_rows<K: PackedKey>(&self, classes: &[Class<K>]) -> u64 {
        classes
            .iter()
            .filter(|&&(_, s)| s < self.options.k)
            .map(|&(_, s)| s)
            .sum()
    }

    /// Evaluate a node from its classes.
    pub(super) fn evaluate<K: PackedKey>(&self, levels: &[u32], classes: &[Class<K>]) -> NodeEval {
        self.evaluate_verdict(levels, classes, &self.verdict(levels, classes))
    }

    /// Whether a node that suppresses `suppressed` rows is feasible: within the limit,
    /// and the suppressed rows, when kept, form a class that satisfies k and the models
    /// (`star_ok`).
    pub(super) fn feasible(&self, suppressed: u64, star_ok: bool) -> bool {
        suppressed <= self.options.max_suppressed
            && (suppressed == 0 || !self.options.keep_suppressed || star_ok)
    }

    /// Evaluate a node from its classes and their verdict.
    pub(super) fn evaluate_verdict<K: PackedKey>(
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
pub(super) fn better(cost: f64, levels: &[u32], best_cost: f64, best_levels: &[u32]) -> bool {
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
