//! One `#[pyfunction]` per kernel: extract, validate, release the GIL, call the core, wrap.

use kanon_core::anonymize::{anonymize, ForestOptions};
use kanon_core::blocked::blocked_forest;
use kanon_core::cost::{CostModel, LevelCost};
use kanon_core::extend::extend;
use kanon_core::historic::{datafly, mu_argus, HistoricRelease};
use kanon_core::improve::Effort;
use kanon_core::lattice::{optimal_with, unpack_keys, LatticeOptions, Metric, ModelInput};
use kanon_core::models::PrivacyModels;
use kanon_core::{ClassStats, Distance, Hierarchy, KernelError, StatsOptions};
use pyo3::buffer::{Element, PyBuffer};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::{PyBytes, PyDict};

use crate::error::to_py;
use crate::mondrian::{ground_distance, l_diversity_of};
use crate::progress;

/// Copy a buffer-protocol object (e.g. ``memoryview(arrow_buffer).cast("I")``) into a Vec.
pub(crate) fn read<T: Element + Copy>(
    py: Python<'_>,
    name: &str,
    buf: &PyBuffer<T>,
) -> PyResult<Vec<T>> {
    buf.to_vec(py)
        .map_err(|e| PyValueError::new_err(format!("argument '{name}' is not readable: {e}")))
}

/// Run a kernel with the GIL released and funnel its error into `kanon.exceptions`.
pub(crate) fn run<T: Send>(
    py: Python<'_>,
    kernel: impl FnOnce() -> Result<T, KernelError> + Send,
) -> PyResult<T> {
    py.detach(kernel).map_err(|e| to_py(py, &e))
}

pub(crate) fn le_bytes<'py, T: Copy, const N: usize>(
    py: Python<'py>,
    values: &[T],
    to: impl Fn(T) -> [u8; N],
) -> Bound<'py, PyBytes> {
    let bytes: Vec<u8> = values.iter().flat_map(|&v| to(v)).collect();
    PyBytes::new(py, &bytes)
}

