//! Splitting oversized trees of the forest into groups of k..max(2k-1, 3k-5) rows (DECOMPOSE).
//!
//! This is DECOMPOSE COMPONENT of Aggarwal et al. (2005), "Approximation algorithms for
//! k-anonymity", on unit-weight rows. A tree of s rows is rooted at a candidate u; φ is
//! the size of u's largest subtree, rooted at its neighbour v. While s − φ < k − 1 the
//! candidate moves to v. Then one of four cuts splits the tree in two:
//!
//! - **A**: φ ≥ k and s − φ ≥ k: cut the edge u–v.
//! - **B**: s − φ = k − 1: v stays with u; v's subtrees (away from u) form the second part.
//! - **C**: φ = k − 1: u joins v's subtree; u's other subtrees form the second part.
//! - **D**: otherwise every subtree has at most k − 2 rows. Subtrees go to P1 in ascending
//!   order of their root id until |P1| ≥ k − 1; the rest is P2. u joins the part with
//!   exactly k − 1 rows, or P1 if neither has.
//!
//! # Steiner vertices
//! The paper keeps a second part together with a weight-0 copy of u (or v), a *Steiner
//! vertex*. Here no such vertex is created. The subtrees it would hold are re-hung on
//! their root with the smallest id. That root replaces the Steiner vertex, so each part is
//! a tree on real rows only, and a later candidate is never a Steiner vertex. With a metric
//! cost, each new edge costs at most the two edges through the replaced vertex.
//!
//! # Why both parts have at least k rows
//! Let s ≥ max(2k, 3k − 5). The walk ends: it moves only to a subtree of more than
//! s − k + 1 ≥ k + 1 rows, so it never reaches a leaf, and the subtrees shrink at each
//! move. It never turns back either: the side it came from has fewer than k − 1 rows.
//! At the final candidate, s − φ ≥ k − 1.
//! - A: the parts have φ ≥ k and s − φ ≥ k rows.
//! - B: the parts have (s − φ) + 1 = k and φ − 1 = s − k ≥ k rows.
//! - C: the parts have φ + 1 = k and s − k ≥ k rows.
//! - D: every subtree has at most k − 2 rows, so k − 1 ≤ |P1| ≤ 2k − 4 and
//!   |P2| = s − 1 − |P1|.
//!   - If |P1| = k − 1, the parts have k and s − k rows.
//!   - If |P2| = k − 1, the parts have s − k and k rows.
//!   - Otherwise |P1| + 1 ≥ k, and |P2| ≥ s − 2k + 3. When s ≥ 3k − 4, |P2| ≥ k − 1, and
//!     |P2| ≠ k − 1, so |P2| ≥ k.
//!
//! **The paper's rule fails at s = 3k − 5 (k ≥ 5).** There |P1| = 2k − 4 and |P2| = k − 2
//! are possible, and u joins P1, leaving k − 2 rows in P2. Example: a vertex with three
//! paths of k − 2 rows; no union of whole subtrees of u works. [`decompose_component`]
//! then takes q, the child of u in P1 with the largest id (u's neighbour towards `start`
//! is never chosen). It moves q, without its subtrees, to u's side: k rows. q's subtrees
//! stay with the rest of P1: 2k − 5 ≥ k rows. This is still counted as cut D.
//! [`decompose`] never meets this case: it splits only trees of more than
//! max(2k − 1, 3k − 5) rows.
//!
//! After [`decompose`], each part has at least k rows and a tree is split only while it
//! has more than max(2k − 1, 3k − 5) rows. So every group from a tree of at least k rows
//! has between k and max(2k − 1, 3k − 5) rows.
//!
//! # Rooting and determinism
//! Each input tree is rooted at its smallest vertex id, and its first candidate is that
//! root. A split part keeps a root, and its next candidate starts there:
//! - the part that holds the current root keeps it;
//! - the other part is rooted at u when it contains u, and otherwise at the vertex it was
//!   re-wired through (its smallest subtree root).
//!
//! Re-starting each part at its own smallest id would re-root it at O(s) cost, which is
//! O(n²/k) on a long path. Inherited roots keep every subtree size valid, so a step costs
//! O(k log n). Children are visited in ascending id order. Ties for the largest subtree
//! go to the smallest child id. Case D takes subtrees in ascending order of root id: there
//! are no costs here, whereas the research prototype ordered them by distance to u. No
//! hash map is used, so equal inputs give equal outputs, whatever the order of the edges.

use std::cmp::Reverse;
use std::collections::BTreeSet;

