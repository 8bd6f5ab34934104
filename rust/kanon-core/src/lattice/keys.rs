//! Level vectors packed into integer keys: the bits of every attribute, and unpacking
//! keys back into levels.

use crate::error::{KernelError, Result};
use crate::hierarchy::Hierarchy;

use super::types::KERNEL;

/// The bits of each attribute's leaf code in a packed tuple: enough for its leaves'
/// codes (0 for a single leaf). Attribute 0 takes the lowest bits.
///
/// # Errors
/// [`KernelError::InvalidArgument`] when the bits add up to more than 127.
pub fn key_bits(hierarchies: &[Hierarchy]) -> Result<Vec<u32>> {
    let bits: Vec<u32> = hierarchies
        .iter()
        .map(|h| u32::BITS - (h.leaves().max(1) as u32 - 1).leading_zeros())
        .collect();
    let total: u32 = bits.iter().sum();
    if total > 127 {
        return Err(KernelError::InvalidArgument {
            kernel: KERNEL,
            message: format!(
                "the quasi-identifiers have too many distinct values to pack a tuple into \
                 128 bits ({total} bits)"
            ),
        });
    }
    Ok(bits)
}

/// The leaf codes of tuples packed as [`key_bits`] lays them out, each key split into
/// its low and high 64 bits: `m` codes per tuple, attribute 0 first.
///
/// # Errors
/// [`KernelError::LengthMismatch`] when `low` and `high` differ in length, and
/// [`KernelError::InvalidArgument`] as [`key_bits`] or for a key with bits set above
/// the packed codes.
///
/// # Examples
/// ```
/// use kanon_core::lattice::unpack_keys;
/// use kanon_core::Hierarchy;
/// let four = Hierarchy::try_from_levels(&[&[0, 1, 2, 3], &[0, 0, 0, 0]]).unwrap();
/// let two = Hierarchy::try_from_levels(&[&[0, 1], &[0, 0]]).unwrap();
/// // Codes (3, 1): 3 in bits 0-1, 1 in bit 2.
/// assert_eq!(unpack_keys(&[0b111], &[0], &[four, two]).unwrap(), vec![3, 1]);
/// ```
pub fn unpack_keys(low: &[u64], high: &[u64], hierarchies: &[Hierarchy]) -> Result<Vec<u32>> {
    let mut out = Vec::with_capacity(low.len() * hierarchies.len());
    each_unpacked(low, high, hierarchies, |_, codes| {
        out.extend_from_slice(codes);
        Ok(())
    })?;
    Ok(out)
}

/// Call `visit` with every tuple's index and leaf codes, unpacked as [`unpack_keys`]
/// unpacks them (with its checks); stops at `visit`'s first error.
pub(super) fn each_unpacked(
    low: &[u64],
    high: &[u64],
    hierarchies: &[Hierarchy],
    mut visit: impl FnMut(usize, &[u32]) -> Result<()>,
) -> Result<()> {
    if low.len() != high.len() {
        return Err(KernelError::LengthMismatch {
            kernel: KERNEL,
            argument: "high",
            got: high.len(),
            expected: low.len(),
        });
    }
    let bits = key_bits(hierarchies)?;
    let total: u32 = bits.iter().sum();
    let mut codes = vec![0u32; bits.len()];
    for (t, (&lo, &hi)) in low.iter().zip(high).enumerate() {
        let mut key = u128::from(hi) << 64 | u128::from(lo);
        if total < 128 && key >> total != 0 {
            return Err(KernelError::InvalidArgument {
                kernel: KERNEL,
                message: format!("packed tuple {t} has bits set above its {total} bits"),
            });
        }
        for (code, &b) in codes.iter_mut().zip(&bits) {
            *code = (key & ((1u128 << b) - 1)) as u32;
            key >>= b;
        }
        visit(t, &codes)?;
    }
    Ok(())
}