/// Compute privacy statistics of a partition given as a histogram of entries.
///
/// Args:
///     counts: buffer of uint64, rows per entry.
///     offsets: buffer of uint64 (classes + 1 values) delimiting each class's entries,
///         or None for one entry per class.
///     sensitive: buffer of uint32 sensitive-value codes per entry (value order, or the
///         hierarchy's leaf codes with ``hierarchy``), or None.
///     population: buffer of uint64 population class sizes per class, or None.
///     ordered: use the ordered ground distance for t-closeness (else equal distance).
///     recursive_l: l of recursive (c,l)-diversity (None: the distinct l).
///     recursive_c: c of recursive (c,l)-diversity to test, or None.
///     risk_threshold: records with a risk above this count as at risk.
///     hierarchy: the sensitive values' hierarchy as uint32 level-code buffers (see
///         ``validate_hierarchy``) for the hierarchical ground distance, or None.
///
/// Returns:
///     dict with k, classes, rows, l_distinct, l_entropy, recursive_l, recursive_c,
///     recursive_ok, t, prosecutor_max, prosecutor_avg, prosecutor_at_risk, marketer,
///     journalist_max, journalist_avg, journalist_at_risk, delta_min, delta_max.
///
/// Raises:
///     InvalidInputError: inconsistent inputs (``ordered`` with ``hierarchy`` included).
///     HierarchyError: a hierarchy that is not nested or has several roots.
#[pyfunction]
#[pyo3(signature = (counts, offsets=None, sensitive=None, population=None, ordered=false,
                    recursive_l=None, recursive_c=None, risk_threshold=0.2, hierarchy=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn class_stats<'py>(
    py: Python<'py>,
    counts: PyBuffer<u64>,
    offsets: Option<PyBuffer<u64>>,
    sensitive: Option<PyBuffer<u32>>,
    population: Option<PyBuffer<u64>>,
    ordered: bool,
    recursive_l: Option<u64>,
    recursive_c: Option<f64>,
    risk_threshold: f64,
    hierarchy: Option<Vec<PyBuffer<u32>>>,
) -> PyResult<Bound<'py, PyDict>> {
    let counts = read(py, "counts", &counts)?;
    let offsets = offsets.map(|b| read(py, "offsets", &b)).transpose()?;
    let sensitive = sensitive.map(|b| read(py, "sensitive", &b)).transpose()?;
    let population = population.map(|b| read(py, "population", &b)).transpose()?;
    let hierarchy: Option<Vec<Vec<u32>>> = hierarchy
        .map(|levels| levels.iter().map(|b| read(py, "hierarchy", b)).collect())
        .transpose()?;
    let s: ClassStats = run(py, || {
        let distance = match (&hierarchy, ordered) {
            (Some(_), true) => {
                return Err(KernelError::InvalidArgument {
                    kernel: "class_stats",
                    message: "ordered and hierarchy exclude each other: choose one ground \
                              distance"
                        .to_owned(),
                })
            }
            (Some(levels), false) => {
                let views: Vec<&[u32]> = levels.iter().map(Vec::as_slice).collect();
                Distance::Hierarchical(Hierarchy::try_from_levels(&views)?)
            }
            (None, true) => Distance::Ordered,
            (None, false) => Distance::Equal,
        };
        let options = StatsOptions {
            distance,
            recursive_l,
            recursive_c,
            risk_threshold,
        };
        kanon_core::class_stats(
            offsets.as_deref(),
            &counts,
            sensitive.as_deref(),
            population.as_deref(),
            &options,
        )
    })?;
    let d = PyDict::new(py);
    d.set_item("k", s.k)?;
    d.set_item("classes", s.classes)?;
    d.set_item("rows", s.rows)?;
    d.set_item("l_distinct", s.l_distinct)?;
    d.set_item("l_entropy", s.l_entropy)?;
    d.set_item("recursive_l", s.recursive_l)?;
    d.set_item("recursive_c", s.recursive_c)?;
    d.set_item("recursive_ok", s.recursive_ok)?;
    d.set_item("t", s.t)?;
    d.set_item("prosecutor_max", s.prosecutor_max)?;
    d.set_item("prosecutor_avg", s.prosecutor_avg)?;
    d.set_item("prosecutor_at_risk", s.prosecutor_at_risk)?;
    d.set_item("marketer", s.marketer)?;
    d.set_item("journalist_max", s.journalist_max)?;
    d.set_item("journalist_avg", s.journalist_avg)?;
    d.set_item("journalist_at_risk", s.journalist_at_risk)?;
    d.set_item("delta_min", s.delta_min)?;
    d.set_item("delta_max", s.delta_max)?;
    Ok(d)
}

/// Dictionary-encode strings to dense codes in value order (None sorts first).
///
/// Args:
///     values: list of str or None.
///
/// Returns:
///     (codes, first_row): codes as little-endian uint32 bytes, and for each code the
///     index of its first occurrence.
#[pyfunction]
pub(crate) fn encode_strings(
    py: Python<'_>,
    values: Vec<Option<String>>,
) -> PyResult<(Bound<'_, PyBytes>, Vec<usize>)> {
    let dict = run(py, || kanon_core::encode(&values))?;
    Ok((le_bytes(py, &dict.codes, u32::to_le_bytes), dict.first_row))
}

/// Check that a hierarchy given as one code array per level is nested with one root.
///
/// Args:
///     levels: list of uint32 buffers; ``levels[l][row]`` is the dense code of the row's
///         label at level l; level 0 lists every leaf once.
///
/// Returns:
///     Number of levels above the leaves.
///
/// Raises:
///     HierarchyError: a label with two parents (names the level and row) or two roots.
///     InvalidInputError: malformed codes.
#[pyfunction]
pub(crate) fn validate_hierarchy(py: Python<'_>, levels: Vec<PyBuffer<u32>>) -> PyResult<usize> {
    let levels: Vec<Vec<u32>> = levels
        .iter()
        .map(|b| read(py, "levels", b))
        .collect::<PyResult<_>>()?;
    let h = run(py, || {
        let views: Vec<&[u32]> = levels.iter().map(Vec::as_slice).collect();
        Hierarchy::try_from_levels(&views)
    })?;
    Ok(h.height())
}

