//! Exact nearest neighbours of the rows under the cost model (trie search and scan).
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

use rayon::prelude::*;

use crate::cancel;
use crate::error::Result;
use crate::forest::cost::model::{CostModel, LevelCost};
use crate::forest::cost::paths::{climb_all, Rung};

/// Exact `count` nearest neighbours of every vertex under the model's pair cost.
///
/// The lists are those of a full sort of all pairs, found by a branch and bound: the
/// vertices are sorted into a trie that splits them by their ancestors in the
/// hierarchies, one level at a time and the costliest levels first. Each attribute's term
/// of the cost is an ultrametric, so a query's cost to every vertex of a node is at least
/// the sum of its exact terms for the attributes where the node's shared ancestor does
/// not hold the query's value; nodes are skipped once that bound (with the node's
/// smallest index, for ties) sorts after the query's current `count`-th neighbour. Where
/// the bounds prune little (data without clusters), a query that would cost the trie
/// more than a full scan of the other vertices is scanned instead, and when most of a
/// sample of queries would be, every query is: the trie never costs much more than the
/// scan and is far faster on clustered data. Either way the lists are exact, so they do
/// not depend on the path taken or on the number of threads.
///
/// Under [`LevelCost::Range`] the attribute terms are not ultrametrics along the
/// hierarchies (two leaves in different nodes may have close keys), so the trie's bounds
/// would not hold: every query is scanned (the same exact lists, in O(n² · p)).
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
/// [`KernelError::InvalidArgument`](crate::error::KernelError::InvalidArgument) if `m` differs from the model's attribute count,
/// `tuples` is not a whole number of rows, there are more than `u32::MAX` rows or a code
/// is not a leaf of its attribute's hierarchy.
///
/// # Complexity
/// Parallel over vertices with rayon. Building the trie takes O(n · S · log n) time for
/// the `S ≤ Σ_j L_j` hierarchy levels that split (L_j levels above the leaves of
/// attribute j). A vertex then visits the nodes whose lower bound does not exceed its
/// `count`-th nearest cost, in O(S + children) time each, and keeps its list sorted in
/// O(count) per change; its work is capped at about the O(n · p) of a scan (`p ≤ m` cost
/// lookups per pair), after which it is scanned. So O(n² · p) time at worst, as a full
/// scan, and far less on clustered data.
/// Space is O(n · (m + count)): the trie has at most 2n − 1 nodes. Beyond 2^31 vertices
/// (`u32` node ids), and under [`LevelCost::Range`], every vertex is scanned.
///
/// # Examples
/// ```
/// use kanon_core::forest::cost::{CostModel, LevelCost};
/// use kanon_core::forest::neighbours::nearest_neighbours;
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
    trie_search(tuples, m, model, count, true)
}

/// [`nearest_neighbours`] by the trie search alone: no query gives up for the scan (but
/// [`LevelCost::Range`] is still scanned). Not part of the API: the same lists, for tests
/// and timings of the trie itself.
///
/// # Errors
/// As [`nearest_neighbours`].
#[doc(hidden)]
pub fn nearest_neighbours_trie(
    tuples: &[u32],
    m: usize,
    model: &CostModel,
    count: usize,
) -> Result<Vec<Vec<(f64, u32)>>> {
    trie_search(tuples, m, model, count, false)
}

/// [`nearest_neighbours`], with a work budget per query when `budgeted`.
fn trie_search(
    tuples: &[u32],
    m: usize,
    model: &CostModel,
    count: usize,
    budgeted: bool,
) -> Result<Vec<Vec<(f64, u32)>>> {
    let n = model.check_tuples(tuples, m, "nearest_neighbours")?;
    let count = count.min(n.saturating_sub(1));
    if count == 0 {
        return Ok(vec![Vec::new(); n]);
    }
    let scan = Scan::new(tuples, m, model);
    // The trie's bounds need every attribute's cost to be an ultrametric along its
    // hierarchy; range costs (key differences, distinct values) are not.
    if model.kind() == LevelCost::Range {
        return scan.all(count);
    }
    let Some(trie) = Trie::new(tuples, m, model) else {
        return scan.all(count);
    };
    // Past its budget a query is scanned; when most of a sample would be, all are.
    let budget = if budgeted {
        query_budget(n, &scan)
    } else {
        usize::MAX
    };
    if budgeted && !sample_pays(&trie, count, budget) {
        return scan.all(count);
    }
    // Queries in trie order: neighbouring queries walk the same nodes (cache locality).
    let by_position: Vec<Vec<(f64, u32)>> = trie
        .order
        .par_iter()
        .map_init(
            || (Search::new(trie.steps.len()), scan.scratch()),
            |(search, scratch), &a| {
                // Cancelled: the remaining queries are skipped and the lists dropped.
                if cancel::requested() {
                    return Vec::new();
                }
                let a = a as usize;
                trie.nearest(a, count, budget, search)
                    .unwrap_or_else(|| scan.nearest(a, count, scratch))
                    .into_iter()
                    .map(|(units, b)| (model.units_to_cost(units), b))
                    .collect()
            },
        )
        .collect();
    cancel::check("nearest_neighbours")?;
    let mut lists = vec![Vec::new(); n];
    for (&a, list) in trie.order.iter().zip(by_position) {
        lists[a as usize] = list;
    }
    Ok(lists)
}

