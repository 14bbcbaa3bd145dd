//! [`linear_relu`]: a hidden layer `relu(x·W + b)` as one differentiable op when the
//! product has few terms (a network's first layer on a few observations), so that its
//! output is written once: the product, the bias and the ReLU in one pass.
//!
//! As [`matmul`](crate::matmul) and [`bias_relu`](crate::bias_relu) the layer writes its
//! output and then makes a second pass over it; for a first layer of 3 or 4 inputs the
//! product itself is a pass over the output (a few multiply-adds per element), so the
//! second pass doubles its memory traffic. The backward pass is the separate ops' (the same
//! kernels in the same order), so the values and gradients are the same bits.

// Without flex, `backend_extension` generates a dispatch with no backend to pass `t` to.
#![cfg_attr(not(feature = "flex"), allow(unused_variables))]

use crate::activation::HostRelu;
use crate::bias::reduce_to;
use crate::matmul::HostMatmul;
use burn::backend::TensorMetadata as _;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::{Autodiff, Backend, backend_extension, tensor::FloatTensor};
use burn::tensor::{Shape, Tensor};

/// `relu(x·W + b)` for one layer; implemented for flex and autodiff over it.
#[backend_extension(Flex: cfg(feature = "flex"), Autodiff)]
pub trait HostLinearRelu: Backend {
    /// `relu(x · w + b)` for `x` `[m, k]`, `w` `[k, n]` and `b` `[1, n]` (the bias row
    /// added to every row): in one pass when `k` is small, as
    /// [`host_bias_relu`](crate::HostBiasRelu::host_bias_relu) of
    /// [`host_matmul`](HostMatmul::host_matmul) otherwise.
    fn host_linear_relu(
        x: FloatTensor<Self>,
        w: FloatTensor<Self>,
        b: FloatTensor<Self>,
    ) -> FloatTensor<Self>;
}

#[cfg(feature = "flex")]
mod flex {
    use super::HostLinearRelu;
    use crate::bias::HostBiasRelu as _;
    use crate::matmul::HostMatmul as _;
    use crate::matmul::flex::linear_relu_few_terms;
    use burn::backend::Flex;
    use burn::backend::flex::FlexTensor;

    impl HostLinearRelu for Flex {
        fn host_linear_relu(x: FlexTensor, w: FlexTensor, b: FlexTensor) -> FlexTensor {
            match linear_relu_few_terms(&x, &w, &b) {
                Some(out) => out,
                None => Flex::host_bias_relu(Flex::host_matmul(x, w), b),
            }
        }
    }
}

impl<B, C> HostLinearRelu for Autodiff<B, C>
where
    B: Backend + HostLinearRelu + HostMatmul + HostRelu,
    C: CheckpointStrategy,
{
    fn host_linear_relu(
        x: FloatTensor<Self>,
        w: FloatTensor<Self>,
        b: FloatTensor<Self>,
    ) -> FloatTensor<Self> {
        #[derive(Debug)]
        struct LinearReluBackward;

        impl<B: Backend + HostMatmul + HostRelu> Backward<B, 3> for LinearReluBackward {
            /// `x` (for `w`'s gradient), `w` (for `x`'s), the output and the bias's shape.
            type State = (
                Option<FloatTensor<B>>,
                Option<FloatTensor<B>>,
                FloatTensor<B>,
                Shape,
            );

            fn backward(
                self,
                ops: Ops<Self::State, 3>,
                grads: &mut Gradients,
                _checkpointer: &mut Checkpointer,
            ) {
                let (x, w, out, b_shape) = ops.state;
                // bias_relu's backward, then matmul's, as the separate ops run them.
                let grad = B::host_relu_backward(out, grads.consume::<B>(&ops.node));
                let [x_node, w_node, b_node] = ops.parents;
                if let Some(node) = b_node {
                    grads.register::<B>(node.id, reduce_to::<B>(grad.clone(), &b_shape));
                }
                if let Some(node) = x_node {
                    let w = w.expect("kept for a tracked x");
                    let dx = B::host_matmul(grad.clone(), B::float_transpose(w));
                    grads.register::<B>(node.id, dx);
                }
                if let Some(node) = w_node {
                    let x = x.expect("kept for a tracked w");
                    grads.register::<B>(node.id, B::host_matmul(B::float_transpose(x), grad));
                }
            }
        }

        let (x_tracked, w_tracked) = (x.is_tracked(), w.is_tracked());
        let b_shape = b.shape();
        let nodes = [x.node(), w.node(), b.node()];
        let (x, w, b) = (x.into_primitive(), w.into_primitive(), b.into_primitive());
        match LinearReluBackward
            .prepare::<C>(nodes)
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(prep) => {
                let keep_x = w_tracked.then(|| x.clone());
                let keep_w = x_tracked.then(|| w.clone());
                let out = B::host_linear_relu(x, w, b);
                prep.finish((keep_x, keep_w, out.clone(), b_shape), out)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::host_linear_relu(x, w, b)),
        }
    }
}

