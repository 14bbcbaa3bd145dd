//! A convolution's forward and weight gradient straight from the input: no unfolded input,
//! no packing and (in the forward) no re-layout of the product into planes, for the shapes
//! where im2col and the GEMM lose the most (output channels a multiple of 16) on CPUs with
//! AVX-512. A padded input is copied once with its zeros written out.
//!
//! With im2col, `perf` of DQN on Pong (the Nature CNN) put 28% of the samples in unfolding
//! the input, packing it for the GEMM and turning the product's rows into planes, against
//! 53% in the GEMM's microkernels, and the first layer's 32 outputs put its product on the
//! GEMM's narrow edge kernel.
//!
//! Both passes are one sweep ([`avx512::tile`]): `R` items × `16·V` output channels held in
//! `R·V` vector accumulators, each step adding `V` vectors of a row (of the transposed
//! weight, or of the output's gradient laid out channels last) times one input value per
//! item, broadcast from where it lies in the input. An input value's place is the sum of a
//! position's corner and a patch value's offset, so
//! - the forward sweeps the patch's offsets for a tile of output positions (items: corners);
//! - the weight's gradient sweeps the output positions for a tile of patch values (items:
//!   offsets), `dW[o][k] = Σ dY[o, position] · x[corner + offset k]`.
//!
//! Any stride, no copy of the input.

use crate::conv_shape::ConvShape;
#[cfg(target_arch = "x86_64")]
use crate::transpose::transpose_into;

/// Proof that this CPU computes one shape's convolution from the input: output channels a
/// multiple of 16, a non-empty input, patch and output, and AVX-512F, checked once by
/// [`Direct::of`].
#[derive(Clone, Copy, Debug)]
pub(crate) struct Direct {
    #[cfg_attr(not(target_arch = "x86_64"), allow(dead_code))]
    shape: ConvShape,
    /// Off x86-64 no kernel exists, so no `Direct` can be made.
    #[cfg(not(target_arch = "x86_64"))]
    never: std::convert::Infallible,
}

impl Direct {
    /// `Some` where this CPU computes `s` from the input; `None` for im2col and the GEMM.
    pub(crate) fn of(s: &ConvShape) -> Option<Direct> {
        let sized = s.out > 0
            && s.out.is_multiple_of(16)
            && s.patch() > 0
            && s.input.iter().all(|&d| d > 0)
            && s.output().is_some_and(|[oh, ow]| oh * ow > 0);
        #[cfg(target_arch = "x86_64")]
        {
            (sized && std::arch::is_x86_feature_detected!("avx512f"))
                .then_some(Direct { shape: *s })
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = sized;
            None
        }
    }

