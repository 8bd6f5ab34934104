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
//! Both return every value's node at every level as dense codes (in value order, which
//! is a depth-first order of the tree) and the bounds of every node.

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
    /// `codes[(n - 1) * values + i]`: the dense code (in value order) of value `i`'s
    /// node at level `n` (levels 1 ..= L).
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
    /// Number of levels above the values.
    pub fn levels(&self) -> usize {
        self.bounds.len().saturating_sub(1)
    }
}

fn invalid(message: String) -> KernelError {
    KernelError::InvalidArgument {
        kernel: "splits",
        message,
    }
}

/// Go's integer splits of `[0, span]` over sorted distinct `offsets` (values minus `lo`).
///
/// `splits` is the depth cap (the number of bits of `span` for the default hierarchy).
///
/// # Errors
/// [`KernelError::InvalidArgument`] when the offsets are not strictly increasing, one
/// exceeds `span`, or `splits` exceeds [`MAX_SPLITS`].
///
/// # Examples
/// ```
/// use kanon_core::splits::int_splits;
/// // [0..3] splits into [0..1] and [2..3]; the values 0, 3 sit in different halves.
/// let s = int_splits(&[0, 3], 3, 2).unwrap();
/// assert_eq!(s.codes, vec![0, 1, 0, 0]); // level 1: [0..1], [2..3]; level 2: the root
/// assert_eq!((s.lo, s.hi), (vec![0, 2, 0], vec![1, 3, 3]));
/// ```
pub fn int_splits(offsets: &[u64], span: u64, splits: u32) -> Result<Splits<u64>> {
    check_splits(splits)?;
    for (i, w) in offsets.windows(2).enumerate() {
        if w[0] >= w[1] {
            return Err(invalid(format!(
                "values must be distinct and sorted; value {} ({}) is not below the next ({})",
                i, w[0], w[1]
            )));
        }
    }
    if let Some(&last) = offsets.last() {
        if last > span {
            return Err(invalid(format!(
                "value {last} lies outside the range [0, {span}]"
            )));
        }
    }
    Ok(build(offsets.len(), splits, |i, path| {
        let x = u128::from(offsets[i]);
        let (mut a, mut b) = (0u128, u128::from(span));
        path.push((a, b));
        while a < b && path.len() <= splits as usize {
            let cut = a + (b - a + 1) / 2;
            if x < cut {
                b = cut - 1;
            } else {
                a = cut;
            }
            path.push((a, b));
        }
    })
    .map_bounds(|v| u64::try_from(v).unwrap_or(u64::MAX)))
}

/// Go's float splits of `[lo, hi]` over sorted distinct finite `values`.
///
/// `splits` is the depth cap (Go's `MaxSplit` of the range).
///
/// # Errors
/// [`KernelError::InvalidArgument`] when a value or bound is not finite, the values are
/// not strictly increasing or leave `[lo, hi]`, or `splits` exceeds [`MAX_SPLITS`].
///
/// # Examples
/// ```
/// use kanon_core::splits::float_splits;
/// // (0..1) splits at 0.5; 0.5 itself belongs to the left half.
/// let s = float_splits(&[0.5, 0.75], 0.0, 1.0, 1).unwrap();
/// assert_eq!(s.codes, vec![0, 0]); // one level: the root
/// let s = float_splits(&[0.5, 0.75], 0.0, 1.0, 2).unwrap();
/// assert_eq!(s.codes, vec![0, 1, 0, 0]);
/// assert_eq!((s.lo, s.hi), (vec![0.0, 0.5, 0.0], vec![0.5, 1.0, 1.0]));
/// ```
pub fn float_splits(values: &[f64], lo: f64, hi: f64, splits: u32) -> Result<Splits<f64>> {
    check_splits(splits)?;
    if !(lo.is_finite() && hi.is_finite() && lo <= hi) {
        return Err(invalid(format!("the range [{lo}, {hi}] is not finite")));
    }
    for (i, w) in values.windows(2).enumerate() {
        if w[0].partial_cmp(&w[1]) != Some(std::cmp::Ordering::Less) {
            return Err(invalid(format!(
                "values must be distinct, sorted and finite; value {} ({}) is not below the \
                 next ({})",
                i, w[0], w[1]
            )));
        }
    }
    if let (Some(&first), Some(&last)) = (values.first(), values.last()) {
        if !(first >= lo && last <= hi) {
            return Err(invalid(format!(
                "the values [{first}, {last}] leave the range [{lo}, {hi}]"
            )));
        }
    }
    Ok(build(values.len(), splits, |i, path| {
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

impl<T: Copy> Splits<T> {
    fn map_bounds<U>(self, f: impl Fn(T) -> U) -> Splits<U> {
        Splits {
            values: self.values,
            codes: self.codes,
            lo: self.lo.into_iter().map(&f).collect(),
            hi: self.hi.into_iter().map(&f).collect(),
            bounds: self.bounds,
        }
    }
}

/// Code every value's node at every level; `path(i, out)` pushes value `i`'s nodes from
/// the root down (at most `splits + 1`).
fn build<T: Copy + PartialEq>(
    n: usize,
    splits: u32,
    mut path: impl FnMut(usize, &mut Vec<(T, T)>),
) -> Splits<T> {
    let levels = splits.max(1) as usize;
    let mut codes = vec![0u32; levels * n];
    // Per level: its nodes' bounds, in value order.
    let mut nodes: Vec<Vec<(T, T)>> = vec![Vec::new(); levels];
    let mut nodes_of = Vec::with_capacity(splits as usize + 1);
    for i in 0..n {
        nodes_of.clear();
        path(i, &mut nodes_of);
        let deepest = nodes_of.len() - 1;
        for level in 1..=levels {
            let depth = (splits as usize).saturating_sub(level).min(deepest);
            let node = nodes_of[depth];
            let list = &mut nodes[level - 1];
            if list.last() != Some(&node) {
                list.push(node);
            }
            // At most n nodes per level, and n values fit a u32 list.
            codes[(level - 1) * n + i] = u32::try_from(list.len() - 1).unwrap_or(u32::MAX);
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
                let c = s.codes[l * s.values + i] as usize + s.bounds[l];
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
        assert_eq!(&s.codes[..4], &[0, 1, 2, 3]);
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
        assert!(int_splits(&[2, 1], 3, 2).is_err());
        assert!(int_splits(&[4], 3, 2).is_err());
        assert!(int_splits(&[1], 3, 65).is_err());
    }

    #[test]
    fn float_paths_and_tolerance() {
        let s = float_splits(&[0.0, 1e-6, 1.0], 0.0, 1.0, 17).unwrap();
        // 0 and 1e-6 share the smallest range (no wider than 1e-5).
        assert_eq!(s.codes[0], s.codes[1]);
        assert_ne!(s.codes[1], s.codes[2]);
        assert_eq!(path(&s, 2)[16], (0.0, 1.0));
        assert!(float_splits(&[f64::NAN], 0.0, 1.0, 1).is_err());
        assert!(float_splits(&[2.0], 0.0, 1.0, 1).is_err());
        let s = float_splits(&[], 0.0, 0.0, 0).unwrap();
        assert_eq!((s.levels(), s.lo.len()), (1, 0));
    }
}
