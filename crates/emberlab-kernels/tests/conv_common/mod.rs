//! Shared by the convolution tests (`conv.rs`, `conv_direct.rs`).

use burn::tensor::Tensor;

/// A tensor's values.
pub fn values<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.into_data().try_to_vec::<f32>().unwrap()
}

/// Asserts `got` matches burn's `want` to float rounding (relative to the largest value).
pub fn close(what: &str, got: &[f32], want: &[f32]) {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    let scale = want.iter().fold(0f32, |m, v| m.max(v.abs())).max(1.0);
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        assert!(
            (g - w).abs() <= 2e-5 * scale,
            "{what}[{i}]: {g} vs burn's {w} (scale {scale})"
        );
    }
}
