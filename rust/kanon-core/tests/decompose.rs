//! Integration tests of `kanon_core::forest::decompose`: hand-checked cuts, a naive reference of
//! the paper's DECOMPOSE COMPONENT (re-rooted at every candidate, O(s) per subtree size),
//! the group-size guarantee on random forests, long paths and stars, and input errors.

use std::collections::{BTreeMap, BTreeSet};
use std::time::Instant;

use kanon_core::forest::decompose::{
    decompose, decompose_component, max_group_size, Cut, Decomposition, Split,
};
use kanon_core::KernelError;
use proptest::prelude::*;

type Adj = BTreeMap<u32, BTreeSet<u32>>;

fn adjacency(vertices: &[u32], edges: &[(u32, u32)]) -> Adj {
    let mut adj: Adj = vertices.iter().map(|&v| (v, BTreeSet::new())).collect();
    for &(a, b) in edges {
        adj.get_mut(&a).unwrap().insert(b);
        adj.get_mut(&b).unwrap().insert(a);
    }
    adj
}

/// Vertices reachable from `from` without passing through `blocked`.
fn reach(adj: &Adj, from: u32, blocked: u32) -> BTreeSet<u32> {
    let mut seen = BTreeSet::from([from]);
    let mut stack = vec![from];
    while let Some(x) = stack.pop() {
        for &y in &adj[&x] {
            if y != blocked && seen.insert(y) {
                stack.push(y);
            }
        }
    }
    seen
}

fn sorted_edges(edges: impl IntoIterator<Item = (u32, u32)>) -> Vec<(u32, u32)> {
    let mut out: Vec<(u32, u32)> = edges
        .into_iter()
        .map(|(a, b)| (a.min(b), a.max(b)))
        .collect();
    out.sort_unstable();
    out
}

/// The paper's step, written naively around the candidate u (no incremental sizes).
fn reference_step(vertices: &[u32], edges: &[(u32, u32)], k: usize, start: u32) -> Split {
    let adj = adjacency(vertices, edges);
    let s = vertices.len();
    // Largest subtree around u: (size, root), ties to the smallest root id.
    let largest = |u: u32| -> (usize, u32) {
        let mut best = (0, u32::MAX);
        for &w in &adj[&u] {
            let size = reach(&adj, w, u).len();
            if size > best.0 {
                best = (size, w);
            }
        }
        best
    };
    let mut u = start;
    let (phi, v) = loop {
        let (phi, v) = largest(u);
        if s - phi + 1 < k {
            u = v;
        } else {
            break (phi, v);
        }
    };
    let toward_start = adj[&u]
        .iter()
        .copied()
        .find(|&w| reach(&adj, w, u).contains(&start));
    // The subtree roots leaving u's part, each with its neighbour on u's side.
    let (cut, y_roots): (Cut, Vec<(u32, u32)>) = if phi >= k && s - phi >= k {
        (Cut::A, vec![(v, u)])
    } else if s - phi == k - 1 {
        (
            Cut::B,
            adj[&v]
                .iter()
                .filter(|&&c| c != u)
                .map(|&c| (c, v))
                .collect(),
        )
    } else if phi == k - 1 {
        (
            Cut::C,
            adj[&u]
                .iter()
                .filter(|&&c| c != v)
                .map(|&c| (c, u))
                .collect(),
        )
    } else {
        let roots: Vec<u32> = adj[&u].iter().copied().collect();
        let mut p1 = Vec::new();
        let mut size1 = 0;
        for &c in &roots {
            if size1 >= k - 1 {
                break;
            }
            size1 += reach(&adj, c, u).len();
            p1.push(c);
        }
        let size2 = s - 1 - size1;
        let p2: Vec<u32> = roots.iter().copied().filter(|c| !p1.contains(c)).collect();
        let around_u = |list: &[u32]| list.iter().map(|&c| (c, u)).collect::<Vec<_>>();
        let y = if size1 == k - 1 {
            around_u(&p2)
        } else if size2 == k - 1 {
            around_u(&p1)
        } else if size2 >= k {
            around_u(&p2)
        } else {
            let q = *p1.iter().rev().find(|&&c| Some(c) != toward_start).unwrap();
            let mut y = around_u(&p1.iter().copied().filter(|&c| c != q).collect::<Vec<_>>());
            y.extend(adj[&q].iter().filter(|&&c| c != u).map(|&c| (c, q)));
            y
        };
        (Cut::D, y)
    };
    let y_part: BTreeSet<u32> = y_roots
        .iter()
        .flat_map(|&(c, from)| reach(&adj, c, from))
        .collect();
    let u_part: BTreeSet<u32> = vertices
        .iter()
        .copied()
        .filter(|x| !y_part.contains(x))
        .collect();
    let f = y_roots.iter().map(|&(c, _)| c).min().unwrap();
    let inside = |part: &BTreeSet<u32>| {
        edges
            .iter()
            .copied()
            .filter(|(a, b)| part.contains(a) && part.contains(b))
            .collect::<Vec<_>>()
    };
    let mut y_edges = inside(&y_part);
    y_edges.extend(
        y_roots
            .iter()
            .filter(|&&(c, _)| c != f)
            .map(|&(c, _)| (f, c)),
    );
    let u_side = (
        u_part.iter().copied().collect(),
        sorted_edges(inside(&u_part)),
    );
    let y_side = (y_part.iter().copied().collect(), sorted_edges(y_edges));
    let (first, second, other_root) = if u_part.contains(&start) {
        (u_side, y_side, f)
    } else {
        (y_side, u_side, u)
    };
    Split {
        cut,
        parts: [first.0, second.0],
        edges: [first.1, second.1],
        roots: [start, other_root],
    }
}

