//! Noise drawn on the host from an [`EmberRng`], so that the same seed gives the same
//! actions on every backend (device generators differ between backends).

use burn::tensor::{Device, Tensor, TensorData};
use ember_core::EmberRng;

/// `[rows, cols]` standard normal values (Box–Muller).
pub fn standard_normal(rows: usize, cols: usize, rng: &mut EmberRng, device: &Device) -> Tensor<2> {
    let n = rows * cols;
    let mut v = Vec::with_capacity(n + 1);
    while v.len() < n {
        let u1 = 1.0 - rng.next_f64(); // (0, 1]
        let u2 = rng.next_f64();
        let r = (-2.0 * u1.ln()).sqrt();
        let (s, c) = (std::f64::consts::TAU * u2).sin_cos();
        v.push((r * c) as f32);
        v.push((r * s) as f32);
    }
    v.truncate(n);
    Tensor::from_data(TensorData::new(v, [rows, cols]), device)
}

/// `[rows, cols]` uniform values in the open interval `(0, 1)`.
pub fn uniform_open(rows: usize, cols: usize, rng: &mut EmberRng, device: &Device) -> Tensor<2> {
    let v: Vec<f32> = (0..rows * cols)
        .map(|_| ((rng.next_f64() * (1.0 - 2e-7)) + 1e-7) as f32)
        .collect();
    Tensor::from_data(TensorData::new(v, [rows, cols]), device)
}
