//! [`tanh_gaussian`]: a reparameterised tanh-Gaussian sample and its log-probability from a
//! policy head, in one differentiable operation.
//!
//! For a head `[μ, log σ]` (`[rows, 2k]`, `log σ` clamped to its bounds) and standard normal
//! noise `ε` (`[rows, k]`): `u = μ + σ·ε`, the action `tanh u` and
//! `log π = Σ_i [−½ ε_i² − log σ_i − ½ log 2π − log(1 − tanh² u_i)] − offset`, with the
//! stable form `log(1 − tanh² u) = 2 (log 2 − u − softplus(−2u))`.
//!
//! As tensor operations that is about twenty autodiff nodes over `[rows, k]` (two slices,
//! the clamp, `exp`, the products and sums, `softplus`, `tanh`), each with its own buffer
//! forward and backward. [`HostTanhGaussian`] computes the action and the log-probability
//! in one pass over the rows and its backward pass in another, from the head, the noise
//! and its output:
//! `d/du = g_a (1 − tanh² u) + 2 g_l tanh u`, `d/dμ = d/du`,
//! `d/d log σ = d/du · σ ε − g_l` (zero where the clamp held `log σ` at a bound).

// Without flex, `backend_extension` generates a dispatch with no backend to pass `t` to.
#![cfg_attr(not(feature = "flex"), allow(unused_variables))]

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind, unary};
use burn::backend::{Autodiff, Backend, backend_extension, tensor::FloatTensor};
use burn::tensor::Tensor;
use burn::tensor::activation::softplus;

/// The bounds of `log σ` and the constant subtracted from every log-probability (the log
/// of the action box's scales), which [`tanh_gaussian`] takes.
#[derive(Debug, Clone, Copy, PartialEq)]
pub struct TanhGaussian {
    /// `log σ` is clamped to `[low, high]`.
    pub log_std_bounds: (f32, f32),
    /// Subtracted from each row's log-probability: `Σ_i log scale_i` for actions squashed
    /// onto a box `tanh(u)·scale + bias`, 0 for `[−1, 1]`.
    pub log_prob_offset: f32,
}

/// The sample and log-probability of [`tanh_gaussian`] in one op; implemented for flex and
/// autodiff over it.
#[backend_extension(Flex: cfg(feature = "flex"), Autodiff)]
pub trait HostTanhGaussian: Backend {
    /// `[tanh u, log π]` `[rows, k + 1]` for a head `[rows, 2k]` and noise `[rows, k]`
    /// (module docs).
    fn host_tanh_gaussian(
        head: FloatTensor<Self>,
        noise: FloatTensor<Self>,
        params: TanhGaussian,
    ) -> FloatTensor<Self>;
    /// The gradient with respect to the head `[rows, 2k]`, given the incoming gradient
    /// `grad` of the output `out` (`[rows, k + 1]`).
    fn host_tanh_gaussian_backward(
        head: FloatTensor<Self>,
        noise: FloatTensor<Self>,
        out: FloatTensor<Self>,
        grad: FloatTensor<Self>,
        params: TanhGaussian,
    ) -> FloatTensor<Self>;
}

/// `½ log 2π`, the Gaussian log-density's constant (`emberlab_nn::distributions` re-exports
/// it).
pub const HALF_LOG_2PI: f64 = 0.918_938_533_204_672_8;

/// [`HALF_LOG_2PI`] in `f32`, as the kernels add it.
const HALF_LOG_2PI_F32: f32 = HALF_LOG_2PI as f32;
/// Above this `ln(1 + eˣ)` is `x` (burn's `softplus` threshold).
const SOFTPLUS_THRESHOLD: f32 = 20.0;

/// `ln(1 + eˣ)` as burn's `softplus` computes it.
#[inline(always)]
fn softplus_f32(x: f32) -> f32 {
    if x > SOFTPLUS_THRESHOLD {
        x
    } else {
        x.exp().ln_1p()
    }
}

