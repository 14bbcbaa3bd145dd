//! [`uniform_column`]: reset values for a tensor environment, drawn on the host.

use burn::tensor::{Device, Tensor, TensorData};
use emberlab_core::EmberRng;

/// `n` values uniform in `[low, high)` as an `f32` tensor `[n]` on `device`, drawn on the
/// host from `rng` so that a seed gives the same values on every backend.
///
/// Each 64-bit output of `rng` gives two values (its high and low 32 bits, 24 random
/// mantissa bits each, the precision of an `f32` in `[0, 1)`), computed as NumPy's
/// `uniform` does: `low + (high - low) * u`.
pub(crate) fn uniform_column(
    rng: &mut EmberRng,
    n: usize,
    low: f32,
    high: f32,
    device: &Device,
) -> Tensor<1> {
    const SCALE: f32 = 1.0 / (1u32 << 24) as f32;
    let span = high - low;
    let mut values = vec![0f32; n + n % 2];
    // A local copy keeps the generator's state in registers (the loop is most of a tensor
    // step's host time).
    let mut local = rng.clone();
    for pair in values.chunks_exact_mut(2) {
        let bits = local.next_u64();
        pair[0] = low + span * ((bits >> 40) as u32 as f32 * SCALE);
        pair[1] = low + span * (((bits >> 8) & 0xff_ffff) as u32 as f32 * SCALE);
    }
    *rng = local;
    values.truncate(n);
    Tensor::from_data(TensorData::new(values, [n]), device)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn values_are_uniform_in_range_and_seeded() {
        let device = emberlab_backend::DeviceSpec::Flex
            .device()
            .expect("flex is compiled for tests");
        let draw = |seed: u64, n: usize| {
            let t = uniform_column(&mut EmberRng::seed_from(seed), n, -0.5, 1.5, &device);
            t.to_data_as::<f32>().try_to_vec::<f32>().unwrap()
        };
        let v = draw(3, 20_001);
        assert_eq!(v.len(), 20_001);
        assert!(v.iter().all(|&x| (-0.5..1.5).contains(&x)));
        let mean = v.iter().map(|&x| f64::from(x)).sum::<f64>() / v.len() as f64;
        assert!((mean - 0.5).abs() < 0.02, "mean {mean}");
        // A quarter of the values in each quarter of the range (±3%).
        for q in 0..4 {
            let lo = -0.5 + 0.5 * q as f32;
            let count = v.iter().filter(|&&x| x >= lo && x < lo + 0.5).count();
            assert!(
                (count as f64 / v.len() as f64 - 0.25).abs() < 0.03,
                "quarter {q}"
            );
        }
        assert_eq!(draw(3, 7), v[..7]);
        assert_ne!(draw(4, 7), v[..7]);
    }
}
