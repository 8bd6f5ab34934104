//! FOREST: a forest whose trees hold at least k rows, built from nearest neighbours.
//!
//! Aggarwal et al. (2005) build a directed forest over the cost graph of the rows: every
//! tree lighter than k rows grows by an edge from its root to the nearest vertex outside
//! it, until every tree holds at least k rows. The forest costs at most the optimal
//! k-anonymization; DECOMPOSE ([`crate::decompose`]) then cuts large trees into groups.
//!
//! The cost graph is never materialized: identical rows are one weighted vertex, and
//! every vertex keeps only its nearest neighbours ([`nearest_neighbours`]), which is
//! enough for an exact nearest-outside lookup (see [`forest`]).
//!
//! Ties are broken by vertex index everywhere (costs are exact, see [`crate::cost`]), so
//! the same input always gives the same forest.

use rayon::prelude::*;

use crate::cost::CostModel;
use crate::error::{KernelError, Result};

/// Exact `count` nearest neighbours of every vertex under the model's pair cost.
///
/// # Arguments
/// * `tuples` – the vertices' rows, row-major: `m` leaf codes per vertex. Rows should be
///   distinct (collapse duplicates into weights); a duplicate is a neighbour at cost 0.
/// * `m` – the number of attributes, [`CostModel::attributes`].
/// * `model` – the pair cost.
/// * `count` – how many neighbours to list per vertex (capped at `n − 1`).
///
/// # Returns
/// For every vertex `a`, its `count` nearest other vertices as `(cost, index)`, sorted by
/// cost and then index (the first `count` of all vertices `b ≠ a` in that order). A
/// vertex never lists itself.
///
/// # Errors
/// [`KernelError::InvalidArgument`] if `m` differs from the model's attribute count,
/// `tuples` is not a whole number of rows, there are more than `u32::MAX` rows or a code
/// is not a leaf of its attribute's hierarchy.
///
/// # Complexity
/// O(n² · p) time for `p ≤ m` cost lookups per pair, parallel over vertices with rayon,
/// plus O(n · count²) at worst to keep each list sorted; O(n · (m + count)) space.
/// Attributes whose leaf counts multiply to at most min(4096, n / 4) share one lookup:
/// their joint cost row is built once per vertex. Attributes of more than 256 leaves
/// cost O(n_j · L_j) per vertex for their row when `n_j ≤ n`, and a walk of O(L_j) per
/// pair otherwise.
///
/// # Examples
/// ```
/// use kanon_core::cost::{CostModel, LevelCost};
/// use kanon_core::forest::nearest_neighbours;
/// use kanon_core::Hierarchy;
/// let model = CostModel::try_new(vec![Hierarchy::flat(3), Hierarchy::flat(2)],
///                                vec![1.0, 1.0], LevelCost::Height).unwrap();
/// let tuples = [0, 0, /**/ 0, 1, /**/ 1, 0, /**/ 2, 1];
/// let nn = nearest_neighbours(&tuples, 2, &model, 2).unwrap();
/// assert_eq!(nn[0], vec![(1.0, 1), (1.0, 2)]);
/// assert_eq!(nn[3], vec![(1.0, 1), (2.0, 0)]);
/// ```
pub fn nearest_neighbours(
    tuples: &[u32],
    m: usize,
    model: &CostModel,
    count: usize,
) -> Result<Vec<Vec<(f64, u32)>>> {
    let n = model.check_tuples(tuples, m, "nearest_neighbours")?;
    let count = count.min(n.saturating_sub(1));
    if count == 0 {
        return Ok(vec![Vec::new(); n]);
    }
    let leaves: Vec<usize> = (0..m).map(|j| model.hierarchy(j).leaves()).collect();
    // Per attribute: its dense table, a row computed per vertex, or a walk per pair.
    let sources: Vec<Source<'_>> = (0..m)
        .map(|j| match model.dense_table(j) {
            Some(table) => Source::Table(table),
            None if leaves[j] <= n => Source::Row,
            None => Source::Walk,
        })
        .collect();
    let walks: Vec<usize> = (0..m)
        .filter(|&j| matches!(sources[j], Source::Walk))
        .collect();
    let packs = packs(&leaves, &sources, n);
    // Each vertex's joint code in every pack (mixed radix, first attribute most
    // significant), row-major.
    let p = packs.len();
    let leaves_ref = &leaves;
    let packed: Vec<u32> = tuples
        .chunks_exact(m)
        .flat_map(|row| {
            packs.iter().map(move |pack| {
                pack.iter()
                    .fold(0usize, |code, &j| code * leaves_ref[j] + row[j] as usize)
                    as u32
            })
        })
        .collect();
    let scan = Scan {
        packed: &packed,
        packs: p,
        tuples,
        m,
        walks: &walks,
        model,
    };
    let lists = (0..n)
        .into_par_iter()
        .map_init(
            || (vec![Vec::new(); m], vec![Vec::new(); p]),
            |(attribute_rows, pack_rows): &mut (Vec<Vec<u64>>, Vec<Vec<u64>>), a| {
                let ta = &tuples[a * m..(a + 1) * m];
                for (j, source) in sources.iter().enumerate() {
                    if matches!(source, Source::Row) {
                        model.fill_row(j, ta[j], &mut attribute_rows[j]);
                    }
                }
                let attribute_row = |j: usize| -> &[u64] {
                    match sources[j] {
                        Source::Table(table) => {
                            let start = ta[j] as usize * leaves[j];
                            &table[start..start + leaves[j]]
                        }
                        _ => &attribute_rows[j],
                    }
                };
                for (pack, out) in packs.iter().zip(pack_rows.iter_mut()) {
                    if let [first, rest @ ..] = pack.as_slice() {
                        if !rest.is_empty() {
                            joint_row(attribute_row(*first), rest, &attribute_row, out);
                        }
                    }
                }
                let rows: Vec<&[u64]> = packs
                    .iter()
                    .zip(pack_rows.iter())
                    .map(|(pack, joint)| match pack.as_slice() {
                        [only] => attribute_row(*only),
                        _ => joint.as_slice(),
                    })
                    .collect();
                let best = match rows.len() {
                    1 => scan.run::<1>(&rows, a, count),
                    2 => scan.run::<2>(&rows, a, count),
                    3 => scan.run::<3>(&rows, a, count),
                    4 => scan.run::<4>(&rows, a, count),
                    5 => scan.run::<5>(&rows, a, count),
                    6 => scan.run::<6>(&rows, a, count),
                    7 => scan.run::<7>(&rows, a, count),
                    8 => scan.run::<8>(&rows, a, count),
                    9 => scan.run::<9>(&rows, a, count),
                    10 => scan.run::<10>(&rows, a, count),
                    11 => scan.run::<11>(&rows, a, count),
                    12 => scan.run::<12>(&rows, a, count),
                    _ => scan.run_any(&rows, a, count),
                };
                best.into_iter()
                    .map(|(units, b)| (model.units_to_cost(units), b))
                    .collect::<Vec<_>>()
            },
        )
        .collect();
    Ok(lists)
}

