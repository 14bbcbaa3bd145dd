//! # emberlab-labs
//!
//! Performance labs, each a program of its own (`cargo run --release -p emberlab-labs --bin
//! NAME`), that the benchmarks compare Ember against: not part of the library, not
//! published.
//!
//! | program | measures |
//! |---|---|
//! | `gemm_rate` | the GEMM library's rate on hot operands, one and two threads |
//! | `fma_peak` | the CPU's fused multiply-add peak per core |
//! | `sac_update_floor` | a SAC update hand-fused on host buffers: the floor for the library's |
//! | `frozen_speed` | frozen (host, no-autodiff) inference of a policy against burn's |
//! | `acting_speed` | `Agent::act` on one observation for SAC, TD3 and DQN |
//! | `gemm_libraries` | flex's GEMM against MKL and OpenBLAS (PyPI wheels) at the updates' shapes |
//! | `packed_rate` | the library's layer product against an AVX-512 driver over weights packed once |
//!
//! The criterion bench `gemm_paths` (`cargo bench -p emberlab-labs --bench gemm_paths`)
//! times the same GEMM paths at the same shapes, its group named by the CPU.
//!
//! Shared by the programs: [`host_gemm`], [`values`], [`blas`].

pub mod blas;

/// `dst = a · b` by flex's GEMM library (the `gemm` crate) on one thread, on host buffers:
/// `a` is `m × k` and `b` is `k × n`, each given as `(values, row stride, column stride)`
/// (a transposed operand is its stored matrix with the strides swapped), `dst` row-major
/// `m × n` (overwritten).
///
/// # Panics
/// If `dst` or an operand is too short for its shape and strides.
pub fn host_gemm(
    (m, n, k): (usize, usize, usize),
    dst: &mut [f32],
    (a, a_rs, a_cs): (&[f32], usize, usize),
    (b, b_rs, b_cs): (&[f32], usize, usize),
) {
    assert!(dst.len() >= m * n, "host_gemm: output too short");
    assert!(m == 0 || k == 0 || a.len() > (m - 1) * a_rs + (k - 1) * a_cs);
    assert!(n == 0 || k == 0 || b.len() > (k - 1) * b_rs + (n - 1) * b_cs);
    // SAFETY: the asserts keep every element of both operands and of `dst` in bounds;
    // alpha 0 without reading `dst` overwrites it.
    unsafe {
        gemm::gemm(
            m,
            n,
            k,
            dst.as_mut_ptr(),
            1,
            n as isize,
            false,
            a.as_ptr(),
            a_cs as isize,
            a_rs as isize,
            b.as_ptr(),
            b_cs as isize,
            b_rs as isize,
            0.0,
            1.0,
            false,
            false,
            false,
            gemm::Parallelism::None,
        );
    }
}

/// `n` small deterministic values in `[-0.05, 0.05)` from a linear congruential
/// generator whose state is `seed` (advanced): operands for the programs' products.
pub fn values(n: usize, seed: &mut u64) -> Vec<f32> {
    (0..n)
        .map(|_| {
            *seed = seed
                .wrapping_mul(6_364_136_223_846_793_005)
                .wrapping_add(1_442_695_040_888_963_407);
            ((*seed >> 40) as f32 / (1u64 << 24) as f32 - 0.5) * 0.1
        })
        .collect()
}
