//! Integration tests of `kanon_core::forest`: nearest neighbours (the trie search)
//! against a brute-force sort and the old full scan, FOREST against a naive
//! re-simulation of the paper's algorithm, its invariants, a hand-checked example and the
//! error cases.

mod common;

use std::cell::Cell;
use std::collections::BTreeMap;
use std::time::Instant;

use common::{hierarchy_of, model_of, nested_table, rows_and_model};
use kanon_core::forest::cost::{CostModel, LevelCost};
use kanon_core::forest::neighbours::{
    build_forest, forest, forest_groups, nearest_neighbours, nearest_neighbours_scan,
    nearest_neighbours_trie,
};
use kanon_core::{Hierarchy, KernelError};
use proptest::prelude::*;

/// Ages 0..8: leaves, intervals of 2, intervals of 4, `*`.
fn ages() -> Hierarchy {
    let leaves: Vec<u32> = (0..8).collect();
    let pairs: Vec<u32> = leaves.iter().map(|a| a / 2).collect();
    let quads: Vec<u32> = leaves.iter().map(|a| a / 4).collect();
    Hierarchy::try_from_levels(&[&leaves, &pairs, &quads, &[0; 8]]).unwrap()
}

/// Intervals of `width`, `width²`, ... over `leaves` leaves, `height` levels in all.
fn intervals(leaves: u32, width: u32, height: usize) -> Hierarchy {
    let mut levels: Vec<Vec<u32>> = Vec::new();
    let mut size = 1u32;
    for _ in 0..height {
        levels.push((0..leaves).map(|a| a / size).collect());
        size = size.saturating_mul(width);
    }
    levels.push(vec![0; leaves as usize]);
    let slices: Vec<&[u32]> = levels.iter().map(Vec::as_slice).collect();
    Hierarchy::try_from_levels(&slices).unwrap()
}

/// Small deterministic generator (xorshift64*).
struct Rng(u64);

impl Rng {
    fn below(&mut self, n: u32) -> u32 {
        self.0 ^= self.0 >> 12;
        self.0 ^= self.0 << 25;
        self.0 ^= self.0 >> 27;
        (self.0.wrapping_mul(0x2545_f491_4f6c_dd1d) >> 32) as u32 % n
    }
}

/// Brute force: all other vertices sorted by (units, index), the first `count`.
fn brute_neighbours(
    tuples: &[u32],
    m: usize,
    model: &CostModel,
    count: usize,
) -> Vec<Vec<(f64, u32)>> {
    let rows: Vec<&[u32]> = tuples.chunks_exact(m).collect();
    (0..rows.len())
        .map(|a| {
            let mut all: Vec<(u64, u32)> = (0..rows.len())
                .filter(|&b| b != a)
                .map(|b| (model.pair_units(rows[a], rows[b]), b as u32))
                .collect();
            all.sort_unstable();
            all.truncate(count);
            all.into_iter()
                .map(|(u, b)| {
                    let cost = model.pair_cost(rows[a], rows[b as usize]);
                    assert_eq!(cost, model.units_to_cost(u));
                    (cost, b)
                })
                .collect()
        })
        .collect()
}

/// The paper's FOREST, naively: component labels relabelled on every merge, the root
/// found by scanning, the nearest outside vertex by scanning every vertex.
fn naive_forest(
    tuples: &[u32],
    m: usize,
    weights: &[u64],
    k: u64,
    model: &CostModel,
) -> Vec<Option<u32>> {
    let rows: Vec<&[u32]> = tuples.chunks_exact(m).collect();
    let n = rows.len();
    let mut label: Vec<usize> = (0..n).collect();
    let mut parent: Vec<Option<u32>> = vec![None; n];
    for i in 0..n {
        loop {
            let comp = label[i];
            let members: Vec<usize> = (0..n).filter(|&v| label[v] == comp).collect();
            if members.iter().map(|&v| weights[v]).sum::<u64>() >= k {
                break;
            }
            let roots: Vec<usize> = members
                .iter()
                .copied()
                .filter(|&v| parent[v].is_none())
                .collect();
            assert_eq!(roots.len(), 1, "a tree has exactly one root");
            let u = roots[0];
            let v = (0..n)
                .filter(|&v| label[v] != comp)
                .min_by_key(|&v| (model.pair_units(rows[u], rows[v]), v))
                .expect("a vertex outside");
            parent[u] = Some(v as u32);
            let other = label[v];
            for l in &mut label {
                if *l == other {
                    *l = comp;
                }
            }
        }
    }
    parent
}

