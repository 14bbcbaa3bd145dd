//! Register-tiled layer kernels of the frozen path: a tile of `R` rows × `C` vectors of
//! outputs stays in registers while the inputs stream by, so each weight vector is loaded
//! once per tile and feeds `R` multiply-adds, and each output is stored once, with the bias
//! it started from and the ReLU applied on the way out. One generic kernel, instantiated per
//! instruction set through [`Simd`].
//!
//! Each output sums its terms in order of the input index (`b + x₀w₀ + x₁w₁ + …`, fused
//! multiply-adds), whatever the tile shape, so a row's result does not depend on the batch
//! it came in.

#[cfg(target_arch = "x86_64")]
use std::arch::x86_64::*;

/// A layer's operands as raw parts: `W` row-major `[inputs, outputs]`, `b` `[outputs]`.
#[derive(Clone, Copy)]
pub(super) struct Parts {
    pub(super) inputs: usize,
    pub(super) outputs: usize,
    pub(super) weight: *const f32,
    pub(super) bias: *const f32,
}

/// The vector operations a tile needs, for one instruction set.
///
/// Every method is unsafe: the CPU must have the instruction set, and a pointer must be
/// valid for the lanes read or written (masked-off lanes are never touched).
pub(super) trait Simd {
    /// A vector of `LANES` floats.
    type V: Copy;
    /// Which lanes of a partial vector are live.
    type M: Copy;
    /// Floats per vector.
    const LANES: usize;
    /// The first `live` lanes (`0 < live < LANES`).
    unsafe fn mask(live: usize) -> Self::M;
    unsafe fn load(p: *const f32) -> Self::V;
    unsafe fn load_masked(p: *const f32, m: Self::M) -> Self::V;
    unsafe fn store(p: *mut f32, v: Self::V);
    unsafe fn store_masked(p: *mut f32, v: Self::V, m: Self::M);
    unsafe fn splat(x: f32) -> Self::V;
    /// `a·b + c`, one rounding.
    unsafe fn fmadd(a: Self::V, b: Self::V, c: Self::V) -> Self::V;
    /// `max(v, 0)`, NaN kept (as flex's `relu`).
    unsafe fn relu(v: Self::V) -> Self::V;
}

/// AVX-512F: 32 registers of 16 floats, masked loads and stores.
#[cfg(target_arch = "x86_64")]
pub(super) struct Avx512;

#[cfg(target_arch = "x86_64")]
impl Simd for Avx512 {
    type V = __m512;
    type M = __mmask16;
    const LANES: usize = 16;
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn mask(live: usize) -> __mmask16 {
        ((1u32 << live) - 1) as __mmask16
    }
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn load(p: *const f32) -> __m512 {
        unsafe { _mm512_loadu_ps(p) }
    }
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn load_masked(p: *const f32, m: __mmask16) -> __m512 {
        unsafe { _mm512_maskz_loadu_ps(m, p) }
    }
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn store(p: *mut f32, v: __m512) {
        unsafe { _mm512_storeu_ps(p, v) }
    }
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn store_masked(p: *mut f32, v: __m512, m: __mmask16) {
        unsafe { _mm512_mask_storeu_ps(p, m, v) }
    }
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn splat(x: f32) -> __m512 {
        _mm512_set1_ps(x)
    }
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn fmadd(a: __m512, b: __m512, c: __m512) -> __m512 {
        _mm512_fmadd_ps(a, b, c)
    }
    #[inline]
    #[target_feature(enable = "avx512f")]
    unsafe fn relu(v: __m512) -> __m512 {
        // `max` returns its second operand when either is NaN.
        _mm512_max_ps(_mm512_setzero_ps(), v)
    }
}

/// AVX2 with FMA: 16 registers of 8 floats; partial vectors through `vmaskmov`.
#[cfg(target_arch = "x86_64")]
pub(super) struct Avx2;

#[cfg(target_arch = "x86_64")]
impl Simd for Avx2 {
    type V = __m256;
    type M = __m256i;
    const LANES: usize = 8;
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn mask(live: usize) -> __m256i {
        _mm256_cmpgt_epi32(
            _mm256_set1_epi32(live as i32),
            _mm256_setr_epi32(0, 1, 2, 3, 4, 5, 6, 7),
        )
    }
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn load(p: *const f32) -> __m256 {
        unsafe { _mm256_loadu_ps(p) }
    }
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn load_masked(p: *const f32, m: __m256i) -> __m256 {
        unsafe { _mm256_maskload_ps(p, m) }
    }
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn store(p: *mut f32, v: __m256) {
        unsafe { _mm256_storeu_ps(p, v) }
    }
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn store_masked(p: *mut f32, v: __m256, m: __m256i) {
        unsafe { _mm256_maskstore_ps(p, m, v) }
    }
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn splat(x: f32) -> __m256 {
        _mm256_set1_ps(x)
    }
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn fmadd(a: __m256, b: __m256, c: __m256) -> __m256 {
        _mm256_fmadd_ps(a, b, c)
    }
    #[inline]
    #[target_feature(enable = "avx2,fma")]
    unsafe fn relu(v: __m256) -> __m256 {
        _mm256_max_ps(_mm256_setzero_ps(), v)
    }
}

