//! Local recoding by iterated global recoding, ARX's local recoding (Prasser et al.,
//! ARX 3.7 `optimizeIterativeFast` with a suppression limit of all but one row, as ARX's
//! GUI and the PrioPrivacy experiments run it), made strict.
//!
//! Each step takes the rows not yet released and the full-domain generalization (a level
//! per attribute) of least weighted cost over those rows, among the generalizations where
//! some class holds at least k rows; every class of at least k rows is released there.
//! The cost ([`StepCost`]) is ARX's non-uniform entropy of attribute `j` at level `l`
//! over rows `R`, `Σ_x a_x · log2(b_g / a_x)` (`a_x` the rows of `R` with leaf `x`, `b_g`
//! those under its ancestor `g` at `l`), or its loss metric (with gs-factor 0:
//! suppression is free), `Σ_g b_g · (leaves under g − 1) / (leaves − 1)`. Rows only ever
//! leave, so a generalization without such a class never gets one: each is checked at
//! most once until it is chosen. ARX leaves the last rows (fewer than k) suppressed in a
//! class of their own; here they join the released class that is cheapest to generalize
//! to hold them.

use std::cmp::Reverse;
use std::collections::{BinaryHeap, HashMap};

use rayon::prelude::*;

use crate::cancel;
use crate::error::{KernelError, Result};
use crate::hierarchy::{check_recoding_inputs, Hierarchy};
use crate::lattice::group::KeyMap;
use crate::priority::Recoding;

const KERNEL: &str = "iterated";

/// Generalization lattices with more nodes are refused: every step orders all nodes, and
/// each node is checked (one grouping of the unreleased tuples) at most once.
pub const MAX_NODES: usize = 1 << 15;

/// What a step minimizes over the rows left.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum StepCost {
    /// ARX's non-uniform entropy (the PrioPrivacy experiments' metric).
    Entropy,
    /// ARX's loss metric: per row and attribute `(leaves under the label − 1) / (leaves −
    /// 1)`, the normalized certainty penalty that GCP averages.
    Loss,
}

/// Anonymize a histogram (`m` leaf codes per distinct tuple, `counts` rows each) by
/// iterated global recoding, least weighted non-uniform entropy first; `weights[j]`
/// (≥ 0) weighs attribute `j`'s entropy.
///
/// # Errors
/// [`KernelError::InvalidArgument`] or [`KernelError::LengthMismatch`] for inconsistent
/// inputs, `k = 0`, fewer than `k` rows (but some), negative or non-finite weights, or a
/// lattice of more than [`MAX_NODES`] nodes; [`KernelError::Cancelled`] when cancelled.
///
/// # Complexity
/// At most `rows / k` steps, each ordering the lattice (O(nodes · m) and a heap pop per
/// node checked) and grouping the unreleased tuples once; at most `nodes + rows / k`
/// checks, each a pass over the unreleased tuples (O(tuples · m)) that stops at the
/// first class of k rows.
pub fn iterated(
    tuples: &[u32],
    m: usize,
    counts: &[u64],
    hierarchies: &[Hierarchy],
    weights: &[f64],
    k: u64,
) -> Result<Recoding> {
    iterated_by(
        tuples,
        m,
        counts,
        hierarchies,
        weights,
        k,
        StepCost::Entropy,
    )
}