/// Whether `edges` form one tree spanning `part`.
fn is_tree(part: &[u32], edges: &[(u32, u32)]) -> bool {
    if part.is_empty() || edges.len() + 1 != part.len() {
        return false;
    }
    if edges
        .iter()
        .any(|(a, b)| !part.contains(a) || !part.contains(b))
    {
        return false;
    }
    reach(&adjacency(part, edges), part[0], u32::MAX).len() == part.len()
}

/// Reference `decompose`: components rooted at their smallest id, then `reference_step`
/// on every part above the bound, each part restarting at the root it is handed.
fn reference_decompose(n: usize, edges: &[(u32, u32)], k: usize) -> Decomposition {
    let all: Vec<u32> = (0..n as u32).collect();
    let adj = adjacency(&all, edges);
    let bound = max_group_size(k as u64) as usize;
    let mut seen = BTreeSet::new();
    let mut todo = Vec::new();
    for v in 0..n as u32 {
        if seen.contains(&v) {
            continue;
        }
        let comp = reach(&adj, v, u32::MAX);
        seen.extend(comp.iter().copied());
        let comp_edges: Vec<(u32, u32)> = edges
            .iter()
            .copied()
            .filter(|(a, _)| comp.contains(a))
            .collect();
        todo.push((comp.into_iter().collect::<Vec<_>>(), comp_edges, v));
    }
    let mut groups = Vec::new();
    let mut cuts = [0; 4];
    while let Some((part, part_edges, root)) = todo.pop() {
        if part.len() <= bound {
            groups.push(part);
            continue;
        }
        let split = reference_step(&part, &part_edges, k, root);
        cuts[split.cut.index()] += 1;
        for i in 0..2 {
            assert!(split.parts[i].len() >= k, "reference part below k");
            assert!(
                is_tree(&split.parts[i], &split.edges[i]),
                "reference part not a tree"
            );
            todo.push((
                split.parts[i].clone(),
                split.edges[i].clone(),
                split.roots[i],
            ));
        }
    }
    groups.sort_unstable_by_key(|g| g[0]);
    Decomposition { groups, cuts }
}

fn path(n: u32) -> Vec<(u32, u32)> {
    (1..n).map(|i| (i - 1, i)).collect()
}