/// One tile: rows `x[0..R]` (each `inputs` long) into outputs `j0 .. j0 + C·LANES` of rows
/// `y[0..R]` (each `outputs` long); with `TAIL` the last vector holds only the lanes of
/// `tail`. An input that is zero in all `R` rows is skipped (the weights are finite, so it
/// adds nothing): after a ReLU that is about half of them at one row.
///
/// # Safety
/// The CPU has `S`'s instruction set; `x` holds `R·inputs`, `y` `R·outputs` floats, and
/// `j0 + C·LANES ≤ outputs` (the masked lanes of `TAIL` excepted).
#[inline(always)]
unsafe fn tile<S: Simd, const R: usize, const C: usize, const TAIL: bool>(
    l: Parts,
    x: *const f32,
    y: *mut f32,
    j0: usize,
    tail: S::M,
    relu: bool,
) {
    let (n_in, n_out, lanes) = (l.inputs, l.outputs, S::LANES);
    // SAFETY (whole body): every offset stays inside the extents of the contract above.
    unsafe {
        let vector = |p: *const f32, c: usize| {
            if TAIL && c + 1 == C {
                S::load_masked(p.add(c * lanes), tail)
            } else {
                S::load(p.add(c * lanes))
            }
        };
        let bias: [S::V; C] = std::array::from_fn(|c| vector(l.bias.add(j0), c));
        let mut acc = [bias; R];
        for i in 0..n_in {
            let xs: [f32; R] = std::array::from_fn(|r| *x.add(r * n_in + i));
            if xs.iter().all(|&v| v == 0.0) {
                continue;
            }
            let wp = l.weight.add(i * n_out + j0);
            let w: [S::V; C] = std::array::from_fn(|c| vector(wp, c));
            for (row, &xr) in acc.iter_mut().zip(&xs) {
                let xb = S::splat(xr);
                for (a, &wc) in row.iter_mut().zip(&w) {
                    *a = S::fmadd(xb, wc, *a);
                }
            }
        }
        for (r, row) in acc.iter().enumerate() {
            let out = y.add(r * n_out + j0);
            for (c, &v) in row.iter().enumerate() {
                let v = if relu { S::relu(v) } else { v };
                if TAIL && c + 1 == C {
                    S::store_masked(out.add(c * lanes), v, tail);
                } else {
                    S::store(out.add(c * lanes), v);
                }
            }
        }
    }
}

/// All outputs of `R` rows: blocks of `C` vectors, then single vectors, then the partial
/// last vector.
///
/// # Safety
/// As [`tile`], for the whole output row.
#[inline(always)]
unsafe fn rows<S: Simd, const R: usize, const C: usize>(
    l: Parts,
    x: *const f32,
    y: *mut f32,
    relu: bool,
) {
    let lanes = S::LANES;
    let full = l.outputs / lanes * lanes;
    let mut j = 0;
    // SAFETY: each tile stays inside the row (`j + width ≤ full`, or the masked tail).
    unsafe {
        let none = S::mask(1);
        while j + C * lanes <= full {
            tile::<S, R, C, false>(l, x, y, j, none, relu);
            j += C * lanes;
        }
        while j < full {
            tile::<S, R, 1, false>(l, x, y, j, none, relu);
            j += lanes;
        }
        if full < l.outputs {
            tile::<S, R, 1, true>(l, x, y, j, S::mask(l.outputs - full), relu);
        }
    }
}

/// `y = x·W + b` (ReLU'd when `relu`) for `rows` rows: blocks of four rows with `C4`
/// vectors per tile, the one to three rows left with `C2` or `C1`.
///
/// # Safety
/// The CPU has `S`'s instruction set; `x` holds `rows·inputs` and `y` `rows·outputs`
/// floats; `l`'s pointers hold `inputs·outputs` and `outputs`.
#[inline(always)]
pub(super) unsafe fn layer<S: Simd, const C1: usize, const C2: usize, const C4: usize>(
    l: Parts,
    x: *const f32,
    rows_total: usize,
    y: *mut f32,
    relu: bool,
) {
    let (n_in, n_out) = (l.inputs, l.outputs);
    let mut r = 0;
    // SAFETY: row `r` starts at `x + r·inputs` and `y + r·outputs`, inside the buffers.
    unsafe {
        while r + 4 <= rows_total {
            rows::<S, 4, C4>(l, x.add(r * n_in), y.add(r * n_out), relu);
            r += 4;
        }
        let (xr, yr) = (x.add(r * n_in), y.add(r * n_out));
        match rows_total - r {
            3 => rows::<S, 3, C4>(l, xr, yr, relu),
            2 => rows::<S, 2, C2>(l, xr, yr, relu),
            1 => rows::<S, 1, C1>(l, xr, yr, relu),
            _ => {}
        }
    }
}

/// [`layer`] with AVX-512 tiles: 4 rows × 4 vectors (16 accumulators), 8 vectors below.
///
/// # Safety
/// The CPU has AVX-512F; buffers as [`layer`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma")]
pub(super) unsafe fn layer_avx512(l: Parts, x: *const f32, rows: usize, y: *mut f32, relu: bool) {
    unsafe { layer::<Avx512, 8, 8, 4>(l, x, rows, y, relu) }
}

/// [`layer`] with AVX2 tiles: 4 rows × 2 vectors, 4 vectors for two rows, 8 for one.
///
/// # Safety
/// The CPU has AVX2 and FMA; buffers as [`layer`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma")]
pub(super) unsafe fn layer_avx2(l: Parts, x: *const f32, rows: usize, y: *mut f32, relu: bool) {
    unsafe { layer::<Avx2, 8, 4, 2>(l, x, rows, y, relu) }
}