use crate::error::{KernelError, Result};
use crate::forest::union_find::UnionFind;

/// Which cut DECOMPOSE applied (for tests and statistics).
#[derive(Debug, Clone, Copy, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum Cut {
    /// φ ≥ k and s − φ ≥ k: the largest subtree is cut off at its edge to the candidate.
    A,
    /// s − φ = k − 1: the root of the largest subtree stays with the candidate, and its
    /// own subtrees form the other part.
    B,
    /// φ = k − 1: the candidate joins its largest subtree, and its other subtrees form
    /// the other part.
    C,
    /// All subtrees have at most k − 2 rows. They are packed into two parts in ascending
    /// order of root id, and the candidate joins one of them.
    D,
}

impl Cut {
    /// Position of the cut in [`Decomposition::cuts`]: A → 0, B → 1, C → 2, D → 3.
    pub fn index(self) -> usize {
        match self {
            Cut::A => 0,
            Cut::B => 1,
            Cut::C => 2,
            Cut::D => 3,
        }
    }
}

/// Result of splitting one tree.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Split {
    /// The cut that was applied.
    pub cut: Cut,
    /// The two parts, sorted vertex ids. `parts[0]` holds `start`.
    pub parts: [Vec<u32>; 2],
    /// The edges of each part, sorted, each written `(smaller id, larger id)`.
    /// Each part is re-wired so that it is a tree: |edges| = |part| − 1, connected. Edges
    /// not in the input tree replace a Steiner vertex (see the [module docs](self)).
    pub edges: [Vec<(u32, u32)>; 2],
    /// The root of each part, where the next step on it starts. `roots[0]` is `start`.
    /// `roots[1]` is the candidate u if `parts[1]` holds it. Otherwise it is the vertex
    /// `parts[1]` was re-wired through: its subtree root with the smallest id.
    pub roots: [u32; 2],
}

/// Groups produced by [`decompose`], with the number of cuts of each type.
#[derive(Debug, Clone, PartialEq, Eq)]
pub struct Decomposition {
    /// Groups of rows: each sorted by id, and the groups sorted by their smallest member.
    pub groups: Vec<Vec<u32>>,
    /// How many cuts of type A, B, C and D were applied, in that order.
    pub cuts: [usize; 4],
}

/// Largest group [`decompose`] leaves unsplit: max(2k − 1, 3k − 5).
///
/// # Arguments
/// * `k` – the anonymity parameter.
///
/// # Returns
/// max(2k − 1, 3k − 5) as an integer, saturating at `u64::MAX`. It is 0 for k = 0 and 1
/// for k = 1.
///
/// # Complexity
/// O(1).
///
/// # Examples
/// ```
/// use kanon_core::forest::decompose::max_group_size;
/// assert_eq!(max_group_size(2), 3);
/// assert_eq!(max_group_size(4), 7);
/// assert_eq!(max_group_size(7), 16);
/// ```
pub fn max_group_size(k: u64) -> u64 {
    let k = u128::from(k);
    u64::try_from((2 * k).saturating_sub(1).max((3 * k).saturating_sub(5))).unwrap_or(u64::MAX)
}

/// [`max_group_size`] in rows of a call, saturating at `usize::MAX`.
fn max_group_rows(k: usize) -> usize {
    let k = k as u128;
    clamp((2 * k).saturating_sub(1).max((3 * k).saturating_sub(5)))
}

/// Smallest tree [`decompose_component`] accepts: max(2k, 3k − 5).
fn min_split_size(k: usize) -> usize {
    let k = k as u128;
    clamp((2 * k).max((3 * k).saturating_sub(5)))
}

fn clamp(x: u128) -> usize {
    usize::try_from(x).unwrap_or(usize::MAX)
}

