//! The earth mover's distance against brute force: an exact min-cost transport (integer
//! successive shortest paths) between the class and table distributions under the
//! ground distance of each kind, on small random distributions and hierarchies.

use kanon_core::{Emd, GroundDistance, Hierarchy, KernelError};
use proptest::prelude::*;

mod common;

use common::{random_levels, Rng};

/// A random hierarchy over `leaves` leaves with `height` levels above them, each level a
/// random coarsening of the one below, rows shuffled so that leaf codes do not follow
/// the tree's order. Returns the hierarchy and its levels as `levels[l][leaf]`.
fn random_hierarchy(rng: &mut Rng, leaves: u32, height: usize) -> (Hierarchy, Vec<Vec<u32>>) {
    let levels = random_levels(rng, leaves, height);
    // Relabel the leaves by a random permutation (rows stay, leaf codes move).
    let mut perm: Vec<u32> = (0..leaves).collect();
    for i in (1..perm.len()).rev() {
        let j = rng.below(i as u64 + 1) as usize;
        perm.swap(i, j);
    }
    let mut rows = levels.clone();
    rows[0] = perm.clone();
    let views: Vec<&[u32]> = rows.iter().map(Vec::as_slice).collect();
    let h = Hierarchy::try_from_levels(&views).unwrap();
    // by_leaf[l][leaf] = ancestor code at level l.
    let mut by_leaf = vec![vec![0u32; leaves as usize]; height + 1];
    for (row, &leaf) in perm.iter().enumerate() {
        for l in 0..=height {
            by_leaf[l][leaf as usize] = if l == 0 { leaf } else { levels[l][row] };
        }
    }
    (h, by_leaf)
}

/// Exact min-cost transport of `supply` onto `demand` (equal integer totals) with
/// integer ground costs `cost[i][j]`: successive shortest paths with Bellman–Ford.
fn min_cost_transport(supply: &[u64], demand: &[u64], cost: &[Vec<i64>]) -> i64 {
    let m = supply.len();
    let (source, sink) = (m + demand.len(), m + demand.len() + 1);
    let nodes = sink + 1;
    // Edges as (to, capacity, cost); edge e's reverse is e ^ 1.
    let mut edges: Vec<(usize, i64, i64)> = Vec::new();
    let mut adj: Vec<Vec<usize>> = vec![Vec::new(); nodes];
    let mut add = |edges: &mut Vec<(usize, i64, i64)>, a: usize, b: usize, cap: i64, c: i64| {
        adj[a].push(edges.len());
        edges.push((b, cap, c));
        adj[b].push(edges.len());
        edges.push((a, 0, -c));
    };
    let inf = i64::MAX / 4;
    for (i, &s) in supply.iter().enumerate() {
        add(&mut edges, source, i, s as i64, 0);
    }
    for (j, &d) in demand.iter().enumerate() {
        add(&mut edges, m + j, sink, d as i64, 0);
    }
    for (i, row) in cost.iter().enumerate() {
        for (j, &c) in row.iter().enumerate() {
            add(&mut edges, i, m + j, inf, c);
        }
    }
    let mut total = 0i64;
    loop {
        let mut dist = vec![inf; nodes];
        let mut via = vec![usize::MAX; nodes];
        dist[source] = 0;
        let mut changed = true;
        while changed {
            changed = false;
            for u in 0..nodes {
                if dist[u] == inf {
                    continue;
                }
                for &e in &adj[u] {
                    let (v, cap, c) = edges[e];
                    if cap > 0 && dist[u] + c < dist[v] {
                        dist[v] = dist[u] + c;
                        via[v] = e;
                        changed = true;
                    }
                }
            }
        }
        if dist[sink] == inf {
            return total;
        }
        let mut push = inf;
        let mut v = sink;
        while v != source {
            let e = via[v];
            push = push.min(edges[e].1);
            v = edges[e ^ 1].0;
        }
        let mut v = sink;
        while v != source {
            let e = via[v];
            edges[e].1 -= push;
            edges[e ^ 1].1 += push;
            v = edges[e ^ 1].0;
        }
        total += push * dist[sink];
    }
}

/// EMD by brute force: transport of P = class / size onto Q = global / total, scaled to
/// integers by size · total, with ground distance `cost[i][j] / scale`.
fn brute_emd(class: &[(u32, u64)], global: &[u64], cost: &[Vec<i64>], scale: f64) -> f64 {
    let size: u64 = class.iter().map(|&(_, c)| c).sum();
    let total: u64 = global.iter().sum();
    let mut supply = vec![0u64; global.len()];
    for &(code, c) in class {
        supply[code as usize] = c * total;
    }
    let demand: Vec<u64> = global.iter().map(|&g| g * size).collect();
    let moved = min_cost_transport(&supply, &demand, cost);
    moved as f64 / (size * total) as f64 / scale
}

#[derive(Debug, Clone)]
struct Instance {
    global: Vec<u64>,
    class: Vec<(u32, u64)>,
    height: usize,
    seed: u64,
}

