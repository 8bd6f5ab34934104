//! The Mondrian kernel: ``kanon_mondrian`` (one pack per row).

use arrow_array::{Array, UInt32Array};
use kanon_core::models::{ModelCheck, PrivacyModels};
use kanon_core::mondrian::{mondrian_weighted, MondrianOptions, Partition};
use kanon_core::{Hierarchy, KernelError};
use pyo3::prelude::*;
use serde::Deserialize;

use crate::convert::{self, array, run, Column, ListColumn, NestedColumn, F64, U32};
use crate::models::{self, ModelData, ModelOptions};
use crate::packed::Packed;
use crate::progress;
use crate::turn::Turn;

const KERNEL: &str = "mondrian";

/// The options of ``kanon_mondrian`` (its JSON argument).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Options {
    /// Number of quasi-identifiers.
    m: usize,
    /// Parts of at most this many rows are not cut further (0: cut while allowed).
    #[serde(default)]
    stop: u64,
    /// Per quasi-identifier, whether it is measured by its distinct values (published as
    /// a set) rather than its extent; absent or empty: by extent.
    #[serde(default)]
    sets: Option<Vec<bool>>,
    /// Per quasi-identifier, the weight of its normalized range when choosing the
    /// attribute to cut (prioritized quasi-identifiers); absent or empty: all 1.
    #[serde(default)]
    weights: Option<Vec<f64>>,
    #[serde(default)]
    models: ModelOptions,
}

/// One pack's inputs, borrowed from the Arrow columns.
struct Pack {
    m: usize,
    tuples: Packed,
    keys: Vec<Vec<f64>>,
    spans: Vec<f64>,
    sets: Vec<bool>,
    weights: Vec<f64>,
    hierarchies: Vec<Vec<UInt32Array>>,
    options: MondrianOptions,
    models: ModelOptions,
    data: ModelData,
}

/// SQL ``kanon_mondrian(tuples, counts, ts, keys, spans, hierarchies, k, options,
/// sensitive_tuples, sensitive_codes, sensitive_counts, sensitive_hierarchy,
/// population_paths, population_counts)``: strict multidimensional Mondrian partitioning
/// of one pack per row.
///
/// Args:
///     tuples, counts, ts: ``UINTEGER[][]`` (per quasi-identifier the leaf code of every
///         distinct tuple), ``UBIGINT[]`` (rows per tuple) and ``UBIGINT[]`` (distinct
///         numbers of the tuples: the kernel reads the tuples in their order).
///     keys: ``DOUBLE[][]``, per quasi-identifier the key ordering each leaf.
///     spans: ``DOUBLE[]``, per quasi-identifier the table-wide range of the keys.
///     hierarchies: ``UINTEGER[][][]``, per quasi-identifier and level the label code of
///         every leaf.
///     k: ``UBIGINT``, the smallest part size.
///     options: JSON: ``m``, ``stop``, ``sets``, ``weights`` (per quasi-identifier, the
///         weight of its range when choosing the cut; default all 1) and ``models``
///         (l-diversity and t-closeness, as ``kanon_optimal``).
///     sensitive_*: the sensitive entries and hierarchy of the models (empty lists
///         without); population_*: unused (δ-presence is not enforced by Mondrian).
///
/// Returns:
///     Per row (NULL when one of the first eight arguments is NULL) a struct: ``g`` the
///     part of every tuple (in the order of the lists), ``lv`` per part the level of the lowest common hierarchy node
///     of every quasi-identifier.
///
/// Raises:
///     InvalidInputError: inconsistent inputs, unknown options, or a table that violates
///         the models as a whole.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub(crate) fn mondrian<'py>(
    py: Python<'py>,
    tuples: Column,
    counts: Column,
    ts: Column,
    keys: Column,
    spans: Column,
    hierarchies: Column,
    k: Column,
    options: Column,
    sensitive_tuples: Column,
    sensitive_codes: Column,
    sensitive_counts: Column,
    sensitive_hierarchy: Column,
    population_paths: Column,
    population_counts: Column,
) -> PyResult<Bound<'py, PyAny>> {
    let required = [
        array(&tuples),
        array(&counts),
        array(&ts),
        array(&keys),
        array(&spans),
        array(&hierarchies),
        array(&k),
        array(&options),
    ];
    let list = |name, i: usize| convert::lists(py, KERNEL, name, required[i].as_ref());
    let packs = [list("tuples", 0)?, list("counts", 1)?, list("ts", 2)?];
    let (keys, spans, hierarchies) = (list("keys", 3)?, list("spans", 4)?, list("hierarchies", 5)?);
    let model_columns = models::lists(
        py,
        KERNEL,
        [
            array(&sensitive_tuples).as_ref(),
            array(&sensitive_codes).as_ref(),
            array(&sensitive_counts).as_ref(),
            array(&sensitive_hierarchy).as_ref(),
            array(&population_paths).as_ref(),
            array(&population_counts).as_ref(),
        ],
    )?;
    let n = required[0].len();
    let mut g = ListColumn::<U32>::new();
    let mut lv = NestedColumn::<U32>::new();
    let mut valid = Vec::with_capacity(n);
    for i in 0..n {
        if !convert::all_valid(&required, i) {
            g.push(None);
            lv.push(None);
            valid.push(false);
            continue;
        }
        // Packs of other calls wait: Mondrian splits over every core itself.
        let _turn = Turn::take(py);
        let options: Options = convert::options(py, KERNEL, required[7].as_ref(), i)?;
        models::check(py, KERNEL, &options.models)?;
        if options.models.needs_population() {
            return Err(convert::invalid(
                py,
                KERNEL,
                "models of the population (δ-presence) are not enforced by Mondrian".to_owned(),
            ));
        }
        let m = options.m;
        let pack = Pack {
            m,
            tuples: Packed::read(py, KERNEL, packs, i, m)?,
            keys: convert::rows::<F64>(py, KERNEL, "keys", keys, i)?
                .iter()
                .map(|a| a.values().to_vec())
                .collect(),
            spans: convert::row::<F64>(py, KERNEL, "spans", spans, i)?
                .values()
                .to_vec(),
            sets: match &options.sets {
                Some(sets) if !sets.is_empty() => sets.clone(),
                _ => vec![false; m],
            },
            weights: match &options.weights {
                Some(weights) if !weights.is_empty() => weights.clone(),
                _ => vec![1.0; m],
            },
            hierarchies: convert::hierarchy_levels(py, KERNEL, hierarchies, i)?,
            options: MondrianOptions {
                k: convert::scalar_u64(py, KERNEL, "k", required[6].as_ref(), i)?,
                stop: options.stop,
            },
            data: ModelData::read(py, KERNEL, model_columns, i, &options.models)?,
            models: options.models,
        };
        let partition = run(py, || partition(&pack))?;
        g.push(Some(&pack.tuples.in_sql_order(&partition.part_of_tuple)));
        lv.push_chunks(Some(&partition.levels), m);
        valid.push(true);
    }
    let out = convert::struct_of(vec![("g", g.finish()), ("lv", lv.finish())], &valid);
    convert::to_python(py, out)
}

