//! [`host_step`]: the part of a step on the host that every host optimizer
//! ([`crate::HostAdam`], [`crate::RmsPropTfLike`]) shares.

use crate::tensors::f32_data;
use burn::tensor::{DType, Tensor};
use std::mem::MaybeUninit;

/// One step of a parameter on the host, the part every host optimizer shares: `grad` is read
/// as `f32`; an `f32` parameter is read once and written once, by `into(old, grad, new)`
/// through [`emberlab_kernels::remap`], so other handles (the learner's module, kept until
/// the update commits) keep the old values; a parameter of another dtype is converted,
/// stepped in place by `in_place(values, grad, state)` and converted back. Both update the
/// optimizer's `state` of the parameter.
///
/// # Panics
/// If the gradient's length is not the parameter's.
///
/// # Safety
/// `into` must write every element of `new` (which has the parameter's length, as `old` and
/// `grad` have).
pub(crate) unsafe fn host_step<const D: usize, S>(
    tensor: Tensor<D>,
    grad: Tensor<D>,
    state: &mut S,
    mut into: impl FnMut(&[f32], &[f32], &mut S, &mut [MaybeUninit<f32>]),
    in_place: impl FnOnce(&mut [f32], &[f32], &mut S),
) -> Tensor<D> {
    let (device, dtype) = (tensor.device(), tensor.dtype());
    let n = tensor.shape().num_elements();
    let grad = f32_data(grad);
    let grad = grad.as_slice::<f32>().expect("f32 gradient");
    assert_eq!(grad.len(), n, "gradient of another parameter shape");
    if dtype == DType::F32 {
        // SAFETY: the caller's `into` writes every element of `new`.
        return unsafe { emberlab_kernels::remap(&tensor, |old, new| into(old, grad, state, new)) };
    }
    let mut param = f32_data(tensor);
    in_place(
        param.as_mut_slice::<f32>().expect("f32 parameter"),
        grad,
        state,
    );
    Tensor::from_data(param.convert_dtype(dtype), &device)
}
