//! `emberlab_kernels::tanh_gaussian` against the same formulas written with burn's operations:
//! the actions, the log-probabilities and the head's gradient through both, with `log σ`
//! inside and beyond its bounds, on every host backend.

use burn::tensor::activation::softplus;
use burn::tensor::{Distribution, Tensor};
use emberlab_kernels::{TanhGaussian, tanh_gaussian};

mod common;
use common::devices;

const PARAMS: TanhGaussian = TanhGaussian {
    log_std_bounds: (-2.0, 1.0),
    log_prob_offset: std::f32::consts::LN_2,
};

fn values<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.into_data().convert::<f32>().try_to_vec::<f32>().unwrap()
}

/// The sample written out with burn's operations, as `GaussianTanhPolicy` once did.
fn reference(head: Tensor<2>, noise: Tensor<2>) -> (Tensor<2>, Tensor<2>) {
    let [rows, width] = head.dims();
    let k = width / 2;
    let mean = head.clone().slice([0..rows, 0..k]);
    let (lo, hi) = PARAMS.log_std_bounds;
    let log_std = head.slice([0..rows, k..2 * k]).clamp(lo, hi);
    let u = mean + log_std.clone().exp() * noise.clone();
    let half_log_2pi = 0.5 * (2.0 * std::f64::consts::PI).ln();
    let gauss = (noise.clone() * noise).mul_scalar(-0.5) - log_std - half_log_2pi;
    let log_det = (u.clone().neg().add_scalar(std::f64::consts::LN_2)
        - softplus(u.clone().mul_scalar(-2.0), 1.0))
    .mul_scalar(2.0);
    let log_prob = (gauss - log_det)
        .sum_dim(1)
        .sub_scalar(PARAMS.log_prob_offset);
    (burn::tensor::activation::tanh(u), log_prob)
}

fn close(what: &str, ours: &[f32], theirs: &[f32], tol: f32) {
    assert_eq!(ours.len(), theirs.len(), "{what}: lengths");
    for (i, (a, b)) in ours.iter().zip(theirs).enumerate() {
        assert!(
            (a - b).abs() <= tol * (1.0 + b.abs()),
            "{what}[{i}]: {a} against {b}"
        );
    }
}

/// A head whose raw `log σ` columns reach well past both bounds (clamped rows included).
fn head(rows: usize, k: usize, device: &burn::tensor::Device) -> Tensor<2> {
    Tensor::<2>::random([rows, 2 * k], Distribution::Normal(0.0, 1.5), device)
}

#[test]
fn sample_and_log_probability_are_the_formulas() {
    for device in devices() {
        for k in [1, 3, 6] {
            let h = head(67, k, &device);
            let noise = Tensor::<2>::random([67, k], Distribution::Normal(0.0, 1.0), &device);
            let (a, l) = tanh_gaussian(h.clone(), noise.clone(), PARAMS);
            let (ra, rl) = reference(h, noise);
            assert_eq!(a.dims(), [67, k]);
            assert_eq!(l.dims(), [67, 1]);
            close("action", &values(a), &values(ra), 1e-6);
            close("log-probability", &values(l), &values(rl), 2e-5);
        }
    }
}

#[test]
fn gradients_through_both_outputs_are_the_formulas() {
    for device in devices() {
        let device = device.autodiff();
        let k = 4;
        let h0 = head(53, k, &device);
        let noise = Tensor::<2>::random([53, k], Distribution::Normal(0.0, 1.0), &device);
        let probe_a = Tensor::<2>::random([53, k], Distribution::Normal(0.0, 1.0), &device);
        let probe_l = Tensor::<2>::random([53, 1], Distribution::Normal(0.0, 1.0), &device);
        let grad = |ours: bool| {
            let h = h0.clone().require_grad();
            let (a, l) = if ours {
                tanh_gaussian(h.clone(), noise.clone(), PARAMS)
            } else {
                reference(h.clone(), noise.clone())
            };
            // The log-probability used twice, as SAC's actor and temperature losses do.
            let loss = (a * probe_a.clone()).sum() + (l.clone() * probe_l.clone()).sum() + l.sum();
            let g = loss.backward();
            values(h.grad(&g).expect("the head's gradient"))
        };
        let (ours, theirs) = (grad(true), grad(false));
        close("head gradient", &ours, &theirs, 2e-5);
        // The clamped columns have no gradient; some of the head's log σ are clamped.
        let raw = values(h0.clone().inner());
        let clamped = (0..53 * 2 * k)
            .filter(|&i| i % (2 * k) >= k && !(-2.0..=1.0).contains(&raw[i]))
            .collect::<Vec<_>>();
        assert!(
            clamped.len() > 10,
            "too few clamped values: {}",
            clamped.len()
        );
        assert!(clamped.iter().all(|&i| ours[i] == 0.0));
    }
}

#[test]
fn without_autodiff_it_is_the_same_sample() {
    for device in devices() {
        let h = head(9, 2, &device);
        let noise = Tensor::<2>::random([9, 2], Distribution::Normal(0.0, 1.0), &device);
        let ad = device.autodiff();
        let (a, l) = tanh_gaussian(h.clone(), noise.clone(), PARAMS);
        let (a2, l2) = tanh_gaussian(h.to_device(&ad), noise.to_device(&ad), PARAMS);
        assert_eq!(values(a), values(a2));
        assert_eq!(values(l), values(l2));
    }
}
