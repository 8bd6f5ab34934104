//! Helpers shared by the integration tests: generated nested hierarchy tables.
#![allow(dead_code)]

use std::collections::BTreeMap;

use kanon_core::forest::cost::{CostModel, LevelCost};
use kanon_core::Hierarchy;
use proptest::prelude::*;

/// Number of distinct codes of a dense column (`max + 1`, 0 when empty).
pub(crate) fn width(column: &[u32]) -> u32 {
    column.iter().max().map_or(0, |&m| m + 1)
}

/// Renumber the codes of `column` to `0..d` keeping their relative order.
pub(crate) fn densify(column: &[u32]) -> Vec<u32> {
    let mut used: Vec<u32> = column.to_vec();
    used.sort_unstable();
    used.dedup();
    column
        .iter()
        .map(|c| u32::try_from(used.binary_search(c).unwrap()).unwrap())
        .collect()
}

/// Build a nested hierarchy table `table[level][leaf]` over `n` leaves by repeatedly merging
/// the labels of the previous level into at most as many groups, then adding a root.
///
/// Each step is `(groups_seed, choice)`: the step has `1 + groups_seed % w` target groups for
/// a previous width `w`, and label `l` goes to group `choice[l] % groups`.
pub(crate) fn build_nested(n: usize, steps: &[(u32, Vec<u32>)]) -> Vec<Vec<u32>> {
    let leaves = u32::try_from(n).unwrap();
    extend_nested(vec![(0..leaves).collect()], steps)
}

/// Add merging `steps` (see [`build_nested`]) and a root on top of a nested table.
pub(crate) fn extend_nested(mut table: Vec<Vec<u32>>, steps: &[(u32, Vec<u32>)]) -> Vec<Vec<u32>> {
    let n = table[0].len();
    for (groups_seed, choice) in steps {
        let prev = table.last().unwrap();
        let w = width(prev);
        if w == 0 {
            break;
        }
        let groups = 1 + groups_seed % w;
        let next: Vec<u32> = prev
            .iter()
            .map(|&label| choice[label as usize] % groups)
            .collect();
        table.push(densify(&next));
    }
    if width(table.last().unwrap()) > 1 || table.len() == 1 {
        table.push(vec![0; n]);
    }
    table
}

/// Strategy for nested hierarchy tables with 1..=`max_leaves` leaves and up to `max_steps`
/// merging steps below the root (so up to `max_steps + 1` levels above the leaves).
pub(crate) fn nested_table(
    max_leaves: usize,
    max_steps: usize,
) -> impl Strategy<Value = Vec<Vec<u32>>> {
    (1..=max_leaves).prop_flat_map(move |n| {
        prop::collection::vec(
            (any::<u32>(), prop::collection::vec(any::<u32>(), n)),
            0..=max_steps,
        )
        .prop_map(move |steps| build_nested(n, &steps))
    })
}

/// Borrow every level of a table as a slice.
pub(crate) fn as_slices(levels: &[Vec<u32>]) -> Vec<&[u32]> {
    levels.iter().map(Vec::as_slice).collect()
}

/// The hierarchy of a table given in leaf order (row `leaf` describes leaf `leaf`).
pub(crate) fn hierarchy_of(table: &[Vec<u32>]) -> Hierarchy {
    Hierarchy::try_from_levels(&as_slices(table)).expect("generated table is a valid hierarchy")
}

/// The rows of `table` listed in the order `perm` (row `i` of the result is leaf `perm[i]`).
pub(crate) fn permute_rows(table: &[Vec<u32>], perm: &[usize]) -> Vec<Vec<u32>> {
    table
        .iter()
        .map(|level| perm.iter().map(|&leaf| level[leaf]).collect())
        .collect()
}

/// A table together with a permutation of its rows.
pub(crate) fn nested_table_with_order(
    max_leaves: usize,
    max_steps: usize,
) -> impl Strategy<Value = (Vec<Vec<u32>>, Vec<usize>)> {
    nested_table(max_leaves, max_steps).prop_flat_map(|table| {
        let n = table[0].len();
        (
            Just(table),
            Just((0..n).collect::<Vec<usize>>()).prop_shuffle(),
        )
    })
}

