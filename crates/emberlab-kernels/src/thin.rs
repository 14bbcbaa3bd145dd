//! Matrix products with a thin side, which the GEMM library computes at a few percent of
//! its speed: a network's first layer (`k` = the observation's few features), its output
//! layer (`n` = one Q-value or two action parameters) and their gradients. The library's
//! 64×6 register tiles and its packing of both operands are sized for large products: on
//! a 256-row batch, `[256, 256] · [256, 2]` took 18 µs, `[256, 2] · [2, 256]` 27 µs, where
//! a pass over the operands takes 2–3 µs (measured with AVX-512 kernels).
//!
//! Each kernel adds its terms in one fixed order, the same on every instruction set
//! ([`multiversion!`](crate::multiversion)), so results are reproducible across CPUs; the
//! order differs from the GEMM library's, so results differ from its in the last bits.

use crate::multiversion;
use std::borrow::Cow;
use std::mem::MaybeUninit;

/// Products with at most this many terms per output (`k`) take [`few_terms`] (it matches
/// the GEMM library from 1 to 4 terms and beats it 5× at 2, where the library's
/// special case for `k ≤ 2` is slow).
pub(crate) const FEW_TERMS: usize = 4;

/// Products with at most this many output columns (`n`) take [`column_sweeps`] or, from
/// 2 columns, [`row_dots`] (3× faster than the library at 2 columns, 1.6× at 4; for one
/// column the library's matrix-vector kernel is faster than `row_dots`).
pub(crate) const THIN: usize = 8;

/// One matrix operand in a flat buffer: element `(r, c)` at `offset + r·rs + c·cs`.
#[derive(Clone, Copy, Debug)]
pub(crate) struct View<'a> {
    /// The buffer.
    pub(crate) data: &'a [f32],
    /// Where element `(0, 0)` is.
    pub(crate) offset: usize,
    /// Row stride.
    pub(crate) rs: usize,
    /// Column stride.
    pub(crate) cs: usize,
}

impl<'a> View<'a> {
    fn at(&self, r: usize, c: usize) -> f32 {
        self.data[self.offset + r * self.rs + c * self.cs]
    }

    /// `rows × cols` of it, row-major and contiguous: borrowed when it is already.
    fn packed(&self, rows: usize, cols: usize) -> Cow<'a, [f32]> {
        if self.cs == 1 && (self.rs == cols || rows == 1) {
            return Cow::Borrowed(&self.data[self.offset..self.offset + rows * cols]);
        }
        let mut v = Vec::with_capacity(rows * cols);
        for r in 0..rows {
            v.extend((0..cols).map(|c| self.at(r, c)));
        }
        Cow::Owned(v)
    }

    /// The same elements seen transposed (`cols × rows` of a `rows × cols` view).
    fn transposed(self) -> Self {
        View {
            rs: self.cs,
            cs: self.rs,
            ..self
        }
    }

    /// Row `r`, `len` long, when rows are contiguous (`cs == 1`).
    fn row(&self, r: usize, len: usize) -> &'a [f32] {
        let start = self.offset + r * self.rs;
        &self.data[start..start + len]
    }
}

/// Writes `out = a · b` (`a` is `m × k`, `b` is `k × n`, `out` row-major `m × n`) when
/// the product has a thin side this module computes, and says whether it did: `k ≤
/// FEW_TERMS` (any strides), `n ≤ THIN` with `a`'s columns contiguous, or `2 ≤ n ≤ THIN`
/// with `a`'s rows contiguous. Every output is written when it says yes.
///
/// # Panics
/// When a view reaches past its buffer or `out` is not `m·n` long.
pub(crate) fn thin_product(
    m: usize,
    n: usize,
    k: usize,
    a: View<'_>,
    b: View<'_>,
    out: &mut [MaybeUninit<f32>],
) -> bool {
    assert_eq!(out.len(), m * n, "thin_product: output length");
    if m == 0 || n == 0 || k == 0 {
        return false;
    }
    if k <= FEW_TERMS {
        // a's rows, then b's rows, contiguous: one small copy each.
        few_terms(&a.packed(m, k), &b.packed(k, n), k, out);
    } else if n <= THIN && a.rs == 1 {
        // a's columns are contiguous: `at` holds them one after another.
        let end = a.offset + (k - 1) * a.cs + m;
        column_sweeps(&a.data[a.offset..end], a.cs, m, &b.packed(k, n), n, out);
    } else if (2..=THIN).contains(&n) && a.cs == 1 {
        let a_rows = (0..m).map(|r| a.row(r, k));
        let bt = b.transposed().packed(n, k);
        for (row, o) in a_rows.zip(out.chunks_exact_mut(n)) {
            row_dots(row, &bt, o);
        }
    } else {
        return false;
    }
    true
}

