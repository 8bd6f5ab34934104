//! Leaf orders of a cost model, computed once per model: every block of a large table
//! shares them (computed per block, they cost O(leaves) each, whatever the block's size).

use crate::forest::improve::effort::SPAN_TABLE_LEAVES;
use crate::hierarchy::Hierarchy;

/// A permutation of an attribute's leaves: the rank of every leaf and the leaf of every
/// rank.
#[derive(Debug, Clone)]
pub(crate) struct Order {
    pub(crate) ranks: Vec<u32>,
    pub(crate) leaf_at: Vec<u32>,
}

impl Order {
    fn new(ranks: Vec<u32>) -> Self {
        let leaf_at = inverse(&ranks);
        Self { ranks, leaf_at }
    }
}

/// The inverse of a permutation of `0..n`.
pub(crate) fn inverse(permutation: &[u32]) -> Vec<u32> {
    let mut out = vec![0u32; permutation.len()];
    for (i, &p) in permutation.iter().enumerate() {
        out[p as usize] = i as u32;
    }
    out
}

/// Per attribute of a model: its depth-first order, its interval order where that
/// differs (numeric keys under range costs), the units of every rank range of a small
/// attribute, and its cheapest mismatch.
#[derive(Debug, Clone, Default)]
pub(crate) struct Orders {
    dfs: Vec<Order>,
    keyed: Vec<Option<Order>>,
    /// `spans[j][lo · leaves + hi]`: units of the meet of interval ranks `lo < hi`, for
    /// attributes of at most [`SPAN_TABLE_LEAVES`] leaves priced by a range.
    spans: Vec<Option<Vec<u64>>>,
    cheapest: Vec<u64>,
}

impl Orders {
    /// The depth-first orders of `hierarchies`; the rest waits for [`Self::complete`].
    pub(crate) fn new(hierarchies: &[Hierarchy]) -> Self {
        Self {
            dfs: hierarchies
                .iter()
                .map(|h| Order::new(h.dfs_ranks()))
                .collect(),
            ..Self::default()
        }
    }

    /// Add the key orders of the attributes with numeric `keys`, span tables and
    /// cheapest mismatches: `sets` holds the unit of one more distinct value of an
    /// attribute priced by its distinct values, `pair(j, a, b)` the units of leaves `a`
    /// and `b` of attribute `j`.
    pub(crate) fn complete(
        dfs: Self,
        keys: &[Option<&[f64]>],
        sets: &[Option<u64>],
        pair: impl Fn(usize, u32, u32) -> u64,
    ) -> Self {
        let m = dfs.dfs.len();
        let keyed = keys
            .iter()
            .map(|keys| keys.map(|keys| Order::new(key_ranks(keys))))
            .collect();
        let mut orders = Self { keyed, ..dfs };
        orders.spans = (0..m)
            .map(|j| {
                let leaf_at = orders.interval(j).leaf_at.as_slice();
                let leaves = leaf_at.len();
                (leaves <= SPAN_TABLE_LEAVES && sets[j].is_none()).then(|| {
                    let mut table = vec![0u64; leaves * leaves];
                    for lo in 0..leaves {
                        for hi in lo + 1..leaves {
                            table[lo * leaves + hi] = pair(j, leaf_at[lo], leaf_at[hi]);
                        }
                    }
                    table
                })
            })
            .collect();
        // The cheapest mismatch of an attribute is the meet of two neighbouring ranks
        // (one more distinct value for a categorical range attribute).
        orders.cheapest = (0..m)
            .map(|j| {
                let leaf_at = &orders.interval(j).leaf_at;
                leaf_at
                    .windows(2)
                    .map(|two| sets[j].unwrap_or_else(|| pair(j, two[0], two[1])))
                    .min()
                    .unwrap_or(u64::MAX)
            })
            .collect();
        orders
    }

    /// The depth-first order of attribute `j`'s hierarchy.
    pub(crate) fn dfs(&self, j: usize) -> &Order {
        &self.dfs[j]
    }

    /// The order of attribute `j`'s leaves in which the units of a group are those of its
    /// lowest- and highest-ranked leaves: the depth-first order of the hierarchy (the
    /// leaves under a node are contiguous, so the meet of a group is the meet of its
    /// extremes), or under range costs the order of the numeric keys (missing values
    /// last, ties by leaf). A categorical attribute under range costs has no such order;
    /// it gets the depth-first one.
    pub(crate) fn interval(&self, j: usize) -> &Order {
        self.keyed[j].as_ref().unwrap_or(&self.dfs[j])
    }

    /// The span table of attribute `j`, if it has one.
    pub(crate) fn span_table(&self, j: usize) -> Option<&[u64]> {
        self.spans[j].as_deref()
    }

    /// Units of attribute `j`'s cheapest mismatch (`u64::MAX` for a single leaf).
    pub(crate) fn cheapest(&self, j: usize) -> u64 {
        self.cheapest[j]
    }
}

/// Ranks of numeric keys: by key, missing values (NaN) last, ties by leaf.
fn key_ranks(keys: &[f64]) -> Vec<u32> {
    let mut order: Vec<u32> = (0..keys.len() as u32).collect();
    order.sort_by(|&a, &b| {
        let (x, y) = (keys[a as usize], keys[b as usize]);
        x.is_nan()
            .cmp(&y.is_nan())
            .then(x.total_cmp(&y))
            .then(a.cmp(&b))
    });
    let mut ranks = vec![0u32; keys.len()];
    for (rank, &leaf) in order.iter().enumerate() {
        ranks[leaf as usize] = rank as u32;
    }
    ranks
}
