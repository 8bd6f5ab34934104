//! The histogram's tuples as the search reads them: leaf codes row by row, or the packed
//! keys the bindings receive, read in place (at 10M tuples an unpacked copy is 360 MB).

use crate::error::{KernelError, Result};
use crate::hierarchy::{check_histogram, Hierarchy};

use super::keys::key_bits;
use super::types::KERNEL;

/// The distinct tuples of a histogram.
#[derive(Clone, Copy)]
pub(super) enum Tuples<'a> {
    /// `m` leaf codes per tuple, attribute 0 first.
    Codes(&'a [u32]),
    /// Per tuple its leaf codes packed as [`key_bits`] lays them out, in two halves.
    Keys { low: &'a [u64], high: &'a [u64] },
}

impl Tuples<'_> {
    /// Check the tuples against `m`, the counts and the hierarchies; returns the rows.
    ///
    /// # Errors
    /// As [`check_histogram`]; for keys also [`KernelError::LengthMismatch`] when the
    /// halves or counts differ in length, and [`KernelError::InvalidArgument`] for a
    /// key with bits set above its codes.
    pub(super) fn check(&self, m: usize, counts: &[u64], hierarchies: &[Hierarchy]) -> Result<u64> {
        let (low, high) = match *self {
            Self::Codes(codes) => return check_histogram(KERNEL, codes, m, counts, hierarchies),
            Self::Keys { low, high } => (low, high),
        };
        for (argument, len) in [("high", high.len()), ("counts", counts.len())] {
            if len != low.len() {
                return Err(KernelError::LengthMismatch {
                    kernel: KERNEL,
                    argument,
                    got: len,
                    expected: low.len(),
                });
            }
        }
        // m and the hierarchies, with no tuples; then every key's codes.
        let rows = check_histogram(KERNEL, &[], m, &[], hierarchies)?;
        let bits = key_bits(hierarchies)?;
        let total: u32 = bits.iter().sum();
        for (t, (&lo, &hi)) in low.iter().zip(high).enumerate() {
            let mut key = u128::from(hi) << 64 | u128::from(lo);
            if total < 128 && key >> total != 0 {
                return Err(KernelError::InvalidArgument {
                    kernel: KERNEL,
                    message: format!("packed tuple {t} has bits set above its {total} bits"),
                });
            }
            for (j, (&b, h)) in bits.iter().zip(hierarchies).enumerate() {
                let code = (key & ((1u128 << b) - 1)) as usize;
                if code >= h.leaves() {
                    return Err(KernelError::InvalidArgument {
                        kernel: KERNEL,
                        message: format!(
                            "tuple {t} has code {code} in attribute {j}, which has {} leaves",
                            h.leaves()
                        ),
                    });
                }
                key >>= b;
            }
        }
        counts
            .iter()
            .try_fold(rows, |acc, &c| acc.checked_add(c))
            .ok_or_else(|| KernelError::InvalidArgument {
                kernel: KERNEL,
                message: "the counts overflow 64 bits".to_owned(),
            })
    }
}
