//! Every conversion between Python / Arrow and Rust: columns in (through Arrow's C data
//! interface, zero-copy), typed options out of their JSON text, Arrow arrays out.
//!
//! A kernel UDF receives one Arrow array per SQL argument (a row per call of the SQL
//! function) and returns one struct array with a row per input row. Input slices borrow
//! the Arrow buffers DuckDB handed over; nothing is copied on the way in.
//!
//! The only `unsafe` code of the bindings is here: reading the C structs of Arrow's
//! PyCapsule interface (`__arrow_c_array__`), which the exporter guarantees valid.
#![allow(unsafe_code)]

use std::ffi::CStr;
use std::sync::Arc;

use arrow_array::cast::AsArray;
use arrow_array::ffi::{from_ffi, FFI_ArrowArray, FFI_ArrowSchema};
use arrow_array::types::{ArrowPrimitiveType, Float64Type, UInt32Type, UInt64Type};
use arrow_array::{
    make_array, Array, ArrayRef, BooleanArray, Float64Array, ListArray, PrimitiveArray,
    StringArray, StructArray, UInt32Array, UInt64Array,
};
use arrow_buffer::{NullBuffer, OffsetBuffer, ScalarBuffer};
use arrow_schema::{DataType, Field, Fields};
use kanon_core::{Hierarchy, KernelError};
use pyo3::exceptions::PyTypeError;
use pyo3::intern;
use pyo3::prelude::*;
use pyo3::types::{PyCapsule, PyTuple};
use serde::de::DeserializeOwned;

use crate::error::to_py;

/// The `InvalidInputError` of a malformed argument of `kernel`.
pub(crate) fn invalid(py: Python<'_>, kernel: &'static str, message: String) -> PyErr {
    to_py(py, &KernelError::InvalidArgument { kernel, message })
}

/// Run a kernel with the GIL released and funnel its error into `kanon.exceptions`.
pub(crate) fn run<T: Send>(
    py: Python<'_>,
    kernel: impl FnOnce() -> Result<T, KernelError> + Send,
) -> PyResult<T> {
    py.detach(kernel).map_err(|e| to_py(py, &e))
}

const ARRAY_CAPSULE: &CStr = c"arrow_array";
const SCHEMA_CAPSULE: &CStr = c"arrow_schema";

/// An Arrow array received from Python: an object with ``__arrow_c_array__`` (pyarrow)
/// imported without copies, or a numpy array or buffer (through ``pyarrow.array``).
pub(crate) struct Column(ArrayRef);

impl<'py> FromPyObject<'_, 'py> for Column {
    type Error = PyErr;

    fn extract(obj: Borrowed<'_, 'py, PyAny>) -> PyResult<Self> {
        let py = obj.py();
        let exported = if obj.hasattr(intern!(py, "__arrow_c_array__"))? {
            obj.to_owned()
        } else {
            // numpy arrays and buffers (memoryview): numpy views them, pyarrow wraps.
            let values = py
                .import(intern!(py, "numpy"))?
                .call_method1("asarray", (obj,))?;
            py.import(intern!(py, "pyarrow"))?
                .call_method1("array", (values,))?
        };
        let capsules = exported.call_method0(intern!(py, "__arrow_c_array__"))?;
        let capsules = capsules.cast::<PyTuple>()?;
        let schema = capsules.get_item(0)?;
        let schema = schema.cast::<PyCapsule>()?;
        let array = capsules.get_item(1)?;
        let array = array.cast::<PyCapsule>()?;
        let schema = schema
            .pointer_checked(Some(SCHEMA_CAPSULE))?
            .cast::<FFI_ArrowSchema>();
        let array = array
            .pointer_checked(Some(ARRAY_CAPSULE))?
            .cast::<FFI_ArrowArray>();
        // SAFETY: the capsules hold the C structs of the Arrow PyCapsule interface, named
        // as checked above; `from_raw` moves the array out (the capsule keeps a released
        // one), the schema stays owned by its capsule, alive for this call.
        let data = unsafe {
            let array = FFI_ArrowArray::from_raw(array.as_ptr());
            from_ffi(array, schema.as_ref())
        }
        .map_err(|e| PyTypeError::new_err(format!("not a valid Arrow array: {e}")))?;
        Ok(Self(make_array(data)))
    }
}