/// About how many cost lookups one query of [`nearest_neighbours`] reads in `tuples`
/// (checked rows, see [`CostModel::check_tuples`]; `scan` their scan): a scan's
/// `n · lookups` where the trie does not pay (under [`LevelCost::Range`], or where most of
/// a sample of queries would cost the trie more than a scan), else the mean over that
/// sample of the trie's work (a query past its cap counted as scanned). The forest cuts
/// tuples whose queries read too much into smaller blocks ([`crate::forest::blocked`]): both
/// searches are quadratic in the tuples where the bounds prune little.
pub(crate) fn query_lookups(
    tuples: &[u32],
    m: usize,
    model: &CostModel,
    scan: &Scan<'_>,
    count: usize,
) -> usize {
    let n = tuples.len() / m;
    let scanned = n.saturating_mul(scan.lookups());
    let count = count.min(n.saturating_sub(1));
    if count == 0 {
        return 0;
    }
    if model.kind() == LevelCost::Range {
        return scanned;
    }
    let Some(trie) = Trie::new(tuples, m, model) else {
        return scanned;
    };
    let works = sample_work(&trie, count, query_budget(n, scan));
    if !pays(&works) {
        return scanned;
    }
    let total: usize = works
        .iter()
        .map(|w| w.map_or(scanned, |w| w.saturating_mul(WORK_LOOKUPS)))
        .fold(0, usize::saturating_add);
    total / works.len().max(1)
}

/// A query's trie work (see `Trie::nearest`) is capped at about the cost of scanning
/// it, `n · lookups` cost lookups at `WORK_LOOKUPS` lookups per unit of work; past the
/// cap the query is scanned.
fn query_budget(n: usize, scan: &Scan<'_>) -> usize {
    let lookups = scan.packs.len().max(1);
    n.saturating_mul(lookups) / WORK_LOOKUPS
}

/// Whether at most half of a sample of queries spread over the trie exceed `budget`.
/// The cap is hit on data without clusters (wide attributes, uniform values), where the
/// bounds prune little; then every query is scanned from the start.
fn sample_pays(trie: &Trie<'_>, count: usize, budget: usize) -> bool {
    pays(&sample_work(trie, count, budget))
}

/// Whether at most half of a sample's queries went past their budget (`None`).
fn pays(works: &[Option<usize>]) -> bool {
    2 * works.iter().filter(|w| w.is_none()).count() <= works.len()
}

/// The trie work of a sample of queries evenly spaced in trie order; `None` for a query
/// past `budget`.
fn sample_work(trie: &Trie<'_>, count: usize, budget: usize) -> Vec<Option<usize>> {
    let n = trie.order.len();
    let sample = n.min(SAMPLE);
    (0..sample)
        .into_par_iter()
        .map_init(
            || Search::new(trie.steps.len()),
            |search, i| {
                let a = trie.order[i * (n / sample)] as usize;
                trie.nearest(a, count, budget, search).map(|_| search.work)
            },
        )
        .collect()
}

/// What an attribute with more leaves than vertices weighs in [`Scan::lookups`], in pack
/// lookups: the weight of a climb per pair when blocks were sized by it. Its row over
/// the scan's ranks is one lookup now, but blocks stay that size: larger ones took longer
/// for a higher loss (`uniform` at 100k, benches/README.md).
const WIDE_LOOKUPS: usize = 8;

/// About how many cost lookups of the full scan one unit of trie work costs.
const WORK_LOOKUPS: usize = 8;

/// How many queries, evenly spaced in trie order, decide whether the trie pays at all.
const SAMPLE: usize = 64;