/// A hidden layer `relu(x · w + b)` for `x` `[m, k]`, `w` `[k, n]` and the bias row `b`
/// `[1, n]`, differentiable. On flex, when `k` is at most 4 (a first layer on a few
/// observations), one op writes the output in one pass ([`HostLinearRelu`]); otherwise
/// [`bias_relu`](crate::bias_relu) of [`matmul`](crate::matmul). The same values and
/// gradients either way.
pub fn linear_relu(x: Tensor<2>, w: Tensor<2>, b: Tensor<2>) -> Tensor<2> {
    #[cfg(feature = "flex")]
    if x.device().inner() == burn::tensor::Device::flex() && x.dims()[1] <= crate::thin::FEW_TERMS {
        let out = <burn::backend::Dispatch as HostLinearRelu>::host_linear_relu(
            x.into_dispatch(),
            w.into_dispatch(),
            b.into_dispatch(),
        );
        return Tensor::from_dispatch(out);
    }
    crate::bias_relu(crate::matmul(x, w), b)
}

#[cfg(all(test, feature = "flex"))]
mod tests {
    use super::*;
    use burn::tensor::{Device, TensorData};

    fn filled(shape: [usize; 2], seed: u32, device: &Device) -> Tensor<2> {
        let n = shape[0] * shape[1];
        let v: Vec<f32> = (0..n)
            .map(|i| {
                ((i as u32).wrapping_mul(2654435761).wrapping_add(seed) % 1000) as f32 / 500.0 - 1.0
            })
            .collect();
        Tensor::from_data(TensorData::new(v, shape), device)
    }

    fn bits(t: Tensor<2>) -> Vec<u32> {
        let v = t.into_data().try_to_vec::<f32>().unwrap();
        v.iter().map(|x| x.to_bits()).collect()
    }

    /// The layer's output and the gradients of x, w and b (those tracked) under a
    /// weighted sum, fused or as the separate ops.
    fn run(
        fused: bool,
        (m, k, n): (usize, usize, usize),
        track_x: bool,
        transposed_x: bool,
        device: &Device,
    ) -> Vec<Vec<u32>> {
        let x = if transposed_x {
            filled([k, m], 1, device).transpose()
        } else {
            filled([m, k], 1, device)
        };
        let x = if track_x { x.require_grad() } else { x };
        let w = filled([k, n], 2, device).require_grad();
        let b = filled([1, n], 3, device).require_grad();
        let y = if fused {
            linear_relu(x.clone(), w.clone(), b.clone())
        } else {
            crate::bias_relu(crate::matmul(x.clone(), w.clone()), b.clone())
        };
        let c = filled([m, n], 4, device);
        let g = (y.clone() * c).sum().backward();
        let mut out = vec![bits(y.inner())];
        if track_x {
            out.push(bits(x.grad(&g).unwrap()));
        }
        out.push(bits(w.grad(&g).unwrap()));
        out.push(bits(b.grad(&g).unwrap()));
        out
    }

    #[test]
    fn one_pass_layer_gives_the_separate_ops_bits_forward_and_backward() {
        let d = Device::flex().autodiff();
        // Few terms (fused): 1 to 4 inputs, widths with and without a partial block of 64
        // columns; the critic's input is tracked (the actor loss needs its gradient).
        for (m, k, n) in [
            (256, 3, 256),
            (256, 4, 256),
            (7, 1, 70),
            (33, 2, 5),
            (1, 4, 64),
        ] {
            for track_x in [false, true] {
                for transposed_x in [false, true] {
                    let shape = (m, k, n);
                    assert_eq!(
                        run(true, shape, track_x, transposed_x, &d),
                        run(false, shape, track_x, transposed_x, &d),
                        "{shape:?} track_x={track_x} transposed_x={transposed_x}"
                    );
                }
            }
        }
        // More terms take the separate ops.
        assert_eq!(
            run(true, (16, 9, 12), true, false, &d),
            run(false, (16, 9, 12), true, false, &d)
        );
    }

    #[test]
    fn one_pass_layer_keeps_nan_and_clamps_as_relu_does() {
        let d = Device::flex();
        let x = Tensor::<2>::from_data(
            TensorData::new(vec![1.0f32, f32::NAN, -2.0, 0.5], [2, 2]),
            &d,
        );
        let w = Tensor::<2>::from_data(TensorData::new(vec![1.0f32, -1.0, 2.0, 0.0], [2, 2]), &d);
        let b = Tensor::<2>::from_data(TensorData::new(vec![0.5f32, 0.25], [1, 2]), &d);
        let y = linear_relu(x, w, b)
            .into_data()
            .try_to_vec::<f32>()
            .unwrap();
        // Row 0: NaN in, NaN out; row 1: [-2·1 + 0.5·2 + 0.5, -2·-1 + 0 + 0.25] = [-0.5→0, 2.25].
        assert!(y[0].is_nan() && y[1].is_nan());
        assert_eq!(&y[2..], &[0.0, 2.25]);
    }

    #[test]
    fn other_backends_compute_the_same_layer() {
        let (f, n) = (Device::flex(), crate::DeviceSpec::NdArray.device().unwrap());
        let layer = |d: &Device| {
            let y = linear_relu(
                filled([9, 3], 1, d),
                filled([3, 20], 2, d),
                filled([1, 20], 3, d),
            );
            y.into_data().try_to_vec::<f32>().unwrap()
        };
        for (a, b) in layer(&f).iter().zip(layer(&n)) {
            assert!((a - b).abs() <= 1e-6 * (1.0 + b.abs()), "{a} vs {b}");
        }
    }
}
