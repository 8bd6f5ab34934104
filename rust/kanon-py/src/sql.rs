//! The SQL bundle (`sql/*.sql`), embedded at build time so SQL and kernels ship together.
//! The table macros are generated from the declared options (python/kanon/_options.py).

use pyo3::prelude::*;

const BUNDLE: &[(&str, &str)] = &[
    (
        "010_kanon_config.sql",
        include_str!("../../../sql/010_kanon_config.sql"),
    ),
    (
        "020_kanon_policies.sql",
        include_str!("../../../sql/020_kanon_policies.sql"),
    ),
];

/// Return the embedded SQL files as ``[(file name, text), ...]`` in load order.
#[pyfunction]
pub(crate) fn sql_bundle() -> Vec<(&'static str, &'static str)> {
    BUNDLE.to_vec()
}