/// Output columns per register block of [`few_terms`] (four AVX-512 registers).
const BLOCK: usize = 64;

multiversion! {
    /// `out[i][j] = Σ_p a[i][p]·b[p][j]` for `k` terms, row-major operands; each output
    /// sums its terms in order of `p` (`a₀b₀ + a₁b₁ + …`), vectorised over `j`.
    fn few_terms(a: &[f32], b: &[f32], k: usize, out: &mut [MaybeUninit<f32>]) {
        let n = b.len() / k;
        let full = n / BLOCK * BLOCK;
        let block = |p: usize, j0: usize| -> &[f32; BLOCK] {
            b[p * n + j0..p * n + j0 + BLOCK].try_into().expect("a block")
        };
        for (ar, o) in a.chunks_exact(k).zip(out.chunks_exact_mut(n)) {
            for j0 in (0..full).step_by(BLOCK) {
                let b0 = block(0, j0);
                let mut acc = [0.0f32; BLOCK];
                for l in 0..BLOCK {
                    acc[l] = ar[0] * b0[l];
                }
                for (p, &ap) in ar.iter().enumerate().skip(1) {
                    let bp = block(p, j0);
                    for l in 0..BLOCK {
                        acc[l] += ap * bp[l];
                    }
                }
                for (o, s) in o[j0..j0 + BLOCK].iter_mut().zip(acc) {
                    o.write(s);
                }
            }
            for (j, o) in o.iter_mut().enumerate().skip(full) {
                o.write((1..k).fold(ar[0] * b[j], |s, p| s + ar[p] * b[p * n + j]));
            }
        }
    }
}

/// Lanes of the kernels' vector accumulators (one AVX-512 register, two AVX2 ones).
const LANES: usize = 16;

/// Independent accumulators per dot product in [`row_dots`], so that additions overlap.
const CHAINS: usize = 4;

/// `out[j] = x · bt[j]` for each row `bt[j]` (`x.len()` long) of `bt`. The fixed order
/// of each dot product: whole groups of 64 terms go lane by lane to four chains of 16
/// partial sums (terms `64g + 16c + l` to lane `l` of chain `c`), each summed in order;
/// up to three 16-term blocks left continue chains 0, 1, 2; the chains are added
/// `(c₀ + c₁) + (c₂ + c₃)` lane by lane, the 16 lanes pairwise (`l + 8`, `l + 4`,
/// `l + 2`, `l + 1`), and the last `k mod 16` terms in order.
fn row_dots(x: &[f32], bt: &[f32], out: &mut [MaybeUninit<f32>]) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx512f") {
            // SAFETY: the CPU has AVX-512F (checked just above).
            return unsafe { avx512::row_dots(x, bt, out) };
        }
        if std::arch::is_x86_feature_detected!("avx") {
            // SAFETY: the CPU has AVX (checked just above).
            return unsafe { avx::row_dots(x, bt, out) };
        }
    }
    row_dots_portable(x, bt, out);
}

multiversion! {
    /// [`row_dots`] in plain Rust (the same order, for CPUs without AVX).
    fn row_dots_portable(x: &[f32], bt: &[f32], out: &mut [MaybeUninit<f32>]) {
        each_row(x, bt, out, dot);
    }
}

/// `out[j] = dot(x, bt[j])` for each row of `bt`: [`row_dots`]' loop, inlined into each
/// instruction set's function.
#[inline(always)]
fn each_row(
    x: &[f32],
    bt: &[f32],
    out: &mut [MaybeUninit<f32>],
    dot: impl Fn(&[f32], &[f32]) -> f32,
) {
    for (o, y) in out.iter_mut().zip(bt.chunks_exact(x.len())) {
        o.write(dot(x, y));
    }
}

