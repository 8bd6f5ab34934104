//! Generalization cost between rows: per-attribute meet levels in the hierarchies.
//!
//! The cost of putting two rows `a` and `b` into one group is the weighted sum, over the
//! quasi-identifier attributes, of the cost of the lowest hierarchy node that holds both
//! values (Aggarwal et al. 2005, "the edge weight" of the cost graph):
//!
//! ```text
//! w(a, b) = Σ_j weight_j · node_cost_j(meet_j(a_j, b_j))
//! ```
//!
//! Each attribute's term is an ultrametric (the node cost grows with the level and the
//! meet of `a, c` is never above the higher of the meets of `a, b` and `b, c`), so `w` is a
//! metric: symmetric, zero on equal rows and obeying the triangle inequality.
//!
//! # Range labels
//! With [`LevelCost::Range`] ([`CostModel::try_new_range`]) a group publishes its observed
//! values instead of a hierarchy node: `[lo..hi]` for a numeric attribute, the set of its
//! distinct values for a categorical one. Costs are then the normalized certainty penalty
//! (NCP) of those labels, the loss users measure:
//!
//! ```text
//! w(a, b)  = Σ_j weight_j · d_j(a_j, b_j)
//!            numeric:     |key(a_j) − key(b_j)| / span_j      (0 when span_j = 0)
//!            categorical: 0 if a_j = b_j, else 1 / (|A_j| − 1)
//! cost(G)  = |G| · Σ_j weight_j · NCP_j(G)
//!            numeric:     (max key − min key over G) / span_j
//!            categorical: (distinct values in G − 1) / (|A_j| − 1)
//! ```
//!
//! where a numeric attribute has a key (its value) per leaf, `span_j` is the largest key
//! minus the smallest, and `|A_j|` is the categorical attribute's leaf count. A NaN key is
//! a missing value (SQL NULL): a group holding it and any other leaf releases `*`, which
//! costs the attribute's whole weight. Both terms are metrics, but not ultrametrics along
//! the hierarchy, so the trie of [`crate::forest::neighbours::nearest_neighbours`] is not used (the
//! lists come from the full scan), and the group cost is not a function of the group's
//! meet: [`crate::forest::improve`] summarizes a numeric attribute by the range of its keys' ranks
//! and a categorical one by its distinct values. The hierarchy still gives each group its
//! lowest common level, so hierarchy labels remain possible.
//!
//! # Exact costs
//! Kernels that pick the nearest row break ties by row index, which only works if equal
//! costs compare equal. Costs are therefore computed as integers ("units") and reported as
//! `units / scale`:
//!
//! * **Exact mode** (every weight is an integer and the result fits): `scale` is the least
//!   common multiple of the attributes' cost denominators (the heights for
//!   [`LevelCost::Height`], `leaves − 1` for [`LevelCost::Ncp`] and for the categorical
//!   attributes of [`LevelCost::Range`], and `span_j` for its numeric attributes, which
//!   must then have integer keys of magnitude at most 2^52, so that every key difference is
//!   an exact integer). Every cost is an exact rational, so costs that are mathematically
//!   equal have equal units, whatever the attributes that produced them
//!   (`0.1 + 0.2 == 0.3`).
//! * **Fixed-point mode** (otherwise, e.g. fractional weights or numeric keys): `scale` is
//!   a power of two chosen so that the largest possible total stays below 2^50, and each
//!   attribute term is rounded to a whole unit (a relative error below 2^-50). A numeric
//!   term is `round(weight · scale · (hi − lo) / span)`, never above the attribute's whole
//!   weight, and monotone in `hi − lo`; a categorical group term is `(distinct − 1)` times
//!   the rounded unit of one extra value. Sums of units are exact, so equal terms in any
//!   order give equal costs; mathematically equal sums of *different* terms may differ by
//!   a unit (ties between them are then broken by the rounding, deterministically).
//!
//! Totals stay below 2^52 units in both modes, so `units / scale` is strictly monotone:
//! comparing the `f64` costs is comparing the units.

use crate::error::{KernelError, Result};
use crate::forest::cost::orders::Orders;
use crate::forest::cost::paths::{Paths, Rung};
use crate::forest::cost::range::RangeAttribute;
use crate::forest::cost::scale::{
    check_model, exact_scale, fixed_scale, key_units, term_units, PerKey,
};
use crate::hierarchy::Hierarchy;

/// Attributes with at most this many leaves get a dense `leaf × leaf → units` table
/// (at most 512 KiB each); larger ones walk the hierarchy levels.
const DENSE_LEAVES: usize = 256;

/// How the cost of generalizing one value to a hierarchy node is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LevelCost {
    /// The paper's scaled level: `level / height` (Aggarwal et al. 2005).
    Height,
    /// Normalized certainty penalty of the node: `(leaves under it − 1) / (leaves − 1)`,
    /// the per-cell loss that GCP averages.
    Ncp,
    /// Normalized certainty penalty of the group's observed values (range labels, see
    /// the module docs): numeric attributes by the span of their keys, categorical ones by
    /// their distinct values. Built by [`CostModel::try_new_range`]; with
    /// [`CostModel::try_new`] every attribute is categorical.
    Range,
}

