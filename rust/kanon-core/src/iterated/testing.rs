//! Test helpers of the iterations: small hierarchies, random tables and the check that a
//! recoding is k-anonymous.

use std::collections::HashMap;

use crate::hierarchy::Hierarchy;
use crate::priority::Recoding;

pub(super) fn flat(leaves: u32) -> Hierarchy {
    Hierarchy::flat(leaves)
}

/// Leaves 0..n in pairs, then `*`.
pub(super) fn pairs(n: u32) -> Hierarchy {
    let leaves: Vec<u32> = (0..n).collect();
    let halves: Vec<u32> = (0..n).map(|x| x / 2).collect();
    let top = vec![0; n as usize];
    Hierarchy::try_from_levels(&[&leaves, &halves, &top]).unwrap()
}

/// Every released combination of labels holds at least k rows, and every row is in a
/// group whose labels cover it.
pub(super) fn check(
    tuples: &[u32],
    m: usize,
    counts: &[u64],
    hs: &[Hierarchy],
    k: u64,
    r: &Recoding,
) {
    let mut combos: HashMap<Vec<u32>, u64> = HashMap::new();
    for (t, &c) in counts.iter().enumerate() {
        if c == 0 {
            continue;
        }
        let g = r.group_of_tuple[t] as usize;
        assert!(g < r.groups);
        let key: Vec<u32> = (0..m)
            .flat_map(|j| {
                let l = r.levels[g * m + j];
                [l, hs[j].generalize(l as usize, tuples[t * m + j])]
            })
            .collect();
        *combos.entry(key).or_insert(0) += c;
    }
    // Labels at different levels may coincide only as the same label.
    assert!(combos.values().all(|&n| n >= k), "{combos:?}");
    assert_eq!(r.rows.iter().sum::<u64>(), counts.iter().sum::<u64>());
}

/// A random table for case `case` (reproducible without a crate): tuples, attributes,
/// counts (some 0), hierarchies, k and weights (every fourth case all 1).
pub(super) fn random_table(
    case: u64,
) -> (Vec<u32>, usize, Vec<u64>, Vec<Hierarchy>, u64, Vec<f64>) {
    let mut seed = 12345u64 + case;
    let mut next = |n: u32| {
        seed = seed
            .wrapping_mul(6364136223846793005)
            .wrapping_add(1442695040888963407);
        ((seed >> 33) % u64::from(n)) as u32
    };
    let m = 1 + (case % 4) as usize;
    let hs: Vec<Hierarchy> = (0..m)
        .map(|j| if j % 2 == 0 { pairs(6) } else { flat(3) })
        .collect();
    let n = 1 + next(30) as usize;
    let mut tuples = Vec::new();
    let mut counts = Vec::new();
    for _ in 0..n {
        for h in &hs {
            tuples.push(next(h.leaves() as u32));
        }
        counts.push(u64::from(next(4)));
    }
    let k = 1 + u64::from(next(6));
    let weights: Vec<f64> = if case % 4 == 0 {
        vec![1.0; m]
    } else {
        (0..m).map(|_| f64::from(next(5))).collect()
    };
    (tuples, m, counts, hs, k, weights)
}
