//! `kanon._core`: the compiled module. Thin translation between Python and `kanon-core`.

mod error;
mod hkp;
mod kernels;
mod mondrian;
mod progress;
mod sql;

use pyo3::prelude::*;

/// The compiled kernels of kanon (private; use the `kanon` package).
#[pymodule(gil_used = false)]
mod _core {
    #[pymodule_export]
    use super::hkp::hkp;
    #[pymodule_export]
    use super::kernels::{
        class_stats, encode_strings, forest_anonymize, forest_extend, groupify, historic_release,
        lattice_optimal, validate_hierarchy,
    };
    #[pymodule_export]
    use super::mondrian::mondrian_partition;
    #[pymodule_export]
    use super::progress::{progress, progress_cancel, progress_reset, progress_uncancel};
    #[pymodule_export]
    use super::sql::sql_bundle;

    #[pymodule_init]
    fn init(m: &pyo3::Bound<'_, pyo3::types::PyModule>) -> pyo3::PyResult<()> {
        use pyo3::types::PyModuleMethods;
        m.add("__version__", env!("CARGO_PKG_VERSION"))
    }
}
