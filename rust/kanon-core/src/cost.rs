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
//! # Exact costs
//! Kernels that pick the nearest row break ties by row index, which only works if equal
//! costs compare equal. Costs are therefore computed as integers ("units") and reported as
//! `units / scale`:
//!
//! * **Exact mode** (every weight is an integer and the result fits): `scale` is the least
//!   common multiple of the attributes' cost denominators (the heights for
//!   [`LevelCost::Height`], `leaves − 1` for [`LevelCost::Ncp`]). Every cost is an exact
//!   rational, so costs that are mathematically equal have equal units, whatever the
//!   attributes that produced them (`0.1 + 0.2 == 0.3`).
//! * **Fixed-point mode** (otherwise): `scale` is a power of two chosen so that the largest
//!   possible total stays below 2^50, and each attribute term is rounded to a whole unit
//!   (a relative error below 2^-50). Sums of units are exact, so equal terms in any order
//!   give equal costs; mathematically equal sums of *different* terms may differ by a unit.
//!
//! Totals stay below 2^52 units in both modes, so `units / scale` is strictly monotone:
//! comparing the `f64` costs is comparing the units.

use crate::error::{KernelError, Result};
use crate::hierarchy::Hierarchy;

/// Attributes with at most this many leaves get a dense `leaf × leaf → units` table
/// (at most 512 KiB each); larger ones walk the hierarchy levels.
const DENSE_LEAVES: usize = 256;

/// Bound on the largest total cost in units (see the module docs).
const UNIT_LIMIT: u128 = 1 << 50;

/// How the cost of generalizing one value to a hierarchy node is measured.
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash)]
pub enum LevelCost {
    /// The paper's scaled level: `level / height` (Aggarwal et al. 2005).
    Height,
    /// Normalized certainty penalty of the node: `(leaves under it − 1) / (leaves − 1)`,
    /// the per-cell loss that GCP averages.
    Ncp,
}