/// One DECOMPOSE COMPONENT step on a single tree.
///
/// The tree is rooted at `start`, which is also the first candidate. The candidate walks
/// to the root of its largest subtree while s − φ < k − 1. Then cut A, B, C or D is
/// applied as in the paper. The paper's Steiner vertices are replaced by re-wiring; see
/// the [module docs](self) for the rules, the proof that both parts have at least k rows,
/// and the one fallback (s = 3k − 5).
///
/// # Arguments
/// * `vertices` – the rows of the tree, distinct, in any order.
/// * `edges` – its undirected edges, in any order and orientation.
/// * `k` – the anonymity parameter, at least 1.
/// * `start` – a vertex of the tree: the root and the first candidate.
///
/// # Returns
/// The cut applied and the two parts, each with its re-wired tree edges and its root.
///
/// # Errors
/// [`KernelError::InvalidArgument`] in these cases:
/// - k = 0;
/// - a vertex is listed twice, or `start` is not listed;
/// - an edge names an unlisted vertex or is a self-loop;
/// - the edges do not form a tree on `vertices`;
/// - the tree has fewer than max(2k, 3k − 5) rows, where a split into two parts of at
///   least k rows is not guaranteed.
///
/// # Complexity
/// O(s log s) time and O(s) space for a tree of s rows, most of it to validate the input
/// and root the tree.
///
/// # Examples
/// ```
/// use kanon_core::forest::decompose::{decompose_component, Cut};
/// // A path 0-1-2-3-4-5, k = 3: the candidate walks from 0 to 1, where s − φ = 2 = k − 1:
/// // cut B keeps v = 2 with {0, 1}, and v's subtree {3, 4, 5} is the other part.
/// let edges = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5)];
/// let split = decompose_component(&[0, 1, 2, 3, 4, 5], &edges, 3, 0).unwrap();
/// assert_eq!(split.cut, Cut::B);
/// assert_eq!(split.parts, [vec![0, 1, 2], vec![3, 4, 5]]);
/// assert_eq!(split.edges, [vec![(0, 1), (1, 2)], vec![(3, 4), (4, 5)]]);
/// assert_eq!(split.roots, [0, 3]);
/// ```
pub fn decompose_component(
    vertices: &[u32],
    edges: &[(u32, u32)],
    k: u64,
    start: u32,
) -> Result<Split> {
    let k = usize::try_from(k).unwrap_or(usize::MAX);
    const KERNEL: &str = "decompose_component";
    let invalid = |message: String| KernelError::InvalidArgument {
        kernel: KERNEL,
        message,
    };
    check_k(KERNEL, k)?;
    let mut ids = vertices.to_vec();
    ids.sort_unstable();
    if let Some(w) = ids.windows(2).find(|w| w[0] == w[1]) {
        return Err(invalid(format!("vertex {} is listed twice", w[0])));
    }
    if ids.len() > u32::MAX as usize {
        return Err(invalid(format!(
            "{} rows exceed the limit of 4294967295 rows per call",
            ids.len()
        )));
    }
    let local = |x: u32| ids.binary_search(&x).ok().map(|i| i as u32);
    let Some(root) = local(start) else {
        return Err(invalid(format!(
            "start vertex {start} is not one of the tree's {} vertices",
            ids.len()
        )));
    };
    let s = ids.len();
    let needed = min_split_size(k);
    if s < needed {
        return Err(invalid(format!(
            "a tree of {s} rows is too small to split for k = {k}: both parts are \
             guaranteed at least k rows only from max(2k, 3k - 5) = {needed} rows"
        )));
    }
    if edges.len() + 1 != s {
        return Err(invalid(format!(
            "{} edges cannot form a tree on {s} vertices: a tree has exactly {} edges",
            edges.len(),
            s - 1
        )));
    }
    let mut local_edges = Vec::with_capacity(edges.len());
    for (i, &(a, b)) in edges.iter().enumerate() {
        match (local(a), local(b)) {
            (Some(la), Some(lb)) => local_edges.push((la, lb)),
            (None, _) | (_, None) => {
                let bad = if local(a).is_none() { a } else { b };
                return Err(invalid(format!(
                    "edge {i} = ({a}, {b}) names vertex {bad}, which is not one of the \
                     tree's vertices"
                )));
            }
        }
    }
    // s − 1 edges without a cycle on s vertices: a tree.
    check_forest(KERNEL, s, &local_edges, edges)?;
    let (mut engine, _) = Engine::new(k, s, &local_edges, [root]);
    let (cut, other) = engine.step(KERNEL, root)?;
    let mut parts: [Vec<u32>; 2] = [Vec::new(), Vec::new()];
    let mut part_edges: [Vec<(u32, u32)>; 2] = [Vec::new(), Vec::new()];
    for (i, r) in [root, other].into_iter().enumerate() {
        engine.collect(r, &mut parts[i], Some(&mut part_edges[i]));
        for x in &mut parts[i] {
            *x = ids[*x as usize];
        }
        parts[i].sort_unstable();
        for e in &mut part_edges[i] {
            let (a, b) = (ids[e.0 as usize], ids[e.1 as usize]);
            *e = (a.min(b), a.max(b));
        }
        part_edges[i].sort_unstable();
    }
    Ok(Split {
        cut,
        parts,
        edges: part_edges,
        roots: [start, ids[other as usize]],
    })
}

