//! Statistics over runs and seeds: mean and sample standard deviation, the interquartile mean
//! (IQM) of Agarwal et al. (2021), percentile-bootstrap confidence intervals and linear
//! interpolation of learning curves onto a common env-step grid.
//!
//! Everything here is plain `f64` arithmetic with no dependency; the bootstrap draws from its
//! own seeded splitmix64 generator, so the same seed gives the same interval everywhere.

use anyhow::{Result, bail};

/// Mean and sample standard deviation (divisor `n - 1`) of `values`.
///
/// An empty slice gives `(NaN, NaN)`; a single value gives a standard deviation of `0.0` (no
/// spread can be observed). A NaN anywhere in `values` makes both results NaN.
///
/// ```
/// let (mean, std) = emberlab_cli::stats::mean_std(&[1.0, 2.0, 3.0, 4.0]);
/// assert_eq!(mean, 2.5);
/// assert!((std - 1.2909944487358056).abs() < 1e-12);
/// ```
pub fn mean_std(values: &[f64]) -> (f64, f64) {
    let n = values.len();
    if n == 0 {
        return (f64::NAN, f64::NAN);
    }
    let mean = values.iter().sum::<f64>() / n as f64;
    if n == 1 {
        return (mean, if mean.is_nan() { f64::NAN } else { 0.0 });
    }
    let ss: f64 = values.iter().map(|v| (v - mean) * (v - mean)).sum();
    (mean, (ss / (n - 1) as f64).sqrt())
}

/// Interquartile mean: the mean of the middle 50% of `values` (Agarwal et al., 2021,
/// "Deep RL at the Edge of the Statistical Precipice").
///
/// The sorted values are laid end to end, value `i` covering `[i, i + 1)`; the window
/// `[n/4, 3n/4)` is averaged, so when `n` is not a multiple of 4 the two boundary values
/// count with the fraction of them inside the window. For 9 values, `1, 3, …, 17`, that is
/// `(0.75·5 + 7 + 9 + 11 + 0.75·13) / 4.5 = 9`.
///
/// An empty slice gives NaN, and so does a NaN anywhere in `values`.
///
/// ```
/// use emberlab_cli::stats::iqm;
/// assert_eq!(iqm(&[1.0, 2.0, 3.0, 4.0, 5.0, 100.0]), 3.5);
/// ```
pub fn iqm(values: &[f64]) -> f64 {
    let n = values.len();
    if n == 0 || values.iter().any(|v| v.is_nan()) {
        return f64::NAN;
    }
    let mut sorted = values.to_vec();
    sorted.sort_by(f64::total_cmp);
    let lo = n as f64 / 4.0;
    let hi = 3.0 * n as f64 / 4.0;
    let mut sum = 0.0;
    for (i, v) in sorted.iter().enumerate() {
        let start = i as f64;
        let weight = ((start + 1.0).min(hi) - start.max(lo)).max(0.0);
        if weight > 0.0 {
            sum += weight * v;
        }
    }
    sum / (hi - lo)
}

/// Percentile-bootstrap confidence interval of `statistic` over `values`.
///
/// Draws `resamples` samples of `values.len()` values with replacement (splitmix64 seeded
/// with `seed`), computes `statistic` on each, and returns the `(1 - confidence) / 2` and
/// `(1 + confidence) / 2` quantiles of those statistics (linear interpolation between order
/// statistics, as NumPy's default `percentile`). Resamples whose statistic is NaN are left
/// out of the quantiles.
///
/// ```
/// use emberlab_cli::stats::{bootstrap_ci, iqm};
/// let scores = [10.0, 12.0, 9.0, 11.0, 30.0, 10.5, 9.5, 11.5];
/// let (lo, hi) = bootstrap_ci(&scores, iqm, 2000, 0.95, 7).unwrap();
/// assert!(lo <= iqm(&scores) && iqm(&scores) <= hi);
/// ```
///
/// # Errors
/// When `values` is empty, `resamples` is 0, `confidence` is not inside `(0, 1)`, or every
/// resample's statistic was NaN.
pub fn bootstrap_ci(
    values: &[f64],
    statistic: fn(&[f64]) -> f64,
    resamples: usize,
    confidence: f64,
    seed: u64,
) -> Result<(f64, f64)> {
    if values.is_empty() {
        bail!("bootstrap_ci: `values` is empty; need at least one value");
    }
    if resamples == 0 {
        bail!("bootstrap_ci: `resamples` is 0; need at least 1");
    }
    if !(confidence > 0.0 && confidence < 1.0) {
        bail!("bootstrap_ci: `confidence` is {confidence}; allowed range is (0, 1) exclusive");
    }
    let mut rng = SplitMix64(seed);
    let n = values.len();
    let mut sample = vec![0.0; n];
    let mut stats = Vec::with_capacity(resamples);
    for _ in 0..resamples {
        for slot in sample.iter_mut() {
            *slot = values[rng.below(n)];
        }
        let s = statistic(&sample);
        if !s.is_nan() {
            stats.push(s);
        }
    }
    if stats.is_empty() {
        bail!("bootstrap_ci: the statistic was NaN on all {resamples} resamples");
    }
    stats.sort_by(f64::total_cmp);
    let alpha = 1.0 - confidence;
    Ok((
        quantile_sorted(&stats, alpha / 2.0),
        quantile_sorted(&stats, 1.0 - alpha / 2.0),
    ))
}

