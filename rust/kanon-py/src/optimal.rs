//! The optimal full-domain generalization: ``kanon_optimal`` (one histogram per row).

use arrow_array::{Array, UInt64Array};
use kanon_core::lattice::{optimal_keys, unpack_keys, LatticeOptions, Metric, ModelInput, Optimum};
use kanon_core::KernelError;
use pyo3::prelude::*;
use serde::Deserialize;

use crate::convert::{self, array, run, Column, ListColumn, NestedColumn, F64, U32, U64};
use crate::models::{self, ModelData, ModelOptions};

const KERNEL: &str = "optimal";

/// The utility metrics of the lattice search.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum MetricName {
    Loss,
    Height,
    Nue,
    NueNonmonotonic,
    Dm,
    DmStar,
    Aecs,
}

impl From<MetricName> for Metric {
    fn from(name: MetricName) -> Self {
        match name {
            MetricName::Loss => Self::Loss,
            MetricName::Height => Self::Height,
            MetricName::Nue => Self::Nue,
            MetricName::NueNonmonotonic => Self::NueNonMonotonic,
            MetricName::Dm => Self::Dm,
            MetricName::DmStar => Self::DmStar,
            MetricName::Aecs => Self::Aecs,
        }
    }
}

/// The options of ``kanon_optimal`` (its JSON argument).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Options {
    /// Number of quasi-identifiers.
    m: usize,
    metric: MetricName,
    /// Rows that may be suppressed.
    max_suppressed: u64,
    /// Whether suppressed rows stay in the release (one class of ``*``).
    keep_suppressed: bool,
    /// Level bounds per quasi-identifier.
    min_level: Vec<u32>,
    max_level: Vec<u32>,
    #[serde(default)]
    models: ModelOptions,
}

/// One histogram's inputs, borrowed from the Arrow columns.
struct Histogram {
    low: UInt64Array,
    high: UInt64Array,
    counts: UInt64Array,
    hierarchies: Vec<Vec<arrow_array::UInt32Array>>,
    options: LatticeOptions,
    models: ModelOptions,
    data: ModelData,
}

/// The search's counters and the optimum's cost.
struct Report {
    seconds: f64,
    cost: f64,
    suppressed: u64,
    classes: usize,
    nodes: usize,
    checked: usize,
    rolled_up: usize,
    tagged: usize,
}