    /// `y [n, o, oh, ow]` of `x [n, c, h, w]`, the weight `[o, c · kh · kw]` and the bias
    /// `[o]`, every value written.
    pub(crate) fn forward(&self, x: &[f32], w: &[f32], bias: &[f32], y: &mut [f32]) {
        #[cfg(target_arch = "x86_64")]
        {
            let padded = with_padding(x, &self.shape);
            let (x, s) = padded
                .as_ref()
                .map_or((x, &self.shape), |(x, s)| (x.as_slice(), s));
            // SAFETY: `Direct::of` found AVX-512F on this CPU; lengths are checked inside.
            unsafe { avx512::forward(x, w, bias, s, y) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (x, w, bias, y);
            match self.never {}
        }
    }

    /// The weight's gradient `dw [o, c · kh · kw]` (overwritten) from `x [n, c, h, w]` and
    /// the output's gradient `dy [n, o, oh, ow]`.
    pub(crate) fn weight_grad(&self, x: &[f32], dy: &[f32], dw: &mut [f32]) {
        #[cfg(target_arch = "x86_64")]
        {
            let padded = with_padding(x, &self.shape);
            let (x, s) = padded
                .as_ref()
                .map_or((x, &self.shape), |(x, s)| (x.as_slice(), s));
            // SAFETY: `Direct::of` found AVX-512F on this CPU; lengths are checked inside.
            unsafe { avx512::weight_grad(x, dy, s, dw) };
        }
        #[cfg(not(target_arch = "x86_64"))]
        {
            let _ = (x, dy, dw);
            match self.never {}
        }
    }
}

/// `x` with its padding written out as zeros, and the shape without padding that reads it
/// (the same output); `None` when `s` has no padding.
#[cfg(target_arch = "x86_64")]
fn with_padding(x: &[f32], s: &ConvShape) -> Option<(Vec<f32>, ConvShape)> {
    if s.padding == [0, 0] {
        return None;
    }
    let [n, c, h, w] = s.input;
    let [ph, pw] = s.padding;
    let (hp, wp) = (h + 2 * ph, w + 2 * pw);
    let mut out = vec![0.0f32; n * c * hp * wp];
    for (plane, dst) in x.chunks_exact(h * w).zip(out.chunks_exact_mut(hp * wp)) {
        for (row, d) in plane.chunks_exact(w).zip(dst.chunks_exact_mut(wp).skip(ph)) {
            d[pw..pw + w].copy_from_slice(row);
        }
    }
    let shape = ConvShape {
        input: [n, c, hp, wp],
        padding: [0, 0],
        ..*s
    };
    Some((out, shape))
}

/// Where each value of a patch lies relative to its position's corner (increasing), and
/// where each output position's corner lies in a sample (increasing).
#[cfg(target_arch = "x86_64")]
fn geometry(s: &ConvShape) -> (Vec<usize>, Vec<usize>) {
    let [_, c, h, width] = s.input;
    let [kh, kw] = s.kernel;
    let [sh, sw] = s.stride;
    let [_, ow] = s.output().expect("checked by Direct::of");
    let offsets = (0..c)
        .flat_map(|ci| (0..kh).flat_map(move |i| (0..kw).map(move |j| (ci * h + i) * width + j)))
        .collect();
    let p = s.output().map_or(0, |[oh, ow]| oh * ow);
    let corners = (0..p)
        .map(|q| (q / ow) * sh * width + (q % ow) * sw)
        .collect();
    (offsets, corners)
}

/// `m [rows, cols]` transposed into `[cols, rows]`.
#[cfg(target_arch = "x86_64")]
fn transpose(m: &[f32], rows: usize, cols: usize) -> Vec<f32> {
    let mut t = vec![0.0f32; m.len()];
    transpose_into(m, rows, cols, &mut t);
    t
}

#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::{ConvShape, geometry, transpose, transpose_into};
    use crate::scratch;
    use std::arch::x86_64::*;

