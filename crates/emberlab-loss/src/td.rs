//! Temporal-difference targets. Only `terminated` stops bootstrapping: a `truncated`
//! transition (time limit) still bootstraps from its next state.

use burn::tensor::Tensor;

/// `r + γ (1 − terminated) V(s')`, each `[batch, 1]`.
pub fn td_target(
    reward: Tensor<2>,
    terminated: Tensor<2>,
    next_value: Tensor<2>,
    gamma: f64,
) -> Tensor<2> {
    reward
        + terminated
            .neg()
            .add_scalar(1.0)
            .mul(next_value)
            .mul_scalar(gamma)
}

/// `r + discount (1 − terminated) V(s')` with a per-row bootstrap discount (n-step
/// transitions carry `γ^m`).
pub fn td_target_discounted(
    reward: Tensor<2>,
    terminated: Tensor<2>,
    next_value: Tensor<2>,
    discount: Tensor<2>,
) -> Tensor<2> {
    reward
        + terminated
            .neg()
            .add_scalar(1.0)
            .mul(next_value)
            .mul(discount)
}

/// Double-DQN target: the online network picks `a* = argmax_a Q_online(s', a)`, the target
/// network values it: `r + γ (1 − terminated) Q_target(s', a*)`. Q inputs are
/// `[batch, actions]`, the rest `[batch, 1]`.
pub fn double_dqn_target(
    reward: Tensor<2>,
    terminated: Tensor<2>,
    next_q_online: Tensor<2>,
    next_q_target: Tensor<2>,
    gamma: f64,
) -> Tensor<2> {
    td_target(
        reward,
        terminated,
        double_dqn_value(next_q_online, next_q_target),
        gamma,
    )
}

/// The double-DQN bootstrap value `Q_target(s', argmax_a Q_online(s', a))`, `[batch, 1]`
/// (combine it with [`td_target_discounted`] for n-step transitions).
pub fn double_dqn_value(next_q_online: Tensor<2>, next_q_target: Tensor<2>) -> Tensor<2> {
    let best = next_q_online.argmax(1);
    next_q_target.gather(1, best)
}