/// The Arrow array of a column.
pub(crate) fn array(column: &Column) -> &ArrayRef {
    &column.0
}

/// Whether row `i` of every column is valid (not NULL).
pub(crate) fn all_valid(columns: &[&ArrayRef], i: usize) -> bool {
    columns.iter().all(|c| c.is_valid(i))
}

/// `array` as a list array (a SQL `T[]` argument).
pub(crate) fn lists<'a>(
    py: Python<'_>,
    kernel: &'static str,
    name: &str,
    array: &'a dyn Array,
) -> PyResult<&'a ListArray> {
    array.as_list_opt::<i32>().ok_or_else(|| {
        invalid(
            py,
            kernel,
            format!(
                "argument '{name}' must be a list, got {}",
                array.data_type()
            ),
        )
    })
}

/// `array` as a primitive array of `T` without NULL values (zero-copy).
pub(crate) fn values<T: ArrowPrimitiveType>(
    py: Python<'_>,
    kernel: &'static str,
    name: &str,
    array: &dyn Array,
) -> PyResult<PrimitiveArray<T>> {
    let Some(typed) = array.as_primitive_opt::<T>() else {
        return Err(invalid(
            py,
            kernel,
            format!(
                "argument '{name}' must hold {}, got {}",
                T::DATA_TYPE,
                array.data_type()
            ),
        ));
    };
    if typed.null_count() > 0 {
        return Err(invalid(
            py,
            kernel,
            format!(
                "argument '{name}' contains {} NULL values",
                typed.null_count()
            ),
        ));
    }
    Ok(typed.clone())
}

/// The elements of row `i` of a list column of `T` (zero-copy).
pub(crate) fn row<T: ArrowPrimitiveType>(
    py: Python<'_>,
    kernel: &'static str,
    name: &str,
    list: &ListArray,
    i: usize,
) -> PyResult<PrimitiveArray<T>> {
    values::<T>(py, kernel, name, &list.value(i))
}

/// The lists of row `i` of a `T[][]` column, one array per inner list.
pub(crate) fn rows<T: ArrowPrimitiveType>(
    py: Python<'_>,
    kernel: &'static str,
    name: &str,
    list: &ListArray,
    i: usize,
) -> PyResult<Vec<PrimitiveArray<T>>> {
    let inner = list.value(i);
    let inner = lists(py, kernel, name, &inner)?;
    (0..inner.len())
        .map(|j| row::<T>(py, kernel, name, inner, j))
        .collect()
}

/// The value of row `i` of a `UBIGINT` column.
pub(crate) fn scalar_u64(
    py: Python<'_>,
    kernel: &'static str,
    name: &str,
    array: &dyn Array,
    i: usize,
) -> PyResult<u64> {
    let Some(typed) = array.as_primitive_opt::<UInt64Type>() else {
        return Err(invalid(
            py,
            kernel,
            format!(
                "argument '{name}' must be UBIGINT, got {}",
                array.data_type()
            ),
        ));
    };
    Ok(typed.value(i))
}

/// The text of row `i` of a `VARCHAR` column, None when NULL.
pub(crate) fn text(array: &dyn Array, i: usize) -> Option<&str> {
    if array.is_null(i) {
        return None;
    }
    match array.data_type() {
        DataType::Utf8 => Some(array.as_string::<i32>().value(i)),
        DataType::LargeUtf8 => Some(array.as_string::<i64>().value(i)),
        DataType::Utf8View => Some(array.as_string_view().value(i)),
        _ => None,
    }
}

/// Parse the JSON options of row `i` into the kernel's typed options; a malformed or
/// unknown option is an error naming it.
pub(crate) fn options<T: DeserializeOwned>(
    py: Python<'_>,
    kernel: &'static str,
    array: &dyn Array,
    i: usize,
) -> PyResult<T> {
    let Some(json) = text(array, i) else {
        return Err(invalid(
            py,
            kernel,
            format!("options must be VARCHAR (JSON), got {}", array.data_type()),
        ));
    };
    let mut de = serde_json::Deserializer::from_str(json);
    serde_path_to_error::deserialize(&mut de).map_err(|e| {
        let path = e.path().to_string();
        let inner = e.into_inner();
        let message = if path == "." {
            format!("options: {inner}")
        } else {
            format!("option '{path}': {inner}")
        };
        invalid(py, kernel, message)
    })
}

