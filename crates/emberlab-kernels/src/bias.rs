//! [`bias_relu`]: a hidden layer's `relu(x·W + b)` after the product, in one pass over the
//! product's fresh buffer, differentiable.
//!
//! As separate ops, `+ b` and `relu` each make a pass over the layer's output (the add into
//! a new buffer) and each record an autodiff node; `perf` of a SAC run put the bias adds
//! alone at 3.4% of the CPU. [`HostBiasRelu`] adds and clamps in place, and its backward
//! pass masks the incoming gradient in place and sums it over the rows for the bias, with
//! the same ops (so the same bits) as the separate ops' backward passes.

// Without flex, `backend_extension` generates a dispatch with no backend to pass `t` to.
#![cfg_attr(not(feature = "flex"), allow(unused_variables))]

use crate::activation::HostRelu;
use burn::backend::TensorMetadata as _;
use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::{Autodiff, Backend, backend_extension, tensor::FloatTensor};
use burn::tensor::{Shape, Tensor};

/// `relu(y + b)` with the bias broadcast over the rows; implemented for flex and autodiff
/// over it.
#[backend_extension(Flex: cfg(feature = "flex"), Autodiff)]
pub trait HostBiasRelu: Backend {
    /// `relu(y + b)` for `y` `[.., rows, n]` and `b` `[.., 1, n]` (the same leading
    /// dimensions): the bias row added to every row of `y`, then `max(·, 0)` (NaN kept).
    fn host_bias_relu(y: FloatTensor<Self>, b: FloatTensor<Self>) -> FloatTensor<Self>;
}

#[cfg(feature = "flex")]
mod flex {
    use super::HostBiasRelu;
    use crate::host::{map_in_place, with_values};
    use crate::kernels::bias_relu_rows;
    use burn::backend::Flex;
    use burn::backend::flex::FlexTensor;
    use burn::backend::ops::{ActivationOps as _, FloatTensorOps as _};
    use burn::tensor::DType;

    /// Whether `b` is one bias row per leading index of `y`: `[.., 1, n]` for `[.., rows, n]`.
    fn one_row_each(y: &FlexTensor, b: &FlexTensor) -> bool {
        let (ys, bs) = (y.layout().shape(), b.layout().shape());
        let r = ys.num_dims();
        let f32s = y.dtype() == DType::F32 && b.dtype() == DType::F32;
        f32s && r >= 2
            && bs.num_dims() == r
            && bs[r - 2] == 1
            && bs[r - 1] == ys[r - 1]
            && (0..r - 2).all(|i| bs[i] == ys[i])
    }

    impl HostBiasRelu for Flex {
        fn host_bias_relu(y: FlexTensor, b: FlexTensor) -> FlexTensor {
            if !one_row_each(&y, &b) || y.layout().num_elements() == 0 {
                return Flex::relu(Flex::float_add(y, b));
            }
            let r = y.layout().shape().num_dims();
            let (rows, n) = (y.layout().shape()[r - 2], y.layout().shape()[r - 1]);
            with_values(&b, |bias| {
                map_in_place(y, |v| {
                    for (block, bias) in v.chunks_exact_mut(rows * n).zip(bias.chunks_exact(n)) {
                        bias_relu_rows(block, bias);
                    }
                })
            })
        }
    }
}

impl<B: Backend + HostBiasRelu + HostRelu, C: CheckpointStrategy> HostBiasRelu for Autodiff<B, C> {
    fn host_bias_relu(y: FloatTensor<Self>, b: FloatTensor<Self>) -> FloatTensor<Self> {
        #[derive(Debug)]
        struct BiasReluBackward;

        impl<B: Backend + HostRelu> Backward<B, 2> for BiasReluBackward {
            /// The output, and the shapes of the product and of the bias.
            type State = (FloatTensor<B>, Shape, Shape);

            fn backward(
                self,
                ops: Ops<Self::State, 2>,
                grads: &mut Gradients,
                _checkpointer: &mut Checkpointer,
            ) {
                let (out, y_shape, b_shape) = ops.state;
                // relu's backward, then add's: each operand gets the masked gradient summed
                // over the dimensions it was broadcast along (the bias: the rows).
                let grad = B::host_relu_backward(out, grads.consume::<B>(&ops.node));
                let [product, bias] = ops.parents;
                if let Some(node) = bias {
                    grads.register::<B>(node.id, reduce_to::<B>(grad.clone(), &b_shape));
                }
                if let Some(node) = product {
                    grads.register::<B>(node.id, reduce_to::<B>(grad, &y_shape));
                }
            }
        }

        let shapes = (y.shape(), b.shape());
        let nodes = [y.node(), b.node()];
        let (y, b) = (y.into_primitive(), b.into_primitive());
        match BiasReluBackward
            .prepare::<C>(nodes)
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(prep) => {
                let out = B::host_bias_relu(y, b);
                prep.finish((out.clone(), shapes.0, shapes.1), out)
            }
            OpsKind::UnTracked(prep) => prep.finish(B::host_bias_relu(y, b)),
        }
    }
}

/// `grad` summed over the dimensions where `shape` is 1 and `grad` is not (those an operand
/// of shape `shape` was broadcast along), as burn's autodiff reduces a broadcast operand's
/// gradient: one `sum_dim`, or one `sum_dims` for several.
fn reduce_to<B: Backend>(grad: FloatTensor<B>, shape: &Shape) -> FloatTensor<B> {
    let grad_shape = grad.shape();
    let dims: Vec<usize> = (0..grad_shape.num_dims())
        .filter(|&i| grad_shape[i] != shape[i])
        .collect();
    match dims.as_slice() {
        [] => grad,
        [dim] => B::float_sum_dim(grad, *dim),
        dims => B::float_sum_dims(grad, dims),
    }
}

/// `relu(y + b)` for a layer's product `y` `[.., rows, n]` and its bias `b` `[.., 1, n]`,
/// differentiable: in one pass over `y`'s buffer on flex ([`HostBiasRelu`]; the same bits
/// forward and backward as `relu(y + b)`), burn's ops elsewhere.
pub fn bias_relu<const D: usize>(y: Tensor<D>, b: Tensor<D>) -> Tensor<D> {
    #[cfg(feature = "flex")]
    if y.device().inner() == burn::tensor::Device::flex() {
        let out = <burn::backend::Dispatch as HostBiasRelu>::host_bias_relu(
            y.into_dispatch(),
            b.into_dispatch(),
        );
        return Tensor::from_dispatch(out);
    }
    crate::relu(y + b)
}