/// [`iterated`] with each step minimizing `step_cost`.
///
/// # Errors
/// As [`iterated`].
///
/// # Complexity
/// As [`iterated`].
pub fn iterated_by(
    tuples: &[u32],
    m: usize,
    counts: &[u64],
    hierarchies: &[Hierarchy],
    weights: &[f64],
    k: u64,
    step_cost: StepCost,
) -> Result<Recoding> {
    cancel::check(KERNEL)?;
    let total = check_recoding_inputs(
        KERNEL,
        tuples,
        m,
        counts,
        hierarchies,
        ("weights", weights),
        k,
    )?;
    let invalid = |message: String| KernelError::InvalidArgument {
        kernel: KERNEL,
        message,
    };
    if weights.iter().any(|w| !(w.is_finite() && *w >= 0.0)) {
        return Err(invalid(format!(
            "weights must be finite and >= 0, got {weights:?}"
        )));
    }
    let lattice = Lattice::new(hierarchies)
        .ok_or_else(|| invalid(format!("the generalization lattice has more than {MAX_NODES} nodes (the product of the hierarchies' heights + 1): use fewer quasi-identifiers or lower hierarchies, or a method without a lattice ('forest', 'mondrian')")))?;
    let units = Units::new(hierarchies, step_cost);
    let mut state = State::new(tuples, m, counts, hierarchies, k, total);
    let mut infeasible = vec![false; lattice.nodes];
    let mut order: Vec<Reverse<(u64, u32, u32)>> = Vec::with_capacity(lattice.nodes);
    let mut levels = vec![0usize; m];
    while state.unreleased_rows >= k {
        cancel::check(KERNEL)?;
        let costs = match &units {
            Units::Entropy => state.entropies(weights),
            Units::Loss { extra, spread } => state.losses(extra, spread, weights),
        };
        order.clear();
        for node in (0..lattice.nodes).filter(|&node| !infeasible[node]) {
            lattice.levels(node, &mut levels);
            let cost: f64 = levels.iter().enumerate().map(|(j, &l)| costs[j][l]).sum();
            let height: usize = levels.iter().sum();
            order.push(Reverse((quantize(cost), height as u32, node as u32)));
        }
        // Nodes are checked in batches, one per thread; the first feasible one in order is
        // chosen, and every infeasible one stays so (rows only leave), so the result does
        // not depend on the batch size.
        let threads = rayon::current_num_threads().max(1);
        let mut heap = BinaryHeap::from(std::mem::take(&mut order));
        let mut nodes: Vec<(u32, Vec<usize>)> = Vec::with_capacity(threads);
        let mut released = false;
        // The first node alone: at small k it is mostly feasible.
        let mut batch = 1;
        while !released && !heap.is_empty() {
            nodes.clear();
            while nodes.len() < batch {
                let Some(Reverse((_, _, node))) = heap.pop() else {
                    break;
                };
                let mut at = vec![0usize; m];
                lattice.levels(node as usize, &mut at);
                nodes.push((node, at));
            }
            let feasible: Vec<bool> = nodes
                .par_iter()
                .map_init(KeyMap::default, |sums, (_, at)| state.has_class(at, sums))
                .collect();
            for ((node, at), feasible) in nodes.iter().zip(feasible) {
                if !feasible {
                    infeasible[*node as usize] = true;
                } else if !released {
                    released = state.release(at);
                }
            }
            batch = threads;
        }
        order = heap.into_vec();
        if !released {
            // The top node holds every unreleased row in one class: unreachable.
            return Err(invalid(
                "no generalization releases a class (an internal error)".to_owned(),
            ));
        }
    }
    state.place_leftover(&units, weights);
    Ok(state.finish())
}

/// The nodes of the generalization lattice (the product of the heights + 1), or `None`
/// above [`MAX_NODES`].
#[must_use]
pub fn lattice_nodes(hierarchies: &[Hierarchy]) -> Option<usize> {
    hierarchies.iter().try_fold(1usize, |nodes, h| {
        nodes
            .checked_mul(h.height() + 1)
            .filter(|&n| n <= MAX_NODES)
    })
}

/// Costs as integers, so that equal costs summed in another order still tie (the order
/// then falls to the lower node, as ARX's search prefers).
fn quantize(cost: f64) -> u64 {
    (cost * 1024.0).round() as u64
}

/// The full-domain generalizations: node ids in mixed radix of the levels, the last
/// attribute's the least significant digit.
struct Lattice {
    heights: Vec<usize>,
    nodes: usize,
}

impl Lattice {
    fn new(hierarchies: &[Hierarchy]) -> Option<Self> {
        let nodes = lattice_nodes(hierarchies)?;
        let heights = hierarchies.iter().map(Hierarchy::height).collect();
        Some(Self { heights, nodes })
    }

    fn levels(&self, mut node: usize, out: &mut [usize]) {
        for (j, &h) in self.heights.iter().enumerate().rev() {
            out[j] = node % (h + 1);
            node /= h + 1;
        }
    }
}

/// What one row costs per attribute and label: for [`StepCost::Loss`], per attribute the
/// leaves under each label less one (`extra[j][l][g]`) and the leaves less one (`spread[j]`,
/// at least 1), so that sums over labels are exact integers, whatever their order.
enum Units {
    Entropy,
    Loss {
        extra: Vec<Vec<Vec<u64>>>,
        spread: Vec<u64>,
    },
}

