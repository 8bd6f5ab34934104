//! The forest kernels: ``kanon_forest`` (one pack per row) and the continuous mode's
//! ``forest_extend``.

use arrow_array::{Array, Float64Array, UInt32Array};
use kanon_core::forest::anonymize::{anonymize, ForestOptions, Release};
use kanon_core::forest::blocked::blocked_forest;
use kanon_core::forest::cost::{CostModel, LevelCost};
use kanon_core::forest::extend::extend;
use kanon_core::forest::improve::Effort;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use serde::Deserialize;

use crate::convert::{self, array, run, Column, ListColumn, NestedColumn, F64, U32, U64};
use crate::packed::Packed;
use crate::progress;

const KERNEL: &str = "forest";

/// What the forest minimizes.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum Cost {
    /// Normalized certainty penalty of the hierarchy node.
    Ncp,
    /// The paper's level / height.
    Height,
    /// The NCP of the group's observed values (range labels).
    Range,
}

impl Cost {
    fn level_cost(self) -> LevelCost {
        match self {
            Self::Ncp => LevelCost::Ncp,
            Self::Height => LevelCost::Height,
            Self::Range => LevelCost::Range,
        }
    }
}

/// The improvement passes.
#[derive(Clone, Copy, Debug, Deserialize, PartialEq, Eq)]
#[serde(rename_all = "snake_case")]
enum Improve {
    Full,
    Fast,
    None,
}

/// The options of ``kanon_forest`` (its JSON argument).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Options {
    /// Number of quasi-identifiers.
    m: usize,
    cost: Cost,
    improve: Improve,
    /// Above this many rows, a pack is cut into blocks by Mondrian cuts.
    block_size: Option<u64>,
}

/// One pack's inputs, borrowed from the Arrow columns.
struct Pack {
    options: Options,
    tuples: Packed,
    hierarchies: Vec<Vec<UInt32Array>>,
    weights: Vec<f64>,
    k: u64,
    seed: u64,
    /// Range labels: per quasi-identifier, the numeric key of every leaf or None.
    keys: Vec<Option<Vec<f64>>>,
    /// The Mondrian cut keys and spans of the blocks, with the block size.
    blocks: Option<(Vec<Vec<f64>>, Vec<f64>, u64)>,
}

