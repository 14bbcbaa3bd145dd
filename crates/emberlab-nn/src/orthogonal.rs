//! Orthogonal weights (Saxe et al. 2013; PyTorch's and SB3's `ortho_init`) computed on the
//! host in `f64`, as lazily initialised parameters.
//!
//! burn's `Initializer::Orthogonal` draws the same Gaussian matrix and takes its QR
//! factorisation through tensor operations: for the Nature CNN's 3136 × 512 layer that took
//! ~17 s of a PPO or A2C run's ~27 s start on flex, one scalar operation at a time. The factor
//! with a positive diagonal is unique, so the same `Q` comes from any sound method; here it
//! is Cholesky QR applied twice (CholQR2) on the matrix's columns, which for Gaussian
//! matrices (full rank, condition numbers far below `f64`'s 1e8 limit for CholQR2) gives
//! columns orthonormal to rounding. A Cholesky pivot that is not positive (a rank-deficient
//! draw, which a Gaussian matrix is with probability zero) falls back to Householder
//! reflections.
//!
//! The parameter draws its Gaussian matrix when first materialised, as burn's initialisers
//! do, so a model's random stream is consumed in the same order as with burn's initialiser.

use burn::module::{Param, ParamId};
use burn::tensor::{Device, Distribution, Shape, Tensor, TensorData};

/// A parameter of `shape` (`[rows, …]`, its trailing dimensions flattened into columns)
/// whose value is a (semi-)orthogonal matrix times `gain`: orthonormal columns when
/// `rows ≥ columns`, orthonormal rows otherwise (PyTorch's `nn.init.orthogonal_`, burn's
/// `Initializer::Orthogonal`). Initialised lazily, with gradients required.
pub fn orthogonal_param<const D: usize>(
    shape: [usize; D],
    gain: f64,
    device: &Device,
) -> Param<Tensor<D>> {
    Param::uninitialized(
        ParamId::new(),
        move |device, require_grad| {
            let t = orthogonal(shape, gain, device);
            if require_grad { t.require_grad() } else { t }
        },
        device.clone(),
        true,
        Shape::from(shape),
    )
}

/// The value of [`orthogonal_param`], drawn now.
pub fn orthogonal<const D: usize>(shape: [usize; D], gain: f64, device: &Device) -> Tensor<D> {
    assert!(D >= 2, "an orthogonal matrix needs two dimensions at least");
    let rows = shape[0];
    let cols: usize = shape[1..].iter().product();
    let drawn: Tensor<2> = Tensor::random([rows, cols], Distribution::Normal(0.0, 1.0), device);
    let drawn: Vec<f32> = drawn
        .into_data()
        .try_into_vec_as::<f32>()
        .expect("a float tensor's values");
    let values = orthogonal_values(&drawn, rows, cols, gain);
    Tensor::from_data(TensorData::new(values, shape), device)
}

/// `gain · Q` for the Gaussian matrix `drawn [rows, cols]` (row-major): `Q [rows, cols]`
/// with orthonormal columns when `rows ≥ cols`, else orthonormal rows, the factor of
/// `drawn`'s (or its transpose's) QR factorisation whose `R` has a positive diagonal.
pub(crate) fn orthogonal_values(drawn: &[f32], rows: usize, cols: usize, gain: f64) -> Vec<f32> {
    assert_eq!(drawn.len(), rows * cols, "a draw of another size");
    // The tall matrix `A [m, n]`, m ≥ n, stored as its n columns.
    let tall = rows >= cols;
    let (m, n) = if tall { (rows, cols) } else { (cols, rows) };
    let columns: Vec<Vec<f64>> = (0..n)
        .map(|j| {
            (0..m)
                .map(|i| {
                    let (r, c) = if tall { (i, j) } else { (j, i) };
                    f64::from(drawn[r * cols + c])
                })
                .collect()
        })
        .collect();
    let q = cholesky_qr(&columns)
        .and_then(|q| cholesky_qr(&q))
        .unwrap_or_else(|| householder_q(&columns));
    let mut out = vec![0.0f32; rows * cols];
    for (j, column) in q.iter().enumerate() {
        for (i, &v) in column.iter().enumerate() {
            let (r, c) = if tall { (i, j) } else { (j, i) };
            out[r * cols + c] = (gain * v) as f32;
        }
    }
    out
}

