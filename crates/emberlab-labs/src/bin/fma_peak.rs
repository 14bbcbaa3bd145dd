//! This machine's floating-point peak, measured: every core runs independent chains of
//! fused multiply-adds (f32) with the widest vectors the CPU has, nothing else. The
//! performance figures in `docs/journal/benchmarks-2026-11.md` quote their share of it, since a clock
//! read from `/proc/cpuinfo` in a virtual machine is the nominal one, not the boosted
//! one the cores run at.
//!
//! ```sh
//! cargo run --release -p emberlab-labs --bin fma_peak
//! ```
//!
//! Prints one line per vector width and thread count, e.g.
//! `fma_peak width=512 threads=2 GFLOP/s=230.1`.

use std::time::{Duration, Instant};

/// Independent accumulators per thread: enough to cover an FMA's latency (4–5 cycles)
/// on two FMA units.
const CHAINS: usize = 12;

/// Iterations of all chains per timed block.
const BLOCK: u64 = 1 << 20;

/// How long each configuration runs.
const SECONDS: f64 = 1.0;

fn main() {
    let cores = std::thread::available_parallelism().map_or(1, |n| n.get());
    let widths = widths();
    if widths.is_empty() {
        println!(
            "fma_peak: this CPU has no FMA instructions this example knows (x86-64 FMA3 or AVX-512F)"
        );
        return;
    }
    for &width in &widths {
        for threads in [1, cores] {
            let flops = run(width, threads);
            println!(
                "fma_peak width={width} threads={threads} GFLOP/s={:.1}",
                flops / 1e9
            );
            if cores == 1 {
                break;
            }
        }
    }
}

/// The vector widths (bits) this CPU runs FMAs at.
fn widths() -> Vec<usize> {
    let mut widths = Vec::new();
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            widths.push(512);
        }
        if std::arch::is_x86_feature_detected!("fma") {
            widths.push(256);
        }
    }
    widths
}

/// FLOP/s of `threads` threads each running [`chains`] at `width` bits.
fn run(width: usize, threads: usize) -> f64 {
    let start = Instant::now();
    let handles: Vec<_> = (0..threads)
        .map(|_| {
            std::thread::spawn(move || {
                let mut blocks = 0u64;
                let mut sink = 0.0f32;
                let begun = Instant::now();
                while begun.elapsed() < Duration::from_secs_f64(SECONDS) {
                    sink += chains(width, BLOCK);
                    blocks += 1;
                }
                (blocks, sink)
            })
        })
        .collect();
    let mut blocks = 0u64;
    for handle in handles {
        let (b, sink) = handle.join().expect("an FMA thread");
        // Keeps the chains' results alive (they are finite by construction).
        assert!(sink.is_finite(), "the chains overflowed");
        blocks += b;
    }
    let lanes = (width / 32) as f64;
    let fmas = blocks as f64 * BLOCK as f64 * CHAINS as f64 * lanes;
    2.0 * fmas / start.elapsed().as_secs_f64()
}

/// Runs `iterations` rounds of [`CHAINS`] independent FMAs at `width` bits; returns a
/// value that depends on every result.
fn chains(width: usize, iterations: u64) -> f32 {
    #[cfg(target_arch = "x86_64")]
    {
        // SAFETY: `widths` offered this width only where the CPU has its instructions.
        unsafe {
            if width == 512 {
                return x86::chains_512(iterations);
            }
            return x86::chains_256(iterations);
        }
    }
    #[allow(unreachable_code)]
    {
        let _ = (width, iterations);
        unreachable!("no FMA width is offered on this architecture")
    }
}

#[cfg(target_arch = "x86_64")]
mod x86 {
    use super::CHAINS;
    use std::arch::x86_64::*;

    /// Each chain steps `x ← x·0.999999 + 1e-7`, which stays near 1 (no denormals, no
    /// overflow).
    #[target_feature(enable = "avx512f")]
    pub(super) fn chains_512(iterations: u64) -> f32 {
        let mut acc = [_mm512_set1_ps(1.0); CHAINS];
        let (b, c) = (_mm512_set1_ps(0.999_999), _mm512_set1_ps(1e-7));
        for _ in 0..iterations {
            for x in &mut acc {
                *x = _mm512_fmadd_ps(*x, b, c);
            }
        }
        let sum = acc
            .iter()
            .fold(_mm512_setzero_ps(), |s, &x| _mm512_add_ps(s, x));
        _mm512_reduce_add_ps(sum)
    }

    /// [`chains_512`] with 256-bit vectors.
    #[target_feature(enable = "avx2,fma")]
    pub(super) fn chains_256(iterations: u64) -> f32 {
        let mut acc = [_mm256_set1_ps(1.0); CHAINS];
        let (b, c) = (_mm256_set1_ps(0.999_999), _mm256_set1_ps(1e-7));
        for _ in 0..iterations {
            for x in &mut acc {
                *x = _mm256_fmadd_ps(*x, b, c);
            }
        }
        let sum = acc
            .iter()
            .fold(_mm256_setzero_ps(), |s, &x| _mm256_add_ps(s, x));
        let mut lanes = [0.0f32; 8];
        // SAFETY: `lanes` holds 8 floats.
        unsafe { _mm256_storeu_ps(lanes.as_mut_ptr(), sum) };
        lanes.iter().sum()
    }
}
