//! A policy and an optional state-value head in one module: separate MLPs or two heads on a
//! shared trunk (A2C, REINFORCE, PPO), over discrete actions (categorical) or continuous ones
//! (a diagonal Gaussian with a state-independent, learned log standard deviation, plain or
//! tanh-squashed onto the action box). For images, an optional [`PixelEncoder`] in front
//! turns `[batch, c, h, w]` frames into the features both heads read (SB3's `CnnPolicy`
//! with its shared features extractor).

use crate::distributions::{
    HALF_LOG_2PI, categorical_host, gaussian_entropy, gaussian_log_prob, gaussian_log_prob_host,
    tanh_log_det, tanh_log_det_host, unsquash,
};
use crate::mlp::{Activation, Mlp, MlpConfig};
use crate::pixels::PixelEncoder;
use burn::module::{Module, Param};
use burn::tensor::{Device, Tensor, TensorData};
use emberlab_core::{EmberRng, Error, Result};

/// Added to gSDE's variance before the square root (SB3's `epsilon`).
const SDE_EPS: f64 = 1e-6;

/// The action distribution of an [`ActorCriticNet`].
#[derive(Clone, Debug, PartialEq)]
pub enum PolicyHead {
    /// Softmax over `actions` logits.
    Categorical {
        /// Number of discrete actions.
        actions: usize,
    },
    /// `N(μ(s), exp(log_std))` with `log_std` a learned vector (SB3's `DiagGaussian`): the
    /// sampled action is unbounded (the caller clips it to the action box before stepping,
    /// and trains on the unclipped value, as SB3 does).
    Gaussian {
        /// Action width.
        act_dim: usize,
        /// Initial `log σ` of every action dimension (SB3: 0).
        log_std_init: f32,
    },
    /// gSDE (generalised state-dependent exploration, Raffin et al. 2021): `μ(s) + z(s)·Θ`
    /// with `z(s)` the policy's last hidden features (no gradient through them) and
    /// exploration weights `Θ = σ ⊙ E`, `σ = exp(log_std)` a learned `[features, act_dim]`
    /// matrix, kept by the actor for several steps; per state the action is
    /// `N(μ, z²·σ² + 1e-6)`. Unbounded, clipped by the caller like [`PolicyHead::Gaussian`].
    GaussianSde {
        /// Action width.
        act_dim: usize,
        /// Initial `log σ` of every exploration weight (SB3: 0 for PPO / A2C).
        log_std_init: f32,
    },
    /// `tanh(u)·scale + bias`, `u ~ N(μ(s), exp(log_std))`: actions always inside
    /// `[low, high]` (SB3's `squash_output`).
    TanhGaussian {
        /// Lower bounds of the action box.
        low: Vec<f32>,
        /// Upper bounds of the action box.
        high: Vec<f32>,
        /// Initial `log σ`.
        log_std_init: f32,
    },
}

impl PolicyHead {
    /// Width of the policy network's output (logits or means).
    pub fn outputs(&self) -> usize {
        match self {
            PolicyHead::Categorical { actions } => *actions,
            PolicyHead::Gaussian { act_dim, .. } | PolicyHead::GaussianSde { act_dim, .. } => {
                *act_dim
            }
            PolicyHead::TanhGaussian { low, .. } => low.len(),
        }
    }

    /// Width of one stored action: 1 for a discrete index, the action width otherwise.
    pub fn action_width(&self) -> usize {
        match self {
            PolicyHead::Categorical { .. } => 1,
            other => other.outputs(),
        }
    }

    fn check(&self) -> Result<()> {
        if self.outputs() == 0 {
            return Err(Error::invalid("policy head width", 0, ">= 1"));
        }
        match self {
            PolicyHead::Categorical { .. } => Ok(()),
            PolicyHead::Gaussian { log_std_init, .. }
            | PolicyHead::GaussianSde { log_std_init, .. } => check_log_std(*log_std_init),
            PolicyHead::TanhGaussian {
                low,
                high,
                log_std_init,
            } => {
                Error::check_len("policy action high bounds", low.len(), high.len())?;
                for (i, (&l, &h)) in low.iter().zip(high).enumerate() {
                    if !(l.is_finite() && h.is_finite() && l < h) {
                        return Err(Error::invalid(
                            format!("action bounds[{i}]"),
                            format!("[{l}, {h}]"),
                            "finite, low < high",
                        ));
                    }
                }
                check_log_std(*log_std_init)
            }
        }
    }
}

