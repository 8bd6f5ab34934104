//! Binary interval splits of sorted distinct values: the default hierarchy of numbers.
//!
//! The Go library's `RangeGeneralizer` (thesis §3.4.5): the root is the range
//! `[lo, hi]`; a range splits at its middle into two halves, again and again, until a
//! range cannot be split or `splits` levels are reached. Level `n` (1 ..= `L` with
//! `L = max(splits, 1)`) of a value is its ancestor `splits - n` splits below the root,
//! or its smallest range if that is reached sooner.
//!
//! - [`int_splits`]: integers (and decimals over their unscaled integers), as offsets
//!   from `lo`: `[a, b]` splits at `c = a + (b - a + 1) / 2` into `[a, c - 1]` and
//!   `[c, b]`; a range of one value stops.
//! - [`float_splits`]: doubles: `(a, b)` splits at `m = a + (b - a) / 2` into `(a, m)`
//!   (which holds `m`) and `(m, b)`; a range no wider than [`FLOAT_DELTA`] stops.
//!
//! Both take the distinct values in any order and return, for every value (in the
//! order given), its rank and its node at every level as dense codes in value order
//! (a depth-first order of the tree), and the bounds of every node.

use crate::error::{KernelError, Result};

/// Float ranges no wider than this are not split (the Go library's tolerance).
pub const FLOAT_DELTA: f64 = 1e-5;
/// The most splits a hierarchy may have.
pub const MAX_SPLITS: u32 = 64;

/// Every value's node at every level, and the nodes' bounds.
#[derive(Debug, Clone, PartialEq)]
pub struct Splits<T> {
    /// Number of values `n`.
    pub values: usize,
    /// `codes[l * values + i]`: at level `l` = 0 the rank of value `i` (as given) among
    /// the values, at level `l` = 1 ..= L the dense code (in value order) of its node.
    pub codes: Vec<u32>,
    /// Lower bound of every node, level by level (level `n`'s nodes are
    /// `lo[bounds[n - 1]..bounds[n]]`, in code order).
    pub lo: Vec<T>,
    /// Upper bound of every node, as `lo`.
    pub hi: Vec<T>,
    /// Where each level's nodes start in `lo` and `hi` (L + 1 entries).
    pub bounds: Vec<usize>,
}

impl<T> Splits<T> {
    /// Number of levels above the values (L).
    pub fn levels(&self) -> usize {
        self.bounds.len().saturating_sub(1)
    }
}

/// The positions of `values` in ascending order, or the first two equal values.
fn sorted<T: Copy + PartialOrd>(values: &[T]) -> std::result::Result<Vec<u32>, (T, usize)> {
    // Fewer than 2^32 values (checked by the callers).
    let mut pairs: Vec<(T, u32)> = values
        .iter()
        .enumerate()
        .map(|(i, &v)| (v, u32::try_from(i).unwrap_or(u32::MAX)))
        .collect();
    // The callers checked every value is comparable (within the range: not NaN).
    pairs.sort_unstable_by(|a, b| a.0.partial_cmp(&b.0).unwrap_or(std::cmp::Ordering::Equal));
    for w in pairs.windows(2) {
        if w[0].0 == w[1].0 {
            return Err((w[0].0, w[1].1 as usize));
        }
    }
    Ok(pairs.into_iter().map(|(_, i)| i).collect())
}

fn too_many(n: usize) -> Result<()> {
    if u32::try_from(n).is_err() {
        return Err(invalid(format!(
            "{n} values; at most 2^32 - 1 are supported"
        )));
    }
    Ok(())
}

fn invalid(message: String) -> KernelError {
    KernelError::InvalidArgument {
        kernel: "splits",
        message,
    }
}

/// Go's integer splits of `[0, span]` over distinct `offsets` (values minus `lo`).
///
/// `splits` is the depth cap (the number of bits of `span` for the default hierarchy).
///
/// # Errors
/// [`KernelError::InvalidArgument`] when two offsets are equal, one exceeds `span`,
/// there are 2^32 or more, or `splits` exceeds [`MAX_SPLITS`].
///
/// # Complexity
/// O(n log n + n · splits) time, O(n · splits) space.
///
/// # Examples
/// ```
/// use kanon_core::splits::int_splits;
/// // [0..3] splits into [0..1] and [2..3]; the values 0, 3 sit in different halves.
/// let s = int_splits(&[3, 0], 3, 2).unwrap();
/// // ranks; level 1: [0..1], [2..3]; level 2: the root
/// assert_eq!(s.codes, vec![1, 0, 1, 0, 0, 0]);
/// assert_eq!((s.lo, s.hi), (vec![0, 2, 0], vec![1, 3, 3]));
/// ```
pub fn int_splits(offsets: &[u64], span: u64, splits: u32) -> Result<Splits<u64>> {
    check_splits(splits)?;
    too_many(offsets.len())?;
    if let Some(&big) = offsets.iter().find(|&&x| x > span) {
        return Err(invalid(format!(
            "value {big} lies outside the range [0, {span}]"
        )));
    }
    let order = sorted(offsets)
        .map_err(|(x, i)| invalid(format!("values must be distinct; {x} (at {i}) repeats")))?;
    Ok(build(&order, splits, |i, path| {
        let x = offsets[i];
        let (mut a, mut b) = (0u64, span);
        path.push((a, b));
        while a < b && path.len() <= splits as usize {
            // a + (b - a + 1) / 2, without overflow at b - a = u64::MAX.
            let d = b - a;
            let cut = a + (d - d / 2);
            if x < cut {
                b = cut - 1;
            } else {
                a = cut;
            }
            path.push((a, b));
        }
    }))
}

