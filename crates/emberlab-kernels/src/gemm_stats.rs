//! How much of a run the GEMM library takes: products, multiply-adds and seconds spent in
//! it by every thread of the process, counted only after [`enable`] (a relaxed atomic load
//! per product otherwise). For profiling whole runs (`train_speed --gemm-stats`): the share
//! of the CPU time in large products, and their rate against the library's rate on hot
//! operands (`cargo run --release -p emberlab-labs --bin gemm_rate`), says how much a
//! run can gain from faster products and how much from the work between them.
//!
//! Counted: every call of the GEMM library by [`matmul`](crate::matmul) on flex (column
//! blocks of a product shared with a waiting thread count as products of their own).
//! Not counted: the thin products computed by Ember's own kernels, burn's `matmul`.
//!
//! ```
//! use emberlab_kernels::gemm_stats;
//!
//! gemm_stats::enable();
//! let before = gemm_stats::snapshot();
//! // ... a training run ...
//! let run = gemm_stats::snapshot().since(&before);
//! assert!(run.seconds >= 0.0);
//! ```

use std::sync::atomic::{AtomicBool, AtomicU64, Ordering};
use std::time::Instant;

static ENABLED: AtomicBool = AtomicBool::new(false);
static PRODUCTS: AtomicU64 = AtomicU64::new(0);
static MULTIPLY_ADDS: AtomicU64 = AtomicU64::new(0);
static NANOS: AtomicU64 = AtomicU64::new(0);

/// Counts from now on (process-wide, every thread).
pub fn enable() {
    ENABLED.store(true, Ordering::Relaxed);
}

/// Whether products are counted.
pub fn enabled() -> bool {
    ENABLED.load(Ordering::Relaxed)
}

/// Totals counted since [`enable`], over all threads.
#[derive(Clone, Copy, Debug, Default, PartialEq)]
pub struct GemmStats {
    /// Calls of the GEMM library.
    pub products: u64,
    /// `m·n·k` summed over them.
    pub multiply_adds: u64,
    /// Seconds spent in them, summed over threads (wall time of each call).
    pub seconds: f64,
}

impl GemmStats {
    /// The counts between `earlier` and `self` (0 where `earlier` counted more).
    pub fn since(&self, earlier: &GemmStats) -> GemmStats {
        GemmStats {
            products: self.products.saturating_sub(earlier.products),
            multiply_adds: self.multiply_adds.saturating_sub(earlier.multiply_adds),
            seconds: (self.seconds - earlier.seconds).max(0.0),
        }
    }

    /// Floating-point operations per second while in the library (two per multiply-add);
    /// 0 when no time was counted.
    pub fn flops(&self) -> f64 {
        if self.seconds > 0.0 {
            2.0 * self.multiply_adds as f64 / self.seconds
        } else {
            0.0
        }
    }
}

/// The totals so far.
pub fn snapshot() -> GemmStats {
    GemmStats {
        products: PRODUCTS.load(Ordering::Relaxed),
        multiply_adds: MULTIPLY_ADDS.load(Ordering::Relaxed),
        seconds: NANOS.load(Ordering::Relaxed) as f64 * 1e-9,
    }
}

/// Runs `product` (an `m × n × k` call of the GEMM library), counting it when enabled.
#[cfg_attr(not(feature = "flex"), allow(dead_code))]
pub(crate) fn counted(m: usize, n: usize, k: usize, product: impl FnOnce()) {
    if !enabled() {
        product();
        return;
    }
    let start = Instant::now();
    product();
    let nanos = start.elapsed().as_nanos() as u64;
    PRODUCTS.fetch_add(1, Ordering::Relaxed);
    MULTIPLY_ADDS.fetch_add((m * n * k) as u64, Ordering::Relaxed);
    NANOS.fetch_add(nanos, Ordering::Relaxed);
}

#[cfg(all(test, feature = "flex"))]
mod tests {
    use super::*;
    use burn::tensor::{Device, Tensor};

    #[test]
    fn products_of_the_library_are_counted_with_their_size() {
        enable();
        let device = Device::flex();
        let a = Tensor::<2>::ones([64, 48], &device);
        let b = Tensor::<2>::ones([48, 80], &device);
        let before = snapshot();
        let c = crate::matmul(a, b);
        assert_eq!(c.into_data().try_to_vec::<f32>().unwrap()[0], 48.0);
        let d = snapshot().since(&before);
        // Other tests may multiply meanwhile: at least this product.
        assert!(d.products >= 1, "{d:?}");
        assert!(d.multiply_adds >= 64 * 48 * 80, "{d:?}");
        assert!(d.seconds > 0.0 && d.flops() > 0.0, "{d:?}");
        assert_eq!(GemmStats::default().flops(), 0.0);
        assert_eq!(before.since(&snapshot()).products, 0, "earlier minus later");
    }
}
