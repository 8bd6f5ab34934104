//! The forest anonymizer end to end: distinct tuples with multiplicities in, a group per
//! row and a generalization level per group and attribute out.
//!
//! 1. Tuples are visited in value order (lexicographic on leaf codes), or in a seeded
//!    permutation of it, so the result does not depend on the order the rows arrived in.
//! 2. A tuple occurring at least k times is a group of its own (cost 0).
//! 3. The other tuples are weighted vertices of FOREST ([`crate::forest::neighbours::build_forest`]):
//!    exact k − 1 nearest neighbours, every tree ≥ k rows.
//! 4. Trees are expanded to rows (the copies of a tuple hang on its first copy by
//!    weight-0 edges) and cut by DECOMPOSE ([`crate::forest::decompose::decompose`]).
//! 5. The repair pass ([`repair`](fn@crate::forest::improve::repair)) merges any group
//!    with fewer than k rows into the group it is cheapest to join, so every output group
//!    has at least k rows, always.
//! 6. Optionally, the improvement passes of [`crate::forest::improve`] lower the cost while
//!    keeping every group ≥ k. With the full effort they also start from the classes of
//!    full-domain generalizations, cheapest first, when the cost is the hierarchy NCP
//!    and the lattice is small enough ([`crate::forest::starts`]).
//!
//! Rows are numbered tuple by tuple in the caller's order: the rows of tuple `t` are
//! `start_t .. start_t + counts[t]`, with `start_t = Σ_{s<t} counts[s]`.
//!
//! Every cost is the model's ([`crate::forest::cost`]): with [`crate::forest::cost::LevelCost::Range`]
//! the forest's pair costs, the repair and improvement passes and the reported costs all
//! use the NCP of the groups' observed values (range labels); the levels are still the
//! groups' lowest common hierarchy levels.

use crate::cancel;
use crate::error::{KernelError, Result};
use crate::forest::cost::model::CostModel;
use crate::forest::decompose::decompose;
use crate::forest::improve::effort::Effort;
use crate::forest::improve::extents::release_cost_in;
use crate::forest::improve::levels::group_levels_in;
use crate::forest::improve::repair::repair_in;
use crate::forest::neighbours::build::build_forest;
use crate::forest::starts::{improve_best, Start};
use crate::forest::table::Table;

/// What to run.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub struct ForestOptions {
    /// Every group holds at least `k` rows.
    pub k: u64,
    /// 0 visits tuples in value order; any other value a permutation drawn from it.
    pub seed: u64,
    /// The improvement passes to run after the repair pass, if any.
    pub improve: Option<Effort>,
}

/// Counters of one run.
#[derive(Debug, Clone, Default, PartialEq)]
pub struct ForestStats {
    /// Distinct tuples.
    pub tuples: usize,
    /// Vertices of the forest (tuples occurring fewer than k times).
    pub vertices: usize,
    /// Groups made of a single tuple occurring at least k times.
    pub own_groups: usize,
    /// DECOMPOSE cuts of type A, B, C, D.
    pub cuts: [usize; 4],
    /// Groups with fewer than k rows merged by the repair pass.
    pub repaired: usize,
    /// Release cost (Σ over cells of the node cost, or under range costs Σ over groups of
    /// rows × the weighted NCP of the observed values) before the improvement passes.
    pub cost_before_improve: f64,
    /// Release cost of the result ([`crate::forest::improve::release_cost`]).
    pub cost: f64,
    /// Whether the result comes from the cheapest-first classes as the passes' start
    /// (`crate::iterated::cheapest_first`); `cost_before_improve` is then that start's cost.
    pub classes_start: bool,
}

/// The result: `group_of_row` (dense ids `0..groups`), and `levels[g · m + j]`, the level
/// of attribute `j` in group `g`.
#[derive(Debug, Clone, PartialEq)]
pub struct Release {
    /// Group of every row, rows numbered as in the module docs.
    pub group_of_row: Vec<u32>,
    /// Number of groups.
    pub groups: usize,
    /// Generalization level per group and attribute, row-major.
    pub levels: Vec<u32>,
    /// Counters.
    pub stats: ForestStats,
}