/// [`HostTanhGaussian::host_tanh_gaussian`] on host slices: `out` `[rows, k + 1]` from
/// `head` `[rows, 2k]` and `noise` `[rows, k]`.
///
/// # Panics
/// If the lengths do not fit one `k`.
pub fn tanh_gaussian_rows(head: &[f32], noise: &[f32], params: TanhGaussian, out: &mut [f32]) {
    // `out` holds one more value per row than `noise`.
    let rows = out.len().saturating_sub(noise.len());
    let k = noise.len() / rows.max(1);
    assert!(
        k > 0
            && head.len() == rows * 2 * k
            && noise.len() == rows * k
            && out.len() == rows * (k + 1),
        "tanh_gaussian: head of {}, noise of {}, output of {} values",
        head.len(),
        noise.len(),
        out.len()
    );
    let (lo, hi) = params.log_std_bounds;
    for ((h, e), o) in head
        .chunks_exact(2 * k)
        .zip(noise.chunks_exact(k))
        .zip(out.chunks_exact_mut(k + 1))
    {
        let mut log_prob = 0.0f32;
        for c in 0..k {
            let log_std = h[k + c].clamp(lo, hi);
            let u = h[c] + log_std.exp() * e[c];
            o[c] = u.tanh();
            let gauss = e[c] * e[c] * -0.5 - log_std - HALF_LOG_2PI_F32;
            let log_det = (-u + std::f32::consts::LN_2 - softplus_f32(-2.0 * u)) * 2.0;
            log_prob += gauss - log_det;
        }
        o[k] = log_prob - params.log_prob_offset;
    }
}

/// [`HostTanhGaussian::host_tanh_gaussian_backward`] on host slices: `d_head` `[rows, 2k]`.
///
/// # Panics
/// If the lengths do not fit one `k`.
pub fn tanh_gaussian_backward_rows(
    head: &[f32],
    noise: &[f32],
    out: &[f32],
    grad: &[f32],
    params: TanhGaussian,
    d_head: &mut [f32],
) {
    // `out` holds one more value per row than `noise`.
    let rows = out.len().saturating_sub(noise.len());
    let k = noise.len() / rows.max(1);
    assert!(
        k > 0
            && head.len() == rows * 2 * k
            && noise.len() == rows * k
            && out.len() == rows * (k + 1)
            && grad.len() == out.len()
            && d_head.len() == head.len(),
        "tanh_gaussian backward: head of {}, noise of {}, output of {}, gradient of {} values",
        head.len(),
        noise.len(),
        out.len(),
        grad.len()
    );
    let (lo, hi) = params.log_std_bounds;
    let rows_of = head
        .chunks_exact(2 * k)
        .zip(noise.chunks_exact(k))
        .zip(out.chunks_exact(k + 1).zip(grad.chunks_exact(k + 1)));
    for (((h, e), (o, g)), d) in rows_of.zip(d_head.chunks_exact_mut(2 * k)) {
        let g_log_prob = g[k];
        for c in 0..k {
            let t = o[c];
            let raw = h[k + c];
            let sigma_eps = raw.clamp(lo, hi).exp() * e[c];
            // `−log(1 − tanh² u)` has slope `2 tanh u`.
            let d_u = g[c] * (1.0 - t * t) + g_log_prob * 2.0 * t;
            d[c] = d_u;
            d[k + c] = if raw >= lo && raw <= hi {
                d_u * sigma_eps - g_log_prob
            } else {
                0.0
            };
        }
    }
}

#[cfg(feature = "flex")]
mod flex {
    use super::{HostTanhGaussian, TanhGaussian, tanh_gaussian_backward_rows, tanh_gaussian_rows};
    use crate::host::with_values;
    use burn::backend::Flex;
    use burn::backend::flex::FlexTensor;
    use burn::tensor::TensorData;

    /// `(rows, k)` of a head `[rows, 2k]`.
    fn rows_and_width(head: &FlexTensor) -> (usize, usize) {
        let s = head.layout().shape();
        (s[0], s[1] / 2)
    }

    impl HostTanhGaussian for Flex {
        fn host_tanh_gaussian(
            head: FlexTensor,
            noise: FlexTensor,
            params: TanhGaussian,
        ) -> FlexTensor {
            let (rows, k) = rows_and_width(&head);
            let mut out = vec![0.0f32; rows * (k + 1)];
            with_values(&head, |h| {
                with_values(&noise, |e| tanh_gaussian_rows(h, e, params, &mut out))
            });
            FlexTensor::from_data(TensorData::new(out, [rows, k + 1]))
        }

        fn host_tanh_gaussian_backward(
            head: FlexTensor,
            noise: FlexTensor,
            out: FlexTensor,
            grad: FlexTensor,
            params: TanhGaussian,
        ) -> FlexTensor {
            let (rows, k) = rows_and_width(&head);
            let mut d_head = vec![0.0f32; rows * 2 * k];
            with_values(&head, |h| {
                with_values(&noise, |e| {
                    with_values(&out, |o| {
                        with_values(&grad, |g| {
                            tanh_gaussian_backward_rows(h, e, o, g, params, &mut d_head)
                        })
                    })
                })
            });
            FlexTensor::from_data(TensorData::new(d_head, [rows, 2 * k]))
        }
    }
}

