//! Action distributions of the policies: log-probabilities and entropies on tensors (for
//! losses) and the same formulas on the host (for acting, where the behaviour policy's
//! log-probability of the sampled action is recorded).
//!
//! - Categorical: `log π(a) = l_a − logsumexp(l)`.
//! - Diagonal Gaussian: `log N(x; μ, σ) = Σ_i −½ ((x_i − μ_i)/σ_i)² − log σ_i − ½ log 2π`,
//!   entropy `Σ_i ½ + ½ log 2π + log σ_i`.
//! - Tanh-squashed Gaussian mapped onto `[low, high]`: `a = tanh(u)·scale + bias`,
//!   `log π(a) = log N(u; μ, σ) − Σ_i log(scale_i (1 − tanh² u_i))` with the stable form
//!   `log(1 − tanh² u) = 2 (log 2 − u − softplus(−2u))`; no closed-form entropy.

use burn::module::Param;
use burn::tensor::Tensor;
use burn::tensor::activation::softplus;
use emberlab_core::EmberRng;

/// `½ log 2π` (one constant with the kernels that use it).
pub use emberlab_kernels::HALF_LOG_2PI;

/// Pre-squash values `u` are recovered from squashed actions with `atanh`, clamped to
/// `±(1 − SQUASH_EPS)` so that an action on the bound has a finite log-probability.
pub const SQUASH_EPS: f64 = 1e-6;

/// `log N(x; mean, exp(log_std))` summed over the action columns: `[batch, 1]`.
pub fn gaussian_log_prob(mean: Tensor<2>, log_std: Tensor<2>, x: Tensor<2>) -> Tensor<2> {
    let [_, k] = mean.dims();
    let z = (x - mean) * log_std.clone().neg().exp();
    ((z.clone() * z).mul_scalar(-0.5) - log_std)
        .sum_dim(1)
        .sub_scalar(HALF_LOG_2PI * k as f64)
}

/// The entropy of a diagonal Gaussian with `log_std` `[batch, k]`: `[batch, 1]`.
pub fn gaussian_entropy(log_std: Tensor<2>) -> Tensor<2> {
    let [_, k] = log_std.dims();
    log_std
        .sum_dim(1)
        .add_scalar((0.5 + HALF_LOG_2PI) * k as f64)
}

/// `Σ_i log(1 − tanh² u_i)` per row, `[batch, 1]`, in the stable softplus form.
pub fn tanh_log_det(u: Tensor<2>) -> Tensor<2> {
    (u.clone().neg().add_scalar(std::f64::consts::LN_2) - softplus(u.mul_scalar(-2.0), 1.0))
        .mul_scalar(2.0)
        .sum_dim(1)
}

/// The pre-squash values `u = atanh((a − bias)/scale)` of squashed actions `a`
/// (`scale`, `bias` as `[1, k]` rows), clamped so that bound actions stay finite.
pub fn unsquash(actions: Tensor<2>, scale: Tensor<2>, bias: Tensor<2>) -> Tensor<2> {
    let y = ((actions - bias) / scale).clamp(-1.0 + SQUASH_EPS, 1.0 - SQUASH_EPS);
    // atanh y = ½ (log(1 + y) − log(1 − y))
    (y.clone().add_scalar(1.0).log() - y.neg().add_scalar(1.0).log()).mul_scalar(0.5)
}

/// Host form of [`gaussian_log_prob`] for one row, from the standardised noise
/// `z = (x − μ)/σ` and `log σ`.
pub fn gaussian_log_prob_host(z: &[f32], log_std: &[f32]) -> f32 {
    let s: f64 = z
        .iter()
        .zip(log_std)
        .map(|(&z, &l)| -0.5 * (z as f64) * (z as f64) - l as f64 - HALF_LOG_2PI)
        .sum();
    s as f32
}

/// Host form of one row's `Σ_i log(scale_i (1 − tanh² u_i))`.
pub fn tanh_log_det_host(u: &[f32], scale: &[f32]) -> f32 {
    let s: f64 = u
        .iter()
        .zip(scale)
        .map(|(&u, &c)| {
            let u = u as f64;
            let softplus = (-2.0 * u).max(0.0) + (-(2.0 * u).abs()).exp().ln_1p();
            2.0 * (std::f64::consts::LN_2 - u - softplus) + (c as f64).ln()
        })
        .sum();
    s as f32
}

/// Samples one index per row of `logits` (`rows × k`) from `softmax(row)` with uniforms
/// from `uniform` (one per row), or takes the most likely index when `sample` is false;
/// appends the indices (as `f32`) to `actions` and their log-probabilities to `log_probs`.
pub fn categorical_host(
    logits: &[f32],
    k: usize,
    sample: bool,
    mut uniform: impl FnMut() -> f64,
    actions: &mut Vec<f32>,
    log_probs: &mut Vec<f32>,
) {
    for row in logits.chunks_exact(k) {
        let max = row.iter().copied().fold(f32::NEG_INFINITY, f32::max);
        let total: f64 = row.iter().map(|&l| ((l - max) as f64).exp()).sum();
        let pick = if sample {
            let mut u = uniform() * total;
            let mut pick = k - 1;
            for (j, &l) in row.iter().enumerate() {
                u -= ((l - max) as f64).exp();
                if u < 0.0 {
                    pick = j;
                    break;
                }
            }
            pick
        } else {
            row.iter()
                .enumerate()
                .fold((0, f32::NEG_INFINITY), |best, (j, &l)| {
                    if l > best.1 { (j, l) } else { best }
                })
                .0
        };
        actions.push(pick as f32);
        log_probs.push(((row[pick] - max) as f64 - total.ln()) as f32);
    }
}

/// gSDE's exploration weights `Θ = exp(log_std) ⊙ E` on the host (row-major like
/// `log_std`, `E` standard normal from `rng`): what an actor keeps between resamples.
pub fn sde_weights(log_std: &Param<Tensor<2>>, rng: &mut EmberRng) -> Vec<f32> {
    let log_std: Vec<f32> = log_std
        .val()
        .into_data()
        .try_into_vec_as::<f32>()
        .expect("float parameter");
    let mut e = Vec::with_capacity(log_std.len());
    crate::noise::fill_standard_normal(log_std.len(), rng, &mut e);
    e.iter().zip(&log_std).map(|(e, l)| e * l.exp()).collect()
}
