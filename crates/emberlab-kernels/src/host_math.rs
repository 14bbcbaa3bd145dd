//! Double-precision `ln`, `sin`/`cos` of a turn, `exp` and `tanh` for sampling on the host,
//! written as straight-line code (bit tricks, polynomials, selects) so that loops over
//! blocks of them vectorise under [`crate::multiversion!`].
//!
//! The C library's scalar `ln`, `sin_cos` and `tanhf` cost 30–35 ns per normal sample and
//! 27 ns per squashed action on the machines we measure; a frozen policy at batch 16
//! spent more time drawing and squashing its 96 actions than in half of its network.
//! Each function here is accurate to about one unit in the last place of an `f64`, so
//! rounding its result to `f32` gives the correctly rounded value except within a few
//! `f64` ulps of an `f32` rounding boundary (measured: no difference from the C library
//! in millions of normal samples; see the tests). The same operations run in the same
//! order on every vector width (no fused multiply-add), so the results are the same on
//! every CPU.

use std::f64::consts::TAU;

/// `ln 2` in two parts: the high part has 32 significant bits, so `k · LN2_HI` is exact
/// for every exponent `k` of an `f64`; the low part is `ln 2 − LN2_HI` to double precision.
const LN2_HI: f64 = 0.693_147_180_369_123_8;
const LN2_LO: f64 = 1.908_214_929_270_587_7e-10;

/// `1.5 · 2^52`: an `f64` near it has unit spacing, so `y + SHIFTER` rounds `y` to a whole
/// number held in the low bits of the mantissa (`2^51 + k`).
const SHIFTER: f64 = 6_755_399_441_055_744.0;

/// `ln x` for a positive, normal, finite `x` (the uniforms of Box–Muller: `(0, 1]`).
///
/// `x = 2^k · m` with `m` in `[√½, √2)`, `f = m − 1`, `s = f / (2 + f)`; then
/// `ln m = 2 atanh s = f − f²/2 + s (f²/2 + R(s²))` with `R(z) = Σ 2 z^i / (2i + 1)`
/// (nine terms: `s² ≤ 0.0295` leaves the tenth below `1e-17` of the result).
#[inline(always)]
pub fn ln_positive(x: f64) -> f64 {
    const SQRT_HALF_BITS: u64 = 0x3fe6_a09e_667f_3bcd;
    const MANTISSA: u64 = (1 << 52) - 1;
    let shifted = x.to_bits().wrapping_sub(SQRT_HALF_BITS);
    // `k`, the power of two: the arithmetic shift of the offset exponent.
    let k = (shifted as i64) >> 52;
    let m = f64::from_bits((shifted & MANTISSA) + SQRT_HALF_BITS);
    let f = m - 1.0;
    let s = f / (2.0 + f);
    let z = s * s;
    let mut r = 2.0 / 19.0;
    r = r * z + 2.0 / 17.0;
    r = r * z + 2.0 / 15.0;
    r = r * z + 2.0 / 13.0;
    r = r * z + 2.0 / 11.0;
    r = r * z + 2.0 / 9.0;
    r = r * z + 2.0 / 7.0;
    r = r * z + 2.0 / 5.0;
    r = r * z + 2.0 / 3.0;
    r *= z;
    let hfsq = 0.5 * f * f;
    let dk = small_int_to_f64(k);
    dk * LN2_HI + (f - (hfsq - (s * (hfsq + r) + dk * LN2_LO)))
}

/// `k as f64` for `|k| < 2^51` through the bits of `2^52 + 2^51 + k` (AVX2 has no vector
/// conversion from 64-bit integers).
#[inline(always)]
fn small_int_to_f64(k: i64) -> f64 {
    f64::from_bits(SHIFTER.to_bits().wrapping_add(k as u64)) - SHIFTER
}

