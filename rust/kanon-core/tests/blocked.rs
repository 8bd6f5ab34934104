//! Integration tests of `kanon_core::forest::blocked`: the forest in Mondrian blocks, and the
//! blocks cut smaller where the neighbour search would scan.

use kanon_core::forest::anonymize::{anonymize, ForestOptions};
use kanon_core::forest::blocked::blocked_forest;
use kanon_core::forest::cost::{CostModel, LevelCost};
use kanon_core::forest::improve::Effort;
use kanon_core::Hierarchy;

/// Binary splits of `leaves` leaves (a power of two) up to a root.
fn halves(leaves: u32) -> Hierarchy {
    let height = leaves.trailing_zeros();
    let levels: Vec<Vec<u32>> = (0..=height)
        .map(|l| (0..leaves).map(|x| x >> l).collect())
        .collect();
    let slices: Vec<&[u32]> = levels.iter().map(Vec::as_slice).collect();
    Hierarchy::try_from_levels(&slices).unwrap()
}

/// `n` distinct tuples of `m` codes below `leaves`, one row each: uniform and
/// independent (a fixed LCG), or clustered (a few centres with small offsets).
fn tuples(n: usize, m: usize, leaves: u32, clustered: bool) -> Vec<u32> {
    let mut state = 0x2545_f491_4f6c_dd1du64;
    let mut next = move || {
        state = state
            .wrapping_mul(6_364_136_223_846_793_005)
            .wrapping_add(1_442_695_040_888_963_407);
        (state >> 33) as u32
    };
    let mut seen = std::collections::BTreeSet::new();
    let mut out = Vec::new();
    while seen.len() < n {
        let centre = next() % 4;
        let row: Vec<u32> = (0..m)
            .map(|_| {
                if clustered {
                    (centre * (leaves / 4) + next() % 16).min(leaves - 1)
                } else {
                    next() % leaves
                }
            })
            .collect();
        if seen.insert(row.clone()) {
            out.extend(row);
        }
    }
    out
}

fn run(
    tuples: &[u32],
    m: usize,
    leaves: u32,
    block_size: u64,
) -> kanon_core::forest::anonymize::Release {
    let model = CostModel::try_new(vec![halves(leaves); m], vec![1.0; m], LevelCost::Ncp).unwrap();
    let n = tuples.len() / m;
    let keys: Vec<Vec<f64>> = vec![(0..leaves).map(f64::from).collect(); m];
    let spans = vec![f64::from(leaves - 1); m];
    let options = ForestOptions {
        k: 5,
        seed: 0,
        improve: Some(Effort::Fast),
    };
    let release = blocked_forest(
        tuples,
        m,
        &vec![1; n],
        &keys,
        &spans,
        &model,
        &options,
        block_size,
        None,
    )
    .unwrap();
    // Every row is placed, in a group of at least k rows.
    assert_eq!(release.group_of_row.len(), n);
    let mut sizes = vec![0u64; release.groups];
    for &g in &release.group_of_row {
        sizes[g as usize] += 1;
    }
    assert!(sizes.iter().all(|&s| s >= 5), "a group under k rows");
    release
}

#[test]
fn uniform_blocks_are_cut_to_the_scan_size() {
    // 6,000 uniform rows over 6 attributes of 65,536 leaves: the trie prunes little and a
    // scan would weigh 6,000 · 6 wide attributes · 8 = 288,000 lookups per query, over the
    // fast passes' 25,000, so a block size of 50,000 gives the release of blocks of the
    // least size cut for scans, 4,096 rows.
    let (m, leaves) = (6, 65_536);
    let t = tuples(6_000, m, leaves, false);
    let adaptive = run(&t, m, leaves, 50_000);
    let small = run(&t, m, leaves, 4_096);
    assert!(
        adaptive.group_of_row == small.group_of_row,
        "not cut as expected"
    );
    assert!(adaptive.levels == small.levels);
    let model = CostModel::try_new(vec![halves(leaves); m], vec![1.0; m], LevelCost::Ncp).unwrap();
    let options = ForestOptions {
        k: 5,
        seed: 0,
        improve: Some(Effort::Fast),
    };
    let whole = anonymize(&t, m, &[1; 6_000], &model, &options).unwrap();
    assert!(
        whole.group_of_row != adaptive.group_of_row,
        "not cut at all"
    );
}

#[test]
fn clustered_blocks_stay_whole() {
    // Clustered rows: the trie prunes, so a block under the block size is not cut and
    // the release is the forest's on the whole input.
    let (m, leaves) = (4, 4096);
    let t = tuples(6_000, m, leaves, true);
    let model = CostModel::try_new(vec![halves(leaves); m], vec![1.0; m], LevelCost::Ncp).unwrap();
    let options = ForestOptions {
        k: 5,
        seed: 0,
        improve: Some(Effort::Fast),
    };
    let whole = anonymize(&t, m, &vec![1; 6_000], &model, &options).unwrap();
    let blocked = run(&t, m, leaves, 50_000);
    assert!(
        blocked.group_of_row == whole.group_of_row,
        "the block was cut"
    );
}

#[test]
fn wide_attributes_sharing_a_pack() {
    // Three attributes of 65,536 leaves with two values each in the block share one pack
    // (joint codes 8 ≤ 128 tuples / 4), a fourth of 16 leaves is alone: the scan's
    // weight counts more wide attributes than packs.
    let model = CostModel::try_new(
        vec![halves(65_536), halves(65_536), halves(65_536), halves(16)],
        vec![1.0; 4],
        LevelCost::Ncp,
    )
    .unwrap();
    let t: Vec<u32> = (0..128u32)
        .flat_map(|i| {
            [
                (i & 1) * 9_000,
                (i >> 1 & 1) * 30_000,
                (i >> 2 & 1) * 7,
                i >> 3,
            ]
        })
        .collect();
    let keys: Vec<Vec<f64>> = [65_536u32, 65_536, 65_536, 16]
        .iter()
        .map(|&l| (0..l).map(f64::from).collect())
        .collect();
    let spans = [65_535.0, 65_535.0, 65_535.0, 15.0];
    let options = ForestOptions {
        k: 4,
        seed: 0,
        improve: Some(Effort::Fast),
    };
    let release = blocked_forest(
        &t, 4, &[1; 128], &keys, &spans, &model, &options, 50_000, None,
    )
    .unwrap();
    let mut sizes = vec![0u64; release.groups];
    for &g in &release.group_of_row {
        sizes[g as usize] += 1;
    }
    assert_eq!(release.group_of_row.len(), 128);
    assert!(sizes.iter().all(|&s| s >= 4), "a group under k rows");
}
