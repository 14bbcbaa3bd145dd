//! Policy-gradient losses.

use burn::tensor::Tensor;

/// `−mean(log π(a|s) · A)` with the advantages `A` treated as constants (a baseline is
/// already subtracted in `A`); both `[batch, 1]`.
pub fn policy_gradient_loss(log_prob: Tensor<2>, advantage: Tensor<2>) -> Tensor<1> {
    (log_prob * advantage.detach()).mean().neg()
}

/// `−mean(H)`: minimising it maximises the entropy (scale by the entropy coefficient).
pub fn entropy_loss(entropy: Tensor<2>) -> Tensor<1> {
    entropy.mean().neg()
}
