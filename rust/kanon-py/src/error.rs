//! The one error funnel: every `KernelError` becomes the matching `kanon.exceptions` class.

use kanon_core::KernelError;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;

/// Convert a kernel error into the Python exception class users catch.
pub(crate) fn to_py(py: Python<'_>, err: &KernelError) -> PyErr {
    let class = match err {
        KernelError::NotNested { .. } | KernelError::NotSingleRoot { .. } => "HierarchyError",
        KernelError::LengthMismatch { .. } | KernelError::InvalidArgument { .. } => {
            "InvalidInputError"
        }
    };
    let message = err.to_string();
    match py
        .import("kanon.exceptions")
        .and_then(|m| m.getattr(class))
        .and_then(|cls| cls.call1((message.clone(),)))
    {
        Ok(instance) => PyErr::from_value(instance),
        Err(_) => PyValueError::new_err(message),
    }
}