/// Anonymize distinct `tuples` (row-major, `m` leaf codes each) occurring `counts` times.
///
/// # Errors
/// [`KernelError::InvalidArgument`] for inconsistent inputs, `k = 0`, a count of 0, or
/// `k` above the number of rows; errors of the kernels it calls.
///
/// # Examples
/// ```
/// use kanon_core::forest::anonymize::{anonymize, ForestOptions};
/// use kanon_core::forest::cost::{CostModel, LevelCost};
/// use kanon_core::Hierarchy;
/// let age = Hierarchy::try_from_levels(&[&[0, 1, 2, 3], &[0, 0, 1, 1], &[0, 0, 0, 0]]).unwrap();
/// let model = CostModel::try_new(vec![age], vec![1.0], LevelCost::Height).unwrap();
/// let options = ForestOptions { k: 2, seed: 0, improve: None };
/// let r = anonymize(&[0, 1, 2, 3], 1, &[1, 1, 1, 1], &model, &options).unwrap();
/// assert_eq!(r.groups, 2);
/// assert_eq!(r.group_of_row[0], r.group_of_row[1]);
/// assert_eq!(r.levels, vec![1, 1]);
/// ```
pub fn anonymize(
    tuples: &[u32],
    m: usize,
    counts: &[u64],
    model: &CostModel,
    options: &ForestOptions,
) -> Result<Release> {
    const KERNEL: &str = "anonymize";
    let invalid = |message: String| KernelError::InvalidArgument {
        kernel: KERNEL,
        message,
    };
    cancel::check(KERNEL)?;
    let n = model.check_tuples(tuples, m, KERNEL)?;
    if counts.len() != n {
        return Err(KernelError::LengthMismatch {
            kernel: KERNEL,
            argument: "counts",
            got: counts.len(),
            expected: n,
        });
    }
    let k = options.k;
    if k == 0 {
        return Err(invalid("k must be at least 1".to_owned()));
    }
    if let Some(t) = counts.iter().position(|&c| c == 0) {
        return Err(invalid(format!("tuple {t} has count 0")));
    }
    let total: u128 = counts.iter().map(|&c| u128::from(c)).sum();
    if total < u128::from(k) {
        return Err(invalid(format!(
            "k exceeds the number of rows: k = {k} but there are {total} rows"
        )));
    }
    let rows = usize::try_from(total)
        .ok()
        .filter(|&r| r <= u32::MAX as usize)
        .ok_or_else(|| invalid(format!("{total} rows exceed the limit of 4294967295")))?;
    let row = |t: usize| &tuples[t * m..(t + 1) * m];
    let mut start = Vec::with_capacity(n);
    let mut acc = 0usize;
    for &c in counts {
        start.push(acc);
        acc += c as usize;
    }

    let order = visit_order(n, options.seed, |a, b| row(a).cmp(row(b)));
    // Work on the tuples in visiting order, so that the release depends on the values
    // (and the seed) only, never on the order the caller listed them in.
    let ordered_tuples: Vec<u32> = order.iter().flat_map(|&t| row(t).iter().copied()).collect();
    let ordered_counts: Vec<u64> = order.iter().map(|&t| counts[t]).collect();
    let mut release = anonymize_ordered(
        &ordered_tuples,
        m,
        &ordered_counts,
        model,
        options,
        rows,
        KERNEL,
    )?;
    let mut group_of_row = vec![0u32; rows];
    let mut ordered_start = 0usize;
    for &t in &order {
        let c = counts[t] as usize;
        group_of_row[start[t]..start[t] + c]
            .copy_from_slice(&release.group_of_row[ordered_start..ordered_start + c]);
        ordered_start += c;
    }
    release.group_of_row = group_of_row;
    Ok(release)
}

