//! Caller-facing checks that turn a NaN or infinite loss into an error naming it.

use burn::tensor::Tensor;
use ember_core::{Error, Result};

/// Reads the one-element `loss` and returns it, or [`Error::Diverged`] naming `name` and
/// `step` if it is NaN or infinite.
pub fn checked_loss(name: &str, loss: &Tensor<1>, step: u64) -> Result<f64> {
    let value = loss.clone().into_scalar::<f64>();
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