impl Units {
    fn new(hierarchies: &[Hierarchy], step_cost: StepCost) -> Self {
        if step_cost == StepCost::Entropy {
            return Self::Entropy;
        }
        let per_label = |h: &Hierarchy, l: usize| {
            let mut under = vec![0u64; h.width(l) as usize];
            for &g in h.level(l) {
                under[g as usize] += 1;
            }
            under.iter().map(|&u| u.saturating_sub(1)).collect()
        };
        Self::Loss {
            extra: hierarchies
                .iter()
                .map(|h| (0..=h.height()).map(|l| per_label(h, l)).collect())
                .collect(),
            spread: hierarchies
                .iter()
                .map(|h| h.leaves().saturating_sub(1).max(1) as u64)
                .collect(),
        }
    }

    /// The unweighted cost of one row of attribute `j` labelled `label` at `level`: the
    /// loss, or (for the entropy, which has no per-row cost) `level / height`.
    fn unit(&self, h: &Hierarchy, j: usize, level: usize, label: u32) -> f64 {
        match self {
            Self::Entropy => level as f64 / h.height().max(1) as f64,
            Self::Loss { extra, spread } => {
                extra[j][level][label as usize] as f64 / spread[j] as f64
            }
        }
    }
}

/// `n · log2 n` (0 for 0).
fn nlogn(n: u64) -> f64 {
    if n == 0 {
        0.0
    } else {
        let x = n as f64;
        x * x.log2()
    }
}

/// The iteration's state: unreleased tuples, their counts per label, the groups so far.
struct State<'a> {
    tuples: &'a [u32],
    m: usize,
    counts: &'a [u64],
    hierarchies: &'a [Hierarchy],
    k: u64,
    unreleased: Vec<usize>,
    unreleased_rows: u64,
    /// `label_rows[j][l][label]`: unreleased rows under each label of attribute `j` at
    /// level `l` (level 0: the leaves).
    label_rows: Vec<Vec<HashMap<u32, u64>>>,
    group_of: Vec<u32>,
    /// Per group its levels (`m` each), rows, and one member tuple.
    levels: Vec<u32>,
    rows: Vec<u64>,
    member: Vec<usize>,
    /// Released groups by (levels, labels), so a class released again joins its group.
    groups: HashMap<Vec<u32>, u32>,
    /// When every attribute's leaf count multiplies into a `u64`: per attribute and level
    /// (`first[j] + l`) each tuple's label times the attribute's stride, so a tuple's key
    /// at a node is the sum of its columns (the checks read columns, not hierarchies).
    columns: Option<Vec<Vec<u64>>>,
    first: Vec<usize>,
}

impl<'a> State<'a> {
    fn new(
        tuples: &'a [u32],
        m: usize,
        counts: &'a [u64],
        hierarchies: &'a [Hierarchy],
        k: u64,
        total: u64,
    ) -> Self {
        let mut label_rows: Vec<Vec<HashMap<u32, u64>>> = hierarchies
            .iter()
            .map(|h| vec![HashMap::new(); h.height() + 1])
            .collect();
        for (t, &c) in counts.iter().enumerate() {
            for (j, h) in hierarchies.iter().enumerate() {
                let leaf = tuples[t * m + j];
                for (l, map) in label_rows[j].iter_mut().enumerate() {
                    *map.entry(h.generalize(l, leaf)).or_insert(0) += c;
                }
            }
        }
        let mut first = Vec::with_capacity(m);
        let mut levels = 0;
        for h in hierarchies {
            first.push(levels);
            levels += h.height() + 1;
        }
        let columns = Self::columns(tuples, m, counts.len(), hierarchies);
        Self {
            tuples,
            m,
            counts,
            hierarchies,
            k,
            columns,
            first,
            unreleased: (0..counts.len()).filter(|&t| counts[t] > 0).collect(),
            unreleased_rows: total,
            label_rows,
            group_of: vec![u32::MAX; counts.len()],
            levels: Vec::new(),
            rows: Vec::new(),
            member: Vec::new(),
            groups: HashMap::new(),
        }
    }