fn check_log_std(v: f32) -> Result<()> {
    if v.is_finite() && (-20.0..=5.0).contains(&v) {
        Ok(())
    } else {
        Err(Error::invalid("log_std_init", v, "finite, in [-20, 5]"))
    }
}

/// How to build an [`ActorCriticNet`].
#[derive(Clone, Debug, PartialEq)]
pub struct ActorCriticNetConfig {
    /// Observation width.
    pub obs_dim: usize,
    /// The action distribution.
    pub head: PolicyHead,
    /// Hidden widths (of each network, or of the shared trunk); empty: linear heads on the
    /// observations (allowed without a shared trunk, as SB3's `CnnPolicy` on its features).
    pub hidden: Vec<usize>,
    /// Hidden nonlinearity.
    pub activation: Activation,
    /// One trunk with two heads instead of two networks.
    pub shared_trunk: bool,
    /// Build a value head.
    pub value: bool,
    /// SB3's `ortho_init`: orthogonal weights (gain √2 hidden, 0.01 on the policy output, 1 on
    /// the value output) and zero biases; otherwise burn's default initialisation.
    pub orthogonal_init: bool,
}

impl ActorCriticNetConfig {
    /// Builds the network on `device`.
    ///
    /// # Errors
    /// A shared trunk without hidden layers, a zero width, bad action bounds or an
    /// out-of-range `log_std_init`.
    pub fn init(&self, device: &Device) -> Result<ActorCriticNet> {
        if self.shared_trunk && self.hidden.is_empty() {
            return Err(Error::invalid(
                "hidden",
                "[]",
                "one or more widths >= 1 (a shared trunk needs layers)",
            ));
        }
        let last = self.hidden.last().copied().unwrap_or(self.obs_dim);
        self.head.check()?;
        let gains = |output: f64| self.orthogonal_init.then_some((2f64.sqrt(), output));
        let mlp = |sizes: Vec<usize>, output_gain: f64| {
            MlpConfig::new(sizes)
                .with_activation(self.activation)
                .with_orthogonal(gains(output_gain))
                .init(device)
        };
        let (o, h, k) = (self.obs_dim, &self.hidden, self.head.outputs());
        let value = |input: Vec<usize>| -> Result<Option<Mlp>> {
            if self.value {
                Ok(Some(mlp(input, 1.0)?))
            } else {
                Ok(None)
            }
        };
        let sde_log_std = match &self.head {
            PolicyHead::GaussianSde { log_std_init, .. } => {
                Some(Param::from_tensor(Tensor::from_data(
                    TensorData::new(vec![*log_std_init; last * k], [last, k]),
                    device,
                )))
            }
            _ => None,
        };
        let log_std = match &self.head {
            PolicyHead::Categorical { .. } | PolicyHead::GaussianSde { .. } => None,
            PolicyHead::Gaussian { log_std_init, .. }
            | PolicyHead::TanhGaussian { log_std_init, .. } => Some(Param::from_tensor(
                Tensor::from_data(TensorData::new(vec![*log_std_init; k], [k]), device),
            )),
        };
        let (scale, bias) = match &self.head {
            PolicyHead::TanhGaussian { low, high, .. } => (
                low.iter().zip(high).map(|(l, h)| (h - l) / 2.0).collect(),
                low.iter().zip(high).map(|(l, h)| (h + l) / 2.0).collect(),
            ),
            _ => (Vec::new(), Vec::new()),
        };
        let (trunk, policy, value) = if self.shared_trunk {
            let trunk = MlpConfig::new([&[o][..], h].concat())
                .with_activation(self.activation)
                .with_orthogonal(gains(2f64.sqrt()))
                .init(device)?;
            (
                Some(trunk),
                mlp(vec![last, k], 0.01)?,
                value(vec![last, 1])?,
            )
        } else {
            (
                None,
                mlp([&[o][..], h, &[k]].concat(), 0.01)?,
                value([&[o][..], h, &[1]].concat())?,
            )
        };
        Ok(ActorCriticNet {
            encoder: None,
            trunk,
            policy,
            value,
            log_std,
            sde_log_std,
            activation: self.activation,
            head: self.head.clone(),
            scale,
            bias,
        })
    }
}

