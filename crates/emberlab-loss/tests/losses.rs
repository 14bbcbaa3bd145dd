//! Hand-computed checks of every loss and return function.

use burn::tensor::{Device, Tensor, TensorData};
use emberlab_loss::*;

fn dev() -> Device {
    emberlab_backend::DeviceSpec::Flex.device().unwrap()
}

fn col(v: &[f32]) -> Tensor<2> {
    Tensor::from_data(TensorData::new(v.to_vec(), [v.len(), 1]), &dev())
}

fn mat(v: &[f32], rows: usize) -> Tensor<2> {
    Tensor::from_data(TensorData::new(v.to_vec(), [rows, v.len() / rows]), &dev())
}

fn vals<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.into_data().try_into_vec_as::<f32>().unwrap()
}

fn close(a: &[f32], b: &[f32]) {
    assert_eq!(a.len(), b.len());
    for (x, y) in a.iter().zip(b) {
        assert!((x - y).abs() < 1e-5, "{a:?} vs {b:?}");
    }
}

#[test]
fn td_targets_mask_terminated_not_truncated() {
    // Rows: running, terminated. (A truncated row is a running row for the target.)
    let y = td_target(col(&[1.0, 2.0]), col(&[0.0, 1.0]), col(&[10.0, 10.0]), 0.5);
    close(&vals(y), &[6.0, 2.0]);
    let y = td_target_discounted(
        col(&[1.0, 1.0]),
        col(&[0.0, 0.0]),
        col(&[4.0, 4.0]),
        col(&[0.25, 0.125]),
    );
    close(&vals(y), &[2.0, 1.5]);
}

#[test]
fn double_dqn_uses_online_argmax_and_target_value() {
    let online = mat(&[1.0, 3.0, 2.0, 9.0, 0.0, 1.0], 2); // argmax: 1, 0
    let target = mat(&[5.0, 7.0, 6.0, 8.0, 100.0, 100.0], 2);
    let y = double_dqn_target(col(&[0.0, 1.0]), col(&[0.0, 0.0]), online, target, 0.5);
    close(&vals(y), &[3.5, 5.0]);
}

#[test]
fn regression_losses() {
    let m = mse(col(&[1.0, 3.0]), col(&[0.0, 0.0]));
    close(&vals(m), &[5.0]);
    // |d| = 0.5 (quadratic: 0.125) and 3 (linear with delta 1: 2.5): mean 1.3125.
    let h = huber(col(&[0.5, -3.0]), col(&[0.0, 0.0]), 1.0);
    close(&vals(h), &[1.3125]);
}

#[test]
fn sac_losses() {
    // target = r + γ(1-d)(minQ' - α logπ') = 1 + 0.5 * (4 - 0.2 * -5) = 3.5; terminated: 1.
    let y = sac_target(
        col(&[1.0, 1.0]),
        col(&[0.0, 1.0]),
        col(&[4.0, 4.0]),
        col(&[-5.0, -5.0]),
        0.2,
        0.5,
    );
    close(&vals(y.clone()), &[3.5, 1.0]);
    // Two critics [E=2, B=2, 1]: errors (0.5, 1) and (1.5, -1): sum of means = 0.625 + 1.625.
    let q = Tensor::<3>::from_data(
        TensorData::new(vec![4.0f32, 2.0, 5.0, 0.0], [2, 2, 1]),
        &dev(),
    );
    close(&vals(sac_critic_loss(q, y)), &[2.25]);
    // mean(α logπ - Q) = mean(0.1*-2 - 1, 0.1*-4 - 3) = mean(-1.2, -3.4) = -2.3
    close(
        &vals(sac_actor_loss(col(&[-2.0, -4.0]), col(&[1.0, 3.0]), 0.1)),
        &[-2.3],
    );
    // -mean(log α (logπ + H)) with log α = 0.5, H = -1: -mean(0.5*(-3), 0.5*(1)) = 0.5
    let log_alpha = Tensor::<1>::from_data(TensorData::new(vec![0.5f32], [1]), &dev());
    close(
        &vals(sac_temperature_loss(log_alpha, col(&[-2.0, 2.0]), -1.0)),
        &[0.5],
    );
}

#[test]
fn temperature_gradient_flows_only_to_log_alpha() {
    let ad = dev().autodiff();
    let log_alpha = Tensor::<1>::from_data(TensorData::new(vec![0.0f32], [1]), &ad).require_grad();
    let logp =
        Tensor::<2>::from_data(TensorData::new(vec![-3.0f32, -1.0], [2, 1]), &ad).require_grad();
    let loss = sac_temperature_loss(log_alpha.clone(), logp.clone(), -1.0);
    let grads = loss.backward();
    // d/dlogα = -mean(logπ + H) = -mean(-4, -2) = 3
    close(&vals(log_alpha.grad(&grads).unwrap()), &[3.0]);
    assert!(
        logp.grad(&grads)
            .is_none_or(|g| vals(g).iter().all(|&x| x == 0.0))
    );
}

#[test]
fn policy_gradient_and_entropy() {
    // -mean(logπ · A) = -mean(-1*2, -2*(-1)) = -mean(-2, 2) = 0; then with A = (1, 1): 1.5
    close(
        &vals(policy_gradient_loss(col(&[-1.0, -2.0]), col(&[2.0, -1.0]))),
        &[0.0],
    );
    close(
        &vals(policy_gradient_loss(col(&[-1.0, -2.0]), col(&[1.0, 1.0]))),
        &[1.5],
    );
    close(&vals(entropy_loss(col(&[0.5, 1.5]))), &[-1.0]);
}

