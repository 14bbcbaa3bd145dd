//! # emberlab-backend
//!
//! The only crate of Ember that names burn backends. Everything else takes a
//! `burn::tensor::Device`; this crate turns a user's string into one and checks that the
//! build and the machine can provide it.
//!
//! - [`DeviceSpec`]: `flex`, `ndarray`, `tch:cpu`, `tch:cuda:N`, `cuda:N`, with errors that
//!   name the cargo feature to enable.
//! - [`set_intra_op_threads`]: libtorch's intra-op pool (set 1 when two networks train on
//!   two threads).
//! - [`denormals`] (re-exported from `emberlab-core`): the flush-to-zero mode Ember sets on the
//!   threads that run network math, and the switch that keeps IEEE behaviour.
//! - [`DeviceChecked`]: a module wrapper that rejects inputs, outputs and parameters on the
//!   wrong device.
//! - [`inference_copy`] / [`move_to`]: modules between devices and backends.
//! - [`is_host_cpu`]: whether a device's tensors live in host memory (flex, ndarray).
//! - [`gemm_kernels`]: which GEMM kernels flex runs on this CPU with this build.
//!
//! The kernels, fused operations and the hand-off runtime live in `emberlab-kernels`.
//!
//! Features: `flex` and `ndarray` (default), `tch` (libtorch: run
//! `scripts/setup-libtorch.sh` first), `cuda` (CubeCL).
//!
//! ```
//! use burn::tensor::Tensor;
//! use emberlab_backend::DeviceSpec;
//!
//! let spec: DeviceSpec = "flex".parse()?;
//! let device = spec.device()?;
//! let x = Tensor::<2>::ones([2, 3], &device);
//! assert_eq!(x.sum().into_scalar::<f32>(), 6.0);
//! assert!("gpu".parse::<DeviceSpec>().is_err());
//! # Ok::<(), emberlab_core::Error>(())
//! ```

#![warn(missing_docs)]

mod checked;
mod spec;
mod threads;
mod transfer;

pub use checked::DeviceChecked;
pub use emberlab_core::denormals;
pub use spec::{Backend, DeviceSpec, is_host_cpu};
pub use threads::{intra_op_threads, set_intra_op_threads};

/// The GEMM kernels flex runs on this CPU with this build: `"avx512"` (feature `avx512` and
/// a CPU with AVX-512F), `"avx2+fma"`, or `"baseline"` (the `gemm` crate picks among them at
/// run time; results differ in the last bits between them, see docs/journal/benchmarks-2026-11.md).
pub fn gemm_kernels() -> &'static str {
    #[cfg(target_arch = "x86_64")]
    {
        if cfg!(feature = "avx512") && std::arch::is_x86_feature_detected!("avx512f") {
            return "avx512";
        }
        if std::arch::is_x86_feature_detected!("avx2") && std::arch::is_x86_feature_detected!("fma")
        {
            return "avx2+fma";
        }
    }
    "baseline"
}
pub use transfer::{inference_copy, move_to};