/// Go's float splits of `[lo, hi]` over distinct `values`.
///
/// `splits` is the depth cap (Go's `MaxSplit` of the range).
///
/// # Errors
/// [`KernelError::InvalidArgument`] when a bound is not finite, a value lies outside
/// `[lo, hi]` (NaN does), two values are equal, there are 2^32 or more, or `splits`
/// exceeds [`MAX_SPLITS`].
///
/// # Complexity
/// O(n log n + n · splits) time, O(n · splits) space.
///
/// # Examples
/// ```
/// use kanon_core::splits::float_splits;
/// // (0..1) splits at 0.5; 0.5 itself belongs to the left half.
/// let s = float_splits(&[0.5, 0.75], 0.0, 1.0, 1).unwrap();
/// assert_eq!(s.codes, vec![0, 1, 0, 0]); // ranks, then one level: the root
/// let s = float_splits(&[0.5, 0.75], 0.0, 1.0, 2).unwrap();
/// assert_eq!(s.codes, vec![0, 1, 0, 1, 0, 0]);
/// assert_eq!((s.lo, s.hi), (vec![0.0, 0.5, 0.0], vec![0.5, 1.0, 1.0]));
/// ```
pub fn float_splits(values: &[f64], lo: f64, hi: f64, splits: u32) -> Result<Splits<f64>> {
    check_splits(splits)?;
    if !(lo.is_finite() && hi.is_finite() && lo <= hi) {
        return Err(invalid(format!("the range [{lo}, {hi}] is not finite")));
    }
    too_many(values.len())?;
    if let Some(&x) = values.iter().find(|&&x| !(x >= lo && x <= hi)) {
        return Err(invalid(format!(
            "value {x} lies outside the range [{lo}, {hi}]"
        )));
    }
    let order = sorted(values)
        .map_err(|(x, i)| invalid(format!("values must be distinct; {x} (at {i}) repeats")))?;
    Ok(build(&order, splits, |i, path| {
        let x = values[i];
        let (mut a, mut b) = (lo, hi);
        path.push((a, b));
        while (b - a).abs() > FLOAT_DELTA && path.len() <= splits as usize {
            let mid = a + (b - a) / 2.0;
            if x <= mid {
                b = mid;
            } else {
                a = mid;
            }
            path.push((a, b));
        }
    }))
}

fn check_splits(splits: u32) -> Result<()> {
    if splits > MAX_SPLITS {
        return Err(invalid(format!(
            "{splits} splits requested; at most {MAX_SPLITS} are supported"
        )));
    }
    Ok(())
}

