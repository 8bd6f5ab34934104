//! The privacy statistics of a partition: ``kanon_class_stats`` (``kanon_check``).

use arrow_array::{Array, ListArray, StructArray, UInt32Array, UInt64Array};
use kanon_core::models::THRESHOLD_MODELS;
use kanon_core::{ClassStats, GroundDistance, Hierarchy, KernelError, StatsOptions};
use pyo3::prelude::*;
use serde::Deserialize;

use crate::convert::{self, array, run, Column, U32, U64};

const KERNEL: &str = "class_stats";

fn default_risk_threshold() -> f64 {
    0.2
}

/// The options of ``kanon_class_stats`` (its JSON argument).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Options {
    /// Whether the classes carry sensitive histograms (``entries``).
    #[serde(default)]
    sensitive: bool,
    /// Whether the classes carry population sizes (``pop``), for δ-presence.
    #[serde(default)]
    population: bool,
    /// The ordered ground distance for t-closeness (else equal distance).
    #[serde(default)]
    ordered: bool,
    /// l of recursive (c,l)-diversity (None: the distinct l).
    #[serde(default)]
    recursive_l: Option<u64>,
    /// c of recursive (c,l)-diversity to test.
    #[serde(default)]
    recursive_c: Option<f64>,
    /// Records with a risk above this count as at risk.
    #[serde(default = "default_risk_threshold")]
    risk_threshold: f64,
    /// The sensitive values' hierarchy (per level, the label code of every leaf; the
    /// entries' codes are leaf codes) for the hierarchical ground distance.
    #[serde(default)]
    hierarchy: Option<Vec<Vec<u32>>>,
}

/// One partition's inputs, borrowed from the Arrow columns.
struct Partition {
    counts: UInt64Array,
    offsets: Option<Vec<u64>>,
    sensitive: Option<UInt32Array>,
    population: Option<UInt64Array>,
    hierarchy: Option<Vec<Vec<u32>>>,
    ordered: bool,
    recursive_l: Option<u64>,
    recursive_c: Option<f64>,
    risk_threshold: f64,
}

/// SQL ``kanon_class_stats(classes, options)``: the statistics of one packed partition
/// per row.
///
/// Args:
///     classes: ``STRUCT(n UBIGINT, pop UBIGINT, entries STRUCT(c UINTEGER,
///         n UBIGINT)[])[]``: per equivalence class its size ``n``, its population size
///         ``pop`` and its sensitive histogram ``entries`` (NULL: an empty table).
///     options: JSON: ``sensitive``, ``population``, ``ordered``, ``recursive_l``,
///         ``recursive_c``, ``risk_threshold`` and, for the hierarchical ground
///         distance, ``hierarchy``.
///
/// Returns:
///     Per row (NULL when ``options`` is NULL) the struct of statistics: k, classes,
///     rows, l_distinct, l_entropy, recursive_l, recursive_c, recursive_ok, t,
///     prosecutor_max, prosecutor_avg, prosecutor_at_risk, marketer, journalist_max,
///     journalist_avg, journalist_at_risk, delta_min, delta_max, then the worst
///     measure of each threshold model (``kanon_core::models::THRESHOLD_MODELS``).
///
/// Raises:
///     InvalidInputError: inconsistent inputs (``ordered`` with ``hierarchy`` included),
///         unknown options.
///     HierarchyError: a hierarchy that is not nested or has several roots.
#[pyfunction]
pub(crate) fn class_stats<'py>(
    py: Python<'py>,
    classes: Column,
    options: Column,
) -> PyResult<Bound<'py, PyAny>> {
    let (classes, options) = (array(&classes), array(&options));
    let lists = convert::lists(py, KERNEL, "classes", classes.as_ref())?;
    let n = options.len();
    let mut rows: Vec<Option<ClassStats>> = Vec::with_capacity(n);
    for i in 0..n {
        if options.is_null(i) {
            rows.push(None);
            continue;
        }
        let o: Options = convert::options(py, KERNEL, options.as_ref(), i)?;
        let partition = if lists.is_valid(i) {
            read(py, lists, i, o)?
        } else {
            // list() over no rows: an empty table, with the default options.
            Partition {
                counts: UInt64Array::from(Vec::<u64>::new()),
                offsets: None,
                sensitive: None,
                population: None,
                hierarchy: None,
                ordered: false,
                recursive_l: None,
                recursive_c: None,
                risk_threshold: default_risk_threshold(),
            }
        };
        rows.push(Some(run(py, || statistics(&partition))?));
    }
    let valid: Vec<bool> = rows.iter().map(Option::is_some).collect();
    let u = |f: fn(&ClassStats) -> Option<u64>| convert::u64_field(&rows, f);
    let f = |f: fn(&ClassStats) -> Option<f64>| convert::f64_field(&rows, f);
    let mut columns = vec![
        ("k", u(|s| Some(s.k))),
        ("classes", u(|s| Some(s.classes))),
        ("rows", u(|s| Some(s.rows))),
        ("l_distinct", u(|s| s.l_distinct)),
        ("l_entropy", f(|s| s.l_entropy)),
        ("recursive_l", u(|s| s.recursive_l)),
        ("recursive_c", f(|s| s.recursive_c)),
        (
            "recursive_ok",
            convert::bool_field(&rows, |s| s.recursive_ok),
        ),
        ("t", f(|s| s.t)),
        ("prosecutor_max", f(|s| Some(s.prosecutor_max))),
        ("prosecutor_avg", f(|s| Some(s.prosecutor_avg))),
        ("prosecutor_at_risk", f(|s| Some(s.prosecutor_at_risk))),
        ("marketer", f(|s| Some(s.marketer))),
        ("journalist_max", f(|s| s.journalist_max)),
        ("journalist_avg", f(|s| s.journalist_avg)),
        ("journalist_at_risk", f(|s| s.journalist_at_risk)),
        ("delta_min", f(|s| s.delta_min)),
        ("delta_max", f(|s| s.delta_max)),
    ];
    for (i, model) in THRESHOLD_MODELS.iter().enumerate() {
        columns.push((model.name, convert::f64_field(&rows, |s| s.thresholds[i])));
    }
    let out = convert::struct_of(columns, &valid);
    convert::to_python(py, out)
}