/// Pair costs over a fixed set of quasi-identifier hierarchies, precomputed as integer
/// tables so one pair cost is a few lookups per attribute.
#[derive(Debug, Clone)]
pub struct CostModel {
    hierarchies: Vec<Hierarchy>,
    weights: Vec<f64>,
    kind: LevelCost,
    /// `node_units[j][level][code]`: weighted cost in units of node `code` at `level`
    /// (under [`LevelCost::Range`]: of a group holding every leaf under the node).
    node_units: Vec<Vec<Vec<u64>>>,
    /// `dense[j][a · leaves_j + b]`: weighted cost in units of the pair of leaves `a`, `b`
    /// (the meet, or the range pair cost), for attributes with at most [`DENSE_LEAVES`]
    /// leaves.
    dense: Vec<Option<Vec<u64>>>,
    /// Leaf-major ancestor rows of the attributes without a dense table.
    paths: Vec<Option<Paths>>,
    /// Leaf orders, span tables and cheapest mismatches, shared by every block.
    orders: Orders,
    /// Per attribute under [`LevelCost::Range`] (empty otherwise).
    range: Vec<RangeAttribute>,
    /// Units per cost 1.0.
    scale: f64,
    exact: bool,
}

impl CostModel {
    /// Build the cost model of the quasi-identifiers described by `hierarchies`.
    ///
    /// # Arguments
    /// * `hierarchies` – one hierarchy per quasi-identifier attribute (leaf codes are the
    ///   values rows carry).
    /// * `weights` – one weight per attribute, positive and finite.
    /// * `kind` – how a hierarchy node is priced, see [`LevelCost`]. [`LevelCost::Ncp`]
    ///   counts the leaves of the hierarchy, so build hierarchies over the values that
    ///   occur in the data for the NCP of the data. [`LevelCost::Range`] builds the range
    ///   model with every attribute categorical ([`Self::try_new_range`] with no keys).
    ///
    /// # Returns
    /// The model, with its node-cost tables (and dense pair tables for attributes of at
    /// most 256 leaves) precomputed; see the module docs for the exact integer costs.
    ///
    /// # Errors
    /// * [`KernelError::LengthMismatch`] if `weights` and `hierarchies` differ in length.
    /// * [`KernelError::InvalidArgument`] for no attributes, a weight that is not positive
    ///   and finite, or weights whose sum overflows.
    ///
    /// # Complexity
    /// O(Σ_j n_j · L_j) time and space for attributes of n_j leaves and L_j levels, plus
    /// O(n_j² · L_j) time and O(n_j²) space for each attribute with at most 256 leaves.
    ///
    /// # Examples
    /// ```
    /// use kanon_core::forest::cost::{CostModel, LevelCost};
    /// use kanon_core::Hierarchy;
    /// // ages 0..4 in pairs {0,1}, {2,3}, then *; a flat sex attribute.
    /// let age = Hierarchy::try_from_levels(&[&[0, 1, 2, 3], &[0, 0, 1, 1], &[0, 0, 0, 0]]).unwrap();
    /// let model = CostModel::try_new(vec![age, Hierarchy::flat(2)], vec![1.0, 1.0], LevelCost::Height).unwrap();
    /// assert_eq!(model.pair_cost(&[0, 1], &[1, 1]), 0.5);
    /// assert_eq!(model.pair_cost(&[0, 0], &[3, 1]), 2.0);
    /// assert!(model.is_exact());
    /// ```
    pub fn try_new(
        hierarchies: Vec<Hierarchy>,
        weights: Vec<f64>,
        kind: LevelCost,
    ) -> Result<Self> {
        if kind == LevelCost::Range {
            let keys = vec![None; hierarchies.len()];
            return Self::try_new_range(hierarchies, weights, keys);
        }
        check_model(&hierarchies, &weights)?;
        let denominators: Vec<u64> = hierarchies
            .iter()
            .map(|h| match kind {
                LevelCost::Height => h.height() as u64,
                LevelCost::Ncp | LevelCost::Range => h.leaves().saturating_sub(1) as u64,
            })
            .collect();
        // Numerator of each node's cost: its level, or its leaf count − 1.
        let numerators: Vec<Vec<Vec<u64>>> =
            hierarchies.iter().map(|h| numerators(h, kind)).collect();
        let (scale, exact) = match exact_scale(&weights, &denominators) {
            Some(lcm) => (lcm as f64, true),
            None => (fixed_scale(&weights, &denominators)?, false),
        };
        let node_units: Vec<Vec<Vec<u64>>> = numerators
            .iter()
            .zip(&denominators)
            .zip(&weights)
            .map(|((levels, &q), &w)| {
                levels
                    .iter()
                    .map(|codes| {
                        codes
                            .iter()
                            .map(|&p| term_units(p, q, w, scale, exact))
                            .collect()
                    })
                    .collect()
            })
            .collect();
        Ok(Self {
            hierarchies,
            weights,
            kind,
            node_units,
            dense: Vec::new(),
            paths: Vec::new(),
            orders: Orders::default(),
            range: Vec::new(),
            scale,
            exact,
        }
        .with_dense_tables())
    }