/// SQL ``kanon_forest(tuples, counts, ts, hierarchies, weights, k, seed, options, keys,
/// cut_keys, spans)``: the forest anonymizer on one packed table per row.
///
/// Args:
///     tuples: ``UINTEGER[][]``, per quasi-identifier the leaf code of every distinct
///         tuple.
///     counts: ``UBIGINT[]``, rows per tuple.
///     ts: ``UBIGINT[]``, distinct numbers of the tuples: the kernel reads the tuples
///         in their order, whatever the order of the lists.
///     hierarchies: ``UINTEGER[][][]``, per quasi-identifier and level the label code of
///         every leaf.
///     weights: ``DOUBLE[]``, a positive weight per quasi-identifier.
///     k, seed: ``UBIGINT``, the privacy parameter and the visiting-order seed.
///     options: JSON: ``m``, ``cost`` (``'ncp'``, ``'height'`` or ``'range'``),
///         ``improve`` (``'full'``, ``'fast'`` or ``'none'``) and ``block_size``.
///     keys: ``DOUBLE[][]``, with ``'range'``: per quasi-identifier the numeric value of
///         every leaf (NULL: missing), an empty list for a categorical one.
///     cut_keys, spans: ``DOUBLE[][]`` and ``DOUBLE[]``: the Mondrian cut keys of the
///         blocks and the table-wide spans.
///
/// Returns:
///     Per row (NULL when an argument is NULL) a struct: ``g`` the group of every row
///     (rows numbered tuple by tuple, copy by copy), ``lv`` the level of every group per
///     quasi-identifier, ``stats`` the counters (``cost``: the cost minimized) and ``o``
///     where the rows of each tuple (in the order of the lists) start in ``g``.
///
/// Raises:
///     InvalidInputError, HierarchyError: inconsistent inputs, unknown options.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub(crate) fn forest<'py>(
    py: Python<'py>,
    tuples: Column,
    counts: Column,
    ts: Column,
    hierarchies: Column,
    weights: Column,
    k: Column,
    seed: Column,
    options: Column,
    keys: Column,
    cut_keys: Column,
    spans: Column,
) -> PyResult<Bound<'py, PyAny>> {
    let columns = [
        array(&tuples),
        array(&counts),
        array(&ts),
        array(&hierarchies),
        array(&weights),
        array(&k),
        array(&seed),
        array(&options),
        array(&keys),
        array(&cut_keys),
        array(&spans),
    ];
    let list = |name, i: usize| convert::lists(py, KERNEL, name, columns[i].as_ref());
    let packs = [list("tuples", 0)?, list("counts", 1)?, list("ts", 2)?];
    let (hierarchies, weights) = (list("hierarchies", 3)?, list("weights", 4)?);
    let (keys, cut_keys, spans) = (list("keys", 8)?, list("cut_keys", 9)?, list("spans", 10)?);
    let n = columns[0].len();
    let mut g = ListColumn::<U32>::new();
    let mut lv = NestedColumn::<U32>::new();
    let mut o = ListColumn::<U64>::new();
    let mut stats: Vec<Option<(Release, usize)>> = Vec::with_capacity(n);
    let mut valid = Vec::with_capacity(n);
    for i in 0..n {
        if !convert::all_valid(&columns, i) {
            g.push(None);
            lv.push(None);
            o.push(None);
            stats.push(None);
            valid.push(false);
            continue;
        }
        let options: Options = convert::options(py, KERNEL, columns[7].as_ref(), i)?;
        let range = options.cost == Cost::Range;
        let pack = Pack {
            tuples: Packed::read(py, KERNEL, packs, i, options.m)?,
            hierarchies: convert::hierarchy_levels(py, KERNEL, hierarchies, i)?,
            weights: convert::row::<F64>(py, KERNEL, "weights", weights, i)?
                .values()
                .to_vec(),
            k: convert::scalar_u64(py, KERNEL, "k", columns[5].as_ref(), i)?,
            seed: convert::scalar_u64(py, KERNEL, "seed", columns[6].as_ref(), i)?,
            keys: if range {
                range_keys(py, keys, i)?
            } else {
                Vec::new()
            },
            blocks: match options.block_size {
                Some(size) => Some((
                    convert::rows::<F64>(py, KERNEL, "cut keys", cut_keys, i)?
                        .iter()
                        .map(|a| a.values().to_vec())
                        .collect(),
                    convert::row::<F64>(py, KERNEL, "spans", spans, i)?
                        .values()
                        .to_vec(),
                    size,
                )),
                None => None,
            },
            options,
        };
        let release = run(py, || anonymize_pack(&pack))?;
        let m = pack.options.m;
        g.push(Some(&release.group_of_row));
        lv.push_chunks(Some(&release.levels), m);
        let mut start = 0u64;
        let starts: Vec<u64> = pack
            .tuples
            .counts
            .iter()
            .map(|&c| {
                let s = start;
                start += c;
                s
            })
            .collect();
        o.push(Some(&pack.tuples.in_sql_order(&starts)));
        let groups = release.groups;
        stats.push(Some((release, groups)));
        valid.push(true);
    }
    let cuts = {
        let mut cuts = ListColumn::<U64>::new();
        for s in &stats {
            let row: Option<Vec<u64>> = s
                .as_ref()
                .map(|(r, _)| r.stats.cuts.iter().map(|&c| c as u64).collect());
            cuts.push(row.as_deref());
        }
        cuts.finish()
    };
    let u = |f: fn(&Release) -> usize| convert::u64_field(&stats, move |(r, _)| Some(f(r) as u64));
    let stats = convert::struct_of(
        vec![
            ("tuples", u(|r| r.stats.tuples)),
            ("vertices", u(|r| r.stats.vertices)),
            ("own_groups", u(|r| r.stats.own_groups)),
            ("cuts", cuts),
            ("repaired", u(|r| r.stats.repaired)),
            (
                "cost_before_improve",
                convert::f64_field(&stats, |(r, _)| Some(r.stats.cost_before_improve)),
            ),
            (
                "cost",
                convert::f64_field(&stats, |(r, _)| Some(r.stats.cost)),
            ),
            (
                "groups",
                convert::u64_field(&stats, |(_, groups)| Some(*groups as u64)),
            ),
        ],
        &valid,
    );
    let out = convert::struct_of(
        vec![
            ("g", g.finish()),
            ("lv", lv.finish()),
            ("stats", stats),
            ("o", o.finish()),
        ],
        &valid,
    );
    convert::to_python(py, out)
}

/// The range keys of row `i`: a float64 vector per numeric quasi-identifier (NULL
/// elements, the NULL leaf, become NaN), None for a categorical one (an empty list).
fn range_keys(
    py: Python<'_>,
    keys: &arrow_array::ListArray,
    i: usize,
) -> PyResult<Vec<Option<Vec<f64>>>> {
    let attributes = keys.value(i);
    let attributes = convert::lists(py, KERNEL, "keys", &attributes)?;
    (0..attributes.len())
        .map(|j| {
            if attributes.is_null(j) {
                return Ok(None);
            }
            let values = attributes.value(j);
            if values.is_empty() {
                return Ok(None);
            }
            let Some(values) = values.as_any().downcast_ref::<Float64Array>() else {
                return Err(convert::invalid(
                    py,
                    KERNEL,
                    format!(
                        "argument 'keys' must hold DOUBLE, got {}",
                        values.data_type()
                    ),
                ));
            };
            Ok(Some(values.iter().map(|v| v.unwrap_or(f64::NAN)).collect()))
        })
        .collect()
}