/// The classes of row `i`: sizes, and the population sizes and sensitive entries that
/// the options ask for.
fn read(py: Python<'_>, lists: &ListArray, i: usize, o: Options) -> PyResult<Partition> {
    let classes = lists.value(i);
    let Some(classes) = classes.as_any().downcast_ref::<StructArray>() else {
        return Err(convert::invalid(
            py,
            KERNEL,
            "argument 'classes' must be a list of STRUCT(n, pop, entries)".to_owned(),
        ));
    };
    let field = |name: &str| {
        classes.column_by_name(name).ok_or_else(|| {
            convert::invalid(
                py,
                KERNEL,
                format!("argument 'classes' has no field '{name}'"),
            )
        })
    };
    let counts = convert::values::<U64>(py, KERNEL, "counts", field("n")?.as_ref())?;
    let population = if o.population {
        Some(convert::values::<U64>(
            py,
            KERNEL,
            "population",
            field("pop")?.as_ref(),
        )?)
    } else {
        None
    };
    let mut partition = Partition {
        counts,
        offsets: None,
        sensitive: None,
        population,
        hierarchy: None,
        ordered: o.ordered,
        recursive_l: o.recursive_l,
        recursive_c: o.recursive_c,
        risk_threshold: o.risk_threshold,
    };
    if !o.sensitive {
        return Ok(partition);
    }
    let entries = convert::lists(py, KERNEL, "entries", field("entries")?.as_ref())?;
    let bounds = entries.value_offsets();
    let (first, last) = (bounds[0], bounds[bounds.len() - 1]);
    let flat = entries
        .values()
        .slice(first as usize, (last - first) as usize);
    let Some(flat) = flat.as_any().downcast_ref::<StructArray>() else {
        return Err(convert::invalid(
            py,
            KERNEL,
            "argument 'entries' must be a list of STRUCT(c, n)".to_owned(),
        ));
    };
    let entry = |name: &str| {
        flat.column_by_name(name).ok_or_else(|| {
            convert::invalid(
                py,
                KERNEL,
                format!("argument 'entries' has no field '{name}'"),
            )
        })
    };
    partition.counts = convert::values::<U64>(py, KERNEL, "counts", entry("n")?.as_ref())?;
    partition.sensitive = Some(convert::values::<U32>(
        py,
        KERNEL,
        "sensitive",
        entry("c")?.as_ref(),
    )?);
    partition.offsets = Some(bounds.iter().map(|&b| (b - first) as u64).collect());
    partition.hierarchy = o.hierarchy;
    Ok(partition)
}

/// The statistics of one partition (GIL released).
fn statistics(p: &Partition) -> Result<ClassStats, KernelError> {
    let distance = match (&p.hierarchy, p.ordered) {
        (Some(_), true) => {
            return Err(KernelError::InvalidArgument {
                kernel: KERNEL,
                message: "ordered and hierarchy exclude each other: choose one ground distance"
                    .to_owned(),
            })
        }
        (Some(levels), false) => {
            let views: Vec<&[u32]> = levels.iter().map(Vec::as_slice).collect();
            GroundDistance::Hierarchical(Hierarchy::try_from_levels(&views)?)
        }
        (None, true) => GroundDistance::Ordered,
        (None, false) => GroundDistance::Equal,
    };
    let options = StatsOptions {
        distance,
        recursive_l: p.recursive_l,
        recursive_c: p.recursive_c,
        risk_threshold: p.risk_threshold,
    };
    kanon_core::class_stats(
        p.offsets.as_deref(),
        p.counts.values(),
        p.sensitive.as_ref().map(|s| s.values().as_ref()),
        p.population.as_ref().map(|s| s.values().as_ref()),
        &options,
    )
}