impl ActorCriticNetConfig {
    /// Builds the network on `device` behind `encoder`, which reads images and hands its
    /// features to both heads (trained by both losses); `obs_dim` must be
    /// `encoder.features()`.
    ///
    /// # Errors
    /// As [`ActorCriticNetConfig::init`], and an `obs_dim` other than the encoder's
    /// feature width.
    pub fn init_with_encoder(
        &self,
        encoder: PixelEncoder,
        device: &Device,
    ) -> Result<ActorCriticNet> {
        Error::check_len(
            "actor-critic input width (the encoder's features)",
            encoder.features(),
            self.obs_dim,
        )?;
        let mut net = self.init(device)?;
        net.encoder = Some(encoder);
        Ok(net)
    }
}

/// A policy (logits or Gaussian means) and, optionally, state values from one network:
/// separate MLPs, or heads on a shared trunk; for images, behind a [`PixelEncoder`].
#[derive(Module, Debug)]
pub struct ActorCriticNet {
    /// The image encoder whose features the rest reads (`None` for vector observations).
    pub encoder: Option<PixelEncoder>,
    /// Shared hidden layers (`None` when policy and value are separate networks).
    pub trunk: Option<Mlp>,
    /// Policy head: logits or Gaussian means (the whole policy network without a trunk).
    pub policy: Mlp,
    /// Value head (the whole value network when there is no trunk); `None` without critic.
    pub value: Option<Mlp>,
    /// Learned `log σ` of a Gaussian head (`None` for a categorical one).
    pub log_std: Option<Param<Tensor<1>>>,
    /// gSDE's learned `log σ` of the exploration weights, `[features, act_dim]`.
    pub sde_log_std: Option<Param<Tensor<2>>>,
    /// Nonlinearity applied after the trunk.
    #[module(skip)]
    pub activation: Activation,
    /// The action distribution.
    #[module(skip)]
    pub head: PolicyHead,
    /// Half-widths of the action box (tanh head only).
    #[module(skip)]
    pub scale: Vec<f32>,
    /// Centres of the action box (tanh head only).
    #[module(skip)]
    pub bias: Vec<f32>,
}

/// What [`ActorCriticNet::evaluate`] computes for a batch of observations and actions.
#[derive(Debug)]
pub struct PolicyEval {
    /// `log π(a|s)`, `[batch, 1]`.
    pub log_prob: Tensor<2>,
    /// The policy's entropy at `s`, `[batch, 1]` (for a tanh head, which has no closed
    /// form, the one-sample estimate `−log π(a|s)`, as SB3 uses).
    pub entropy: Tensor<2>,
    /// `V(s)`, `[batch, 1]` (`None` without a value head).
    pub values: Option<Tensor<2>>,
}

/// What [`ActorCriticNet::act_host`] fills, row-major on the host.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct HostActions {
    /// `[batch, action_width]`: discrete indices as `f32`; plain Gaussian samples
    /// unclipped; tanh-head actions inside the box.
    pub actions: Vec<f32>,
    /// `[batch]`: `log π(a|s)` of each action under the policy that chose it.
    pub log_probs: Vec<f32>,
    /// `[batch]`: `V(s)` (empty without a value head).
    pub values: Vec<f32>,
}

impl ActorCriticNet {
    /// The input rows the heads read for images `[batch, c, h, w]` with values in `[0, 1]`
    /// ([`crate::pixels_to_unit`]): the encoder's features, or the images flattened when
    /// the network has no encoder. Every other method takes these rows as `obs`.
    pub fn encode(&self, images: Tensor<4>) -> Tensor<2> {
        match &self.encoder {
            Some(e) => e.forward(images),
            None => images.flatten(1, 3),
        }
    }

    fn features(&self, obs: Tensor<2>) -> Tensor<2> {
        match &self.trunk {
            Some(t) => self.activation.apply(t.forward(obs)),
            None => obs,
        }
    }

    /// Policy outputs (logits or means) `[batch, outputs]` and values `[batch, 1]`.
    pub fn forward(&self, obs: Tensor<2>) -> (Tensor<2>, Option<Tensor<2>>) {
        let features = self.features(obs);
        let values = self.value.as_ref().map(|v| v.forward(features.clone()));
        (self.policy.forward(features), values)
    }

    /// Values `[batch, 1]` alone (`None` without a value head).
    pub fn values(&self, obs: Tensor<2>) -> Option<Tensor<2>> {
        let value = self.value.as_ref()?;
        Some(value.forward(self.features(obs)))
    }

    /// Number of discrete actions, or the action width of a Gaussian head.
    pub fn actions(&self) -> usize {
        self.policy.output_dim()
    }

