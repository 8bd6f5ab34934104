//! The entry points: the optimal node of a lattice, one node's evaluation, and the
//! packing of level keys.

use super::group::Wide;
use super::input::ModelInput;
use super::search::Search;
use super::tuples::Tuples;
use super::types::{LatticeOptions, NodeEval, Optimum, KERNEL};
use super::walk::search_lattice;
use crate::cancel;
use crate::error::{KernelError, Result};
use crate::hierarchy::Hierarchy;

/// Evaluate one node: its classes, suppressed rows, feasibility and cost (for checks and
/// tests; the search uses the same code).
///
/// # Errors
/// As [`optimal`], and [`KernelError::InvalidArgument`] if `levels` is outside the
/// bounds.
pub fn evaluate_node(
    tuples: &[u32],
    m: usize,
    counts: &[u64],
    hierarchies: &[Hierarchy],
    levels: &[u32],
    options: &LatticeOptions,
    input: &ModelInput<'_>,
) -> Result<NodeEval> {
    let search = Search::new(
        Tuples::Codes(tuples),
        m,
        counts,
        hierarchies,
        options,
        input,
    )?;
    check_levels(&search, levels)?;
    Ok(if search.narrow {
        search.evaluate(
            levels,
            &search.group::<u64>(levels, usize::MAX, Vec::new()).0,
        )
    } else {
        search.evaluate(
            levels,
            &search.group::<Wide>(levels, usize::MAX, Vec::new()).0,
        )
    })
}

fn check_levels(search: &Search<'_>, levels: &[u32]) -> Result<()> {
    let ok = levels.len() == search.m
        && levels.iter().enumerate().all(|(j, &l)| {
            (search.options.min_level[j]..=search.options.max_level[j]).contains(&l)
        });
    if ok {
        Ok(())
    } else {
        Err(KernelError::InvalidArgument {
            kernel: KERNEL,
            message: format!("levels {levels:?} are outside the lattice"),
        })
    }
}

/// The optimal full-domain generalization of a histogram of tuples.
///
/// Finds the level vector (within `min_level..=max_level`) of lowest cost under
/// `options.metric` among those whose classes of fewer than `k` rows hold at most
/// `max_suppressed` rows (and, with `keep_suppressed`, none or at least `k`). Ties are
/// broken by the lower sum of levels, then the lexicographically smaller vector.
///
/// # Arguments
/// * `tuples` – row-major leaf codes, `m` per tuple (distinct tuples of a table, or any
///   rows: equal tuples simply add up).
/// * `counts` – rows per tuple.
/// * `hierarchies` – one per attribute.
/// * `options` – the privacy model, the suppression limit, the level bounds, the weights
///   and the metric.
///
/// # Returns
/// The optimum with its evaluation and the tuples it suppresses, and counters of the
/// search.
///
/// # Errors
/// [`KernelError::LengthMismatch`] / [`KernelError::InvalidArgument`] for inconsistent
/// inputs (lengths, codes outside a hierarchy, bad bounds or weights, `k = 0`, a lattice
/// of more than 2^26 nodes, tuples that do not pack into 128 bits), and
/// [`KernelError::InvalidArgument`] naming the smallest suppression that would do if no
/// node is feasible.
///
/// # Complexity
/// O(V · m) to rank the V nodes by their lower bounds, plus, for every node grouped,
/// O(n · m) from the histogram of n tuples or O(c) by roll-up from a node of c classes.
///
/// # Examples
/// ```
/// use kanon_core::lattice::{optimal, LatticeOptions, Metric};
/// use kanon_core::Hierarchy;
/// let age = Hierarchy::try_from_levels(&[&[0, 1, 2, 3], &[0, 0, 1, 1], &[0, 0, 0, 0]]).unwrap();
/// let options = LatticeOptions {
///     k: 2,
///     max_suppressed: 0,
///     keep_suppressed: true,
///     min_level: vec![0],
///     max_level: vec![2],
///     weights: vec![1.0],
///     metric: Metric::Loss,
///     node_loss: Vec::new(),
/// };
/// // Ages 0, 1, 2, 3 once each: pairs at level 1 are 2-anonymous.
/// let best = optimal(&[0, 1, 2, 3], 1, &[1, 1, 1, 1], &[age], &options).unwrap();
/// assert_eq!(best.levels, vec![1]);
/// assert!((best.eval.cost - 1.0 / 3.0).abs() < 1e-12);
/// ```
pub fn optimal(
    tuples: &[u32],
    m: usize,
    counts: &[u64],
    hierarchies: &[Hierarchy],
    options: &LatticeOptions,
) -> Result<Optimum> {
    optimal_with(
        tuples,
        m,
        counts,
        hierarchies,
        options,
        &ModelInput::default(),
    )
}

/// [`optimal`] under privacy models besides k-anonymity.
///
/// A class fails when it has fewer than `k` rows or violates a model of `input`; the
/// rows of failing classes are suppressed (at most `max_suppressed`), and when kept they
/// form one class (`*`) that must satisfy k and the models itself. When the rows of
/// failing classes are not monotone (entropy or recursive l-diversity, t-closeness or
/// δ-presence with suppression allowed, and δ-presence with a lower bound always),
/// predictive tagging uses the rows below k, a monotone lower bound of them, and every
/// candidate is then checked in full.
///
/// # Errors
/// As [`optimal`], and [`KernelError::InvalidArgument`] / [`KernelError::LengthMismatch`]
/// for model parameters out of range, sensitive entries that do not add up to the
/// tuples' counts, or table rows missing from the population.
pub fn optimal_with(
    tuples: &[u32],
    m: usize,
    counts: &[u64],
    hierarchies: &[Hierarchy],
    options: &LatticeOptions,
    input: &ModelInput<'_>,
) -> Result<Optimum> {
    cancel::check("optimal")?;
    let search = Search::new(
        Tuples::Codes(tuples),
        m,
        counts,
        hierarchies,
        options,
        input,
    )?;
    search_keyed(&search)
}

/// [`optimal_with`] over tuples given as packed leaf keys, each split into its low and
/// high 64 bits as [`super::key_bits`] lays them out (as [`super::unpack_keys`] reads
/// them): the search reads the keys in place instead of an unpacked copy.
///
/// # Errors
/// As [`optimal_with`], and as [`super::unpack_keys`] for the keys.
pub fn optimal_keys(
    low: &[u64],
    high: &[u64],
    counts: &[u64],
    hierarchies: &[Hierarchy],
    options: &LatticeOptions,
    input: &ModelInput<'_>,
) -> Result<Optimum> {
    cancel::check("optimal")?;
    let tuples = Tuples::Keys { low, high };
    let search = Search::new(
        tuples,
        hierarchies.len(),
        counts,
        hierarchies,
        options,
        input,
    )?;
    search_keyed(&search)
}

/// The search with `u64` class keys where they fit, else 128-bit ones.
fn search_keyed(search: &Search<'_>) -> Result<Optimum> {
    if search.narrow {
        search_lattice::<u64>(search)
    } else {
        search_lattice::<Wide>(search)
    }
}