/// Linear interpolation of a curve `points` (`(x, y)`, e.g. `(env_steps, return)`) at each
/// of `xs`, to put the curves of several seeds on one common env-step grid.
///
/// Points with a NaN coordinate are skipped; the rest are sorted by `x` (stable, so for
/// repeated `x` the later point wins at that `x`). An `x` outside the curve's range gives NaN
/// (curves are never extrapolated), as does every `x` when no point is left.
///
/// ```
/// use emberlab_cli::stats::interpolate;
/// let ys = interpolate(&[(0.0, 0.0), (10.0, 100.0)], &[-1.0, 0.0, 2.5, 10.0, 11.0]);
/// assert!(ys[0].is_nan() && ys[4].is_nan());
/// assert_eq!(&ys[1..4], &[0.0, 25.0, 100.0]);
/// ```
pub fn interpolate(points: &[(f64, f64)], xs: &[f64]) -> Vec<f64> {
    let mut pts: Vec<(f64, f64)> = points
        .iter()
        .copied()
        .filter(|(x, y)| !x.is_nan() && !y.is_nan())
        .collect();
    pts.sort_by(|a, b| a.0.total_cmp(&b.0));
    xs.iter()
        .map(|&x| {
            if pts.is_empty() || x.is_nan() || x < pts[0].0 || x > pts[pts.len() - 1].0 {
                return f64::NAN;
            }
            // First point with px > x; x lies in [pts[i-1].0, pts[i].0).
            let i = pts.partition_point(|p| p.0 <= x);
            if i == pts.len() {
                return pts[i - 1].1;
            }
            let (x0, y0) = pts[i - 1];
            let (x1, y1) = pts[i];
            if x1 == x0 {
                return y1;
            }
            y0 + (y1 - y0) * (x - x0) / (x1 - x0)
        })
        .collect()
}

/// Quantile `q` in `[0, 1]` of an ascending, non-empty slice, interpolating linearly.
fn quantile_sorted(sorted: &[f64], q: f64) -> f64 {
    let pos = q * (sorted.len() - 1) as f64;
    let i = pos.floor() as usize;
    let frac = pos - i as f64;
    if i + 1 >= sorted.len() {
        return sorted[sorted.len() - 1];
    }
    sorted[i] + (sorted[i + 1] - sorted[i]) * frac
}

/// splitmix64 (Steele, Lea and Flood, 2014): small, seedable and good enough for resampling.
struct SplitMix64(u64);

impl SplitMix64 {
    fn next_u64(&mut self) -> u64 {
        self.0 = self.0.wrapping_add(0x9E37_79B9_7F4A_7C15);
        let mut z = self.0;
        z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
        z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
        z ^ (z >> 31)
    }

