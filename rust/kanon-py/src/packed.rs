//! A pack of tuples as the local kernels (forest, Mondrian, priority, iterated) read it.
//!
//! SQL hands a pack over as one list of codes per quasi-identifier, the counts and the
//! tuples' numbers `t`, all built by one aggregate: they share one order, which SQL
//! does not fix (an ordered aggregate would buffer and sort every list). The kernels get
//! the tuples row-major in order of `t` (so results do not depend on that order), and
//! per-tuple results go back in SQL's order.

use arrow_array::ListArray;
use pyo3::prelude::*;

use crate::convert::{self, U32, U64};

/// One pack: `m` codes per tuple (row-major) and the counts, in order of `t`.
pub(crate) struct Packed {
    pub(crate) tuples: Vec<u32>,
    pub(crate) counts: Vec<u64>,
    /// `order[r]`: where the `r`-th tuple (in order of `t`) stands in SQL's lists.
    order: Vec<usize>,
}

impl Packed {
    /// Row `i` of the columns `tuples` (`UINTEGER[][]`, one list per quasi-identifier),
    /// `counts` and `ts` (`UBIGINT[]`), of `m` quasi-identifiers.
    pub(crate) fn read(
        py: Python<'_>,
        kernel: &'static str,
        [tuples, counts, ts]: [&ListArray; 3],
        i: usize,
        m: usize,
    ) -> PyResult<Self> {
        let codes = convert::rows::<U32>(py, kernel, "tuples", tuples, i)?;
        let counts = convert::row::<U64>(py, kernel, "counts", counts, i)?;
        let ts = convert::row::<U64>(py, kernel, "ts", ts, i)?;
        let n = ts.len();
        if codes.len() != m || codes.iter().any(|c| c.len() != n) || counts.len() != n {
            let message = format!(
                "argument 'tuples' must hold {m} lists of the length of 'ts' ({n}), as 'counts'"
            );
            return Err(convert::invalid(py, kernel, message));
        }
        let ts = ts.values();
        let mut order: Vec<usize> = (0..n).collect();
        order.sort_unstable_by_key(|&r| ts[r]);
        let codes = convert::slices(&codes);
        let mut tuples = Vec::with_capacity(n * m);
        for &r in &order {
            tuples.extend(codes.iter().map(|c| c[r]));
        }
        let counts = order.iter().map(|&r| counts.values()[r]).collect();
        Ok(Self {
            tuples,
            counts,
            order,
        })
    }

    /// Per-tuple `values` (in order of `t`) in SQL's order.
    pub(crate) fn in_sql_order<T: Copy + Default>(&self, values: &[T]) -> Vec<T> {
        let mut out = vec![T::default(); values.len()];
        for (&r, &v) in self.order.iter().zip(values) {
            out[r] = v;
        }
        out
    }
}
