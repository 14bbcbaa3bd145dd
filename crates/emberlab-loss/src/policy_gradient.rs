//! Policy-gradient losses.

use burn::tensor::Tensor;

/// `−mean(log π(a|s) · A)` with the advantages `A` treated as constants (a baseline is
/// already subtracted in `A`); both `[batch, 1]`.
pub fn policy_gradient_loss(log_prob: Tensor<2>, advantage: Tensor<2>) -> Tensor<1> {
    (log_prob * advantage.detach()).mean().neg()
}

/// PPO's clipped surrogate (Schulman et al. 2017): with `r = exp(log π − log π_old)`,
/// `−mean(min(r·A, clip(r, 1 − ε, 1 + ε)·A))`; all `[batch, 1]`, the old log-probabilities
/// and advantages treated as constants. Returns the loss and `r` (for the clip fraction and
/// the approximate KL divergence).
pub fn ppo_clip_loss(
    log_prob: Tensor<2>,
    old_log_prob: Tensor<2>,
    advantage: Tensor<2>,
    clip_range: f64,
) -> (Tensor<1>, Tensor<2>) {
    let ratio = (log_prob - old_log_prob.detach()).exp();
    let advantage = advantage.detach();
    let unclipped = ratio.clone() * advantage.clone();
    let clipped = ratio.clone().clamp(1.0 - clip_range, 1.0 + clip_range) * advantage;
    (unclipped.min_pair(clipped).mean().neg(), ratio)
}

/// PPO's clipped value prediction `V_old + clip(V − V_old, −ε, ε)` (SB3's `clip_range_vf`),
/// to regress onto the returns in place of `V`.
pub fn clipped_values(values: Tensor<2>, old_values: Tensor<2>, clip_range: f64) -> Tensor<2> {
    let old_values = old_values.detach();
    old_values.clone() + (values - old_values).clamp(-clip_range, clip_range)
}

/// `−mean(H)`: minimising it maximises the entropy (scale by the entropy coefficient).
pub fn entropy_loss(entropy: Tensor<2>) -> Tensor<1> {
    entropy.mean().neg()
}
