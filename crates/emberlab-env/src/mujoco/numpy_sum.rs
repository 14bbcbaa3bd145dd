//! NumPy's `np.sum` of a contiguous array, in the same order of additions (pairwise
//! summation: 8 accumulators in blocks of up to 128, halves above), so that the tasks'
//! control and contact costs have Gymnasium's bits. `f32` arrays add in `f32`, as NumPy's
//! `float32` reduction does.

use std::ops::Add;

/// `np.sum(values)` for `f32` or `f64` values, with NumPy's order of additions.
pub(crate) fn pairwise_sum<T: Copy + Add<Output = T> + Default>(values: &[T]) -> T {
    const BLOCK: usize = 128;
    let n = values.len();
    if n < 8 {
        values.iter().fold(T::default(), |acc, &v| acc + v)
    } else if n <= BLOCK {
        let mut r: [T; 8] = std::array::from_fn(|j| values[j]);
        let whole = n - n % 8;
        for chunk in values[8..whole].chunks_exact(8) {
            for (acc, &v) in r.iter_mut().zip(chunk) {
                *acc = *acc + v;
            }
        }
        let mut res = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for &v in &values[whole..] {
            res = res + v;
        }
        res
    } else {
        let half = n / 2;
        let half = half - half % 8;
        pairwise_sum(&values[..half]) + pairwise_sum(&values[half..])
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn short_sums_add_left_to_right() {
        let x = [1e8f32, 1.0, -1e8, 1.0];
        // ((0 + 1e8) + 1) - 1e8 + 1: the first 1 is lost in f32.
        assert_eq!(pairwise_sum(&x), 1.0);
    }

    #[test]
    fn eight_accumulators_then_the_rest() {
        let x: Vec<f64> = (0..21).map(|i| f64::from(i) * 0.1).collect();
        let mut r = [0.0; 8];
        r.copy_from_slice(&x[..8]);
        for i in 8..16 {
            r[i % 8] += x[i];
        }
        let mut want = ((r[0] + r[1]) + (r[2] + r[3])) + ((r[4] + r[5]) + (r[6] + r[7]));
        for v in &x[16..] {
            want += v;
        }
        assert_eq!(pairwise_sum(&x).to_bits(), want.to_bits());
        let long: Vec<f64> = (0..300).map(|i| f64::from(i).sqrt()).collect();
        let exact: f64 = long.iter().sum();
        assert!((pairwise_sum(&long) - exact).abs() < 1e-9);
        assert_eq!(pairwise_sum::<f64>(&[]), 0.0);
    }
}