/// Check one split: matches the reference, both parts are trees of at least k rows
/// that partition the input.
fn check_split(vertices: &[u32], edges: &[(u32, u32)], k: usize, start: u32) -> Split {
    let split = decompose_component(vertices, edges, k as u64, start).unwrap();
    assert_eq!(split, reference_step(vertices, edges, k, start));
    for i in 0..2 {
        assert!(split.parts[i].len() >= k);
        assert!(is_tree(&split.parts[i], &split.edges[i]));
    }
    let mut union: Vec<u32> = split.parts.concat();
    union.sort_unstable();
    let mut expected = vertices.to_vec();
    expected.sort_unstable();
    assert_eq!(union, expected);
    assert!(split.parts[0].contains(&start));
    assert!(split.parts[1].contains(&split.roots[1]));
    split
}

#[test]
fn thesis_figure_2_11_is_cut_b_into_7_and_9() {
    // u = 0; v = 1 heads a subtree of 10 rows; u's other subtrees hold 5 rows.
    let edges = [
        (0, 1),
        (1, 2),
        (1, 3),
        (1, 4),
        (2, 5),
        (2, 6),
        (3, 7),
        (4, 8),
        (8, 9),
        (8, 10),
        (0, 11),
        (11, 12),
        (12, 13),
        (0, 14),
        (14, 15),
    ];
    let vertices: Vec<u32> = (0..16).collect();
    let split = check_split(&vertices, &edges, 7, 0);
    assert_eq!(split.cut, Cut::B);
    assert_eq!(split.parts[0], vec![0, 1, 11, 12, 13, 14, 15]);
    assert_eq!(split.parts[1], (2..=10).collect::<Vec<u32>>());
    // v's children 2, 3, 4 are re-hung on 2, which replaces the Steiner vertex.
    assert_eq!(
        split.edges[1],
        vec![
            (2, 3),
            (2, 4),
            (2, 5),
            (2, 6),
            (3, 7),
            (4, 8),
            (8, 9),
            (8, 10)
        ]
    );
    assert_eq!(split.roots, [0, 2]);
    // s = 16 = max(2k − 1, 3k − 5): decompose leaves such a tree whole.
    let d = decompose(16, &edges, 7).unwrap();
    assert_eq!(d.groups, vec![vertices]);
    assert_eq!(d.cuts, [0; 4]);
}

#[test]
fn cut_a_splits_off_the_largest_subtree() {
    // k = 3: two subtrees of 3 under 0; the tie goes to the smaller root, 1.
    let edges = [(0, 1), (1, 2), (1, 3), (0, 4), (4, 5), (5, 6)];
    let split = check_split(&[0, 1, 2, 3, 4, 5, 6], &edges, 3, 0);
    assert_eq!(split.cut, Cut::A);
    assert_eq!(split.parts, [vec![0, 4, 5, 6], vec![1, 2, 3]]);
    assert_eq!(
        split.edges,
        [vec![(0, 4), (4, 5), (5, 6)], vec![(1, 2), (1, 3)]]
    );
    assert_eq!(split.roots, [0, 1]);
    assert_eq!(decompose(7, &edges, 3).unwrap().cuts, [1, 0, 0, 0]);
}

#[test]
fn cut_b_rewires_the_children_of_v() {
    // k = 3, s = 7: u = 0 holds a leaf 6 and v = 1 with a subtree of 5, s − φ = 2 = k − 1.
    let edges = [(0, 6), (0, 1), (1, 2), (1, 3), (3, 4), (2, 5)];
    let split = check_split(&[0, 1, 2, 3, 4, 5, 6], &edges, 3, 0);
    assert_eq!(split.cut, Cut::B);
    assert_eq!(split.parts, [vec![0, 1, 6], vec![2, 3, 4, 5]]);
    assert_eq!(
        split.edges,
        [vec![(0, 1), (0, 6)], vec![(2, 3), (2, 5), (3, 4)]]
    );
    assert_eq!(split.roots, [0, 2]);
}