/// One vertex's scan over all others: the pair cost is one lookup per pack plus a walk
/// per attribute without a cost row.
struct Scan<'a> {
    /// Joint codes, `packs` per vertex.
    packed: &'a [u32],
    packs: usize,
    tuples: &'a [u32],
    m: usize,
    walks: &'a [usize],
    model: &'a CostModel,
}

impl Scan<'_> {
    /// The `count` nearest other vertices of `a` (`1 ≤ count < n`) as `(units, index)`,
    /// for `N ≥ 1` packs known at compile time, so the lookups unroll.
    fn run<const N: usize>(&self, rows: &[&[u64]], a: usize, count: usize) -> Vec<(u64, u32)> {
        let rows: [&[u64]; N] = std::array::from_fn(|i| rows[i]);
        let mut best = Best::new(count);
        for (b, codes) in self.packed.chunks_exact(N).enumerate() {
            let units: u64 = (0..N).map(|i| rows[i][codes[i] as usize]).sum();
            best.offer(units + self.walked(a, b), b, a);
        }
        best.list
    }

    /// [`Self::run`] for any number of packs (including none).
    fn run_any(&self, rows: &[&[u64]], a: usize, count: usize) -> Vec<(u64, u32)> {
        let mut best = Best::new(count);
        let n = self.tuples.len() / self.m;
        for b in 0..n {
            let codes = &self.packed[b * self.packs..(b + 1) * self.packs];
            let units: u64 = rows
                .iter()
                .zip(codes)
                .map(|(row, &c)| row[c as usize])
                .sum();
            best.offer(units + self.walked(a, b), b, a);
        }
        best.list
    }

    /// Units of the attributes without cost rows between vertices `a` and `b`.
    fn walked(&self, a: usize, b: usize) -> u64 {
        let (m, t) = (self.m, self.tuples);
        self.walks
            .iter()
            .map(|&j| self.model.attribute_units(j, t[a * m + j], t[b * m + j]))
            .sum()
    }
}