    /// The strided label columns (see `columns`), or `None` when the leaf counts'
    /// product exceeds a `u64`.
    fn columns(
        tuples: &[u32],
        m: usize,
        n: usize,
        hierarchies: &[Hierarchy],
    ) -> Option<Vec<Vec<u64>>> {
        let mut strides = vec![1u64; m];
        let mut product = 1u64;
        for j in (0..m).rev() {
            strides[j] = product;
            product = product.checked_mul(hierarchies[j].leaves().max(1) as u64)?;
        }
        let mut columns = Vec::new();
        for (j, h) in hierarchies.iter().enumerate() {
            for l in 0..=h.height() {
                columns.push(
                    (0..n)
                        .map(|t| u64::from(h.generalize(l, tuples[t * m + j])) * strides[j])
                        .collect(),
                );
            }
        }
        Some(columns)
    }

    /// `costs[j][l]`: weighted entropy of attribute `j` at level `l` over the unreleased
    /// rows (`Σ_g b_g log2 b_g − Σ_x a_x log2 a_x`).
    fn entropies(&self, weights: &[f64]) -> Vec<Vec<f64>> {
        self.label_rows
            .iter()
            .zip(weights)
            .map(|(per_level, &w)| {
                let sums: Vec<f64> = per_level
                    .iter()
                    .map(|map| map.values().map(|&n| nlogn(n)).sum())
                    .collect();
                sums.iter().map(|s| w * (s - sums[0])).collect()
            })
            .collect()
    }

    /// `costs[j][l]`: weighted loss of attribute `j` at level `l` over the unreleased rows,
    /// `w_j · Σ_g b_g · extra[j][l][g] / spread[j]` (the sum exact in integers).
    fn losses(&self, extra: &[Vec<Vec<u64>>], spread: &[u64], weights: &[f64]) -> Vec<Vec<f64>> {
        (0..self.m)
            .map(|j| {
                self.label_rows[j]
                    .iter()
                    .zip(&extra[j])
                    .map(|(map, extra)| {
                        let sum: u128 = map
                            .iter()
                            .map(|(&g, &n)| u128::from(n) * u128::from(extra[g as usize]))
                            .sum();
                        weights[j] * sum as f64 / spread[j] as f64
                    })
                    .collect()
            })
            .collect()
    }

    /// The labels of tuple `t` at `levels`.
    fn labels(&self, t: usize, levels: &[usize], out: &mut Vec<u32>) {
        out.clear();
        for (j, h) in self.hierarchies.iter().enumerate() {
            out.push(h.generalize(levels[j], self.tuples[t * self.m + j]));
        }
    }

    /// Per attribute the label count at `levels`, when their product packs into a `u128`.
    fn radix(&self, levels: &[usize]) -> Option<Vec<u128>> {
        let mut product = 1u128;
        let mut radix = Vec::with_capacity(self.m);
        for (h, &l) in self.hierarchies.iter().zip(levels) {
            let width = u128::from(h.width(l));
            product = product.checked_mul(width)?;
            radix.push(width);
        }
        Some(radix)
    }

    /// The labels of tuple `t` at `levels` packed in mixed `radix`.
    fn key(&self, t: usize, levels: &[usize], radix: &[u128]) -> u128 {
        let mut key = 0u128;
        for (j, h) in self.hierarchies.iter().enumerate() {
            let label = h.generalize(levels[j], self.tuples[t * self.m + j]);
            key = key * radix[j] + u128::from(label);
        }
        key
    }

    /// The class (dense ids) of every unreleased tuple at `levels`, and the rows per
    /// class. Labels are packed into one `u128` when their widths allow it.
    fn group(&self, levels: &[usize]) -> (Vec<u32>, Vec<u64>) {
        let items = &self.unreleased;
        let mut ids = Vec::with_capacity(items.len());
        let mut rows: Vec<u64> = Vec::new();
        let mut add = |id: u32, next: u32, t: usize, rows: &mut Vec<u64>| {
            if id == next {
                rows.push(0);
            }
            rows[id as usize] += self.counts[t];
            ids.push(id);
        };
        if let Some(radix) = self.radix(levels) {
            let mut seen: KeyMap<u32> = KeyMap::default();
            for &t in items {
                let next = rows.len() as u32;
                let id = *seen.entry(self.key(t, levels, &radix)).or_insert(next);
                add(id, next, t, &mut rows);
            }
        } else {
            let mut seen: HashMap<Vec<u32>, u32> = HashMap::new();
            let mut key = Vec::with_capacity(self.m);
            for &t in items {
                self.labels(t, levels, &mut key);
                let next = rows.len() as u32;
                let id = *seen.entry(key.clone()).or_insert(next);
                add(id, next, t, &mut rows);
            }
        }
        (ids, rows)
    }