/// Hierarchies (per attribute, one level-code array per level) of row `i` of a
/// `UINTEGER[][][]` column.
pub(crate) fn hierarchy_levels(
    py: Python<'_>,
    kernel: &'static str,
    list: &ListArray,
    i: usize,
) -> PyResult<Vec<Vec<UInt32Array>>> {
    let attributes = list.value(i);
    let attributes = lists(py, kernel, "hierarchies", &attributes)?;
    (0..attributes.len())
        .map(|j| rows::<UInt32Type>(py, kernel, "hierarchies", attributes, j))
        .collect()
}

/// Build one hierarchy from its level-code arrays (level 0 first).
pub(crate) fn hierarchy(levels: &[UInt32Array]) -> Result<Hierarchy, KernelError> {
    let views: Vec<&[u32]> = levels.iter().map(|l| l.values().as_ref()).collect();
    Hierarchy::try_from_levels(&views)
}

/// Build the hierarchies of every attribute.
pub(crate) fn hierarchies(levels: &[Vec<UInt32Array>]) -> Result<Vec<Hierarchy>, KernelError> {
    levels.iter().map(|h| hierarchy(h)).collect()
}

/// Slices of a list of arrays.
pub(crate) fn slices<T: ArrowPrimitiveType>(arrays: &[PrimitiveArray<T>]) -> Vec<&[T::Native]> {
    arrays.iter().map(|a| a.values().as_ref()).collect()
}

// --- Output -----------------------------------------------------------------------------

fn item(data_type: DataType) -> Arc<Field> {
    Arc::new(Field::new("item", data_type, true))
}

fn nulls(valid: &[bool]) -> Option<NullBuffer> {
    if valid.iter().all(|&v| v) {
        None
    } else {
        Some(NullBuffer::from(valid.to_vec()))
    }
}

