//! The one transpose of the kernels: a row-major matrix written out column by column, in
//! square tiles so that a tile's reads and writes each stay within a few cache lines. It
//! turns a convolution's weight into rows of output channels and its gradient back, and a
//! product computed turned (`matmul`) into its output rows.

/// Side of the square tiles (16 floats: one cache line of a row).
const TILE: usize = 16;

/// `src [rows, cols]` (row-major) transposed into `dst`: `cols` rows of `rows` floats,
/// `dst_row` floats apart, written without being read.
///
/// # Safety
/// `dst` is valid for writes at `c · dst_row + r` for every `r < rows`, `c < cols`, and
/// those floats do not overlap `src`.
pub(crate) unsafe fn transpose_to(
    src: &[f32],
    rows: usize,
    cols: usize,
    dst: *mut f32,
    dst_row: usize,
) {
    assert_eq!(
        src.len(),
        rows * cols,
        "transpose: a source of another size"
    );
    for r0 in (0..rows).step_by(TILE) {
        for c0 in (0..cols).step_by(TILE) {
            for r in r0..(r0 + TILE).min(rows) {
                let row = &src[r * cols..(r + 1) * cols];
                for (c, &v) in row.iter().enumerate().take((c0 + TILE).min(cols)).skip(c0) {
                    // SAFETY: `r < rows` and `c < cols` (the caller's contract).
                    unsafe { dst.add(c * dst_row + r).write(v) };
                }
            }
        }
    }
}

/// `src [rows, cols]` (row-major) transposed into `dst [cols, rows]` (for the direct
/// convolution, which exists on x86-64 only).
#[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
pub(crate) fn transpose_into(src: &[f32], rows: usize, cols: usize, dst: &mut [f32]) {
    assert_eq!(
        dst.len(),
        src.len(),
        "transpose: a destination of another size"
    );
    // SAFETY: `dst` holds `cols` rows of `rows` floats, apart by `rows`; a `&mut` does not
    // overlap `src`.
    unsafe { transpose_to(src, rows, cols, dst.as_mut_ptr(), rows) }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn naive(src: &[f32], rows: usize, cols: usize) -> Vec<f32> {
        (0..cols)
            .flat_map(|c| (0..rows).map(move |r| src[r * cols + c]))
            .collect()
    }

    #[test]
    fn tiles_give_the_naive_transpose_for_every_edge() {
        for (rows, cols) in [(1, 1), (3, 40), (16, 16), (17, 33), (64, 5), (0, 4)] {
            let src: Vec<f32> = (0..rows * cols).map(|i| i as f32).collect();
            let mut dst = vec![f32::NAN; rows * cols];
            transpose_into(&src, rows, cols, &mut dst);
            assert_eq!(dst, naive(&src, rows, cols), "{rows} × {cols}");
        }
    }

    #[test]
    fn rows_apart_leave_the_gaps_untouched() {
        let (rows, cols, dst_row) = (5, 19, 8);
        let src: Vec<f32> = (0..rows * cols).map(|i| i as f32).collect();
        let mut dst = vec![-1.0f32; cols * dst_row];
        // SAFETY: `dst` holds `cols` rows of `dst_row ≥ rows` floats.
        unsafe { transpose_to(&src, rows, cols, dst.as_mut_ptr(), dst_row) };
        for (c, row) in dst.chunks_exact(dst_row).enumerate() {
            let want: Vec<f32> = (0..rows).map(|r| src[r * cols + c]).collect();
            assert_eq!(&row[..rows], want.as_slice(), "row {c}");
            assert!(row[rows..].iter().all(|&v| v == -1.0), "row {c}'s gap");
        }
    }
}