    /// Build the [`LevelCost::Range`] cost model: groups publish their observed values
    /// (`[lo..hi]` for numeric attributes, the set of distinct values for categorical
    /// ones) and costs are the NCP of those labels (see the module docs).
    ///
    /// # Arguments
    /// * `hierarchies` – one hierarchy per attribute. Only its leaves matter to the cost
    ///   (the leaf codes rows carry; a categorical attribute's `|A_j|` is its leaf count);
    ///   its levels still give each group's lowest common level ([`Self::meet_level`]).
    /// * `weights` – one weight per attribute, positive and finite.
    /// * `keys` – per attribute, `Some(keys)` for a numeric attribute (`keys[leaf]`, the
    ///   leaf's value; NaN for a missing value) or `None` for a categorical one.
    ///
    /// # Returns
    /// The model. Costs are exact rationals when every weight is an integer and every
    /// numeric attribute has integer keys (and the least common multiple of the
    /// denominators fits), else fixed-point (see the module docs).
    ///
    /// # Errors
    /// * [`KernelError::LengthMismatch`] if `weights` or `keys` and `hierarchies` differ
    ///   in length.
    /// * [`KernelError::InvalidArgument`] for no attributes, a weight that is not positive
    ///   and finite, weights whose sum overflows, a numeric attribute whose key count is
    ///   not its leaf count, an infinite key, or keys whose span is not finite.
    ///
    /// # Complexity
    /// O(Σ_j n_j · L_j) time and space for attributes of n_j leaves and L_j levels, plus
    /// O(n_j²) for each attribute with at most 256 leaves (its dense pair table).
    ///
    /// # Examples
    /// ```
    /// use kanon_core::forest::cost::CostModel;
    /// use kanon_core::Hierarchy;
    /// // age (numeric, keys 20, 30, 60) and a categorical attribute of four values.
    /// let model = CostModel::try_new_range(
    ///     vec![Hierarchy::flat(3), Hierarchy::flat(4)],
    ///     vec![1.0, 1.0],
    ///     vec![Some(vec![20.0, 30.0, 60.0]), None],
    /// ).unwrap();
    /// // |20 − 30| / 40 + 1 / 3
    /// assert!((model.pair_cost(&[0, 0], &[1, 1]) - (0.25 + 1.0 / 3.0)).abs() < 1e-12);
    /// // a group of three rows: 3 · ((60 − 20) / 40 + (2 − 1) / 3)
    /// let rows: [&[u32]; 3] = [&[0, 2], &[2, 2], &[1, 3]];
    /// assert!((model.group_cost(&rows) - 3.0 * (1.0 + 1.0 / 3.0)).abs() < 1e-12);
    /// assert!(model.is_exact());
    /// ```
    pub fn try_new_range(
        hierarchies: Vec<Hierarchy>,
        weights: Vec<f64>,
        keys: Vec<Option<Vec<f64>>>,
    ) -> Result<Self> {
        check_model(&hierarchies, &weights)?;
        let invalid = |message: String| KernelError::InvalidArgument {
            kernel: "cost model",
            message,
        };
        if keys.len() != hierarchies.len() {
            return Err(KernelError::LengthMismatch {
                kernel: "cost model",
                argument: "keys",
                got: keys.len(),
                expected: hierarchies.len(),
            });
        }
        // Per numeric attribute: the span of its finite keys, and whether all are integers
        // small enough for exact differences.
        let mut spans: Vec<Option<(f64, bool)>> = Vec::with_capacity(keys.len());
        for (j, (h, keys)) in hierarchies.iter().zip(&keys).enumerate() {
            let Some(keys) = keys else {
                spans.push(None);
                continue;
            };
            if keys.len() != h.leaves() {
                return Err(invalid(format!(
                    "attribute {j} has {} keys but its hierarchy has {} leaves",
                    keys.len(),
                    h.leaves()
                )));
            }
            if let Some(leaf) = keys.iter().position(|k| k.is_infinite()) {
                return Err(invalid(format!(
                    "key {} of leaf {leaf} of attribute {j} is not finite; use NaN for a \
                     missing value",
                    keys[leaf]
                )));
            }
            let finite = || keys.iter().copied().filter(|k| !k.is_nan());
            let low = finite().fold(f64::INFINITY, f64::min);
            let high = finite().fold(f64::NEG_INFINITY, f64::max);
            let span = if low <= high { high - low } else { 0.0 };
            if !span.is_finite() {
                return Err(invalid(format!(
                    "the keys of attribute {j} span from {low} to {high}, more than a float \
                     can hold"
                )));
            }
            let integer = finite().all(|k| k.fract() == 0.0 && k.abs() <= EXACT_KEY);
            spans.push(Some((span, integer)));
        }
        // Denominators: |A_j| − 1 for categorical attributes, the span for numeric ones (1
        // when it is 0: only a missing value mixed with another leaf costs anything).
        let denominators: Vec<u64> = hierarchies
            .iter()
            .zip(&spans)
            .map(|(h, span)| match span {
                None => h.leaves().saturating_sub(1) as u64,
                Some((span, true)) if *span > 0.0 => *span as u64,
                Some(_) => 1,
            })
            .collect();
        let integer_keys = spans.iter().flatten().all(|&(_, integer)| integer);
        let (scale, exact) = match exact_scale(&weights, &denominators).filter(|_| integer_keys) {
            Some(lcm) => (lcm as f64, true),
            None => (fixed_scale(&weights, &denominators)?, false),
        };
        let range: Vec<RangeAttribute> = keys
            .into_iter()
            .zip(&spans)
            .zip(denominators.iter().zip(&weights))
            .map(|((keys, span), (&q, &w))| match (keys, span) {
                (Some(keys), Some((span, _))) => {
                    let full = term_units(1, 1, w, scale, exact);
                    let per = if exact {
                        // w · lcm / span ≤ w · lcm ≤ UNIT_LIMIT (span divides the lcm).
                        PerKey::Exact(term_units(1, q, w, scale, exact))
                    } else if *span > 0.0 {
                        PerKey::Fixed(w * scale / span)
                    } else {
                        PerKey::Fixed(0.0)
                    };
                    RangeAttribute::Numeric {
                        keys,
                        by_rank: Vec::new(),
                        per,
                        full,
                    }
                }
                _ => RangeAttribute::Set {
                    unit: term_units(1, q, w, scale, exact),
                },
            })
            .collect();
        let mut model = Self {
            hierarchies,
            weights,
            kind: LevelCost::Range,
            node_units: Vec::new(),
            dense: Vec::new(),
            paths: Vec::new(),
            orders: Orders::default(),
            range,
            scale,
            exact,
        };
        model.node_units = (0..model.hierarchies.len())
            .map(|j| model.range[j].node_units(&model.hierarchies[j]))
            .collect();
        Ok(model.with_dense_tables())
    }

