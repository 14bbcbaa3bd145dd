//! The O(n) reference for return-weighted sampling without replacement: the algorithm of
//! NumPy's `choice(replace=False, p=…)`, written in Rust. It is the baseline in the
//! benchmarks and the reference in the statistical tests; use [`crate::ReturnWeighted`]
//! for real work.

use emberlab_core::{EmberRng, Error, Result};

/// Reusable buffers for [`naive_return_weighted`].
#[derive(Clone, Debug, Default)]
pub struct NaiveScratch {
    w: Vec<f64>,
    cdf: Vec<f64>,
}

/// Draws `k` distinct indices of `scores`, each successive one proportionally to the
/// shifted weights `r_i + |min(min_j r_j, 0)|` of those not yet drawn — uniformly when
/// every weight is zero (see [`crate::ReturnWeighted`]). Each round draws
/// the missing number of indices by inverse-CDF search, keeps first occurrences of new
/// indices, zeroes their weights and rebuilds the CDF: O(n) per round.
pub fn naive_return_weighted(
    scores: &[f64],
    k: usize,
    rng: &mut EmberRng,
    scratch: &mut NaiveScratch,
    out: &mut Vec<usize>,
) -> Result<()> {
    out.clear();
    if k > scores.len() {
        return Err(Error::NotEnough {
            what: "distinct transitions".into(),
            requested: k,
            available: scores.len(),
        });
    }
    let min = scores.iter().copied().fold(f64::INFINITY, f64::min);
    let shift = if min < 0.0 { -min } else { 0.0 };
    scratch.w.clear();
    scratch.w.extend(scores.iter().map(|&r| r + shift));
    while out.len() < k {
        scratch.cdf.clear();
        let mut acc = 0.0;
        scratch.cdf.extend(scratch.w.iter().map(|&w| {
            acc += w;
            acc
        }));
        let mut total = acc;
        if total.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) && out.is_empty() {
            // Every weight zero: uniformly (the limit of `w + ε`; NumPy refuses here).
            scratch.cdf.clear();
            let mut acc = 0.0;
            for (i, w) in scratch.w.iter_mut().enumerate() {
                if !out.contains(&i) {
                    *w = 1.0;
                }
                acc += *w;
                scratch.cdf.push(acc);
            }
            total = acc;
        } else if total.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
            let available = out.len();
            out.clear();
            return Err(Error::NotEnough {
                what: "distinct transitions with non-zero weight".into(),
                requested: k,
                available,
            });
        }
        let start = out.len();
        for _ in 0..k - start {
            let u = rng.next_f64() * total;
            // First index whose cumulative weight exceeds u (searchsorted side='right').
            let i = scratch
                .cdf
                .partition_point(|&c| c <= u)
                .min(scores.len() - 1);
            if scratch.w[i] > 0.0 && !out[start..].contains(&i) {
                out.push(i);
            }
        }
        for &i in &out[start..] {
            scratch.w[i] = 0.0;
        }
    }
    Ok(())
}