/// `(sin 2πu, cos 2πu)` for `u` in `[0, 1)`: `u = q/4 + t` with `q` a whole number and
/// `|t| ≤ 1/8` (both exact), Taylor polynomials of `θ = 2πt` on `[−π/4, π/4]`, then the
/// quarter turns `q` as swaps and signs.
#[inline(always)]
pub fn sin_cos_turn(u: f64) -> (f64, f64) {
    let q = (u * 4.0 + 0.5).floor();
    let t = u - q * 0.25;
    let th = t * TAU;
    let z = th * th;
    let mut ps = -1.0 / 1_307_674_368_000.0; // −1/15!
    ps = ps * z + 1.0 / 6_227_020_800.0; // 1/13!
    ps = ps * z - 1.0 / 39_916_800.0;
    ps = ps * z + 1.0 / 362_880.0;
    ps = ps * z - 1.0 / 5_040.0;
    ps = ps * z + 1.0 / 120.0;
    ps = ps * z - 1.0 / 6.0;
    let sin = th + th * z * ps;
    let mut pc = 1.0 / 20_922_789_888_000.0; // 1/16!
    pc = pc * z - 1.0 / 87_178_291_200.0; // −1/14!
    pc = pc * z + 1.0 / 479_001_600.0;
    pc = pc * z - 1.0 / 3_628_800.0;
    pc = pc * z + 1.0 / 40_320.0;
    pc = pc * z - 1.0 / 720.0;
    pc = pc * z + 1.0 / 24.0;
    let cos = (1.0 - 0.5 * z) + z * z * pc;
    // q ∈ {0, 1, 2, 3, 4}: a quarter turn maps (sin, cos) to (cos, −sin).
    let odd = q == 1.0 || q == 3.0;
    let (s, c) = if odd { (cos, sin) } else { (sin, cos) };
    let s = if q == 2.0 || q == 3.0 { -s } else { s };
    let c = if q == 1.0 || q == 2.0 { -c } else { c };
    (s, c)
}

/// `e^x`, for `x` in `[−708, 709]` (clamped there; NaN stays NaN): `x = k ln 2 + r` with
/// `|r| ≤ ln 2 / 2`, a Taylor polynomial of degree 13 in `r`, times `2^k` from the bits.
#[inline(always)]
pub fn exp(x: f64) -> f64 {
    let x = x.clamp(-708.0, 709.0);
    // Adding `SHIFTER` rounds to a whole number.
    let kf = x * std::f64::consts::LOG2_E + SHIFTER;
    let k = kf - SHIFTER;
    let r = (x - k * LN2_HI) - k * LN2_LO;
    let mut p = 1.0 / 6_227_020_800.0; // 1/13!
    for d in [
        479_001_600.0,
        39_916_800.0,
        3_628_800.0,
        362_880.0,
        40_320.0,
        5_040.0,
    ] {
        p = p * r + 1.0 / d;
    }
    for d in [720.0, 120.0, 24.0, 6.0, 2.0, 1.0, 1.0] {
        p = p * r + 1.0 / d;
    }
    // The low bits of `kf` hold `2^51 + k`: adding the bias and shifting leaves `k + 1023`
    // in the exponent field.
    let scale = f64::from_bits(kf.to_bits().wrapping_add(1023) << 52);
    p * scale
}

/// `tanh x` rounded to `f32` (NaN stays NaN): `(1 − e^{−2|x|}) / (1 + e^{−2|x|})` with the
/// sign of `x`, and its Taylor series below `|x| = 1/64`, where the difference loses bits.
#[inline(always)]
pub fn tanh(x: f32) -> f32 {
    let x = x as f64;
    let ax = x.abs();
    let e = exp(-2.0 * ax);
    let big = (1.0 - e) / (1.0 + e);
    let z = x * x;
    let small = x + x * z * (-1.0 / 3.0 + z * (2.0 / 15.0 + z * (-17.0 / 315.0)));
    let y = if ax < 1.0 / 64.0 { small } else { big };
    y.copysign(x) as f32
}

#[cfg(test)]
mod tests {
    use super::*;
    use emberlab_core::EmberRng;

    /// ulps between two finite `f64`s of the same sign.
    fn ulps(a: f64, b: f64) -> u64 {
        (a.to_bits() as i64 - b.to_bits() as i64).unsigned_abs()
    }

    #[test]
    fn ln_is_within_two_ulps_of_the_c_library() {
        let mut rng = EmberRng::seed_from(1);
        let mut worst = 0;
        for i in 0..1_000_000 {
            // Uniforms as Box–Muller draws them, then powers of two and their neighbours.
            let x = if i % 2 == 0 {
                1.0 - rng.next_f64()
            } else {
                let e = i / 2 % 60;
                f64::from_bits(2f64.powi(-e).to_bits() - (i as u64 / 120 % 3))
            };
            worst = worst.max(ulps(ln_positive(x), x.ln()));
        }
        assert!(worst <= 2, "ln: {worst} ulps");
        assert_eq!(ln_positive(1.0), 0.0);
        assert!(ulps(ln_positive(2f64.powi(-53)), -53.0 * std::f64::consts::LN_2) <= 1);
    }

