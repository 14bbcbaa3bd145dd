//! SAC's learnable temperature.

use burn::module::{Module, Param};
use burn::tensor::{Device, Tensor, TensorData};
use emberlab_core::{Error, Result};

/// The learnable entropy temperature of SAC, stored as `log α` (one element).
#[derive(Module, Debug)]
pub struct Temperature {
    /// `log α`, one element.
    pub log_alpha: Param<Tensor<1>>,
}

impl Temperature {
    /// A temperature starting at `alpha` (finite, `> 0`) on `device`.
    ///
    /// # Errors
    /// A non-positive or non-finite `alpha`.
    pub fn new(alpha: f64, device: &Device) -> Result<Temperature> {
        if !(alpha > 0.0 && alpha.is_finite()) {
            return Err(Error::invalid(
                "initial temperature alpha",
                alpha,
                "a finite number > 0",
            ));
        }
        let log_alpha = TensorData::new(vec![alpha.ln() as f32], [1]);
        Ok(Temperature {
            log_alpha: Param::from_tensor(Tensor::from_data(log_alpha, device)),
        })
    }

    /// `α = exp(log α)`, read back to the host.
    pub fn alpha(&self) -> f64 {
        self.log_alpha.val().exp().into_scalar::<f64>()
    }
}