/// Collapse rows into distinct tuples (first-occurrence order) and their multiplicities.
fn collapse(rows: &[Vec<u32>]) -> (Vec<u32>, Vec<u64>) {
    let mut index: BTreeMap<&[u32], usize> = BTreeMap::new();
    let mut tuples: Vec<u32> = Vec::new();
    let mut weights: Vec<u64> = Vec::new();
    for row in rows {
        let next = weights.len();
        let id = *index.entry(row.as_slice()).or_insert_with(|| {
            tuples.extend_from_slice(row);
            weights.push(0);
            next
        });
        weights[id] += 1;
    }
    (tuples, weights)
}

/// Six vertices a..f on (age, sex): ages 0..8 in intervals of 2 and 4, sex flat.
const EXAMPLE: [u32; 12] = [0, 0, 2, 1, 3, 1, 6, 0, 1, 1, 7, 0];

#[test]
fn hand_checked_example() {
    // Height costs (age / 3 + sex): a–d = a–f = 1 (a tie), d–f = 1/3, b–c = 1/3,
    // c–e = 2/3 = b–e. Visiting a first: a → d (tie with f, d has the lower index), then
    // the tree {a, d} grows from its root d: d → f. Then b → c, and c → e.
    for kind in [LevelCost::Height, LevelCost::Ncp] {
        let model =
            CostModel::try_new(vec![ages(), Hierarchy::flat(2)], vec![1.0, 1.0], kind).unwrap();
        let parent = build_forest(&EXAMPLE, 2, &[1; 6], 3, &model).unwrap();
        assert_eq!(
            parent,
            vec![Some(3), Some(2), Some(4), Some(5), None, None],
            "{kind:?}"
        );
        assert_eq!(
            forest_groups(&parent).unwrap(),
            vec![vec![0, 3, 5], vec![1, 2, 4]]
        );
    }
    let model = CostModel::try_new(
        vec![ages(), Hierarchy::flat(2)],
        vec![1.0, 1.0],
        LevelCost::Height,
    )
    .unwrap();
    let nn = nearest_neighbours(&EXAMPLE, 2, &model, 3).unwrap();
    assert_eq!(nn[0], vec![(1.0, 3), (1.0, 5), (4.0 / 3.0, 4)]);
    assert_eq!(nn[1], vec![(1.0 / 3.0, 2), (2.0 / 3.0, 4), (5.0 / 3.0, 0)]);
    // with k = 2, a → d and b → c close two trees; e then joins b (2/3, a tie with c
    // broken by index), f joins d (1/3).
    let parent = build_forest(&EXAMPLE, 2, &[1; 6], 2, &model).unwrap();
    assert_eq!(parent, vec![Some(3), Some(2), None, None, Some(1), Some(3)]);
    // a heavy vertex is a tree on its own
    let parent = build_forest(&EXAMPLE, 2, &[3, 1, 1, 1, 1, 1], 3, &model).unwrap();
    assert_eq!(parent[0], None);
    assert_eq!(parent[3], Some(5));
}

#[test]
fn k_one_adds_no_edges() {
    let model = CostModel::try_new(
        vec![ages(), Hierarchy::flat(2)],
        vec![1.0, 1.0],
        LevelCost::Ncp,
    )
    .unwrap();
    let parent = build_forest(&EXAMPLE, 2, &[1; 6], 1, &model).unwrap();
    assert_eq!(parent, vec![None; 6]);
    assert_eq!(forest_groups(&parent).unwrap().len(), 6);
}