/// SQL ``kanon_optimal(histogram, hierarchies, weights, node_loss, k, options,
/// sensitive_tuples, sensitive_codes, sensitive_counts, sensitive_hierarchy,
/// population_paths, population_counts)``: the optimal full-domain generalization of one
/// histogram per row.
///
/// Args:
///     histogram: ``STRUCT(lo UBIGINT, hi UBIGINT, n UBIGINT)[]``: the distinct tuples,
///         each as its ``m`` leaf codes packed into 128 bits (attribute 0 in the lowest
///         bits, each in just enough bits for its leaves) and its row count; tuple ``t``
///         is entry ``t``.
///     hierarchies: ``UINTEGER[][][]``, per attribute and level the label code of every
///         leaf.
///     weights: ``DOUBLE[]``, weight per attribute.
///     node_loss: ``DOUBLE[][][]``, per attribute and level the loss of every label (for
///         metric ``'loss'``); empty for the normalized certainty penalty by leaf counts.
///     k: ``UBIGINT``, the smallest class size.
///     options: JSON: ``m``, ``metric`` (``'loss'``, ``'height'``, ``'nue'``,
///         ``'nue_nonmonotonic'``, ``'dm'``, ``'dm_star'`` or ``'aecs'``),
///         ``max_suppressed``, ``keep_suppressed``, ``min_level``, ``max_level`` and
///         ``models`` (``l``, ``l_diversity``, ``c``, ``t``, ``t_distance``,
///         ``delta_min``, ``delta_max``).
///     sensitive_*, population_*: the data of the models (sensitive entries: per entry
///         its tuple, code and rows; the sensitive hierarchy; the population's label
///         paths, ``2**32 - 1`` for absent, and rows); empty lists without.
///
/// Returns:
///     Per row (NULL when an argument is NULL) a struct: ``levels`` the level of every
///     attribute, ``s`` the leaf codes of the tuples suppressed (one list each), and
///     ``stats`` (seconds, cost, suppressed rows, classes, lattice nodes, nodes checked,
///     rolled up and tagged).
///
/// Raises:
///     InvalidInputError: inconsistent inputs, unknown options, or no node satisfies the
///         models.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub(crate) fn optimal<'py>(
    py: Python<'py>,
    histogram: Column,
    hierarchies: Column,
    weights: Column,
    node_loss: Column,
    k: Column,
    options: Column,
    sensitive_tuples: Column,
    sensitive_codes: Column,
    sensitive_counts: Column,
    sensitive_hierarchy: Column,
    population_paths: Column,
    population_counts: Column,
) -> PyResult<Bound<'py, PyAny>> {
    let columns = [
        array(&histogram),
        array(&hierarchies),
        array(&weights),
        array(&node_loss),
        array(&k),
        array(&options),
        array(&sensitive_tuples),
        array(&sensitive_codes),
        array(&sensitive_counts),
        array(&sensitive_hierarchy),
        array(&population_paths),
        array(&population_counts),
    ];
    let list = |name, i: usize| convert::lists(py, KERNEL, name, columns[i].as_ref());
    let (histogram, hierarchies, weights, node_loss) = (
        list("histogram", 0)?,
        list("hierarchies", 1)?,
        list("weights", 2)?,
        list("node_loss", 3)?,
    );
    let model_columns = models::lists(
        py,
        KERNEL,
        [
            columns[6].as_ref(),
            columns[7].as_ref(),
            columns[8].as_ref(),
            columns[9].as_ref(),
            columns[10].as_ref(),
            columns[11].as_ref(),
        ],
    )?;
    let n = columns[0].len();
    let mut levels = ListColumn::<U32>::new();
    let mut s = NestedColumn::<U32>::new();
    let mut reports: Vec<Option<Report>> = Vec::with_capacity(n);
    let mut valid = Vec::with_capacity(n);
    for i in 0..n {
        if !convert::all_valid(&columns, i) {
            levels.push(None);
            s.push(None);
            reports.push(None);
            valid.push(false);
            continue;
        }
        let options: Options = convert::options(py, KERNEL, columns[5].as_ref(), i)?;
        models::check(py, KERNEL, &options.models)?;
        let entries = histogram.value(i);
        let Some(entries) = entries.as_any().downcast_ref::<arrow_array::StructArray>() else {
            return Err(convert::invalid(
                py,
                KERNEL,
                "argument 'histogram' must be a list of STRUCT(lo, hi, n)".to_owned(),
            ));
        };
        let field = |name: &str| match entries.column_by_name(name) {
            Some(c) => convert::values::<U64>(py, KERNEL, "histogram", c.as_ref()),
            None => Err(convert::invalid(
                py,
                KERNEL,
                format!("argument 'histogram' has no field '{name}'"),
            )),
        };
        let m = options.m;
        let pack = Histogram {
            low: field("lo")?,
            high: field("hi")?,
            counts: field("n")?,
            hierarchies: convert::hierarchy_levels(py, KERNEL, hierarchies, i)?,
            options: LatticeOptions {
                k: convert::scalar_u64(py, KERNEL, "k", columns[4].as_ref(), i)?,
                max_suppressed: options.max_suppressed,
                keep_suppressed: options.keep_suppressed,
                min_level: options.min_level,
                max_level: options.max_level,
                weights: convert::row::<F64>(py, KERNEL, "weights", weights, i)?
                    .values()
                    .to_vec(),
                metric: options.metric.into(),
                node_loss: node_losses(py, node_loss, i)?,
            },
            data: ModelData::read(py, KERNEL, model_columns, i, &options.models)?,
            models: options.models,
        };
        let (best, suppressed, seconds) = run(py, || search(&pack))?;
        levels.push(Some(&best.levels));
        s.push_chunks(Some(&suppressed), m);
        reports.push(Some(Report {
            seconds,
            cost: best.eval.cost,
            suppressed: best.eval.suppressed,
            classes: best.eval.classes,
            nodes: best.nodes,
            checked: best.checked,
            rolled_up: best.rolled_up,
            tagged: best.tagged,
        }));
        valid.push(true);
    }
    let count = |f: fn(&Report) -> usize| convert::u64_field(&reports, move |r| Some(f(r) as u64));
    let stats = convert::struct_of(
        vec![
            ("seconds", convert::f64_field(&reports, |r| Some(r.seconds))),
            ("cost", convert::f64_field(&reports, |r| Some(r.cost))),
            (
                "suppressed",
                convert::u64_field(&reports, |r| Some(r.suppressed)),
            ),
            ("classes", count(|r| r.classes)),
            ("nodes", count(|r| r.nodes)),
            ("checked", count(|r| r.checked)),
            ("rolled_up", count(|r| r.rolled_up)),
            ("tagged", count(|r| r.tagged)),
        ],
        &valid,
    );
    let out = convert::struct_of(
        vec![
            ("levels", levels.finish()),
            ("s", s.finish()),
            ("stats", stats),
        ],
        &valid,
    );
    convert::to_python(py, out)
}

/// The node losses of row `i`: per attribute and level, the loss of every label.
fn node_losses(
    py: Python<'_>,
    node_loss: &arrow_array::ListArray,
    i: usize,
) -> PyResult<Vec<Vec<Vec<f64>>>> {
    let attributes = node_loss.value(i);
    let attributes = convert::lists(py, KERNEL, "node_loss", &attributes)?;
    (0..attributes.len())
        .map(|j| {
            Ok(
                convert::rows::<F64>(py, KERNEL, "node_loss", attributes, j)?
                    .iter()
                    .map(|a| a.values().to_vec())
                    .collect(),
            )
        })
        .collect()
}

/// Search the lattice of one histogram (GIL released): the optimum, the leaf codes of
/// its suppressed tuples (few: at most the rows allowed) and the search's seconds.
fn search(pack: &Histogram) -> Result<(Optimum, Vec<u32>, f64), KernelError> {
    let built = convert::hierarchies(&pack.hierarchies)?;
    let (low, high) = (pack.low.values(), pack.high.values());
    let (sensitive_tuples, sensitive_codes, sensitive_counts) = pack.data.entries();
    let (population_paths, population_counts) = match &pack.data.population {
        Some((paths, counts)) => (paths.values().as_ref(), counts.values().as_ref()),
        None => (&[][..], &[][..]),
    };
    let input = ModelInput {
        models: pack.models.build(KERNEL, &pack.data)?,
        sensitive_tuples,
        sensitive_codes,
        sensitive_counts,
        sensitive_values: pack.data.values,
        population_paths,
        population_counts,
    };
    let clock = std::time::Instant::now();
    let best = optimal_keys(
        low,
        high,
        pack.counts.values(),
        &built,
        &pack.options,
        &input,
    )?;
    let seconds = clock.elapsed().as_secs_f64();
    let hidden = |half: &[u64]| -> Vec<u64> {
        half.iter()
            .zip(&best.suppressed)
            .filter(|&(_, &hidden)| hidden)
            .map(|(&key, _)| key)
            .collect()
    };
    let suppressed = unpack_keys(&hidden(low), &hidden(high), &built)?;
    Ok((best, suppressed, seconds))
}