/// Strategy for nested tables with 3..=`max_leaves` leaves whose level 1 has at least two
/// labels, one of them shared by leaves 0 and 1, repeated at level 2 (so level 2 can be
/// perturbed to break nesting), followed by up to `max_steps` random merging steps.
pub(crate) fn branching_table(
    max_leaves: usize,
    max_steps: usize,
) -> impl Strategy<Value = Vec<Vec<u32>>> {
    (3..=max_leaves).prop_flat_map(move |n| {
        (
            2..u32::try_from(n).unwrap(),
            prop::collection::vec(any::<u32>(), n),
            prop::collection::vec(
                (any::<u32>(), prop::collection::vec(any::<u32>(), n)),
                0..=max_steps,
            ),
        )
            .prop_map(move |(groups, choice, steps)| {
                let mut level1: Vec<u32> = choice.iter().map(|c| c % groups).collect();
                level1[1] = level1[0];
                level1[2] = (level1[0] + 1) % groups;
                let level1 = densify(&level1);
                let leaves = (0..u32::try_from(n).unwrap()).collect();
                extend_nested(vec![leaves, level1.clone(), level1], &steps)
            })
    })
}

/// A branching table together with a permutation of its rows.
pub(crate) fn branching_table_with_order(
    max_leaves: usize,
    max_steps: usize,
) -> impl Strategy<Value = (Vec<Vec<u32>>, Vec<usize>)> {
    branching_table(max_leaves, max_steps).prop_flat_map(|table| {
        let n = table[0].len();
        (
            Just(table),
            Just((0..n).collect::<Vec<usize>>()).prop_shuffle(),
        )
    })
}

/// Hierarchy tables, rows (with duplicates), attribute weights and whether costs are NCP.
pub(crate) type Case = (Vec<Vec<Vec<u32>>>, Vec<Vec<u32>>, Vec<u32>, bool);

/// Generated hierarchies, up to `max_rows` rows (with duplicates) and a cost kind.
pub(crate) fn rows_and_model(max_rows: usize) -> impl Strategy<Value = Case> {
    (
        prop::collection::vec(nested_table(6, 3), 1..=3),
        0..=max_rows,
        any::<bool>(),
    )
        .prop_flat_map(|(tables, n, ncp)| {
            let leaves: Vec<u32> = tables.iter().map(|t| t[0].len() as u32).collect();
            let row: Vec<BoxedStrategy<u32>> = leaves.iter().map(|&l| (0..l).boxed()).collect();
            let m = tables.len();
            (
                Just(tables),
                prop::collection::vec(row, n),
                prop::collection::vec(1u32..4, m),
                Just(ncp),
            )
        })
}

/// The cost model of generated tables.
pub(crate) fn model_of(tables: &[Vec<Vec<u32>>], weights: &[u32], ncp: bool) -> CostModel {
    let kind = if ncp {
        LevelCost::Ncp
    } else {
        LevelCost::Height
    };
    CostModel::try_new(
        tables.iter().map(|t| hierarchy_of(t)).collect(),
        weights.iter().map(|&w| f64::from(w)).collect(),
        kind,
    )
    .unwrap()
}

/// splitmix64, for building random instances from one proptest seed.
pub(crate) struct Rng(pub(crate) u64);

impl Rng {
    pub(crate) fn next(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    pub(crate) fn below(&mut self, n: u64) -> u64 {
        self.next() % n
    }
}

/// Random levels of a hierarchy as `levels[l][leaf]`: `leaves` leaves, `height` levels
/// above them, each level a random coarsening of the one below (codes dense in order of
/// first appearance), the top a single root.
pub(crate) fn random_levels(rng: &mut Rng, leaves: u32, height: usize) -> Vec<Vec<u32>> {
    let mut levels: Vec<Vec<u32>> = vec![(0..leaves).collect()];
    for l in 1..=height {
        let below = &levels[l - 1];
        let width = below.iter().max().map_or(0, |&x| x + 1);
        let groups = if l == height {
            1
        } else {
            1 + rng.below(u64::from(width)) as u32
        };
        // Map every label of the level below to a group; relabel densely in order.
        let map: Vec<u32> = (0..width)
            .map(|_| rng.below(u64::from(groups)) as u32)
            .collect();
        let mut dense: BTreeMap<u32, u32> = BTreeMap::new();
        let column: Vec<u32> = below
            .iter()
            .map(|&c| {
                let g = map[c as usize];
                let next = dense.len() as u32;
                *dense.entry(g).or_insert(next)
            })
            .collect();
        levels.push(column);
    }
    levels
}

/// A random hierarchy (see [`random_levels`]).
pub(crate) fn random_hierarchy(rng: &mut Rng, leaves: u32, height: usize) -> Hierarchy {
    let levels = random_levels(rng, leaves, height);
    let views: Vec<&[u32]> = levels.iter().map(Vec::as_slice).collect();
    Hierarchy::try_from_levels(&views).unwrap()
}