/// Partition rows into equivalence classes of their generalized quasi-identifiers.
///
/// Args:
///     columns: one uint32 buffer of leaf codes per quasi-identifier.
///     hierarchies: per column, its hierarchy as a list of uint32 level-code buffers
///         (see ``validate_hierarchy``).
///     levels: the level each column is generalized to.
///     weights: optional uint64 buffer of row multiplicities.
///
/// Returns:
///     (class_of_row, sizes): little-endian uint32 and uint64 bytes.
///
/// Raises:
///     HierarchyError, InvalidInputError: unusable hierarchies or inconsistent inputs.
#[pyfunction]
#[pyo3(signature = (columns, hierarchies, levels, weights=None))]
pub(crate) fn groupify<'py>(
    py: Python<'py>,
    columns: Vec<PyBuffer<u32>>,
    hierarchies: Vec<Vec<PyBuffer<u32>>>,
    levels: Vec<usize>,
    weights: Option<PyBuffer<u64>>,
) -> PyResult<(Bound<'py, PyBytes>, Bound<'py, PyBytes>)> {
    let columns: Vec<Vec<u32>> = columns
        .iter()
        .map(|b| read(py, "columns", b))
        .collect::<PyResult<_>>()?;
    let hierarchies = read_hierarchies(py, &hierarchies)?;
    let weights = weights.map(|b| read(py, "weights", &b)).transpose()?;
    let classes = run(py, || {
        let built = build_hierarchies(&hierarchies)?;
        let refs: Vec<&Hierarchy> = built.iter().collect();
        let cols: Vec<&[u32]> = columns.iter().map(Vec::as_slice).collect();
        kanon_core::groupify(&cols, &refs, &levels, weights.as_deref())
    })?;
    Ok((
        le_bytes(py, &classes.class_of_row, u32::to_le_bytes),
        le_bytes(py, &classes.sizes, u64::to_le_bytes),
    ))
}

