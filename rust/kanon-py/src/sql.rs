//! The SQL bundle (`sql/*.sql`), embedded at build time so SQL and kernels ship together.

use pyo3::prelude::*;

const BUNDLE: &[(&str, &str)] = &[
    (
        "010_kanon_config.sql",
        include_str!("../../../sql/010_kanon_config.sql"),
    ),
    (
        "200_kanon_check.sql",
        include_str!("../../../sql/200_kanon_check.sql"),
    ),
    (
        "210_kanon_classes.sql",
        include_str!("../../../sql/210_kanon_classes.sql"),
    ),
    ("300_kanon.sql", include_str!("../../../sql/300_kanon.sql")),
    (
        "310_kanon_metrics.sql",
        include_str!("../../../sql/310_kanon_metrics.sql"),
    ),
    (
        "320_kanon_search.sql",
        include_str!("../../../sql/320_kanon_search.sql"),
    ),
    (
        "400_kanon_hkp.sql",
        include_str!("../../../sql/400_kanon_hkp.sql"),
    ),
];

/// Return the embedded SQL files as ``[(file name, text), ...]`` in load order.
#[pyfunction]
pub(crate) fn sql_bundle() -> Vec<(&'static str, &'static str)> {
    BUNDLE.to_vec()
}
