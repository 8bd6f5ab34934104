//! The iteration's state: the unreleased tuples, their rows per label, the groups so far.

use std::collections::HashMap;

use super::units::Units;
use crate::hierarchy::Hierarchy;
use crate::lattice::group::KeyMap;
use crate::priority::Recoding;

/// `n · log2 n` (0 for 0).
pub(super) fn nlogn(n: u64) -> f64 {
    if n == 0 {
        0.0
    } else {
        let x = n as f64;
        x * x.log2()
    }
}

/// The iteration's state: unreleased tuples, their counts per label, the groups so far.
pub(super) struct State<'a> {
    tuples: &'a [u32],
    m: usize,
    counts: &'a [u64],
    hierarchies: &'a [Hierarchy],
    k: u64,
    pub(super) unreleased: Vec<usize>,
    pub(super) unreleased_rows: u64,
    /// `label_rows[j][l][label]`: unreleased rows under each label of attribute `j` at
    /// level `l` (level 0: the leaves).
    pub(super) label_rows: Vec<Vec<HashMap<u32, u64>>>,
    pub(super) group_of: Vec<u32>,
    /// Per group its levels (`m` each), rows, and one member tuple.
    levels: Vec<u32>,
    rows: Vec<u64>,
    member: Vec<usize>,
    /// Released groups by (levels, labels), so a class released again joins its group.
    groups: HashMap<Vec<u32>, u32>,
    /// When every attribute's leaf count multiplies into a `u64`: per attribute and level
    /// (`first[j] + l`) each tuple's label, so a tuple's key at a node is the sum of its
    /// labels times the attributes' strides (the checks read columns, not hierarchies).
    columns: Option<Columns>,
    first: Vec<usize>,
}

impl<'a> State<'a> {
    pub(super) fn new(
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

    /// The label columns (see `columns`), or `None` when the leaf counts' product
    /// exceeds a `u64`.
    fn columns(tuples: &[u32], m: usize, n: usize, hierarchies: &[Hierarchy]) -> Option<Columns> {
        let mut strides = vec![1u64; m];
        let mut product = 1u64;
        for j in (0..m).rev() {
            strides[j] = product;
            product = product.checked_mul(hierarchies[j].leaves().max(1) as u64)?;
        }
        let mut labels = Vec::new();
        for (j, h) in hierarchies.iter().enumerate() {
            for l in 0..=h.height() {
                labels.push((0..n).map(|t| h.generalize(l, tuples[t * m + j])).collect());
            }
        }
        Some(Columns { labels, strides })
    }

    /// The columns of `levels` with their strides.
    fn columns_at<'c>(&self, columns: &'c Columns, levels: &[usize]) -> Vec<(&'c [u32], u64)> {
        levels
            .iter()
            .enumerate()
            .map(|(j, &l)| {
                (
                    columns.labels[self.first[j] + l].as_slice(),
                    columns.strides[j],
                )
            })
            .collect()
    }

