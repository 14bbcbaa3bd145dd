//! How the trainers call into a learner.

use emberlab_core::{Error, Result};

/// Runs learner code (act, values, update) from a trainer: denormals flushed on this thread
/// for the call (`emberlab_core::denormals`), a panic caught and returned as
/// [`Error::Panicked`] naming `what`.
pub(crate) fn run_learner<T>(
    what: impl FnOnce() -> String,
    f: impl FnOnce() -> Result<T>,
) -> Result<T> {
    let _flush = emberlab_core::denormals::flush_denormals_here();
    Error::catch(what, f)
}
