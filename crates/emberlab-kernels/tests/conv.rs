//! `emberlab_kernels::conv2d` against burn's `conv2d`: the same values and gradients (to
//! float rounding: the sums run in another order) for strides, paddings, odd sizes, the
//! Nature CNN's first layer, an input that needs no gradient, and no bias, on every host
//! backend (flex computes output channels in multiples of 16 from the input on AVX-512 and
//! everything else as im2col and the GEMM; ndarray takes burn's op).

use burn::tensor::ops::ConvOptions;
use burn::tensor::{Distribution, Tensor};

mod conv_common;
use conv_common::{close, values};

mod common;
use common::devices;

/// `(input [n, c, h, w], output channels, kernel, stride, padding)`.
type Case = ([usize; 4], usize, [usize; 2], [usize; 2], [usize; 2]);

const CASES: [Case; 25] = [
    ([2, 3, 9, 11], 5, [3, 3], [1, 1], [0, 0]),
    ([3, 2, 10, 9], 4, [4, 3], [2, 3], [1, 2]),
    ([1, 5, 7, 7], 3, [3, 3], [1, 1], [1, 1]),
    ([2, 4, 36, 36], 8, [8, 8], [4, 4], [0, 0]),
    ([4, 1, 5, 6], 2, [5, 6], [1, 1], [0, 0]),
    // Unequal strides without padding (the unpadded im2col).
    ([2, 3, 11, 13], 4, [3, 2], [2, 3], [0, 0]),
    // Padding as wide as the kernel: whole kernel rows in the padding.
    ([1, 2, 3, 3], 3, [2, 2], [1, 1], [2, 2]),
    // Wide enough (16 outputs, 27-value patches) for the GEMM library, not the thin kernels
    // (or, on AVX-512, computed from the input) and 20 outputs for the GEMM everywhere.
    ([2, 3, 12, 12], 16, [3, 3], [1, 1], [1, 1]),
    ([2, 3, 12, 12], 20, [3, 3], [1, 1], [1, 1]),
    // The Nature CNN on 40×40 stacks of 2 (Catch): 9×9, 3×3, then 1×1 maps.
    ([8, 2, 40, 40], 32, [8, 8], [4, 4], [0, 0]),
    ([8, 32, 9, 9], 64, [4, 4], [2, 2], [0, 0]),
    ([8, 64, 3, 3], 64, [3, 3], [1, 1], [0, 0]),
    // Output channels in multiples of 16, which flex computes straight from the input on
    // AVX-512: groups of 48 and 16 (64 + 16, 64 + 48), unequal strides, a 1×1 kernel,
    // output counts that leave a part-filled last tile, and unequal paddings (the IMPALA
    // CNN's 3×3 layers are padded by 1).
    ([2, 3, 10, 10], 48, [3, 3], [1, 1], [0, 0]),
    ([3, 5, 9, 7], 16, [2, 3], [2, 1], [0, 0]),
    ([2, 6, 11, 9], 80, [3, 3], [2, 2], [0, 0]),
    ([1, 2, 6, 6], 112, [1, 1], [1, 1], [0, 0]),
    ([2, 3, 16, 16], 32, [3, 3], [1, 1], [1, 1]),
    ([2, 4, 7, 10], 16, [3, 4], [2, 1], [2, 1]),
    // Three 4×84×84 stacks: the weight's gradient sweeps samples in chunks of two, the
    // last chunk one sample.
    ([3, 4, 84, 84], 32, [8, 8], [4, 4], [0, 0]),
    // Large enough (over a million values unfolded) that the buffers are kept and reused
    // with the values of earlier cases still in them: the Nature CNN's first two layers on
    // 16 stacks, and a padded layer (on AVX-512 these three are computed from the input),
    // then the same with output channels that keep im2col and the GEMM everywhere.
    ([16, 4, 84, 84], 32, [8, 8], [4, 4], [0, 0]),
    ([16, 32, 20, 20], 64, [4, 4], [2, 2], [0, 0]),
    ([8, 16, 32, 32], 16, [3, 3], [1, 1], [1, 1]),
    ([16, 4, 84, 84], 30, [8, 8], [4, 4], [0, 0]),
    ([16, 32, 20, 20], 60, [4, 4], [2, 2], [0, 0]),
    ([8, 16, 32, 32], 20, [3, 3], [1, 1], [1, 1]),
];

