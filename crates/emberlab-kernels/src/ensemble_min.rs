//! [`ensemble_min`]: the smallest of an ensemble's values from the members' last hidden
//! layers, with a backward pass that touches only each row's smallest member.
//!
//! Clipped double-Q (SAC, TD3's targets, REDQ's subsets) takes `min_e q_e` per row, where
//! `q_e = h_e · w_e + b_e` is member `e`'s one-output last layer. As tensor operations that
//! is a product, a bias add and `min_dim` — three nodes, and a backward pass that scatters
//! the gradient into a mostly-zero `[E, rows, 1]` tensor and multiplies it back through
//! every member. Here one op computes the values (the products by [`crate::matmul`]'s
//! kernels, so each is the bit that the separate ops give) and remembers which member
//! gave each row's minimum (the first, on ties); its backward pass writes `g · w_e` into that
//! member's row of the hidden layer's gradient and zeros elsewhere (row-sparse: the next
//! product skips the zero rows, [`crate::matmul`]), and sums the weight and bias gradients
//! over the rows each member won.

// Without flex, `backend_extension` generates a dispatch with no backend to pass `t` to.
#![cfg_attr(not(feature = "flex"), allow(unused_variables))]

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::{Autodiff, Backend, backend_extension, tensor::FloatTensor};
use burn::tensor::Tensor;

/// Which gradient of [`HostEnsembleMin::host_ensemble_min_backward`] to compute.
#[derive(Debug, Clone, Copy, PartialEq, Eq)]
pub enum EnsembleMinGrad {
    /// With respect to the hidden layers `h` `[E, rows, H]`.
    Hidden,
    /// With respect to the weights `w` `[E, H, 1]`.
    Weight,
    /// With respect to the biases `b` `[E, 1, 1]`.
    Bias,
}

/// The ensemble minimum of [`ensemble_min`] as one op; implemented for flex and autodiff
/// over it.
#[backend_extension(Flex: cfg(feature = "flex"), Autodiff)]
pub trait HostEnsembleMin: Backend {
    /// `[rows, 2]`: each row's `min_e (h_e · w_e + b_e)` and the member that gave it (as a
    /// float), for `h` `[E, rows, H]`, `w` `[E, H, 1]`, `b` `[E, 1, 1]`.
    fn host_ensemble_min(
        h: FloatTensor<Self>,
        w: FloatTensor<Self>,
        b: FloatTensor<Self>,
    ) -> FloatTensor<Self>;
    /// One gradient (`which`) given the incoming gradient `grad` `[rows, 2]` of the output
    /// `out` (its first column; the member column gets none).
    fn host_ensemble_min_backward(
        h: FloatTensor<Self>,
        w: FloatTensor<Self>,
        out: FloatTensor<Self>,
        grad: FloatTensor<Self>,
        which: EnsembleMinGrad,
    ) -> FloatTensor<Self>;
}

/// `out` `[rows, 2]` of [`HostEnsembleMin::host_ensemble_min`] from the members' products
/// `q` `[E, rows]` (`h_e · w_e`, row-major) and their biases `b` `[E]`: each row's
/// smallest `q + b` and the member that gave it (the first on ties; a NaN is kept, and the
/// loss reports it).
///
/// # Panics
/// If `q` is not `members · rows` long or `b` not `members`.
pub fn ensemble_min_rows(q: &[f32], b: &[f32], out: &mut [f32]) {
    let (members, rows) = (b.len(), out.len() / 2);
    assert!(
        members > 0 && q.len() == members * rows,
        "ensemble_min: {} products, {} biases, {} rows",
        q.len(),
        members,
        rows
    );
    for (r, o) in out.chunks_exact_mut(2).enumerate() {
        let (mut best, mut at) = (q[r] + b[0], 0usize);
        for (e, &bias) in b.iter().enumerate().skip(1) {
            let v = q[e * rows + r] + bias;
            if v < best || v.is_nan() && !best.is_nan() {
                (best, at) = (v, e);
            }
        }
        o[0] = best;
        o[1] = at as f32;
    }
}