/// `s` plus the terms of `x · y` from `from` on, in order: a dot product's last
/// `k mod 16` terms.
#[inline(always)]
fn tail_terms(s: f32, x: &[f32], y: &[f32], from: usize) -> f32 {
    x[from..]
        .iter()
        .zip(&y[from..])
        .fold(s, |s, (&a, &b)| s + a * b)
}

/// [`row_dots`] with AVX-512 intrinsics: LLVM vectorises the plain form's lane tree
/// poorly (it ran at half the speed of the GEMM library's kernel).
#[cfg(target_arch = "x86_64")]
mod avx512 {
    use super::{LANES, MaybeUninit, each_row, tail_terms};
    use std::arch::x86_64::*;

    #[target_feature(enable = "avx512f")]
    pub(super) fn row_dots(x: &[f32], bt: &[f32], out: &mut [MaybeUninit<f32>]) {
        each_row(x, bt, out, |x, y| dot(x, y));
    }

    #[target_feature(enable = "avx512f")]
    fn dot(x: &[f32], y: &[f32]) -> f32 {
        assert_eq!(x.len(), y.len());
        let load = |v: &[f32], b: usize| -> __m512 {
            let b: &[f32; LANES] = v[b * LANES..(b + 1) * LANES].try_into().expect("a block");
            // SAFETY: `b` is 16 readable floats.
            unsafe { _mm512_loadu_ps(b.as_ptr()) }
        };
        let term = |b: usize| _mm512_mul_ps(load(x, b), load(y, b));
        let mut c = [_mm512_setzero_ps(); 4];
        let blocks = x.len() / LANES;
        let groups = blocks / 4;
        for g in 0..groups {
            for (i, c) in c.iter_mut().enumerate() {
                *c = _mm512_add_ps(*c, term(4 * g + i));
            }
        }
        for (i, c) in c.iter_mut().enumerate().take(blocks - 4 * groups) {
            *c = _mm512_add_ps(*c, term(4 * groups + i));
        }
        let v = _mm512_add_ps(_mm512_add_ps(c[0], c[1]), _mm512_add_ps(c[2], c[3]));
        // Lanes l + 8 onto l, then l + 4, l + 2, l + 1.
        let v8 = _mm512_add_ps(v, _mm512_shuffle_f32x4::<0b11_10_11_10>(v, v));
        let s = super::avx::lanes_l4_l2_l1(_mm512_castps512_ps256(v8));
        tail_terms(s, x, y, blocks * LANES)
    }
}

/// [`row_dots`] with AVX intrinsics, each 16-lane chain in two 8-lane registers: LLVM
/// turned the plain form into 128-bit pieces, 8-byte loads and stack spills (3–4 GFLOP/s
/// on Zen 3, `perf annotate` of a SAC run).
#[cfg(target_arch = "x86_64")]
mod avx {
    use super::{CHAINS, LANES, MaybeUninit, each_row, tail_terms};
    use std::arch::x86_64::*;

    /// Lanes of one AVX register: a chain's 16 lanes are two of them.
    const HALF: usize = LANES / 2;

    #[target_feature(enable = "avx")]
    pub(super) fn row_dots(x: &[f32], bt: &[f32], out: &mut [MaybeUninit<f32>]) {
        each_row(x, bt, out, |x, y| dot(x, y));
    }

    #[target_feature(enable = "avx")]
    fn dot(x: &[f32], y: &[f32]) -> f32 {
        assert_eq!(x.len(), y.len());
        let load = |v: &[f32], h: usize| -> __m256 {
            let h: &[f32; HALF] = v[h * HALF..(h + 1) * HALF].try_into().expect("8 lanes");
            // SAFETY: `h` is 8 readable floats.
            unsafe { _mm256_loadu_ps(h.as_ptr()) }
        };
        // Half-block `h`'s products: lanes 8·(h mod 2).. of block h / 2.
        let term = |h: usize| _mm256_mul_ps(load(x, h), load(y, h));
        // `c[2i]` holds lanes 0–7 of chain i, `c[2i + 1]` lanes 8–15.
        let mut c = [_mm256_setzero_ps(); 2 * CHAINS];
        let blocks = x.len() / LANES;
        let groups = blocks / CHAINS;
        for g in 0..groups {
            for (h, c) in c.iter_mut().enumerate() {
                *c = _mm256_add_ps(*c, term(2 * CHAINS * g + h));
            }
        }
        for (h, c) in c
            .iter_mut()
            .enumerate()
            .take(2 * (blocks - CHAINS * groups))
        {
            *c = _mm256_add_ps(*c, term(2 * CHAINS * groups + h));
        }
        let lo = _mm256_add_ps(_mm256_add_ps(c[0], c[2]), _mm256_add_ps(c[4], c[6]));
        let hi = _mm256_add_ps(_mm256_add_ps(c[1], c[3]), _mm256_add_ps(c[5], c[7]));
        // Lanes l + 8 onto l, then l + 4, l + 2, l + 1.
        let s = lanes_l4_l2_l1(_mm256_add_ps(lo, hi));
        tail_terms(s, x, y, blocks * LANES)
    }