/// Split every tree of the forest with more than max(2k − 1, 3k − 5) rows until none is
/// left.
///
/// The trees are the connected components of `edges` over the rows `0..n`; a row without
/// edges is a tree of one row. Each tree is rooted at its smallest id and split by
/// repeated DECOMPOSE COMPONENT steps ([`decompose_component`]). Each part keeps its root
/// as described in the [module docs](self). Every group that comes from a tree of at least
/// k rows has between k and max(2k − 1, 3k − 5) rows. A tree of fewer than k rows is not an
/// error: it is returned unchanged as one group, and the caller's repair pass must merge it.
///
/// # Arguments
/// * `n` – number of rows; vertices are `0..n`.
/// * `edges` – undirected forest edges, in any order and orientation. Duplicate rows of a
///   tuple are separate vertices joined by edges supplied by the caller.
/// * `k` – the anonymity parameter, at least 1.
///
/// # Returns
/// The groups (sorted ids each, groups sorted by smallest member) and the number of cuts
/// of each type.
///
/// # Errors
/// [`KernelError::InvalidArgument`] in these cases:
/// - k = 0 or n > 4294967295;
/// - an edge names a vertex ≥ n or is a self-loop;
/// - the edges contain a cycle, including a repeated edge.
///
/// # Complexity
/// - Validation and rooting: O(m α(n) + n log n) for m edges.
/// - Steps: at most n / k. Each costs O(k log n), plus the re-wiring. The re-wiring moves
///   the smaller set of subtree roots into the larger one, which costs O(n log² n) over
///   the whole run in the worst case.
/// - Total: O(m α(n) + n log² n) time and O(n) space, for any tree shape (long paths and
///   large stars included). There is no recursion.
///
/// # Examples
/// ```
/// use kanon_core::forest::decompose::decompose;
/// // A path of 7 rows and a lone row, k = 3: the path is cut into 3 + 4 rows (cut B);
/// // the lone row is smaller than k and is returned as it is.
/// let edges = [(0, 1), (1, 2), (2, 3), (3, 4), (4, 5), (5, 6)];
/// let d = decompose(8, &edges, 3).unwrap();
/// assert_eq!(d.groups, vec![vec![0, 1, 2], vec![3, 4, 5, 6], vec![7]]);
/// assert_eq!(d.cuts, [0, 1, 0, 0]);
/// ```
pub fn decompose(n: usize, edges: &[(u32, u32)], k: u64) -> Result<Decomposition> {
    let k = usize::try_from(k).unwrap_or(usize::MAX);
    const KERNEL: &str = "decompose";
    check_k(KERNEL, k)?;
    if n > u32::MAX as usize {
        return Err(KernelError::InvalidArgument {
            kernel: KERNEL,
            message: format!("{n} rows exceed the limit of 4294967295 rows per call"),
        });
    }
    for (i, &(a, b)) in edges.iter().enumerate() {
        if let Some(bad) = [a, b].into_iter().find(|&x| x as usize >= n) {
            return Err(KernelError::InvalidArgument {
                kernel: KERNEL,
                message: format!(
                    "edge {i} = ({a}, {b}) names vertex {bad}, but the vertices are 0..{n}"
                ),
            });
        }
    }
    check_forest(KERNEL, n, edges, edges)?;
    // Visiting candidates in id order roots every tree at its smallest id.
    let (mut engine, roots) = Engine::new(k, n, edges, 0..n as u32);
    let bound = max_group_rows(k);
    let mut cuts = [0usize; 4];
    let mut all_roots = roots.clone();
    let mut todo: Vec<u32> = roots
        .iter()
        .rev()
        .copied()
        .filter(|&r| engine.size_of(r) > bound)
        .collect();
    while let Some(r) = todo.pop() {
        let (cut, other) = engine.step(KERNEL, r)?;
        cuts[cut.index()] += 1;
        all_roots.push(other);
        for part in [other, r] {
            if engine.size_of(part) > bound {
                todo.push(part);
            }
        }
    }
    let mut groups: Vec<Vec<u32>> = all_roots
        .into_iter()
        .map(|r| {
            let mut group = Vec::new();
            engine.collect(r, &mut group, None);
            group.sort_unstable();
            group
        })
        .collect();
    groups.sort_unstable_by_key(|g| g.first().copied());
    Ok(Decomposition { groups, cuts })
}

