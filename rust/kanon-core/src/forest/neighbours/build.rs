//! FOREST: a forest whose trees hold at least k rows, built from nearest neighbours.
//!
//! Aggarwal et al. (2005) build a directed forest over the cost graph of the rows: every
//! tree lighter than k rows grows by an edge from its root to the nearest vertex outside
//! it, until every tree holds at least k rows. The forest costs at most the optimal
//! k-anonymization; DECOMPOSE ([`crate::forest::decompose`]) then cuts large trees into groups.
//!
//! The cost graph is never materialized: identical rows are one weighted vertex, and
//! every vertex keeps only its nearest neighbours ([`nearest_neighbours`]), which is
//! enough for an exact nearest-outside lookup (see [`forest`]).
//!
//! Ties are broken by vertex index everywhere (costs are exact, see [`crate::forest::cost`]), so
//! the same input always gives the same forest.

use crate::cancel;
use crate::error::{KernelError, Result};
use crate::forest::cost::model::CostModel;
use crate::forest::cost::model::LevelCost;
use crate::forest::neighbours::nearest::{nearest_neighbours, Scan};
use crate::forest::union_find::UnionFind;

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
/// use kanon_core::forest::neighbours::forest;
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
    let mut poll = cancel::Poll::new(kernel, 4096);
    for i in 0..n as u32 {
        poll.tick()?;
        loop {
            let rep = sets.find(i);
            if sets.weight(rep) >= k {
                break;
            }
            let u = sets.root(rep);
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
/// use kanon_core::forest::neighbours::forest_groups;
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
    let mut sets = UnionFind::singletons(n);
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
/// Lists of `max(k − 1, 1)` neighbours are always enough (see [`forest`]). Under
/// [`LevelCost::Range`], where every list is a full scan, the lists hold at most
/// `SHORT_LIST`: the forest takes a vertex's first listed neighbour outside its
/// component, nearly always among the first few, and the rare vertex whose short list
/// lies inside its component is scanned again for its full list. The forest is the same,
/// and few vertices are rescanned.
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
/// That of [`nearest_neighbours`] with `count = k − 1`, plus a scan per rescanned vertex.
///
/// # Examples
/// ```
/// use kanon_core::forest::cost::{CostModel, LevelCost};
/// use kanon_core::forest::neighbours::{build_forest, forest_groups};
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
    let count = usize::try_from(k.saturating_sub(1).max(1))
        .unwrap_or(usize::MAX)
        .min(n - 1);
    let listed = if model.kind() == LevelCost::Range {
        count.min(SHORT_LIST)
    } else {
        count
    };
    let neighbours = nearest_neighbours(tuples, m, model, listed)?;
    let scan = std::cell::OnceCell::new();
    // Called only for a light component, so n ≥ 2 (the vertices weigh ≥ k in all) and
    // count ≥ 1; the full list holds a vertex outside (see `forest`).
    forest(weights, k, &neighbours, |u, inside| {
        let scan = scan.get_or_init(|| Scan::new(tuples, m, model));
        scan.nearest(u as usize, count, &mut scan.scratch())
            .into_iter()
            .map(|(_, v)| v)
            .find(|&v| !inside(v))
    })
}

/// Longest neighbour list of [`build_forest`] under [`LevelCost::Range`]: long enough that
/// rescans are rare, short enough that the lists stay cheap.
const SHORT_LIST: usize = 8;

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
