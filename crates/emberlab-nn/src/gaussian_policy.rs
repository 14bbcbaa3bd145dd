//! The tanh-squashed Gaussian policy of SAC.

use crate::mlp::{Activation, Mlp, MlpConfig};
use burn::module::{Module, Param};
use burn::tensor::activation::tanh;
use burn::tensor::{Device, Tensor, TensorData};
use emberlab_core::{Error, Result};

/// How to build a [`GaussianTanhPolicy`].
#[derive(Clone, Debug, PartialEq)]
pub struct GaussianTanhPolicyConfig {
    /// Observation width.
    pub obs_dim: usize,
    /// Action width.
    pub act_dim: usize,
    /// Hidden widths (SAC: `[256, 256]`).
    pub hidden: Vec<usize>,
    /// Hidden nonlinearity.
    pub activation: Activation,
    /// Lower action bounds (the squashed action is mapped onto `[low, high]`).
    pub low: Vec<f32>,
    /// Upper action bounds.
    pub high: Vec<f32>,
    /// Clamp of the log standard deviation (SB3: `[-20, 2]`).
    pub log_std_bounds: (f32, f32),
    /// Threads [`GaussianTanhPolicy::act_host`] may split a large batch over (rows in
    /// blocks of at least [`MIN_ROWS_PER_THREAD`], on rayon's pool). 1 (the default) keeps
    /// every call on the caller's thread; `emberlab_backend::DeviceSpec::inference_threads`
    /// says what suits a backend.
    pub row_threads: usize,
    /// Generalised state-dependent exploration (gSDE, Raffin et al. 2021) with this initial
    /// `log σ` of the exploration weights (SB3: −3); `None`: the plain state-dependent
    /// Gaussian. See [`GaussianTanhPolicy`].
    pub sde_log_std_init: Option<f32>,
}

/// The fewest batch rows worth a thread of their own in [`GaussianTanhPolicy::act_host`]
/// (below this the hand-over costs more than the rows).
pub const MIN_ROWS_PER_THREAD: usize = 64;

impl GaussianTanhPolicyConfig {
    /// A policy for actions in `[-1, 1]^act_dim` with 256×256 ReLU hidden layers.
    pub fn new(obs_dim: usize, act_dim: usize) -> Self {
        GaussianTanhPolicyConfig {
            obs_dim,
            act_dim,
            hidden: vec![256, 256],
            activation: Activation::Relu,
            low: vec![-1.0; act_dim],
            high: vec![1.0; act_dim],
            log_std_bounds: (-20.0, 2.0),
            row_threads: 1,
            sde_log_std_init: None,
        }
    }

    /// Explores with gSDE, the exploration weights' `log σ` starting at `log_std_init`.
    pub fn with_sde(mut self, log_std_init: Option<f32>) -> Self {
        self.sde_log_std_init = log_std_init;
        self
    }

    /// Sets how many threads `act_host` may split a large batch over.
    pub fn with_row_threads(mut self, threads: usize) -> Self {
        self.row_threads = threads.max(1);
        self
    }

    /// Sets the hidden widths.
    pub fn with_hidden(mut self, hidden: impl Into<Vec<usize>>) -> Self {
        self.hidden = hidden.into();
        self
    }

    /// Sets the action bounds (one value per action dimension).
    pub fn with_bounds(mut self, low: Vec<f32>, high: Vec<f32>) -> Self {
        self.low = low;
        self.high = high;
        self
    }