    /// The model with its dense pair tables (small attributes), paths (the others), orders.
    fn with_dense_tables(mut self) -> Self {
        self.dense = (0..self.hierarchies.len())
            .map(|j| {
                let n = self.hierarchies[j].leaves();
                (n <= DENSE_LEAVES).then(|| {
                    let mut table = Vec::with_capacity(n * n);
                    let mut row = Vec::new();
                    for a in 0..n as u32 {
                        self.fill_row(j, a, &mut row);
                        table.extend_from_slice(&row);
                    }
                    table
                })
            })
            .collect();
        let (m, dfs) = (self.hierarchies.len(), Orders::new(&self.hierarchies));
        self.paths = (0..self.hierarchies.len())
            .map(|j| {
                let h = &self.hierarchies[j];
                self.dense[j]
                    .is_none()
                    .then(|| Paths::new(h, &dfs.dfs(j).ranks))
            })
            .collect();
        let keys: Vec<Option<&[f64]>> = (0..m).map(|j| self.keys(j)).collect();
        let sets: Vec<Option<u64>> = (0..m)
            .map(|j| self.is_set(j).then(|| self.set_units(j)))
            .collect();
        self.orders = Orders::complete(dfs, &keys, &sets, |j, a, b| self.attribute_units(j, a, b));
        for (j, range) in self.range.iter_mut().enumerate() {
            if let RangeAttribute::Numeric { keys, by_rank, .. } = range {
                let leaf_at = &self.orders.interval(j).leaf_at;
                *by_rank = leaf_at.iter().map(|&leaf| keys[leaf as usize]).collect();
            }
        }
        self
    }

    /// For a numeric attribute `j` under [`LevelCost::Range`]: the keys by interval rank,
    /// the units of a key difference and of the whole weight, so that the units of ranks
    /// `lo < hi` are [`numeric_units`] of their keys ([`Self::attribute_units`] of their
    /// leaves); `None` for the others.
    pub(crate) fn rank_keys(&self, j: usize) -> Option<(&[f64], PerKey, u64)> {
        match self.range.get(j) {
            Some(RangeAttribute::Numeric {
                by_rank, per, full, ..
            }) => Some((by_rank.as_slice(), *per, *full)),
            _ => None,
        }
    }

    /// Number of quasi-identifier attributes.
    #[must_use]
    pub fn attributes(&self) -> usize {
        self.hierarchies.len()
    }

    /// The hierarchy of attribute `j`.
    ///
    /// # Panics
    /// If `j >= self.attributes()`.
    #[must_use]
    pub fn hierarchy(&self, j: usize) -> &Hierarchy {
        &self.hierarchies[j]
    }

    /// Every attribute's hierarchy.
    #[must_use]
    pub fn hierarchies(&self) -> &[Hierarchy] {
        &self.hierarchies
    }

    /// The weight of each attribute.
    #[must_use]
    pub fn weights(&self) -> &[f64] {
        &self.weights
    }

    /// How hierarchy nodes are priced.
    #[must_use]
    pub fn kind(&self) -> LevelCost {
        self.kind
    }

    /// Units per cost 1.0: [`Self::pair_cost`] is [`Self::pair_units`] divided by this.
    #[must_use]
    pub fn scale(&self) -> f64 {
        self.scale
    }

    /// Whether costs are exact rationals (integer weights), so that mathematically equal
    /// costs always compare equal; otherwise each attribute term is rounded to 2^-50 of
    /// the largest total (see the module docs).
    #[must_use]
    pub fn is_exact(&self) -> bool {
        self.exact
    }