/// One refinement step of a [`Trie`]: the vertices are split by their attribute's
/// ancestor codes at one hierarchy level.
struct Step<'a> {
    attribute: usize,
    /// The hierarchy level split by.
    level: usize,
    /// `codes[leaf]`: the code of `leaf`'s ancestor at `level`.
    codes: &'a [u32],
    /// The codes of the attribute's previous (higher) step, or of its root level for its
    /// first step.
    above: &'a [u32],
}

/// A trie node: the vertices at trie positions `lo..hi`, which share their codes at
/// every step before `depth`.
struct Node {
    lo: u32,
    hi: u32,
    /// The first step at which the vertices differ (the child split), or the step count
    /// for a leaf, whose vertices are equal rows.
    depth: u32,
    /// The vertices' code at the step that split the node from its siblings (0 for the
    /// root).
    code: u32,
    /// For an inner node, the vertices' code at the step above the split step (as
    /// [`Step::above`]).
    above: u32,
    /// Children are the nodes `first_child..first_child + children`, in trie order.
    first_child: u32,
    children: u32,
    /// The smallest vertex index in the node.
    min_index: u32,
}

/// Vertices sorted by their ancestor codes, step by step, and the trie of that order:
/// the branch-and-bound structure of [`nearest_neighbours`].
///
/// The steps split each attribute top-down, one hierarchy level at a time (levels that
/// split no node are left out), heaviest first: in decreasing order of the mean units
/// that a vertex pays for the pair whose meet is the level above the split. A node's
/// vertices share the ancestors of every step above its depth. For a query vertex `q`,
/// an attribute whose shared ancestor (at its last step above the depth) does not hold
/// `q`'s value has the same meet with `q` for every vertex of the node: the ancestor of
/// `q` one level above the first step where they parted (the levels between two steps
/// split nothing). The sum of those meets' units is a lower bound of `q`'s cost to every
/// vertex of the node (the other attributes add at least 0), and the exact cost at a
/// leaf, where every attribute is split down to its leaves.
struct Trie<'a> {
    model: &'a CostModel,
    /// The vertices' rows, by vertex index.
    tuples: &'a [u32],
    m: usize,
    steps: Vec<Step<'a>>,
    /// Vertex indices in trie order (equal rows by increasing index).
    order: Vec<u32>,
    /// Rows of `tuples` in trie order, `m` codes each.
    rows: Vec<u32>,
    /// The root is node 0; each node's children are contiguous, and the blocks of
    /// children are laid out depth first, so a subtree stays close in memory.
    nodes: Vec<Node>,
}

impl<'a> Trie<'a> {
    /// The trie of `n ≥ 1` rows checked against `model`, or `None` if the node ids or
    /// step numbers could overflow `u32` (more than 2^31 rows).
    fn new(tuples: &'a [u32], m: usize, model: &'a CostModel) -> Option<Self> {
        let n = tuples.len() / m;
        let steps = trie_steps(tuples, m, model);
        // At most 2n − 1 nodes; every step splits a level, so fewer steps than leaves.
        let limit = (u32::MAX / 2) as usize;
        if n > limit || steps.len() > limit {
            return None;
        }
        let code = |s: &Step<'_>, row: &[u32]| s.codes[row[s.attribute] as usize];
        let row = |v: u32| &tuples[v as usize * m..(v as usize + 1) * m];
        let mut order: Vec<u32> = (0..n as u32).collect();
        order.par_sort_unstable_by(|&a, &b| {
            let (ra, rb) = (row(a), row(b));
            steps
                .iter()
                .map(|s| code(s, ra).cmp(&code(s, rb)))
                .find(|o| o.is_ne())
                .unwrap_or(std::cmp::Ordering::Equal)
                .then(a.cmp(&b))
        });
        let rows: Vec<u32> = order.iter().flat_map(|&v| row(v)).copied().collect();
        let at = |pos: u32| &rows[pos as usize * m..(pos as usize + 1) * m];
        let leaf = |lo: u32, hi: u32, depth: u32, code: u32| Node {
            lo,
            hi,
            depth,
            code,
            above: 0,
            first_child: 0,
            children: 0,
            min_index: u32::MAX,
        };
        let mut nodes = vec![leaf(0, n as u32, 0, 0)];
        // Expand nodes depth first; until a node is expanded, its `depth` holds the
        // first step its vertices may differ at.
        let mut pending = vec![0usize];
        while let Some(id) = pending.pop() {
            let (lo, hi) = (nodes[id].lo, nodes[id].hi);
            let (first, last) = (at(lo), at(hi - 1));
            // Sorted order: the first and last vertex agree on a step iff all do.
            let depth = (nodes[id].depth as usize..steps.len())
                .find(|&s| code(&steps[s], first) != code(&steps[s], last))
                .unwrap_or(steps.len());
            nodes[id].depth = depth as u32;
            if depth == steps.len() {
                continue;
            }
            let step = &steps[depth];
            nodes[id].above = step.above[first[step.attribute] as usize];
            let first_child = nodes.len();
            let mut start = lo;
            for pos in lo + 1..=hi {
                let ended = pos == hi || code(step, at(pos)) != code(step, at(start));
                if ended {
                    let child = leaf(start, pos, depth as u32 + 1, code(step, at(start)));
                    nodes.push(child);
                    start = pos;
                }
            }
            nodes[id].first_child = first_child as u32;
            nodes[id].children = (nodes.len() - first_child) as u32;
            pending.extend((first_child..nodes.len()).rev());
        }
        // Children come after their parents: fill the smallest index bottom-up.
        for i in (0..nodes.len()).rev() {
            let node = &nodes[i];
            let min_index = if node.children == 0 {
                order[node.lo as usize..node.hi as usize].iter().min()
            } else {
                let first = node.first_child as usize;
                nodes[first..first + node.children as usize]
                    .iter()
                    .map(|c| &c.min_index)
                    .min()
            };
            // A node holds at least one vertex, and so does every child.
            nodes[i].min_index = min_index.copied().unwrap_or(u32::MAX);
        }
        Some(Self {
            model,
            tuples,
            m,
            steps,
            order,
            rows,
            nodes,
        })
    }