/// Anonymize one pack (GIL released), reporting the rows it finishes.
fn anonymize_pack(pack: &Pack) -> Result<Release, kanon_core::KernelError> {
    let o = &pack.options;
    progress::cancelled(KERNEL)?;
    let built = convert::hierarchies(&pack.hierarchies)?;
    let weights = pack.weights.clone();
    let model = match o.cost {
        Cost::Range => CostModel::try_new_range(built, weights, pack.keys.clone())?,
        cost => CostModel::try_new(built, weights, cost.level_cost())?,
    };
    let options = ForestOptions {
        k: pack.k,
        seed: pack.seed,
        improve: match o.improve {
            Improve::Full => Some(Effort::Full),
            Improve::Fast => Some(Effort::Fast),
            Improve::None => None,
        },
    };
    let (tuples, counts) = (&pack.tuples.tuples[..], &pack.tuples.counts[..]);
    let report = |rows: u64| progress::advance(rows);
    match &pack.blocks {
        Some((cut_keys, spans, size)) => blocked_forest(
            tuples,
            o.m,
            counts,
            cut_keys,
            spans,
            &model,
            &options,
            *size,
            Some(&report),
        ),
        None => {
            let release = anonymize(tuples, o.m, counts, &model, &options)?;
            progress::advance(counts.iter().sum());
            Ok(release)
        }
    }
}

/// An extension handed back to Python: the group of every row, the group count, the
/// level of every group and attribute (row-major) and the counters.
type Extended<'py> = (
    Bound<'py, PyAny>,
    usize,
    Bound<'py, PyAny>,
    Bound<'py, PyDict>,
);

/// Continuous mode: place new rows (group ``0xFFFFFFFF``) without moving existing ones.
///
/// Args:
///     tuples: uint32 array, ``m`` leaf codes per distinct tuple.
///     m: number of quasi-identifiers.
///     hierarchies: per quasi-identifier, one uint32 array of label codes per level.
///     weights: per quasi-identifier, a positive weight.
///     cost: ``'ncp'`` or ``'height'``.
///     tuple_of_row: uint32 array, the tuple of every row.
///     group_of_row: uint32 array, the group of every existing row (``0..groups``),
///         ``0xFFFFFFFF`` for a new row.
///     groups: number of existing groups (each holds at least k rows).
///     k: the privacy parameter.
///
/// Returns:
///     (group_of_row, groups, levels, stats): the group of every row (uint32 array;
///     existing groups keep their ids, new groups follow), the group count, the level
///     per group and attribute (uint32 array, row-major) and the counters ``joined`` and
///     ``new_groups``.
///
/// Raises:
///     InvalidInputError, HierarchyError: inconsistent inputs.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub(crate) fn forest_extend<'py>(
    py: Python<'py>,
    tuples: Column,
    m: usize,
    hierarchies: Vec<Vec<Column>>,
    weights: Vec<f64>,
    cost: &str,
    tuple_of_row: Column,
    group_of_row: Column,
    groups: usize,
    k: u64,
) -> PyResult<Extended<'py>> {
    const EXTEND: &str = "forest_extend";
    let kind = match cost {
        "ncp" => LevelCost::Ncp,
        "height" => LevelCost::Height,
        other => {
            return Err(convert::invalid(
                py,
                EXTEND,
                format!("cost must be 'ncp' or 'height', got {other:?}"),
            ))
        }
    };
    let tuples = convert::values::<U32>(py, EXTEND, "tuples", array(&tuples).as_ref())?;
    let tuple_of_row =
        convert::values::<U32>(py, EXTEND, "tuple_of_row", array(&tuple_of_row).as_ref())?;
    let group_of_row =
        convert::values::<U32>(py, EXTEND, "group_of_row", array(&group_of_row).as_ref())?;
    let hierarchies = hierarchies
        .iter()
        .map(|levels| {
            levels
                .iter()
                .map(|l| convert::values::<U32>(py, EXTEND, "hierarchies", array(l).as_ref()))
                .collect::<PyResult<Vec<_>>>()
        })
        .collect::<PyResult<Vec<_>>>()?;
    let e = run(py, || {
        let model = CostModel::try_new(convert::hierarchies(&hierarchies)?, weights, kind)?;
        extend(
            tuples.values(),
            m,
            &model,
            tuple_of_row.values(),
            group_of_row.values(),
            groups,
            k,
        )
    })?;
    let d = PyDict::new(py);
    d.set_item("joined", e.joined)?;
    d.set_item("new_groups", e.new_groups)?;
    Ok((
        convert::to_python(py, std::sync::Arc::new(UInt32Array::from(e.group_of_row)))?,
        e.groups,
        convert::to_python(py, std::sync::Arc::new(UInt32Array::from(e.levels)))?,
        d,
    ))
}