    /// gSDE: the policy outputs (means), the detached features, the values, and the
    /// per-row `log σ = ½ log(z²·σ² + ε)`.
    fn sde_forward(&self, obs: Tensor<2>) -> (Tensor<2>, Tensor<2>, Option<Tensor<2>>, Tensor<2>) {
        let features = self.features(obs);
        let values = self.value.as_ref().map(|v| v.forward(features.clone()));
        let (latent, mean) = self.policy.forward_latent(features);
        let latent = latent.detach();
        let sigma = self.sde_log_std.as_ref().expect("gSDE head").val().exp();
        let var = (latent.clone() * latent.clone()).matmul(sigma.clone() * sigma);
        let log_std = var.add_scalar(SDE_EPS).log().mul_scalar(0.5);
        (mean, latent, values, log_std)
    }

    /// gSDE's exploration weights `Θ = σ ⊙ E` on the host (`[features, act_dim]`
    /// row-major, `E` from `rng`), which an actor keeps for several steps; empty for other
    /// heads.
    pub fn sde_weights(&self, rng: &mut EmberRng) -> Vec<f32> {
        match &self.sde_log_std {
            Some(p) => crate::distributions::sde_weights(p, rng),
            None => Vec::new(),
        }
    }

    /// `log σ` broadcast to `[rows, k]` (Gaussian heads).
    fn log_std_rows(&self, rows: usize) -> Option<Tensor<2>> {
        let ls = self.log_std.as_ref()?.val();
        let [k] = ls.dims();
        Some(ls.reshape([1, k]).expand([rows, k]))
    }

    fn box_row(&self, v: &[f32], device: &Device) -> Tensor<2> {
        Tensor::from_data(TensorData::new(v.to_vec(), [1, v.len()]), device)
    }

    /// `log π(a|s)`, the entropy and `V(s)` for observations `[batch, obs_dim]` and stored
    /// actions `[batch, action_width]` (discrete indices as `f32`), differentiable.
    pub fn evaluate(&self, obs: Tensor<2>, actions: Tensor<2>) -> PolicyEval {
        if let PolicyHead::GaussianSde { .. } = self.head {
            let (mean, _, values, log_std) = self.sde_forward(obs);
            return PolicyEval {
                log_prob: gaussian_log_prob(mean, log_std.clone(), actions),
                entropy: gaussian_entropy(log_std),
                values,
            };
        }
        let (out, values) = self.forward(obs);
        let [b, _] = out.dims();
        let (log_prob, entropy) = match &self.head {
            PolicyHead::Categorical { .. } => {
                crate::evaluate_logits(out, actions.int().reshape([b]))
            }
            PolicyHead::Gaussian { .. } => {
                let log_std = self.log_std_rows(b).expect("Gaussian head has log_std");
                (
                    gaussian_log_prob(out, log_std.clone(), actions),
                    gaussian_entropy(log_std),
                )
            }
            PolicyHead::GaussianSde { .. } => unreachable!("handled above"),
            PolicyHead::TanhGaussian { .. } => {
                let log_std = self.log_std_rows(b).expect("Gaussian head has log_std");
                let device = out.device();
                let u = unsquash(
                    actions,
                    self.box_row(&self.scale, &device),
                    self.box_row(&self.bias, &device),
                );
                let scale_log: f64 = self.scale.iter().map(|&s| (s as f64).ln()).sum();
                let log_prob = (gaussian_log_prob(out, log_std, u.clone()) - tanh_log_det(u))
                    .sub_scalar(scale_log);
                (log_prob.clone(), log_prob.neg())
            }
        };
        PolicyEval {
            log_prob,
            entropy,
            values,
        }
    }

