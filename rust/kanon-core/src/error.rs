//! The one error type of the kernels; every variant carries a sentence a user can act on.

use thiserror::Error;

/// Errors raised by the kernels. Messages name the kernel, the parameter and the value.
#[derive(Debug, Clone, PartialEq, Eq, Error)]
pub enum KernelError {
    /// Input slices that must have equal lengths do not.
    #[error("{kernel}: argument '{argument}' has {got} entries but {expected} were expected")]
    LengthMismatch {
        /// Kernel that detected the problem.
        kernel: &'static str,
        /// Name of the offending argument.
        argument: &'static str,
        /// Length received.
        got: usize,
        /// Length required.
        expected: usize,
    },
    /// A parameter is out of its valid range.
    #[error("{kernel}: {message}")]
    InvalidArgument {
        /// Kernel that detected the problem.
        kernel: &'static str,
        /// Self-contained description of the problem.
        message: String,
    },
    /// A hierarchy level is not a coarsening of the level below it.
    #[error(
        "hierarchy is not nested: the label with code {code} at level {level} maps to \
         more than one label at level {next_level} (row {row})"
    )]
    NotNested {
        /// Level whose label splits.
        level: usize,
        /// The following level.
        next_level: usize,
        /// Code of the label at `level`.
        code: u32,
        /// Row of the hierarchy where the conflict was found.
        row: usize,
    },
    /// The top level of a hierarchy has more than one value.
    #[error("hierarchy has {roots} labels at its top level {level}; exactly one root is required")]
    NotSingleRoot {
        /// Index of the top level.
        level: usize,
        /// Number of distinct labels found there.
        roots: usize,
    },
}

/// Result type of the kernels.
pub type Result<T> = std::result::Result<T, KernelError>;