fn check_k(kernel: &'static str, k: usize) -> Result<()> {
    if k == 0 {
        return Err(KernelError::InvalidArgument {
            kernel,
            message: "k must be at least 1 (got 0)".to_string(),
        });
    }
    Ok(())
}

/// Fail on a self-loop or a cycle in `edges` (vertex ids < n, already checked).
/// `shown` holds the same edges as the caller wrote them, for the error message.
fn check_forest(
    kernel: &'static str,
    n: usize,
    edges: &[(u32, u32)],
    shown: &[(u32, u32)],
) -> Result<()> {
    let mut sets = UnionFind::singletons(n);
    for (i, (&(a, b), &(sa, sb))) in edges.iter().zip(shown).enumerate() {
        if a == b {
            return Err(KernelError::InvalidArgument {
                kernel,
                message: format!("edge {i} = ({sa}, {sb}) is a self-loop"),
            });
        }
        if !sets.union(a, b) {
            return Err(KernelError::InvalidArgument {
                kernel,
                message: format!(
                    "edge {i} = ({sa}, {sb}) closes a cycle: the edges must form a forest"
                ),
            });
        }
    }
    Ok(())
}

/// The children of one vertex, ordered by id and by (size descending, id ascending).
#[derive(Debug, Default)]
struct Kids {
    by_id: BTreeSet<u32>,
    by_size: BTreeSet<(Reverse<u32>, u32)>,
}

impl Kids {
    fn len(&self) -> usize {
        self.by_id.len()
    }

    fn insert(&mut self, id: u32, size: u32) {
        self.by_id.insert(id);
        self.by_size.insert((Reverse(size), id));
    }

    fn remove(&mut self, id: u32, size: u32) {
        self.by_id.remove(&id);
        self.by_size.remove(&(Reverse(size), id));
    }

    /// (size, id) of the largest child; ties go to the smallest id.
    fn heaviest(&self) -> Option<(u32, u32)> {
        self.by_size.first().map(|&(Reverse(size), id)| (size, id))
    }

    fn first(&self) -> Option<u32> {
        self.by_id.first().copied()
    }

    /// Remove and return the child with the smallest id; `size` holds the children's sizes.
    fn pop_first(&mut self, size: &[u32]) -> Option<u32> {
        let id = self.by_id.pop_first()?;
        self.by_size.remove(&(Reverse(size[id as usize]), id));
        Some(id)
    }

    /// Move every child of `other` here, inserting the smaller set into the larger.
    fn absorb(&mut self, mut other: Kids) {
        if other.len() > self.len() {
            std::mem::swap(self, &mut other);
        }
        self.by_id.extend(other.by_id);
        self.by_size.extend(other.by_size);
    }
}

/// Which children of the candidate u go to the part Y that does not contain u.
enum FromU {
    /// Exactly these children.
    Taken(Vec<u32>),
    /// Every child except these.
    AllBut(Vec<u32>),
}

/// A cut, described as the subtree roots that leave u's part.
struct Plan {
    cut: Cut,
    from_u: FromU,
    /// Whether the subtree on the side of the root (through u's parent) goes to Y.
    parent_in_y: bool,
    /// A child t of u that stays with u while all of t's children go to Y.
    strip: Option<u32>,
}

/// Rooted trees with subtree sizes, split in place by DECOMPOSE steps.
///
/// Invariants: `size[x]` is the number of rows in x's subtree within its current part;
/// `kids[x]` holds x's children keyed by their current sizes. A part is identified by its
/// root, which is nobody's child.
struct Engine {
    k: usize,
    size: Vec<u32>,
    kids: Vec<Kids>,
}