crate::multiversion! {
    /// `d_h` `[E, rows, H]` of [`HostEnsembleMin::host_ensemble_min_backward`]: `g_r · w_e`
    /// in row `r` of the member `e` that won it, zeros elsewhere.
    pub fn ensemble_min_hidden_grad(w: &[f32], out: &[f32], grad: &[f32], members: usize, d_h: &mut [f32]) {
        let hidden = w.len() / members;
        let rows = out.len() / 2;
        assert!(d_h.len() == members * rows * hidden && grad.len() == out.len());
        d_h.fill(0.0);
        for r in 0..rows {
            let e = out[2 * r + 1] as usize;
            let g = grad[2 * r];
            let row = &mut d_h[(e * rows + r) * hidden..][..hidden];
            for (d, &wv) in row.iter_mut().zip(&w[e * hidden..][..hidden]) {
                *d = g * wv;
            }
        }
    }
}

/// `d_w` `[E, H, 1]` (`Σ_r g_r h_{e,r}` over the rows member `e` won) or, with `h` empty,
/// `d_b` `[E, 1, 1]` (`Σ_r g_r` over them).
fn ensemble_min_param_grad(h: &[f32], out: &[f32], grad: &[f32], members: usize, d: &mut [f32]) {
    let rows = out.len() / 2;
    let hidden = d.len() / members;
    d.fill(0.0);
    for r in 0..rows {
        let e = out[2 * r + 1] as usize;
        let g = grad[2 * r];
        let target = &mut d[e * hidden..][..hidden];
        if h.is_empty() {
            target[0] += g;
        } else {
            for (t, &x) in target
                .iter_mut()
                .zip(&h[(e * rows + r) * hidden..][..hidden])
            {
                *t += g * x;
            }
        }
    }
}

#[cfg(feature = "flex")]
mod flex {
    use super::{
        EnsembleMinGrad, HostEnsembleMin, ensemble_min_hidden_grad, ensemble_min_param_grad,
        ensemble_min_rows,
    };
    use crate::HostMatmul;
    use crate::host::with_values;
    use burn::backend::Flex;
    use burn::backend::flex::FlexTensor;
    use burn::tensor::TensorData;

    /// `(members, rows, hidden)` of `h` `[E, rows, H]`.
    fn dims(h: &FlexTensor) -> (usize, usize, usize) {
        let s = h.layout().shape();
        (s[0], s[1], s[2])
    }

    impl HostEnsembleMin for Flex {
        fn host_ensemble_min(h: FlexTensor, w: FlexTensor, b: FlexTensor) -> FlexTensor {
            let (_, rows, _) = dims(&h);
            // The products as `forward` computes them, so the minimum is one of its values
            // to the bit.
            let q = <Flex as HostMatmul>::host_matmul(h, w);
            let mut out = vec![0.0f32; rows * 2];
            with_values(&q, |q| {
                with_values(&b, |b| ensemble_min_rows(q, b, &mut out))
            });
            FlexTensor::from_data(TensorData::new(out, [rows, 2]))
        }

        fn host_ensemble_min_backward(
            h: FlexTensor,
            w: FlexTensor,
            out: FlexTensor,
            grad: FlexTensor,
            which: EnsembleMinGrad,
        ) -> FlexTensor {
            let (members, rows, hidden) = dims(&h);
            with_values(&out, |o| {
                with_values(&grad, |g| match which {
                    EnsembleMinGrad::Hidden => {
                        let mut d = vec![0.0f32; members * rows * hidden];
                        with_values(&w, |w| ensemble_min_hidden_grad(w, o, g, members, &mut d));
                        FlexTensor::from_data(TensorData::new(d, [members, rows, hidden]))
                    }
                    EnsembleMinGrad::Weight => {
                        let mut d = vec![0.0f32; members * hidden];
                        with_values(&h, |h| ensemble_min_param_grad(h, o, g, members, &mut d));
                        FlexTensor::from_data(TensorData::new(d, [members, hidden, 1]))
                    }
                    EnsembleMinGrad::Bias => {
                        let mut d = vec![0.0f32; members];
                        ensemble_min_param_grad(&[], o, g, members, &mut d);
                        FlexTensor::from_data(TensorData::new(d, [members, 1, 1]))
                    }
                })
            })
        }
    }
}