/// `Σ a[i] · b[i]`, in eight running sums (which the compiler keeps in vector registers).
fn dot(a: &[f64], b: &[f64]) -> f64 {
    let mut sums = [0.0f64; 8];
    let (a8, b8) = (a.chunks_exact(8), b.chunks_exact(8));
    let tail: f64 = a8
        .remainder()
        .iter()
        .zip(b8.remainder())
        .map(|(x, y)| x * y)
        .sum();
    for (x, y) in a8.zip(b8) {
        for k in 0..8 {
            sums[k] += x[k] * y[k];
        }
    }
    sums.iter().sum::<f64>() + tail
}

/// `y += alpha · x`.
fn axpy(alpha: f64, x: &[f64], y: &mut [f64]) {
    for (y, x) in y.iter_mut().zip(x) {
        *y += alpha * x;
    }
}

/// One Cholesky QR step: `Q = A R⁻¹` with `RᵀR = AᵀA` (`R` upper triangular, positive
/// diagonal), for `A` given as its columns; `None` when a pivot is not positive.
fn cholesky_qr(a: &[Vec<f64>]) -> Option<Vec<Vec<f64>>> {
    let n = a.len();
    // R, row-major upper triangle, built column by column from the Gram matrix.
    let mut r = vec![0.0f64; n * n];
    for j in 0..n {
        for i in 0..=j {
            let mut s = dot(&a[i], &a[j]);
            for k in 0..i {
                s -= r[k * n + i] * r[k * n + j];
            }
            if i == j {
                if !(s > 0.0 && s.is_finite()) {
                    return None;
                }
                r[j * n + j] = s.sqrt();
            } else {
                r[i * n + j] = s / r[i * n + i];
            }
        }
    }
    // q_j = (a_j − Σ_{i<j} R[i][j] q_i) / R[j][j].
    let mut q: Vec<Vec<f64>> = Vec::with_capacity(n);
    for j in 0..n {
        let mut column = a[j].clone();
        for (i, qi) in q.iter().enumerate() {
            axpy(-r[i * n + j], qi, &mut column);
        }
        let d = r[j * n + j];
        column.iter_mut().for_each(|v| *v /= d);
        q.push(column);
    }
    Some(q)
}

/// `Q` of `A`'s QR factorisation by Householder reflections, signs chosen so that `R`'s
/// diagonal is positive (a zero diagonal keeps the reflection's sign), for `A` given as its
/// columns.
fn householder_q(a: &[Vec<f64>]) -> Vec<Vec<f64>> {
    let n = a.len();
    let m = a.first().map_or(0, Vec::len);
    let mut work: Vec<Vec<f64>> = a.to_vec();
    // Reflections `I − 2 v vᵀ` (unit `v`, zero above its start) and the sign of R's diagonal.
    let mut reflections: Vec<Vec<f64>> = Vec::with_capacity(n);
    let mut signs = Vec::with_capacity(n);
    for k in 0..n {
        let x = &work[k][k..];
        let norm = dot(x, x).sqrt();
        let alpha = if x[0] > 0.0 { -norm } else { norm };
        let mut v = vec![0.0f64; m];
        v[k..].copy_from_slice(x);
        v[k] -= alpha;
        let length = dot(&v[k..], &v[k..]).sqrt();
        if length > 0.0 {
            v[k..].iter_mut().for_each(|e| *e /= length);
            for column in work.iter_mut().skip(k) {
                let p = 2.0 * dot(&v[k..], &column[k..]);
                axpy(-p, &v[k..], &mut column[k..]);
            }
        }
        // R[k][k] is now `alpha` (or the untouched value when no reflection was needed).
        signs.push(if work[k][k] < 0.0 { -1.0 } else { 1.0 });
        reflections.push(v);
    }
    // Q's columns: the reflections applied in reverse to the unit vectors e_j, times signs.
    (0..n)
        .map(|j| {
            let mut e = vec![0.0f64; m];
            e[j] = 1.0;
            for v in reflections.iter().rev() {
                let p = 2.0 * dot(v, &e);
                axpy(-p, v, &mut e);
            }
            e.iter_mut().for_each(|x| *x *= signs[j]);
            e
        })
        .collect()
}

