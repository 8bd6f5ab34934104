//! How one attribute is priced under [`super::model::LevelCost::Range`]: a categorical
//! attribute by its distinct values, a numeric one by the range of its keys.

use crate::forest::cost::scale::{key_units, numeric_units, PerKey};
use crate::hierarchy::Hierarchy;

/// One attribute's pricing under range costs.
#[derive(Debug, Clone)]
pub(crate) enum RangeAttribute {
    /// Categorical: `unit` units per distinct value beyond the first.
    Set { unit: u64 },
    /// Numeric: the key of every leaf (NaN: missing), the units of a key difference, and
    /// `full`, the units of the whole weight (a missing value mixed with another leaf);
    /// `by_rank`, the keys in the model's interval order, once the model has its orders
    /// (a range's units from two reads).
    Numeric {
        keys: Vec<f64>,
        by_rank: Vec<f64>,
        per: PerKey,
        full: u64,
    },
}

impl RangeAttribute {
    /// Units of the pair of leaves `a` and `b`.
    pub(crate) fn pair_units(&self, a: u32, b: u32) -> u64 {
        if a == b {
            return 0;
        }
        match self {
            Self::Set { unit } => *unit,
            Self::Numeric {
                keys, per, full, ..
            } => numeric_units(keys[a as usize], keys[b as usize], *per, *full),
        }
    }

    /// `out` extended with the pair units of `leaf` and each of `others`, given with its
    /// key where the caller read it already (`None`: looked up), the set's unit or the
    /// leaf's key taken out of the loop.
    pub(crate) fn extend_units(
        &self,
        leaf: u32,
        others: impl Iterator<Item = (u32, Option<f64>)>,
        out: &mut Vec<u64>,
    ) {
        match self {
            Self::Set { unit } => out.extend(others.map(|(b, _)| u64::from(b != leaf) * unit)),
            Self::Numeric {
                keys, per, full, ..
            } => {
                let x = keys[leaf as usize];
                out.extend(others.map(|(b, key)| match b == leaf {
                    true => 0,
                    false => {
                        let y = key.unwrap_or_else(|| keys[b as usize]);
                        numeric_units(x, y, *per, *full)
                    }
                }));
            }
        }
    }

    /// The units of every node of `h`, `[level][code]`: those of a group holding every
    /// leaf under the node.
    pub(crate) fn node_units(&self, h: &Hierarchy) -> Vec<Vec<u64>> {
        (0..=h.height())
            .map(|level| {
                let width = h.width(level) as usize;
                // Per node: leaves, missing leaves, lowest and highest finite key.
                let mut nodes = vec![(0u64, 0u64, f64::INFINITY, f64::NEG_INFINITY); width];
                for (leaf, &code) in h.level(level).iter().enumerate() {
                    let node = &mut nodes[code as usize];
                    node.0 += 1;
                    if let Self::Numeric { keys, .. } = self {
                        let key = keys[leaf];
                        if key.is_nan() {
                            node.1 += 1;
                        } else {
                            node.2 = node.2.min(key);
                            node.3 = node.3.max(key);
                        }
                    }
                }
                nodes
                    .iter()
                    .map(|&(leaves, missing, low, high)| match self {
                        Self::Set { unit } => leaves.saturating_sub(1) * unit,
                        Self::Numeric { full, .. } if missing > 0 && leaves > 1 => *full,
                        Self::Numeric { per, full, .. } if low <= high => {
                            key_units(high - low, *per, *full)
                        }
                        Self::Numeric { .. } => 0,
                    })
                    .collect()
            })
            .collect()
    }
}
