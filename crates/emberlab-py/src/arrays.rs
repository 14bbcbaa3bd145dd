//! NumPy arrays in and out: numbers taken from any array-like with a check of their dtype,
//! and results handed to Python without a copy.

use numpy::prelude::*;
use numpy::{Element, PyArray1, PyArrayDyn, PyReadonlyArrayDyn, PyUntypedArray};
use pyo3::exceptions::{PyTypeError, PyValueError};
use pyo3::prelude::*;

/// An array's values, read in place: a C-contiguous NumPy array of `T` (the caller's own
/// array when it already is one, else a converted copy) borrowed read-only.
pub struct Values<'py, T: Element> {
    array: PyReadonlyArrayDyn<'py, T>,
    /// The array's shape (empty for a scalar).
    pub shape: Vec<usize>,
}

impl<'py, T: Element> Values<'py, T> {
    fn new(array: Bound<'py, PyArrayDyn<T>>) -> PyResult<Self> {
        let array = array.try_readonly()?;
        let shape = array.shape().to_vec();
        Ok(Values { array, shape })
    }

    /// The values in row-major order.
    pub fn data(&self) -> &[T] {
        self.array
            .as_slice()
            .expect("Values holds C-contiguous arrays only")
    }

    /// Number of values.
    pub fn len(&self) -> usize {
        self.shape.iter().product()
    }

    /// Whether there is no value.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// `obj` as a C-contiguous array of `dtype` (no copy when it already is one).
///
/// # Errors
/// What NumPy raises converting `obj`.
pub fn contiguous<'py, T: Element>(
    obj: &Bound<'py, PyAny>,
    dtype: &str,
) -> PyResult<Values<'py, T>> {
    if let Ok(a) = obj.cast::<PyArrayDyn<T>>()
        && a.is_c_contiguous()
    {
        return Values::new(a.clone());
    }
    // `asarray(order="C")`, not `ascontiguousarray`, which turns a scalar into shape (1,).
    let py = obj.py();
    let kwargs = pyo3::types::PyDict::new(py);
    kwargs.set_item("dtype", dtype)?;
    kwargs.set_item("order", "C")?;
    let a = py
        .import("numpy")?
        .call_method("asarray", (obj,), Some(&kwargs))?
        .cast_into::<PyArrayDyn<T>>()?;
    Values::new(a)
}

/// `obj` as a NumPy array, converting lists and scalars (`numpy.asarray`).
fn as_array<'py>(obj: &Bound<'py, PyAny>) -> PyResult<Bound<'py, PyUntypedArray>> {
    if let Ok(a) = obj.cast::<PyUntypedArray>() {
        return Ok(a.clone());
    }
    let np = obj.py().import("numpy")?;
    Ok(np
        .call_method1("asarray", (obj,))?
        .cast_into::<PyUntypedArray>()?)
}

/// The dtype of `a` as Python prints it.
fn dtype_name(a: &Bound<'_, PyUntypedArray>) -> String {
    a.dtype()
        .str()
        .map(|s| s.to_string())
        .unwrap_or_else(|_| "?".into())
}

/// `obj` (an array, a list or a number) as `f32` values. Booleans, integers and floats are
/// converted; anything else is a `TypeError` naming `name`.
///
/// # Errors
/// `TypeError` for a non-numeric dtype.
pub fn floats<'py>(obj: &Bound<'py, PyAny>, name: &str) -> PyResult<Values<'py, f32>> {
    if obj.cast::<PyArrayDyn<f32>>().is_err() {
        let a = as_array(obj).map_err(|_| not_numbers(name, "not an array of numbers"))?;
        let kind = a.dtype().kind();
        if !b"biuf".contains(&kind) {
            return Err(not_numbers(name, &format!("dtype {}", dtype_name(&a))));
        }
        return contiguous(a.as_any(), "float32");
    }
    contiguous(obj, "float32")
}