    /// Lowest level at which leaves `a` and `b` of attribute `j` share an ancestor (0 if
    /// `a == b`, at most the hierarchy's height).
    ///
    /// # Panics
    /// If `j >= self.attributes()` or a leaf is not below the hierarchy's leaf count.
    ///
    /// # Complexity
    /// O(L_j) for L_j levels.
    ///
    /// # Examples
    /// ```
    /// use kanon_core::forest::cost::{CostModel, LevelCost};
    /// use kanon_core::Hierarchy;
    /// let age = Hierarchy::try_from_levels(&[&[0, 1, 2, 3], &[0, 0, 1, 1], &[0, 0, 0, 0]]).unwrap();
    /// let model = CostModel::try_new(vec![age], vec![1.0], LevelCost::Ncp).unwrap();
    /// assert_eq!(model.meet_level(0, 2, 2), 0);
    /// assert_eq!(model.meet_level(0, 2, 3), 1);
    /// assert_eq!(model.meet_level(0, 0, 3), 2);
    /// ```
    #[must_use]
    pub fn meet_level(&self, j: usize, a: u32, b: u32) -> usize {
        let h = &self.hierarchies[j];
        assert!(
            (a as usize) < h.leaves() && (b as usize) < h.leaves(),
            "meet_level: leaf {a} or {b} is not below {}",
            h.leaves()
        );
        self.meet(j, a, b).0
    }

    /// [`Self::meet_level`] of `a`, `b` and `a`'s ancestor there (by paths, else a walk).
    fn meet(&self, j: usize, a: u32, b: u32) -> (usize, u32) {
        if let Some(paths) = &self.paths[j] {
            return paths.meet(a, b);
        }
        let h = &self.hierarchies[j];
        let level = (0..=h.height())
            .find(|&l| h.generalize(l, a) == h.generalize(l, b))
            .unwrap_or(h.height());
        (level, h.generalize(level, a))
    }

    /// Unweighted cost of generalizing attribute `j` to the node at `level` containing
    /// `leaf`: `level / height` for [`LevelCost::Height`], `(leaves under the node − 1) /
    /// (leaves − 1)` for [`LevelCost::Ncp`]; 0 for a hierarchy of height 0 or one leaf.
    /// For [`LevelCost::Range`], the NCP of a group holding every leaf under the node: the
    /// NCP above for a categorical attribute, `(max − min key) / span` for a numeric one
    /// (1 if it mixes a missing value with another leaf).
    ///
    /// # Panics
    /// If `j >= self.attributes()`, `level` is above the hierarchy's height or `leaf` is
    /// not one of its leaves.
    ///
    /// # Examples
    /// ```
    /// use kanon_core::forest::cost::{CostModel, LevelCost};
    /// use kanon_core::Hierarchy;
    /// let age = Hierarchy::try_from_levels(&[&[0, 1, 2, 3], &[0, 0, 1, 1], &[0, 0, 0, 0]]).unwrap();
    /// let ncp = CostModel::try_new(vec![age.clone()], vec![1.0], LevelCost::Ncp).unwrap();
    /// assert_eq!(ncp.node_cost(0, 1, 3), 1.0 / 3.0);
    /// let height = CostModel::try_new(vec![age], vec![1.0], LevelCost::Height).unwrap();
    /// assert_eq!(height.node_cost(0, 1, 3), 0.5);
    /// ```
    #[must_use]
    pub fn node_cost(&self, j: usize, level: usize, leaf: u32) -> f64 {
        let h = &self.hierarchies[j];
        let code = h.generalize(level, leaf);
        if let Some(RangeAttribute::Numeric { keys, .. }) = self.range.get(j) {
            // (leaves, missing leaves, lowest and highest finite key) of a set of leaves.
            let extent = |under: bool| {
                keys.iter()
                    .zip(h.level(level))
                    .filter(|&(_, &c)| !under || c == code)
                    .fold(
                        (0usize, 0usize, f64::INFINITY, f64::NEG_INFINITY),
                        |(n, missing, low, high), (&k, _)| {
                            if k.is_nan() {
                                (n + 1, missing + 1, low, high)
                            } else {
                                (n + 1, missing, low.min(k), high.max(k))
                            }
                        },
                    )
            };
            let (leaves, missing, low, high) = extent(true);
            let (_, _, min, max) = extent(false);
            return if missing > 0 && leaves > 1 {
                1.0
            } else if low < high {
                (high - low) / (max - min)
            } else {
                0.0
            };
        }
        let (p, q) = match self.kind {
            LevelCost::Height => (level, h.height()),
            LevelCost::Ncp | LevelCost::Range => {
                let under = h.level(level).iter().filter(|&&c| c == code).count();
                (under.saturating_sub(1), h.leaves().saturating_sub(1))
            }
        };
        if q == 0 {
            0.0
        } else {
            p as f64 / q as f64
        }
    }