    /// Lane 0 of `v` after adding lanes `l + 4` onto `l`, then `l + 2`, then `l + 1`: the
    /// end of the documented lane tree, once lanes `l + 8` are on `l`.
    #[target_feature(enable = "avx")]
    pub(super) fn lanes_l4_l2_l1(v: __m256) -> f32 {
        let q = _mm_add_ps(_mm256_castps256_ps128(v), _mm256_extractf128_ps::<1>(v));
        let d = _mm_add_ps(q, _mm_movehl_ps(q, q));
        _mm_cvtss_f32(_mm_add_ss(d, _mm_shuffle_ps::<1>(d, d)))
    }
}

#[inline(always)]
fn dot(x: &[f32], y: &[f32]) -> f32 {
    type Lanes = [f32; LANES];
    #[inline(always)]
    fn add(acc: &mut Lanes, x: &[f32], y: &[f32]) {
        let x: &Lanes = x.try_into().expect("LANES values");
        let y: &Lanes = y.try_into().expect("LANES values");
        for l in 0..LANES {
            acc[l] += x[l] * y[l];
        }
    }
    let (mut c0, mut c1, mut c2, mut c3) = ([0.0; LANES], [0.0; LANES], [0.0; LANES], [0.0; LANES]);
    let group = LANES * CHAINS;
    let (xg, xr) = x.split_at(x.len() / group * group);
    let (yg, yr) = y.split_at(xg.len());
    for (xs, ys) in xg.chunks_exact(group).zip(yg.chunks_exact(group)) {
        add(&mut c0, &xs[..LANES], &ys[..LANES]);
        add(&mut c1, &xs[LANES..2 * LANES], &ys[LANES..2 * LANES]);
        add(
            &mut c2,
            &xs[2 * LANES..3 * LANES],
            &ys[2 * LANES..3 * LANES],
        );
        add(
            &mut c3,
            &xs[3 * LANES..4 * LANES],
            &ys[3 * LANES..4 * LANES],
        );
    }
    // Fewer than CHAINS whole blocks left: they continue the first chains.
    let (xb, xt) = xr.split_at(xr.len() / LANES * LANES);
    let (yb, yt) = yr.split_at(xb.len());
    let left = xb.len() / LANES;
    if left > 0 {
        add(&mut c0, &xb[..LANES], &yb[..LANES]);
    }
    if left > 1 {
        add(&mut c1, &xb[LANES..2 * LANES], &yb[LANES..2 * LANES]);
    }
    if left > 2 {
        add(
            &mut c2,
            &xb[2 * LANES..3 * LANES],
            &yb[2 * LANES..3 * LANES],
        );
    }
    let mut v = [0.0f32; LANES];
    for l in 0..LANES {
        v[l] = (c0[l] + c1[l]) + (c2[l] + c3[l]);
    }
    for w in [8, 4, 2, 1] {
        for l in 0..w {
            v[l] += v[l + w];
        }
    }
    tail_terms(v[0], xt, yt, 0)
}

/// Rows per block of [`column_sweeps`] (two AVX-512 registers per output column).
const SWEEP_ROWS: usize = 32;