    /// Builds the policy on `device`.
    pub fn init(&self, device: &Device) -> Result<GaussianTanhPolicy> {
        Error::check_len("policy action low bounds", self.act_dim, self.low.len())?;
        Error::check_len("policy action high bounds", self.act_dim, self.high.len())?;
        for (i, (&l, &h)) in self.low.iter().zip(&self.high).enumerate() {
            if !(l.is_finite() && h.is_finite() && l < h) {
                return Err(Error::invalid(
                    format!("action bounds[{i}]"),
                    format!("[{l}, {h}]"),
                    "finite, low < high",
                ));
            }
        }
        let (lo, hi) = self.log_std_bounds;
        if lo.is_nan() || hi.is_nan() || lo >= hi {
            return Err(Error::invalid(
                "log_std_bounds",
                format!("({lo}, {hi})"),
                "min < max",
            ));
        }
        if let Some(l) = self.sde_log_std_init
            && !(l.is_finite() && (-20.0..=5.0).contains(&l))
        {
            return Err(Error::invalid("sde_log_std_init", l, "finite, in [-20, 5]"));
        }
        let Some(&latent) = self.hidden.last() else {
            return Err(Error::invalid("policy hidden", "[]", "one or more widths"));
        };
        let mut sizes = vec![self.obs_dim];
        sizes.extend(&self.hidden);
        // Mean and log-std heads fused into one layer; gSDE has a mean head only.
        sizes.push(match self.sde_log_std_init {
            None => 2 * self.act_dim,
            Some(_) => self.act_dim,
        });
        let net = MlpConfig::new(sizes)
            .with_activation(self.activation)
            .init(device)?;
        let scale: Vec<f32> = self
            .low
            .iter()
            .zip(&self.high)
            .map(|(l, h)| (h - l) / 2.0)
            .collect();
        let bias: Vec<f32> = self
            .low
            .iter()
            .zip(&self.high)
            .map(|(l, h)| (h + l) / 2.0)
            .collect();
        let sde_log_std = self.sde_log_std_init.map(|l| {
            let values = vec![l; latent * self.act_dim];
            Param::from_tensor(Tensor::from_data(
                TensorData::new(values, [latent, self.act_dim]),
                device,
            ))
        });
        Ok(GaussianTanhPolicy {
            net,
            sde_log_std,
            act_dim: self.act_dim,
            scale,
            bias,
            log_std_bounds: self.log_std_bounds,
            row_threads: self.row_threads.max(1),
        })
    }
}

/// `a = tanh(μ(s) + σ(s)·ε)·scale + bias`, `ε ~ N(0, I)`: SAC's actor.
///
/// With gSDE the noise is a function of the state instead: `a = tanh(μ(s) + z(s)·Θ)`, with
/// `z(s)` the last hidden layer's features (no gradient through them, SB3's default
/// `learn_features = False`) and exploration weights `Θ = σ ⊙ E` (`σ = exp(log_std)`, a
/// learned `[features, act_dim]` matrix; `E` standard normal), drawn once and kept for many
/// steps while acting (smooth, state-dependent exploration), drawn per update in training.
/// The pre-squash action is then `N(μ, z²·σ²)` per dimension, and `μ` is clipped to
/// `[−2, 2]` (SB3's `clip_mean`). The noise argument of [`GaussianTanhPolicy::sample`] is `E`,
/// shaped as [`GaussianTanhPolicy::noise_shape`] says.
#[derive(Module, Debug)]
pub struct GaussianTanhPolicy {
    /// Trunk and fused heads: output `[mean, log_std]` (gSDE: `[mean]`).
    pub net: Mlp,
    /// gSDE's `log σ` of the exploration weights, `[features, act_dim]` (`None`: plain).
    pub sde_log_std: Option<Param<Tensor<2>>>,
    /// Action width.
    pub act_dim: usize,
    /// Half-widths of the action box.
    #[module(skip)]
    pub scale: Vec<f32>,
    /// Centres of the action box.
    #[module(skip)]
    pub bias: Vec<f32>,
    /// Log-std clamp.
    #[module(skip)]
    pub log_std_bounds: (f32, f32),
    /// Threads `act_host` may split a large batch over (see the config's field).
    #[module(skip)]
    pub row_threads: usize,
}