/// Anonymize distinct tuples with the forest algorithm (local recoding).
///
/// Args:
///     tuples: uint32 buffer, row-major leaf codes, ``m`` per tuple.
///     m: number of quasi-identifiers.
///     counts: uint64 buffer, how many rows carry each tuple.
///     hierarchies: per quasi-identifier, its hierarchy as a list of uint32 level-code
///         buffers (see ``validate_hierarchy``).
///     weights: per quasi-identifier, a positive weight.
///     cost: ``'ncp'`` (normalized certainty penalty of the node), ``'height'`` (the
///         paper's level / height) or ``'range'`` (range labels: the NCP of the group's
///         observed values, ``[lo..hi]`` of the keys of a numeric quasi-identifier, the
///         set of distinct values of a categorical one).
///     k, seed: the privacy parameter and the visiting-order seed (0 = value order).
///     improve: the improvement passes: ``'full'`` (every pass, in rounds until nothing
///         changes), ``'fast'`` (one eject, split and search pass over fewer near tuples)
///         or ``'none'``.
///     keys: with ``cost='range'`` only: per quasi-identifier, a float64 buffer with the
///         numeric value of every leaf (in leaf-code order; NaN for a missing value) or
///         None for a categorical one. None (the default): every quasi-identifier is
///         categorical.
///     blocks: ``(cut_keys, spans, block_size)``: above ``block_size`` rows, cut the
///         tuples into blocks of at most that many rows by Mondrian cuts (per attribute a
///         float64 buffer of leaf keys, and the table-wide spans; see
///         ``mondrian_partition``) and run the forest in every block, in parallel.
///
/// Returns:
///     (group_of_row, groups, levels, stats): group ids per row (rows numbered tuple by
///     tuple, copy by copy) as uint32 bytes; the group count; the level per group and
///     attribute (row-major uint32 bytes; the lowest common hierarchy level, whatever the
///     cost); a dict of counters (``cost`` is the cost the kernel minimized).
///
/// Raises:
///     InvalidInputError, HierarchyError: inconsistent inputs (a key count that is not
///         the leaf count, an infinite key), k out of range.
///     ValueError: an unknown cost or improve, or keys with a cost other than ``'range'``.
#[pyfunction]
#[pyo3(signature = (tuples, m, counts, hierarchies, weights, cost, k, seed=0, improve="full",
                    keys=None, blocks=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn forest_anonymize<'py>(
    py: Python<'py>,
    tuples: PyBuffer<u32>,
    m: usize,
    counts: PyBuffer<u64>,
    hierarchies: Vec<Vec<PyBuffer<u32>>>,
    weights: Vec<f64>,
    cost: &str,
    k: u64,
    seed: u64,
    improve: &str,
    keys: Option<Vec<Option<PyBuffer<f64>>>>,
    blocks: Option<(Vec<PyBuffer<f64>>, Vec<f64>, u64)>,
) -> PyResult<Grouping<'py>> {
    let kind = match cost {
        "range" => LevelCost::Range,
        "ncp" | "height" => level_cost(cost)?,
        other => {
            return Err(PyValueError::new_err(format!(
                "cost must be 'ncp', 'height' or 'range', got {other:?}"
            )))
        }
    };
    let improve = match improve {
        "full" => Some(Effort::Full),
        "fast" => Some(Effort::Fast),
        "none" => None,
        other => {
            return Err(PyValueError::new_err(format!(
                "improve must be 'full', 'fast' or 'none', got {other:?}"
            )))
        }
    };
    if keys.is_some() && kind != LevelCost::Range {
        return Err(PyValueError::new_err(format!(
            "keys are only used with cost='range', got cost={cost:?}"
        )));
    }
    let keys: Vec<Option<Vec<f64>>> = match keys {
        Some(keys) => keys
            .iter()
            .map(|b| b.as_ref().map(|b| read(py, "keys", b)).transpose())
            .collect::<PyResult<_>>()?,
        None => vec![None; hierarchies.len()],
    };
    let tuples = read(py, "tuples", &tuples)?;
    let counts = read(py, "counts", &counts)?;
    let hierarchies = read_hierarchies(py, &hierarchies)?;
    let blocks = match blocks {
        Some((cut_keys, spans, size)) => Some((
            cut_keys
                .iter()
                .map(|b| read(py, "cut keys", b))
                .collect::<PyResult<Vec<_>>>()?,
            spans,
            size,
        )),
        None => None,
    };
    let options = ForestOptions { k, seed, improve };
    let release = run(py, || {
        progress::cancelled("forest")?;
        let model = if kind == LevelCost::Range {
            CostModel::try_new_range(build_hierarchies(&hierarchies)?, weights, keys)?
        } else {
            cost_model(&hierarchies, weights, kind)?
        };
        let report = |rows: u64| progress::advance(rows);
        match &blocks {
            Some((cut_keys, spans, size)) => blocked_forest(
                &tuples,
                m,
                &counts,
                cut_keys,
                spans,
                &model,
                &options,
                *size,
                Some(&report),
            ),
            None => {
                let release = anonymize(&tuples, m, &counts, &model, &options)?;
                progress::advance(counts.iter().sum());
                Ok(release)
            }
        }
    })?;
    let s = &release.stats;
    let d = PyDict::new(py);
    d.set_item("tuples", s.tuples)?;
    d.set_item("vertices", s.vertices)?;
    d.set_item("own_groups", s.own_groups)?;
    d.set_item("cuts", s.cuts.to_vec())?;
    d.set_item("repaired", s.repaired)?;
    d.set_item("cost_before_improve", s.cost_before_improve)?;
    d.set_item("cost", s.cost)?;
    Ok((
        le_bytes(py, &release.group_of_row, u32::to_le_bytes),
        release.groups,
        le_bytes(py, &release.levels, u32::to_le_bytes),
        d,
    ))
}

/// A grouping handed back to Python: group of every row (uint32 bytes), number of groups,
/// level of every group and attribute (uint32 bytes, row-major) and counters.
type Grouping<'py> = (
    Bound<'py, PyBytes>,
    usize,
    Bound<'py, PyBytes>,
    Bound<'py, PyDict>,
);

/// Copy the level-code buffers of every hierarchy.
pub(crate) fn read_hierarchies(
    py: Python<'_>,
    hierarchies: &[Vec<PyBuffer<u32>>],
) -> PyResult<Vec<Vec<Vec<u32>>>> {
    hierarchies
        .iter()
        .map(|h| h.iter().map(|b| read(py, "hierarchies", b)).collect())
        .collect()
}

/// Build hierarchies from their level-code buffers (level 0 first).
pub(crate) fn build_hierarchies(
    hierarchies: &[Vec<Vec<u32>>],
) -> Result<Vec<Hierarchy>, KernelError> {
    hierarchies
        .iter()
        .map(|h| {
            let views: Vec<&[u32]> = h.iter().map(Vec::as_slice).collect();
            Hierarchy::try_from_levels(&views)
        })
        .collect()
}