    /// The cost `w(a, b) = Σ_j weight_j · node_cost(j, meet_level(j, a_j, b_j), a_j)` of
    /// putting rows `a` and `b` (leaf codes, one per attribute) into one group, computed
    /// as [`Self::pair_units`] / [`Self::scale`]. Under [`LevelCost::Range`] it is the
    /// range pair cost of the module docs (`|Δkey| / span`, or `1 / (|A| − 1)` for two
    /// categorical values): half the NCP cost of the group of the two rows.
    ///
    /// # Panics
    /// If a row's length differs from [`Self::attributes`] or a code is not a leaf of its
    /// hierarchy. Kernels taking many rows validate them and return errors instead.
    ///
    /// # Complexity
    /// O(m) lookups for attributes with dense tables, O(L_j) for the others.
    ///
    /// # Examples
    /// ```
    /// use kanon_core::forest::cost::{CostModel, LevelCost};
    /// use kanon_core::Hierarchy;
    /// let model = CostModel::try_new(
    ///     vec![Hierarchy::flat(3), Hierarchy::flat(2)], vec![2.0, 1.0], LevelCost::Height,
    /// ).unwrap();
    /// assert_eq!(model.pair_cost(&[0, 1], &[0, 1]), 0.0);
    /// assert_eq!(model.pair_cost(&[0, 1], &[2, 0]), 3.0);
    /// ```
    #[must_use]
    pub fn pair_cost(&self, a: &[u32], b: &[u32]) -> f64 {
        self.units_to_cost(self.pair_units(a, b))
    }

    /// The exact integer form of [`Self::pair_cost`]: the cost times [`Self::scale`].
    /// Equal units are equal costs; the order of units is the order of costs.
    ///
    /// # Panics
    /// As [`Self::pair_cost`].
    #[must_use]
    pub fn pair_units(&self, a: &[u32], b: &[u32]) -> u64 {
        let m = self.attributes();
        assert!(
            a.len() == m && b.len() == m,
            "pair_units: rows of {} and {} codes for {m} attributes",
            a.len(),
            b.len()
        );
        (0..m).map(|j| self.attribute_units(j, a[j], b[j])).sum()
    }

    /// Convert a cost in units (from [`Self::pair_units`]) to a cost.
    #[must_use]
    pub fn units_to_cost(&self, units: u64) -> f64 {
        units as f64 / self.scale
    }

    /// Weighted units of attribute `j` for leaves `a` and `b`.
    pub(crate) fn attribute_units(&self, j: usize, a: u32, b: u32) -> u64 {
        match &self.dense[j] {
            Some(table) => {
                let n = self.hierarchies[j].leaves();
                assert!(
                    (a as usize) < n && (b as usize) < n,
                    "attribute_units: leaf {a} or {b} is not below {n}"
                );
                table[a as usize * n + b as usize]
            }
            None if !self.range.is_empty() => self.range[j].pair_units(a, b),
            None => {
                let (level, code) = self.meet(j, a, b);
                self.node_units[j][level][code as usize]
            }
        }
    }

    /// `out[i]` = [`Self::attribute_units`] of `leaf` and `others[i]` (the scan's rows);
    /// `keys[i]`, where given, the key of `others[i]` under range costs (a numeric
    /// attribute's keys read once per scan: a wide attribute's lie far apart).
    pub(crate) fn fill_units(
        &self,
        j: usize,
        leaf: u32,
        others: &[u32],
        keys: Option<&[f64]>,
        out: &mut Vec<u64>,
    ) {
        out.clear();
        match (self.range.get(j).filter(|_| self.dense[j].is_none()), keys) {
            (Some(range), Some(keys)) => {
                let given = others.iter().zip(keys).map(|(&b, &y)| (b, Some(y)));
                range.extend_units(leaf, given, out);
            }
            (Some(range), None) => range.extend_units(leaf, others.iter().map(|&b| (b, None)), out),
            (None, _) => out.extend(others.iter().map(|&b| self.attribute_units(j, leaf, b))),
        }
    }

    /// Whether attribute `j` has paths (no dense table) and meets price its pairs.
    pub(crate) fn climbs(&self, j: usize) -> bool {
        self.kind != LevelCost::Range && self.paths[j].is_some()
    }

    /// Write the [`Rung`]s of `leaf` of an attribute `j` that [`Self::climbs`] to
    /// `ladder`: its units to the leaves of given ranks are `paths::climb_all`'s.
    pub(crate) fn ladder(&self, j: usize, leaf: u32, ladder: &mut Vec<Rung>) {
        let units = &self.node_units[j];
        let price = |level: usize, code: u32| units[level][code as usize];
        let paths = self.paths[j].as_ref().expect("attribute without paths");
        paths.ladder(leaf, price, ladder);
    }

    /// The depth-first rank of `leaf` of an attribute `j` that [`Self::climbs`].
    pub(crate) fn rank(&self, j: usize, leaf: u32) -> u32 {
        self.orders.dfs(j).ranks[leaf as usize]
    }

    /// The numeric keys of attribute `j` (`keys[leaf]`, NaN for a missing value), or
    /// `None` for a categorical attribute or a model other than [`LevelCost::Range`].
    ///
    /// # Panics
    /// If `j >= self.attributes()`.
    #[must_use]
    pub fn keys(&self, j: usize) -> Option<&[f64]> {
        assert!(j < self.attributes(), "keys: no attribute {j}");
        match self.range.get(j) {
            Some(RangeAttribute::Numeric { keys, .. }) => Some(keys),
            _ => None,
        }
    }

