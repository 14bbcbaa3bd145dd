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

use super::{PANEL, panel_index};

/// A layer's operands as raw parts: `W` `[inputs, outputs]` in panels of [`PANEL`]
/// columns (`HostLinear`), `b` `[outputs]`.
#[derive(Clone, Copy)]
pub(super) struct Parts {
    pub(super) inputs: usize,
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

/// Where a layer's outputs go: row `r`'s output `j` (for `from ≤ j < to`) at
/// `ptr + r·stride + j − from`, so a share of the columns fills a compact buffer of its own.
#[derive(Clone, Copy)]
pub(super) struct Out {
    pub(super) ptr: *mut f32,
    pub(super) stride: usize,
    pub(super) from: usize,
}

impl Out {
    /// Output `j` of row `r`.
    ///
    /// # Safety
    /// `from ≤ j` and the place is inside the buffer.
    #[inline(always)]
    unsafe fn at(self, r: usize, j: usize) -> *mut f32 {
        unsafe { self.ptr.add(r * self.stride + j - self.from) }
    }
}

/// Slack the list of live inputs needs past `inputs` slots: [`live_inputs`] stores eight
/// entries at a time.
pub(super) const LIVE_SLACK: usize = 8;

/// For each 8-bit mask, the positions of its set bits, lowest first, one per byte.
static POSITIONS: [u64; 256] = positions();

const fn positions() -> [u64; 256] {
    let mut table = [0u64; 256];
    let mut m = 0;
    while m < 256 {
        let (mut packed, mut k, mut bit) = (0u64, 0, 0);
        while bit < 8 {
            if (m >> bit) & 1 == 1 {
                packed |= (bit as u64) << (8 * k);
                k += 1;
            }
            bit += 1;
        }
        table[m] = packed;
        m += 1;
    }
    table
}

/// Writes to `live` the inputs that are nonzero (or NaN) in at least one of the `R` rows of
/// `x`, in increasing order, and returns how many: the others add nothing (the weights are
/// finite), and after a ReLU that is about half of them at one row. Eight inputs at a
/// time: a comparison's lane mask looks up its set lanes' positions, which are widened,
/// offset and stored whole (the slots past the count are overwritten by the next eight),
/// so the tiles that walk the list pay no branch on the data's zero pattern.
///
/// # Safety
/// The CPU has AVX2; `x` holds `R·inputs` floats and `live` `inputs + LIVE_SLACK` slots.
#[cfg(target_arch = "x86_64")]
#[inline]
#[target_feature(enable = "avx2")]
unsafe fn live_inputs<const R: usize>(x: *const f32, inputs: usize, live: *mut u32) -> usize {
    let mut n = 0;
    let mut i = 0;
    // SAFETY: `i + 8 ≤ inputs` for the vector loads, `n ≤ i` so `n + 8 ≤ inputs + 8` for
    // the stores; the scalar tail reads `i < inputs`.
    unsafe {
        let zero = _mm256_setzero_ps();
        while i + 8 <= inputs {
            let mut mask = 0;
            for r in 0..R {
                let v = _mm256_loadu_ps(x.add(r * inputs + i));
                mask |= _mm256_movemask_ps(_mm256_cmp_ps::<_CMP_NEQ_UQ>(v, zero));
            }
            let mask = mask as usize & 0xff;
            let positions = _mm_cvtsi64_si128(POSITIONS[mask] as i64);
            let index =
                _mm256_add_epi32(_mm256_cvtepu8_epi32(positions), _mm256_set1_epi32(i as i32));
            _mm256_storeu_si256(live.add(n).cast(), index);
            n += mask.count_ones() as usize;
            i += 8;
        }
        while i < inputs {
            let mut any = false;
            for r in 0..R {
                any |= *x.add(r * inputs + i) != 0.0;
            }
            *live.add(n) = i as u32;
            n += usize::from(any);
            i += 1;
        }
    }
    n
}

/// One tile: rows `x[0..R]` (each `inputs` long) into outputs `j0 .. j0 + C·LANES` of `R`
/// rows of `y`; with `TAIL` the last vector holds only the lanes of `tail`. Only the inputs
/// in `live` are read (see [`live_inputs`]).
///
/// # Safety
/// The CPU has `S`'s instruction set; `x` holds `R·inputs` floats, every entry of `live` is
/// below `inputs`, `j0` is a multiple of `LANES`, `j0 + C·LANES ≤ outputs` (the masked
/// lanes of `TAIL` excepted), `l.weight` holds the panels of `inputs × outputs` weights and
/// `y` holds those outputs of `R` rows.
#[inline(always)]
unsafe fn tile<S: Simd, const R: usize, const C: usize, const TAIL: bool>(
    l: Parts,
    x: *const f32,
    y: Out,
    j0: usize,
    tail: S::M,
    relu: bool,
    live: &[u32],
) {
    let (n_in, lanes) = (l.inputs, S::LANES);
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
        // Each vector lies inside one panel (`j0` and the widths are multiples of the
        // lanes, which divide `PANEL`): its weights for input `i` are at `base + i·PANEL`,
        // whole even in the masked tail (the panel's padding is zero).
        let base: [*const f32; C] = std::array::from_fn(|c| {
            let j = j0 + c * lanes;
            l.weight.add(panel_index(n_in, 0, j))
        });
        for &i in live {
            let i = i as usize;
            let w: [S::V; C] = std::array::from_fn(|c| S::load(base[c].add(i * PANEL)));
            for (r, row) in acc.iter_mut().enumerate() {
                let xb = S::splat(*x.add(r * n_in + i));
                for (a, &wc) in row.iter_mut().zip(&w) {
                    *a = S::fmadd(xb, wc, *a);
                }
            }
        }
        for (r, row) in acc.iter().enumerate() {
            let out = y.at(r, j0);
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

/// Outputs `from .. to` of `R` rows: blocks of `C` vectors, then pairs, then the last one
/// or two vectors (the partial one masked) in one tile, so that a narrow output layer
/// (12 outputs: one vector and a partial one) runs two accumulator chains side by side.
///
/// # Safety
/// As [`tile`], for outputs `from .. to ≤ outputs`.
#[inline(always)]
unsafe fn rows<S: Simd, const R: usize, const C: usize>(
    l: Parts,
    x: *const f32,
    y: Out,
    relu: bool,
    live: &[u32],
    to: usize,
) {
    let lanes = S::LANES;
    let full = y.from + (to - y.from) / lanes * lanes;
    let mut j = y.from;
    // SAFETY: each tile stays inside `from .. to` (`j + width ≤ full`, or the masked tail).
    unsafe {
        let none = S::mask(1);
        while j + C * lanes <= full {
            tile::<S, R, C, false>(l, x, y, j, none, relu, live);
            j += C * lanes;
        }
        while j + 2 * lanes <= full {
            tile::<S, R, 2, false>(l, x, y, j, none, relu, live);
            j += 2 * lanes;
        }
        match (j < full, full < to) {
            (true, true) => tile::<S, R, 2, true>(l, x, y, j, S::mask(to - full), relu, live),
            (true, false) => tile::<S, R, 1, false>(l, x, y, j, none, relu, live),
            (false, true) => tile::<S, R, 1, true>(l, x, y, j, S::mask(to - full), relu, live),
            (false, false) => {}
        }
    }
}

/// One layer's work: `y = x·W + b` (ReLU'd when `relu`) for `rows` rows of `x` and
/// outputs `y.from .. to`, listing live inputs in `live`.
#[derive(Clone, Copy)]
pub(super) struct Call {
    pub(super) l: Parts,
    pub(super) x: *const f32,
    pub(super) rows: usize,
    pub(super) y: Out,
    pub(super) to: usize,
    pub(super) relu: bool,
    pub(super) live: *mut u32,
}

/// A [`Call`]: blocks of four rows with `C4` vectors per tile, the one to three rows left
/// with `C2` or `C1`; each block first lists its live inputs.
///
/// # Safety
/// The CPU has `S`'s instruction set; `x` holds `rows·inputs` floats, `y` those outputs of
/// `rows` rows, `live` `inputs +` [`LIVE_SLACK`] slots; `l`'s pointers hold the panels of
/// `inputs × outputs` weights (`inputs · ⌈outputs / PANEL⌉ · PANEL`) and `outputs` biases;
/// `y.from ≤ to ≤ outputs`, `y.from` a multiple of the lanes.
#[inline(always)]
unsafe fn layer<S: Simd, const C1: usize, const C2: usize, const C4: usize>(call: Call) {
    let Call {
        l,
        x,
        rows: rows_total,
        y,
        to,
        relu,
        live,
    } = call;
    let n_in = l.inputs;
    let mut r = 0;
    // SAFETY: row `r` starts at `x + r·inputs` and `y.at(r, ·)`, inside the buffers; the
    // live list is written before it is read and holds at most `inputs` entries.
    unsafe {
        let list = |n: usize| std::slice::from_raw_parts(live, n);
        let at = |r: usize| Out {
            ptr: y.ptr.add(r * y.stride),
            ..y
        };
        while r + 4 <= rows_total {
            let xr = x.add(r * n_in);
            let n = live_inputs::<4>(xr, n_in, live);
            rows::<S, 4, C4>(l, xr, at(r), relu, list(n), to);
            r += 4;
        }
        let xr = x.add(r * n_in);
        match rows_total - r {
            3 => {
                let n = live_inputs::<3>(xr, n_in, live);
                rows::<S, 3, C4>(l, xr, at(r), relu, list(n), to)
            }
            2 => {
                let n = live_inputs::<2>(xr, n_in, live);
                rows::<S, 2, C2>(l, xr, at(r), relu, list(n), to)
            }
            1 => {
                let n = live_inputs::<1>(xr, n_in, live);
                rows::<S, 1, C1>(l, xr, at(r), relu, list(n), to)
            }
            _ => {}
        }
    }
}

/// [`layer`] with AVX-512 tiles: 4 rows × 4 vectors (16 accumulators), 8 vectors below.
///
/// # Safety
/// The CPU has AVX-512F; buffers as [`layer`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx512f,avx2,fma,popcnt")]
pub(super) unsafe fn layer_avx512(call: Call) {
    unsafe { layer::<Avx512, 8, 8, 4>(call) }
}

/// [`layer`] with AVX2 tiles: 4 rows × 2 vectors, 4 vectors for two rows, 8 for one.
///
/// # Safety
/// The CPU has AVX2 and FMA; buffers as [`layer`].
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2,fma,popcnt")]
pub(super) unsafe fn layer_avx2(call: Call) {
    unsafe { layer::<Avx2, 8, 4, 2>(call) }
}