    #[test]
    fn sin_cos_of_a_turn_is_within_the_c_librarys_rounding_of_it() {
        let mut rng = EmberRng::seed_from(2);
        let (mut worst, mut worst_reduced) = (0.0f64, 0.0f64);
        let quarters = [0.0, 0.125, 0.25, 0.375, 0.5, 0.625, 0.75, 0.875];
        for i in 0..1_000_000 {
            let u = quarters.get(i).copied().unwrap_or_else(|| rng.next_f64());
            let (s, c) = sin_cos_turn(u);
            let (rs, rc) = (TAU * u).sin_cos();
            worst = worst.max((s - rs).abs()).max((c - rc).abs());
            // The C library on the same exact reduction `u = q/4 + t`, rotated by `q`.
            let q = (u * 4.0).round();
            let (ts, tc) = (TAU * (u - q * 0.25)).sin_cos();
            let (rs, rc) = [(ts, tc), (tc, -ts), (-ts, -tc), (-tc, ts)][q as usize % 4];
            worst_reduced = worst_reduced.max((s - rs).abs()).max((c - rc).abs());
        }
        // The C library's argument `TAU · u` is off by up to half an ulp of 2π (4.4e-16)
        // plus `u` times the rounding of 2π itself (2.4e-16); ours is reduced exactly.
        assert!(worst < 8e-16, "sin/cos: {worst:e}");
        assert!(
            worst_reduced <= f64::EPSILON,
            "sin/cos: {worst_reduced:e} after reduction"
        );
        assert_eq!(sin_cos_turn(0.0), (0.0, 1.0));
        assert_eq!(sin_cos_turn(0.25), (1.0, -0.0));
        assert_eq!(sin_cos_turn(0.5), (-0.0, -1.0));
        assert_eq!(sin_cos_turn(0.75), (-1.0, 0.0));
    }

    #[test]
    fn exp_is_within_two_ulps_of_the_c_library() {
        let mut rng = EmberRng::seed_from(3);
        let mut worst = 0;
        for _ in 0..1_000_000 {
            let x = (rng.next_f64() - 0.5) * 1400.0;
            worst = worst.max(ulps(exp(x), x.exp()));
        }
        for x in [-708.0, -20.0, -1.0, 0.0, 1e-300, 0.5, 2.0, 709.0] {
            worst = worst.max(ulps(exp(x), f64::exp(x)));
        }
        assert!(worst <= 2, "exp: {worst} ulps");
        assert!(exp(f64::NAN).is_nan());
        assert_eq!(exp(-1e9), exp(-708.0));
    }

    #[test]
    fn tanh_rounds_like_the_c_librarys_double_tanh_and_keeps_nan_and_the_sign() {
        let mut rng = EmberRng::seed_from(4);
        let (mut differ, mut worst) = (0, 0u32);
        let n = 2_000_000;
        for i in 0..n {
            let scale = [0.001, 0.03, 1.0, 6.0, 30.0][i % 5];
            let x = ((rng.next_f64() - 0.5) * 2.0 * scale) as f32;
            // The reference rounds the C library's double `tanh` (its `tanhf` is itself
            // up to 2 ulps off the correctly rounded value).
            let (a, b) = (tanh(x), (x as f64).tanh() as f32);
            if a != b {
                differ += 1;
                worst = worst.max((a.to_bits() as i32 - b.to_bits() as i32).unsigned_abs());
            }
        }
        assert!(
            worst <= 1,
            "tanh: {worst} ulps from the rounded double tanh"
        );
        assert!(differ * 100_000 < n, "tanh: {differ} of {n} differ");
        assert!(tanh(f32::NAN).is_nan());
        assert_eq!(tanh(0.0).to_bits(), 0.0f32.to_bits());
        assert_eq!(tanh(-0.0).to_bits(), (-0.0f32).to_bits());
        assert_eq!((tanh(100.0), tanh(-100.0), tanh(1e-30)), (1.0, -1.0, 1e-30));
    }
}