#[test]
fn cut_c_joins_u_to_a_subtree_of_k_minus_1() {
    // k = 3, s = 7: three subtrees of 2 under 0; u joins the first, 1.
    let edges = [(0, 1), (1, 2), (0, 3), (3, 4), (0, 5), (5, 6)];
    let split = check_split(&[0, 1, 2, 3, 4, 5, 6], &edges, 3, 0);
    assert_eq!(split.cut, Cut::C);
    assert_eq!(split.parts, [vec![0, 1, 2], vec![3, 4, 5, 6]]);
    assert_eq!(
        split.edges,
        [vec![(0, 1), (1, 2)], vec![(3, 4), (3, 5), (5, 6)]]
    );
    assert_eq!(split.roots, [0, 3]);
    let d = decompose(7, &edges, 3).unwrap();
    assert_eq!(d.groups, vec![vec![0, 1, 2], vec![3, 4, 5, 6]]);
    assert_eq!(d.cuts, [0, 0, 1, 0]);
}

#[test]
fn cut_c_below_the_root_reroots_u_and_rewires_the_rest() {
    // k = 3, s = 9. Start 9 (a leaf on 1): φ = 8, s − φ = 1 < 2, so the candidate moves to 1.
    // At 1 the subtrees are {9}, {0}, {2, 3}, {4, 5}, {6, 7}: φ = 2 = k − 1, v = 2.
    let edges = [
        (9, 1),
        (1, 0),
        (1, 2),
        (2, 3),
        (1, 4),
        (4, 5),
        (1, 6),
        (6, 7),
    ];
    let vertices = [0, 1, 2, 3, 4, 5, 6, 7, 9];
    let split = check_split(&vertices, &edges, 3, 9);
    assert_eq!(split.cut, Cut::C);
    // The root's part is hung on 0, the smallest of u's other neighbours (9 included).
    assert_eq!(split.parts, [vec![0, 4, 5, 6, 7, 9], vec![1, 2, 3]]);
    assert_eq!(split.edges[0], vec![(0, 4), (0, 6), (0, 9), (4, 5), (6, 7)]);
    assert_eq!(split.roots, [9, 1]);
}

#[test]
fn cut_d_packs_small_subtrees_in_id_order() {
    // k = 4, s = 8: subtrees {1, 2}, {3}, {4, 5}, {6, 7}; P1 = {1, 2, 3} has k − 1 rows.
    let edges = [(0, 1), (1, 2), (0, 3), (0, 4), (4, 5), (0, 6), (6, 7)];
    let split = check_split(&[0, 1, 2, 3, 4, 5, 6, 7], &edges, 4, 0);
    assert_eq!(split.cut, Cut::D);
    assert_eq!(split.parts, [vec![0, 1, 2, 3], vec![4, 5, 6, 7]]);
    assert_eq!(split.edges[1], vec![(4, 5), (4, 6), (6, 7)]);
    assert_eq!(decompose(8, &edges, 4).unwrap().cuts, [0, 0, 0, 1]);
}

#[test]
fn cut_d_puts_u_with_p2_when_p2_has_k_minus_1() {
    // k = 5, s = 11: P1 = {1, 2, 3} + {4, 5, 6} = 6 rows, P2 = {7, 8} + {9, 10} = 4 = k − 1.
    let edges = [
        (0, 1),
        (1, 2),
        (1, 3),
        (0, 4),
        (4, 5),
        (4, 6),
        (0, 7),
        (7, 8),
        (0, 9),
        (9, 10),
    ];
    let vertices: Vec<u32> = (0..11).collect();
    let split = check_split(&vertices, &edges, 5, 0);
    assert_eq!(split.cut, Cut::D);
    assert_eq!(split.parts, [vec![0, 7, 8, 9, 10], vec![1, 2, 3, 4, 5, 6]]);
    assert_eq!(split.edges[1], vec![(1, 2), (1, 3), (1, 4), (4, 5), (4, 6)]);
    assert_eq!(split.roots, [0, 1]);
}

