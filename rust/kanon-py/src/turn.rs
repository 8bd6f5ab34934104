//! One pack at a time: DuckDB calls a kernel UDF from several threads at once, but a
//! kernel that splits its work over every core itself gains little from running beside
//! another, while each call holds its own pack's converted copies (at 10M rows, two
//! Mondrian packs side by side held about 1.5 GB more than one).

use std::sync::{Condvar, Mutex, PoisonError};

use pyo3::Python;

static BUSY: Mutex<bool> = Mutex::new(false);
static FREED: Condvar = Condvar::new();

/// A caller's turn: while one is held, [`Turn::take`] waits.
pub(crate) struct Turn(());

impl Turn {
    /// Wait, with the GIL released, until no other caller holds a turn, and take it.
    pub(crate) fn take(py: Python<'_>) -> Self {
        py.detach(|| {
            let mut busy = BUSY.lock().unwrap_or_else(PoisonError::into_inner);
            while *busy {
                busy = FREED.wait(busy).unwrap_or_else(PoisonError::into_inner);
            }
            *busy = true;
        });
        Self(())
    }
}

impl Drop for Turn {
    fn drop(&mut self) {
        *BUSY.lock().unwrap_or_else(PoisonError::into_inner) = false;
        FREED.notify_one();
    }
}