    /// Uniform index in `0..n` (Lemire's multiply-shift; bias below 2^-40 for our `n`).
    fn below(&mut self, n: usize) -> usize {
        ((u128::from(self.next_u64()) * n as u128) >> 64) as usize
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn close(a: f64, b: f64) -> bool {
        (a - b).abs() <= 1e-12 * (1.0 + b.abs())
    }

    #[test]
    fn mean_std_by_hand() {
        let (m, s) = mean_std(&[2.0, 4.0, 4.0, 4.0, 5.0, 5.0, 7.0, 9.0]);
        assert_eq!(m, 5.0);
        // sum of squares 32, n - 1 = 7
        assert!(close(s, (32.0f64 / 7.0).sqrt()));
        assert_eq!(mean_std(&[3.5]), (3.5, 0.0));
        let (m, s) = mean_std(&[]);
        assert!(m.is_nan() && s.is_nan());
        let (m, s) = mean_std(&[1.0, f64::NAN]);
        assert!(m.is_nan() && s.is_nan());
    }

    #[test]
    fn iqm_by_hand() {
        // n = 4: window [1, 3) = the two middle values.
        assert_eq!(iqm(&[4.0, 1.0, 3.0, 2.0]), 2.5);
        // n = 8: values 3..6 (sorted indices 2..=5).
        assert_eq!(iqm(&[8.0, 7.0, 6.0, 5.0, 4.0, 3.0, 2.0, 1.0]), 4.5);
        // n = 9 (Wikipedia's example): window [2.25, 6.75).
        let v: Vec<f64> = (0..9).map(|i| (2 * i + 1) as f64).collect();
        assert!(close(iqm(&v), 9.0));
        // n = 6: window [1.5, 4.5): 0.5·2 + 3 + 4 + 0.5·5 over 3.
        assert!(close(iqm(&[100.0, 1.0, 2.0, 3.0, 4.0, 5.0]), 3.5));
        // n = 5, asymmetric: window [1.25, 3.75): 0.75·2 + 4 + 0.75·8 over 2.5.
        assert!(close(iqm(&[1.0, 2.0, 4.0, 8.0, 16.0]), 11.5 / 2.5));
        // n = 1 and n = 2: the window covers part of each value.
        assert_eq!(iqm(&[7.0]), 7.0);
        assert_eq!(iqm(&[1.0, 3.0]), 2.0);
        assert!(iqm(&[]).is_nan());
        assert!(iqm(&[1.0, f64::NAN]).is_nan());
    }

    #[test]
    fn quantiles_match_numpy_linear() {
        let s = [1.0, 2.0, 3.0, 4.0];
        assert_eq!(quantile_sorted(&s, 0.0), 1.0);
        assert_eq!(quantile_sorted(&s, 1.0), 4.0);
        assert!(close(quantile_sorted(&s, 0.25), 1.75));
        assert!(close(quantile_sorted(&s, 0.5), 2.5));
    }

    #[test]
    fn bootstrap_is_seeded_and_checks_inputs() {
        let v: Vec<f64> = (0..20).map(f64::from).collect();
        let mean = |x: &[f64]| mean_std(x).0;
        let a = bootstrap_ci(&v, mean, 500, 0.9, 3).unwrap();
        assert_eq!(a, bootstrap_ci(&v, mean, 500, 0.9, 3).unwrap());
        assert_ne!(a, bootstrap_ci(&v, mean, 500, 0.9, 4).unwrap());
        assert!(a.0 < 9.5 && 9.5 < a.1);
        // A constant sample has a degenerate interval.
        assert_eq!(
            bootstrap_ci(&[2.0; 5], mean, 100, 0.95, 0).unwrap(),
            (2.0, 2.0)
        );
        assert!(bootstrap_ci(&[], mean, 10, 0.9, 0).is_err());
        assert!(bootstrap_ci(&v, mean, 0, 0.9, 0).is_err());
        let e = bootstrap_ci(&v, mean, 10, 1.0, 0).unwrap_err().to_string();
        assert!(e.contains("confidence") && e.contains("(0, 1)"), "{e}");
        assert!(bootstrap_ci(&v, mean, 10, f64::NAN, 0).is_err());
        assert!(bootstrap_ci(&v, |_| f64::NAN, 10, 0.9, 0).is_err());
    }

    /// Box-Muller normals from splitmix64.
    fn normals(n: usize, seed: u64) -> Vec<f64> {
        let mut rng = SplitMix64(seed);
        let mut unit = || (rng.next_u64() >> 11) as f64 / (1u64 << 53) as f64;
        (0..n)
            .map(|_| {
                let u1 = 1.0 - unit();
                let u2 = unit();
                (-2.0 * u1.ln()).sqrt() * (2.0 * std::f64::consts::PI * u2).cos()
            })
            .collect()
    }

    #[test]
    fn bootstrap_ci_of_normal_sample_covers_true_mean() {
        // 95% intervals of the mean of N(3, 1) samples of 400 values: over 40 independent
        // samples, coverage must be near 95% (binomial: P(fewer than 33 of 40) < 1e-3), and
        // each interval's width near 2·1.96/√400 = 0.196.
        let mean = |x: &[f64]| mean_std(x).0;
        let mut covered = 0;
        for k in 0..40 {
            let v: Vec<f64> = normals(400, 100 + k).iter().map(|z| 3.0 + z).collect();
            let (lo, hi) = bootstrap_ci(&v, mean, 1000, 0.95, k).unwrap();
            assert!((0.15..0.25).contains(&(hi - lo)), "width {}", hi - lo);
            if lo <= 3.0 && 3.0 <= hi {
                covered += 1;
            }
        }
        assert!(covered >= 33, "covered {covered} of 40");
    }

    #[test]
    fn interpolate_by_hand() {
        let pts = [(10.0, 1.0), (0.0, 0.0), (20.0, f64::NAN), (30.0, 3.0)];
        let ys = interpolate(&pts, &[0.0, 5.0, 10.0, 20.0, 30.0, 31.0, f64::NAN]);
        assert_eq!(&ys[..5], &[0.0, 0.5, 1.0, 2.0, 3.0]);
        assert!(ys[5].is_nan() && ys[6].is_nan());
        assert!(interpolate(&[], &[1.0])[0].is_nan());
        assert_eq!(interpolate(&[(1.0, 4.0)], &[1.0]), vec![4.0]);
        // Repeated x: the later point wins.
        assert_eq!(
            interpolate(&[(0.0, 0.0), (1.0, 1.0), (1.0, 5.0), (2.0, 5.0)], &[1.0]),
            vec![5.0]
        );
    }
}