#[test]
fn ppo_surrogate_clips_the_ratio_only_where_it_would_gain() {
    let ln = |x: f32| x.ln();
    // Ratios 1.5 (A = 2: clipped to 1.2 → 2.4), 1.5 (A = −1: unclipped −1.5 is lower),
    // 0.5 (A = 1: unclipped 0.5 is lower), 0.5 (A = −2: clipped 0.8 → −1.6).
    let logp = col(&[ln(1.5), ln(1.5), ln(0.5), ln(0.5)]);
    let old = col(&[0.0; 4]);
    let (loss, ratio) = ppo_clip_loss(logp, old, col(&[2.0, -1.0, 1.0, -2.0]), 0.2);
    close(&vals(ratio), &[1.5, 1.5, 0.5, 0.5]);
    close(&vals(loss), &[-(2.4 - 1.5 + 0.5 - 1.6) / 4.0]);
    // The gradient flows only through the unclipped terms: d/dlogp_i = −r_i A_i / 4 there.
    let ad = emberlab_backend::DeviceSpec::Flex
        .device()
        .unwrap()
        .autodiff();
    let logp = Tensor::<2>::from_data(
        TensorData::new(vec![ln(1.5), ln(1.5), ln(0.5), ln(0.5)], [4, 1]),
        &ad,
    )
    .require_grad();
    let adv = Tensor::<2>::from_data(TensorData::new(vec![2.0f32, -1.0, 1.0, -2.0], [4, 1]), &ad);
    let (loss, _) = ppo_clip_loss(logp.clone(), Tensor::zeros([4, 1], &ad), adv, 0.2);
    let g = vals(logp.grad(&loss.backward()).unwrap());
    close(&g, &[0.0, 1.5 / 4.0, -0.5 / 4.0, 0.0]);
    // Value clipping keeps V within ε of the old value.
    close(
        &vals(clipped_values(
            col(&[1.0, 5.0, 2.05]),
            col(&[2.0, 2.0, 2.0]),
            0.5,
        )),
        &[1.5, 2.5, 2.05],
    );
}

#[test]
fn returns_respect_terminated_and_truncated() {
    // One env, 4 steps, γ = 0.5: terminate after step 1, truncate after step 3 (V(final) = 8).
    let r = Rollout {
        envs: 1,
        rewards: &[1.0, 1.0, 1.0, 1.0],
        terminated: &[0.0, 1.0, 0.0, 0.0],
        truncated: &[0.0, 0.0, 0.0, 1.0],
        next_values: &[0.0, 0.0, 0.0, 8.0],
    };
    close(&discounted_returns(&r, 0.5).unwrap(), &[1.5, 1.0, 3.5, 5.0]);
    // Two envs interleaved time-major, bootstrap 2 for both at the end.
    let r2 = Rollout {
        envs: 2,
        rewards: &[1.0, 0.0, 1.0, 0.0],
        terminated: &[0.0; 4],
        truncated: &[0.0; 4],
        next_values: &[0.0, 0.0, 2.0, 2.0],
    };
    close(
        &discounted_returns(&r2, 0.5).unwrap(),
        &[2.0, 0.5, 2.0, 1.0],
    );
    assert!(discounted_returns(&Rollout { envs: 3, ..r2 }, 0.5).is_err());
}

#[test]
fn gae_by_hand() {
    // γ = 0.5, λ = 0.5, values V(s_t) = 1; next values: 1 except the terminal step.
    let r = Rollout {
        envs: 1,
        rewards: &[1.0, 1.0, 1.0],
        terminated: &[0.0, 1.0, 0.0],
        truncated: &[0.0; 3],
        next_values: &[1.0, 5.0, 2.0],
    };
    let (adv, ret) = gae(&r, &[1.0, 1.0, 1.0], 0.5, 0.5).unwrap();
    // δ = (1 + 0.5 - 1, 1 + 0 - 1, 1 + 1 - 1) = (0.5, 0, 1)
    // Â2 = 1; Â1 = 0 (terminal: no carry); Â0 = 0.5 + 0.25 * 0 = 0.5
    close(&adv, &[0.5, 0.0, 1.0]);
    close(&ret, &[1.5, 1.0, 2.0]);
    // λ = 1 and no value function gives the discounted returns.
    let r0 = Rollout {
        next_values: &[0.0, 5.0, 2.0],
        ..r
    };
    let (adv, _) = gae(&r0, &[0.0; 3], 0.5, 1.0).unwrap();
    close(&adv, &discounted_returns(&r0, 0.5).unwrap());
    close(&adv, &[1.5, 1.0, 2.0]);
}

#[test]
fn non_finite_losses_are_named_errors() {
    let good = Tensor::<1>::from_data(TensorData::new(vec![0.25f32], [1]), &dev());
    assert_eq!(checked_loss("critic loss", &good, 3).unwrap(), 0.25);
    let bad = Tensor::<1>::from_data(TensorData::new(vec![f32::NAN], [1]), &dev());
    let e = checked_loss("critic loss", &bad, 42)
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("critic loss") && e.contains("42") && e.contains("NaN"),
        "{e}"
    );
    let inf = mse(col(&[f32::INFINITY]), col(&[0.0]));
    assert!(
        checked_loss("actor loss", &inf, 7)
            .unwrap_err()
            .to_string()
            .contains("actor loss")
    );
}
