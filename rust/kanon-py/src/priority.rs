//! The prioritized local recoding: ``kanon_priority`` (one pack per row).

use arrow_array::{Array, UInt32Array, UInt64Array};
use kanon_core::priority::{priority as recode, Recoding};
use kanon_core::KernelError;
use pyo3::prelude::*;
use serde::Deserialize;

use crate::convert::{self, array, run, Column, ListColumn, NestedColumn, U32, U64};
use crate::progress;

const KERNEL: &str = "priority";

/// The options of ``kanon_priority`` (its JSON argument).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Options {
    /// Number of quasi-identifiers.
    m: usize,
}

/// One pack's inputs, borrowed from the Arrow columns.
struct Pack {
    m: usize,
    tuples: UInt32Array,
    counts: UInt64Array,
    hierarchies: Vec<Vec<UInt32Array>>,
    ranks: UInt32Array,
    k: u64,
}

/// SQL ``kanon_priority(tuples, counts, hierarchies, ranks, k, options)``: PrioPrivacy's
/// greedy local recoding of one pack per row, strict (``*`` is a released value).
///
/// Args:
///     tuples, counts: ``UINTEGER[]`` (``m`` leaf codes per distinct tuple) and
///         ``UBIGINT[]`` (rows per tuple).
///     hierarchies: ``UINTEGER[][][]``, per quasi-identifier and level the label code of
///         every leaf.
///     ranks: ``UINTEGER[]``, per quasi-identifier its priority (lower = more
///         important; ties join in column order).
///     k: ``UBIGINT``, the smallest group size.
///     options: JSON: ``m``.
///
/// Returns:
///     Per row (NULL when an argument is NULL) a struct: ``g`` the group of every tuple,
///     ``lv`` per group the level of every quasi-identifier (its height: ``*``).
///
/// Raises:
///     InvalidInputError: inconsistent inputs, unknown options, fewer than k rows.
#[pyfunction]
pub(crate) fn priority<'py>(
    py: Python<'py>,
    tuples: Column,
    counts: Column,
    hierarchies: Column,
    ranks: Column,
    k: Column,
    options: Column,
) -> PyResult<Bound<'py, PyAny>> {
    let required = [
        array(&tuples),
        array(&counts),
        array(&hierarchies),
        array(&ranks),
        array(&k),
        array(&options),
    ];
    let list = |name, i: usize| convert::lists(py, KERNEL, name, required[i].as_ref());
    let (tuples, counts, hierarchies, ranks) = (
        list("tuples", 0)?,
        list("counts", 1)?,
        list("hierarchies", 2)?,
        list("ranks", 3)?,
    );
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
        let options: Options = convert::options(py, KERNEL, required[5].as_ref(), i)?;
        let pack = Pack {
            m: options.m,
            tuples: convert::row::<U32>(py, KERNEL, "tuples", tuples, i)?,
            counts: convert::row::<U64>(py, KERNEL, "counts", counts, i)?,
            hierarchies: convert::hierarchy_levels(py, KERNEL, hierarchies, i)?,
            ranks: convert::row::<U32>(py, KERNEL, "ranks", ranks, i)?,
            k: convert::scalar_u64(py, KERNEL, "k", required[4].as_ref(), i)?,
        };
        let recoding = run(py, || recode_pack(&pack))?;
        g.push(Some(&recoding.group_of_tuple));
        lv.push_chunks(Some(&recoding.levels), pack.m);
        valid.push(true);
    }
    let out = convert::struct_of(vec![("g", g.finish()), ("lv", lv.finish())], &valid);
    convert::to_python(py, out)
}

/// Recode one pack (GIL released), reporting its rows when done.
fn recode_pack(pack: &Pack) -> Result<Recoding, KernelError> {
    progress::cancelled(KERNEL)?;
    let built = convert::hierarchies(&pack.hierarchies)?;
    let counts = pack.counts.values().as_ref();
    let recoding = recode(
        pack.tuples.values(),
        pack.m,
        counts,
        &built,
        pack.ranks.values(),
        pack.k,
    )?;
    progress::advance(counts.iter().sum());
    Ok(recoding)
}