/// Pair costs over a fixed set of quasi-identifier hierarchies, precomputed as integer
/// tables so one pair cost is a few lookups per attribute.
#[derive(Debug, Clone)]
pub struct CostModel {
    hierarchies: Vec<Hierarchy>,
    weights: Vec<f64>,
    kind: LevelCost,
    /// `node_units[j][level][code]`: weighted cost in units of node `code` at `level`.
    node_units: Vec<Vec<Vec<u64>>>,
    /// `dense[j][a · leaves_j + b]`: weighted cost in units of the meet of leaves `a`, `b`,
    /// for attributes with at most [`DENSE_LEAVES`] leaves.
    dense: Vec<Option<Vec<u64>>>,
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
    ///   occur in the data for the NCP of the data.
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
    /// use kanon_core::cost::{CostModel, LevelCost};
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
        let invalid = |message: String| KernelError::InvalidArgument {
            kernel: "cost model",
            message,
        };
        if weights.len() != hierarchies.len() {
            return Err(KernelError::LengthMismatch {
                kernel: "cost model",
                argument: "weights",
                got: weights.len(),
                expected: hierarchies.len(),
            });
        }
        if hierarchies.is_empty() {
            return Err(invalid(
                "a cost model needs at least one quasi-identifier hierarchy".to_owned(),
            ));
        }
        if let Some((j, w)) = weights
            .iter()
            .enumerate()
            .find(|(_, w)| !(w.is_finite() && **w > 0.0))
        {
            return Err(invalid(format!(
                "weight {w} of attribute {j} is not a positive finite number"
            )));
        }
        let denominators: Vec<u64> = hierarchies
            .iter()
            .map(|h| match kind {
                LevelCost::Height => h.height() as u64,
                LevelCost::Ncp => h.leaves().saturating_sub(1) as u64,
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
        let mut model = Self {
            hierarchies,
            weights,
            kind,
            node_units,
            dense: Vec::new(),
            scale,
            exact,
        };
        model.dense = (0..model.hierarchies.len())
            .map(|j| {
                let n = model.hierarchies[j].leaves();
                (n <= DENSE_LEAVES).then(|| {
                    let mut table = Vec::with_capacity(n * n);
                    let mut row = Vec::new();
                    for a in 0..n as u32 {
                        model.fill_row(j, a, &mut row);
                        table.extend_from_slice(&row);
                    }
                    table
                })
            })
            .collect();
        Ok(model)
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
    /// use kanon_core::cost::{CostModel, LevelCost};
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
        (0..=h.height())
            .find(|&l| h.generalize(l, a) == h.generalize(l, b))
            .unwrap_or(h.height())
    }

    /// Unweighted cost of generalizing attribute `j` to the node at `level` containing
    /// `leaf`: `level / height` for [`LevelCost::Height`], `(leaves under the node − 1) /
    /// (leaves − 1)` for [`LevelCost::Ncp`]; 0 for a hierarchy of height 0 or one leaf.
    ///
    /// # Panics
    /// If `j >= self.attributes()`, `level` is above the hierarchy's height or `leaf` is
    /// not one of its leaves.
    ///
    /// # Examples
    /// ```
    /// use kanon_core::cost::{CostModel, LevelCost};
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
        let (p, q) = match self.kind {
            LevelCost::Height => (level, h.height()),
            LevelCost::Ncp => {
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
    /// as [`Self::pair_units`] / [`Self::scale`].
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
    /// use kanon_core::cost::{CostModel, LevelCost};
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
            None => {
                let level = self.meet_level(j, a, b);
                self.node_units[j][level][self.hierarchies[j].generalize(level, a) as usize]
            }
        }
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
    /// (`out[x]` = units of the meet of `leaf` and `x`), in O(n_j · L_j).
    pub(crate) fn fill_row(&self, j: usize, leaf: u32, out: &mut Vec<u64>) {
        let h = &self.hierarchies[j];
        let units = &self.node_units[j];
        out.clear();
        let top = h.height();
        out.resize(h.leaves(), units[top].first().copied().unwrap_or(0));
        // Descending levels: each overwrite is by a node nested in the previous one, so
        // the last write to `out[x]` is the lowest node holding both `leaf` and `x`.
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

/// Numerator of every node's cost, `[level][code]`: the level, or the node's leaves − 1.
fn numerators(h: &Hierarchy, kind: LevelCost) -> Vec<Vec<u64>> {
    (0..=h.height())
        .map(|level| {
            let width = h.width(level) as usize;
            match kind {
                LevelCost::Height => vec![level as u64; width],
                LevelCost::Ncp => {
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

/// The exact scale (lcm of the denominators) when every weight is an integer and the
/// largest total stays within [`UNIT_LIMIT`].
fn exact_scale(weights: &[f64], denominators: &[u64]) -> Option<u64> {
    if !weights
        .iter()
        .all(|&w| w.fract() == 0.0 && w <= UNIT_LIMIT as f64)
    {
        return None;
    }
    let mut lcm: u128 = 1;
    for &q in denominators.iter().filter(|&&q| q > 0) {
        let q = u128::from(q);
        lcm = lcm / gcd(lcm, q) * q;
        if lcm > UNIT_LIMIT {
            return None;
        }
    }
    let total: u128 = weights
        .iter()
        .zip(denominators)
        .filter(|(_, &q)| q > 0)
        .map(|(&w, _)| w as u128 * lcm)
        .sum();
    (total <= UNIT_LIMIT).then_some(lcm as u64)
}

/// A power-of-two scale putting the largest total just below 2^50 units.
fn fixed_scale(weights: &[f64], denominators: &[u64]) -> Result<f64> {
    let total: f64 = weights
        .iter()
        .zip(denominators)
        .filter(|(_, &q)| q > 0)
        .map(|(&w, _)| w)
        .sum();
    if !total.is_finite() {
        return Err(KernelError::InvalidArgument {
            kernel: "cost model",
            message: format!("the weights add up to {total}; their sum must be finite"),
        });
    }
    // With nothing to price (total 0, log2 = −∞) the exponent is capped; all units are 0.
    let exponent = (50.0 - total.log2()).floor().min(1000.0);
    Ok(exponent.exp2())
}

/// Weighted units of a node whose unweighted cost is `p / q`.
fn term_units(p: u64, q: u64, weight: f64, scale: f64, exact: bool) -> u64 {
    if q == 0 {
        0
    } else if exact {
        // weight · p · (lcm / q) ≤ weight · lcm ≤ UNIT_LIMIT: no overflow.
        let lcm = scale as u128;
        (weight as u128 * u128::from(p) * (lcm / u128::from(q))) as u64
    } else {
        (weight * scale * p as f64 / q as f64).round() as u64
    }
}

fn gcd(mut a: u128, mut b: u128) -> u128 {
    while b != 0 {
        (a, b) = (b, a % b);
    }
    a
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