    /// The `count` nearest other vertices of vertex `a` (`1 ≤ count < n`) as `(units,
    /// index)`, sorted: a depth-first branch and bound that visits children in order of
    /// (lower bound, smallest index) and skips a node once every vertex in it sorts after
    /// the current `count`-th nearest. `None` once the work (nodes taken from the stack
    /// plus steps of children's bounds) exceeds `budget`.
    fn nearest(
        &self,
        a: usize,
        count: usize,
        budget: usize,
        search: &mut Search,
    ) -> Option<Vec<(u64, u32)>> {
        let query = &self.tuples[a * self.m..(a + 1) * self.m];
        for (s, step) in self.steps.iter().enumerate() {
            let leaf = query[step.attribute];
            search.codes[s] = step.codes[leaf as usize];
            search.above[s] = step.above[leaf as usize];
            search.units[s] = self.model.level_units(step.attribute, step.level + 1, leaf);
        }
        let mut best = Nearest::new(count);
        let root = &self.nodes[0];
        let bound = self.bound(0, search, root.lo, 0, root.depth);
        search.stack.clear();
        search.stack.push((bound, 0));
        search.work = 0;
        while let Some((bound, id)) = search.stack.pop() {
            let node = &self.nodes[id as usize];
            search.work += 1;
            // Every vertex of the node sorts at or after (bound, min_index), and the only
            // one that could sort equal to the worst kept entry is that entry.
            if (bound, node.min_index) >= best.worst {
                continue;
            }
            if node.children == 0 {
                best.offer_all(bound, &self.order[node.lo as usize..node.hi as usize], a);
                continue;
            }
            // The split step parts the children from the query unless the attribute
            // parted above (the node's vertices share its code at the step above).
            let d = node.depth as usize;
            let first_child = node.first_child as usize;
            let open = node.above == search.above[d];
            let children = &self.nodes[first_child..first_child + node.children as usize];
            // Each child's bound takes the steps from the node's depth to its own.
            search.work += children
                .iter()
                .map(|c| (c.depth - node.depth) as usize)
                .sum::<usize>();
            if search.work > budget {
                return None;
            }
            search.children.clear();
            for (c, child) in children.iter().enumerate() {
                let mut b = bound;
                if open && child.code != search.codes[d] {
                    b += search.units[d];
                }
                b = self.bound(b, search, child.lo, node.depth + 1, child.depth);
                if (b, child.min_index) >= best.worst {
                    continue;
                }
                if child.children == 0 {
                    let members = &self.order[child.lo as usize..child.hi as usize];
                    best.offer_all(b, members, a);
                } else {
                    search
                        .children
                        .push((b, child.min_index, (first_child + c) as u32));
                }
            }
            // (bound, min_index) is unique among siblings: their vertices are disjoint.
            search.children.sort_unstable();
            search
                .stack
                .extend(search.children.iter().rev().map(|&(b, _, c)| (b, c)));
        }
        Some(best.list)
    }