    /// Whether attribute `j` is priced by its distinct values (a categorical attribute
    /// under [`LevelCost::Range`]) rather than by the range of a leaf order.
    pub(crate) fn is_set(&self, j: usize) -> bool {
        matches!(self.range.get(j), Some(RangeAttribute::Set { .. }))
    }

    /// Units per distinct value beyond the first of a categorical attribute under
    /// [`LevelCost::Range`] (0 for the others).
    pub(crate) fn set_units(&self, j: usize) -> u64 {
        match self.range.get(j) {
            Some(RangeAttribute::Set { unit }) => *unit,
            _ => 0,
        }
    }

    /// The rank of every leaf of attribute `j` in its [`Orders::interval`] order.
    pub(crate) fn interval_ranks(&self, j: usize) -> &[u32] {
        &self.orders.interval(j).ranks
    }

    /// The model's leaf orders (computed once, shared by every block).
    pub(crate) fn orders(&self) -> &Orders {
        &self.orders
    }

    /// Units of one row of a group whose rows are `rows` (leaf codes, one per attribute):
    /// `Σ_j` the units of attribute `j`'s generalization (the meet of the group's values,
    /// or under [`LevelCost::Range`] the NCP of its observed values).
    fn group_row_units(&self, rows: &[&[u32]]) -> u64 {
        let Some(first) = rows.first() else {
            return 0;
        };
        let mut values: Vec<u32> = Vec::new();
        (0..self.attributes())
            .map(|j| match self.range.get(j) {
                None => {
                    let level = rows
                        .iter()
                        .map(|r| self.meet_level(j, first[j], r[j]))
                        .max()
                        .unwrap_or(0);
                    self.level_units(j, level, first[j])
                }
                Some(RangeAttribute::Set { unit }) => {
                    values.clear();
                    values.extend(rows.iter().map(|r| r[j]));
                    values.sort_unstable();
                    values.dedup();
                    (values.len() as u64 - 1) * unit
                }
                Some(RangeAttribute::Numeric {
                    keys, per, full, ..
                }) => {
                    if rows.iter().all(|r| r[j] == first[j]) {
                        0
                    } else if rows.iter().any(|r| keys[r[j] as usize].is_nan()) {
                        *full
                    } else {
                        let key = |r: &&[u32]| keys[r[j] as usize];
                        let low = rows.iter().map(key).fold(f64::INFINITY, f64::min);
                        let high = rows.iter().map(key).fold(f64::NEG_INFINITY, f64::max);
                        key_units(high - low, *per, *full)
                    }
                }
            })
            .sum()
    }

    /// Cost of one group of rows `rows` (leaf codes, one per attribute): `|G| · Σ_j`
    /// the weighted cost of attribute `j`'s generalization, the meet of the group's values
    /// (the cost of its hierarchy node), or under [`LevelCost::Range`] the NCP of its
    /// observed values (see the module docs). This is the cost the repair and improvement
    /// passes compare and the release cost sums; 0 for no rows.
    ///
    /// # Panics
    /// If a row's length differs from [`Self::attributes`] or a code is not a leaf of its
    /// hierarchy.
    ///
    /// # Complexity
    /// O(|G| · Σ_j L_j) for hierarchy costs, O(|G| · m · log |G|) under
    /// [`LevelCost::Range`].
    ///
    /// # Examples
    /// ```
    /// use kanon_core::forest::cost::{CostModel, LevelCost};
    /// use kanon_core::Hierarchy;
    /// let age = Hierarchy::try_from_levels(&[&[0, 1, 2, 3], &[0, 0, 1, 1], &[0, 0, 0, 0]]).unwrap();
    /// let model = CostModel::try_new(vec![age], vec![1.0], LevelCost::Ncp).unwrap();
    /// // {0, 1} generalizes to their pair node: 2 rows · 1/3
    /// assert_eq!(model.group_cost(&[&[0], &[1]]), 2.0 / 3.0);
    /// ```
    #[must_use]
    pub fn group_cost(&self, rows: &[&[u32]]) -> f64 {
        let m = self.attributes();
        assert!(
            rows.iter().all(|r| r.len() == m),
            "group_cost: a row does not have {m} codes"
        );
        let units = u128::from(self.group_row_units(rows)) * rows.len() as u128;
        units as f64 / self.scale
    }

    /// Weighted units of generalizing `leaf` of attribute `j` to its ancestor at `level`.
    pub(crate) fn level_units(&self, j: usize, level: usize, leaf: u32) -> u64 {
        self.node_units[j][level][self.hierarchies[j].generalize(level, leaf) as usize]
    }

    /// The dense `leaf × leaf → units` table of attribute `j`, if it has one.
    pub(crate) fn dense_table(&self, j: usize) -> Option<&[u64]> {
        self.dense[j].as_deref()
    }