impl<B: Backend + HostTanhGaussian, C: CheckpointStrategy> HostTanhGaussian for Autodiff<B, C> {
    fn host_tanh_gaussian(
        head: FloatTensor<Self>,
        noise: FloatTensor<Self>,
        params: TanhGaussian,
    ) -> FloatTensor<Self> {
        #[derive(Debug)]
        struct TanhGaussianBackward;

        impl<B: Backend + HostTanhGaussian> Backward<B, 1> for TanhGaussianBackward {
            /// The head, the noise, the output and the parameters.
            type State = (FloatTensor<B>, FloatTensor<B>, FloatTensor<B>, TanhGaussian);

            fn backward(
                self,
                ops: Ops<Self::State, 1>,
                grads: &mut Gradients,
                _checkpointer: &mut Checkpointer,
            ) {
                let (head, noise, out, params) = ops.state;
                unary::<B, _>(ops.parents, ops.node, grads, |grad| {
                    B::host_tanh_gaussian_backward(head, noise, out, grad, params)
                });
            }
        }

        // The noise is a constant of the sample: no gradient flows to it.
        let nodes = [head.node()];
        let (head, noise) = (head.into_primitive(), noise.into_primitive());
        match TanhGaussianBackward
            .prepare::<C>(nodes)
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(prep) => {
                let out = B::host_tanh_gaussian(head.clone(), noise.clone(), params);
                prep.finish((head, noise, out.clone(), params), out)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::host_tanh_gaussian(head, noise, params)),
        }
    }

    fn host_tanh_gaussian_backward(
        head: FloatTensor<Self>,
        noise: FloatTensor<Self>,
        out: FloatTensor<Self>,
        grad: FloatTensor<Self>,
        params: TanhGaussian,
    ) -> FloatTensor<Self> {
        // Not differentiated again by any Ember learner.
        let inner = B::host_tanh_gaussian_backward(
            head.into_primitive(),
            noise.into_primitive(),
            out.into_primitive(),
            grad.into_primitive(),
            params,
        );
        <Self as burn::backend::AutodiffBackend>::from_inner(inner)
    }
}

/// A reparameterised tanh-Gaussian sample from a policy head `[μ, log σ]` (`[rows, 2k]`)
/// and standard normal `noise` (`[rows, k]`, a constant: no gradient flows to it): the
/// actions `tanh(μ + σ·ε)` `[rows, k]` and their log-probabilities `[rows, 1]` (module
/// docs), differentiable with respect to the head. On flex one op forward and one backward
/// ([`HostTanhGaussian`]); burn's operations elsewhere, with the same formulas.
pub fn tanh_gaussian(
    head: Tensor<2>,
    noise: Tensor<2>,
    params: TanhGaussian,
) -> (Tensor<2>, Tensor<2>) {
    let [rows, width] = head.dims();
    let k = width / 2;
    #[cfg(feature = "flex")]
    if head.device().inner() == burn::tensor::Device::flex() {
        let out = <burn::backend::Dispatch as HostTanhGaussian>::host_tanh_gaussian(
            head.into_dispatch(),
            noise.detach().into_dispatch(),
            params,
        );
        let out = Tensor::<2>::from_dispatch(out);
        return (
            out.clone().slice([0..rows, 0..k]),
            out.slice([0..rows, k..k + 1]),
        );
    }
    let (lo, hi) = params.log_std_bounds;
    let mean = head.clone().slice([0..rows, 0..k]);
    let log_std = head.slice([0..rows, k..2 * k]).clamp(lo, hi);
    let noise = noise.detach();
    let u = mean + log_std.clone().exp() * noise.clone();
    let gauss = (noise.clone() * noise).mul_scalar(-0.5) - log_std - HALF_LOG_2PI_F32;
    let log_det = (u.clone().neg().add_scalar(std::f64::consts::LN_2)
        - softplus(u.clone().mul_scalar(-2.0), 1.0))
    .mul_scalar(2.0);
    let log_prob = (gauss - log_det)
        .sum_dim(1)
        .sub_scalar(params.log_prob_offset);
    (crate::tanh(u), log_prob)
}
