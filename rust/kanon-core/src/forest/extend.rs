//! Continuous mode: place rows added after a release, never moving the rows already placed.
//!
//! This is the reference Go library's continuous mode (seed thesis §3.7) on groups: the
//! existing groups are vertices that already hold at least k rows, and every edge inside
//! one costs 0. FOREST runs over the new tuples and these group vertices: a component of
//! new rows lighter than k grows by an edge to the nearest vertex outside it, where the
//! distance from a tuple to a group is the cost of the tuple generalized to the group's
//! current labels (the group's node in every attribute). A component that reaches an
//! existing group joins it (its labels may coarsen to hold the new values); a component
//! of new rows only is cut by DECOMPOSE into new groups of at least k rows. A repair pass
//! then guarantees that every group holds at least k rows.

use crate::error::{KernelError, Result};
use crate::forest::cost::model::CostModel;
use crate::forest::decompose::decompose;
use crate::forest::improve::levels::group_levels_in;
use crate::forest::improve::repair::repair_in;
use crate::forest::neighbours::nearest::nearest_neighbours;
use crate::forest::table::{check_rows, Table};
use crate::forest::union_find::UnionFind;

/// The group of a row that is not placed yet.
pub const NEW: u32 = u32::MAX;

/// The result of [`extend`].
#[derive(Debug, Clone, PartialEq)]
pub struct Extension {
    /// Group of every row: existing rows keep theirs; existing groups keep their ids.
    pub group_of_row: Vec<u32>,
    /// Number of groups.
    pub groups: usize,
    /// Generalization level per group and attribute, row-major.
    pub levels: Vec<u32>,
    /// New rows that joined an existing group.
    pub joined: usize,
    /// Groups made of new rows only.
    pub new_groups: usize,
}

