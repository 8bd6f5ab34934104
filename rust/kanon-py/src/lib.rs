//! `kanon._core`: the compiled module. Thin translation between Python and `kanon-core`.
//!
//! One file per kernel family (each a `#[pyfunction]` per SQL kernel UDF: Arrow columns
//! in, one Arrow struct array out), every Python / Arrow conversion in `convert`.

mod convert;
mod error;
mod forest;
mod hierarchy;
mod historic;
mod hkp;
mod models;
mod mondrian;
mod optimal;
mod packed;
mod priority;
mod progress;
mod splits;
mod sql;
mod stats;
mod turn;

use pyo3::prelude::*;

/// The compiled kernels of kanon (private; use the `kanon` package).
#[pymodule(gil_used = false)]
mod _core {
    #[pymodule_export]
    use super::forest::{forest, forest_extend};
    #[pymodule_export]
    use super::hierarchy::{encode_strings, groupify, validate_hierarchy};
    #[pymodule_export]
    use super::historic::historic;
    #[pymodule_export]
    use super::hkp::hkp;
    #[pymodule_export]
    use super::mondrian::mondrian;
    #[pymodule_export]
    use super::optimal::optimal;
    #[pymodule_export]
    use super::priority::{iterated, priority};
    #[pymodule_export]
    use super::progress::{progress, progress_cancel, progress_reset, progress_uncancel};
    #[pymodule_export]
    use super::splits::{float_splits_kernel, int_splits_kernel};
    #[pymodule_export]
    use super::sql::sql_bundle;
    #[pymodule_export]
    use super::stats::class_stats;

    #[pymodule_init]
    fn init(m: &pyo3::Bound<'_, pyo3::types::PyModule>) -> pyo3::PyResult<()> {
        use pyo3::types::PyModuleMethods;
        m.add("__version__", env!("CARGO_PKG_VERSION"))
    }
}