/// Code every value's node at every level, visiting the values in ascending `order`;
/// `path(i, out)` pushes value `i`'s nodes from the root down (at most `splits + 1`).
fn build<T: Copy + PartialEq>(
    order: &[u32],
    splits: u32,
    mut path: impl FnMut(usize, &mut Vec<(T, T)>),
) -> Splits<T> {
    let n = order.len();
    let levels = splits.max(1) as usize;
    // Codes by rank first, one row of `levels` codes per value (written in order), then
    // moved to the values' positions: a row at a time, not a code at a time (the values
    // come in any order, and a scattered write per code and level is slow).
    let mut by_rank = vec![0u32; levels * n];
    // Per level: its nodes' bounds, in value order.
    let mut nodes: Vec<Vec<(T, T)>> = vec![Vec::new(); levels];
    let mut nodes_of = Vec::with_capacity(splits as usize + 1);
    for (rank, &i) in order.iter().enumerate() {
        nodes_of.clear();
        path(i as usize, &mut nodes_of);
        let deepest = nodes_of.len() - 1;
        let row = &mut by_rank[rank * levels..(rank + 1) * levels];
        for (level, (code, list)) in row.iter_mut().zip(nodes.iter_mut()).enumerate() {
            let depth = (splits as usize).saturating_sub(level + 1).min(deepest);
            let node = nodes_of[depth];
            if list.last() != Some(&node) {
                list.push(node);
            }
            // Fewer than 2^32 values (checked), so codes fit.
            *code = u32::try_from(list.len() - 1).unwrap_or(u32::MAX);
        }
    }
    let mut codes = vec![0u32; (levels + 1) * n];
    for (rank, &i) in order.iter().enumerate() {
        codes[i as usize] = u32::try_from(rank).unwrap_or(u32::MAX);
    }
    let (ranks, above) = codes.split_at_mut(n);
    // In blocks of values whose rows stay in cache, a level at a time (the levels lie
    // n codes apart: writing them all per value would thrash the same cache sets).
    const BLOCK: usize = 2048;
    for (b, block) in ranks.chunks(BLOCK).enumerate() {
        for (level, out) in above.chunks_exact_mut(n).enumerate() {
            let out = &mut out[b * BLOCK..b * BLOCK + block.len()];
            for (slot, &rank) in out.iter_mut().zip(block) {
                *slot = by_rank[rank as usize * levels + level];
            }
        }
    }
    let mut bounds = vec![0];
    let (mut lo, mut hi) = (Vec::new(), Vec::new());
    for list in nodes {
        lo.extend(list.iter().map(|&(a, _)| a));
        hi.extend(list.iter().map(|&(_, b)| b));
        bounds.push(lo.len());
    }
    Splits {
        values: n,
        codes,
        lo,
        hi,
        bounds,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    /// The labels of value `i` per level, as `(lo, hi)`.
    fn path<T: Copy>(s: &Splits<T>, i: usize) -> Vec<(T, T)> {
        (0..s.levels())
            .map(|l| {
                let c = s.codes[(l + 1) * s.values + i] as usize + s.bounds[l];
                (s.lo[c], s.hi[c])
            })
            .collect()
    }

    #[test]
    fn int_paths_match_go() {
        // [0..7] over 0, 3, 4, 7: three splits.
        let s = int_splits(&[0, 3, 4, 7], 7, 3).unwrap();
        assert_eq!(path(&s, 1), vec![(2, 3), (0, 3), (0, 7)]);
        assert_eq!(path(&s, 2), vec![(4, 5), (4, 7), (0, 7)]);
        // Level 1 codes are dense in value order.
        assert_eq!(&s.codes[4..8], &[0, 1, 2, 3]);
        // Any order in, codes by position out.
        let t = int_splits(&[7, 0, 4, 3], 7, 3).unwrap();
        assert_eq!(&t.codes[..4], &[3, 0, 2, 1]);
        assert_eq!(path(&t, 3), path(&s, 1));
        assert_eq!((&t.lo, &t.hi), (&s.lo, &s.hi));
        // [0..5]: 3 is a leaf after two splits ([3..5] -> [3..3]), 5 after three.
        let s = int_splits(&[3, 5], 5, 3).unwrap();
        assert_eq!(path(&s, 0), vec![(3, 3), (3, 5), (0, 5)]);
        assert_eq!(path(&s, 1), vec![(4, 5), (3, 5), (0, 5)]);
    }

    #[test]
    fn int_extremes() {
        let s = int_splits(&[0], 0, 0).unwrap();
        assert_eq!(path(&s, 0), vec![(0, 0)]);
        let s = int_splits(&[0, u64::MAX], u64::MAX, 64).unwrap();
        assert_eq!(s.levels(), 64);
        assert_eq!(path(&s, 1)[0], (u64::MAX - 1, u64::MAX));
        assert_eq!(path(&s, 1)[62], (1 << 63, u64::MAX));
        assert!(int_splits(&[2, 1, 2], 3, 2).is_err());
        assert!(int_splits(&[4], 3, 2).is_err());
        assert!(int_splits(&[1], 3, 65).is_err());
    }

    #[test]
    fn float_paths_and_tolerance() {
        let s = float_splits(&[0.0, 1e-6, 1.0], 0.0, 1.0, 17).unwrap();
        // 0 and 1e-6 share the smallest range (no wider than 1e-5).
        assert_eq!(s.codes[3], s.codes[4]);
        assert_ne!(s.codes[4], s.codes[5]);
        assert_eq!(path(&s, 2)[16], (0.0, 1.0));
        assert!(float_splits(&[f64::NAN], 0.0, 1.0, 1).is_err());
        assert!(float_splits(&[2.0], 0.0, 1.0, 1).is_err());
        let s = float_splits(&[], 0.0, 0.0, 0).unwrap();
        assert_eq!((s.levels(), s.lo.len()), (1, 0));
    }
}