/// Hand an Arrow array to Python as a pyarrow array (its buffers are shared, not
/// copied: pyarrow releases them through the exported struct).
pub(crate) fn to_python(py: Python<'_>, array: ArrayRef) -> PyResult<Bound<'_, PyAny>> {
    let data = array.to_data();
    let schema = FFI_ArrowSchema::try_from(data.data_type())
        .map_err(|e| PyTypeError::new_err(format!("cannot export {}: {e}", data.data_type())))?;
    let schema = PyCapsule::new_with_value(py, schema, SCHEMA_CAPSULE)?;
    let array = PyCapsule::new_with_value(py, FFI_ArrowArray::new(&data), ARRAY_CAPSULE)?;
    py.import(intern!(py, "pyarrow"))?
        .getattr(intern!(py, "Array"))?
        .call_method1(intern!(py, "_import_from_c_capsule"), (schema, array))
}

/// A list column built row by row (NULL rows allowed).
pub(crate) struct ListColumn<T: ArrowPrimitiveType> {
    offsets: Vec<i32>,
    values: Vec<T::Native>,
    valid: Vec<bool>,
}

impl<T: ArrowPrimitiveType> ListColumn<T> {
    pub(crate) fn new() -> Self {
        Self {
            offsets: vec![0],
            values: Vec::new(),
            valid: Vec::new(),
        }
    }

    /// Append one row: a list, or NULL.
    pub(crate) fn push(&mut self, row: Option<&[T::Native]>) {
        if let Some(values) = row {
            self.values.extend_from_slice(values);
        }
        self.valid.push(row.is_some());
        self.offsets.push(offset(self.values.len()));
    }

    pub(crate) fn finish(self) -> ArrayRef {
        let values = PrimitiveArray::<T>::new(ScalarBuffer::from(self.values), None);
        Arc::new(ListArray::new(
            item(T::DATA_TYPE),
            OffsetBuffer::new(ScalarBuffer::from(self.offsets)),
            Arc::new(values),
            nulls(&self.valid),
        ))
    }
}

fn offset(n: usize) -> i32 {
    i32::try_from(n).expect("a kernel's output list fits Arrow's 32-bit offsets")
}

/// A column of lists of lists of `T` built row by row (NULL rows allowed).
pub(crate) struct NestedColumn<T: ArrowPrimitiveType> {
    outer: Vec<i32>,
    inner: ListColumn<T>,
    valid: Vec<bool>,
}

impl<T: ArrowPrimitiveType> NestedColumn<T> {
    pub(crate) fn new() -> Self {
        Self {
            outer: vec![0],
            inner: ListColumn::new(),
            valid: Vec::new(),
        }
    }

    /// Append one row: `flat` cut at `bounds` (inner list `j` is
    /// `flat[bounds[j]..bounds[j + 1]]`), or NULL.
    pub(crate) fn push(&mut self, row: Option<(&[T::Native], &[usize])>) {
        if let Some((flat, bounds)) = row {
            for w in bounds.windows(2) {
                self.inner.push(Some(&flat[w[0]..w[1]]));
            }
        }
        self.valid.push(row.is_some());
        self.outer.push(offset(self.inner.valid.len()));
    }

    /// Append one row: `flat` cut into lists of `width` values each, or NULL.
    pub(crate) fn push_chunks(&mut self, row: Option<&[T::Native]>, width: usize) {
        match row {
            Some(flat) => {
                let bounds: Vec<usize> =
                    (0..=flat.len() / width.max(1)).map(|j| j * width).collect();
                self.push(Some((flat, &bounds)));
            }
            None => self.push(None),
        }
    }

    pub(crate) fn finish(self) -> ArrayRef {
        let inner = self.inner.finish();
        Arc::new(ListArray::new(
            item(inner.data_type().clone()),
            OffsetBuffer::new(ScalarBuffer::from(self.outer)),
            inner,
            nulls(&self.valid),
        ))
    }
}

/// A `UBIGINT` field of per-row records (NULL for a NULL row or a None value).
pub(crate) fn u64_field<R>(rows: &[Option<R>], get: impl Fn(&R) -> Option<u64>) -> ArrayRef {
    Arc::new(
        rows.iter()
            .map(|r| r.as_ref().and_then(&get))
            .collect::<UInt64Array>(),
    )
}

/// A `DOUBLE` field of per-row records.
pub(crate) fn f64_field<R>(rows: &[Option<R>], get: impl Fn(&R) -> Option<f64>) -> ArrayRef {
    Arc::new(
        rows.iter()
            .map(|r| r.as_ref().and_then(&get))
            .collect::<Float64Array>(),
    )
}

/// A `BOOLEAN` field of per-row records.
pub(crate) fn bool_field<R>(rows: &[Option<R>], get: impl Fn(&R) -> Option<bool>) -> ArrayRef {
    Arc::new(
        rows.iter()
            .map(|r| r.as_ref().and_then(&get))
            .collect::<BooleanArray>(),
    )
}

/// A `VARCHAR` field of per-row records.
pub(crate) fn str_field<R>(rows: &[Option<R>], get: impl Fn(&R) -> &str) -> ArrayRef {
    Arc::new(
        rows.iter()
            .map(|r| r.as_ref().map(&get))
            .collect::<StringArray>(),
    )
}

/// A struct array of named columns; row `i` is NULL where `valid[i]` is false.
pub(crate) fn struct_of(columns: Vec<(&str, ArrayRef)>, valid: &[bool]) -> ArrayRef {
    let fields: Fields = columns
        .iter()
        .map(|(name, a)| Field::new(*name, a.data_type().clone(), true))
        .collect();
    let arrays = columns.into_iter().map(|(_, a)| a).collect();
    Arc::new(StructArray::new(fields, arrays, nulls(valid)))
}

/// Whole number given as a float (l of distinct and recursive l-diversity).
pub(crate) fn whole(x: f64, name: &str) -> Result<u64, String> {
    if x.fract() == 0.0 && x >= 1.0 && x < 2f64.powi(63) {
        Ok(x as u64)
    } else {
        Err(format!("{name} must be a positive whole number, got {x}"))
    }
}

/// The `u64` and `f64` types the kernels read, re-exported for the kernel files.
pub(crate) type U32 = UInt32Type;
pub(crate) type U64 = UInt64Type;
pub(crate) type F64 = Float64Type;