    /// Whether some class of the unreleased rows at `levels` holds k rows (with the label
    /// columns, stops at the first).
    fn has_class(&self, levels: &[usize], sums: &mut KeyMap<u64>) -> bool {
        sums.clear();
        if let Some(columns) = &self.columns {
            let at: Vec<&[u64]> = levels
                .iter()
                .enumerate()
                .map(|(j, &l)| columns[self.first[j] + l].as_slice())
                .collect();
            for &t in &self.unreleased {
                let key: u64 = at.iter().map(|column| column[t]).sum();
                let sum = sums.entry(u128::from(key)).or_insert(0);
                *sum += self.counts[t];
                if *sum >= self.k {
                    return true;
                }
            }
            return false;
        }
        // Leaf counts too many for the columns: group in full.
        self.group(levels).1.iter().any(|&n| n >= self.k)
    }

    /// Release every class of at least k unreleased rows at `levels`; false if none.
    fn release(&mut self, levels: &[usize]) -> bool {
        let (ids, class_rows) = self.group(levels);
        if class_rows.iter().all(|&n| n < self.k) {
            return false;
        }
        let mut group_of_class = vec![u32::MAX; class_rows.len()];
        let mut kept = Vec::with_capacity(self.unreleased.len());
        let mut key = Vec::with_capacity(2 * self.m);
        let unreleased = std::mem::take(&mut self.unreleased);
        for (&t, &c) in unreleased.iter().zip(&ids) {
            if class_rows[c as usize] < self.k {
                kept.push(t);
                continue;
            }
            if group_of_class[c as usize] == u32::MAX {
                self.labels(t, levels, &mut key);
                key.extend(levels.iter().map(|&l| l as u32));
                let next = self.rows.len() as u32;
                let g = *self.groups.entry(key.clone()).or_insert(next);
                if g == next {
                    self.levels.extend(levels.iter().map(|&l| l as u32));
                    self.rows.push(0);
                    self.member.push(t);
                }
                group_of_class[c as usize] = g;
            }
            let g = group_of_class[c as usize];
            self.group_of[t] = g;
            self.rows[g as usize] += self.counts[t];
            self.take(t);
        }
        self.unreleased = kept;
        true
    }

    /// Remove tuple `t`'s rows from the unreleased counts.
    fn take(&mut self, t: usize) {
        let c = self.counts[t];
        self.unreleased_rows -= c;
        for (j, h) in self.hierarchies.iter().enumerate() {
            let leaf = self.tuples[t * self.m + j];
            for (l, map) in self.label_rows[j].iter_mut().enumerate() {
                let label = h.generalize(l, leaf);
                if let Some(n) = map.get_mut(&label) {
                    *n -= c;
                    if *n == 0 {
                        map.remove(&label);
                    }
                }
            }
        }
    }

    /// The last unreleased rows (fewer than k) join the group whose generalization to
    /// hold them costs least: per attribute the lowest level at or above the group's
    /// where they share its label; the cost is the group's rows' added cost plus the
    /// leftover rows' cost there, in `units` (for the entropy, `levels / height` per row).
    fn place_leftover(&mut self, units: &Units, weights: &[f64]) {
        if self.unreleased.is_empty() {
            return;
        }
        let m = self.m;
        let left = self.unreleased_rows as f64;
        let mut best: Option<(f64, usize, Vec<u32>)> = None;
        for g in 0..self.rows.len() {
            let rep = self.member[g];
            let mut raised = Vec::with_capacity(m);
            let mut cost = 0.0;
            for (j, h) in self.hierarchies.iter().enumerate() {
                let from = self.levels[g * m + j] as usize;
                let anchor = self.tuples[rep * m + j];
                let level = (from..=h.height())
                    .find(|&l| {
                        self.unreleased.iter().all(|&t| {
                            h.generalize(l, self.tuples[t * m + j]) == h.generalize(l, anchor)
                        })
                    })
                    .unwrap_or(h.height());
                let before = units.unit(h, j, from, h.generalize(from, anchor));
                let after = units.unit(h, j, level, h.generalize(level, anchor));
                cost += weights[j] * ((self.rows[g] as f64) * (after - before) + left * after);
                raised.push(level as u32);
            }
            if best.as_ref().is_none_or(|(c, _, _)| cost < *c) {
                best = Some((cost, g, raised));
            }
        }
        let Some((_, g, raised)) = best else { return };
        self.levels[g * m..(g + 1) * m].copy_from_slice(&raised);
        for t in std::mem::take(&mut self.unreleased) {
            self.group_of[t] = g as u32;
            self.rows[g] += self.counts[t];
        }
    }

