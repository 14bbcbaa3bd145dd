//! Ember's errors as Python exceptions.

use emberlab_core::Error;
use pyo3::PyErr;
use pyo3::exceptions::{PyFileNotFoundError, PyOSError, PyRuntimeError, PyValueError};

/// The Python exception for an Ember error: `FileNotFoundError` / `OSError` for files that
/// cannot be read or written, `RuntimeError` for a panic or a missing capability,
/// `ValueError` for everything the caller passed wrong (the message names it).
pub fn to_py(e: Error) -> PyErr {
    match &e {
        Error::Io { source, .. } if source.kind() == std::io::ErrorKind::NotFound => {
            PyFileNotFoundError::new_err(e.to_string())
        }
        Error::Io { .. } => PyOSError::new_err(e.to_string()),
        Error::Panicked { .. } | Error::Unavailable { .. } => {
            PyRuntimeError::new_err(e.to_string())
        }
        _ => PyValueError::new_err(e.to_string()),
    }
}

/// `Result` of an Ember call, as a `PyResult`.
pub trait IntoPy<T> {
    /// The value, or the error as a Python exception ([`to_py`]).
    ///
    /// # Errors
    /// The Ember error, converted.
    fn py(self) -> pyo3::PyResult<T>;
}

impl<T> IntoPy<T> for emberlab_core::Result<T> {
    fn py(self) -> pyo3::PyResult<T> {
        self.map_err(to_py)
    }
}