/// The flex path really runs: the GEMM library's counter (which burn's own convolution does
/// not touch) moves by at least the forward product's multiply-adds, with nothing tracked
/// under autodiff (the untracked branch) and on the plain device.
#[test]
fn the_host_path_runs_tracked_or_not() {
    let flex = emberlab_backend::DeviceSpec::Flex.device().unwrap();
    emberlab_kernels::gemm_stats::enable();
    let normal = Distribution::Normal(0.0, 1.0);
    for device in [flex.clone(), flex.clone().autodiff()] {
        let x = Tensor::<4>::random([2, 3, 12, 12], normal, &device);
        let w = Tensor::<4>::random([20, 3, 3, 3], normal, &device);
        let before = emberlab_kernels::gemm_stats::snapshot();
        let y = emberlab_kernels::conv2d(x.clone(), w.clone(), None, [1, 1], [1, 1]);
        let moved = emberlab_kernels::gemm_stats::snapshot().since(&before);
        assert!(
            moved.multiply_adds >= 2 * 144 * 27 * 20,
            "{} multiply-adds counted",
            moved.multiply_adds
        );
        let options = ConvOptions::new([1, 1], [1, 1], [1, 1], 1);
        let want = burn::tensor::module::conv2d(x, w, None, options);
        close("untracked y", &values(y), &values(want));
    }
    // Untracked forwards (acting) large enough for kept buffers: each unfolded input goes
    // back to the pool after its product and the next takes it with stale values in it.
    for _ in 0..2 {
        for (input, out, kernel, stride, padding) in &CASES[CASES.len() - 6..] {
            let x = Tensor::<4>::random(*input, normal, &flex);
            let w = Tensor::<4>::random([*out, input[1], kernel[0], kernel[1]], normal, &flex);
            let y = emberlab_kernels::conv2d(x.clone(), w.clone(), None, *stride, *padding);
            let options = ConvOptions::new(*stride, *padding, [1, 1], 1);
            let want = burn::tensor::module::conv2d(x, w, None, options);
            close(&format!("untracked {input:?} y"), &values(y), &values(want));
        }
    }
    // Every case untracked on the plain device with a bias: burn's values.
    for (input, out, kernel, stride, padding) in CASES {
        let x = Tensor::<4>::random(input, normal, &flex);
        let w = Tensor::<4>::random([out, input[1], kernel[0], kernel[1]], normal, &flex);
        let b = Tensor::<1>::random([out], normal, &flex);
        let y = emberlab_kernels::conv2d(x.clone(), w.clone(), Some(b.clone()), stride, padding);
        let options = ConvOptions::new(stride, padding, [1, 1], 1);
        let want = burn::tensor::module::conv2d(x, w, Some(b), options);
        close(
            &format!("untracked {input:?} y with bias"),
            &values(y),
            &values(want),
        );
    }
    // An input with no rows, all padding: the output is the bias.
    let b = Tensor::<1>::from_floats([0.5, -2.0], &flex);
    let y = emberlab_kernels::conv2d(
        Tensor::zeros([1, 1, 0, 2], &flex),
        Tensor::ones([2, 1, 1, 1], &flex),
        Some(b),
        [1, 1],
        [1, 0],
    );
    assert_eq!(y.dims(), [1, 2, 2, 2]);
    assert_eq!(values(y), [0.5, 0.5, 0.5, 0.5, -2.0, -2.0, -2.0, -2.0]);
    // No output channel: burn's op, no panic.
    let x = Tensor::<4>::random([1, 2, 5, 5], normal, &flex);
    let y = emberlab_kernels::conv2d(x, Tensor::zeros([0, 2, 3, 3], &flex), None, [1, 1], [0, 0]);
    assert_eq!(y.dims(), [1, 0, 3, 3]);
}

#[test]
fn values_and_gradients_are_burns() {
    for device in devices() {
        let device = device.autodiff();
        for (input, out, kernel, stride, padding) in CASES {
            let [_, c, _, _] = input;
            let normal = Distribution::Normal(0.0, 1.0);
            let x0 = Tensor::<4>::random(input, normal, &device);
            let w0 = Tensor::<4>::random([out, c, kernel[0], kernel[1]], normal, &device);
            let b0 = Tensor::<1>::random([out], normal, &device);
            let options = ConvOptions::new(stride, padding, [1, 1], 1);
            let dims =
                burn::tensor::module::conv2d(x0.clone(), w0.clone(), None, options.clone()).dims();
            let probe = Tensor::<4>::random(dims, normal, &device);
            let run = |ours: bool, input_grad: bool, bias: bool| {
                let x = if input_grad {
                    x0.clone().require_grad()
                } else {
                    x0.clone()
                };
                let (w, b) = (w0.clone().require_grad(), b0.clone().require_grad());
                let b_used = bias.then(|| b.clone());
                let y = if ours {
                    emberlab_kernels::conv2d(x.clone(), w.clone(), b_used, stride, padding)
                } else {
                    burn::tensor::module::conv2d(x.clone(), w.clone(), b_used, options.clone())
                };
                let dims = y.dims();
                // The output used twice, with a non-uniform weight on its elements.
                let loss = (y.clone() * probe.clone()).sum() + y.clone().powi_scalar(2).sum() * 0.5;
                let g = loss.backward();
                let gx = x.grad(&g).map(values);
                let gb = b.grad(&g).map(values);
                (dims, values(y), gx, values(w.grad(&g).unwrap()), gb)
            };
            for (input_grad, bias) in [(true, true), (false, true), (true, false), (false, false)] {
                let what = format!(
                    "{input:?} k{kernel:?} s{stride:?} p{padding:?} dx:{input_grad} b:{bias}"
                );
                let (ours, theirs) = (run(true, input_grad, bias), run(false, input_grad, bias));
                assert_eq!(ours.0, theirs.0, "{what}: output shape");
                close(&format!("{what} y"), &ours.1, &theirs.1);
                assert_eq!(ours.2.is_some(), input_grad, "{what}: input gradient");
                if let (Some(a), Some(b)) = (&ours.2, &theirs.2) {
                    close(&format!("{what} dx"), a, b);
                }
                close(&format!("{what} dw"), &ours.3, &theirs.3);
                assert_eq!(ours.4.is_some(), bias, "{what}: bias gradient");
                if let (Some(a), Some(b)) = (&ours.4, &theirs.4) {
                    close(&format!("{what} db"), a, b);
                }
            }
        }
    }
}