fn instance() -> impl Strategy<Value = Instance> {
    (1usize..8, 1usize..5, any::<u64>()).prop_map(|(m, height, seed)| {
        let mut rng = Rng(seed);
        let mut global: Vec<u64> = (0..m).map(|_| rng.below(4)).collect();
        if global.iter().all(|&g| g == 0) {
            global[rng.below(m as u64) as usize] = 1;
        }
        // A class: a random non-empty subset of codes with random positive counts.
        let mut class: Vec<(u32, u64)> = Vec::new();
        for code in 0..m as u32 {
            if rng.below(2) == 0 {
                class.push((code, 1 + rng.below(4)));
            }
        }
        if class.is_empty() {
            class.push((rng.below(m as u64) as u32, 1 + rng.below(3)));
        }
        Instance {
            global,
            class,
            height,
            seed,
        }
    })
}

fn close(a: f64, b: f64) -> bool {
    (a - b).abs() < 1e-9
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(300))]

    #[test]
    fn emd_hierarchical_matches_min_cost_transport(inst in instance()) {
        let mut rng = Rng(inst.seed ^ 0x5555);
        let m = inst.global.len();
        let (h, by_leaf) = random_hierarchy(&mut rng, m as u32, inst.height);
        let cost: Vec<Vec<i64>> = (0..m)
            .map(|i| {
                (0..m)
                    .map(|j| {
                        (0..=inst.height)
                            .find(|&l| by_leaf[l][i] == by_leaf[l][j])
                            .unwrap() as i64
                    })
                    .collect()
            })
            .collect();
        let emd = Emd::new(&GroundDistance::Hierarchical(h), &inst.global).unwrap();
        let got = emd.distance(&inst.class);
        let want = brute_emd(&inst.class, &inst.global, &cost, inst.height as f64);
        prop_assert!(close(got, want), "got {got}, want {want}");
        prop_assert!((0.0..=1.0 + 1e-12).contains(&got));
    }

    #[test]
    fn emd_equal_and_ordered_match_min_cost_transport(inst in instance()) {
        let m = inst.global.len();
        let equal: Vec<Vec<i64>> =
            (0..m).map(|i| (0..m).map(|j| i64::from(i != j)).collect()).collect();
        let emd = Emd::new(&GroundDistance::Equal, &inst.global).unwrap();
        let got = emd.distance(&inst.class);
        prop_assert!(close(got, brute_emd(&inst.class, &inst.global, &equal, 1.0)));
        // Equal distance is half the L1 distance.
        let total: u64 = inst.global.iter().sum();
        let size: u64 = inst.class.iter().map(|&(_, c)| c).sum();
        let mut p = vec![0.0; m];
        for &(code, c) in &inst.class {
            p[code as usize] = c as f64 / size as f64;
        }
        let q: Vec<f64> = inst.global.iter().map(|&g| g as f64 / total as f64).collect();
        let l1: f64 = p.iter().zip(&q).map(|(a, b)| (a - b).abs()).sum();
        prop_assert!(close(got, 0.5 * l1));
        // Flat hierarchy = equal distance.
        let flat = Emd::new(&GroundDistance::Hierarchical(Hierarchy::flat(m as u32)), &inst.global)
            .unwrap();
        prop_assert!(close(flat.distance(&inst.class), got));

        let emd = Emd::new(&GroundDistance::Ordered, &inst.global).unwrap();
        let got = emd.distance(&inst.class);
        if m < 2 {
            prop_assert!(close(got, 0.0));
        } else {
            let ordered: Vec<Vec<i64>> = (0..m)
                .map(|i| (0..m).map(|j| (i as i64 - j as i64).abs()).collect())
                .collect();
            let want = brute_emd(&inst.class, &inst.global, &ordered, (m - 1) as f64);
            prop_assert!(close(got, want), "got {got}, want {want}");
            // The definition of Li et al.: Σ |cumulative P − Q| / (m − 1).
            let mut acc = 0.0;
            let mut def = 0.0;
            for i in 0..m {
                acc += p[i] - q[i];
                def += acc.abs();
            }
            prop_assert!(close(got, def / (m - 1) as f64));
        }
    }
}

#[test]
fn emd_errors_name_the_problem() {
    assert!(matches!(
        Emd::new(&GroundDistance::Ordered, &[0, 0, 0]),
        Err(KernelError::InvalidArgument { .. })
    ));
    assert!(matches!(
        Emd::new(&GroundDistance::Hierarchical(Hierarchy::flat(4)), &[1, 2]),
        Err(KernelError::LengthMismatch {
            got: 2,
            expected: 4,
            ..
        })
    ));
}

#[test]
fn emd_of_empty_class_and_whole_table() {
    let h = Hierarchy::try_from_levels(&[&[0, 1, 2, 3], &[0, 0, 1, 1], &[0; 4]]).unwrap();
    let emd = Emd::new(&GroundDistance::Hierarchical(h), &[1, 2, 3, 4]).unwrap();
    assert_eq!(emd.distance(&[]), 0.0);
    assert!(emd.distance(&[(0, 1), (1, 2), (2, 3), (3, 4)]).abs() < 1e-12);
    // All mass on leaf 0: 0.2 moves to its sibling at distance 1/2, 0.7 to the other
    // subtree at distance 1.
    let got = emd.distance(&[(0, 5)]);
    assert!((got - (0.2 * 0.5 + 0.7)).abs() < 1e-12, "{got}");
}
