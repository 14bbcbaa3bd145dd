//! Caller-facing checks that turn a NaN or infinite loss into an error naming it.

use burn::tensor::Tensor;
use emberlab_core::{Error, Result};

/// Reads the one-element `loss` and returns it, or [`Error::Diverged`] naming `name` and
/// `step` if it is NaN or infinite.
///
/// # Errors
/// [`Error::Diverged`] when the loss is NaN or infinite.
pub fn checked_loss(name: &str, loss: &Tensor<1>, step: u64) -> Result<f64> {
    checked_value(name, loss.clone().into_scalar::<f64>(), step)
}

/// [`checked_loss`] for a loss computed outside tensors: `value`, or [`Error::Diverged`]
/// naming `name` and `step` if it is NaN or infinite.
///
/// # Errors
/// [`Error::Diverged`] when `value` is NaN or infinite.
pub fn checked_value(name: &str, value: f64, step: u64) -> Result<f64> {
    if value.is_finite() {
        Ok(value)
    } else {
        Err(Error::Diverged {
            name: name.to_string(),
            value,
            step,
        })
    }
}
