//! [`TensorStep`]: what one batched step of a tensor environment returns.

use burn::tensor::{Bool, Tensor};

/// One batched step's results, on the environment's device.
#[derive(Clone, Debug)]
pub struct TensorStep {
    /// Observations `[B, obs_dim]`.
    pub obs: Tensor<2>,
    /// Rewards `[B]`.
    pub rewards: Tensor<1>,
    /// Terminal states reached `[B]`.
    pub terminated: Tensor<1, Bool>,
    /// Episodes cut short by the time limit `[B]`.
    pub truncated: Tensor<1, Bool>,
}
