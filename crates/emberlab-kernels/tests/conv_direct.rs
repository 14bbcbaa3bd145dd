//! Which path flex's `conv2d` takes for output channels in multiples of 16:
//! on a CPU with AVX-512 the forward and the weight's gradient are computed from the input
//! itself, and the GEMM library (whose counter is process-wide, hence a test binary of its
//! own) counts nothing; elsewhere im2col and the GEMM count both products. The values are
//! burn's either way (`tests/conv.rs` checks every shape, gradients included).

use burn::tensor::ops::ConvOptions;
use burn::tensor::{Distribution, Tensor};

mod conv_common;
use conv_common::{close, values};

#[test]
fn a_first_layer_runs_without_the_gemm_on_avx512() {
    let flex = emberlab_backend::DeviceSpec::Flex.device().unwrap();
    emberlab_kernels::gemm_stats::enable();
    let normal = Distribution::Normal(0.0, 1.0);
    // A first layer (no input gradient): forward, and the weight's gradient when tracked.
    #[cfg(target_arch = "x86_64")]
    let direct = std::arch::is_x86_feature_detected!("avx512f");
    #[cfg(not(target_arch = "x86_64"))]
    let direct = false;
    for (device, tracked) in [(flex.clone(), false), (flex.clone().autodiff(), true)] {
        let x = Tensor::<4>::random([2, 4, 36, 36], normal, &device);
        let w = Tensor::<4>::random([32, 4, 8, 8], normal, &device);
        let w = if tracked { w.require_grad() } else { w };
        let before = emberlab_kernels::gemm_stats::snapshot();
        let y = emberlab_kernels::conv2d(x.clone(), w.clone(), None, [4, 4], [0, 0]);
        let grad = tracked.then(|| y.clone().sum().backward());
        let moved = emberlab_kernels::gemm_stats::snapshot().since(&before);
        // Forward (and the weight's gradient when tracked): 2 · 64 positions · 256 · 32.
        let products = if tracked { 2 } else { 1 } * 2 * 64 * 256 * 32;
        if direct {
            assert_eq!(moved.multiply_adds, 0, "tracked {tracked}: the GEMM ran");
        } else {
            assert!(
                moved.multiply_adds >= products,
                "tracked {tracked}: {moved:?}"
            );
        }
        let options = ConvOptions::new([4, 4], [0, 0], [1, 1], 1);
        let want = burn::tensor::module::conv2d(x, w.clone(), None, options);
        close("direct y", &values(y), &values(want.clone()));
        if let Some(grad) = grad {
            let burns = want.sum().backward();
            close(
                "direct dw",
                &values(w.grad(&grad).unwrap()),
                &values(w.grad(&burns).unwrap()),
            );
        }
    }
}