    fn finish(self) -> Recoding {
        Recoding {
            group_of_tuple: self
                .group_of
                .iter()
                .map(|&g| if g == u32::MAX { 0 } else { g })
                .collect(),
            groups: self.rows.len(),
            levels: self.levels,
            rows: self.rows,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn flat(leaves: u32) -> Hierarchy {
        Hierarchy::flat(leaves)
    }

    /// Leaves 0..n in pairs, then `*`.
    fn pairs(n: u32) -> Hierarchy {
        let leaves: Vec<u32> = (0..n).collect();
        let halves: Vec<u32> = (0..n).map(|x| x / 2).collect();
        let top = vec![0; n as usize];
        Hierarchy::try_from_levels(&[&leaves, &halves, &top]).unwrap()
    }

    /// Every released combination of labels holds at least k rows, and every row is in a
    /// group whose labels cover it.
    fn check(tuples: &[u32], m: usize, counts: &[u64], hs: &[Hierarchy], k: u64, r: &Recoding) {
        let mut combos: HashMap<Vec<u32>, u64> = HashMap::new();
        for (t, &c) in counts.iter().enumerate() {
            if c == 0 {
                continue;
            }
            let g = r.group_of_tuple[t] as usize;
            assert!(g < r.groups);
            let key: Vec<u32> = (0..m)
                .flat_map(|j| {
                    let l = r.levels[g * m + j];
                    [l, hs[j].generalize(l as usize, tuples[t * m + j])]
                })
                .collect();
            *combos.entry(key).or_insert(0) += c;
        }
        // Labels at different levels may coincide only as the same label.
        assert!(combos.values().all(|&n| n >= k), "{combos:?}");
        assert_eq!(r.rows.iter().sum::<u64>(), counts.iter().sum::<u64>());
    }

    #[test]
    fn frequent_tuples_stay_exact() {
        // Ten copies of (0, 0), ten of (1, 1), and three odd tuples.
        let tuples = [0, 0, 1, 1, 2, 3, 3, 2, 3, 3];
        let counts = [10, 10, 1, 1, 1];
        let hs = [pairs(4), pairs(4)];
        let r = iterated(&tuples, 2, &counts, &hs, &[1.0, 1.0], 3).unwrap();
        check(&tuples, 2, &counts, &hs, 3, &r);
        for t in 0..2 {
            let g = r.group_of_tuple[t] as usize;
            assert_eq!(&r.levels[g * 2..g * 2 + 2], &[0, 0]);
        }
    }

    #[test]
    fn weights_decide_which_attribute_is_generalized() {
        // (0,0) (1,0) (0,1) (1,1), three rows each: k = 6 needs one attribute generalized.
        let tuples = [0, 0, 1, 0, 0, 1, 1, 1];
        let counts = [3, 3, 3, 3];
        let hs = [flat(2), flat(2)];
        for (weights, kept) in [([1.0, 0.1], 0), ([0.1, 1.0], 1)] {
            let r = iterated(&tuples, 2, &counts, &hs, &weights, 6).unwrap();
            check(&tuples, 2, &counts, &hs, 6, &r);
            for g in 0..r.groups {
                assert_eq!(r.levels[g * 2 + kept], 0, "{weights:?}: {r:?}");
            }
        }
    }

    #[test]
    fn loss_generalizes_the_attribute_that_loses_least() {
        // (0,0) (1,0) (0,1) (1,1), three rows each: k = 6 needs one attribute generalized.
        // Attribute 0 has 4 leaves in pairs (a pair loses 1/3 per row), attribute 1 three
        // flat leaves (its root loses 1 per row): the loss generalizes attribute 0.
        let tuples = [0, 0, 1, 0, 0, 1, 1, 1];
        let counts = [3, 3, 3, 3];
        let hs = [pairs(4), flat(3)];
        let r = iterated_by(&tuples, 2, &counts, &hs, &[1.0, 1.0], 6, StepCost::Loss).unwrap();
        check(&tuples, 2, &counts, &hs, 6, &r);
        for g in 0..r.groups {
            assert_eq!(&r.levels[g * 2..g * 2 + 2], &[1, 0], "{r:?}");
        }
        // Weighted ten times as much, attribute 0 is kept instead.
        let r = iterated_by(&tuples, 2, &counts, &hs, &[10.0, 1.0], 6, StepCost::Loss).unwrap();
        for g in 0..r.groups {
            assert_eq!(&r.levels[g * 2..g * 2 + 2], &[0, 1], "{r:?}");
        }
    }

    #[test]
    fn leftover_rows_join_a_group() {
        // 7 rows of (0), 2 of (1), 1 of (2) with k = 3: the last three cannot form a
        // class of their own at level 0, and (1), (2) are fewer than k anyway.
        let tuples = [0, 1, 2, 3];
        let counts = [7, 2, 1, 0];
        let hs = [pairs(4)];
        let r = iterated(&tuples, 1, &counts, &hs, &[1.0], 3).unwrap();
        check(&tuples, 1, &counts, &hs, 3, &r);
        // Two rows left below k at the end (the pair (2, 3) has one row) join a group.
        let r = iterated(&tuples, 1, &counts, &hs, &[1.0], 8).unwrap();
        check(&tuples, 1, &counts, &hs, 8, &r);
        assert_eq!(r.groups, 1);
    }

    #[test]
    fn bad_inputs_are_errors() {
        let hs = [flat(2)];
        assert!(iterated(&[0, 1], 1, &[1, 1], &hs, &[1.0], 0).is_err());
        assert!(iterated(&[0, 1], 1, &[1, 1], &hs, &[1.0], 3).is_err());
        assert!(iterated(&[0, 1], 1, &[1, 1], &hs, &[-1.0], 1).is_err());
        assert!(iterated(&[0, 1], 1, &[1, 1], &hs, &[f64::NAN], 1).is_err());
        assert!(iterated(&[0, 1], 1, &[1, 1], &hs, &[1.0, 1.0], 1).is_err());
        // 16 attributes of height 2: 3^16 nodes.
        let wide: Vec<Hierarchy> = (0..16).map(|_| pairs(4)).collect();
        let err = iterated(&[0; 16], 16, &[1], &wide, &[1.0; 16], 1).unwrap_err();
        assert!(err.to_string().contains("lattice"), "{err}");
    }

    #[test]
    fn empty_table_releases_nothing() {
        let r = iterated(&[], 1, &[], &[flat(2)], &[1.0], 5).unwrap();
        assert_eq!(r.groups, 0);
    }

    #[test]
    fn random_tables_are_k_anonymous() {
        // A small linear congruential generator: reproducible without a crate.
        let mut seed = 12345u64;
        let mut next = |n: u32| {
            seed = seed
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            ((seed >> 33) % u64::from(n)) as u32
        };
        for case in 0..40 {
            let m = 1 + (case % 4);
            let hs: Vec<Hierarchy> = (0..m)
                .map(|j| if j % 2 == 0 { pairs(6) } else { flat(3) })
                .collect();
            let n = 1 + next(30) as usize;
            let mut tuples = Vec::new();
            let mut counts = Vec::new();
            for _ in 0..n {
                for h in &hs {
                    tuples.push(next(h.leaves() as u32));
                }
                counts.push(u64::from(next(4)));
            }
            let total: u64 = counts.iter().sum();
            let k = 1 + u64::from(next(6));
            let weights: Vec<f64> = (0..m).map(|_| f64::from(next(5))).collect();
            for step_cost in [StepCost::Entropy, StepCost::Loss] {
                match iterated_by(&tuples, m, &counts, &hs, &weights, k, step_cost) {
                    Ok(r) => check(&tuples, m, &counts, &hs, k, &r),
                    Err(e) => assert!(total > 0 && total < k, "{e}"),
                }
            }
            // The early-stopping check agrees with a full grouping, at every node.
            if total >= k {
                let state = State::new(&tuples, m, &counts, &hs, k, total);
                let lattice = Lattice::new(&hs).unwrap();
                let mut levels = vec![0; m];
                let mut sums = KeyMap::default();
                for node in 0..lattice.nodes {
                    lattice.levels(node, &mut levels);
                    let (_, rows) = state.group(&levels);
                    let full = rows.iter().any(|&n| n >= k);
                    assert_eq!(state.has_class(&levels, &mut sums), full, "{levels:?}");
                }
            }
        }
    }
}
