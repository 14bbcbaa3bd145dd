//! Soft actor-critic losses (Haarnoja et al. 2018, automatic temperature).

use crate::regression::mse;
use burn::tensor::Tensor;

/// The soft TD target `r + γ (1 − terminated) (min_e Q̄_e(s', a') − α log π(a'|s'))`,
/// each `[batch, 1]`; `a'` is sampled from the current policy at `s'`.
pub fn sac_target(
    reward: Tensor<2>,
    terminated: Tensor<2>,
    next_min_q: Tensor<2>,
    next_log_prob: Tensor<2>,
    alpha: f64,
    gamma: f64,
) -> Tensor<2> {
    let soft = next_min_q - next_log_prob.mul_scalar(alpha);
    crate::td::td_target(reward, terminated, soft, gamma)
}

/// [`sac_target`] with a per-row bootstrap discount `[batch, 1]` instead of `γ` (n-step
/// transitions carry `γ^m`).
pub fn sac_target_discounted(
    reward: Tensor<2>,
    terminated: Tensor<2>,
    next_min_q: Tensor<2>,
    next_log_prob: Tensor<2>,
    alpha: f64,
    discount: Tensor<2>,
) -> Tensor<2> {
    let soft = next_min_q - next_log_prob.mul_scalar(alpha);
    crate::td::td_target_discounted(reward, terminated, soft, discount)
}

/// Critic loss: the sum over the E critics of `mean((Q_e(s, a) − y)²)`. `q` is
/// `[E, batch, 1]` (a fused ensemble's output), `target` `[batch, 1]` (no gradient).
pub fn sac_critic_loss(q: Tensor<3>, target: Tensor<2>) -> Tensor<1> {
    let [e, b, _] = q.dims();
    let y = target.detach().reshape([1, b, 1]).expand([e, b, 1]);
    mse(q, y).mul_scalar(e as f64)
}

/// [`sac_critic_loss`] with importance weights `[batch, 1]`: the sum over the E critics of
/// `mean(w · (Q_e(s, a) − y)²)`.
pub fn sac_critic_loss_weighted(q: Tensor<3>, target: Tensor<2>, weights: Tensor<2>) -> Tensor<1> {
    let [e, b, _] = q.dims();
    let y = target.detach().reshape([1, b, 1]).expand([e, b, 1]);
    let w = weights.reshape([1, b, 1]).expand([e, b, 1]);
    let d = q - y;
    (d.clone() * d * w).mean().mul_scalar(e as f64)
}

/// Per-row TD errors of an ensemble, `mean_e |Q_e(s, a) − y|` as `[batch, 1]` (no
/// gradient): the priorities handed back to prioritized replay.
pub fn ensemble_td_errors(q: Tensor<3>, target: Tensor<2>) -> Tensor<2> {
    let [e, b, _] = q.dims();
    let y = target.detach().reshape([1, b, 1]).expand([e, b, 1]);
    (q.detach() - y).abs().mean_dim(0).reshape([b, 1])
}

/// Actor loss `mean(α log π(a|s) − min_e Q_e(s, a))` with `a` reparameterised, each
/// `[batch, 1]`.
pub fn sac_actor_loss(log_prob: Tensor<2>, min_q: Tensor<2>, alpha: f64) -> Tensor<1> {
    (log_prob.mul_scalar(alpha) - min_q).mean()
}

/// Temperature loss `−mean(log α · (log π(a|s) + H̄))` for the trainable `log_alpha`
/// (one element); `log_prob` is treated as a constant. `target_entropy` is usually
/// `−act_dim`.
pub fn sac_temperature_loss(
    log_alpha: Tensor<1>,
    log_prob: Tensor<2>,
    target_entropy: f64,
) -> Tensor<1> {
    let [b, _] = log_prob.dims();
    let weight = log_prob.detach().add_scalar(target_entropy).reshape([b]);
    (log_alpha.expand([b]) * weight).mean().neg()
}