#[test]
fn short_lists_fall_back_to_the_full_scan() {
    let model = CostModel::try_new(
        vec![ages(), Hierarchy::flat(2)],
        vec![1.0, 1.0],
        LevelCost::Height,
    )
    .unwrap();
    let rows: Vec<&[u32]> = EXAMPLE.chunks_exact(2).collect();
    let expected = build_forest(&EXAMPLE, 2, &[1; 6], 3, &model).unwrap();
    for count in 0..=2 {
        let nn = nearest_neighbours(&EXAMPLE, 2, &model, count).unwrap();
        let calls = Cell::new(0);
        let parent = forest(&[1; 6], 3, &nn, |u, inside| {
            calls.set(calls.get() + 1);
            (0..6u32)
                .filter(|&v| v != u && !inside(v))
                .min_by_key(|&v| (model.pair_units(rows[u as usize], rows[v as usize]), v))
        })
        .unwrap();
        assert_eq!(parent, expected, "count {count}");
        assert!(count == 2 || calls.get() > 0, "count {count}");
        if count == 2 {
            assert_eq!(calls.get(), 0);
        }
    }
}

#[test]
fn a_failing_fallback_is_an_error() {
    let nn = vec![Vec::new(); 3];
    let err = forest(&[1, 1, 1], 2, &nn, |_, _| None).unwrap_err();
    assert!(err.to_string().contains("fallback found none"), "{err}");
    let err = forest(&[1, 1, 1], 2, &nn, |u, _| Some(u)).unwrap_err();
    assert!(err.to_string().contains("not a vertex outside"), "{err}");
    let err = forest(&[1, 1, 1], 2, &nn, |_, _| Some(7)).unwrap_err();
    assert!(err.to_string().contains("not a vertex outside"), "{err}");
}

#[test]
fn bad_inputs_are_errors() {
    let model = CostModel::try_new(
        vec![ages(), Hierarchy::flat(2)],
        vec![1.0, 1.0],
        LevelCost::Ncp,
    )
    .unwrap();
    let message = |r: Result<Vec<Option<u32>>, KernelError>| r.unwrap_err().to_string();
    assert!(message(build_forest(&EXAMPLE, 2, &[1; 6], 0, &model)).contains("at least 1"));
    assert!(message(build_forest(&EXAMPLE, 2, &[1; 6], 7, &model))
        .contains("k exceeds the number of rows"));
    assert!(
        message(build_forest(&EXAMPLE, 2, &[1, 1, 1, 1, 1, 0], 2, &model)).contains("weight 0")
    );
    assert!(matches!(
        build_forest(&EXAMPLE, 2, &[1; 5], 2, &model).unwrap_err(),
        KernelError::LengthMismatch {
            argument: "weights",
            got: 5,
            expected: 6,
            ..
        }
    ));
    assert!(message(build_forest(&EXAMPLE[..11], 2, &[1; 6], 2, &model))
        .contains("whole number of rows"));
    assert!(message(build_forest(&EXAMPLE, 3, &[1; 4], 2, &model)).contains("the cost model has 2"));
    let mut bad = EXAMPLE;
    bad[1] = 2;
    assert!(message(build_forest(&bad, 2, &[1; 6], 2, &model)).contains("not a leaf"));
    assert!(nearest_neighbours(&bad, 2, &model, 1).is_err());
    assert!(message(build_forest(&[], 2, &[], 1, &model)).contains("k exceeds the number of rows"));

    let nn = vec![vec![(0.0, 1)], vec![(0.0, 0)]];
    assert!(matches!(
        forest(&[1], 1, &nn, |_, _| None).unwrap_err(),
        KernelError::LengthMismatch {
            argument: "neighbours",
            ..
        }
    ));
    assert!(
        message(forest(&[1, 1], 2, &[vec![(0.0, 2)], vec![]], |_, _| None))
            .contains("not below the vertex count")
    );
    assert!(
        message(forest(&[1, 1], 2, &[vec![(0.0, 0)], vec![]], |_, _| None))
            .contains("the vertex itself")
    );
    assert!(message(forest(&[1, 1], 3, &nn, |_, _| None)).contains("k exceeds the number of rows"));
    assert!(forest_groups(&[Some(2), None])
        .unwrap_err()
        .to_string()
        .contains("not below the vertex count"));
    assert_eq!(forest_groups(&[]).unwrap(), Vec::<Vec<u32>>::new());
}