    /// `bound` plus the units of the attributes that part from the query at steps
    /// `from..to` for the vertex at trie position `pos`.
    #[inline]
    fn bound(&self, mut bound: u64, search: &Search, pos: u32, from: u32, to: u32) -> u64 {
        let row = &self.rows[pos as usize * self.m..(pos as usize + 1) * self.m];
        for s in from as usize..to as usize {
            let step = &self.steps[s];
            let leaf = row[step.attribute] as usize;
            // The attribute parts here if it differs now and did not at its step above.
            let parts = step.codes[leaf] != search.codes[s] && step.above[leaf] == search.above[s];
            bound += search.units[s] * u64::from(parts);
        }
        bound
    }
}

/// The steps of a [`Trie`] over `n ≥ 1` rows: every level below the top of every
/// attribute whose partition is finer than the level above, heaviest first (see
/// [`Trie`]), each attribute's levels top-down.
fn trie_steps<'a>(tuples: &[u32], m: usize, model: &'a CostModel) -> Vec<Step<'a>> {
    let n = tuples.len() / m;
    let mut splits: Vec<(f64, usize, usize)> = Vec::new();
    for j in 0..m {
        let h = model.hierarchy(j);
        for level in (0..h.height()).rev() {
            if h.width(level) > h.width(level + 1) {
                // A heuristic only: the f64 mean orders the steps, never a cost.
                let total: f64 = tuples
                    .chunks_exact(m)
                    .map(|row| model.level_units(j, level + 1, row[j]) as f64)
                    .sum();
                splits.push((total / n as f64, j, level));
            }
        }
    }
    splits.sort_by(|x, y| y.0.total_cmp(&x.0).then(x.1.cmp(&y.1)).then(y.2.cmp(&x.2)));
    // Each attribute's levels are taken top-down whatever the order of the means (node
    // costs grow with the level, so the means already agree; this keeps it certain).
    let mut levels: Vec<Vec<usize>> = vec![Vec::new(); m];
    for &(_, j, level) in &splits {
        levels[j].push(level);
    }
    for list in &mut levels {
        list.sort_unstable_by(|x, y| y.cmp(x));
    }
    let mut taken = vec![0usize; m];
    let mut above: Vec<&[u32]> = (0..m)
        .map(|j| model.hierarchy(j).level(model.hierarchy(j).height()))
        .collect();
    let mut steps = Vec::with_capacity(splits.len());
    for &(_, j, _) in &splits {
        let level = levels[j][taken[j]];
        taken[j] += 1;
        let codes = model.hierarchy(j).level(level);
        steps.push(Step {
            attribute: j,
            level,
            codes,
            above: above[j],
        });
        above[j] = codes;
    }
    steps
}

/// Per-thread scratch of [`Trie::nearest`].
struct Search {
    /// The query's ancestor code at every step.
    codes: Vec<u32>,
    /// The query's ancestor code at the step above every step (as [`Step::above`]).
    above: Vec<u32>,
    /// The units of the query's ancestor one level above every step: its cost to a
    /// vertex it parts from at that step.
    units: Vec<u64>,
    /// Nodes to visit, with their lower bounds.
    stack: Vec<(u64, u32)>,
    /// The inner children of the node being expanded: (bound, smallest index, node).
    children: Vec<(u64, u32, u32)>,
    /// The work of the last search (see [`Trie::nearest`]).
    work: usize,
}

impl Search {
    fn new(steps: usize) -> Self {
        Self {
            codes: vec![0; steps],
            above: vec![0; steps],
            units: vec![0; steps],
            stack: Vec::new(),
            children: Vec::new(),
            work: 0,
        }
    }
}

/// The `count ≥ 1` smallest `(units, index)` offered so far, sorted; offers come in any
/// order.
struct Nearest {
    list: Vec<(u64, u32)>,
    count: usize,
    /// The largest kept entry once `count` are kept; before, an entry above any offer
    /// (units stay below 2^52).
    worst: (u64, u32),
}

impl Nearest {
    fn new(count: usize) -> Self {
        Self {
            list: Vec::with_capacity(count + 1),
            count,
            worst: (u64::MAX, u32::MAX),
        }
    }

