//! Element-wise host kernels written to vectorise, each compiled for AVX-512, AVX2 and the
//! baseline and picked at run time ([`multiversion!`](crate::multiversion)): `tanh` and
//! its derivative, ReLU and its derivative, linear interpolation; and a dot product
//! ([`dot`]) to inline into such functions.
//!
//! burn's CPU backends call the C library's scalar `tanhf` per element; a PPO CartPole run
//! spent half of its CPU there (`perf record`). Here `tanh` is a rational function of `x²`
//! on `[-9, 9]` (degree 13 over degree 6, the minimax form Eigen and XLA use; the
//! coefficients are theirs), which LLVM turns into straight-line SIMD code: selects,
//! multiplies, adds and one divide per lane.
//!
//! **Reproducible on every CPU.** The same operations run in the same order on every
//! path (no fused multiply-add, which Rust never forms on its own), so the AVX-512, AVX2
//! and SSE2 builds of a loop give bit-identical results; only the lane count differs. The
//! in-place ReLU loops take AVX intrinsics on CPUs without AVX-512 (module `avx`): the
//! same bits, without the masked stores LLVM makes of them.

use std::mem::MaybeUninit;

/// Past this `|x|` the rational form leaves `[-1, 1]` and `tanh(x)` rounds to `±1` in `f32`
/// anyway.
const CLAMP: f32 = 7.905_311;
/// Below this `|x|`, `tanh(x) = x` in `f32`.
const TINY: f32 = 0.0004;

const A1: f32 = 4.893_524_5e-3;
const A3: f32 = 6.372_619_3e-4;
const A5: f32 = 1.485_722_4e-5;
const A7: f32 = 5.122_297e-8;
const A9: f32 = -8.604_672e-11;
const A11: f32 = 2.000_188e-13;
const A13: f32 = -2.760_768_5e-16;
const B0: f32 = 4.893_525e-3;
const B2: f32 = 2.268_434_6e-3;
const B4: f32 = 1.185_347_1e-4;
const B6: f32 = 1.198_258_4e-6;

/// `tanh(x)` to within 8 units in the last place (4.2e-7 absolute; 7 ulps measured near
/// `|x| = 5.9`, fewer elsewhere); odd; NaN stays NaN.
#[inline(always)]
pub fn tanh_f32(x: f32) -> f32 {
    let tiny = x.abs() < TINY;
    let c = x.clamp(-CLAMP, CLAMP);
    let x2 = c * c;
    let mut p = A13;
    p = p * x2 + A11;
    p = p * x2 + A9;
    p = p * x2 + A7;
    p = p * x2 + A5;
    p = p * x2 + A3;
    p = p * x2 + A1;
    let mut q = B6;
    q = q * x2 + B4;
    q = q * x2 + B2;
    q = q * x2 + B0;
    let y = c * p / q;
    if tiny { x } else { y }
}

