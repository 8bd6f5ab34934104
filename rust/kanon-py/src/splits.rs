//! Binary interval splits, the default hierarchy of numbers: ``kanon_int_splits`` and
//! ``kanon_float_splits``.

use arrow_array::types::ArrowPrimitiveType;
use arrow_array::{Array, ArrayRef};
use kanon_core::splits::{float_splits, int_splits, Splits};
use pyo3::prelude::*;
use serde::Deserialize;

use crate::convert::{self, array, run, Column, NestedColumn, F64, U32, U64};

/// The options of ``kanon_int_splits`` (its JSON argument).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct IntOptions {
    /// ``hi - lo``: the root is ``[0, span]``.
    span: u64,
    /// The depth cap (the number of bits of ``span``).
    splits: u32,
}

/// The options of ``kanon_float_splits`` (its JSON argument).
#[derive(Debug, Deserialize)]
#[serde(deny_unknown_fields)]
struct FloatOptions {
    lo: f64,
    hi: f64,
    /// The depth cap (Go's ``MaxSplit`` of ``[lo, hi]``).
    splits: u32,
}

/// SQL ``kanon_int_splits(offsets, options)``: Go's integer binary splits of
/// ``[lo, hi]`` over one column's values per row.
///
/// Args:
///     offsets: ``UBIGINT[]``, the distinct values minus ``lo`` (for decimals, of their
///         unscaled integers), in any order.
///     options: JSON: ``span`` (``hi - lo``) and ``splits`` (the number of bits of
///         ``span``).
///
/// Returns:
///     Per row (NULL when an argument is NULL) a struct: ``codes`` per level
///     ``0 … L`` (``L = max(splits, 1)``) a code of every value, as given: at level 0
///     its rank among the values, above the dense code of its node (in value order);
///     ``lo`` and ``hi`` per level ``1 … L`` the bounds (offsets) of every node, by code.
///
/// Raises:
///     InvalidInputError: values not distinct or outside ``[0, span]``, more than 64
///         splits, malformed options.
#[pyfunction]
#[pyo3(name = "int_splits")]
pub(crate) fn int_splits_kernel<'py>(
    py: Python<'py>,
    offsets: Column,
    options: Column,
) -> PyResult<Bound<'py, PyAny>> {
    const KERNEL: &str = "int_splits";
    let columns = [array(&offsets), array(&options)];
    let lists = convert::lists(py, KERNEL, "offsets", columns[0].as_ref())?;
    let mut out = Output::<U64>::new();
    for i in 0..columns[0].len() {
        if !convert::all_valid(&columns, i) {
            out.push(None);
            continue;
        }
        let o: IntOptions = convert::options(py, KERNEL, columns[1].as_ref(), i)?;
        let values = convert::row::<U64>(py, KERNEL, "offsets", lists, i)?;
        let s = run(py, || int_splits(values.values(), o.span, o.splits))?;
        out.push(Some(&s));
    }
    convert::to_python(py, out.finish())
}

/// SQL ``kanon_float_splits(values, options)``: Go's float binary splits of
/// ``[lo, hi]`` over one column's values per row.
///
/// Args:
///     values: ``DOUBLE[]``, the distinct values, in any order.
///     options: JSON: ``lo``, ``hi`` and ``splits`` (Go's ``MaxSplit`` of the range).
///
/// Returns:
///     Per row (NULL when an argument is NULL) a struct: ``codes`` as
///     ``kanon_int_splits``, ``lo`` and ``hi`` per level the bounds of every node.
///
/// Raises:
///     InvalidInputError: values not distinct or outside ``[lo, hi]``, more than 64
///         splits, malformed options.
#[pyfunction]
#[pyo3(name = "float_splits")]
pub(crate) fn float_splits_kernel<'py>(
    py: Python<'py>,
    values: Column,
    options: Column,
) -> PyResult<Bound<'py, PyAny>> {
    const KERNEL: &str = "float_splits";
    let columns = [array(&values), array(&options)];
    let lists = convert::lists(py, KERNEL, "values", columns[0].as_ref())?;
    let mut out = Output::<F64>::new();
    for i in 0..columns[0].len() {
        if !convert::all_valid(&columns, i) {
            out.push(None);
            continue;
        }
        let o: FloatOptions = convert::options(py, KERNEL, columns[1].as_ref(), i)?;
        let values = convert::row::<F64>(py, KERNEL, "values", lists, i)?;
        let s = run(py, || float_splits(values.values(), o.lo, o.hi, o.splits))?;
        out.push(Some(&s));
    }
    convert::to_python(py, out.finish())
}

/// The struct column ``(codes, lo, hi)`` built row by row.
struct Output<T: ArrowPrimitiveType> {
    codes: NestedColumn<U32>,
    lo: NestedColumn<T>,
    hi: NestedColumn<T>,
    valid: Vec<bool>,
}

impl<T: ArrowPrimitiveType> Output<T> {
    fn new() -> Self {
        Self {
            codes: NestedColumn::new(),
            lo: NestedColumn::new(),
            hi: NestedColumn::new(),
            valid: Vec::new(),
        }
    }

    fn push(&mut self, s: Option<&Splits<T::Native>>) {
        match s {
            Some(s) => {
                let levels: Vec<usize> = (0..=s.levels() + 1).map(|l| l * s.values).collect();
                self.codes.push(Some((&s.codes, &levels)));
                self.lo.push(Some((&s.lo, &s.bounds)));
                self.hi.push(Some((&s.hi, &s.bounds)));
            }
            None => {
                self.codes.push(None);
                self.lo.push(None);
                self.hi.push(None);
            }
        }
        self.valid.push(s.is_some());
    }

    fn finish(self) -> ArrayRef {
        convert::struct_of(
            vec![
                ("codes", self.codes.finish()),
                ("lo", self.lo.finish()),
                ("hi", self.hi.finish()),
            ],
            &self.valid,
        )
    }
}