/// `obj` as integers (`int64`); only integer dtypes (and Python ints) are taken.
///
/// # Errors
/// `TypeError` for floats or anything not an integer.
pub fn ints<'py>(obj: &Bound<'py, PyAny>, name: &str) -> PyResult<Values<'py, i64>> {
    if obj.cast::<PyArrayDyn<i64>>().is_err() {
        let a = as_array(obj).map_err(|_| not_numbers(name, "not an array of integers"))?;
        if !b"iu".contains(&a.dtype().kind()) {
            return Err(PyTypeError::new_err(format!(
                "{name} must hold integers, got dtype {}",
                dtype_name(&a)
            )));
        }
        return contiguous(a.as_any(), "int64");
    }
    contiguous(obj, "int64")
}

/// `obj` as `u8` values (frames); only `uint8` arrays are taken, so that frames scaled to
/// floats elsewhere are not read as bytes.
///
/// # Errors
/// `TypeError` for any other dtype.
pub fn bytes<'py>(obj: &Bound<'py, PyAny>, name: &str) -> PyResult<Values<'py, u8>> {
    let a = as_array(obj).map_err(|_| not_numbers(name, "not an array"))?;
    let dtype = a.dtype();
    if dtype.kind() != b'u' || dtype.itemsize() != 1 {
        return Err(PyTypeError::new_err(format!(
            "{name} must be uint8 frames (as Atari wrappers give them), got dtype {}",
            dtype_name(&a)
        )));
    }
    contiguous(a.as_any(), "uint8")
}

fn not_numbers(name: &str, got: &str) -> PyErr {
    PyTypeError::new_err(format!(
        "{name} must hold numbers (bool, int or float), got {got}"
    ))
}

/// Checks that every value is finite, naming the first one that is not.
///
/// # Errors
/// `ValueError` naming `name`, the index and the value.
pub fn check_finite(values: &[f32], name: &str) -> PyResult<()> {
    if emberlab_core::all_finite(values) {
        return Ok(());
    }
    match values.iter().position(|v| !v.is_finite()) {
        None => Ok(()),
        Some(i) => Err(PyValueError::new_err(format!(
            "{name} holds a non-finite value ({}) at flat index {i}",
            values[i]
        ))),
    }
}

/// Indices in `0..len` as `usize`.
///
/// # Errors
/// `ValueError` naming `name` and the first index out of range.
pub fn check_indices(values: &[i64], len: usize, name: &str) -> PyResult<Vec<usize>> {
    values
        .iter()
        .map(|&i| {
            usize::try_from(i).ok().filter(|&u| u < len).ok_or_else(|| {
                PyValueError::new_err(format!("{name} holds {i}, out of range for {len} entries"))
            })
        })
        .collect()
}

/// `data` as a NumPy array of `shape` (no copy: the array owns the vector).
///
/// # Errors
/// A shape that does not hold `data.len()` values.
pub fn to_numpy<'py, T: Element>(
    py: Python<'py>,
    data: Vec<T>,
    shape: &[usize],
) -> PyResult<Bound<'py, PyArrayDyn<T>>> {
    PyArray1::from_vec(py, data).reshape(shape.to_vec())
}

/// A shape from a Python int or a sequence of ints (each ≥ 1).
///
/// # Errors
/// `ValueError`/`TypeError` naming `name`.
pub fn shape_arg(obj: &Bound<'_, PyAny>, name: &str) -> PyResult<Vec<usize>> {
    let shape: Vec<usize> = if let Ok(n) = obj.extract::<usize>() {
        vec![n]
    } else {
        obj.extract::<Vec<usize>>().map_err(|_| {
            PyTypeError::new_err(format!(
                "{name} must be an int or a tuple of non-negative ints, got {obj}"
            ))
        })?
    };
    if shape.contains(&0) {
        return Err(PyValueError::new_err(format!(
            "{name} {shape:?} has a zero dimension"
        )));
    }
    Ok(shape)
}

/// Python's spelling of a shape: `(3,)`, `(2, 4)`, `()`.
pub fn shape_str(shape: &[usize]) -> String {
    match shape {
        [n] => format!("({n},)"),
        _ => format!(
            "({})",
            shape
                .iter()
                .map(|d| d.to_string())
                .collect::<Vec<_>>()
                .join(", ")
        ),
    }
}