#[test]
fn cut_d_at_3k_minus_5_needs_the_fallback() {
    // k = 6, s = 13 = 3k − 5: three paths of k − 2 = 4 rows around 0. The paper's rule
    // would return parts of 9 and 4 rows; the fallback moves 5 (head of the second path).
    let mut edges = Vec::new();
    for head in [1u32, 5, 9] {
        edges.push((0, head));
        edges.extend((head..head + 3).map(|x| (x, x + 1)));
    }
    let vertices: Vec<u32> = (0..13).collect();
    let split = check_split(&vertices, &edges, 6, 0);
    assert_eq!(split.cut, Cut::D);
    assert_eq!(
        split.parts,
        [vec![0, 5, 9, 10, 11, 12], vec![1, 2, 3, 4, 6, 7, 8]]
    );
    assert_eq!(split.roots, [0, 1]);
}

#[test]
fn candidate_walks_down_a_path() {
    // k = 5, s = 11: from 0 the candidate walks 0 → 1 → 2 → 3, where s − φ = 4 = k − 1.
    let vertices: Vec<u32> = (0..11).collect();
    let split = check_split(&vertices, &path(11), 5, 0);
    assert_eq!(split.cut, Cut::B);
    assert_eq!(
        split.parts,
        [vec![0, 1, 2, 3, 4], (5..11).collect::<Vec<u32>>()]
    );
    assert_eq!(split.roots, [0, 5]);
    // From the middle there is no walk: φ = 5 on both sides, s − φ = 5 ≥ k: cut A.
    let split = check_split(&vertices, &path(11), 5, 5);
    assert_eq!(split.cut, Cut::A);
    assert_eq!(
        split.parts,
        [(5..11).collect::<Vec<u32>>(), vec![0, 1, 2, 3, 4]]
    );
    assert_eq!(split.roots, [5, 4]);
}

#[test]
fn candidate_walks_from_a_leaf_into_a_hub() {
    // k = 3, s = 7: from leaf 0 the candidate moves to 1 (φ = 6, s − φ = 1 < 2). At 1,
    // φ = 5 (v = 2) and s − φ = 2 = k − 1: cut B, 2's children 3 and 4 re-hung on 3.
    let edges = [(0, 1), (1, 2), (2, 3), (2, 4), (4, 5), (4, 6)];
    let split = check_split(&[0, 1, 2, 3, 4, 5, 6], &edges, 3, 0);
    assert_eq!(split.cut, Cut::B);
    assert_eq!(split.parts, [vec![0, 1, 2], vec![3, 4, 5, 6]]);
    assert_eq!(split.edges[1], vec![(3, 4), (4, 5), (4, 6)]);
}

#[test]
fn small_trees_are_returned_unchanged() {
    // k = 4: a tree of 2 rows, a lone row and a tree of 5 rows (within [k, 7]).
    let edges = [(0, 3), (1, 2), (2, 5), (5, 6), (6, 7)];
    let d = decompose(8, &edges, 4).unwrap();
    assert_eq!(d.groups, vec![vec![0, 3], vec![1, 2, 5, 6, 7], vec![4]]);
    assert_eq!(d.cuts, [0; 4]);
    assert_eq!(decompose(0, &[], 3).unwrap().groups, Vec::<Vec<u32>>::new());
}

#[test]
fn k_one_and_two_reach_the_bounds() {
    let edges = path(9);
    let d = decompose(9, &edges, 1).unwrap();
    assert_eq!(d.groups, (0..9).map(|i| vec![i]).collect::<Vec<_>>());
    let d = decompose(9, &edges, 2).unwrap();
    assert!(d.groups.iter().all(|g| (2..=3).contains(&g.len())));
    assert_eq!(d.cuts[3], 0);
}

fn check_groups(n: usize, edges: &[(u32, u32)], k: u64, d: &Decomposition) {
    let bound = max_group_size(k) as usize;
    let mut seen = vec![false; n];
    for group in &d.groups {
        assert!(group.windows(2).all(|w| w[0] < w[1]));
        for &x in group {
            assert!(!std::mem::replace(&mut seen[x as usize], true));
        }
        // Groups below k are whole input trees: no edge leaves them.
        if (group.len() as u64) < k {
            assert!(edges
                .iter()
                .all(|(a, b)| group.contains(a) == group.contains(b)));
        } else {
            assert!(group.len() <= bound, "group of {} > {bound}", group.len());
        }
    }
    assert!(seen.iter().all(|&s| s));
    assert!(d.groups.windows(2).all(|w| w[0][0] < w[1][0]));
}