#[cfg(test)]
mod tests {
    use super::*;

    /// A reproducible Gaussian-ish matrix (sums of uniforms), row-major.
    fn draw(rows: usize, cols: usize, seed: u64) -> Vec<f32> {
        let mut state = seed;
        let mut uniform = || {
            state = state
                .wrapping_mul(6364136223846793005)
                .wrapping_add(1442695040888963407);
            (state >> 11) as f64 / (1u64 << 53) as f64
        };
        (0..rows * cols)
            .map(|_| ((0..12).map(|_| uniform()).sum::<f64>() - 6.0) as f32)
            .collect()
    }

    /// The largest `|MᵀM − I|` entry over the tall side of `w [rows, cols]`, divided by `gain²`.
    fn off_orthogonal(w: &[f32], rows: usize, cols: usize, gain: f64) -> f64 {
        let tall = rows >= cols;
        let (m, n) = if tall { (rows, cols) } else { (cols, rows) };
        let at = |i: usize, j: usize| -> f64 {
            let (r, c) = if tall { (i, j) } else { (j, i) };
            f64::from(w[r * cols + c]) / gain
        };
        let mut worst = 0.0f64;
        for a in 0..n {
            for b in 0..n {
                let s: f64 = (0..m).map(|i| at(i, a) * at(i, b)).sum();
                worst = worst.max((s - if a == b { 1.0 } else { 0.0 }).abs());
            }
        }
        worst
    }

    #[test]
    fn columns_or_rows_are_orthonormal_times_the_gain() {
        for (rows, cols, gain) in [
            (64, 16, 1.0),
            (16, 64, 2f64.sqrt()),
            (33, 33, 0.01),
            (5, 1, 1.0),
        ] {
            let w = orthogonal_values(&draw(rows, cols, 7), rows, cols, gain);
            let worst = off_orthogonal(&w, rows, cols, gain);
            assert!(worst < 1e-5, "{rows} × {cols}: |QᵀQ − I| up to {worst}");
        }
    }

    #[test]
    fn cholesky_and_householder_give_the_same_factor() {
        // Both give the Q whose R has a positive diagonal: the unique one.
        let (m, n) = (40, 12);
        let drawn = draw(m, n, 3);
        let columns: Vec<Vec<f64>> = (0..n)
            .map(|j| (0..m).map(|i| f64::from(drawn[i * n + j])).collect())
            .collect();
        let a = cholesky_qr(&columns).and_then(|q| cholesky_qr(&q)).unwrap();
        let b = householder_q(&columns);
        for (x, y) in a.iter().flatten().zip(b.iter().flatten()) {
            assert!((x - y).abs() < 1e-10, "{x} against {y}");
        }
        // And R = QᵀA is upper triangular with a positive diagonal.
        for (i, qi) in a.iter().enumerate() {
            for (j, aj) in columns.iter().enumerate() {
                let r = dot(qi, aj);
                if i > j {
                    assert!(r.abs() < 1e-9, "R[{i}][{j}] = {r}");
                } else if i == j {
                    assert!(r > 0.0, "R[{i}][{i}] = {r}");
                }
            }
        }
    }

    #[test]
    fn a_rank_deficient_draw_falls_back_to_householder() {
        // Two equal columns: CholQR's second pivot is zero.
        let (m, n) = (6, 3);
        let mut drawn = draw(m, n, 5);
        for i in 0..m {
            drawn[i * n + 2] = drawn[i * n];
        }
        let w = orthogonal_values(&drawn, m, n, 1.0);
        assert!(w.iter().all(|v| v.is_finite()), "{w:?}");
        let first: Vec<f32> = (0..m).map(|i| w[i * n]).collect();
        let norm: f32 = first.iter().map(|v| v * v).sum();
        assert!((norm - 1.0).abs() < 1e-5, "first column's norm² {norm}");
    }
}