impl Engine {
    /// Root the trees of the (validated) forest by explicit-stack DFS. Each candidate not
    /// yet reached roots its tree. Returns the engine and the roots used, in order.
    fn new(
        k: usize,
        n: usize,
        edges: &[(u32, u32)],
        candidates: impl IntoIterator<Item = u32>,
    ) -> (Self, Vec<u32>) {
        let mut offsets = vec![0usize; n + 1];
        for &(a, b) in edges {
            offsets[a as usize + 1] += 1;
            offsets[b as usize + 1] += 1;
        }
        for i in 0..n {
            offsets[i + 1] += offsets[i];
        }
        let mut fill = offsets.clone();
        let mut adjacent = vec![0u32; offsets[n]];
        for &(a, b) in edges {
            adjacent[fill[a as usize]] = b;
            fill[a as usize] += 1;
            adjacent[fill[b as usize]] = a;
            fill[b as usize] += 1;
        }
        const NONE: u32 = u32::MAX;
        let mut parent = vec![NONE; n];
        let mut reached = vec![false; n];
        let mut order = Vec::with_capacity(n);
        let mut roots = Vec::new();
        let mut stack = Vec::new();
        for root in candidates {
            if std::mem::replace(&mut reached[root as usize], true) {
                continue;
            }
            roots.push(root);
            stack.push(root);
            while let Some(x) = stack.pop() {
                order.push(x);
                let xi = x as usize;
                for &y in &adjacent[offsets[xi]..offsets[xi + 1]] {
                    if y != parent[xi] {
                        parent[y as usize] = x;
                        reached[y as usize] = true;
                        stack.push(y);
                    }
                }
            }
        }
        let mut size = vec![1u32; n];
        for &x in order.iter().rev() {
            let p = parent[x as usize];
            if p != NONE {
                size[p as usize] += size[x as usize];
            }
        }
        let mut kids: Vec<Kids> = (0..n).map(|_| Kids::default()).collect();
        for &x in &order {
            let p = parent[x as usize];
            if p != NONE {
                kids[p as usize].insert(x, size[x as usize]);
            }
        }
        (Engine { k, size, kids }, roots)
    }

    fn size_of(&self, x: u32) -> usize {
        self.size[x as usize] as usize
    }

    /// Set x's subtree size, keeping its entry in its parent's children in step.
    fn set_size(&mut self, parent: Option<u32>, x: u32, new: u32) {
        if let Some(p) = parent {
            let kids = &mut self.kids[p as usize];
            kids.by_size.remove(&(Reverse(self.size[x as usize]), x));
            kids.by_size.insert((Reverse(new), x));
        }
        self.size[x as usize] = new;
    }

    /// Collect the vertices (and parent–child edges) of the part rooted at `root`.
    fn collect(&self, root: u32, vertices: &mut Vec<u32>, mut edges: Option<&mut Vec<(u32, u32)>>) {
        let mut stack = vec![root];
        while let Some(x) = stack.pop() {
            vertices.push(x);
            for &y in &self.kids[x as usize].by_id {
                if let Some(edges) = edges.as_deref_mut() {
                    edges.push((x, y));
                }
                stack.push(y);
            }
        }
    }

    /// One DECOMPOSE COMPONENT step on the part rooted at `r` (at least max(2k, 3k − 5)
    /// rows). Returns the cut and the root of the new part; `r` stays the root of the other.
    fn step(&mut self, kernel: &'static str, r: u32) -> Result<(Cut, u32)> {
        let k = self.k;
        let s = self.size_of(r);
        // The walk. At u, the subtree through u's parent has ps = s − size[u] rows. u was
        // reached because ps < k − 1, so the walk never turns back: it only descends,
        // and the path holds fewer than k − 1 ancestors.
        let mut path: Vec<u32> = Vec::new();
        let mut u = r;
        loop {
            let ps = s - self.size_of(u);
            match self.kids[u as usize].heaviest() {
                Some((phi, v)) if phi as usize > ps && s - (phi as usize) + 1 < k => {
                    path.push(u);
                    u = v;
                }
                _ => break,
            }
        }
        let parent = path.last().copied();
        let ps = s - self.size_of(u);
        let (phi_c, v) = self.kids[u as usize]
            .heaviest()
            .map_or((0, None), |(phi, v)| (phi as usize, Some(v)));
        let phi = phi_c.max(ps);
        // In A, B and C, φ ≥ k − 1 > ps, so the largest subtree is a child v of u.
        let child_v = if phi_c == phi { v } else { None };
        let plan = if phi >= k && s - phi >= k {
            child_v.map(|v| Plan {
                cut: Cut::A,
                from_u: FromU::Taken(vec![v]),
                parent_in_y: false,
                strip: None,
            })
        } else if s - phi == k - 1 {
            child_v.map(|v| Plan {
                cut: Cut::B,
                from_u: FromU::Taken(Vec::new()),
                parent_in_y: false,
                strip: Some(v),
            })
        } else if phi == k - 1 {
            child_v.map(|v| Plan {
                cut: Cut::C,
                from_u: FromU::AllBut(vec![v]),
                parent_in_y: parent.is_some(),
                strip: None,
            })
        } else {
            self.plan_d(u, parent, s, ps)
        };
        let Some(plan) = plan else {
            return Err(internal(kernel, s, k));
        };
        let cut = plan.cut;
        let other = self
            .apply(u, &path, s, plan)
            .ok_or_else(|| internal(kernel, s, k))?;
        if self.size_of(r) < k
            || self.size_of(other) < k
            || self.size_of(r) + self.size_of(other) != s
        {
            return Err(internal(kernel, s, k));
        }
        Ok((cut, other))
    }