/// Build the cost model of the forest kernels from level-code buffers.
fn cost_model(
    hierarchies: &[Vec<Vec<u32>>],
    weights: Vec<f64>,
    kind: LevelCost,
) -> Result<CostModel, KernelError> {
    CostModel::try_new(build_hierarchies(hierarchies)?, weights, kind)
}

fn level_cost(cost: &str) -> PyResult<LevelCost> {
    match cost {
        "ncp" => Ok(LevelCost::Ncp),
        "height" => Ok(LevelCost::Height),
        other => Err(PyValueError::new_err(format!(
            "cost must be 'ncp' or 'height', got {other:?}"
        ))),
    }
}

/// Continuous mode: place new rows (group ``0xFFFFFFFF``) without moving existing ones.
///
/// Args:
///     tuples, m, hierarchies, weights, cost: as ``forest_anonymize``.
///     tuple_of_row: uint32 buffer, the tuple of every row.
///     group_of_row: uint32 buffer, the group of every existing row (``0..groups``),
///         ``0xFFFFFFFF`` for a new row.
///     groups: number of existing groups (each holds at least k rows).
///     k: the privacy parameter.
///
/// Returns:
///     (group_of_row, groups, levels, stats) as ``forest_anonymize``; existing groups
///     keep their ids, new groups follow.
///
/// Raises:
///     InvalidInputError, HierarchyError: inconsistent inputs.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub(crate) fn forest_extend<'py>(
    py: Python<'py>,
    tuples: PyBuffer<u32>,
    m: usize,
    hierarchies: Vec<Vec<PyBuffer<u32>>>,
    weights: Vec<f64>,
    cost: &str,
    tuple_of_row: PyBuffer<u32>,
    group_of_row: PyBuffer<u32>,
    groups: usize,
    k: usize,
) -> PyResult<Grouping<'py>> {
    let kind = level_cost(cost)?;
    let tuples = read(py, "tuples", &tuples)?;
    let tuple_of_row = read(py, "tuple_of_row", &tuple_of_row)?;
    let group_of_row = read(py, "group_of_row", &group_of_row)?;
    let hierarchies = read_hierarchies(py, &hierarchies)?;
    let e = run(py, || {
        let model = cost_model(&hierarchies, weights, kind)?;
        extend(&tuples, m, &model, &tuple_of_row, &group_of_row, groups, k)
    })?;
    let d = PyDict::new(py);
    d.set_item("joined", e.joined)?;
    d.set_item("new_groups", e.new_groups)?;
    Ok((
        le_bytes(py, &e.group_of_row, u32::to_le_bytes),
        e.groups,
        le_bytes(py, &e.levels, u32::to_le_bytes),
        d,
    ))
}

/// Sensitive entries of the histogram: tuple indices, codes, rows, number of codes.
type SensitiveEntries = (PyBuffer<u32>, PyBuffer<u32>, PyBuffer<u64>, usize);