/// [`anonymize`] on validated tuples already in visiting order.
fn anonymize_ordered(
    tuples: &[u32],
    m: usize,
    counts: &[u64],
    model: &CostModel,
    options: &ForestOptions,
    rows: usize,
    kernel: &'static str,
) -> Result<Release> {
    let invalid = |message: String| KernelError::InvalidArgument { kernel, message };
    let n = counts.len();
    let k = options.k;
    let k_rows = usize::try_from(k).unwrap_or(usize::MAX);
    let row = |t: usize| &tuples[t * m..(t + 1) * m];
    let mut start = Vec::with_capacity(n);
    let mut acc = 0usize;
    for &c in counts {
        start.push(acc);
        acc += c as usize;
    }
    let order: Vec<usize> = (0..n).collect();
    let mut stats = ForestStats {
        tuples: n,
        ..ForestStats::default()
    };
    // Groups as lists of rows, numbered in visiting order.
    let mut groups: Vec<Vec<u32>> = Vec::new();
    let light: Vec<usize> = order.iter().copied().filter(|&t| counts[t] < k).collect();
    for &t in order.iter().filter(|&&t| counts[t] >= k) {
        groups.push(
            (start[t]..start[t] + counts[t] as usize)
                .map(|r| r as u32)
                .collect(),
        );
    }
    stats.own_groups = groups.len();
    stats.vertices = light.len();
    let light_rows: u64 = light.iter().map(|&t| counts[t]).sum();
    if light_rows >= k {
        let light_tuples: Vec<u32> = light.iter().flat_map(|&t| row(t).iter().copied()).collect();
        let weights: Vec<u64> = light.iter().map(|&t| counts[t]).collect();
        let parent = build_forest(&light_tuples, m, &weights, k, model)?;
        // Row-level tree: local row ids per vertex, copies hang on the first copy.
        let mut base = Vec::with_capacity(light.len());
        let mut local_to_row = Vec::with_capacity(light_rows as usize);
        let mut edges = Vec::new();
        for &t in &light {
            let b = local_to_row.len() as u32;
            base.push(b);
            for i in 0..counts[t] as usize {
                local_to_row.push((start[t] + i) as u32);
                if i > 0 {
                    edges.push((b, b + i as u32));
                }
            }
        }
        for (v, p) in parent.iter().enumerate() {
            if let Some(p) = p {
                edges.push((base[v], base[*p as usize]));
            }
        }
        let d = decompose(local_to_row.len(), &edges, k)?;
        stats.cuts = d.cuts;
        groups.extend(d.groups.into_iter().map(|g| {
            g.into_iter()
                .map(|local| local_to_row[local as usize])
                .collect::<Vec<u32>>()
        }));
    } else if light_rows > 0 {
        // Too few rows to make a group of their own: the repair pass places them.
        groups.push(
            light
                .iter()
                .flat_map(|&t| start[t]..start[t] + counts[t] as usize)
                .map(|r| r as u32)
                .collect(),
        );
    }

    let mut tuple_of_row = vec![0u32; rows];
    for t in 0..n {
        tuple_of_row[start[t]..start[t] + counts[t] as usize].fill(t as u32);
    }
    let mut group_of_row = vec![u32::MAX; rows];
    for (g, members) in groups.iter().enumerate() {
        for &r in members {
            group_of_row[r as usize] = g as u32;
        }
    }
    if let Some(r) = group_of_row.iter().position(|&g| g == u32::MAX) {
        return Err(invalid(format!("internal error: row {r} was not grouped")));
    }
    let mut count = groups.len();
    drop(groups);
    let table = Table::new(model, tuples, m, &tuple_of_row);
    let repaired = repair_in(&table, &mut group_of_row, count, k_rows)?;
    count = repaired.groups;
    stats.repaired = repaired.merged;
    stats.cost_before_improve = release_cost_in(&table, &group_of_row, count)?;
    stats.cost = stats.cost_before_improve;
    if let Some(effort) = options.improve {
        let start = Start {
            group_of_row,
            groups: count,
            cost: stats.cost_before_improve,
        };
        let best = improve_best(&table, counts, start, k_rows, effort)?;
        (group_of_row, count) = (best.group_of_row, best.groups);
        stats.cost_before_improve = best.start_cost;
        stats.cost = best.cost;
        stats.classes_start = best.classes;
    }
    let levels = group_levels_in(&table, &group_of_row, count)?;
    Ok(Release {
        group_of_row,
        groups: count,
        levels,
        stats,
    })
}

/// Tuple indices in the order given by `cmp` (ties by index), or for `seed ≠ 0` a
/// permutation of that order drawn from `seed` (splitmix64, Fisher–Yates).
fn visit_order(
    n: usize,
    seed: u64,
    cmp: impl Fn(usize, usize) -> std::cmp::Ordering,
) -> Vec<usize> {
    let mut order: Vec<usize> = (0..n).collect();
    order.sort_by(|&a, &b| cmp(a, b).then(a.cmp(&b)));
    if seed != 0 {
        let mut state = seed;
        for i in (1..n).rev() {
            state = state.wrapping_add(0x9E37_79B9_7F4A_7C15);
            let mut z = state;
            z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
            z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
            z ^= z >> 31;
            let j = (z % (i as u64 + 1)) as usize;
            order.swap(i, j);
        }
    }
    order
}