#[test]
fn long_path_is_linear_and_does_not_overflow() {
    let n = 100_000u32;
    let k = 5;
    let edges = path(n);
    let clock = Instant::now();
    let d = decompose(n as usize, &edges, k).unwrap();
    let elapsed = clock.elapsed();
    check_groups(n as usize, &edges, k, &d);
    // From 0 the walk reaches 3 and cuts B: groups of 5 until a tail of 10 = 3k − 5.
    assert_eq!(d.groups[0], vec![0, 1, 2, 3, 4]);
    assert_eq!(d.groups.len(), 19_999);
    assert_eq!(d.groups.last().unwrap().len(), 10);
    assert_eq!(d.cuts, [0, 19_998, 0, 0]);
    assert!(elapsed.as_secs_f64() < 20.0, "took {elapsed:?}");

    // The same path with scattered labels: roots fall in the middle of paths.
    let label = |i: u32| (i.wrapping_mul(7_919)) % n; // 7919 is prime, coprime to n
    let scattered: Vec<(u32, u32)> = edges.iter().map(|&(a, b)| (label(a), label(b))).collect();
    let d = decompose(n as usize, &scattered, k).unwrap();
    check_groups(n as usize, &scattered, k, &d);
}

#[test]
fn large_star_is_fast() {
    let n = 100_000u32;
    let edges: Vec<(u32, u32)> = (1..n).map(|i| (0, i)).collect();
    for k in [2, 5] {
        let clock = Instant::now();
        let d = decompose(n as usize, &edges, k).unwrap();
        assert!(clock.elapsed().as_secs_f64() < 20.0);
        check_groups(n as usize, &edges, k, &d);
        let expected_cut = if k == 2 { Cut::C } else { Cut::D };
        assert_eq!(d.cuts[expected_cut.index()], d.groups.len() - 1);
    }
}

fn invalid_message(err: KernelError) -> String {
    match err {
        KernelError::InvalidArgument { message, .. } => message,
        other => panic!("unexpected error {other:?}"),
    }
}

#[test]
fn errors_name_the_problem() {
    let msg = invalid_message(decompose(3, &[(0, 1), (1, 2), (2, 0)], 2).unwrap_err());
    assert!(msg.contains("edge 2 = (2, 0) closes a cycle"), "{msg}");
    let msg = invalid_message(decompose(3, &[(0, 1), (1, 0)], 2).unwrap_err());
    assert!(msg.contains("closes a cycle"), "{msg}");
    let msg = invalid_message(decompose(3, &[(0, 5)], 2).unwrap_err());
    assert!(
        msg.contains("names vertex 5, but the vertices are 0..3"),
        "{msg}"
    );
    let msg = invalid_message(decompose(3, &[(1, 1)], 2).unwrap_err());
    assert!(msg.contains("self-loop"), "{msg}");
    let msg = invalid_message(decompose(3, &[(0, 1)], 0).unwrap_err());
    assert!(msg.contains("k must be at least 1"), "{msg}");
    let err = decompose(3, &[(0, 1)], 0).unwrap_err();
    assert!(err.to_string().starts_with("decompose: "), "{err}");

    let vertices: Vec<u32> = (0..8).collect();
    let edges = path(8);
    let msg = invalid_message(decompose_component(&vertices, &edges, 0, 0).unwrap_err());
    assert!(msg.contains("k must be at least 1"), "{msg}");
    let msg = invalid_message(decompose_component(&vertices, &edges, 3, 9).unwrap_err());
    assert!(msg.contains("start vertex 9"), "{msg}");
    let msg = invalid_message(decompose_component(&vertices, &edges, 5, 0).unwrap_err());
    assert!(msg.contains("too small to split"), "{msg}");
    let msg = invalid_message(decompose_component(&vertices, &edges[1..], 3, 0).unwrap_err());
    assert!(
        msg.contains("6 edges cannot form a tree on 8 vertices"),
        "{msg}"
    );
    let mut cyclic = edges[1..].to_vec();
    cyclic.push((1, 3));
    let msg = invalid_message(decompose_component(&vertices, &cyclic, 3, 0).unwrap_err());
    assert!(msg.contains("closes a cycle"), "{msg}");
    let mut outside = edges.clone();
    outside[0] = (0, 42);
    let msg = invalid_message(decompose_component(&vertices, &outside, 3, 0).unwrap_err());
    assert!(msg.contains("names vertex 42"), "{msg}");
    let msg = invalid_message(decompose_component(&[0, 1, 1], &[], 1, 0).unwrap_err());
    assert!(msg.contains("vertex 1 is listed twice"), "{msg}");
}