    /// Case D: all subtrees of u have at most k − 2 rows.
    fn plan_d(&self, u: u32, parent: Option<u32>, s: usize, ps: usize) -> Option<Plan> {
        let k = self.k;
        // P1: subtrees in ascending root id (u's children and, if any, u's parent) until
        // it holds at least k − 1 rows.
        let mut p1_kids = Vec::new();
        let mut parent_in_p1 = false;
        let mut pending_parent = parent;
        let mut size1 = 0usize;
        let mut children = self.kids[u as usize].by_id.iter().copied().peekable();
        while size1 + 1 < k {
            match (children.peek().copied(), pending_parent) {
                (next, Some(p)) if next.is_none_or(|c| p < c) => {
                    size1 += ps;
                    parent_in_p1 = true;
                    pending_parent = None;
                }
                (Some(c), _) => {
                    size1 += self.size_of(c);
                    p1_kids.push(c);
                    children.next();
                }
                (None, _) => break,
            }
        }
        let size2 = (s - 1).checked_sub(size1)?;
        let joins_p1 = |p1_kids| Plan {
            cut: Cut::D,
            from_u: FromU::AllBut(p1_kids),
            parent_in_y: parent.is_some() && !parent_in_p1,
            strip: None,
        };
        Some(if size1 == k - 1 {
            joins_p1(p1_kids)
        } else if size2 == k - 1 {
            Plan {
                cut: Cut::D,
                from_u: FromU::Taken(p1_kids),
                parent_in_y: parent_in_p1,
                strip: None,
            }
        } else if size2 >= k {
            joins_p1(p1_kids)
        } else {
            // Only at s = 3k − 5: |P1| = 2k − 4, |P2| = k − 2. Move q, the child of u in
            // P1 with the largest id, to u's side without its subtrees (see module docs).
            let q = p1_kids.pop()?;
            Plan {
                cut: Cut::D,
                from_u: FromU::Taken(p1_kids),
                parent_in_y: parent_in_p1,
                strip: Some(q),
            }
        })
    }

    /// Carry out a plan at candidate u, reached from the root along `path`. The part Y
    /// not holding u is re-wired through its smallest subtree root f. Returns the root of
    /// the new part: f if u stays in the root's part, u otherwise.
    fn apply(&mut self, u: u32, path: &[u32], s: usize, plan: Plan) -> Option<u32> {
        let ui = u as usize;
        let parent = path.last().copied();
        let old_u = self.size[ui];
        let ps = s - old_u as usize;
        let mut y = Kids::default();
        let mut size_y = 0usize;
        match plan.from_u {
            FromU::Taken(list) => {
                for c in list {
                    let sc = self.size[c as usize];
                    self.kids[ui].remove(c, sc);
                    y.insert(c, sc);
                    size_y += sc as usize;
                }
            }
            FromU::AllBut(list) => {
                let mut rest = std::mem::take(&mut self.kids[ui]);
                let mut keep = Kids::default();
                let mut kept = 0usize;
                for c in list {
                    let sc = self.size[c as usize];
                    rest.remove(c, sc);
                    keep.insert(c, sc);
                    kept += sc as usize;
                }
                size_y += (old_u as usize - 1).checked_sub(kept)?;
                self.kids[ui] = keep;
                y.absorb(rest);
            }
        }
        if let Some(t) = plan.strip {
            let moved = std::mem::take(&mut self.kids[t as usize]);
            size_y += self.size_of(t) - 1;
            y.absorb(moved);
            self.set_size(Some(u), t, 1);
        }
        if plan.parent_in_y {
            size_y += ps;
        }
        let size_y32 = u32::try_from(size_y).ok()?;
        let u_part = old_u
            .checked_add(u32::try_from(ps).ok()?)?
            .checked_sub(size_y32)?;
        if !plan.parent_in_y {
            // u stays in the root's part; u and its ancestors lose the rows of Y.
            self.shrink_path(path, size_y32)?;
            self.set_size(parent, u, old_u.checked_sub(size_y32)?);
            let f = y.pop_first(&self.size)?;
            let mut kept = std::mem::take(&mut self.kids[f as usize]);
            kept.absorb(y);
            self.kids[f as usize] = kept;
            self.size[f as usize] = size_y32;
            Some(f)
        } else {
            // u's part is rooted at u; the root's part hangs Y on p or on u's smallest
            // child in Y, whichever id is smaller.
            let p = parent?;
            let pi = p as usize;
            self.kids[pi].remove(u, old_u);
            self.size[ui] = u_part;
            match y.first() {
                Some(c) if c < p => {
                    y.pop_first(&self.size);
                    let mut kept = std::mem::take(&mut self.kids[c as usize]);
                    kept.absorb(y);
                    self.kids[c as usize] = kept;
                    let sc = u32::try_from(size_y.checked_sub(ps)?).ok()?;
                    self.size[c as usize] = sc;
                    self.kids[pi].insert(c, sc);
                }
                _ => {
                    let mut kept = std::mem::take(&mut self.kids[pi]);
                    kept.absorb(y);
                    self.kids[pi] = kept;
                }
            }
            self.shrink_path(path, u_part)?;
            Some(u)
        }
    }