    /// `costs[j][l]`: weighted entropy of attribute `j` at level `l` over the unreleased
    /// rows (`Σ_g b_g log2 b_g − Σ_x a_x log2 a_x`).
    pub(super) fn entropies(&self, weights: &[f64]) -> Vec<Vec<f64>> {
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
    pub(super) fn losses(
        &self,
        extra: &[Vec<Vec<u64>>],
        spread: &[u64],
        weights: &[f64],
    ) -> Vec<Vec<f64>> {
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
    pub(super) fn group(&self, levels: &[usize]) -> (Vec<u32>, Vec<u64>) {
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
    pub(super) fn has_class(&self, levels: &[usize], sums: &mut KeyMap<u64>) -> bool {
        sums.clear();
        if let Some(columns) = &self.columns {
            let at = self.columns_at(columns, levels);
            for &t in &self.unreleased {
                let key = key_of(&at, t);
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
    pub(super) fn release(&mut self, levels: &[usize]) -> bool {
        let classes = self.classes(levels, &mut Table::default());
        for class in &classes {
            self.release_class(levels, class);
        }
        self.forget_released();
        !classes.is_empty()
    }

    /// Drop the released tuples from `unreleased`.
    pub(super) fn forget_released(&mut self) {
        let group_of = &self.group_of;
        self.unreleased.retain(|&t| group_of[t] == u32::MAX);
    }

    /// Release the unreleased tuples `class`, one class at `levels`, into the group of
    /// its labels (a new one, or the group released there before). `unreleased` still
    /// lists them until [`Self::forget_released`].
    pub(super) fn release_class(&mut self, levels: &[usize], class: &[u32]) {
        let first = class[0] as usize;
        let mut key = Vec::with_capacity(2 * self.m);
        self.labels(first, levels, &mut key);
        key.extend(levels.iter().map(|&l| l as u32));
        let next = self.rows.len() as u32;
        let g = *self.groups.entry(key).or_insert(next);
        if g == next {
            self.levels.extend(levels.iter().map(|&l| l as u32));
            self.rows.push(0);
            self.member.push(first);
        }
        for t in class.iter().map(|&t| t as usize) {
            self.group_of[t] = g;
            self.rows[g as usize] += self.counts[t];
            self.take(t);
        }
    }

    /// The classes of at least k rows among the unreleased tuples at `levels`: their
    /// tuples, in order of each class's first tuple. `table` is scratch space.
    pub(super) fn classes(&self, levels: &[usize], table: &mut Table) -> Vec<Vec<u32>> {
        let (ids, rows) = match &self.columns {
            Some(columns) => {
                let at = self.columns_at(columns, levels);
                let keys: Vec<u64> = self.unreleased.iter().map(|&t| key_of(&at, t)).collect();
                table.group(&keys, &self.unreleased, self.counts)
            }
            None => self.group(levels),
        };
        let mut slot = vec![u32::MAX; rows.len()];
        let mut classes: Vec<Vec<u32>> = Vec::new();
        for (&t, &c) in self.unreleased.iter().zip(&ids) {
            if rows[c as usize] < self.k {
                continue;
            }
            if slot[c as usize] == u32::MAX {
                slot[c as usize] = classes.len() as u32;
                classes.push(Vec::new());
            }
            classes[slot[c as usize] as usize].push(t as u32);
        }
        classes
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
    pub(super) fn place_leftover(&mut self, units: &Units, weights: &[f64]) {
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

    pub(super) fn finish(self) -> Recoding {
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

/// Per attribute and level (`first[j] + l`) each tuple's label, and per attribute the
/// stride of its labels in a key (the product of the later attributes' leaf counts).
struct Columns {
    labels: Vec<Vec<u32>>,
    strides: Vec<u64>,
}

/// Tuple `t`'s key in the columns `at` (see [`State::columns_at`]).
fn key_of(at: &[(&[u32], u64)], t: usize) -> u64 {
    at.iter()
        .map(|&(labels, stride)| u64::from(labels[t]) * stride)
        .sum()
}

/// An open-addressing table grouping `u64` keys (linear probing), kept between calls.
#[derive(Default)]
pub(super) struct Table {
    keys: Vec<u64>,
    ids: Vec<u32>,
}

impl Table {
    /// The class (dense ids, in order of first occurrence) of every key, and the rows
    /// (`counts` of `items`) per class.
    pub(super) fn group(
        &mut self,
        keys: &[u64],
        items: &[usize],
        counts: &[u64],
    ) -> (Vec<u32>, Vec<u64>) {
        let bits = (2 * keys.len())
            .max(16)
            .next_power_of_two()
            .trailing_zeros();
        let size = 1usize << bits;
        self.keys.clear();
        self.keys.resize(size, 0);
        self.ids.clear();
        self.ids.resize(size, u32::MAX);
        let mask = size - 1;
        let mut rows: Vec<u64> = Vec::new();
        let ids = keys
            .iter()
            .zip(items)
            .map(|(&key, &t)| {
                let mut at = (key.wrapping_mul(0x9e37_79b9_7f4a_7c15) >> (64 - bits)) as usize;
                loop {
                    let id = self.ids[at];
                    if id == u32::MAX {
                        let id = rows.len() as u32;
                        self.keys[at] = key;
                        self.ids[at] = id;
                        rows.push(counts[t]);
                        return id;
                    }
                    if self.keys[at] == key {
                        rows[id as usize] += counts[t];
                        return id;
                    }
                    at = (at + 1) & mask;
                }
            })
            .collect();
        (ids, rows)
    }
}