    /// Acts on a batch as an actor needs it: one forward pass, then on the host the
    /// actions (sampled with noise from `rng` when `sample`, else the mode), their
    /// log-probabilities under this network, and the state values. `out` is cleared first.
    /// A gSDE head draws new exploration weights for this call; see
    /// [`ActorCriticNet::act_host_sde`] to keep them over calls.
    pub fn act_host(
        &self,
        obs: Tensor<2>,
        sample: bool,
        rng: &mut EmberRng,
        out: &mut HostActions,
    ) {
        if let PolicyHead::GaussianSde { .. } = self.head {
            let weights = if sample {
                self.sde_weights(rng)
            } else {
                Vec::new()
            };
            return self.act_host_sde(obs, &weights, out);
        }
        let (policy, values) = self.forward(obs);
        let policy = policy.into_data();
        let policy: &[f32] = policy.as_slice().expect("float output");
        out.actions.clear();
        out.log_probs.clear();
        out.values.clear();
        if let Some(v) = values {
            let v = v.into_data();
            out.values
                .extend_from_slice(v.as_slice().expect("float output"));
        }
        let k = self.head.outputs();
        let log_std: Vec<f32> = match &self.log_std {
            Some(p) => p
                .val()
                .into_data()
                .try_into_vec_as::<f32>()
                .expect("float parameter"),
            None => Vec::new(),
        };
        match &self.head {
            PolicyHead::GaussianSde { .. } => unreachable!("handled above"),
            PolicyHead::Categorical { .. } => categorical_host(
                policy,
                k,
                sample,
                || rng.next_f64(),
                &mut out.actions,
                &mut out.log_probs,
            ),
            PolicyHead::Gaussian { .. } | PolicyHead::TanhGaussian { .. } => {
                let squash = matches!(self.head, PolicyHead::TanhGaussian { .. });
                let mut z = Vec::with_capacity(policy.len());
                if sample {
                    crate::noise::fill_standard_normal(policy.len(), rng, &mut z);
                } else {
                    z.resize(policy.len(), 0.0);
                }
                for (mean, z) in policy.chunks_exact(k).zip(z.chunks_exact(k)) {
                    let mut lp = gaussian_log_prob_host(z, &log_std);
                    let start = out.actions.len();
                    out.actions.extend(
                        mean.iter()
                            .zip(z)
                            .zip(&log_std)
                            .map(|((m, z), l)| m + l.exp() * z),
                    );
                    if squash {
                        let u = &mut out.actions[start..];
                        lp -= tanh_log_det_host(u, &self.scale);
                        for ((a, s), b) in u.iter_mut().zip(&self.scale).zip(&self.bias) {
                            *a = a.tanh() * s + b;
                        }
                    }
                    out.log_probs.push(lp);
                }
            }
        }
    }

    /// gSDE acting with kept exploration weights `theta` (from
    /// [`ActorCriticNet::sde_weights`]; empty: the mode `μ(s)`): actions `μ + z·Θ`, their
    /// log-probabilities `N(a; μ, z²σ² + ε)` and the values, into `out` (cleared).
    ///
    /// # Panics
    /// If the head is not gSDE or `theta` is neither empty nor `features × act_dim`.
    pub fn act_host_sde(&self, obs: Tensor<2>, theta: &[f32], out: &mut HostActions) {
        let (mean, latent, values, log_std) = self.sde_forward(obs);
        let host =
            |t: Tensor<2>| -> Vec<f32> { t.into_data().try_into_vec_as::<f32>().expect("float") };
        let (mean, latent, log_std) = (host(mean), host(latent), host(log_std));
        let a = self.head.outputs();
        let k = latent.len() / (mean.len() / a).max(1);
        assert!(
            theta.is_empty() || theta.len() == k * a,
            "gSDE weights: features × act_dim"
        );
        out.actions.clear();
        out.log_probs.clear();
        out.values.clear();
        if let Some(v) = values {
            out.values.extend(host(v));
        }
        let mut z = vec![0.0f32; a];
        for ((m, f), ls) in mean
            .chunks_exact(a)
            .zip(latent.chunks_exact(k))
            .zip(log_std.chunks_exact(a))
        {
            for j in 0..a {
                let noise: f32 = if theta.is_empty() {
                    0.0
                } else {
                    f.iter()
                        .enumerate()
                        .map(|(l, f)| f * theta[l * a + j])
                        .sum()
                };
                out.actions.push(m[j] + noise);
                z[j] = noise / ls[j].exp();
            }
            out.log_probs.push(gaussian_log_prob_host(&z, ls));
        }
    }

    /// The entropy of a Gaussian head's distribution (it does not depend on the state),
    /// `None` for other heads.
    pub fn gaussian_entropy(&self) -> Option<f64> {
        if !matches!(self.head, PolicyHead::Gaussian { .. }) {
            return None;
        }
        let ls: Vec<f32> = self
            .log_std
            .as_ref()?
            .val()
            .into_data()
            .try_into_vec_as::<f32>()
            .ok()?;
        Some(ls.iter().map(|&l| 0.5 + HALF_LOG_2PI + l as f64).sum())
    }
}
