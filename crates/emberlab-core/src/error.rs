//! The error type shared by every Ember library crate.

use std::path::{Path, PathBuf};

/// Shorthand for `Result<T, emberlab_core::Error>`.
pub type Result<T, E = Error> = std::result::Result<T, E>;

/// Everything a user of an Ember library can get wrong, each variant naming the offending
/// value and what would have been allowed.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum Error {
    /// An argument lies outside its allowed range.
    #[error("invalid {name}: got {value}, expected {expected}")]
    InvalidArgument {
        /// Name of the argument or config field.
        name: String,
        /// The value that was given, formatted.
        value: String,
        /// The allowed range or set, in words.
        expected: String,
    },
    /// A slice or tensor has the wrong length or shape.
    #[error("shape mismatch for {what}: expected {expected}, got {got}")]
    Shape {
        /// What was being checked (e.g. `obs`).
        what: String,
        /// The expected length or shape, formatted.
        expected: String,
        /// The length or shape that was given, formatted.
        got: String,
    },
    /// More items were requested than are available.
    #[error("cannot draw {requested} {what}: only {available} available")]
    NotEnough {
        /// What was requested (e.g. `distinct transitions with non-zero weight`).
        what: String,
        /// How many were requested.
        requested: usize,
        /// How many there are.
        available: usize,
    },
    /// A weighted draw was asked of weights that are all zero.
    #[error("all sampling weights are zero ({context})")]
    ZeroWeight {
        /// Where it happened.
        context: String,
    },
    /// A value that must be finite was NaN or infinite.
    #[error("non-finite {name}: {value}")]
    NonFinite {
        /// Name of the value (e.g. `priority[17]`, `critic loss`).
        name: String,
        /// The value itself.
        value: f64,
    },
    /// An action does not belong to the action space.
    #[error("action {action} is outside the action space {space}")]
    InvalidAction {
        /// The action, formatted.
        action: String,
        /// The space, formatted.
        space: String,
    },
    /// A tensor or module is on another device than the one it must be on.
    #[error("{what} is on {got}, expected {expected}")]
    DeviceMismatch {
        /// What was checked (e.g. `input of the actor`).
        what: String,
        /// The device it should be on, formatted.
        expected: String,
        /// The device it is on, formatted.
        got: String,
    },
    /// Something was asked of a build or machine that does not provide it.
    #[error("{what} is not available: {hint}")]
    Unavailable {
        /// What was asked for (e.g. `backend tch`).
        what: String,
        /// How to get it (e.g. `rebuild with --features tch`).
        hint: String,
    },
    /// A computed value (e.g. a loss) is NaN or infinite.
    #[error("{name} is {value} at step {step}")]
    Diverged {
        /// Name of the value (e.g. `critic loss`).
        name: String,
        /// The value.
        value: f64,
        /// The step at which it was seen.
        step: u64,
    },
    /// Code inside Ember (or a user's learner) panicked; the panic was caught at a
    /// boundary (an update, a worker thread) and the component was left as it was before.
    #[error("{what} panicked: {message}")]
    Panicked {
        /// What was running (e.g. `SAC update at step 12`).
        what: String,
        /// The panic's message.
        message: String,
    },
    /// A file could not be read or written.
    #[error("I/O error on {}: {source}", path.display())]
    Io {
        /// The file concerned.
        path: PathBuf,
        /// The underlying error.
        #[source]
        source: std::io::Error,
    },
    /// A file exists but its contents are not what Ember wrote (truncated, corrupted, or
    /// of another kind).
    #[error("{} is not a valid {kind} file: {reason}", path.display())]
    Corrupt {
        /// The file concerned.
        path: PathBuf,
        /// What kind of file was expected (e.g. `replay buffer`).
        kind: String,
        /// What is wrong with it.
        reason: String,
    },
}

impl Error {
    /// Builds [`Error::InvalidArgument`].
    pub fn invalid(
        name: impl Into<String>,
        value: impl std::fmt::Display,
        expected: impl Into<String>,
    ) -> Self {
        Error::InvalidArgument {
            name: name.into(),
            value: value.to_string(),
            expected: expected.into(),
        }
    }

    /// Maps an I/O error on `path` to [`Error::Io`], for `map_err(Error::io_at(&path))`.
    pub fn io_at(path: &Path) -> impl Fn(std::io::Error) -> Self + '_ {
        move |source| Error::Io {
            path: path.to_path_buf(),
            source,
        }
    }

    /// Builds [`Error::Io`] on `path` from an error that is not an `std::io::Error` (a
    /// store's or an encoder's), keeping its message.
    pub fn io_other(path: &Path, message: impl std::fmt::Display) -> Self {
        Error::Io {
            path: path.to_path_buf(),
            source: std::io::Error::other(message.to_string()),
        }
    }

    /// Builds [`Error::Shape`] for a length mismatch.
    pub fn shape(what: impl Into<String>, expected: usize, got: usize) -> Self {
        Error::Shape {
            what: what.into(),
            expected: expected.to_string(),
            got: got.to_string(),
        }
    }

    /// Builds [`Error::Panicked`] from a caught panic's payload.
    pub fn panicked(what: impl Into<String>, payload: &(dyn std::any::Any + Send)) -> Self {
        let message = payload
            .downcast_ref::<&str>()
            .map(|s| s.to_string())
            .or_else(|| payload.downcast_ref::<String>().cloned())
            .unwrap_or_else(|| "a non-string panic payload".into());
        Error::Panicked {
            what: what.into(),
            message,
        }
    }

    /// Runs `f`, turning a panic inside it into [`Error::Panicked`] naming `what`.
    ///
    /// # Errors
    /// `f`'s own error, or [`Error::Panicked`].
    pub fn catch<T>(what: impl FnOnce() -> String, f: impl FnOnce() -> Result<T>) -> Result<T> {
        match std::panic::catch_unwind(std::panic::AssertUnwindSafe(f)) {
            Ok(r) => r,
            Err(payload) => Err(Error::panicked(what(), payload.as_ref())),
        }
    }

    /// Checks that every value of a row-major column of `width` values per row is finite;
    /// the error names `name` and the row of the first NaN or infinity.
    ///
    /// # Errors
    /// [`Error::NonFinite`] for the first non-finite value.
    pub fn check_finite_rows(name: &str, values: &[f32], width: usize) -> Result<()> {
        if all_finite(values) {
            return Ok(());
        }
        match values.iter().position(|v| !v.is_finite()) {
            None => Ok(()),
            Some(i) => Err(Error::NonFinite {
                name: format!("{name}[row {}]", i / width.max(1)),
                value: values[i] as f64,
            }),
        }
    }

    /// Returns `Ok(())` if `got == expected`, else [`Error::Shape`].
    #[inline]
    pub fn check_len(what: &str, expected: usize, got: usize) -> Result<()> {
        if expected == got {
            Ok(())
        } else {
            Err(Error::shape(what, expected, got))
        }
    }

    /// Returns `Ok(value)` if `value` is finite, else [`Error::NonFinite`] naming it.
    #[inline]
    pub fn check_finite(name: impl FnOnce() -> String, value: f64) -> Result<f64> {
        if value.is_finite() {
            Ok(value)
        } else {
            Err(Error::NonFinite {
                name: name(),
                value,
            })
        }
    }
}

/// Whether every value is finite: one branch-free pass (it vectorises), for checks whose
/// error path then looks for the offender.
#[inline]
pub fn all_finite(values: &[f32]) -> bool {
    values.iter().fold(true, |ok, v| ok & v.is_finite())
}