/// Optimal full-domain generalization of a histogram of tuples (method ``'optimal'``).
///
/// Args:
///     low, high: uint64 buffers, the low and high 64 bits of every distinct tuple's
///         packed leaf codes: attribute 0 in the lowest bits, each attribute in just
///         enough bits for its leaves' codes (0 bits for a single leaf).
///     counts: uint64 buffer, rows per tuple.
///     hierarchies: per attribute, one uint32 buffer of label codes per level.
///     weights: weight per attribute.
///     node_loss: per attribute and level, a float64 buffer with the loss of every label
///         (for metric ``'loss'``); an empty list for the normalized certainty penalty
///         by leaf counts.
///     metric: ``'loss'``, ``'height'``, ``'nue'``, ``'nue_nonmonotonic'``, ``'dm'``,
///         ``'dm_star'`` or ``'aecs'``.
///     k: smallest class size.
///     max_suppressed: rows that may be suppressed.
///     keep_suppressed: whether suppressed rows stay in the release (one class of
///         ``*``, which must then hold at least k rows).
///     min_level, max_level: level bounds per attribute.
///     sensitive: (tuple indices, sensitive codes, rows, number of codes) of the
///         sensitive entries (every tuple's rows split by sensitive value), for
///         l-diversity and t-closeness.
///     sensitive_hierarchy: one uint32 buffer per level over the sensitive codes, for
///         ``t_distance='hierarchical'``.
///     population: (label paths, rows) of the population for δ-presence: per row and
///         attribute, the label code at every level (``2**32 - 1``: absent).
///     l, l_diversity, c: l-diversity (``'distinct'``, ``'entropy'``, ``'recursive'``
///         with c).
///     t, t_distance: t-closeness (``'equal'``, ``'ordered'``, ``'hierarchical'``).
///     delta: (δ_min, δ_max) of δ-presence.
///
/// Returns:
///     (levels, suppressed, stats): the level per attribute, a uint32 buffer of the
///     leaf codes of the tuples suppressed (``m`` per tuple, in tuple order), and the
///     search's counters and the optimum's cost.
///
/// Raises:
///     InvalidInputError: inconsistent inputs, or no node satisfies the model.
#[pyfunction]
#[pyo3(signature = (low, high, counts, hierarchies, weights, node_loss, metric, k,
                    max_suppressed, keep_suppressed, min_level, max_level, *, sensitive=None,
                    sensitive_hierarchy=None, population=None, l=None,
                    l_diversity="distinct", c=None, t=None, t_distance="equal",
                    delta=None))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn lattice_optimal<'py>(
    py: Python<'py>,
    low: PyBuffer<u64>,
    high: PyBuffer<u64>,
    counts: PyBuffer<u64>,
    hierarchies: Vec<Vec<PyBuffer<u32>>>,
    weights: Vec<f64>,
    node_loss: Vec<Vec<PyBuffer<f64>>>,
    metric: &str,
    k: u64,
    max_suppressed: u64,
    keep_suppressed: bool,
    min_level: Vec<u32>,
    max_level: Vec<u32>,
    sensitive: Option<SensitiveEntries>,
    sensitive_hierarchy: Option<Vec<PyBuffer<u32>>>,
    population: Option<(PyBuffer<u32>, PyBuffer<u64>)>,
    l: Option<f64>,
    l_diversity: &str,
    c: Option<f64>,
    t: Option<f64>,
    t_distance: &str,
    delta: Option<(f64, f64)>,
) -> PyResult<(Vec<u32>, Bound<'py, PyBytes>, Bound<'py, PyDict>)> {
    let l_diversity = l_diversity_of(l, l_diversity, c)?;
    if !matches!(t_distance, "equal" | "ordered" | "hierarchical") {
        return Err(PyValueError::new_err(format!(
            "t_distance must be 'equal', 'ordered' or 'hierarchical', got {t_distance:?}"
        )));
    }
    let (sensitive_tuples, sensitive_codes, sensitive_counts, sensitive_values) = match &sensitive {
        Some((tuples, codes, counts, values)) => (
            read(py, "sensitive tuples", tuples)?,
            read(py, "sensitive codes", codes)?,
            read(py, "sensitive counts", counts)?,
            *values,
        ),
        None => (Vec::new(), Vec::new(), Vec::new(), 0),
    };
    let sensitive_levels = match &sensitive_hierarchy {
        Some(levels) => Some(read_hierarchies(py, std::slice::from_ref(levels))?),
        None => None,
    };
    let (population_paths, population_counts) = match &population {
        Some((paths, counts)) => (
            read(py, "population paths", paths)?,
            read(py, "population counts", counts)?,
        ),
        None => (Vec::new(), Vec::new()),
    };
    let metric = match metric {
        "loss" => Metric::Loss,
        "height" => Metric::Height,
        "nue" => Metric::Nue,
        "nue_nonmonotonic" => Metric::NueNonMonotonic,
        "dm" => Metric::Dm,
        "dm_star" => Metric::DmStar,
        "aecs" => Metric::Aecs,
        other => {
            return Err(PyValueError::new_err(format!(
                "metric must be one of 'loss', 'height', 'nue', 'nue_nonmonotonic', 'dm', \
                 'dm_star', 'aecs', got {other:?}"
            )))
        }
    };
    let low = read(py, "low", &low)?;
    let high = read(py, "high", &high)?;
    let counts = read(py, "counts", &counts)?;
    let hierarchies = read_hierarchies(py, &hierarchies)?;
    let node_loss: Vec<Vec<Vec<f64>>> = node_loss
        .iter()
        .map(|levels| levels.iter().map(|b| read(py, "node_loss", b)).collect())
        .collect::<PyResult<_>>()?;
    let options = LatticeOptions {
        k,
        max_suppressed,
        keep_suppressed,
        min_level,
        max_level,
        weights,
        metric,
        node_loss,
    };
    let m = hierarchies.len();
    let (best, tuples, seconds) = run(py, || {
        let built = build_hierarchies(&hierarchies)?;
        let tuples = unpack_keys(&low, &high, &built)?;
        let t_closeness = match t {
            None => None,
            Some(t) => Some((
                t,
                ground_distance(
                    "optimal",
                    t_distance,
                    sensitive_levels.as_ref().map(|l| &l[0]),
                )?,
            )),
        };
        let input = ModelInput {
            models: PrivacyModels {
                l_diversity,
                t_closeness,
                delta_presence: delta,
            },
            sensitive_tuples: &sensitive_tuples,
            sensitive_codes: &sensitive_codes,
            sensitive_counts: &sensitive_counts,
            sensitive_values,
            population_paths: &population_paths,
            population_counts: &population_counts,
        };
        let clock = std::time::Instant::now();
        let best = optimal_with(&tuples, m, &counts, &built, &options, &input)?;
        Ok((best, tuples, clock.elapsed().as_secs_f64()))
    })?;
    let d = PyDict::new(py);
    d.set_item("seconds", seconds)?;
    d.set_item("cost", best.eval.cost)?;
    d.set_item("suppressed", best.eval.suppressed)?;
    d.set_item("classes", best.eval.classes)?;
    d.set_item("nodes", best.nodes)?;
    d.set_item("checked", best.checked)?;
    d.set_item("rolled_up", best.rolled_up)?;
    d.set_item("tagged", best.tagged)?;
    let suppressed: Vec<u8> = tuples
        .chunks_exact(m.max(1))
        .zip(&best.suppressed)
        .filter(|&(_, &s)| s)
        .flat_map(|(codes, _)| codes.iter().flat_map(|c| c.to_ne_bytes()))
        .collect();
    Ok((best.levels, PyBytes::new(py, &suppressed), d))
}