/// Partition one pack (GIL released), reporting its rows when done.
fn partition(pack: &Pack) -> Result<Partition, KernelError> {
    progress::cancelled(KERNEL)?;
    let built = convert::hierarchies(&pack.hierarchies)?;
    let (tuples, counts) = (&pack.tuples.tuples[..], &pack.tuples.counts[..]);
    let rows: u64 = counts.iter().sum();
    let partition = if pack.models.needs_sensitive() {
        let models = pack.models.build(KERNEL, &pack.data)?;
        expanded_mondrian(pack, &built, &models)?
    } else {
        mondrian_weighted(
            tuples,
            pack.m,
            counts,
            &pack.keys,
            &pack.spans,
            &pack.sets,
            &pack.weights,
            &built,
            None,
            &pack.options,
        )?
    };
    progress::advance(rows);
    Ok(partition)
}

/// Mondrian with models: every tuple is split into one copy per sensitive value (equal
/// quasi-identifiers always fall on the same side of a cut, so the copies stay
/// together), and a tuple's part is that of its copies.
fn expanded_mondrian(
    pack: &Pack,
    hierarchies: &[Hierarchy],
    models: &PrivacyModels,
) -> Result<Partition, KernelError> {
    let invalid = |message: String| KernelError::InvalidArgument {
        kernel: KERNEL,
        message,
    };
    let (owner, codes, rows) = pack.data.entries();
    let values = pack.data.values;
    let (tuples, counts, m) = (&pack.tuples.tuples[..], &pack.tuples.counts[..], pack.m);
    let n = counts.len();
    if owner.len() != codes.len() || owner.len() != rows.len() {
        return Err(invalid(
            "sensitive tuples, codes and counts differ in length".to_owned(),
        ));
    }
    let mut global = vec![0u64; values];
    let mut per_tuple = vec![0u64; n];
    for ((&t, &s), &r) in owner.iter().zip(codes).zip(rows) {
        let (t, s) = (t as usize, s as usize);
        if t >= n || s >= values {
            return Err(invalid(format!(
                "sensitive entry of tuple {t} with code {s} is out of range ({n} tuples, \
                 {values} values)"
            )));
        }
        global[s] += r;
        per_tuple[t] += r;
    }
    if let Some(t) = (0..n).find(|&t| per_tuple[t] != counts[t]) {
        return Err(invalid(format!(
            "the sensitive entries of tuple {t} hold {} rows, its count is {}",
            per_tuple[t], counts[t]
        )));
    }
    let check = ModelCheck::new(KERNEL, models, &global)?;
    let mut copies = Vec::with_capacity(owner.len() * m);
    for &t in owner {
        let t = t as usize;
        copies.extend_from_slice(&tuples[t * m..(t + 1) * m]);
    }
    let part = mondrian_weighted(
        &copies,
        m,
        rows,
        &pack.keys,
        &pack.spans,
        &pack.sets,
        &pack.weights,
        hierarchies,
        Some((codes, &check)),
        &pack.options,
    )?;
    let mut part_of_tuple = vec![0u32; n];
    for (&t, &p) in owner.iter().zip(&part.part_of_tuple) {
        part_of_tuple[t as usize] = p;
    }
    Ok(Partition {
        part_of_tuple,
        ..part
    })
}