/// A random forest: vertex i ≥ 1 starts a new tree (5 %), extends the previous vertex
/// (35 %, long paths) or hangs on a random earlier vertex; then ids are permuted.
fn forest() -> impl Strategy<Value = (usize, Vec<(u32, u32)>)> {
    (1usize..=300)
        .prop_flat_map(|n| {
            let choices = prop::collection::vec((0u8..100, any::<prop::sample::Index>()), n);
            let labels = Just((0..n as u32).collect::<Vec<u32>>()).prop_shuffle();
            (Just(n), choices, labels)
        })
        .prop_map(|(n, choices, labels)| {
            let mut edges = Vec::new();
            for (i, &(coin, pick)) in choices.iter().enumerate().skip(1) {
                let parent = match coin {
                    0..5 => continue,
                    5..40 => i - 1,
                    _ => pick.index(i),
                };
                edges.push((labels[i], labels[parent]));
            }
            (n, edges)
        })
}

/// A random tree on scattered ids with a start vertex and a k it can be split for.
fn splittable_tree() -> impl Strategy<Value = (Vec<u32>, Vec<(u32, u32)>, usize, u32)> {
    (2usize..=150)
        .prop_flat_map(|n| {
            let choices = prop::collection::vec((0u8..100, any::<prop::sample::Index>()), n);
            let ids = prop::collection::btree_set(0u32..10_000, n);
            (
                choices,
                ids,
                any::<prop::sample::Index>(),
                any::<prop::sample::Index>(),
            )
        })
        .prop_map(|(choices, ids, start, k_pick)| {
            let ids: Vec<u32> = ids.into_iter().collect();
            let n = ids.len();
            let mut edges = Vec::new();
            for (i, &(coin, pick)) in choices.iter().enumerate().take(n).skip(1) {
                let parent = if coin < 40 { i - 1 } else { pick.index(i) };
                edges.push((ids[i], ids[parent]));
            }
            // Every k with max(2k, 3k − 5) ≤ n.
            let ks: Vec<usize> = (1..=n)
                .filter(|&k| (2 * k).max((3 * k).saturating_sub(5)) <= n)
                .collect();
            let k = ks[k_pick.index(ks.len())];
            (ids.clone(), edges, k, ids[start.index(n)])
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn decompose_gives_bounded_groups_like_the_reference(
        (n, edges) in forest(),
        k in 1usize..=12,
    ) {
        let d = decompose(n, &edges, k as u64).unwrap();
        check_groups(n, &edges, k as u64, &d);
        prop_assert_eq!(&d, &reference_decompose(n, &edges, k));
        // Same input, and the edge list reordered and flipped: same output.
        prop_assert_eq!(&d, &decompose(n, &edges, k as u64).unwrap());
        let mut shuffled: Vec<(u32, u32)> = edges.iter().rev().map(|&(a, b)| (b, a)).collect();
        let half = shuffled.len() / 2;
        shuffled.rotate_left(half);
        prop_assert_eq!(&d, &decompose(n, &shuffled, k as u64).unwrap());
    }

    #[test]
    fn one_step_matches_the_reference((vertices, edges, k, start) in splittable_tree()) {
        let split = check_split(&vertices, &edges, k, start);
        let flipped: Vec<(u32, u32)> = edges.iter().rev().map(|&(a, b)| (b, a)).collect();
        let mut reordered = vertices.clone();
        reordered.reverse();
        prop_assert_eq!(split, decompose_component(&reordered, &flipped, k as u64, start).unwrap());
    }
}