multiversion! {
    /// `out[i][j] = Σ_p at[p·cs + i]·b[p·n + j]`: `a` stored by columns (column `p` of `a`
    /// is `at[p·cs..p·cs + m]`), `b` row-major `k × n`, `n ≤ THIN`. Each output sums its
    /// terms in order of `p`, vectorised over `i`.
    fn column_sweeps(
        at: &[f32],
        cs: usize,
        m: usize,
        b: &[f32],
        n: usize,
        out: &mut [MaybeUninit<f32>],
    ) {
        match n {
            1 => sweeps::<1>(at, cs, m, b, out),
            2 => sweeps::<2>(at, cs, m, b, out),
            3 => sweeps::<3>(at, cs, m, b, out),
            4 => sweeps::<4>(at, cs, m, b, out),
            5 => sweeps::<5>(at, cs, m, b, out),
            6 => sweeps::<6>(at, cs, m, b, out),
            7 => sweeps::<7>(at, cs, m, b, out),
            _ => sweeps::<8>(at, cs, m, b, out),
        }
    }
}

#[inline(always)]
fn sweeps<const N: usize>(
    at: &[f32],
    cs: usize,
    m: usize,
    b: &[f32],
    out: &mut [MaybeUninit<f32>],
) {
    let k = b.len() / N;
    let rows = |p: usize, i0: usize| -> &[f32; SWEEP_ROWS] {
        at[p * cs + i0..p * cs + i0 + SWEEP_ROWS]
            .try_into()
            .expect("a block of SWEEP_ROWS")
    };
    let terms = |p: usize| -> &[f32; N] { b[p * N..(p + 1) * N].try_into().expect("a row of N") };
    let full = m / SWEEP_ROWS * SWEEP_ROWS;
    for i0 in (0..full).step_by(SWEEP_ROWS) {
        let mut acc = [[0.0f32; SWEEP_ROWS]; N];
        let (col, bp) = (rows(0, i0), terms(0));
        for j in 0..N {
            for l in 0..SWEEP_ROWS {
                acc[j][l] = col[l] * bp[j];
            }
        }
        for p in 1..k {
            let (col, bp) = (rows(p, i0), terms(p));
            for j in 0..N {
                for l in 0..SWEEP_ROWS {
                    acc[j][l] += col[l] * bp[j];
                }
            }
        }
        for (l, o) in out[i0 * N..(i0 + SWEEP_ROWS) * N]
            .chunks_exact_mut(N)
            .enumerate()
        {
            for j in 0..N {
                o[j].write(acc[j][l]);
            }
        }
    }
    for i in full..m {
        for j in 0..N {
            let s = (1..k).fold(at[i] * b[j], |s, p| s + at[p * cs + i] * b[p * N + j]);
            out[i * N + j].write(s);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn values(n: usize, seed: u32) -> Vec<f32> {
        (0..n)
            .map(|i| {
                let h = (i as u32)
                    .wrapping_mul(2654435761)
                    .wrapping_add(seed.wrapping_mul(97));
                (h % 2001) as f32 / 1000.0 - 1.0
            })
            .collect()
    }

    /// Runs `thin_product` on row-major or transposed storage of `a` and `b`.
    fn product(m: usize, n: usize, k: usize, ta: bool, tb: bool) -> Option<Vec<f32>> {
        let (av, bv) = (values(m * k + 3, 1), values(k * n + 5, 2));
        let a = View {
            data: &av,
            offset: 3,
            rs: if ta { 1 } else { k },
            cs: if ta { m } else { 1 },
        };
        let b = View {
            data: &bv,
            offset: 5,
            rs: if tb { 1 } else { n },
            cs: if tb { k } else { 1 },
        };
        let mut out = vec![MaybeUninit::uninit(); m * n];
        thin_product(m, n, k, a, b, &mut out).then(|| {
            out.iter()
                // SAFETY: `thin_product` wrote every output when it said yes.
                .map(|v| unsafe { v.assume_init() })
                .collect()
        })
    }

    fn exact(m: usize, n: usize, k: usize, ta: bool, tb: bool) -> Vec<f64> {
        let (av, bv) = (values(m * k + 3, 1), values(k * n + 5, 2));
        let a = |i: usize, p: usize| av[3 + if ta { p * m + i } else { i * k + p }] as f64;
        let b = |p: usize, j: usize| bv[5 + if tb { j * k + p } else { p * n + j }] as f64;
        (0..m * n)
            .map(|ij| (0..k).map(|p| a(ij / n, p) * b(p, ij % n)).sum())
            .collect()
    }

    #[test]
    fn thin_products_match_the_exact_product_for_every_layout() {
        for &(m, n, k) in &[
            (256, 256, 3),
            (37, 41, 8),
            (5, 1, 1),
            (256, 2, 256),
            (70, 7, 131),
            (33, 8, 9),
            (1, 3, 300),
            (70, 1, 131),
            (64, 9, 5),
        ] {
            for (ta, tb) in [(false, false), (true, false), (false, true), (true, true)] {
                let thin = k <= FEW_TERMS || (n <= THIN && (ta || n > 1));
                let Some(got) = product(m, n, k, ta, tb) else {
                    assert!(!thin, "{m}x{n}x{k} {ta} {tb} left to gemm");
                    continue;
                };
                assert!(thin, "{m}x{n}x{k} {ta} {tb} not left to gemm");
                for (g, e) in got.iter().zip(exact(m, n, k, ta, tb)) {
                    let tol = 1e-5 * (k as f64).sqrt().max(1.0);
                    assert!(
                        (*g as f64 - e).abs() <= tol,
                        "{m}x{n}x{k} {ta} {tb}: {g} vs {e}"
                    );
                }
            }
        }
    }

    #[test]
    fn wide_products_are_left_to_gemm() {
        assert!(product(64, 9, 9, false, false).is_none());
        assert!(product(64, 256, 256, true, true).is_none());
    }

    /// The documented orders, written out one scalar at a time.
    fn row_dot_reference(x: &[f32], y: &[f32]) -> f32 {
        let blocks = x.len() / LANES;
        let mut acc = [[0.0f32; LANES]; CHAINS];
        for i in 0..blocks {
            for l in 0..LANES {
                acc[i % CHAINS][l] += x[i * LANES + l] * y[i * LANES + l];
            }
        }
        let lane: Vec<f32> = (0..LANES)
            .map(|l| (acc[0][l] + acc[1][l]) + (acc[2][l] + acc[3][l]))
            .collect();
        let mut v = lane;
        for w in [8, 4, 2, 1] {
            for l in 0..w {
                v[l] += v[l + w];
            }
        }
        (blocks * LANES..x.len()).fold(v[0], |s, p| s + x[p] * y[p])
    }

    #[test]
    fn each_kernel_keeps_its_documented_order_bit_for_bit() {
        // Row dots (n ≤ THIN, a by rows): whole groups, 1–3 blocks left, a tail.
        for (m, n, k) in [(9, 3, 75), (4, 4, 256), (3, 2, 40), (5, 8, 179), (2, 2, 15)] {
            let got = product(m, n, k, false, false).unwrap();
            let (av, bv) = (values(m * k + 3, 1), values(k * n + 5, 2));
            for i in 0..m {
                for j in 0..n {
                    let x = &av[3 + i * k..3 + (i + 1) * k];
                    let y: Vec<f32> = (0..k).map(|p| bv[5 + p * n + j]).collect();
                    let want = row_dot_reference(x, &y);
                    assert_eq!(got[i * n + j].to_bits(), want.to_bits(), "{m}x{n}x{k}");
                    let mut portable = [MaybeUninit::uninit()];
                    row_dots_portable(x, &y, &mut portable);
                    // SAFETY: `row_dots_portable` wrote its one output.
                    let portable = unsafe { portable[0].assume_init() };
                    assert_eq!(portable.to_bits(), want.to_bits(), "portable {m}x{n}x{k}");
                }
            }
        }
        // Column sweeps (a by columns) and few terms: in order of p.
        for (m, n, k, ta) in [(45, 2, 40, true), (19, 30, 4, false)] {
            let got = product(m, n, k, ta, false).unwrap();
            let (av, bv) = (values(m * k + 3, 1), values(k * n + 5, 2));
            let a = |i: usize, p: usize| av[3 + if ta { p * m + i } else { i * k + p }];
            for i in 0..m {
                for j in 0..n {
                    let s =
                        (1..k).fold(a(i, 0) * bv[5 + j], |s, p| s + a(i, p) * bv[5 + p * n + j]);
                    assert_eq!(got[i * n + j].to_bits(), s.to_bits(), "{m}x{n}x{k}");
                }
            }
        }
    }
}