/// The `count` smallest `(units, index)` offered so far, sorted.
struct Best {
    list: Vec<(u64, u32)>,
    count: usize,
    /// The largest kept units once the list is full, `u64::MAX` before.
    worst: u64,
}

impl Best {
    fn new(count: usize) -> Self {
        Self {
            list: Vec::with_capacity(count + 1),
            count,
            worst: u64::MAX,
        }
    }

    /// Offer vertex `b` at `units`; vertices come in increasing index order and `a`
    /// (the scanning vertex) is skipped.
    #[inline]
    fn offer(&mut self, units: u64, b: usize, a: usize) {
        // Later vertices have larger indices: on a tie with the worst kept entry they
        // lose, so a full list only takes strictly cheaper ones.
        if units >= self.worst || b == a {
            return;
        }
        if self.list.len() == self.count {
            self.list.pop();
        }
        let at = self.list.partition_point(|&(c, _)| c <= units);
        // b < n ≤ u32::MAX (checked by check_tuples).
        self.list.insert(at, (units, b as u32));
        if self.list.len() == self.count {
            self.worst = self.list[self.count - 1].0;
        }
    }
}

/// Largest number of joint codes of a pack of several attributes (a joint cost row of
/// 32 KiB).
const PACK_CODES: usize = 4096;

/// Group the attributes that have cost rows into packs, in attribute order, whose joint
/// code count (the product of their leaf counts) stays within [`PACK_CODES`] and a
/// quarter of the vertex count, so that building a pack's joint row per vertex costs
/// less than the pairs it saves. An attribute too large to share a pack is alone.
fn packs(leaves: &[usize], sources: &[Source<'_>], n: usize) -> Vec<Vec<usize>> {
    let limit = (n / 4).min(PACK_CODES);
    let mut packs: Vec<Vec<usize>> = Vec::new();
    let mut product = usize::MAX;
    for (j, source) in sources.iter().enumerate() {
        if matches!(source, Source::Walk) {
            continue;
        }
        match product.checked_mul(leaves[j].max(1)) {
            Some(joint) if joint <= limit => {
                product = joint;
                if let Some(last) = packs.last_mut() {
                    last.push(j);
                }
            }
            _ => {
                product = leaves[j].max(1);
                packs.push(vec![j]);
            }
        }
    }
    packs
}

/// The joint cost row of a pack: `out[code]` for every joint code of the attributes
/// (`first`, then `rest` in order), each attribute's units read from `row_of(j)`.
fn joint_row<'r>(
    first: &[u64],
    rest: &[usize],
    row_of: &dyn Fn(usize) -> &'r [u64],
    out: &mut Vec<u64>,
) {
    out.clear();
    out.extend_from_slice(first);
    let mut next = Vec::new();
    for &j in rest {
        let row = row_of(j);
        next.clear();
        next.reserve(out.len() * row.len());
        for &high in out.iter() {
            next.extend(row.iter().map(|&low| high + low));
        }
        std::mem::swap(out, &mut next);
    }
}

/// Where [`nearest_neighbours`] reads one attribute's pair costs.
enum Source<'a> {
    /// The model's dense `leaf × leaf` table.
    Table(&'a [u64]),
    /// A row `leaf → units` computed once per vertex.
    Row,
    /// A hierarchy walk per pair.
    Walk,
}

