//! `emberlab_kernels::tanh` against burn's `tanh`: values, gradients, shared and strided inputs,
//! on every host backend this build has.

use burn::tensor::{Distribution, Tensor};

mod common;
use common::devices;

fn max_abs_diff(a: Tensor<2>, b: Tensor<2>) -> f32 {
    (a - b).abs().max().into_scalar::<f32>()
}

#[test]
fn values_match_burns_tanh_on_every_host_backend() {
    for device in devices() {
        let x = Tensor::<2>::random([37, 65], Distribution::Normal(0.0, 3.0), &device);
        let want = burn::tensor::activation::tanh(x.clone());
        let got = emberlab_kernels::tanh(x.clone());
        assert!(max_abs_diff(got, want.clone()) < 5e-7, "{device:?}");
        // The input is still intact (the kernel only works in place on a unique buffer).
        let again = emberlab_kernels::tanh(x.clone());
        assert!(
            max_abs_diff(again, want.clone()) < 5e-7,
            "{device:?}: input was overwritten"
        );
        // A transposed (strided) view.
        let got_t = emberlab_kernels::tanh(x.clone().transpose());
        assert!(
            max_abs_diff(got_t, want.clone().transpose()) < 5e-7,
            "{device:?}"
        );
        // A slice with an offset.
        let got_s = emberlab_kernels::tanh(x.clone().slice([3..9, 10..20]));
        let want_s = want.slice([3..9, 10..20]);
        assert!(max_abs_diff(got_s, want_s) < 5e-7, "{device:?}");
    }
}

#[test]
fn gradients_match_burns_tanh_under_autodiff() {
    for device in devices() {
        let device = device.autodiff();
        let x0 = Tensor::<2>::random([16, 33], Distribution::Normal(0.0, 2.0), &device);
        let w = Tensor::<2>::random([16, 33], Distribution::Normal(0.0, 1.0), &device);

        let x = x0.clone().require_grad();
        let loss = (emberlab_kernels::tanh(x.clone()) * w.clone()).sum();
        let ours = x.grad(&loss.backward()).expect("a gradient");

        let x = x0.clone().require_grad();
        let loss = (burn::tensor::activation::tanh(x.clone()) * w.clone()).sum();
        let burns = x.grad(&loss.backward()).expect("a gradient");

        let diff = (ours - burns).abs().max().into_scalar::<f32>();
        assert!(diff < 2e-6, "{device:?}: gradient differs by {diff}");
    }
}

#[test]
fn a_tanh_output_used_twice_keeps_both_gradient_paths() {
    for device in devices() {
        let device = device.autodiff();
        let x = Tensor::<2>::from_floats([[0.3, -1.2, 2.0]], &device).require_grad();
        let y = emberlab_kernels::tanh(x.clone());
        // d/dx (y + y²) = (1 + 2y)(1 − y²)
        let loss = (y.clone() + y.clone() * y).sum();
        let grad = x.grad(&loss.backward()).expect("a gradient").into_data();
        for (g, x) in grad.iter::<f32>().zip([0.3f32, -1.2, 2.0]) {
            let y = x.tanh();
            let want = (1.0 + 2.0 * y) * (1.0 - y * y);
            assert!((g - want).abs() < 1e-6, "x = {x}: {g} vs {want}");
        }
    }
}