/// A function whose body is compiled three times (AVX-512F, AVX2, the build's baseline) and
/// picked at run time by the CPU's features: loops over slices then run the widest
/// vectors the machine has without a `target-cpu` build flag. It may return a value
/// (`fn f(…) -> T`); it takes no generics or lifetimes of its own. Write the body without
/// fused multiply-adds (Rust never forms them on its own) and every path gives the same
/// bits, only the lane count differs.
///
/// ```
/// emberlab_kernels::multiversion! {
///     /// `x ← 2x`.
///     pub fn double(x: &mut [f32]) {
///         x.iter_mut().for_each(|v| *v *= 2.0);
///     }
/// }
/// let mut v = [1.0f32, 2.0];
/// double(&mut v);
/// assert_eq!(v, [2.0, 4.0]);
///
/// emberlab_kernels::multiversion! {
///     /// `Σ x·y`, vectorised through [`emberlab_kernels::kernels::dot`].
///     pub fn inner(x: &[f32], y: &[f32]) -> f32 {
///         emberlab_kernels::kernels::dot(x, y)
///     }
/// }
/// assert_eq!(inner(&[1.0, 2.0], &[3.0, 4.0]), 11.0);
/// ```
#[macro_export]
macro_rules! multiversion {
    (
        $(#[$doc:meta])*
        $vis:vis fn $name:ident($($arg:ident: $ty:ty),* $(,)?) $(-> $ret:ty)? $body:block
    ) => {
        $(#[$doc])*
        $vis fn $name($($arg: $ty),*) $(-> $ret)? {
            #[inline(always)]
            fn body($($arg: $ty),*) $(-> $ret)? $body
            #[cfg(target_arch = "x86_64")]
            {
                #[target_feature(enable = "avx512f")]
                unsafe fn avx512($($arg: $ty),*) $(-> $ret)? { body($($arg),*) }
                #[target_feature(enable = "avx2")]
                unsafe fn avx2($($arg: $ty),*) $(-> $ret)? { body($($arg),*) }
                if std::arch::is_x86_feature_detected!("avx512f") {
                    // SAFETY: the CPU has AVX-512F (checked just above).
                    return unsafe { avx512($($arg),*) };
                }
                if std::arch::is_x86_feature_detected!("avx2") {
                    // SAFETY: the CPU has AVX2 (checked just above).
                    return unsafe { avx2($($arg),*) };
                }
            }
            body($($arg),*)
        }
    };
}

/// `Σ x·y` over equal-length slices in 16 independent lanes, then the lanes in order: a
/// sum LLVM vectorises at the width of the caller's target features, so call it from a
/// [`multiversion!`](crate::multiversion) body. The same bits on every path (the lanes
/// do not depend on the vector width).
///
/// # Panics
/// If the slices' lengths differ.
#[inline(always)]
pub fn dot(x: &[f32], y: &[f32]) -> f32 {
    const LANES: usize = 16;
    assert_eq!(x.len(), y.len(), "dot of slices of different lengths");
    let mut acc = [0.0f32; LANES];
    let (xs, ys) = (x.chunks_exact(LANES), y.chunks_exact(LANES));
    let tail: f32 = xs
        .remainder()
        .iter()
        .zip(ys.remainder())
        .map(|(a, b)| a * b)
        .sum();
    for (xc, yc) in xs.zip(ys) {
        for l in 0..LANES {
            acc[l] += xc[l] * yc[l];
        }
    }
    acc.iter().sum::<f32>() + tail
}

multiversion! {
    /// `x ← tanh(x)` element-wise ([`tanh_f32`]).
    pub fn tanh_in_place(x: &mut [f32]) {
        for v in x.iter_mut() {
            *v = tanh_f32(*v);
        }
    }
}

/// `max(x, 0)` as flex's `relu` computes it (NaN propagates, as in PyTorch).
#[inline(always)]
pub fn relu_f32(x: f32) -> f32 {
    if x.is_nan() || x > 0.0 { x } else { 0.0 }
}

/// `v` where [`relu_f32`] keeps its argument `y` (`y > 0` or NaN), `+0` where it sends
/// `+0`: a bitwise AND with a lane mask.
#[inline(always)]
fn kept_where_positive(v: f32, y: f32) -> f32 {
    let mask = if y <= 0.0 { 0 } else { u32::MAX };
    f32::from_bits(v.to_bits() & mask)
}

/// `x ← max(x, 0)` element-wise ([`relu_f32`]'s bits).
pub fn relu_in_place(x: &mut [f32]) {
    #[cfg(target_arch = "x86_64")]
    if avx_without_avx512() {
        // SAFETY: the CPU has AVX (checked just above).
        return unsafe { avx::relu_in_place(x) };
    }
    relu_in_place_wide(x);
}

multiversion! {
    /// [`relu_in_place`] as plain Rust.
    fn relu_in_place_wide(x: &mut [f32]) {
        for v in x.iter_mut() {
            *v = kept_where_positive(*v, *v);
        }
    }
}

/// Whether the in-place ReLU loops take [`avx`]'s intrinsics: AVX without AVX-512. From
/// the plain loops LLVM makes masked stores of the zeros (`vmaskmovps`, `vpmaskmovd`),
/// which AMD cores run microcoded: 34 µs against 9 µs for 65,536 floats on Zen 3, 4.3% of
/// a SAC run. AVX-512's masked stores are ordinary instructions.
#[cfg(target_arch = "x86_64")]
fn avx_without_avx512() -> bool {
    !std::arch::is_x86_feature_detected!("avx512f") && std::arch::is_x86_feature_detected!("avx")
}

/// The in-place ReLU loops with AVX intrinsics: a compare, an AND-NOT and a plain store per
/// 8 lanes; the same bits as the plain loops.
#[cfg(target_arch = "x86_64")]
mod avx {
    use super::kept_where_positive;
    use std::arch::x86_64::*;

    /// Lanes of one AVX register.
    const LANES: usize = 8;

    /// `v` with the lanes where `y ≤ 0` set to `+0` (NaN is not `≤ 0`: kept).
    #[target_feature(enable = "avx")]
    fn kept(v: __m256, y: __m256) -> __m256 {
        _mm256_andnot_ps(_mm256_cmp_ps::<_CMP_LE_OQ>(y, _mm256_setzero_ps()), v)
    }

    /// Stores `v` at `p` with a plain `vmovups`: from `_mm256_storeu_ps` of a value that
    /// equals the loaded one in the kept lanes, LLVM still makes a masked store.
    ///
    /// # Safety
    /// `p` is 8 writable floats.
    #[target_feature(enable = "avx")]
    unsafe fn store(p: *mut f32, v: __m256) {
        // SAFETY: the caller's contract; the instruction writes those 32 bytes only.
        unsafe {
            std::arch::asm!(
                "vmovups [{p}], {v}",
                p = in(reg) p,
                v = in(ymm_reg) v,
                options(nostack, preserves_flags)
            );
        }
    }

    #[target_feature(enable = "avx")]
    pub(super) fn relu_in_place(x: &mut [f32]) {
        let mut chunks = x.chunks_exact_mut(LANES);
        for c in &mut chunks {
            // SAFETY: `c` is 8 floats, read and written.
            unsafe {
                let v = _mm256_loadu_ps(c.as_ptr());
                store(c.as_mut_ptr(), kept(v, v));
            }
        }
        for v in chunks.into_remainder() {
            *v = kept_where_positive(*v, *v);
        }
    }

    #[target_feature(enable = "avx")]
    pub(super) fn relu_backward_in_place(grad: &mut [f32], y: &[f32]) {
        let mut chunks = grad.chunks_exact_mut(LANES);
        let mut ys = y.chunks_exact(LANES);
        for (c, y) in (&mut chunks).zip(&mut ys) {
            // SAFETY: `c` and `y` are 8 floats each; `c` is written.
            unsafe {
                let v = kept(_mm256_loadu_ps(c.as_ptr()), _mm256_loadu_ps(y.as_ptr()));
                store(c.as_mut_ptr(), v);
            }
        }
        for (g, &y) in chunks.into_remainder().iter_mut().zip(ys.remainder()) {
            *g = kept_where_positive(*g, y);
        }
    }
}

multiversion! {
    /// `x ← max(x + b, 0)` for every row of `x` (`b`'s length long): a hidden layer's bias
    /// and ReLU on its product, as `+` and then [`relu_f32`].
    ///
    /// # Panics
    /// If `b` is empty or `x`'s length is not a multiple of it.
    pub fn bias_relu_rows(x: &mut [f32], b: &[f32]) {
        assert!(
            !b.is_empty() && x.len().is_multiple_of(b.len()),
            "bias_relu_rows: rows of {} values, bias of {}",
            x.len(),
            b.len()
        );
        for row in x.chunks_exact_mut(b.len()) {
            for (v, &c) in row.iter_mut().zip(b) {
                *v = relu_f32(*v + c);
            }
        }
    }
}

/// `grad ← grad` where `y > 0` (or NaN), `+0` elsewhere: the gradient through
/// `y = relu(x)`, from its output. A mask, not a branch: the signs are random, so a
/// branch mispredicts half the time (it made this loop 20% of a SAC update).
///
/// # Panics
/// If the slices differ in length.
pub fn relu_backward_in_place(grad: &mut [f32], y: &[f32]) {
    assert_eq!(
        grad.len(),
        y.len(),
        "relu_backward: grad and output lengths differ"
    );
    #[cfg(target_arch = "x86_64")]
    if avx_without_avx512() {
        // SAFETY: the CPU has AVX (checked just above).
        return unsafe { avx::relu_backward_in_place(grad, y) };
    }
    relu_backward_wide(grad, y);
}

multiversion! {
    /// [`relu_backward_in_place`] as plain Rust.
    fn relu_backward_wide(grad: &mut [f32], y: &[f32]) {
        for (g, &y) in grad.iter_mut().zip(y) {
            *g = kept_where_positive(*g, y);
        }
    }
}

multiversion! {
    /// `a[i] += b[i]`.
    ///
    /// # Panics
    /// If the slices differ in length.
    pub fn add_in_place(a: &mut [f32], b: &[f32]) {
        assert_eq!(a.len(), b.len(), "add: lengths differ");
        for (x, &y) in a.iter_mut().zip(b) {
            *x += y;
        }
    }
}

multiversion! {
    /// `out[i] = a[i]·ka + b[i]·kb` (two products and a sum, each rounded), written into
    /// `out` whether or not it was initialised.
    ///
    /// # Panics
    /// If the slices differ in length.
    pub fn lerp_into(out: &mut [MaybeUninit<f32>], a: &[f32], b: &[f32], ka: f32, kb: f32) {
        assert!(out.len() == a.len() && a.len() == b.len(), "lerp: lengths differ");
        for ((o, &x), &y) in out.iter_mut().zip(a).zip(b) {
            o.write(x * ka + y * kb);
        }
    }
}

multiversion! {
    /// `grad ← grad · (1 − y²)`: the gradient through `y = tanh(x)`, from its output.
    ///
    /// # Panics
    /// If the slices differ in length.
    pub fn tanh_backward_in_place(grad: &mut [f32], y: &[f32]) {
        assert_eq!(grad.len(), y.len(), "tanh_backward: grad and output lengths differ");
        for (g, &y) in grad.iter_mut().zip(y) {
            *g *= 1.0 - y * y;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn ulps(a: f32, b: f32) -> u32 {
        if a == b {
            return 0;
        }
        let (a, b) = (a.to_bits() as i32, b.to_bits() as i32);
        a.abs_diff(b)
    }

    multiversion! {
        /// [`dot`] at the CPU's widest vectors.
        fn widest_dot(x: &[f32], y: &[f32]) -> f32 {
            dot(x, y)
        }
    }

    #[test]
    fn dot_sums_every_term_in_its_lanes_on_every_path() {
        let mut seed = 3u32;
        let mut next = || {
            seed = seed.wrapping_mul(1_664_525).wrapping_add(1_013_904_223);
            (seed >> 8) as f32 / (1 << 24) as f32 - 0.5
        };
        for len in [0, 1, 15, 16, 17, 33, 256, 259] {
            let x: Vec<f32> = (0..len).map(|_| next()).collect();
            let y: Vec<f32> = (0..len).map(|_| next()).collect();
            let exact: f64 = x.iter().zip(&y).map(|(&a, &b)| a as f64 * b as f64).sum();
            let got = dot(&x, &y);
            assert!(
                (got as f64 - exact).abs() < 1e-5,
                "len {len}: {got} vs {exact}"
            );
            // The lane order, written out: lane l sums terms l, l + 16, …, then the lanes,
            // then the tail.
            let full = len / 16 * 16;
            let mut lanes = [0.0f32; 16];
            for i in 0..full {
                lanes[i % 16] += x[i] * y[i];
            }
            let tail: f32 = (full..len).map(|i| x[i] * y[i]).sum();
            let expected = lanes.iter().sum::<f32>() + tail;
            assert_eq!(got.to_bits(), expected.to_bits(), "len {len}");
            assert_eq!(
                widest_dot(&x, &y).to_bits(),
                expected.to_bits(),
                "len {len}"
            );
        }
    }

    #[test]
    #[should_panic(expected = "different lengths")]
    fn dot_refuses_slices_of_different_lengths() {
        dot(&[1.0, 2.0], &[1.0]);
    }

    #[test]
    fn tanh_matches_the_correctly_rounded_value() {
        let mut worst = (0u32, 0.0f32);
        let mut max_abs = 0.0f64;
        let mut x = -12.0f32;
        while x <= 12.0 {
            let want = (x as f64).tanh();
            let got = tanh_f32(x);
            let u = ulps(got, want as f32);
            if u > worst.0 {
                worst = (u, x);
            }
            max_abs = max_abs.max((got as f64 - want).abs());
            x += 1.37e-4;
        }
        // Measured: 7 ulps (4.1e-7) at |x| ≈ 5.9, where tanh(x) ≈ 1 − 1.5e-5.
        assert!(max_abs < 5e-7, "max |error| {max_abs}");
        assert!(worst.0 <= 8, "{} ulps at x = {}", worst.0, worst.1);
        assert_eq!(tanh_f32(0.0), 0.0);
        assert_eq!(tanh_f32(-1e-30), -1e-30);
        assert_eq!(tanh_f32(1e30), 1.0);
        assert_eq!(tanh_f32(f32::NEG_INFINITY), -1.0);
        assert!(tanh_f32(f32::NAN).is_nan());
        for x in [0.1f32, 0.5, 1.0, 3.0] {
            assert_eq!(tanh_f32(-x), -tanh_f32(x), "odd at {x}");
        }
    }

    #[test]
    fn the_vector_loops_agree_with_the_scalar_function_bit_for_bit() {
        let xs: Vec<f32> = (0..1037).map(|i| (i as f32 - 518.0) * 0.0173).collect();
        let mut ys = xs.clone();
        tanh_in_place(&mut ys);
        for (x, y) in xs.iter().zip(&ys) {
            assert_eq!(y.to_bits(), tanh_f32(*x).to_bits(), "x = {x}");
        }
        let mut g = vec![2.0f32; ys.len()];
        tanh_backward_in_place(&mut g, &ys);
        for (g, y) in g.iter().zip(&ys) {
            assert_eq!(*g, 2.0 * (1.0 - y * y));
        }
    }

    #[test]
    fn relu_and_lerp_loops_agree_with_their_scalar_forms() {
        let mut xs: Vec<f32> = (0..1037).map(|i| (i as f32 - 518.0) * 0.0173).collect();
        xs[3] = f32::NAN;
        xs[5] = -0.0;
        let mut ys = xs.clone();
        relu_in_place(&mut ys);
        for (x, y) in xs.iter().zip(&ys) {
            assert_eq!(y.to_bits(), relu_f32(*x).to_bits(), "x = {x}");
        }
        let mut plain = xs.clone();
        relu_in_place_wide(&mut plain);
        assert!(
            plain
                .iter()
                .zip(&ys)
                .all(|(a, b)| a.to_bits() == b.to_bits())
        );
        assert!(ys[3].is_nan());
        // Negative gradients too: a dropped one is `+0`, as relu's backward writes.
        let grad = |i: usize| (i as f32 - 600.0) + 0.5;
        let mut g: Vec<f32> = (0..xs.len()).map(grad).collect();
        let mut plain = g.clone();
        relu_backward_in_place(&mut g, &ys);
        for (i, (g, y)) in g.iter().zip(&ys).enumerate() {
            let want = if y.is_nan() || *y > 0.0 { grad(i) } else { 0.0 };
            assert_eq!(g.to_bits(), want.to_bits(), "y = {y}");
        }
        relu_backward_wide(&mut plain, &ys);
        assert!(
            plain
                .iter()
                .zip(&g)
                .all(|(a, b)| a.to_bits() == b.to_bits())
        );
        let bias: Vec<f32> = (0..7).map(|i| i as f32 * 0.3 - 1.0).collect();
        let mut rows = xs[..1036].to_vec();
        bias_relu_rows(&mut rows, &bias);
        for (i, (v, x)) in rows.iter().zip(&xs).enumerate() {
            assert_eq!(v.to_bits(), relu_f32(x + bias[i % 7]).to_bits(), "x = {x}");
        }
        let mut out = vec![MaybeUninit::new(0.0f32); xs.len()];
        lerp_into(&mut out, &xs, &g, 0.995, 0.005);
        // SAFETY: initialised above (and written by `lerp_into`).
        let out: Vec<f32> = out.iter().map(|v| unsafe { v.assume_init() }).collect();
        for ((o, x), y) in out.iter().zip(&xs).zip(&g) {
            assert_eq!(o.to_bits(), (x * 0.995 + y * 0.005).to_bits());
        }
    }
}
