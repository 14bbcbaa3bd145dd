//! [`host_product`]: a matrix product on plain host slices, for code that keeps its
//! activations in its own buffers (a training step written outside autodiff): the same
//! kernels as [`matmul`](fn@crate::matmul) on flex — the thin kernels for a thin side, the
//! GEMM library otherwise, in column blocks a thread waiting at a barrier may take
//! ([`crate::helping`]) — writing into the caller's buffer.

use std::mem::MaybeUninit;

/// A `rows × cols` matrix in a host slice: element `(r, c)` at `r·row_stride + c·col_stride`.
#[derive(Clone, Copy, Debug)]
pub struct HostMatrix<'a> {
    /// The values.
    pub data: &'a [f32],
    /// Rows.
    pub rows: usize,
    /// Columns.
    pub cols: usize,
    /// Distance between rows.
    pub row_stride: usize,
    /// Distance between columns.
    pub col_stride: usize,
}

impl<'a> HostMatrix<'a> {
    /// The first `rows × cols` values of `data`, row by row.
    pub fn row_major(data: &'a [f32], rows: usize, cols: usize) -> Self {
        HostMatrix {
            data,
            rows,
            cols,
            row_stride: cols,
            col_stride: 1,
        }
    }

    /// The same values seen transposed (`cols × rows`).
    pub fn t(self) -> Self {
        HostMatrix {
            rows: self.cols,
            cols: self.rows,
            row_stride: self.col_stride,
            col_stride: self.row_stride,
            ..self
        }
    }

    /// Whether every element lies inside `data`.
    fn fits(&self) -> bool {
        if self.rows == 0 || self.cols == 0 {
            return true;
        }
        let last = (self.rows - 1)
            .checked_mul(self.row_stride)
            .zip((self.cols - 1).checked_mul(self.col_stride))
            .and_then(|(r, c)| r.checked_add(c));
        last.is_some_and(|l| l < self.data.len())
    }
}

/// `out = a · b`, `out` row-major `a.rows × b.cols` (its first values; the rest untouched).
///
/// # Panics
/// If `a.cols != b.rows`, an operand reaches past its slice, or `out` is too short.
pub fn host_product(a: HostMatrix<'_>, b: HostMatrix<'_>, out: &mut [f32]) {
    let (m, k, n) = (a.rows, a.cols, b.cols);
    assert_eq!(k, b.rows, "host_product: {m}×{k} times {}×{n}", b.rows);
    assert!(
        a.fits() && b.fits(),
        "host_product: an operand reaches past its slice"
    );
    assert!(
        out.len() >= m * n,
        "host_product: output of {} for {m}×{n}",
        out.len()
    );
    let out = &mut out[..m * n];
    if m == 0 || n == 0 {
        return;
    }
    if k == 0 {
        out.fill(0.0);
        return;
    }
    product(m, n, k, a, b, out);
}

#[cfg(feature = "flex")]
fn product(m: usize, n: usize, k: usize, a: HostMatrix<'_>, b: HostMatrix<'_>, out: &mut [f32]) {
    use crate::thin::{View, thin_product};
    fn view(x: HostMatrix<'_>) -> View<'_> {
        View {
            data: x.data,
            offset: 0,
            rs: x.row_stride,
            cs: x.col_stride,
        }
    }
    // SAFETY: `MaybeUninit<f32>` has `f32`'s layout, and only `f32` values are written.
    let uninit = unsafe { &mut *(std::ptr::from_mut(out) as *mut [MaybeUninit<f32>]) };
    if thin_product(m, n, k, view(a), view(b), uninit) {
        return;
    }
    let strides = |x: HostMatrix<'_>| (x.row_stride as isize, x.col_stride as isize);
    // SAFETY: both operands lie inside their slices (checked by `host_product`), `out`
    // holds `m × n` values, and with m, n, k > 0 every one of them is written.
    unsafe {
        crate::matmul::gemm_shared(
            (m, n, k),
            out.as_mut_ptr(),
            a.data.as_ptr(),
            strides(a),
            b.data.as_ptr(),
            strides(b),
        );
    }
}

#[cfg(not(feature = "flex"))]
fn product(m: usize, n: usize, k: usize, a: HostMatrix<'_>, b: HostMatrix<'_>, out: &mut [f32]) {
    let at = |x: &HostMatrix<'_>, r: usize, c: usize| x.data[r * x.row_stride + c * x.col_stride];
    for (i, row) in out.chunks_exact_mut(n).enumerate().take(m) {
        for (j, o) in row.iter_mut().enumerate() {
            *o = (0..k).fold(0.0, |s, p| s + at(&a, i, p) * at(&b, p, j));
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(a: HostMatrix<'_>, b: HostMatrix<'_>) -> Vec<f64> {
        let at = |x: &HostMatrix<'_>, r: usize, c: usize| {
            x.data[r * x.row_stride + c * x.col_stride] as f64
        };
        let mut out = Vec::new();
        for i in 0..a.rows {
            for j in 0..b.cols {
                out.push((0..a.cols).map(|p| at(&a, i, p) * at(&b, p, j)).sum());
            }
        }
        out
    }

    #[test]
    fn products_of_every_kind_match_the_definition() {
        let values = |n: usize, seed: u32| -> Vec<f32> {
            (0..n)
                .map(|i| {
                    ((i as u32).wrapping_mul(2_654_435_761).wrapping_add(seed) % 2001) as f32
                        / 1000.0
                        - 1.0
                })
                .collect()
        };
        // (m, k, n): thin in k, thin in n, one column, large (the GEMM library), shared size.
        for (m, k, n) in [
            (37, 3, 70),
            (64, 200, 2),
            (64, 200, 1),
            (130, 96, 80),
            (256, 256, 256),
        ] {
            let (av, bv) = (values(m * k, 1), values(k * n, 2));
            for transposed in [false, true] {
                let a = HostMatrix::row_major(&av, m, k);
                let b = if transposed {
                    HostMatrix::row_major(&bv, n, k).t()
                } else {
                    HostMatrix::row_major(&bv, k, n)
                };
                let mut out = vec![f32::NAN; m * n + 3];
                host_product(a, b, &mut out);
                for (got, want) in out.iter().zip(naive(a, b)) {
                    assert!(
                        (*got as f64 - want).abs() <= 1e-4 * (1.0 + want.abs()),
                        "{m}x{k}x{n}: {got} vs {want}"
                    );
                }
                assert!(out[m * n..].iter().all(|v| v.is_nan()), "wrote past m·n");
            }
        }
    }

    #[test]
    #[should_panic(expected = "reaches past its slice")]
    fn an_operand_past_its_slice_is_refused() {
        let v = [1.0f32; 6];
        let mut out = [0.0f32; 9];
        host_product(
            HostMatrix::row_major(&v, 3, 2),
            HostMatrix::row_major(&v, 2, 4),
            &mut out,
        );
    }
}