#[test]
fn nearest_neighbours_on_large_hierarchies() {
    // 300 leaves: no dense table. 400 rows compute a row per vertex, 30 walk per pair.
    let model = CostModel::try_new(
        vec![intervals(300, 10, 3), ages(), Hierarchy::flat(500)],
        vec![1.0, 2.0, 1.0],
        LevelCost::Ncp,
    )
    .unwrap();
    let mut rng = Rng(7);
    for n in [30, 400] {
        let tuples: Vec<u32> = (0..n)
            .flat_map(|_| [rng.below(300), rng.below(8), rng.below(3)])
            .collect();
        for count in [1, 5] {
            let nn = nearest_neighbours(&tuples, 3, &model, count).unwrap();
            let brute = brute_neighbours(&tuples, 3, &model, count);
            assert_eq!(nn, brute, "n {n} count {count}");
            let trie = nearest_neighbours_trie(&tuples, 3, &model, count).unwrap();
            assert_eq!(trie, brute, "n {n} count {count}");
            // At 30 rows the two wide attributes are priced by rows over their ranks.
            let scan = nearest_neighbours_scan(&tuples, 3, &model, count).unwrap();
            assert_eq!(scan, brute, "n {n} count {count}");
        }
        let weights = vec![1; n];
        assert_eq!(
            build_forest(&tuples, 3, &weights, 4, &model).unwrap(),
            naive_forest(&tuples, 3, &weights, 4, &model)
        );
    }
}

#[test]
fn nearest_neighbours_with_joint_cost_rows() {
    // 600 rows: attributes of 3·4·5·2 and 7·6 leaves share joint cost rows.
    let hierarchies: Vec<Hierarchy> = [3, 4, 5, 2, 7, 6]
        .iter()
        .map(|&l| intervals(l, 2, 2))
        .collect();
    let leaves = [3, 4, 5, 2, 7, 6];
    let mut rng = Rng(11);
    let tuples: Vec<u32> = (0..600)
        .flat_map(|_| leaves.map(|l| rng.below(l)))
        .collect();
    for kind in [LevelCost::Height, LevelCost::Ncp] {
        let model = CostModel::try_new(
            hierarchies.clone(),
            vec![1.0, 2.0, 1.0, 3.0, 1.0, 1.0],
            kind,
        )
        .unwrap();
        for count in [1, 7] {
            let nn = nearest_neighbours(&tuples, 6, &model, count).unwrap();
            let brute = brute_neighbours(&tuples, 6, &model, count);
            assert_eq!(nn, brute, "{kind:?} {count}");
            let trie = nearest_neighbours_trie(&tuples, 6, &model, count).unwrap();
            assert_eq!(trie, brute, "{kind:?} {count}");
        }
    }
}

#[test]
fn nearest_neighbours_edge_cases() {
    // Leaves 0..4; level 1 repeats the leaves and level 3 repeats level 2, so those
    // levels split nothing; a one-leaf attribute of height 0 and one of height 1.
    let repeated = Hierarchy::try_from_levels(&[
        &[0, 1, 2, 3],
        &[0, 1, 2, 3],
        &[0, 0, 1, 1],
        &[0, 0, 1, 1],
        &[0, 0, 0, 0],
    ])
    .unwrap();
    let single = Hierarchy::try_from_levels(&[&[0]]).unwrap();
    for kind in [LevelCost::Height, LevelCost::Ncp] {
        let model = CostModel::try_new(
            vec![repeated.clone(), single.clone(), Hierarchy::flat(1), ages()],
            vec![1.0, 1.0, 1.0, 0.5],
            kind,
        )
        .unwrap();
        let check = |tuples: &[u32], count: usize| {
            let nn = nearest_neighbours(tuples, 4, &model, count).unwrap();
            assert_eq!(
                nn,
                brute_neighbours(tuples, 4, &model, count),
                "{kind:?} {count}"
            );
            assert_eq!(
                nn,
                nearest_neighbours_trie(tuples, 4, &model, count).unwrap()
            );
            assert_eq!(
                nn,
                nearest_neighbours_scan(tuples, 4, &model, count).unwrap()
            );
            nn
        };
        // no vertices, one, two
        for count in [0, 1, 5] {
            assert!(check(&[], count).is_empty());
            assert_eq!(check(&[1, 0, 0, 3], count), vec![Vec::new()]);
        }
        let two = [1, 0, 0, 3, 2, 0, 0, 3];
        assert_eq!(check(&two, 0), vec![Vec::new(), Vec::new()]);
        let cost = model.pair_cost(&two[..4], &two[4..]);
        assert!(cost > 0.0);
        for count in [1, 2, 10] {
            assert_eq!(check(&two, count), vec![vec![(cost, 1)], vec![(cost, 0)]]);
        }
        // every vertex the same row: the others at cost 0, by index
        let same: Vec<u32> = [3, 0, 0, 5].repeat(5);
        let nn = check(&same, 3);
        assert_eq!(nn[0], vec![(0.0, 1), (0.0, 2), (0.0, 3)]);
        assert_eq!(nn[2], vec![(0.0, 0), (0.0, 1), (0.0, 3)]);
        assert_eq!(
            check(&same, 9)[4],
            vec![(0.0, 0), (0.0, 1), (0.0, 2), (0.0, 3)]
        );
        // duplicates among distinct rows, every count up to beyond n
        let mut rng = Rng(5);
        let pool: Vec<[u32; 4]> = (0..6).map(|_| [rng.below(4), 0, 0, rng.below(8)]).collect();
        let tuples: Vec<u32> = (0..40).flat_map(|_| pool[rng.below(6) as usize]).collect();
        for count in 0..=41 {
            check(&tuples, count);
        }
    }
}

