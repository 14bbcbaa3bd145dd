//! Noise drawn on the host from an [`EmberRng`], so that the same seed gives the same
//! actions on every backend (device generators differ between backends).

use burn::tensor::{Device, Tensor, TensorData};
use ember_core::EmberRng;

/// Appends `n` standard normal values to `out` (Box–Muller, pairs from two uniforms).
pub fn fill_standard_normal(n: usize, rng: &mut EmberRng, out: &mut Vec<f32>) {
    let end = out.len() + n;
    while out.len() < end {
        let u1 = 1.0 - rng.next_f64(); // (0, 1]
        let u2 = rng.next_f64();
        let r = (-2.0 * u1.ln()).sqrt();
        let (s, c) = (std::f64::consts::TAU * u2).sin_cos();
        out.push((r * c) as f32);
        if out.len() < end {
            out.push((r * s) as f32);
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