impl<B: Backend + HostEnsembleMin, C: CheckpointStrategy> HostEnsembleMin for Autodiff<B, C> {
    fn host_ensemble_min(
        h: FloatTensor<Self>,
        w: FloatTensor<Self>,
        b: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        #[derive(Debug)]
        struct EnsembleMinBackward;

        impl<B: Backend + HostEnsembleMin> Backward<B, 3> for EnsembleMinBackward {
            /// The hidden layers, the weights and the output.
            type State = (FloatTensor<B>, FloatTensor<B>, FloatTensor<B>);

            fn backward(
                self,
                ops: Ops<Self::State, 3>,
                grads: &mut Gradients,
                _checkpointer: &mut Checkpointer,
            ) {
                let (h, w, out) = ops.state;
                let grad = grads.consume::<B>(&ops.node);
                let [hidden, weight, bias] = ops.parents;
                let kinds = [
                    (hidden, EnsembleMinGrad::Hidden),
                    (weight, EnsembleMinGrad::Weight),
                    (bias, EnsembleMinGrad::Bias),
                ];
                for (node, which) in kinds {
                    if let Some(node) = node {
                        let g = B::host_ensemble_min_backward(
                            h.clone(),
                            w.clone(),
                            out.clone(),
                            grad.clone(),
                            which,
                        );
                        grads.register::<B>(node.id, g);
                    }
                }
            }
        }

        let nodes = [h.node(), w.node(), b.node()];
        let (h, w, b) = (h.into_primitive(), w.into_primitive(), b.into_primitive());
        match EnsembleMinBackward
            .prepare::<C>(nodes)
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(prep) => {
                let out = B::host_ensemble_min(h.clone(), w.clone(), b);
                prep.finish((h, w, out.clone()), out)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::host_ensemble_min(h, w, b)),
        }
    }

    fn host_ensemble_min_backward(
        h: FloatTensor<Self>,
        w: FloatTensor<Self>,
        out: FloatTensor<Self>,
        grad: FloatTensor<Self>,
        which: EnsembleMinGrad,
    ) -> FloatTensor<Self> {
        // Not differentiated again by any Ember learner.
        let inner = B::host_ensemble_min_backward(
            h.into_primitive(),
            w.into_primitive(),
            out.into_primitive(),
            grad.into_primitive(),
            which,
        );
        <Self as burn::backend::AutodiffBackend>::from_inner(inner)
    }
}

/// `min_e (h_e · w_e + b_e)` `[rows, 1]` for an ensemble's last hidden layers `h`
/// `[E, rows, H]` and its one-output last layer (`w` `[E, H, 1]`, `b` `[E, 1, 1]`),
/// differentiable: on flex one op whose backward pass goes only through each row's
/// smallest member (module docs), burn's product and `min_dim` elsewhere.
pub fn ensemble_min(h: Tensor<3>, w: Tensor<3>, b: Tensor<3>) -> Tensor<2> {
    let [_, rows, _] = h.dims();
    #[cfg(feature = "flex")]
    if h.device().inner() == burn::tensor::Device::flex() && w.dims()[2] == 1 {
        let out = <burn::backend::Dispatch as HostEnsembleMin>::host_ensemble_min(
            h.into_dispatch(),
            w.into_dispatch(),
            b.into_dispatch(),
        );
        return Tensor::<2>::from_dispatch(out).slice([0..rows, 0..1]);
    }
    (crate::matmul(h, w) + b).min_dim(0).reshape([rows, 1])
}