    /// Offer every vertex of `members` (increasing indices) but `a` at `units`.
    #[inline]
    fn offer_all(&mut self, units: u64, members: &[u32], a: usize) {
        for &b in members {
            let entry = (units, b);
            if entry >= self.worst {
                // so do the later members
                break;
            }
            if b as usize == a {
                continue;
            }
            if self.list.len() == self.count {
                self.list.pop();
            }
            // Offers come roughly in increasing order: look for the place from the end.
            let mut at = self.list.len();
            while at > 0 && self.list[at - 1] > entry {
                at -= 1;
            }
            self.list.insert(at, entry);
            if self.list.len() == self.count {
                self.worst = self.list[self.count - 1];
            }
        }
    }
}

/// The full scan that [`nearest_neighbours`] replaced: the same lists in O(n² · p) time
/// for `p ≤ m` cost lookups per pair. Not part of the API: the reference the trie search
/// is tested and timed against (the search scans the queries it gives up on, see
/// [`nearest_neighbours`]).
///
/// # Errors
/// As [`nearest_neighbours`].
#[doc(hidden)]
pub fn nearest_neighbours_scan(
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
    Scan::new(tuples, m, model).all(count)
}

/// The full scan of one vertex over all others: the pair cost is one lookup per pack.
pub(crate) struct Scan<'a> {
    model: &'a CostModel,
    tuples: &'a [u32],
    m: usize,
    /// Per attribute: its codes in the packs (leaves, or the scan's distinct ranks).
    codes: Vec<usize>,
    /// Per attribute: its dense table, or a row computed per vertex.
    sources: Vec<Source<'a>>,
    /// Attributes sharing one joint cost row (see [`packs`]).
    packs: Vec<Vec<usize>>,
    /// Each vertex's joint code in every pack (mixed radix, first attribute most
    /// significant), row-major.
    packed: Vec<u32>,
}

/// Per-query rows of one thread's scans: each attribute's cost row, each joint pack's
/// row, and the leaf of every attribute they were last made for (queries come in trie or
/// index order, so neighbouring queries often share leaves and keep their rows).
pub(crate) struct ScanScratch {
    attribute_rows: Vec<Vec<u64>>,
    pack_rows: Vec<Vec<u64>>,
    ladder: Vec<Rung>,
    made_for: Vec<u32>,
}

impl<'a> Scan<'a> {
    /// The scan of `n ≥ 1` rows checked against `model`.
    pub(crate) fn new(tuples: &'a [u32], m: usize, model: &'a CostModel) -> Self {
        let n = tuples.len() / m;
        let sources: Vec<Source<'_>> = (0..m)
            .map(|j| match model.dense_table(j) {
                Some(table) => Source::Table(table),
                None if model.hierarchy(j).leaves() <= n => Source::Row,
                None if model.climbs(j) => {
                    Source::Ranks(distinct(tuples, m, j, |leaf| model.rank(j, leaf)))
                }
                None => {
                    let leaves = distinct(tuples, m, j, |leaf| leaf);
                    let keys = model
                        .keys(j)
                        .map(|keys| leaves.iter().map(|&b| keys[b as usize]).collect());
                    Source::Leaves(leaves, keys)
                }
            })
            .collect();
        let codes: Vec<usize> = (0..m)
            .map(|j| match &sources[j] {
                Source::Ranks(codes) | Source::Leaves(codes, _) => codes.len(),
                _ => model.hierarchy(j).leaves(),
            })
            .collect();
        let packs = packs(&codes, n);
        let code = |j: usize, leaf: u32| match &sources[j] {
            // Every vertex's rank is among the distinct ranks.
            Source::Ranks(ranks) => ranks.partition_point(|&r| r < model.rank(j, leaf)),
            Source::Leaves(leaves, _) => leaves.partition_point(|&b| b < leaf),
            _ => leaf as usize,
        };
        let packed: Vec<u32> = tuples
            .chunks_exact(m)
            .flat_map(|row| {
                packs.iter().map(|pack| {
                    pack.iter()
                        .fold(0usize, |joint, &j| joint * codes[j] + code(j, row[j]))
                        as u32
                })
            })
            .collect();
        Self {
            model,
            tuples,
            m,
            codes,
            sources,
            packs,
            packed,
        }
    }

    /// What the scan of one query weighs per vertex, in cost lookups: one per pack, and
    /// [`WIDE_LOOKUPS`] − 1 more per wide attribute (alone in its pack or sharing one).
    pub(crate) fn lookups(&self) -> usize {
        let wide = |s: &&Source<'_>| matches!(s, Source::Ranks(_) | Source::Leaves(..));
        let wide = self.sources.iter().filter(wide).count();
        self.packs.len() + (WIDE_LOOKUPS - 1) * wide
    }

