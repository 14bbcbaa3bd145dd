//! The rate of flex's GEMM on the products a SAC update makes (`[256, 256] · [256, 256]` by
//! default), with hot operands: the forward layout and the two transposed layouts of the
//! backward pass (`lhsᵀ · grad` for weights, `grad · rhsᵀ` for inputs), on one thread and
//! on two threads at once (each its own products, as the two halves of a parallel update
//! run). Against `train_speed --gemm-stats` (the rate of the same products inside a
//! training run) it says whether a run's products are slowed by the run or by the cores.
//! (Shapes with a thin side, `K` ≤ 4 or `N` ≤ 8, go to Ember's thin kernels, not the library.)
//!
//! ```sh
//! cargo run --release -p emberlab-labs --bin gemm_rate            # 256 × 256 × 256
//! cargo run --release -p emberlab-labs --bin gemm_rate -- 128 256 256
//! ```
//!
//! Prints one line per layout and thread count, e.g.
//! `gemm_rate 256x256x256 layout=lhs_t threads=2 GFLOP/s per thread=71.4 69.0`.

use burn::tensor::{Device, Distribution, Tensor};
use std::sync::Barrier;
use std::time::{Duration, Instant};

/// How long each thread multiplies per configuration.
const SECONDS: f64 = 1.0;

fn main() -> Result<(), String> {
    let dims: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().map_err(|_| format!("not a size: {a:?}")))
        .collect::<Result<_, _>>()?;
    let (m, n, k) = match dims.as_slice() {
        [] => (256, 256, 256),
        [m, n, k] if *m > 0 && *n > 0 && *k > 0 => (*m, *n, *k),
        _ => return Err("usage: gemm_rate [M N K] (all > 0)".into()),
    };
    println!("gemm_rate kernels={}", emberlab::backend::gemm_kernels());
    for layout in ["plain", "lhs_t", "rhs_t"] {
        for threads in [1, 2] {
            let rates = run(layout, (m, n, k), threads);
            let rates: Vec<String> = rates.iter().map(|r| format!("{:.1}", r / 1e9)).collect();
            println!(
                "gemm_rate {m}x{n}x{k} layout={layout} threads={threads} GFLOP/s per thread={}",
                rates.join(" ")
            );
        }
    }
    Ok(())
}

/// Each of `threads` threads multiplies its own operands in `layout` for [`SECONDS`], all
/// starting together; their rates in FLOP/s.
fn run(layout: &str, (m, n, k): (usize, usize, usize), threads: usize) -> Vec<f64> {
    let start = Barrier::new(threads);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|_| s.spawn(|| one_thread(layout, (m, n, k), &start)))
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("a multiplying thread panicked"))
            .collect()
    })
}

/// One thread's rate: products of `layout`'s operands until [`SECONDS`] have passed.
fn one_thread(layout: &str, (m, n, k): (usize, usize, usize), start: &Barrier) -> f64 {
    let _flush = emberlab::backend::denormals::flush_denormals_here();
    let device = Device::flex();
    let random = |shape: [usize; 2]| Tensor::<2>::random(shape, Distribution::Default, &device);
    // Stored as a training step stores them: transposed operands are views of the
    // row-major tensors of the forward pass.
    let (lhs, rhs) = match layout {
        "lhs_t" => (random([k, m]).transpose(), random([k, n])),
        "rhs_t" => (random([m, k]), random([n, k]).transpose()),
        _ => (random([m, k]), random([k, n])),
    };
    let product = || emberlab::kernels::matmul(lhs.clone(), rhs.clone());
    for _ in 0..3 {
        drop(product());
    }
    start.wait();
    let (began, mut products) = (Instant::now(), 0u64);
    while began.elapsed() < Duration::from_secs_f64(SECONDS) {
        drop(std::hint::black_box(product()));
        products += 1;
    }
    2.0 * (m * n * k) as f64 * products as f64 / began.elapsed().as_secs_f64()
}