/// FOREST (Aggarwal et al. 2005): grow a directed forest until every tree weighs at least
/// `k`.
///
/// Starting from singletons, vertices are visited in index order; while the component of
/// the current vertex weighs less than `k`, its root `u` (its only vertex without an
/// out-edge) gets the edge `u → v` to the nearest vertex `v` outside the component, and
/// the two components merge (union-find by size with path compression).
///
/// `v` is the first entry of `u`'s neighbour list outside the component. That is the
/// nearest vertex outside as long as the list holds any vertex outside: the list is a
/// prefix of all other vertices in (cost, index) order. Lists of `k − 1` entries always
/// do: a component lighter than `k` whose vertices weigh at least 1 has at most `k − 1`
/// vertices, so at most `k − 2` besides `u`, and at least one of `u`'s `k − 1` distinct
/// neighbours lies outside. Only shorter lists can run out; then `fallback` is asked.
///
/// # Arguments
/// * `weights` – the multiplicity of each vertex (a row occurring w times is one vertex of
///   weight w), each at least 1.
/// * `k` – the smallest tree weight, at least 1.
/// * `neighbours` – per vertex, other vertices as `(cost, index)` sorted by cost then
///   index, as from [`nearest_neighbours`]; only the order is used.
/// * `fallback` – `fallback(u, inside)` returns the nearest vertex `v` (by cost, then
///   index) with `!inside(v)`, where `inside` tells whether a vertex is in `u`'s
///   component, or `None` if every vertex is inside. Called only when `u`'s list runs out;
///   pass `|_, _| None` with lists of at least `k − 1` entries.
///
/// # Returns
/// `parent[u]`: the out-edge of each vertex, `None` for the root of each tree. Every tree
/// weighs at least `k`.
///
/// # Errors
/// * [`KernelError::LengthMismatch`] if `neighbours` and `weights` differ in length.
/// * [`KernelError::InvalidArgument`] for `k = 0`, a weight of 0, more than `u32::MAX`
///   vertices, a list entry that is out of range or the vertex itself, `k` above the total
///   weight ("k exceeds the number of rows"), or a fallback that finds no vertex (or one
///   inside the component) although the component is lighter than `k`.
///
/// # Complexity
/// O(n · α(n) + Σ list lengths) time besides the fallback (each root's list is scanned
/// once), O(n) space.
///
/// # Examples
/// ```
/// use kanon_core::forest::forest;
/// // four vertices on a line 0 - 1 - 2 - 3 with costs 1, 3, 1
/// let nn = vec![
///     vec![(1.0, 1), (4.0, 2)],
///     vec![(1.0, 0), (3.0, 2)],
///     vec![(1.0, 3), (3.0, 1)],
///     vec![(1.0, 2), (4.0, 1)],
/// ];
/// let parent = forest(&[1, 1, 1, 1], 2, &nn, |_, _| None).unwrap();
/// assert_eq!(parent, vec![Some(1), None, Some(3), None]);
/// ```
pub fn forest<F>(
    weights: &[u64],
    k: u64,
    neighbours: &[Vec<(f64, u32)>],
    fallback: F,
) -> Result<Vec<Option<u32>>>
where
    F: Fn(u32, &dyn Fn(u32) -> bool) -> Option<u32>,
{
    let kernel = "forest";
    let invalid = |message: String| KernelError::InvalidArgument { kernel, message };
    if neighbours.len() != weights.len() {
        return Err(KernelError::LengthMismatch {
            kernel,
            argument: "neighbours",
            got: neighbours.len(),
            expected: weights.len(),
        });
    }
    let n = check_weights(weights, k, kernel)?;
    for (u, list) in neighbours.iter().enumerate() {
        if let Some(&(_, v)) = list
            .iter()
            .find(|&&(_, v)| v as usize >= n || v as usize == u)
        {
            return Err(invalid(format!(
                "the neighbour list of vertex {u} holds {v}, which is {}",
                if v as usize == u {
                    "the vertex itself".to_owned()
                } else {
                    format!("not below the vertex count {n}")
                }
            )));
        }
    }
    let mut sets = UnionFind::new(weights);
    let mut parent: Vec<Option<u32>> = vec![None; n];
    for i in 0..n as u32 {
        loop {
            let rep = sets.find(i);
            if sets.weight[rep as usize] >= k {
                break;
            }
            let u = sets.root[rep as usize];
            let listed = neighbours[u as usize]
                .iter()
                .map(|&(_, v)| v)
                .find(|&v| sets.find(v) != rep);
            let v = match listed {
                Some(v) => v,
                None => {
                    let inside = |x: u32| (x as usize) < n && sets.find_const(x) == rep;
                    let found = fallback(u, &inside);
                    match found {
                        Some(v) if (v as usize) < n && !inside(v) => v,
                        Some(v) => {
                            return Err(invalid(format!(
                                "the fallback returned vertex {v} for vertex {u}, which is \
                                 not a vertex outside its component"
                            )))
                        }
                        None => {
                            return Err(invalid(format!(
                                "the neighbour list of vertex {u} holds no vertex outside \
                                 its component and the fallback found none"
                            )))
                        }
                    }
                }
            };
            parent[u as usize] = Some(v);
            sets.union_under(rep, v);
        }
    }
    Ok(parent)
}

