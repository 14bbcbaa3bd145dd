//! Noise drawn on the host from an [`EmberRng`], so that the same seed gives the same
//! actions on every backend (device generators differ between backends).

use burn::tensor::{Device, Tensor, TensorData};
use emberlab_core::EmberRng;

use emberlab_kernels::host_math;

/// Pairs of uniforms turned into normals per block (on the stack).
const PAIRS: usize = 32;

/// Appends `n` standard normal values to `out` (Box–Muller, pairs from two uniforms
/// `u1 = 1 − U` in `(0, 1]` and `u2 = U'`: `√(−2 ln u1) · (cos 2πu2, sin 2πu2)`; an odd
/// `n` drops the last pair's sine). Blocks of pairs run through vectorised
/// double-precision `ln`, `sin` and `cos` (the module `host_math`), which round to the
/// same `f32`s as the C library's in all but a vanishing fraction of draws.
pub fn fill_standard_normal(n: usize, rng: &mut EmberRng, out: &mut Vec<f32>) {
    let (mut u1, mut u2) = ([1.0f64; PAIRS], [0.0f64; PAIRS]);
    let mut z = [0.0f32; 2 * PAIRS];
    let mut left = n;
    while left > 0 {
        let pairs = left.div_ceil(2).min(PAIRS);
        for (a, b) in u1[..pairs].iter_mut().zip(&mut u2[..pairs]) {
            *a = 1.0 - rng.next_f64(); // (0, 1]
            *b = rng.next_f64();
        }
        // Whole vectors of four pairs (the padding lanes hold last block's or the first
        // uniforms and are dropped): a short tail would run scalar, latency-bound.
        let lanes = pairs.next_multiple_of(4);
        box_muller(&u1[..lanes], &u2[..lanes], &mut z[..2 * lanes]);
        let take = left.min(2 * pairs);
        out.extend_from_slice(&z[..take]);
        left -= take;
    }
}

emberlab_kernels::multiversion! {
    /// `z[2i], z[2i + 1] ← √(−2 ln u1[i]) · (cos 2πu2[i], sin 2πu2[i])`.
    fn box_muller(u1: &[f64], u2: &[f64], z: &mut [f32]) {
        for ((a, b), pair) in u1.iter().zip(u2).zip(z.chunks_exact_mut(2)) {
            let r = (-2.0 * host_math::ln_positive(*a)).sqrt();
            let (s, c) = host_math::sin_cos_turn(*b);
            pair[0] = (r * c) as f32;
            pair[1] = (r * s) as f32;
        }
    }
}

/// `[rows, cols]` standard normal values (the same stream as [`fill_standard_normal`]).
pub fn standard_normal(rows: usize, cols: usize, rng: &mut EmberRng, device: &Device) -> Tensor<2> {
    let mut v = Vec::with_capacity(rows * cols);
    fill_standard_normal(rows * cols, rng, &mut v);
    Tensor::from_data(TensorData::new(v, [rows, cols]), device)
}

/// `[rows, cols]` uniform values in the open interval `(0, 1)`.
pub fn uniform_open(rows: usize, cols: usize, rng: &mut EmberRng, device: &Device) -> Tensor<2> {
    let v: Vec<f32> = (0..rows * cols)
        .map(|_| ((rng.next_f64() * (1.0 - 2e-7)) + 1e-7) as f32)
        .collect();
    Tensor::from_data(TensorData::new(v, [rows, cols]), device)
}

#[cfg(test)]
mod tests {
    use super::fill_standard_normal;
    use emberlab_core::EmberRng;

    /// Box–Muller one pair at a time with the C library's `ln`, `sqrt` and `sin_cos`.
    fn reference(n: usize, rng: &mut EmberRng, out: &mut Vec<f32>) {
        let end = out.len() + n;
        while out.len() < end {
            let u1 = 1.0 - rng.next_f64();
            let u2 = rng.next_f64();
            let r = (-2.0 * u1.ln()).sqrt();
            let (s, c) = (std::f64::consts::TAU * u2).sin_cos();
            out.push((r * c) as f32);
            if out.len() < end {
                out.push((r * s) as f32);
            }
        }
    }

    #[test]
    fn the_vectorised_stream_rounds_to_the_c_librarys_values() {
        let (mut fast, mut slow) = (EmberRng::seed_from(11), EmberRng::seed_from(11));
        let (mut a, mut b) = (Vec::new(), Vec::new());
        // Odd and even lengths, shorter and longer than a block; the streams stay in step.
        for n in (1..=97).cycle().take(20_000) {
            fill_standard_normal(n, &mut fast, &mut a);
            reference(n, &mut slow, &mut b);
        }
        assert_eq!(a.len(), b.len());
        assert_eq!(fast.next_u64(), slow.next_u64(), "the same uniforms drawn");
        let differ: Vec<(f32, f32)> = (a.iter().zip(&b))
            .filter(|(x, y)| x.to_bits() != y.to_bits())
            .map(|(x, y)| (*x, *y))
            .collect();
        // A difference needs a value within a few f64 ulps of an f32 rounding boundary.
        assert!(differ.len() <= 2, "{} of {} differ", differ.len(), a.len());
        for (x, y) in differ {
            assert!(
                (x.to_bits() as i64 - y.to_bits() as i64).abs() <= 1,
                "{x} vs {y}"
            );
        }
    }
}
