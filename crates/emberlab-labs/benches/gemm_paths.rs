//! The GEMM paths at the products of SAC's and TD3's updates (`emberlab_labs::blas`'s
//! shapes), one thread per product: flex's GEMM library, and each BLAS library of
//! `EMBER_BLAS` (MKL and OpenBLAS from PyPI's wheels). The group is named by the CPU, so
//! figures from two machines sit apart: `gemm_paths/<cpu>/<m>x<n>x<k>_<layout>/<library>`,
//! with the throughput in FLOP/s (criterion's "elem/s").
//!
//! ```sh
//! benches/reference/setup-blas.sh > /tmp/blas.env && . /tmp/blas.env
//! cargo bench -p emberlab-labs --bench gemm_paths
//! ```
//!
//! Without `EMBER_BLAS` it measures flex alone and says so on its first line; with a
//! malformed one, or a library whose product differs from flex's, it stops with the reason.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use emberlab_labs::blas::{Libraries, Operands, UPDATE_SHAPES};
use std::time::Duration;

fn gemm_paths(c: &mut Criterion) {
    let libraries = if std::env::var_os("EMBER_BLAS").is_some() {
        Libraries::from_env().unwrap_or_else(|e| panic!("gemm_paths: {e}"))
    } else {
        eprintln!(
            "gemm_paths: EMBER_BLAS is not set, so flex alone (benches/reference/setup-blas.sh \
             loads MKL and OpenBLAS)"
        );
        Libraries::flex()
    };
    // `AMD EPYC (family 25, model 17)` → `AMD_EPYC_family_25_model_17`.
    let cpu = emberlab_core::machine::cpu_model()
        .split(|ch: char| !ch.is_ascii_alphanumeric())
        .filter(|w| !w.is_empty())
        .collect::<Vec<_>>()
        .join("_");
    let mut g = c.benchmark_group(format!("gemm_paths/{cpu}"));
    g.warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2))
        .sample_size(20);
    let _flush = emberlab::backend::denormals::flush_denormals_here();
    for (dims, layout) in UPDATE_SHAPES {
        libraries
            .check(dims, layout)
            .unwrap_or_else(|e| panic!("gemm_paths: {e}"));
        let x = Operands::new(dims, layout, 1);
        g.throughput(Throughput::Elements(x.flops() as u64));
        let (m, n, k) = dims;
        for (name, library) in libraries.iter() {
            let mut dst = vec![0.0; x.out_len()];
            g.bench_function(format!("{m}x{n}x{k}_{layout:?}/{name}"), |b| {
                b.iter(|| x.product(library, std::hint::black_box(&mut dst)))
            });
        }
    }
    g.finish();
}

criterion_group!(benches, gemm_paths);
criterion_main!(benches);
