//! # emberlab-kernels
//!
//! Ember's performance code, in one place: what makes an update fast on a CPU, used by
//! `emberlab-nn`'s modules and `emberlab-algo`'s learners so that every algorithm built on them
//! gets it.
//!
//! - Kernels: [`kernels`] (element-wise host kernels compiled for AVX-512, AVX2 and the
//!   baseline and picked at run time, [`multiversion!`]), the thin matrix products of a
//!   network's first and last layers, [`matmul`] (burn's product without flex's zeroing and
//!   copying of the output) and [`host_product`] (the same on host slices), with
//!   [`gemm_stats`] counting the GEMM library's share of a run.
//! - Fused differentiable operations: [`relu`] (in place on flex), [`bias_relu`] (a hidden
//!   layer's bias and ReLU in one pass), [`tanh`] (the vectorised kernel, with its own
//!   backward pass), [`tanh_gaussian`] (a policy's reparameterised tanh-Gaussian sample and
//!   its log-probability as one op), [`ensemble_min`] (clipped double-Q's minimum over an
//!   ensemble's last layers, its backward pass only through each row's smallest member),
//!   [`conv2d`] (straight from the input on AVX-512 where the shape allows, else im2col
//!   and the GEMM, with its own backward pass).
//! - [`host_math`]: `ln`, `sin`/`cos`, `exp` and `tanh` as straight-line code that
//!   vectorises, for sampling on the host.
//! - Host buffers: [`unshared`], [`lerp`], [`remap`], [`with_host_values`]: optimizer steps and
//!   Polyak targets in one pass.
//! - The hand-off runtime: [`parts`] (an update's independent parts on separate cores, all
//!   or nothing, the same bits as sequential), [`worker`] (long-lived helper threads with
//!   spinning hand-offs whose spin budget adapts to shared cores), [`helping`] (a thread
//!   waiting at a gate takes blocks of another thread's large products).
//!
//! Only this crate and `emberlab-backend` name burn backends.
//!
//! ```
//! use burn::tensor::{Device, Tensor};
//!
//! let device = Device::flex();
//! let x = Tensor::<2>::from_floats([[-1.0, 0.5], [2.0, -3.0]], &device);
//! let y = emberlab_kernels::relu(x);
//! assert_eq!(y.into_data().to_vec::<f32>().unwrap(), vec![0.0, 0.5, 2.0, 0.0]);
//! ```

#![warn(missing_docs)]

mod activation;
mod bias;
mod conv;
#[cfg(feature = "flex")]
mod conv_direct;
mod conv_shape;
mod ensemble_min;
pub mod gemm_stats;
pub mod helping;
mod host;
pub mod host_math;
pub mod kernels;
mod matmul;
pub mod parts;
mod product;
#[cfg(feature = "flex")]
mod scratch;
mod tanh_gaussian;
#[cfg(feature = "flex")]
mod thin;
#[cfg(feature = "flex")]
mod transpose;
pub mod worker;

pub use activation::{HostRelu, HostTanh, relu, tanh};
pub use bias::{HostBiasRelu, bias_relu};
pub use conv::{ConvShape, HostConv, HostConvSteps, conv2d};
pub use emberlab_core::denormals;
use emberlab_core::{Error, Result};
pub use ensemble_min::{
    EnsembleMinGrad, HostEnsembleMin, ensemble_min, ensemble_min_hidden_grad, ensemble_min_rows,
};
pub use host::{
    Fill, HostBuffers, Read, add, lerp, read_values, remap, unshared, with_host_values,
};
pub use matmul::{HostMatmul, matmul};
pub use product::{HostMatrix, host_product};
pub use tanh_gaussian::{
    HALF_LOG_2PI, HostTanhGaussian, TanhGaussian, tanh_gaussian, tanh_gaussian_backward_rows,
    tanh_gaussian_rows,
};