    /// Subtract `by` from the size of every vertex on `path` (root first).
    fn shrink_path(&mut self, path: &[u32], by: u32) -> Option<()> {
        let mut above = None;
        for &w in path {
            let new = self.size[w as usize].checked_sub(by)?;
            self.set_size(above, w, new);
            above = Some(w);
        }
        Some(())
    }
}

fn internal(kernel: &'static str, s: usize, k: usize) -> KernelError {
    KernelError::InvalidArgument {
        kernel,
        message: format!(
            "internal error: the split of a tree of {s} rows for k = {k} broke its \
             invariants; please report this input"
        ),
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn bounds_match_the_paper() {
        let bounds: Vec<usize> = (1..=8).map(max_group_rows).collect();
        assert_eq!(bounds, vec![1, 3, 5, 7, 10, 13, 16, 19]);
        let mins: Vec<usize> = (1..=8).map(min_split_size).collect();
        assert_eq!(mins, vec![2, 4, 6, 8, 10, 13, 16, 19]);
        assert_eq!(max_group_rows(usize::MAX), usize::MAX);
        assert_eq!(max_group_size(u64::MAX), u64::MAX);
        assert_eq!(min_split_size(usize::MAX / 2), usize::MAX);
        assert_eq!(max_group_size(0), 0);
    }

    #[test]
    fn kids_order_by_size_then_id() {
        let mut kids = Kids::default();
        kids.insert(7, 3);
        kids.insert(4, 3);
        kids.insert(2, 1);
        assert_eq!(kids.heaviest(), Some((3, 4)));
        assert_eq!(kids.first(), Some(2));
        let mut other = Kids::default();
        other.insert(1, 5);
        kids.absorb(other);
        assert_eq!(kids.heaviest(), Some((5, 1)));
        let size = [0, 5, 1, 0, 3, 0, 0, 3];
        assert_eq!(kids.pop_first(&size), Some(1));
        assert_eq!(kids.heaviest(), Some((3, 4)));
        assert_eq!(kids.len(), 3);
    }

    #[test]
    fn paper_rule_fails_at_3k_minus_5_and_the_fallback_holds() {
        // k = 5, s = 10 = 3k − 5: a center with three paths of k − 2 = 3 rows.
        let edges = [
            (0, 1),
            (1, 2),
            (2, 3),
            (0, 4),
            (4, 5),
            (5, 6),
            (0, 7),
            (7, 8),
            (8, 9),
        ];
        let vertices: Vec<u32> = (0..10).collect();
        let split = decompose_component(&vertices, &edges, 5, 0).unwrap();
        assert_eq!(split.cut, Cut::D);
        assert_eq!(split.parts, [vec![0, 4, 7, 8, 9], vec![1, 2, 3, 5, 6]]);
        assert_eq!(split.edges[1], vec![(1, 2), (1, 5), (2, 3), (5, 6)]);
        assert_eq!(split.roots, [0, 1]);
    }

    #[test]
    fn engine_keeps_sizes_consistent_on_a_path() {
        let n = 50usize;
        let edges: Vec<(u32, u32)> = (0..n as u32 - 1).map(|i| (i, i + 1)).collect();
        let (mut engine, roots) = Engine::new(3, n, &edges, [0]);
        assert_eq!(roots, vec![0]);
        let (cut, other) = engine.step("test", 0).unwrap();
        // Walk 0 → 1, then s − φ = 2 = k − 1: cut B keeps 2 with {0, 1}.
        assert_eq!((cut, other), (Cut::B, 3));
        assert_eq!((engine.size_of(0), engine.size_of(3)), (3, 47));
    }
}
