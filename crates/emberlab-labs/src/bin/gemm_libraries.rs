//! flex's GEMM (the `gemm` crate, called on host buffers by [`emberlab_labs::host_gemm`]
//! as `emberlab_kernels::matmul` calls it) against the BLAS libraries of PyPI's wheels
//! (`cblas_sgemm` of `mkl` and `scipy-openblas32`, loaded at run time) at the products of
//! SAC's and TD3's updates: batch 256 through 256-wide layers (HalfCheetah's 23 inputs on
//! the first), TD3's zoo 400 × 300, each in the forward layout and the two transposed
//! layouts of the backward pass (`lhsᵀ · grad` for weights, `grad · rhsᵀ` for inputs). One
//! thread per library call (`MKL_NUM_THREADS=1`, `OPENBLAS_NUM_THREADS=1`, checked), on one
//! thread and on two threads at once (each its own products, as an update's two parts
//! run). Every library's product is checked against flex's before it is timed.
//!
//! ```sh
//! benches/reference/setup-blas.sh > blas.env && . ./blas.env
//! cargo run --release -p emberlab-labs --bin gemm_libraries
//! ```
//!
//! `EMBER_BLAS` names the libraries: `name=path:symbol` entries separated by `;` (the symbol
//! has cblas_sgemm's signature). Prints one line per shape, layout, thread count and library,
//! the median rate per thread of 7 rounds and their range:
//! `gemm_libraries 256x256x256 layout=LhsT threads=1 library=mkl GFLOP/s per thread: median …`.

use emberlab_labs::blas::{Layout, Libraries, Library, Operands, UPDATE_SHAPES};
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// How long each thread multiplies per measurement.
const SECONDS: f64 = 0.25;

/// Measurements per configuration, the libraries alternated within each round (a shared
/// VM's speed drifts by tens of percent over seconds): the median and the range are printed.
const ROUNDS: usize = 7;

fn main() -> Result<(), String> {
    let libraries = Libraries::from_env()?;
    println!(
        "gemm_libraries cpu={:?} flex_kernels={}",
        emberlab_core::machine::cpu_model(),
        emberlab::backend::gemm_kernels()
    );
    for (dims, layout) in UPDATE_SHAPES {
        libraries.check(dims, layout)?;
        for threads in [1, 2] {
            // Per library, the mean rate per thread of each round.
            let mut measured = vec![Vec::new(); libraries.len()];
            for _ in 0..ROUNDS {
                for ((_, library), rounds) in libraries.iter().zip(&mut measured) {
                    let rates = rates(dims, layout, library, threads);
                    rounds.push(rates.iter().sum::<f64>() / rates.len() as f64 / 1e9);
                }
            }
            let (m, n, k) = dims;
            for ((name, _), mut rounds) in libraries.iter().zip(measured) {
                rounds.sort_by(f64::total_cmp);
                println!(
                    "gemm_libraries {m}x{n}x{k} layout={layout:?} threads={threads} library={name} GFLOP/s per thread: median {:.1} ({:.1}-{:.1})",
                    rounds[ROUNDS / 2],
                    rounds[0],
                    rounds[ROUNDS - 1]
                );
            }
        }
    }
    Ok(())
}

/// Each of `threads` threads multiplies its own operands for [`SECONDS`], all starting
/// together; their rates in FLOP/s.
fn rates(
    dims: (usize, usize, usize),
    layout: Layout,
    library: Library<'_>,
    threads: usize,
) -> Vec<f64> {
    let start = Barrier::new(threads);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let start = &start;
                s.spawn(move || one_thread(dims, layout, library, t as u64, start))
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("a multiplying thread panicked"))
            .collect()
    })
}

/// One thread's rate: products until [`SECONDS`] have passed.
fn one_thread(
    dims: (usize, usize, usize),
    layout: Layout,
    library: Library<'_>,
    seed: u64,
    start: &Barrier,
) -> f64 {
    let _flush = emberlab::backend::denormals::flush_denormals_here();
    let x = Operands::new(dims, layout, seed + 1);
    let mut dst = vec![0.0; x.out_len()];
    for _ in 0..3 {
        x.product(library, &mut dst);
    }
    start.wait();
    let (began, mut products) = (Instant::now(), 0u64);
    while began.elapsed() < Duration::from_secs_f64(SECONDS) {
        x.product(library, std::hint::black_box(&mut dst));
        products += 1;
    }
    x.flops() * products as f64 / began.elapsed().as_secs_f64()
}
