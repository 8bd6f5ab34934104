//! Coding and hierarchies: ``encode_strings``, ``validate_hierarchy`` and ``groupify``.

use std::sync::Arc;

use arrow_array::{UInt32Array, UInt64Array};
use pyo3::prelude::*;

use crate::convert::{self, array, run, Column, U32, U64};

/// Dictionary-encode strings to dense codes in value order (None sorts first).
///
/// Args:
///     values: list of str or None.
///
/// Returns:
///     (codes, first_row): the code of every value (a uint32 array), and for each code
///     the index of its first occurrence.
#[pyfunction]
pub(crate) fn encode_strings(
    py: Python<'_>,
    values: Vec<Option<String>>,
) -> PyResult<(Bound<'_, PyAny>, Vec<usize>)> {
    let dict = run(py, || kanon_core::encode(&values))?;
    let codes = convert::to_python(py, Arc::new(UInt32Array::from(dict.codes)))?;
    Ok((codes, dict.first_row))
}

/// The uint32 arrays of a list of Arrow-exporting objects.
fn u32_arrays(
    py: Python<'_>,
    kernel: &'static str,
    name: &str,
    arrays: &[Column],
) -> PyResult<Vec<UInt32Array>> {
    arrays
        .iter()
        .map(|a| convert::values::<U32>(py, kernel, name, array(a).as_ref()))
        .collect()
}

/// Check that a hierarchy given as one code array per level is nested with one root.
///
/// Args:
///     levels: list of uint32 arrays; ``levels[l][row]`` is the dense code of the row's
///         label at level l; level 0 lists every leaf once.
///
/// Returns:
///     Number of levels above the leaves.
///
/// Raises:
///     HierarchyError: a label with two parents (names the level and row) or two roots.
///     InvalidInputError: malformed codes.
#[pyfunction]
pub(crate) fn validate_hierarchy(py: Python<'_>, levels: Vec<Column>) -> PyResult<usize> {
    let levels = u32_arrays(py, "validate_hierarchy", "levels", &levels)?;
    let h = run(py, || convert::hierarchy(&levels))?;
    Ok(h.height())
}

/// Partition rows into equivalence classes of their generalized quasi-identifiers.
///
/// Args:
///     columns: one uint32 array of leaf codes per quasi-identifier.
///     hierarchies: per column, its hierarchy as a list of uint32 level-code arrays
///         (see ``validate_hierarchy``).
///     levels: the level each column is generalized to.
///     weights: optional uint64 array of row multiplicities.
///
/// Returns:
///     (class_of_row, sizes): a uint32 and a uint64 array.
///
/// Raises:
///     HierarchyError, InvalidInputError: unusable hierarchies or inconsistent inputs.
#[pyfunction]
#[pyo3(signature = (columns, hierarchies, levels, weights=None))]
pub(crate) fn groupify<'py>(
    py: Python<'py>,
    columns: Vec<Column>,
    hierarchies: Vec<Vec<Column>>,
    levels: Vec<usize>,
    weights: Option<Column>,
) -> PyResult<(Bound<'py, PyAny>, Bound<'py, PyAny>)> {
    const KERNEL: &str = "groupify";
    let columns = u32_arrays(py, KERNEL, "columns", &columns)?;
    let hierarchies = hierarchies
        .iter()
        .map(|h| u32_arrays(py, KERNEL, "hierarchies", h))
        .collect::<PyResult<Vec<_>>>()?;
    let weights = weights
        .map(|w| convert::values::<U64>(py, KERNEL, "weights", array(&w).as_ref()))
        .transpose()?;
    let classes = run(py, || {
        let built = convert::hierarchies(&hierarchies)?;
        let refs: Vec<&kanon_core::Hierarchy> = built.iter().collect();
        let cols = convert::slices(&columns);
        kanon_core::groupify(
            &cols,
            &refs,
            &levels,
            weights.as_ref().map(|w| w.values().as_ref()),
        )
    })?;
    Ok((
        convert::to_python(py, Arc::new(UInt32Array::from(classes.class_of_row)))?,
        convert::to_python(py, Arc::new(UInt64Array::from(classes.sizes)))?,
    ))
}