/// The trees of a forest given by out-edges, as sorted vertex lists.
///
/// # Arguments
/// * `parent` – the out-edge of each vertex (`None` for none), as from [`forest`].
///
/// # Returns
/// The connected components (edges taken as undirected), each sorted, ordered by their
/// smallest vertex.
///
/// # Errors
/// [`KernelError::InvalidArgument`] if an edge points outside `0..n` or there are more
/// than `u32::MAX` vertices.
///
/// # Complexity
/// O(n · α(n)) time, O(n) space.
///
/// # Examples
/// ```
/// use kanon_core::forest::forest_groups;
/// let groups = forest_groups(&[Some(3), None, Some(1), None]).unwrap();
/// assert_eq!(groups, vec![vec![0, 3], vec![1, 2]]);
/// ```
pub fn forest_groups(parent: &[Option<u32>]) -> Result<Vec<Vec<u32>>> {
    let n = parent.len();
    let invalid = |message: String| KernelError::InvalidArgument {
        kernel: "forest_groups",
        message,
    };
    if n > u32::MAX as usize {
        return Err(invalid(format!(
            "{n} vertices exceed the limit of 4294967295 per call"
        )));
    }
    if let Some((u, v)) = parent
        .iter()
        .enumerate()
        .find_map(|(u, p)| p.filter(|&v| v as usize >= n).map(|v| (u, v)))
    {
        return Err(invalid(format!(
            "vertex {u} points to {v}, which is not below the vertex count {n}"
        )));
    }
    let mut sets = UnionFind::new(&vec![1; n]);
    for (u, p) in parent.iter().enumerate() {
        if let Some(v) = *p {
            let ru = sets.find(u as u32);
            sets.union_under(ru, v);
        }
    }
    let mut group_of_rep = vec![u32::MAX; n];
    let mut groups: Vec<Vec<u32>> = Vec::new();
    for u in 0..n as u32 {
        let rep = sets.find(u) as usize;
        if group_of_rep[rep] == u32::MAX {
            group_of_rep[rep] = groups.len() as u32;
            groups.push(Vec::new());
        }
        groups[group_of_rep[rep] as usize].push(u);
    }
    Ok(groups)
}