#[test]
fn nearest_neighbours_match_the_scan_on_clustered_data() {
    // Adult-like shapes; values drawn from a few clusters with noise, so that costs tie
    // often and many queries have their count-th neighbour among a crowd of equals.
    let shapes: [(u32, u32, usize); 6] = [
        (74, 5, 4),
        (16, 4, 3),
        (7, 3, 2),
        (41, 6, 3),
        (2, 2, 1),
        (5, 3, 2),
    ];
    let hierarchies: Vec<Hierarchy> = shapes.iter().map(|&(l, w, h)| intervals(l, w, h)).collect();
    let mut rng = Rng(23);
    let centres: Vec<Vec<u32>> = (0..8)
        .map(|_| shapes.iter().map(|&(l, _, _)| rng.below(l)).collect())
        .collect();
    let mut rows: Vec<Vec<u32>> = Vec::new();
    let mut seen = std::collections::BTreeSet::new();
    while rows.len() < 900 {
        let centre = &centres[rng.below(8) as usize];
        let row: Vec<u32> = shapes
            .iter()
            .zip(centre)
            .map(|(&(l, _, _), &c)| match rng.below(4) {
                0 => rng.below(l),
                1 => (c + 1).min(l - 1),
                _ => c,
            })
            .collect();
        // mostly distinct rows, as the anonymizer passes them, plus a few duplicates
        if seen.insert(row.clone()) || rng.below(10) == 0 {
            rows.push(row);
        }
    }
    let tuples = rows.concat();
    for (kind, weights) in [
        (LevelCost::Ncp, vec![1.0; 6]),
        (LevelCost::Height, vec![1.0, 2.0, 1.0, 1.0, 3.0, 1.0]),
        (LevelCost::Ncp, vec![0.7, 1.3, 0.1, 2.5, 1.0, 0.25]),
    ] {
        let model = CostModel::try_new(hierarchies.clone(), weights, kind).unwrap();
        for count in [1, 4, 9, 40] {
            let nn = nearest_neighbours(&tuples, 6, &model, count).unwrap();
            let scan = nearest_neighbours_scan(&tuples, 6, &model, count).unwrap();
            let trie = nearest_neighbours_trie(&tuples, 6, &model, count).unwrap();
            assert!(nn == scan, "{kind:?} count {count}: differs from the scan");
            assert!(trie == scan, "{kind:?} count {count}: the trie differs");
            // the same lists on any number of threads
            for threads in [1, 3] {
                let pool = rayon::ThreadPoolBuilder::new()
                    .num_threads(threads)
                    .build()
                    .unwrap();
                let again = pool.install(|| nearest_neighbours(&tuples, 6, &model, count));
                assert!(again.unwrap() == nn, "{threads} threads, count {count}");
            }
        }
    }
}

