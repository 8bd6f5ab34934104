//! The histogram's tuples as the search reads them: leaf codes row by row, or the packed
//! keys the bindings receive, read in place (at 10M tuples an unpacked copy is 360 MB).

use crate::error::{KernelError, Result};
use crate::hierarchy::{check_arity, check_histogram, check_leaves, count_rows, Hierarchy};

use super::keys::each_unpacked;
use super::types::KERNEL;

/// The distinct tuples of a histogram.
#[derive(Clone, Copy)]
pub(super) enum Tuples<'a> {
    /// `m` leaf codes per tuple, attribute 0 first.
    Codes(&'a [u32]),
    /// Per tuple its leaf codes packed as [`super::key_bits`] lays them out, in two halves.
    Keys { low: &'a [u64], high: &'a [u64] },
}

impl Tuples<'_> {
    /// Check the tuples against `m`, the counts and the hierarchies; returns the rows.
    ///
    /// # Errors
    /// As [`check_histogram`]; for keys also as [`super::unpack_keys`], and
    /// [`KernelError::LengthMismatch`] when the counts and keys differ in length.
    pub(super) fn check(&self, m: usize, counts: &[u64], hierarchies: &[Hierarchy]) -> Result<u64> {
        let (low, high) = match *self {
            Self::Codes(codes) => return check_histogram(KERNEL, codes, m, counts, hierarchies),
            Self::Keys { low, high } => (low, high),
        };
        if counts.len() != low.len() {
            return Err(KernelError::LengthMismatch {
                kernel: KERNEL,
                argument: "counts",
                got: counts.len(),
                expected: low.len(),
            });
        }
        check_arity(KERNEL, m, hierarchies)?;
        each_unpacked(low, high, hierarchies, |t, codes| {
            check_leaves(KERNEL, t, codes, hierarchies)
        })?;
        count_rows(KERNEL, counts)
    }
}