/// Nearest neighbours and FOREST in one call: the forest of rows `tuples` with
/// multiplicities `weights` whose trees weigh at least `k`.
///
/// Lists hold `max(k − 1, 1)` neighbours, which is always enough (see [`forest`]); the
/// full-scan fallback is there for safety only.
///
/// # Arguments
/// * `tuples`, `m`, `model` – as for [`nearest_neighbours`].
/// * `weights`, `k` – as for [`forest`].
///
/// # Returns
/// `parent[u]`, the out-edge of each vertex, as from [`forest`].
///
/// # Errors
/// The errors of [`nearest_neighbours`] and [`forest`], checked before any pair cost is
/// computed; [`KernelError::LengthMismatch`] if `weights` does not have one entry per row.
///
/// # Complexity
/// That of [`nearest_neighbours`] with `count = k − 1`.
///
/// # Examples
/// ```
/// use kanon_core::cost::{CostModel, LevelCost};
/// use kanon_core::forest::{build_forest, forest_groups};
/// use kanon_core::Hierarchy;
/// let age = Hierarchy::try_from_levels(&[&[0, 1, 2, 3], &[0, 0, 1, 1], &[0, 0, 0, 0]]).unwrap();
/// let model = CostModel::try_new(vec![age], vec![1.0], LevelCost::Ncp).unwrap();
/// let parent = build_forest(&[0, 1, 2, 3], 1, &[1, 1, 2, 1], 2, &model).unwrap();
/// // vertex 2 weighs 2 on its own; vertex 3 joins it
/// assert_eq!(parent, vec![Some(1), None, None, Some(2)]);
/// assert_eq!(forest_groups(&parent).unwrap(), vec![vec![0, 1], vec![2, 3]]);
/// ```
pub fn build_forest(
    tuples: &[u32],
    m: usize,
    weights: &[u64],
    k: u64,
    model: &CostModel,
) -> Result<Vec<Option<u32>>> {
    let kernel = "build_forest";
    let n = model.check_tuples(tuples, m, kernel)?;
    if weights.len() != n {
        return Err(KernelError::LengthMismatch {
            kernel,
            argument: "weights",
            got: weights.len(),
            expected: n,
        });
    }
    check_weights(weights, k, kernel)?;
    let count = usize::try_from(k.saturating_sub(1).max(1)).unwrap_or(usize::MAX);
    let neighbours = nearest_neighbours(tuples, m, model, count)?;
    let row = |v: u32| &tuples[v as usize * m..(v as usize + 1) * m];
    forest(weights, k, &neighbours, |u, inside| {
        (0..n as u32)
            .filter(|&v| v != u && !inside(v))
            .map(|v| (model.pair_units(row(u), row(v)), v))
            .min()
            .map(|(_, v)| v)
    })
}

/// Check `k` and the vertex weights; return the vertex count.
fn check_weights(weights: &[u64], k: u64, kernel: &'static str) -> Result<usize> {
    let invalid = |message: String| KernelError::InvalidArgument { kernel, message };
    let n = weights.len();
    if n > u32::MAX as usize {
        return Err(invalid(format!(
            "{n} vertices exceed the limit of 4294967295 per call"
        )));
    }
    if k == 0 {
        return Err(invalid("k must be at least 1".to_owned()));
    }
    if let Some(u) = weights.iter().position(|&w| w == 0) {
        return Err(invalid(format!(
            "vertex {u} has weight 0; every vertex stands for at least one row"
        )));
    }
    let total: u128 = weights.iter().map(|&w| u128::from(w)).sum();
    if total < u128::from(k) {
        return Err(invalid(format!(
            "k exceeds the number of rows: k = {k} but the vertices weigh {total} in all"
        )));
    }
    Ok(n)
}

/// Union-find by size with path compression; each set knows its weight and tree root.
struct UnionFind {
    up: Vec<u32>,
    size: Vec<u32>,
    /// Total vertex weight of each set (saturating), valid at representatives.
    weight: Vec<u64>,
    /// The vertex without an out-edge of each set's tree, valid at representatives.
    root: Vec<u32>,
}

impl UnionFind {
    /// Singletons with the given weights (`weights.len() ≤ u32::MAX` is checked by the
    /// callers).
    fn new(weights: &[u64]) -> Self {
        let n = weights.len() as u32;
        Self {
            up: (0..n).collect(),
            size: vec![1; weights.len()],
            weight: weights.to_vec(),
            root: (0..n).collect(),
        }
    }

    fn find(&mut self, mut x: u32) -> u32 {
        while self.up[x as usize] != x {
            let grand = self.up[self.up[x as usize] as usize];
            self.up[x as usize] = grand;
            x = grand;
        }
        x
    }

    /// [`Self::find`] without path compression, for shared borrows.
    fn find_const(&self, mut x: u32) -> u32 {
        while self.up[x as usize] != x {
            x = self.up[x as usize];
        }
        x
    }

    /// Merge the set of representative `rep` into the set of `v`: the merged tree's root
    /// is `v`'s tree root (the old root of `rep` just got an out-edge).
    fn union_under(&mut self, rep: u32, v: u32) {
        let other = self.find(v);
        if other == rep {
            return;
        }
        let root = self.root[other as usize];
        let weight = self.weight[rep as usize].saturating_add(self.weight[other as usize]);
        let (big, small) = if self.size[rep as usize] >= self.size[other as usize] {
            (rep, other)
        } else {
            (other, rep)
        };
        self.up[small as usize] = big;
        self.size[big as usize] += self.size[small as usize];
        self.weight[big as usize] = weight;
        self.root[big as usize] = root;
    }
}