/// The clip of gSDE's mean (SB3's `clip_mean`).
const SDE_CLIP_MEAN: f64 = 2.0;
/// Added to gSDE's variance before the square root (SB3's `epsilon`).
const SDE_EPS: f64 = 1e-6;

impl GaussianTanhPolicy {
    /// The shape of the standard-normal noise [`GaussianTanhPolicy::sample`] takes for a
    /// batch of `rows`: `[rows, act_dim]`, or `[features, act_dim]` (one `E`) with gSDE.
    pub fn noise_shape(&self, rows: usize) -> [usize; 2] {
        match &self.sde_log_std {
            None => [rows, self.act_dim],
            Some(p) => p.shape().dims::<2>(),
        }
    }

    /// Whether this policy explores with gSDE.
    pub fn is_sde(&self) -> bool {
        self.sde_log_std.is_some()
    }

    /// gSDE: the mean (clipped), the detached features and `σ` of the exploration weights.
    fn sde_parts(&self, obs: Tensor<2>) -> (Tensor<2>, Tensor<2>, Tensor<2>) {
        let (latent, mean) = self.net.forward_latent(obs);
        let sigma = self.sde_log_std.as_ref().expect("gSDE policy").val().exp();
        (
            mean.clamp(-SDE_CLIP_MEAN, SDE_CLIP_MEAN),
            latent.detach(),
            sigma,
        )
    }

    /// Mean and log standard deviation of the pre-squash Gaussian, each `[batch, act_dim]`
    /// (plain: the clamped head; gSDE: `½ log(z²·σ² + ε)` of the state's features).
    pub fn forward(&self, obs: Tensor<2>) -> (Tensor<2>, Tensor<2>) {
        if self.is_sde() {
            let (mean, latent, sigma) = self.sde_parts(obs);
            let var = (latent.clone() * latent).matmul(sigma.clone() * sigma);
            return (mean, var.add_scalar(SDE_EPS).log().mul_scalar(0.5));
        }
        let out = self.net.forward(obs);
        let [b, _] = out.dims();
        let a = self.act_dim;
        let mean = out.clone().slice([0..b, 0..a]);
        let log_std = out
            .slice([0..b, a..2 * a])
            .clamp(self.log_std_bounds.0, self.log_std_bounds.1);
        (mean, log_std)
    }

    /// A stochastic action for acting, from standard-normal `noise` shaped as
    /// [`GaussianTanhPolicy::noise_shape`] says.
    pub fn act(&self, obs: Tensor<2>, noise: Tensor<2>) -> Tensor<2> {
        if self.is_sde() {
            let (mean, latent, sigma) = self.sde_parts(obs);
            return self.squash(tanh(mean + latent.matmul(sigma * noise)));
        }
        let (mean, log_std) = self.forward(obs);
        self.squash(tanh(mean + log_std.exp() * noise))
    }

    /// gSDE's exploration weights `Θ = σ ⊙ E` on the host, `[features, act_dim]` row-major,
    /// with `E` drawn from `rng`: what an actor keeps between resamples (empty for a plain
    /// policy).
    pub fn sde_weights(&self, rng: &mut emberlab_core::EmberRng) -> Vec<f32> {
        match &self.sde_log_std {
            Some(p) => crate::distributions::sde_weights(p, rng),
            None => Vec::new(),
        }
    }

