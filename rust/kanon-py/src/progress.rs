//! Progress and cancellation shared by the kernels of one statement.
//!
//! The kernels add the rows they finish (per pack or block) to a process-wide counter
//! that Python polls from another thread to draw a progress bar, and stop at their next
//! block once a cancellation was asked for (Ctrl-C).

use std::sync::atomic::{AtomicU64, Ordering};

use kanon_core::{cancel, KernelError};
use pyo3::prelude::*;

static DONE: AtomicU64 = AtomicU64::new(0);
static TOTAL: AtomicU64 = AtomicU64::new(0);

/// Start counting towards ``total`` rows (0: idle) and clear a cancellation.
#[pyfunction]
pub(crate) fn progress_reset(total: u64) {
    DONE.store(0, Ordering::Relaxed);
    TOTAL.store(total, Ordering::Relaxed);
    cancel::clear();
}

/// ``(rows done, rows in total)`` of the running statement.
#[pyfunction]
pub(crate) fn progress() -> (u64, u64) {
    (DONE.load(Ordering::Relaxed), TOTAL.load(Ordering::Relaxed))
}

/// Ask the running kernels to stop at their next poll (a few milliseconds at most).
#[pyfunction]
pub(crate) fn progress_cancel() {
    cancel::request();
}

/// Clear a cancellation without touching the progress counters.
#[pyfunction]
pub(crate) fn progress_uncancel() {
    cancel::clear();
}

/// Count `rows` as done; `false` once a cancellation was asked for.
pub(crate) fn advance(rows: u64) -> bool {
    DONE.fetch_add(rows, Ordering::Relaxed);
    !cancel::requested()
}

/// The error of a kernel stopped by a cancellation, if one was asked for.
pub(crate) fn cancelled(kernel: &'static str) -> Result<(), KernelError> {
    cancel::check(kernel)
}