    /// The lists of every vertex (`1 ≤ count < n`), as [`nearest_neighbours`] returns them.
    fn all(&self, count: usize) -> Result<Vec<Vec<(f64, u32)>>> {
        let lists = (0..self.tuples.len() / self.m)
            .into_par_iter()
            .map_init(
                || self.scratch(),
                |scratch, a| {
                    // Each query scans every vertex: skip the rest once cancelled.
                    if cancel::requested() {
                        return Vec::new();
                    }
                    self.nearest(a, count, scratch)
                        .into_iter()
                        .map(|(units, b)| (self.model.units_to_cost(units), b))
                        .collect()
                },
            )
            .collect();
        cancel::check("nearest_neighbours")?;
        Ok(lists)
    }

    pub(crate) fn scratch(&self) -> ScanScratch {
        ScanScratch {
            attribute_rows: vec![Vec::new(); self.m],
            pack_rows: vec![Vec::new(); self.packs.len()],
            ladder: Vec::new(),
            made_for: vec![u32::MAX; self.m],
        }
    }

    /// The `count` nearest other vertices of `a` (`1 ≤ count < n`) as `(units, index)`.
    pub(crate) fn nearest(
        &self,
        a: usize,
        count: usize,
        scratch: &mut ScanScratch,
    ) -> Vec<(u64, u32)> {
        let ScanScratch {
            attribute_rows,
            pack_rows,
            ladder,
            made_for,
        } = scratch;
        let ta = &self.tuples[a * self.m..(a + 1) * self.m];
        let stale = |j: usize| made_for[j] != ta[j];
        for (j, source) in self.sources.iter().enumerate() {
            if !stale(j) {
                continue;
            }
            match source {
                Source::Row => self.model.fill_row(j, ta[j], &mut attribute_rows[j]),
                Source::Ranks(ranks) => {
                    self.model.ladder(j, ta[j], ladder);
                    climb_all(ladder, ranks, &mut attribute_rows[j]);
                }
                Source::Leaves(leaves, keys) => {
                    let row = &mut attribute_rows[j];
                    self.model
                        .fill_units(j, ta[j], leaves, keys.as_deref(), row);
                }
                _ => {}
            }
        }
        let attribute_row = |j: usize| -> &[u64] {
            match self.sources[j] {
                Source::Table(table) => {
                    let start = ta[j] as usize * self.codes[j];
                    &table[start..start + self.codes[j]]
                }
                _ => &attribute_rows[j],
            }
        };
        for (pack, out) in self.packs.iter().zip(pack_rows.iter_mut()) {
            if let [first, rest @ ..] = pack.as_slice() {
                if !rest.is_empty() && pack.iter().any(|&j| stale(j)) {
                    joint_row(attribute_row(*first), rest, &attribute_row, out);
                }
            }
        }
        made_for.copy_from_slice(ta);
        let rows: Vec<&[u64]> = self
            .packs
            .iter()
            .zip(pack_rows.iter())
            .map(|(pack, joint)| match pack.as_slice() {
                [only] => attribute_row(*only),
                _ => joint.as_slice(),
            })
            .collect();
        match rows.len() {
            1 => self.run::<1>(&rows, a, count),
            2 => self.run::<2>(&rows, a, count),
            3 => self.run::<3>(&rows, a, count),
            4 => self.run::<4>(&rows, a, count),
            5 => self.run::<5>(&rows, a, count),
            6 => self.run::<6>(&rows, a, count),
            7 => self.run::<7>(&rows, a, count),
            8 => self.run::<8>(&rows, a, count),
            9 => self.run::<9>(&rows, a, count),
            10 => self.run::<10>(&rows, a, count),
            11 => self.run::<11>(&rows, a, count),
            12 => self.run::<12>(&rows, a, count),
            _ => self.run_any(&rows, a, count),
        }
    }

    /// [`Self::nearest`] for `N ≥ 1` packs known at compile time, so the lookups unroll.
    fn run<const N: usize>(&self, rows: &[&[u64]], a: usize, count: usize) -> Vec<(u64, u32)> {
        let rows: [&[u64]; N] = std::array::from_fn(|i| rows[i]);
        let mut best = Best::new(count);
        for (b, codes) in self.packed.chunks_exact(N).enumerate() {
            let units: u64 = (0..N).map(|i| rows[i][codes[i] as usize]).sum();
            best.offer(units, b, a);
        }
        best.into_sorted()
    }