    /// gSDE acting on the host with kept exploration weights `theta` (from
    /// [`GaussianTanhPolicy::sde_weights`]): `tanh(μ(s) + z(s)·Θ)·scale + bias` per row of
    /// `obs`, into `out` (cleared, `[batch, act_dim]`).
    ///
    /// # Panics
    /// If this policy is not a gSDE policy or `theta` has the wrong length.
    pub fn act_host_sde(&self, obs: Tensor<2>, theta: &[f32], out: &mut Vec<f32>) {
        let (latent, mean) = self.net.forward_latent(obs);
        let (latent, mean) = (latent.into_data(), mean.into_data());
        let latent: &[f32] = latent.as_slice().expect("float output");
        let mean: &[f32] = mean.as_slice().expect("float output");
        let a = self.act_dim;
        let k = theta.len() / a;
        assert_eq!(
            k * a,
            theta.len(),
            "gSDE weights must be features × act_dim"
        );
        assert!(self.is_sde(), "act_host_sde needs a gSDE policy");
        out.clear();
        for (z, m) in latent.chunks_exact(k).zip(mean.chunks_exact(a)) {
            for j in 0..a {
                let noise: f32 = z
                    .iter()
                    .enumerate()
                    .map(|(l, z)| z * theta[l * a + j])
                    .sum();
                let u = m[j].clamp(-SDE_CLIP_MEAN as f32, SDE_CLIP_MEAN as f32) + noise;
                out.push(u.tanh() * self.scale[j] + self.bias[j]);
            }
        }
    }

    /// Stochastic actions for acting, computed as an actor needs them: the network runs on
    /// the device, its `[batch, 2·act_dim]` output comes back to the host, and the squashing
    /// and noise (drawn from `rng`, the stream of [`crate::noise::standard_normal`]) are
    /// applied there. Equal to [`GaussianTanhPolicy::act`] with the same noise, with six
    /// fewer tensor operations per call, which is most of the cost at batch 1. `out` is
    /// cleared and filled row-major `[batch, act_dim]`. With `row_threads > 1`, a batch of
    /// at least `2 ×` [`MIN_ROWS_PER_THREAD`] rows is split into row blocks that run on
    /// rayon's pool at once (the same actions, bit for bit).
    pub fn act_host(&self, obs: Tensor<2>, rng: &mut emberlab_core::EmberRng, out: &mut Vec<f32>) {
        let rows = obs.dims()[0];
        let a = self.act_dim;
        out.clear();
        crate::noise::fill_standard_normal(rows * a, rng, out);
        let parts = self
            .row_threads
            .min(rows / MIN_ROWS_PER_THREAD)
            .min(rayon::current_num_threads());
        if parts < 2 {
            return self.squash_rows(obs, out);
        }
        // Equal row blocks, each through the network on its own thread; every row's
        // arithmetic is the same as in one call, so the actions are too (tested).
        // The first block runs on the calling thread, the others on the pool (one wake-up
        // fewer than handing every block over).
        let per = rows.div_ceil(parts);
        let mut blocks = out.chunks_mut(per * a).enumerate();
        let (_, first) = blocks.next().expect("rows > 0");
        let obs = &obs;
        rayon::in_place_scope(|s| {
            for (i, eps) in blocks {
                s.spawn(move |_| {
                    let _flush = emberlab_core::denormals::flush_denormals_here();
                    let block = obs.clone().narrow(0, i * per, eps.len() / a);
                    self.squash_rows(block, eps);
                });
            }
            self.squash_rows(obs.clone().narrow(0, 0, per), first);
        });
    }

    /// `eps ← tanh(μ + σ·eps)·scale + bias` for the rows of `obs`.
    fn squash_rows(&self, obs: Tensor<2>, eps: &mut [f32]) {
        let raw = self.net.forward(obs).into_data();
        let raw: &[f32] = raw.as_slice().expect("float output");
        squash(raw, eps, &self.scale, &self.bias, self.log_std_bounds);
    }

    /// The deterministic action `tanh(μ(s))` (evaluation).
    pub fn deterministic(&self, obs: Tensor<2>) -> Tensor<2> {
        let (mean, _) = self.forward(obs);
        self.squash(tanh(mean))
    }