/// Place the rows whose group is [`NEW`] (see the module docs).
///
/// # Arguments
/// * `tuples`, `m`, `model` – distinct tuples (row-major leaf codes) and their cost model.
/// * `tuple_of_row` – the tuple of every row, existing and new.
/// * `group_of_row` – the group of every existing row (`0..groups`), [`NEW`] for new rows.
/// * `groups` – the number of existing groups; each must hold at least `k` rows.
/// * `k` – the privacy parameter.
///
/// # Errors
/// [`KernelError::InvalidArgument`] for inconsistent inputs, `k = 0`, an existing group
/// below `k` rows, or fewer than `k` rows in all.
///
/// # Complexity
/// O(v · (v + g) · m · L) time for v new distinct tuples and g groups (exact nearest
/// vertices), plus DECOMPOSE and the repair pass.
///
/// # Examples
/// ```
/// use kanon_core::forest::cost::{CostModel, LevelCost};
/// use kanon_core::forest::extend::{extend, NEW};
/// use kanon_core::Hierarchy;
/// let age = Hierarchy::try_from_levels(&[&[0, 1, 2, 3], &[0, 0, 1, 1], &[0, 0, 0, 0]]).unwrap();
/// let model = CostModel::try_new(vec![age], vec![1.0], LevelCost::Height).unwrap();
/// // rows 0, 1 (values 0, 1) form group 0; a new row of value 1 joins it
/// let e = extend(&[0, 1, 2, 3], 1, &model, &[0, 1, 1], &[0, 0, NEW], 1, 2).unwrap();
/// assert_eq!(e.group_of_row, vec![0, 0, 0]);
/// assert_eq!(e.joined, 1);
/// ```
pub fn extend(
    tuples: &[u32],
    m: usize,
    model: &CostModel,
    tuple_of_row: &[u32],
    group_of_row: &[u32],
    groups: usize,
    k: u64,
) -> Result<Extension> {
    let k = usize::try_from(k).unwrap_or(usize::MAX);
    const KERNEL: &str = "extend";
    let invalid = |message: String| KernelError::InvalidArgument {
        kernel: KERNEL,
        message,
    };
    let n = model.check_tuples(tuples, m, KERNEL)?;
    if k == 0 {
        return Err(invalid("k must be at least 1".to_owned()));
    }
    if groups >= NEW as usize {
        return Err(invalid(format!("{groups} groups exceed the limit")));
    }
    // Existing rows only, to validate and to measure the groups.
    let existing: Vec<usize> = (0..group_of_row.len())
        .filter(|&r| group_of_row[r] != NEW)
        .collect();
    let old_tuples: Vec<u32> = existing.iter().map(|&r| tuple_of_row[r]).collect();
    let old_groups: Vec<u32> = existing.iter().map(|&r| group_of_row[r]).collect();
    check_rows(KERNEL, n, tuple_of_row, group_of_row, NEW as usize + 1)?;
    check_rows(KERNEL, n, &old_tuples, &old_groups, groups)?;
    let mut sizes = vec![0usize; groups];
    let mut rep = vec![u32::MAX; groups];
    for (&t, &g) in old_tuples.iter().zip(&old_groups) {
        sizes[g as usize] += 1;
        if rep[g as usize] == u32::MAX {
            rep[g as usize] = t;
        }
    }
    if let Some(g) = sizes.iter().position(|&s| s < k) {
        return Err(invalid(format!(
            "existing group {g} holds {} rows, fewer than k = {k}",
            sizes[g]
        )));
    }
    let table = Table::new(model, tuples, m, tuple_of_row);
    let old_table = Table {
        tuple_of_row: &old_tuples,
        ..table
    };
    let old_levels = group_levels_in(&old_table, &old_groups, groups)?;
    let row = |t: u32| &tuples[t as usize * m..(t as usize + 1) * m];

    // New distinct tuples in value order, with their rows.
    let mut fresh: Vec<(u32, usize)> = (0..group_of_row.len())
        .filter(|&r| group_of_row[r] == NEW)
        .map(|r| (tuple_of_row[r], r))
        .collect();
    fresh.sort_by(|a, b| row(a.0).cmp(row(b.0)).then(a.1.cmp(&b.1)));
    let mut vertex_tuple: Vec<u32> = Vec::new();
    let mut vertex_rows: Vec<Vec<usize>> = Vec::new();
    for &(t, r) in &fresh {
        if vertex_tuple.last() != Some(&t) {
            vertex_tuple.push(t);
            vertex_rows.push(Vec::new());
        }
        vertex_rows.last_mut().expect("pushed").push(r);
    }
    let v = vertex_tuple.len();
    let total = existing.len() + fresh.len();
    if total < k {
        return Err(invalid(format!(
            "k exceeds the number of rows: k = {k} but there are {total} rows"
        )));
    }

    // Cost of generalizing tuple `t` to the labels of group `g` (one row's units).
    let join_units = |t: u32, g: usize| -> u64 {
        let a = row(t);
        let b = row(rep[g]);
        (0..m)
            .map(|j| {
                let level = old_levels[g * m + j].max(model.meet_level(j, a[j], b[j]) as u32);
                model.level_units(j, level as usize, a[j])
            })
            .sum()
    };
    // Nearest group of every new tuple (ties: smallest group id).
    let nearest_group: Vec<Option<(u64, usize)>> = vertex_tuple
        .iter()
        .map(|&t| (0..groups).map(|g| (join_units(t, g), g)).min())
        .collect();
    let new_tuples: Vec<u32> = vertex_tuple
        .iter()
        .flat_map(|&t| row(t).iter().copied())
        .collect();
    let listed = nearest_neighbours(&new_tuples, m, model, k.saturating_sub(1).max(1))?;

    // FOREST over new vertices 0..v and group vertices v..v+groups.
    if u32::try_from(v + groups).is_err() {
        return Err(invalid(format!(
            "{v} new tuples and {groups} groups exceed the limit of 4294967295 together"
        )));
    }
    let weights: Vec<u64> = vertex_rows
        .iter()
        .map(|rows| rows.len() as u64)
        .chain(sizes.iter().map(|&s| s as u64))
        .collect();
    let mut sets = UnionFind::new(&weights);
    let vertex = |x: usize| x as u32;
    let mut parent: Vec<Option<usize>> = vec![None; v];
    for i in 0..v {
        loop {
            let c = sets.find(vertex(i));
            if sets.weight(c) >= k as u64 {
                break;
            }
            // The tree's vertex without an out-edge: a linking component always hangs
            // below the target's tree.
            let u = sets.root(c) as usize;
            debug_assert!(u < v, "only components of new rows are lighter than k");
            // Nearest new vertex outside the component. The component holds at most
            // k − 2 vertices besides u, so the list of k − 1 nearest has the answer
            // unless it lists every other new vertex and all are inside.
            let mut best: Option<(u64, usize)> = listed[u]
                .iter()
                .map(|&(_, x)| x as usize)
                .find(|&x| sets.find(vertex(x)) != c)
                .map(|x| {
                    (
                        model.pair_units(row(vertex_tuple[u]), row(vertex_tuple[x])),
                        x,
                    )
                });
            if let Some((cost, g)) = nearest_group[u] {
                if best.is_none_or(|b| cost < b.0) {
                    best = Some((cost, v + g));
                }
            }
            let Some((_, target)) = best else {
                return Err(invalid("internal error: no vertex to link to".to_owned()));
            };
            parent[u] = Some(target);
            sets.union_under(c, vertex(target));
        }
    }

    // Components: join the group they reached, or become new groups via DECOMPOSE.
    let mut out = group_of_row.to_vec();
    let mut joined = 0;
    let mut alone: Vec<usize> = Vec::new();
    let mut group_of_component = vec![usize::MAX; v + groups];
    for g in 0..groups {
        let c = sets.find(vertex(v + g)) as usize;
        group_of_component[c] = g;
    }
    for (x, rows) in vertex_rows.iter().enumerate() {
        let c = sets.find(vertex(x)) as usize;
        match group_of_component[c] {
            usize::MAX => alone.push(x),
            g => {
                for &r in rows {
                    out[r] = g as u32;
                    joined += 1;
                }
            }
        }
    }
    let mut count = groups;
    let mut new_groups = 0;
    if !alone.is_empty() {
        let mut local_of_vertex = vec![usize::MAX; v];
        let mut local_rows: Vec<usize> = Vec::new();
        let mut edges: Vec<(u32, u32)> = Vec::new();
        for &x in &alone {
            let base = local_rows.len();
            local_of_vertex[x] = base;
            for (i, &r) in vertex_rows[x].iter().enumerate() {
                local_rows.push(r);
                if i > 0 {
                    edges.push((base as u32, (base + i) as u32));
                }
            }
        }
        for &x in &alone {
            if let Some(p) = parent[x] {
                edges.push((local_of_vertex[x] as u32, local_of_vertex[p] as u32));
            }
        }
        let d = decompose(local_rows.len(), &edges, k as u64)?;
        for group in d.groups {
            for local in group {
                out[local_rows[local as usize]] = count as u32;
            }
            count += 1;
            new_groups += 1;
        }
    }
    let repaired = repair_in(&table, &mut out, count, k)?;
    let levels = group_levels_in(&table, &out, repaired.groups)?;
    Ok(Extension {
        group_of_row: out,
        groups: repaired.groups,
        levels,
        joined,
        new_groups: new_groups - repaired.merged.min(new_groups),
    })
}