    /// Fill `out` with the weighted units of attribute `j` between `leaf` and every leaf
    /// (`out[x]` = units of the meet of `leaf` and `x`, or the range pair units): by the
    /// paths' rank ranges where it has them, else in O(n_j · L_j).
    pub(crate) fn fill_row(&self, j: usize, leaf: u32, out: &mut Vec<u64>) {
        let h = &self.hierarchies[j];
        out.clear();
        if let Some(range) = self.range.get(j) {
            range.extend_units(leaf, (0..h.leaves() as u32).map(|x| (x, None)), out);
            return;
        }
        let units = &self.node_units[j];
        if let Some(Some(paths)) = self.paths.get(j) {
            let price = |level: usize, code: u32| units[level][code as usize];
            paths.fill_row(&self.orders.dfs(j).leaf_at, leaf, price, out);
            return;
        }
        let top = h.height();
        out.resize(h.leaves(), units[top].first().copied().unwrap_or(0));
        // Descending levels: the last write to `out[x]` is the meet of `leaf` and `x`.
        for level in (0..top).rev() {
            let ancestors = h.level(level);
            let code = ancestors[leaf as usize];
            let cost = units[level][code as usize];
            for (slot, &c) in out.iter_mut().zip(ancestors) {
                if c == code {
                    *slot = cost;
                }
            }
        }
    }

    /// Check `tuples` (row-major, `m` codes per row) against the model; return the row
    /// count.
    pub(crate) fn check_tuples(
        &self,
        tuples: &[u32],
        m: usize,
        kernel: &'static str,
    ) -> Result<usize> {
        let invalid = |message: String| KernelError::InvalidArgument { kernel, message };
        if m != self.attributes() {
            return Err(invalid(format!(
                "rows have {m} attributes but the cost model has {}",
                self.attributes()
            )));
        }
        if tuples.len() % m != 0 {
            return Err(invalid(format!(
                "{} codes are not a whole number of rows of {m} attributes",
                tuples.len()
            )));
        }
        let n = tuples.len() / m;
        if n > u32::MAX as usize {
            return Err(invalid(format!(
                "{n} rows exceed the limit of 4294967295 rows per call"
            )));
        }
        for (i, &code) in tuples.iter().enumerate() {
            let j = i % m;
            let leaves = self.hierarchies[j].leaves();
            if code as usize >= leaves {
                return Err(invalid(format!(
                    "code {code} of attribute {j} in row {} is not a leaf of its hierarchy \
                     ({leaves} leaves)",
                    i / m
                )));
            }
        }
        Ok(n)
    }
}

/// Largest magnitude of an integer key priced exactly (differences stay exact in `f64`).
const EXACT_KEY: f64 = (1u64 << 52) as f64;

/// Numerator of every node's cost, `[level][code]`: the level, or the node's leaves − 1.
fn numerators(h: &Hierarchy, kind: LevelCost) -> Vec<Vec<u64>> {
    (0..=h.height())
        .map(|level| {
            let width = h.width(level) as usize;
            match kind {
                LevelCost::Height => vec![level as u64; width],
                LevelCost::Ncp | LevelCost::Range => {
                    let mut under = vec![0u64; width];
                    for &code in h.level(level) {
                        under[code as usize] += 1;
                    }
                    under.iter().map(|&c| c.saturating_sub(1)).collect()
                }
            }
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn integer_weights_are_exact() {
        let model = CostModel::try_new(
            vec![Hierarchy::flat(3), Hierarchy::flat(4)],
            vec![1.0, 3.0],
            LevelCost::Ncp,
        )
        .unwrap();
        assert!(model.is_exact());
        assert_eq!(model.scale(), 6.0);
        assert_eq!(model.pair_units(&[0, 0], &[1, 1]), 6 * 4);
    }

    #[test]
    fn fractional_weights_use_fixed_point() {
        let model =
            CostModel::try_new(vec![Hierarchy::flat(3)], vec![0.5], LevelCost::Ncp).unwrap();
        assert!(!model.is_exact());
        assert_eq!(model.pair_cost(&[0], &[2]), 0.5);
        let units = model.pair_units(&[0], &[2]);
        assert!(units <= 1 << 50 && units > 1 << 48);
    }

    #[test]
    fn row_matches_walk() {
        let h = Hierarchy::try_from_levels(&[&[0, 1, 2, 3], &[0, 0, 1, 1], &[0, 0, 0, 0]]).unwrap();
        let model = CostModel::try_new(vec![h], vec![1.0], LevelCost::Ncp).unwrap();
        let mut row = Vec::new();
        for a in 0..4 {
            model.fill_row(0, a, &mut row);
            for b in 0..4u32 {
                let level = model.meet_level(0, a, b);
                let code = model.hierarchy(0).generalize(level, a);
                assert_eq!(row[b as usize], model.node_units[0][level][code as usize]);
            }
        }
    }

    #[test]
    fn nothing_to_price_with_fractional_weights() {
        let h = Hierarchy::try_from_levels(&[&[0]]).unwrap();
        let model = CostModel::try_new(vec![h], vec![0.5], LevelCost::Ncp).unwrap();
        assert!(!model.is_exact());
        assert_eq!(model.pair_cost(&[0], &[0]), 0.0);
    }

    #[test]
    fn height_zero_costs_nothing() {
        let h = Hierarchy::try_from_levels(&[&[0]]).unwrap();
        let model = CostModel::try_new(vec![h], vec![1.0], LevelCost::Height).unwrap();
        assert_eq!(model.pair_cost(&[0], &[0]), 0.0);
        assert_eq!(model.node_cost(0, 0, 0), 0.0);
    }
}