    /// A reparameterised action and its log-probability `[batch, 1]`, including the tanh and
    /// scale corrections: `log π(a|s) = Σ_i [log N(u_i; μ_i, σ_i) − log(scale_i (1 − tanh² u_i))]`
    /// with the stable form `log(1 − tanh² u) = 2 (log 2 − u − softplus(−2u))`.
    pub fn sample(&self, obs: Tensor<2>, noise: Tensor<2>) -> (Tensor<2>, Tensor<2>) {
        if self.is_sde() {
            use crate::distributions::{gaussian_log_prob, tanh_log_det};
            let (mean, latent, sigma) = self.sde_parts(obs);
            let var = (latent.clone() * latent.clone()).matmul(sigma.clone() * sigma.clone());
            let log_std = var.add_scalar(SDE_EPS).log().mul_scalar(0.5);
            let u = mean.clone() + latent.matmul(sigma * noise);
            let scale_log: f64 = self.scale.iter().map(|&s| (s as f64).ln()).sum();
            let log_prob = (gaussian_log_prob(mean, log_std, u.clone()) - tanh_log_det(u.clone()))
                .sub_scalar(scale_log);
            return (self.squash(tanh(u)), log_prob);
        }
        // The head's `[μ, log σ]` to the action and its log-probability in one op.
        let scale_log: f64 = self.scale.iter().map(|&s| (s as f64).ln()).sum();
        let params = emberlab_kernels::TanhGaussian {
            log_std_bounds: self.log_std_bounds,
            log_prob_offset: scale_log as f32,
        };
        let (action, log_prob) =
            emberlab_kernels::tanh_gaussian(self.net.forward(obs), noise, params);
        (self.squash(action), log_prob)
    }

    /// `log π(a|s)` `[batch, 1]` of given actions `[batch, act_dim]` inside the box (the
    /// inverse of the squashing, clamped at the bounds; see [`crate::distributions`]). The
    /// tanh-Gaussian has no closed-form entropy: `−log π` of a [`GaussianTanhPolicy::sample`]
    /// estimates it.
    pub fn log_prob(&self, obs: Tensor<2>, actions: Tensor<2>) -> Tensor<2> {
        use crate::distributions::{gaussian_log_prob, tanh_log_det, unsquash};
        let (mean, log_std) = self.forward(obs);
        let device = mean.device();
        let row = |v: &Vec<f32>| {
            Tensor::<2>::from_data(TensorData::new(v.clone(), [1, self.act_dim]), &device)
        };
        let u = unsquash(actions, row(&self.scale), row(&self.bias));
        let scale_log: f64 = self.scale.iter().map(|&s| (s as f64).ln()).sum();
        (gaussian_log_prob(mean, log_std, u.clone()) - tanh_log_det(u)).sub_scalar(scale_log)
    }

    fn squash(&self, a: Tensor<2>) -> Tensor<2> {
        let unit_scale = self.scale.iter().all(|&s| s == 1.0);
        let zero_bias = self.bias.iter().all(|&b| b == 0.0);
        if unit_scale && zero_bias {
            return a;
        }
        let uniform = self.scale.iter().all(|&s| s == self.scale[0]) && zero_bias;
        if uniform {
            return a.mul_scalar(self.scale[0]);
        }
        let device = a.device();
        let row = |v: &Vec<f32>| {
            Tensor::<2>::from_data(TensorData::new(v.clone(), [1, self.act_dim]), &device)
        };
        a * row(&self.scale) + row(&self.bias)
    }
}