/// Sweeney's historic greedy algorithms (methods ``'datafly'`` and ``'mu_argus'``).
///
/// Args:
///     tuples: uint32 buffer, ``m`` leaf codes per distinct tuple.
///     m: number of quasi-identifiers (at most 64).
///     counts: uint64 buffer, rows per tuple.
///     hierarchies: per attribute, one uint32 buffer of label codes per level.
///     method: ``'datafly'`` or ``'mu_argus'``.
///     k: smallest class size.
///     max_suppressed: Datafly only: the rows its loop may leave in classes below k
///         (they are suppressed); None for Sweeney's rule, k rows. Must be None for
///         ``'mu_argus'``.
///     keep_suppressed: whether suppressed rows stay in the release (one class of
///         ``*``, which must then hold at least k rows).
///
/// Returns:
///     (levels, cells, suppressed, report): the level per attribute; per tuple, the
///     bitmask of its ``*`` cells (bit j for attribute j, all m bits for a suppressed
///     row) as little-endian uint64 bytes; one byte per tuple (1: the whole row is
///     suppressed); a dict with ``unprotected_rows``, ``unprotected_classes``,
///     ``suppressed_cells``, ``suppressed_rows``, ``topped_up_rows``, ``steps``,
///     ``classes`` (classes of the release: the labels at the levels, ``*`` for a
///     suppressed cell and at a hierarchy's top; the ``*`` class of suppressed rows
///     counts once, kept or not) and ``seconds``.
///
/// Raises:
///     InvalidInputError: inconsistent inputs, an unknown method, max_suppressed with
///         ``'mu_argus'``.
///     HierarchyError: a hierarchy that is not nested or has several roots.
#[pyfunction]
#[pyo3(signature = (tuples, m, counts, hierarchies, method, k, max_suppressed, keep_suppressed))]
#[allow(clippy::too_many_arguments)]
pub(crate) fn historic_release<'py>(
    py: Python<'py>,
    tuples: PyBuffer<u32>,
    m: usize,
    counts: PyBuffer<u64>,
    hierarchies: Vec<Vec<PyBuffer<u32>>>,
    method: &str,
    k: u64,
    max_suppressed: Option<u64>,
    keep_suppressed: bool,
) -> PyResult<HistoricOutput<'py>> {
    let invalid = |message: String| KernelError::InvalidArgument {
        kernel: "historic",
        message,
    };
    let datafly_method = match (method, max_suppressed) {
        ("datafly", _) => true,
        ("mu_argus", None) => false,
        ("mu_argus", Some(_)) => {
            return Err(to_py(
                py,
                &invalid(
                    "max_suppressed applies to method 'datafly' only; 'mu_argus' suppresses \
                     what its own rules leave below k"
                        .to_owned(),
                ),
            ))
        }
        (other, _) => {
            return Err(to_py(
                py,
                &invalid(format!(
                    "method must be 'datafly' or 'mu_argus', got {other:?}"
                )),
            ))
        }
    };
    let tuples = read(py, "tuples", &tuples)?;
    let counts = read(py, "counts", &counts)?;
    let hierarchies = read_hierarchies(py, &hierarchies)?;
    let (release, classes, seconds) = run(py, || {
        let built = build_hierarchies(&hierarchies)?;
        let clock = std::time::Instant::now();
        let release = if datafly_method {
            let limit = max_suppressed.unwrap_or(k);
            datafly(&tuples, m, &counts, &built, k, limit, keep_suppressed)?
        } else {
            mu_argus(&tuples, m, &counts, &built, k, keep_suppressed)?
        };
        let seconds = clock.elapsed().as_secs_f64();
        let classes = released_classes(&tuples, m, &counts, &built, &release);
        Ok((release, classes, seconds))
    })?;
    let r = &release.report;
    let d = PyDict::new(py);
    d.set_item("unprotected_rows", r.unprotected_rows)?;
    d.set_item("unprotected_classes", r.unprotected_classes)?;
    d.set_item("suppressed_cells", r.suppressed_cells)?;
    d.set_item("suppressed_rows", r.suppressed_rows)?;
    d.set_item("topped_up_rows", r.topped_up_rows)?;
    d.set_item("steps", r.steps)?;
    d.set_item("classes", classes)?;
    d.set_item("seconds", seconds)?;
    let flags: Vec<u8> = release.suppressed.iter().map(|&s| u8::from(s)).collect();
    Ok((
        release.levels,
        le_bytes(py, &release.cells, u64::to_le_bytes),
        PyBytes::new(py, &flags),
        d,
    ))
}