    /// [`Self::run`] for any number of packs (including none).
    fn run_any(&self, rows: &[&[u64]], a: usize, count: usize) -> Vec<(u64, u32)> {
        let mut best = Best::new(count);
        let (n, p) = (self.tuples.len() / self.m, self.packs.len());
        for b in 0..n {
            let codes = &self.packed[b * p..(b + 1) * p];
            let units: u64 = rows
                .iter()
                .zip(codes)
                .map(|(row, &c)| row[c as usize])
                .sum();
            best.offer(units, b, a);
        }
        best.into_sorted()
    }
}

/// The `count` smallest `(units, index)` offered so far: a buffer of up to `2 · count`
/// entries, cut back to the `count` smallest whenever it fills, so an offer costs O(1)
/// amortized however the costs arrive (a sorted list paid a shift per insertion, and the
/// scan meets a vertex's near tuples in order of rising closeness).
struct Best {
    list: Vec<(u64, u32)>,
    count: usize,
    /// The units of the `count`-th smallest entry once known, `u64::MAX` before: an entry
    /// at or above it can never be kept.
    worst: u64,
}

impl Best {
    fn new(count: usize) -> Self {
        Self {
            list: Vec::with_capacity(2 * count),
            count,
            worst: u64::MAX,
        }
    }

    /// Offer vertex `b` at `units`; vertices come in increasing index order and `a`
    /// (the scanning vertex) is skipped.
    #[inline]
    fn offer(&mut self, units: u64, b: usize, a: usize) {
        // Later vertices have larger indices: on a tie with the `count`-th smallest they
        // lose, so only strictly cheaper ones can be kept.
        if units >= self.worst || b == a {
            return;
        }
        // b < n ≤ u32::MAX (checked by check_tuples).
        self.list.push((units, b as u32));
        if self.list.len() == 2 * self.count {
            self.cut();
        }
    }

    /// Keep the `count` smallest entries by `(units, index)`.
    fn cut(&mut self) {
        if self.list.len() > self.count {
            self.list.select_nth_unstable(self.count - 1);
            self.list.truncate(self.count);
        }
        if self.list.len() == self.count {
            self.worst = self.list.iter().map(|&(units, _)| units).max().unwrap_or(0);
        }
    }

    /// The kept entries, sorted by `(units, index)`.
    fn into_sorted(mut self) -> Vec<(u64, u32)> {
        self.cut();
        self.list.sort_unstable();
        self.list
    }
}

/// Largest number of joint codes of a pack of several attributes (a joint cost row of
/// 32 KiB).
const PACK_CODES: usize = 4096;

/// Group the attributes into packs, in attribute order, whose joint code count (the
/// product of their `codes`) stays within [`PACK_CODES`] and a quarter of the vertex
/// count, so that building a pack's joint row per vertex costs less than the pairs it
/// saves. An attribute too large to share a pack is alone.
fn packs(codes: &[usize], n: usize) -> Vec<Vec<usize>> {
    let limit = (n / 4).min(PACK_CODES);
    let mut packs: Vec<Vec<usize>> = Vec::new();
    let mut product = usize::MAX;
    for (j, &width) in codes.iter().enumerate() {
        match product.checked_mul(width.max(1)) {
            Some(joint) if joint <= limit => {
                product = joint;
                if let Some(last) = packs.last_mut() {
                    last.push(j);
                }
            }
            _ => {
                product = width.max(1);
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
    /// A row over the scan's distinct depth-first ranks (sorted), computed once per
    /// vertex from its ladder: attributes with more leaves than vertices that climb.
    Ranks(Vec<u32>),
    /// A row over the scan's distinct leaves (sorted), computed once per vertex: wide
    /// attributes that do not climb (range costs), with the leaves' keys where the
    /// attribute is numeric (read once per scan, not once per vertex).
    Leaves(Vec<u32>, Option<Vec<f64>>),
}

/// The distinct `key`s of the leaves of attribute `j` among `tuples`, sorted.
fn distinct(tuples: &[u32], m: usize, j: usize, key: impl Fn(u32) -> u32) -> Vec<u32> {
    let mut keys: Vec<u32> = tuples.chunks_exact(m).map(|row| key(row[j])).collect();
    keys.sort_unstable();
    keys.dedup();
    keys
}