/// `eps ← tanh(μ + σ·eps)·scale + bias` for each row `[μ, log σ]` of `raw` (twice the
/// action width; `log σ` clamped to `log_std_bounds`), `eps` holding each row's standard
/// normal noise: the squashing of [`GaussianTanhPolicy::act_host`] and of the frozen
/// policy, in one place so that both give the same bits. `σ = e^{log σ}` and `tanh` run
/// in double precision, vectorised over blocks of actions (the module `host_math`).
pub(crate) fn squash(
    raw: &[f32],
    eps: &mut [f32],
    scale: &[f32],
    bias: &[f32],
    log_std_bounds: (f32, f32),
) {
    let a = scale.len();
    let (lo, hi) = log_std_bounds;
    // Whole rows that both hold.
    let rows = (raw.len() / (2 * a)).min(eps.len() / a);
    let mut block = SquashBlock {
        mean: [0.0; SQUASH_BLOCK],
        log_std: [0.0; SQUASH_BLOCK],
        scale: [0.0; SQUASH_BLOCK],
        bias: [0.0; SQUASH_BLOCK],
    };
    // Row and action of the next value gathered, stepped along (no division per action).
    let (mut r, mut j) = (0, 0);
    for part in eps[..rows * a].chunks_mut(SQUASH_BLOCK) {
        for o in 0..part.len() {
            block.mean[o] = raw[r * 2 * a + j];
            block.log_std[o] = raw[r * 2 * a + a + j].clamp(lo, hi) as f64;
            block.scale[o] = scale[j];
            block.bias[o] = bias[j];
            j += 1;
            if j == a {
                (r, j) = (r + 1, 0);
            }
        }
        squash_block(&block, part);
    }
}

/// Actions [`squash`] gathers from the rows and squashes at a time.
const SQUASH_BLOCK: usize = 64;

/// One block of [`squash`]'s inputs, gathered from the rows.
struct SquashBlock {
    mean: [f32; SQUASH_BLOCK],
    log_std: [f64; SQUASH_BLOCK],
    scale: [f32; SQUASH_BLOCK],
    bias: [f32; SQUASH_BLOCK],
}

emberlab_kernels::multiversion! {
    /// `eps[i] ← tanh(mean[i] + e^{log_std[i]}·eps[i])·scale[i] + bias[i]`.
    fn squash_block(b: &SquashBlock, eps: &mut [f32]) {
        let n = eps.len();
        let parts = b.mean[..n].iter().zip(&b.log_std[..n]).zip(&b.scale[..n]).zip(&b.bias[..n]);
        for (e, (((m, ls), s), bi)) in eps.iter_mut().zip(parts) {
            let std = emberlab_kernels::host_math::exp(*ls) as f32;
            *e = emberlab_kernels::host_math::tanh(m + std * *e) * s + bi;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::squash;

    /// `squash` against the formula in `f32` with the C library's `exp` and `tanh`, across
    /// blocks: action widths that divide the block, do not, and exceed it.
    #[test]
    fn squashing_in_blocks_matches_the_formula() {
        for (a, rows) in [(1, 200), (6, 16), (7, 10), (70, 2), (2, 1)] {
            let raw: Vec<f32> = (0..rows * 2 * a)
                .map(|i| ((i as f32) * 0.618).sin() * 3.0)
                .collect();
            let noise: Vec<f32> = (0..rows * a).map(|i| ((i as f32) * 1.3).cos()).collect();
            let scale: Vec<f32> = (0..a).map(|j| 0.5 + j as f32).collect();
            let bias: Vec<f32> = (0..a).map(|j| 0.1 * j as f32).collect();
            let mut got = noise.clone();
            squash(&raw, &mut got, &scale, &bias, (-2.0, 1.0));
            for (i, (g, e)) in got.iter().zip(&noise).enumerate() {
                let (r, j) = (i / a, i % a);
                let (mean, log_std) = (raw[r * 2 * a + j], raw[r * 2 * a + a + j]);
                let std = log_std.clamp(-2.0, 1.0).exp();
                let want = (mean + std * e).tanh() * scale[j] + bias[j];
                assert!(
                    (g - want).abs() <= 4.0 * f32::EPSILON * want.abs().max(1.0),
                    "{a} wide, row {r}, action {j}: {g} vs {want}"
                );
            }
        }
        // A NaN in the network's output stays NaN.
        let mut e = [0.3f32];
        squash(&[f32::NAN, 0.0], &mut e, &[1.0], &[0.0], (-2.0, 1.0));
        assert!(e[0].is_nan());
    }
}