/// A historic release handed back to Python: levels, cell masks (uint64 bytes),
/// suppressed flags (one byte per tuple) and the report.
type HistoricOutput<'py> = (
    Vec<u32>,
    Bound<'py, PyBytes>,
    Bound<'py, PyBytes>,
    Bound<'py, PyDict>,
);

/// Classes of a historic release as its SQL shows them: per attribute the label at the
/// level, or `*` (one marker) for a suppressed cell and at the top of the hierarchy
/// (called on a release of the kernel, so `m` is at most 64 and every code is valid).
fn released_classes(
    tuples: &[u32],
    m: usize,
    counts: &[u64],
    hierarchies: &[Hierarchy],
    release: &HistoricRelease,
) -> usize {
    let star = u32::MAX;
    let mut keys: std::collections::HashSet<Vec<u32>> = std::collections::HashSet::new();
    for ((row, &cells), &c) in tuples.chunks_exact(m).zip(&release.cells).zip(counts) {
        if c == 0 {
            continue;
        }
        let key = row
            .iter()
            .enumerate()
            .map(|(j, &code)| {
                let level = release.levels[j] as usize;
                if cells & (1u64 << j) != 0 || level >= hierarchies[j].height() {
                    star
                } else {
                    hierarchies[j].generalize(level, code)
                }
            })
            .collect();
        keys.insert(key);
    }
    keys.len()
}

/// A whole number given as a float (l of distinct and recursive l-diversity).
pub(crate) fn whole(x: f64, name: &str) -> PyResult<u64> {
    if x.fract() == 0.0 && x >= 1.0 && x < 2f64.powi(63) {
        Ok(x as u64)
    } else {
        Err(PyValueError::new_err(format!(
            "{name} must be a positive whole number, got {x}"
        )))
    }
}
