//! The full-domain heuristics over one histogram: ``kanon_historic`` (Datafly, μ-Argus).

use std::collections::HashSet;

use arrow_array::{Array, UInt32Array, UInt64Array};
use kanon_core::historic::{algorithm, Histogram as Input, HistoricRelease};
use kanon_core::{Hierarchy, KernelError};
use pyo3::prelude::*;
use serde::Deserialize;

use crate::convert::{self, array, run, Column, ListColumn, U32, U64};

const KERNEL: &str = "historic";

/// The options of ``kanon_historic`` (its JSON argument).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct Options {
    /// Number of quasi-identifiers (at most 64).
    m: usize,
    /// A name of ``kanon_core::historic::ALGORITHMS``.
    method: String,
    /// Datafly only: the rows its loop may leave in classes below k (they are
    /// suppressed); absent or null for Sweeney's rule, k rows.
    #[serde(default)]
    max_suppressed: Option<u64>,
    /// Whether suppressed rows stay in the release (one class of ``*``).
    keep_suppressed: bool,
}

/// One histogram's inputs, borrowed from the Arrow columns.
struct Histogram {
    options: Options,
    tuples: UInt32Array,
    counts: UInt64Array,
    hierarchies: Vec<Vec<UInt32Array>>,
    k: u64,
}

/// A release with the classes it shows and the kernel's seconds.
struct Released {
    release: HistoricRelease,
    classes: usize,
    seconds: f64,
}

/// SQL ``kanon_historic(tuples, counts, hierarchies, k, options)``: Datafly or μ-Argus
/// on one histogram per row.
///
/// Args:
///     tuples, counts: ``UINTEGER[]`` (``m`` leaf codes per distinct tuple) and
///         ``UBIGINT[]`` (rows per tuple).
///     hierarchies: ``UINTEGER[][][]``, per attribute and level the label code of every
///         leaf.
///     k: ``UBIGINT``, the smallest class size.
///     options: JSON: ``m``, ``method`` (a name of ``kanon_core::historic::ALGORITHMS``),
///         ``max_suppressed`` (Datafly; absent or null for Sweeney's k rows) and
///         ``keep_suppressed``.
///
/// Returns:
///     Per row (NULL when an argument is NULL) a struct: ``levels`` the level of every
///     quasi-identifier, ``cells`` per distinct tuple the bitmask of its ``'*'`` cells
///     (bit j for attribute j, all m bits for a suppressed row), ``stats`` the report
///     (unprotected rows and classes, suppressed cells and rows, topped-up rows, steps,
///     ``classes`` of the release as its SQL shows them, seconds).
///
/// Raises:
///     InvalidInputError: inconsistent inputs, an unknown method, max_suppressed with
///         ``'mu_argus'``.
///     HierarchyError: a hierarchy that is not nested or has several roots.
#[pyfunction]
pub(crate) fn historic<'py>(
    py: Python<'py>,
    tuples: Column,
    counts: Column,
    hierarchies: Column,
    k: Column,
    options: Column,
) -> PyResult<Bound<'py, PyAny>> {
    let columns = [
        array(&tuples),
        array(&counts),
        array(&hierarchies),
        array(&k),
        array(&options),
    ];
    let list = |name, i: usize| convert::lists(py, KERNEL, name, columns[i].as_ref());
    let (tuples, counts, hierarchies) = (
        list("tuples", 0)?,
        list("counts", 1)?,
        list("hierarchies", 2)?,
    );
    let n = columns[0].len();
    let mut levels = ListColumn::<U32>::new();
    let mut cells = ListColumn::<U64>::new();
    let mut reports: Vec<Option<Released>> = Vec::with_capacity(n);
    let mut valid = Vec::with_capacity(n);
    for i in 0..n {
        if !convert::all_valid(&columns, i) {
            levels.push(None);
            cells.push(None);
            reports.push(None);
            valid.push(false);
            continue;
        }
        let options: Options = convert::options(py, KERNEL, columns[4].as_ref(), i)?;
        let histogram = Histogram {
            tuples: convert::row::<U32>(py, KERNEL, "tuples", tuples, i)?,
            counts: convert::row::<U64>(py, KERNEL, "counts", counts, i)?,
            hierarchies: convert::hierarchy_levels(py, KERNEL, hierarchies, i)?,
            k: convert::scalar_u64(py, KERNEL, "k", columns[3].as_ref(), i)?,
            options,
        };
        let released = run(py, || release(&histogram))?;
        levels.push(Some(&released.release.levels));
        cells.push(Some(&released.release.cells));
        reports.push(Some(released));
        valid.push(true);
    }
    let counter = |f: fn(&Released) -> u64| convert::u64_field(&reports, move |r| Some(f(r)));
    let stats = convert::struct_of(
        vec![
            (
                "unprotected_rows",
                counter(|r| r.release.report.unprotected_rows),
            ),
            (
                "unprotected_classes",
                counter(|r| r.release.report.unprotected_classes),
            ),
            (
                "suppressed_cells",
                counter(|r| r.release.report.suppressed_cells),
            ),
            (
                "suppressed_rows",
                counter(|r| r.release.report.suppressed_rows),
            ),
            (
                "topped_up_rows",
                counter(|r| r.release.report.topped_up_rows),
            ),
            ("steps", counter(|r| r.release.report.steps)),
            ("classes", counter(|r| r.classes as u64)),
            ("seconds", convert::f64_field(&reports, |r| Some(r.seconds))),
        ],
        &valid,
    );
    let out = convert::struct_of(
        vec![
            ("levels", levels.finish()),
            ("cells", cells.finish()),
            ("stats", stats),
        ],
        &valid,
    );
    convert::to_python(py, out)
}

/// Run the method on one histogram (GIL released).
fn release(h: &Histogram) -> Result<Released, KernelError> {
    let run_algorithm = algorithm(KERNEL, &h.options.method)?;
    let built = convert::hierarchies(&h.hierarchies)?;
    let (tuples, counts, m) = (h.tuples.values(), h.counts.values(), h.options.m);
    let clock = std::time::Instant::now();
    let release = run_algorithm(&Input {
        tuples,
        m,
        counts,
        hierarchies: &built,
        k: h.k,
        max_suppressed: h.options.max_suppressed,
        keep_suppressed: h.options.keep_suppressed,
    })?;
    let seconds = clock.elapsed().as_secs_f64();
    let classes = released_classes(tuples, m, counts, &built, &release);
    Ok(Released {
        release,
        classes,
        seconds,
    })
}

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
    let mut keys: HashSet<Vec<u32>> = HashSet::new();
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