/// Hierarchy tables, rows, real weights and whether costs are NCP.
type TiedCase = (Vec<Vec<Vec<u32>>>, Vec<Vec<u32>>, Vec<f64>, bool);

/// Generated hierarchies (up to 10 leaves, 4 merging steps) and rows drawn mostly from a
/// small pool, so that duplicates and tied costs abound; weights are whole (exact costs)
/// or fractional (fixed-point costs).
fn tied_rows_and_model(max_rows: usize) -> impl Strategy<Value = TiedCase> {
    (
        prop::collection::vec(nested_table(10, 4), 1..=4),
        0..=max_rows,
        any::<bool>(),
    )
        .prop_flat_map(|(tables, n, ncp)| {
            let row: Vec<BoxedStrategy<u32>> = tables
                .iter()
                .map(|t| (0..t[0].len() as u32).boxed())
                .collect();
            let m = tables.len();
            let weight = prop::sample::select(vec![0.1, 0.25, 0.5, 1.0, 1.5, 2.0, 3.0]);
            (
                Just(tables),
                prop::collection::vec(row.clone(), 1..=6),
                prop::collection::vec((0usize..10, row), n),
                prop::collection::vec(weight, m),
                Just(ncp),
            )
        })
        .prop_map(|(tables, pool, picks, weights, ncp)| {
            let rows = picks
                .into_iter()
                .map(|(i, fresh)| pool.get(i).cloned().unwrap_or(fresh))
                .collect();
            (tables, rows, weights, ncp)
        })
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(256))]

    #[test]
    fn neighbours_match_brute_force(
        (tables, rows, weights, ncp) in rows_and_model(25),
        count in 0usize..30,
    ) {
        let model = model_of(&tables, &weights, ncp);
        let m = tables.len();
        let tuples: Vec<u32> = rows.concat();
        let nn = nearest_neighbours(&tuples, m, &model, count).unwrap();
        prop_assert_eq!(nn.len(), rows.len());
        prop_assert_eq!(&nn, &nearest_neighbours_trie(&tuples, m, &model, count).unwrap());
        prop_assert_eq!(nn, brute_neighbours(&tuples, m, &model, count));
    }

    #[test]
    fn neighbours_match_brute_force_with_ties(
        (tables, rows, weights, ncp) in tied_rows_and_model(70),
        count in 0usize..75,
    ) {
        let kind = if ncp { LevelCost::Ncp } else { LevelCost::Height };
        let model = CostModel::try_new(
            tables.iter().map(|t| hierarchy_of(t)).collect(),
            weights,
            kind,
        )
        .unwrap();
        let m = tables.len();
        let tuples: Vec<u32> = rows.concat();
        let nn = nearest_neighbours(&tuples, m, &model, count).unwrap();
        prop_assert_eq!(&nn, &brute_neighbours(&tuples, m, &model, count));
        prop_assert_eq!(&nn, &nearest_neighbours_trie(&tuples, m, &model, count).unwrap());
        prop_assert_eq!(&nn, &nearest_neighbours_scan(&tuples, m, &model, count).unwrap());
    }

    #[test]
    fn forest_invariants((tables, rows, weights, ncp) in rows_and_model(40), k in 1u64..=8) {
        let model = model_of(&tables, &weights, ncp);
        let m = tables.len();
        let (tuples, multiplicity) = collapse(&rows);
        let n = multiplicity.len();
        let total: u64 = multiplicity.iter().sum();
        let result = build_forest(&tuples, m, &multiplicity, k, &model);
        if total < k {
            prop_assert!(result.unwrap_err().to_string().contains("k exceeds the number of rows"));
            return Ok(());
        }
        let parent = result.unwrap();
        prop_assert_eq!(parent.len(), n);
        // same input, same forest
        prop_assert_eq!(&build_forest(&tuples, m, &multiplicity, k, &model).unwrap(), &parent);
        // every edge is the paper's choice at the time it was added
        prop_assert_eq!(&parent, &naive_forest(&tuples, m, &multiplicity, k, &model));
        // no cycles: following out-edges from any vertex ends within n steps
        for start in 0..n {
            let (mut at, mut steps) = (start, 0);
            while let Some(next) = parent[at] {
                prop_assert_ne!(next as usize, at);
                at = next as usize;
                steps += 1;
                prop_assert!(steps < n, "cycle through vertex {}", start);
            }
        }
        let groups = forest_groups(&parent).unwrap();
        let edges = parent.iter().flatten().count();
        prop_assert_eq!(edges, n - groups.len());
        let mut seen = vec![false; n];
        for group in &groups {
            prop_assert!(group.windows(2).all(|w| w[0] < w[1]));
            let weight: u64 = group.iter().map(|&v| multiplicity[v as usize]).sum();
            prop_assert!(weight >= k, "group {:?} weighs {} < {}", group, weight, k);
            // one root per tree, and edges stay inside it
            prop_assert_eq!(group.iter().filter(|&&v| parent[v as usize].is_none()).count(), 1);
            for &v in group {
                seen[v as usize] = true;
                if let Some(p) = parent[v as usize] {
                    prop_assert!(group.binary_search(&p).is_ok());
                }
            }
        }
        prop_assert!(seen.iter().all(|&s| s));
        prop_assert!(groups.windows(2).all(|w| w[0][0] < w[1][0]));
    }
}

