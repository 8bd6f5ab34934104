//! Cooperative cancellation of the running kernels.
//!
//! A process-wide flag that the bindings raise when the statement running the kernels is
//! interrupted (Ctrl-C, `con.interrupt()`). The kernels poll it in their long loops
//! ([`check`], or [`Poll`] every few thousand iterations, so a poll costs next to
//! nothing) and return [`KernelError::InvalidArgument`] with the message [`MESSAGE`].
//! The flag holds no data: a kernel stopped early returns no partial result.

use std::sync::atomic::{AtomicBool, Ordering};

use crate::error::{KernelError, Result};

static REQUESTED: AtomicBool = AtomicBool::new(false);

/// The message of the error a cancelled kernel returns.
pub const MESSAGE: &str = "cancelled (the statement was interrupted)";

/// Ask every running kernel to stop at its next poll.
pub fn request() {
    REQUESTED.store(true, Ordering::Relaxed);
}

/// Clear a cancellation (before a new statement starts its kernels).
pub fn clear() {
    REQUESTED.store(false, Ordering::Relaxed);
}

/// Whether a cancellation was asked for.
#[must_use]
pub fn requested() -> bool {
    REQUESTED.load(Ordering::Relaxed)
}

/// The error of kernel `kernel` stopped by a cancellation.
#[must_use]
pub fn error(kernel: &'static str) -> KernelError {
    KernelError::InvalidArgument {
        kernel,
        message: MESSAGE.to_owned(),
    }
}

/// `Err` when a cancellation was asked for.
///
/// # Errors
/// [`KernelError::InvalidArgument`] with [`MESSAGE`] once [`request`] was called.
pub fn check(kernel: &'static str) -> Result<()> {
    if requested() {
        Err(error(kernel))
    } else {
        Ok(())
    }
}

/// A poll for tight loops: reads the flag once every `every` calls of [`Poll::tick`].
#[derive(Debug, Clone)]
pub struct Poll {
    kernel: &'static str,
    every: u32,
    left: u32,
}

impl Poll {
    /// A poll of kernel `kernel` reading the flag every `every` ticks (at least 1).
    #[must_use]
    pub fn new(kernel: &'static str, every: u32) -> Self {
        let every = every.max(1);
        Self {
            kernel,
            every,
            left: every,
        }
    }

    /// Count one iteration; `Err` when this one reads the flag and finds it raised.
    ///
    /// # Errors
    /// [`KernelError::InvalidArgument`] with [`MESSAGE`] after a cancellation.
    #[inline]
    pub fn tick(&mut self) -> Result<()> {
        self.left -= 1;
        if self.left == 0 {
            self.left = self.every;
            check(self.kernel)?;
        }
        Ok(())
    }
}