    /// One sweep's operands: `acc[r][·] += rows[i][g ..] · x[at[r] + steps[i]]` over `i`.
    struct Sweep<'a> {
        /// The input values are read from.
        x: &'a [f32],
        /// Added to each item's place, one per step (increasing).
        steps: &'a [usize],
        /// One row of `out` values per step.
        rows: &'a [f32],
        /// Values per row.
        out: usize,
    }

    /// The accumulators of `R` items × `16·V` channels.
    type Acc<const V: usize, const R: usize> = [[__m512; V]; R];

    /// Calls `f::<V, R>(g)` for the channel groups of `out` (a multiple of 16): 64 channels
    /// at a time while they last, then 48, 32 or 16, each with as many items as fit the
    /// registers.
    macro_rules! groups {
        ($out:expr, $f:ident($($arg:expr),*)) => {{
            let mut g = 0;
            while g < $out {
                let v = (($out - g) / 16).min(4);
                match v {
                    4 => $f::<4, 6>($($arg,)* g),
                    3 => $f::<3, 8>($($arg,)* g),
                    2 => $f::<2, 10>($($arg,)* g),
                    _ => $f::<1, 24>($($arg,)* g),
                }
                g += 16 * v;
            }
        }};
    }

    /// [`super::forward`] on a CPU with AVX-512F.
    ///
    /// # Safety
    /// The CPU has AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn forward(x: &[f32], w: &[f32], bias: &[f32], s: &ConvShape, y: &mut [f32]) {
        let [n, c, h, width] = s.input;
        let (o, k) = (s.out, s.patch());
        let (offsets, corners) = geometry(s);
        let p = corners.len();
        assert!(
            x.len() == n * c * h * width && w.len() == o * k && bias.len() == o,
            "conv forward: slices of other lengths than the shape's"
        );
        assert_eq!(
            y.len(),
            n * o * p,
            "conv forward: an output of another length"
        );
        let wt = transpose(w, o, k);
        for (xs, ys) in x.chunks_exact(c * h * width).zip(y.chunks_exact_mut(o * p)) {
            let sweep = Sweep {
                x: xs,
                steps: &offsets,
                rows: &wt,
                out: o,
            };
            // SAFETY: AVX-512F (this function's precondition).
            unsafe { groups!(o, positions(&sweep, &corners, bias, ys)) };
        }
    }

    /// Output channels `g .. g + 16·V` of one sample, `R` positions at a time (the last
    /// tile repeats the last position where fewer are left and keeps only its own).
    ///
    /// # Safety
    /// The CPU has AVX-512F.
    #[target_feature(enable = "avx512f")]
    unsafe fn positions<const V: usize, const R: usize>(
        sweep: &Sweep<'_>,
        corners: &[usize],
        bias: &[f32],
        ys: &mut [f32],
        g: usize,
    ) {
        let p = corners.len();
        let mut lanes = [[0.0f32; 16]; R];
        for q0 in (0..p).step_by(R) {
            let at: [usize; R] = std::array::from_fn(|r| corners[(q0 + r).min(p - 1)]);
            // SAFETY: AVX-512F; `bias` holds `g + 16·V` values at least (checked by the
            // slice below).
            let acc = unsafe {
                let b = &bias[g..g + 16 * V];
                let init: [__m512; V] =
                    std::array::from_fn(|v| _mm512_loadu_ps(b[16 * v..].as_ptr()));
                tile::<V, R>(sweep, &at, g, [init; R])
            };
            for v in 0..V {
                for (r, lane) in lanes.iter_mut().enumerate() {
                    // SAFETY: 16 floats into a 16-float array.
                    unsafe { _mm512_storeu_ps(lane.as_mut_ptr(), acc[r][v]) };
                }
                for (r, lane) in lanes.iter().enumerate().take(p - q0) {
                    for (i, &value) in lane.iter().enumerate() {
                        ys[(g + 16 * v + i) * p + q0 + r] = value;
                    }
                }
            }
        }
    }

    /// Samples whose inputs take at most this many values are swept together for the
    /// weight's gradient (at least one), so that their inputs and gradients stay in L2.
    const CHUNK: usize = 1 << 16;

    /// [`super::weight_grad`] on a CPU with AVX-512F.
    ///
    /// # Safety
    /// The CPU has AVX-512F.
    #[target_feature(enable = "avx512f")]
    pub(super) unsafe fn weight_grad(x: &[f32], dy: &[f32], s: &ConvShape, dw: &mut [f32]) {
        let [n, c, h, width] = s.input;
        let (o, k, plane) = (s.out, s.patch(), c * h * width);
        let (offsets, corners) = geometry(s);
        let p = corners.len();
        assert!(
            x.len() == n * plane && dy.len() == n * o * p && dw.len() == o * k,
            "conv weight gradient: slices of other lengths than the shape's"
        );
        // The gradient channels last, `[n · p, o]`: one row per output position.
        let mut rows = scratch::take(n * p * o);
        for (sample, dst) in dy.chunks_exact(o * p).zip(rows.chunks_exact_mut(p * o)) {
            transpose_into(sample, o, p, dst);
        }
        // `dWᵀ [k, o]`, accumulated chunk by chunk of samples.
        let mut dwt = vec![0.0f32; k * o];
        let per = (CHUNK / plane).max(1);
        let mut steps = Vec::with_capacity(per * p);
        for b0 in (0..n).step_by(per) {
            let b1 = (b0 + per).min(n);
            steps.clear();
            steps.extend((0..b1 - b0).flat_map(|b| corners.iter().map(move |&q| b * plane + q)));
            let sweep = Sweep {
                x: &x[b0 * plane..b1 * plane],
                steps: &steps,
                rows: &rows[b0 * p * o..b1 * p * o],
                out: o,
            };
            // SAFETY: AVX-512F (this function's precondition).
            unsafe { groups!(o, patch_values(&sweep, &offsets, &mut dwt)) };
        }
        transpose_into(&dwt, k, o, dw);
        scratch::give(rows);
    }

    /// Adds one chunk's sums to channels `g .. g + 16·V` of `dwt [k, o]`, `R` patch values at
    /// a time (the last tile repeats the last value where fewer are left and stores only
    /// its own).
    ///
    /// # Safety
    /// The CPU has AVX-512F.
    #[target_feature(enable = "avx512f")]
    unsafe fn patch_values<const V: usize, const R: usize>(
        sweep: &Sweep<'_>,
        offsets: &[usize],
        dwt: &mut [f32],
        g: usize,
    ) {
        let (k, o) = (offsets.len(), sweep.out);
        assert!(
            dwt.len() == k * o && g + 16 * V <= o,
            "conv weight gradient: a group past the outputs"
        );
        for k0 in (0..k).step_by(R) {
            let at: [usize; R] = std::array::from_fn(|r| offsets[(k0 + r).min(k - 1)]);
            let row = |r: usize| ((k0 + r).min(k - 1)) * o + g;
            // SAFETY: AVX-512F; every row's `16·V` values from `g` lie in `dwt` (the assert
            // above), and the stores keep to the tile's own rows.
            unsafe {
                let init: Acc<V, R> = std::array::from_fn(|r| {
                    std::array::from_fn(|v| _mm512_loadu_ps(dwt.as_ptr().add(row(r) + 16 * v)))
                });
                let acc = tile::<V, R>(sweep, &at, g, init);
                for (r, acc) in acc.iter().enumerate().take(k - k0) {
                    for (v, value) in acc.iter().enumerate() {
                        _mm512_storeu_ps(dwt.as_mut_ptr().add(row(r) + 16 * v), *value);
                    }
                }
            }
        }
    }

    /// `acc[r][v] += Σ_i rows[i][g + 16·v ..] · x[at[r] + steps[i]]`: the sweep of one tile.
    ///
    /// # Safety
    /// The CPU has AVX-512F.
    #[target_feature(enable = "avx512f")]
    #[inline]
    unsafe fn tile<const V: usize, const R: usize>(
        sweep: &Sweep<'_>,
        at: &[usize; R],
        g: usize,
        mut acc: Acc<V, R>,
    ) -> Acc<V, R> {
        let largest = sweep.steps.last().copied().unwrap_or(0);
        assert!(
            at.iter().all(|&a| a + largest < sweep.x.len())
                && g + 16 * V <= sweep.out
                && sweep.rows.len() >= sweep.steps.len() * sweep.out,
            "conv sweep: a read outside its operands"
        );
        // SAFETY: the assert bounds every read: steps increase (the last is the largest),
        // and `rows` holds a row of `out` values per step, of which `g .. g + 16·V` are read.
        unsafe {
            let x = sweep.x.as_ptr();
            let starts: [*const f32; R] = std::array::from_fn(|r| x.add(at[r]));
            let mut row = sweep.rows.as_ptr().add(g);
            for &step in sweep.steps {
                let mut a = [_mm512_setzero_ps(); V];
                for (v, a) in a.iter_mut().enumerate() {
                    *a = _mm512_loadu_ps(row.add(16 * v));
                }
                for (acc, start) in acc.iter_mut().zip(&starts) {
                    let b = _mm512_set1_ps(*start.add(step));
                    for v in 0..V {
                        acc[v] = _mm512_fmadd_ps(a[v], b, acc[v]);
                    }
                }
                row = row.add(sweep.out);
            }
            acc
        }
    }
}
