//! The greedy local recodings over a lattice of levels, one pack per row:
//! ``kanon_priority`` (PrioPrivacy's prioritized QIs) and ``kanon_iterated`` (ARX's
//! iterated global recoding). Both take a per-attribute argument and return the same
//! struct.

use arrow_array::types::ArrowPrimitiveType;
use arrow_array::{Array, PrimitiveArray, UInt32Array};
use kanon_core::iterated::iterated as iterate;
use kanon_core::priority::{priority as recode, Recoding};
use kanon_core::{Hierarchy, KernelError};
use pyo3::prelude::*;
use serde::Deserialize;

use crate::convert::{self, array, run, Column, ListColumn, NestedColumn, F64, U32};
use crate::packed::Packed;
use crate::progress;

/// The options of both kernels (their JSON argument).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Options {
    /// Number of quasi-identifiers.
    m: usize,
}

/// One pack's inputs, borrowed from the Arrow columns; `per` holds a value per attribute.
struct Pack<T: ArrowPrimitiveType> {
    m: usize,
    tuples: Packed,
    hierarchies: Vec<Vec<UInt32Array>>,
    per: PrimitiveArray<T>,
    k: u64,
}

/// SQL ``kanon_priority(tuples, counts, ts, hierarchies, ranks, k, options)``: PrioPrivacy's
/// greedy local recoding of one pack per row, strict (``*`` is a released value).
///
/// Args:
///     tuples, counts, ts: ``UINTEGER[][]`` (per quasi-identifier the leaf code of every
///         distinct tuple), ``UBIGINT[]`` (rows per tuple) and ``UBIGINT[]`` (distinct
///         numbers of the tuples: the kernel reads the tuples in their order).
///     hierarchies: ``UINTEGER[][][]``, per quasi-identifier and level the label code of
///         every leaf.
///     ranks: ``UINTEGER[]``, per quasi-identifier its priority (lower = more
///         important; ties join in column order).
///     k: ``UBIGINT``, the smallest group size.
///     options: JSON: ``m``.
///
/// Returns:
///     Per row (NULL when an argument is NULL) a struct: ``g`` the group of every tuple
///     (in the order of the lists), ``lv`` per group the level of every quasi-identifier (its height: ``*``).
///
/// Raises:
///     InvalidInputError: inconsistent inputs, unknown options, fewer than k rows.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub(crate) fn priority<'py>(
    py: Python<'py>,
    tuples: Column,
    counts: Column,
    ts: Column,
    hierarchies: Column,
    ranks: Column,
    k: Column,
    options: Column,
) -> PyResult<Bound<'py, PyAny>> {
    let inputs = [tuples, counts, ts, hierarchies, ranks, k, options];
    recode_rows::<U32>(py, "priority", "ranks", inputs, |t, m, c, h, ranks, k| {
        recode(t, m, c, h, ranks, k)
    })
}

/// SQL ``kanon_iterated(tuples, counts, ts, hierarchies, weights, k, options)``: ARX's local
/// recoding by iterated global recoding (least weighted non-uniform entropy first) of
/// one pack per row, strict.
///
/// Args:
///     tuples, counts, ts, hierarchies, k, options: as for ``kanon_priority``.
///     weights: ``DOUBLE[]``, per quasi-identifier the weight (>= 0) of its entropy.
///
/// Returns:
///     As ``kanon_priority``.
///
/// Raises:
///     InvalidInputError: inconsistent inputs, unknown options, fewer than k rows, bad
///     weights, a lattice of more than 32,768 nodes.
#[pyfunction]
#[allow(clippy::too_many_arguments)]
pub(crate) fn iterated<'py>(
    py: Python<'py>,
    tuples: Column,
    counts: Column,
    ts: Column,
    hierarchies: Column,
    weights: Column,
    k: Column,
    options: Column,
) -> PyResult<Bound<'py, PyAny>> {
    let inputs = [tuples, counts, ts, hierarchies, weights, k, options];
    recode_rows::<F64>(py, "iterated", "weights", inputs, |t, m, c, h, w, k| {
        iterate(t, m, c, h, w, k)
    })
}

/// The kernel signature both bindings share: tuples, m, counts, hierarchies, per
/// attribute values, k.
type Kernel<N> =
    fn(&[u32], usize, &[u64], &[Hierarchy], &[N], u64) -> Result<Recoding, KernelError>;

/// Run `kernel` on every row's pack and build the result struct column.
fn recode_rows<'py, T: ArrowPrimitiveType>(
    py: Python<'py>,
    kernel: &'static str,
    per_name: &'static str,
    inputs: [Column; 7],
    recode_pack: Kernel<T::Native>,
) -> PyResult<Bound<'py, PyAny>> {
    let required: Vec<_> = inputs.iter().map(array).collect();
    let list = |name, i: usize| convert::lists(py, kernel, name, required[i].as_ref());
    let packs = [list("tuples", 0)?, list("counts", 1)?, list("ts", 2)?];
    let (hierarchies, per) = (list("hierarchies", 3)?, list(per_name, 4)?);
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
        let options: Options = convert::options(py, kernel, required[6].as_ref(), i)?;
        let pack = Pack {
            m: options.m,
            tuples: Packed::read(py, kernel, packs, i, options.m)?,
            hierarchies: convert::hierarchy_levels(py, kernel, hierarchies, i)?,
            per: convert::row::<T>(py, kernel, per_name, per, i)?,
            k: convert::scalar_u64(py, kernel, "k", required[5].as_ref(), i)?,
        };
        let recoding = run(py, || one_pack(kernel, &pack, recode_pack))?;
        g.push(Some(&pack.tuples.in_sql_order(&recoding.group_of_tuple)));
        lv.push_chunks(Some(&recoding.levels), pack.m);
        valid.push(true);
    }
    let out = convert::struct_of(vec![("g", g.finish()), ("lv", lv.finish())], &valid);
    convert::to_python(py, out)
}

/// Recode one pack (GIL released), reporting its rows when done.
fn one_pack<T: ArrowPrimitiveType>(
    kernel: &'static str,
    pack: &Pack<T>,
    recode_pack: Kernel<T::Native>,
) -> Result<Recoding, KernelError> {
    progress::cancelled(kernel)?;
    let built = convert::hierarchies(&pack.hierarchies)?;
    let counts = &pack.tuples.counts[..];
    let recoding = recode_pack(
        &pack.tuples.tuples[..],
        pack.m,
        counts,
        &built,
        pack.per.values(),
        pack.k,
    )?;
    progress::advance(counts.iter().sum());
    Ok(recoding)
}