/// Timing of `nearest_neighbours` on 20,000 distinct 9-attribute tuples (count 4).
/// Run with `cargo test --release -p kanon-core --test forest -- --ignored --nocapture`.
#[test]
#[ignore = "timing, run in release mode on demand"]
fn time_nearest_neighbours() {
    // (leaves, interval width, levels below the root): hierarchies of 3–5 levels.
    // Adult-like leaf counts pack into three joint cost rows; wide ones cannot pack.
    let adult: [(u32, u32, usize); 9] = [
        (74, 5, 4),
        (16, 4, 3),
        (7, 3, 2),
        (41, 6, 3),
        (7, 3, 2),
        (14, 3, 3),
        (5, 3, 2),
        (2, 2, 2),
        (2, 2, 2),
    ];
    let wide: [(u32, u32, usize); 9] = [
        (200, 5, 4),
        (150, 4, 4),
        (120, 6, 3),
        (100, 3, 4),
        (90, 5, 3),
        (80, 4, 3),
        (70, 3, 4),
        (65, 8, 2),
        (64, 4, 3),
    ];
    for (name, shapes) in [("adult-like", adult), ("wide", wide)] {
        let hierarchies: Vec<Hierarchy> =
            shapes.iter().map(|&(l, w, h)| intervals(l, w, h)).collect();
        let mut rng = Rng(42);
        let mut rows: Vec<Vec<u32>> = Vec::new();
        let mut seen = std::collections::BTreeSet::new();
        while rows.len() < 20_000 {
            let row: Vec<u32> = shapes.iter().map(|&(l, _, _)| rng.below(l)).collect();
            if seen.insert(row.clone()) {
                rows.push(row);
            }
        }
        let tuples = rows.concat();
        for kind in [LevelCost::Height, LevelCost::Ncp] {
            let model = CostModel::try_new(hierarchies.clone(), vec![1.0; 9], kind).unwrap();
            // the best of three runs: the timing machine may be shared
            let elapsed = (0..3)
                .map(|_| {
                    let start = Instant::now();
                    let nn = nearest_neighbours(&tuples, 9, &model, 4).unwrap();
                    assert_eq!(nn.len(), 20_000);
                    start.elapsed()
                })
                .min()
                .unwrap();
            let start = Instant::now();
            let scan = nearest_neighbours_scan(&tuples, 9, &model, 4).unwrap();
            let scanned = start.elapsed();
            assert!(scan == nearest_neighbours(&tuples, 9, &model, 4).unwrap());
            let start = Instant::now();
            let parent = build_forest(&tuples, 9, &vec![1; 20_000], 5, &model).unwrap();
            let whole = start.elapsed();
            eprintln!(
                "{name} {kind:?}: nearest_neighbours(20000 x 9, count 4) {:.3} s (best of 3) on {} \
                 threads, the full scan {:.3} s; build_forest(k = 5) {:.3} s, {} edges",
                elapsed.as_secs_f64(),
                rayon::current_num_threads(),
                scanned.as_secs_f64(),
                whole.as_secs_f64(),
                parent.iter().flatten().count(),
            );
        }
    }
}
