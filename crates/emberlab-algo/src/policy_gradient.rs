//! The policy-gradient learner behind A2C, REINFORCE and PPO: a categorical or Gaussian
//! policy with an optional value head (an [`ActorCriticNet`]: separate networks or a shared
//! trunk), trained on the on-policy trainer's advantages with an entropy bonus, either with
//! one plain policy-gradient step per rollout (A2C, REINFORCE) or with PPO's clipped
//! surrogate over minibatch epochs. They are configs of it ([`crate::A2cConfig`],
//! [`crate::ReinforceConfig`], [`crate::PpoConfig`]). Built for images (e.g.
//! [`crate::PpoConfig::build_pixels`]), the network reads `u8` frame stacks through an
//! image encoder both heads share, as SB3's `CnnPolicy` does.

use crate::acting::ActingCopy;
use crate::agent::{ActionBuf, Agent};
use crate::checkpoint::Checkpoint;
use crate::devices::Devices;
use crate::learner::{
    ActingRecord, AdvantageMode, FrameRolloutBatch, Metrics, OnPolicyLearner, Progress,
    RolloutBatch, check_discrete_actions,
};
use crate::optimizer::{OptimizerKind, step_in_place};
use crate::parts::{Parts, UpdateSchedule, own_leaves, run_by_rows, sum_gradients};
use crate::persist::{Persist, Visitor};
use crate::sde::SdeSchedule;
use crate::tensors::{column, host, matrix};
use crate::training_state::TrainingState;
use burn::module::Module;
use burn::optim::{GradientsParams, ModuleOptimizer};
use burn::tensor::{Device, Tensor};
use emberlab_core::{BoxSpace, EmberRng, Error, Result, Space};
use emberlab_loss::{
    checked_loss, clipped_values, entropy_loss, mse, policy_gradient_loss, ppo_clip_loss,
};
use emberlab_nn::{
    Activation, ActorCriticNet, ActorCriticNetConfig, HostActions, PixelEncoderKind, PolicyHead,
    pixels_to_unit,
};
use std::ops::Range;

/// PPO's part of the settings (absent for A2C and REINFORCE).
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PpoSettings {
    pub n_epochs: usize,
    pub batch_size: usize,
    pub clip_range: f64,
    pub clip_range_linear: bool,
    pub clip_range_vf: Option<f64>,
    pub target_kl: Option<f64>,
}

/// Everything that distinguishes A2C, REINFORCE and PPO, as the learner needs it.
#[derive(Clone, Debug, PartialEq)]
pub(crate) struct PgSettings {
    pub name: &'static str,
    pub hidden: Vec<usize>,
    pub activation: Activation,
    pub shared_trunk: bool,
    pub value: bool,
    pub orthogonal_init: bool,
    /// Initial `log σ` of a Gaussian policy (continuous actions).
    pub log_std_init: f64,
    /// A tanh-squashed Gaussian (actions inside the box) instead of a plain one (clipped).
    pub squash: bool,
    /// gSDE exploration for continuous actions, and how often (exploring acts) to draw new
    /// exploration weights (0: once per rollout).
    pub use_sde: bool,
    pub sde_sample_freq: u64,
    pub learning_rate: f64,
    /// Decay the learning rate linearly to 0 over the planned env steps (zoo's `lin_…`).
    pub learning_rate_linear: bool,
    pub optimizer: OptimizerKind,
    pub max_grad_norm: f64,
    pub ent_coef: f64,
    pub vf_coef: f64,
    pub normalize_advantage: bool,
    pub mode: AdvantageMode,
    pub sync_every: u64,
    pub seed: u64,
    pub update_schedule: UpdateSchedule,
    pub ppo: Option<PpoSettings>,
}

/// An on-policy actor-critic learner (A2C, REINFORCE, PPO) for discrete and continuous
/// action spaces.
pub struct PolicyGradient {
    settings: PgSettings,
    /// Observation width: `c · h · w` bytes of a frame stack for a learner of images.
    obs_dim: usize,
    /// `[c, h, w]` of the frame stacks of a learner built for images.
    pixels: Option<[usize; 3]>,
    learn: Device,
    plain: Device,
    head: PolicyHead,
    /// The action box of a continuous space: Gaussian samples are clipped into it before
    /// they reach the environment.
    action_box: Option<BoxSpace>,
    net: ActorCriticNet,
    optim: ModuleOptimizer,
    rng: EmberRng,
    acting: ActingCopy<ActorCriticNet>,
    host: HostActions,
    /// gSDE: the exploration weights acting uses now and when to draw new ones.
    sde: SdeSchedule,
    /// Share of the planned env steps still to come (1 → 0), for linear schedules.
    remaining: f64,
    /// Where each step's two halves of rows are differentiated.
    parts: Parts,
    /// Where the two halves of a batch of images are encoded for acting.
    acting_parts: Parts,
    progress: Progress,
}

impl std::fmt::Debug for PolicyGradient {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("PolicyGradient")
            .field("settings", &self.settings)
            .finish_non_exhaustive()
    }
}

impl PolicyGradient {
    pub(crate) fn new(
        settings: PgSettings,
        obs_space: &Space,
        action_space: &Space,
        devices: &Devices,
    ) -> Result<PolicyGradient> {
        let log_std_init = settings.log_std_init as f32;
        if settings.use_sde && settings.squash {
            return Err(Error::invalid(
                format!("{} use_sde with squash_output", settings.name),
                "both",
                "one of them (gSDE here drives a plain Gaussian)",
            ));
        }
        let (head, action_box) = match action_space {
            Space::Discrete(d) => (PolicyHead::Categorical { actions: d.n() }, None),
            Space::Box(b) if settings.use_sde => (
                PolicyHead::GaussianSde {
                    act_dim: b.dim(),
                    log_std_init,
                },
                Some(b.clone()),
            ),
            Space::Box(b) if settings.squash => (
                PolicyHead::TanhGaussian {
                    low: b.low().to_vec(),
                    high: b.high().to_vec(),
                    log_std_init,
                },
                Some(b.clone()),
            ),
            Space::Box(b) => (
                PolicyHead::Gaussian {
                    act_dim: b.dim(),
                    log_std_init,
                },
                Some(b.clone()),
            ),
        };
        let obs_dim = obs_space.flat_dim();
        let (plain, learn, _seeded) =
            crate::tensors::learner_devices(&devices.learn, settings.seed);
        let net = ActorCriticNetConfig {
            obs_dim,
            head: head.clone(),
            hidden: settings.hidden.clone(),
            activation: settings.activation,
            shared_trunk: settings.shared_trunk,
            value: settings.value,
            orthogonal_init: settings.orthogonal_init,
        }
        .init(&learn)?;
        let input = Input {
            obs_dim,
            pixels: None,
        };
        Ok(Self::assemble(
            settings,
            head,
            action_box,
            input,
            net,
            (plain, learn),
            devices,
        ))
    }

    /// The learner of `actions` discrete actions on frame stacks `obs = [c, h, w]`: an
    /// `encoder` (orthogonally initialised with gain √2 when the settings ask for SB3's
    /// initialisation) whose features feed a policy and a value network of `hidden` widths
    /// (none: linear heads, SB3's `CnnPolicy`).
    pub(crate) fn new_pixels(
        settings: PgSettings,
        (encoder, hidden): (PixelEncoderKind, &[usize]),
        obs: [usize; 3],
        actions: usize,
        devices: &Devices,
    ) -> Result<PolicyGradient> {
        if actions == 0 {
            return Err(Error::invalid(
                format!("{} actions", settings.name),
                0,
                ">= 1",
            ));
        }
        let head = PolicyHead::Categorical { actions };
        let (plain, learn, _seeded) =
            crate::tensors::learner_devices(&devices.learn, settings.seed);
        let gain = settings.orthogonal_init.then_some(2f64.sqrt());
        let encoder = encoder.init(obs, gain, &learn)?;
        let net = ActorCriticNetConfig {
            obs_dim: encoder.features(),
            head: head.clone(),
            hidden: hidden.to_vec(),
            activation: settings.activation,
            shared_trunk: false,
            value: settings.value,
            orthogonal_init: settings.orthogonal_init,
        }
        .init_with_encoder(encoder, &learn)?;
        let input = Input {
            obs_dim: obs.iter().product(),
            pixels: Some(obs),
        };
        Ok(Self::assemble(
            settings,
            head,
            None,
            input,
            net,
            (plain, learn),
            devices,
        ))
    }

    /// The learner around a freshly drawn `net` (the caller still holds the seeding guard:
    /// the acting copy reads the weights here).
    fn assemble(
        settings: PgSettings,
        head: PolicyHead,
        action_box: Option<BoxSpace>,
        input: Input,
        net: ActorCriticNet,
        (plain, learn): (Device, Device),
        devices: &Devices,
    ) -> PolicyGradient {
        PolicyGradient {
            obs_dim: input.obs_dim,
            pixels: input.pixels,
            head,
            action_box,
            acting: ActingCopy::new(&net, &devices.act, settings.sync_every),
            net,
            optim: settings.optimizer.build(settings.max_grad_norm, &learn),
            rng: EmberRng::seed_from(settings.seed).fork(4),
            host: HostActions::default(),
            sde: SdeSchedule::new(settings.sde_sample_freq),
            remaining: 1.0,
            parts: settings.update_schedule.parts("ember-pg"),
            acting_parts: settings.update_schedule.parts("ember-pg-act"),
            progress: Progress::default(),
            learn,
            plain,
            settings,
        }
    }

    /// `[c, h, w]` of the frame stacks this learner was built for (`None`: vectors).
    pub fn pixel_shape(&self) -> Option<[usize; 3]> {
        self.pixels
    }

    fn input(&self) -> Input {
        Input {
            obs_dim: self.obs_dim,
            pixels: self.pixels,
        }
    }

    /// The network being trained.
    pub fn net(&self) -> &ActorCriticNet {
        &self.net
    }

    /// Acts through the acting copy: fills `self.host` (actions as stored, log-probs,
    /// values) and `out` (what the environment gets: indices, or values clipped to the box).
    fn act_into<O: ObsRows>(&mut self, obs: &[O], sample: bool, out: &mut ActionBuf) -> Result<()> {
        let _flush = emberlab_core::denormals::flush_denormals_here();
        let input = self.input();
        let net = self.acting.module();
        let device = self.acting.device();
        let name = self.settings.name;
        let x = if input.pixels.is_some() && obs.len() >= 2 * input.obs_dim {
            // Images: the encoder, by far the costliest part of acting, reads each half
            // of the stacks on a core of its own; the heads read all the features.
            let n = obs.len() / input.obs_dim.max(1);
            Error::check_len(
                "observations (batch × obs_dim)",
                n * input.obs_dim,
                obs.len(),
            )?;
            let dim = input.obs_dim;
            let halves = run_by_rows(&mut self.acting_parts, "acting", (n, 2), |r| {
                input.rows(net, &obs[r.start * dim..r.end * dim], name, device)
            })?;
            Tensor::cat(halves, 0)
        } else {
            input.rows(net, obs, name, device)?
        };
        if let PolicyHead::GaussianSde { .. } = self.head {
            if sample {
                let rng = &mut self.rng;
                let weights = self.sde.weights(|| net.sde_weights(rng));
                net.act_host_sde(x, weights, &mut self.host);
            } else {
                net.act_host_sde(x, &[], &mut self.host);
            }
        } else {
            net.act_host(x, sample, &mut self.rng, &mut self.host);
        }
        match &self.action_box {
            None => {
                let out = out.discrete_mut(self.settings.name)?;
                out.clear();
                out.extend(self.host.actions.iter().map(|&a| a as usize));
            }
            Some(b) => {
                let out = out.continuous_mut(self.settings.name)?;
                out.clear();
                out.extend_from_slice(&self.host.actions);
                for row in out.chunks_exact_mut(b.dim()) {
                    b.clip(row);
                }
            }
        }
        Ok(())
    }

    /// The learning rate and PPO clip range now (after linear decay where configured).
    fn scheduled(&self, base: f64, linear: bool) -> f64 {
        if linear { base * self.remaining } else { base }
    }

    fn check_batch<O: ObsRows>(&self, batch: &RolloutBatch<O>) -> Result<()> {
        O::check_kind(self.pixels, self.settings.name)?;
        O::check(batch, self.obs_dim, self.head.action_width())?;
        if let PolicyHead::Categorical { actions } = self.head {
            check_discrete_actions("rollout.actions", &batch.actions, actions)?;
        }
        Ok(())
    }

    /// One policy-gradient step on the whole rollout (A2C, REINFORCE).
    fn plain_update<O: ObsRows>(&mut self, batch: &RolloutBatch<O>, step: u64) -> Result<Metrics> {
        let n = batch.len;
        let mut adv = batch.advantages.clone();
        if self.settings.normalize_advantage {
            normalize(&mut adv);
        }
        let rows = Rows {
            obs: &batch.obs,
            actions: &batch.actions,
            advantages: &adv,
            returns: &batch.returns,
            log_probs: &[],
            values: &[],
        };
        let lr = self.scheduled(
            self.settings.learning_rate,
            self.settings.learning_rate_linear,
        );
        let view = LossView {
            settings: &self.settings,
            input: self.input(),
            width: self.head.action_width(),
            learn: &self.learn,
            ppo: None,
        };
        let (grads, losses) = view.step_grads(&mut self.parts, &self.net, &rows, n, step)?;
        let mut m = Metrics::default();
        m.push("policy_loss", losses.policy_loss);
        if let Some(v) = losses.value_loss {
            m.push("value_loss", v);
        }
        m.push("entropy", losses.entropy);
        crate::faults::site("policy_gradient.step");
        step_in_place(&mut self.optim, lr, &mut self.net, grads);
        Ok(m)
    }

    /// PPO: `n_epochs` passes over the rollout in shuffled minibatches, each one step on
    /// the clipped surrogate, the (optionally clipped) value loss and the entropy bonus;
    /// stops early when the approximate KL divergence exceeds 1.5 × `target_kl`. Works on
    /// `work`, copies of the learner's fields; the caller keeps them only if this succeeds.
    fn ppo_update<O: ObsRows>(
        &mut self,
        work: &mut Work,
        batch: &RolloutBatch<O>,
        step: u64,
        ppo: &PpoSettings,
    ) -> Result<Metrics> {
        let Work { net, optim, rng } = work;
        let n = batch.len;
        if batch.log_probs.len() != n {
            return Err(Error::invalid(
                "rollout.log_probs",
                format!("{} values for {n} rows", batch.log_probs.len()),
                "the behaviour policy's log-probability of every row (PPO needs them)",
            ));
        }
        if ppo.clip_range_vf.is_some() && batch.values.len() != n {
            return Err(Error::invalid(
                "rollout.values",
                format!("{} values for {n} rows", batch.values.len()),
                "the acting value of every row (clip_range_vf needs them)",
            ));
        }
        let s = &self.settings;
        let lr = self.scheduled(s.learning_rate, s.learning_rate_linear);
        let clip = self.scheduled(ppo.clip_range, ppo.clip_range_linear);
        let (obs_dim, w) = (self.obs_dim, self.head.action_width());
        let view = LossView {
            settings: &self.settings,
            input: self.input(),
            width: w,
            learn: &self.learn,
            ppo: Some((clip, ppo.clip_range_vf)),
        };
        let mut order: Vec<usize> = (0..n).collect();
        let mut mb = Minibatch::<O>::default();
        let mut sums = [0.0f64; 5];
        let mut count = 0usize;
        let mut epochs = 0usize;
        'epochs: for _ in 0..ppo.n_epochs {
            shuffle(&mut order, rng);
            for rows in order.chunks(ppo.batch_size) {
                mb.gather(batch, rows, obs_dim, w);
                if view.settings.normalize_advantage {
                    normalize(&mut mb.advantages);
                }
                let k = rows.len();
                let (grads, losses) = view.step_grads(&mut self.parts, net, &mb.rows(), k, step)?;
                let ratios = &losses.ratios;
                let approx_kl = ratios
                    .iter()
                    .map(|&r| (r as f64 - 1.0) - (r as f64).ln())
                    .sum::<f64>()
                    / k as f64;
                if let Some(target) = ppo.target_kl
                    && approx_kl > 1.5 * target
                {
                    break 'epochs;
                }
                let clipped = ratios
                    .iter()
                    .filter(|&&r| (r as f64 - 1.0).abs() > clip)
                    .count() as f64
                    / k as f64;
                step_in_place(optim, lr, net, grads);
                crate::faults::site("ppo.after_minibatch_step");
                for (sum, v) in sums.iter_mut().zip([
                    losses.policy_loss,
                    losses.value_loss.unwrap_or(0.0),
                    losses.entropy,
                    approx_kl,
                    clipped,
                ]) {
                    *sum += v;
                }
                count += 1;
            }
            epochs += 1;
        }
        let mut m = Metrics::default();
        let names = [
            "policy_loss",
            "value_loss",
            "entropy",
            "approx_kl",
            "clip_fraction",
        ];
        for (name, sum) in names.into_iter().zip(sums) {
            m.push(name, if count > 0 { sum / count as f64 } else { 0.0 });
        }
        m.push("epochs", epochs as f64);
        m.push("learning_rate", lr);
        Ok(m)
    }
}

/// The rows one optimizer step learns from (a PPO minibatch, or a whole rollout), as
/// host slices: `obs_dim` observation values and `width` action values per row.
struct Rows<'a, O> {
    obs: &'a [O],
    actions: &'a [f32],
    advantages: &'a [f32],
    returns: &'a [f32],
    /// The behaviour policy's (PPO), else empty.
    log_probs: &'a [f32],
    /// The values recorded while acting (PPO's value clipping), else empty.
    values: &'a [f32],
}

/// What a step's loss needs beside its rows.
struct LossView<'a> {
    settings: &'a PgSettings,
    input: Input,
    width: usize,
    learn: &'a Device,
    /// PPO's ratio clip range and optional value clip range (`None`: the plain
    /// policy-gradient loss).
    ppo: Option<(f64, Option<f64>)>,
}

/// The losses of one step, averaged over its rows, and PPO's probability ratios.
struct StepLosses {
    policy_loss: f64,
    value_loss: Option<f64>,
    entropy: f64,
    ratios: Vec<f32>,
}

/// What one share of a step's rows computed: the gradients of its loss scaled by its share
/// of the rows, and its losses unscaled.
struct ShareGrads {
    grads: GradientsParams,
    share: f64,
    losses: StepLosses,
}

impl LossView<'_> {
    /// The gradients of the step's loss over `n` rows and its losses: the rows' two halves
    /// differentiated side by side (each through its own leaves of `net`, its loss scaled
    /// by its share of the rows), their gradients added in order. The halves do not depend
    /// on the schedule, so neither do the bits.
    fn step_grads<O: ObsRows>(
        &self,
        parts: &mut Parts,
        net: &ActorCriticNet,
        rows: &Rows<'_, O>,
        n: usize,
        step: u64,
    ) -> Result<(GradientsParams, StepLosses)> {
        let what = format!("{} update {step}", self.settings.name);
        let shares = run_by_rows(parts, &what, (n, 2), |r| {
            self.share_grads(net, rows, r, n, step)
        })?;
        let mut total = StepLosses {
            policy_loss: 0.0,
            value_loss: None,
            entropy: 0.0,
            ratios: Vec::with_capacity(n),
        };
        let mut grads = Vec::with_capacity(shares.len());
        for s in shares {
            total.policy_loss += s.share * s.losses.policy_loss;
            if let Some(v) = s.losses.value_loss {
                *total.value_loss.get_or_insert(0.0) += s.share * v;
            }
            total.entropy += s.share * s.losses.entropy;
            total.ratios.extend(s.losses.ratios);
            grads.push(s.grads);
        }
        Ok((sum_gradients(net, grads), total))
    }

    /// One share of the rows: its policy loss (clipped for PPO), entropy bonus and
    /// (optionally clipped) value loss, each checked finite, and their gradients.
    fn share_grads<O: ObsRows>(
        &self,
        net: &ActorCriticNet,
        rows: &Rows<'_, O>,
        r: Range<usize>,
        n: usize,
        step: u64,
    ) -> Result<ShareGrads> {
        let s = self.settings;
        let (k, dim, w, learn) = (r.len(), self.input.obs_dim, self.width, self.learn);
        let net = own_leaves(net);
        let obs = &rows.obs[r.start * dim..r.end * dim];
        let obs = self.input.rows(&net, obs, s.name, learn)?;
        let actions = matrix(&rows.actions[r.start * w..r.end * w], k, w, learn);
        let eval = net.evaluate(obs, actions);
        let adv = column(&rows.advantages[r.clone()], learn);
        let (policy_loss, ratios) = match self.ppo {
            Some((clip, _)) => {
                let old = column(&rows.log_probs[r.clone()], learn);
                let (loss, ratio) = ppo_clip_loss(eval.log_prob, old, adv, clip);
                (loss, host(ratio))
            }
            None => (policy_gradient_loss(eval.log_prob, adv), Vec::new()),
        };
        let entropy = eval.entropy.clone().mean().into_scalar::<f64>();
        let mut total = policy_loss.clone() + entropy_loss(eval.entropy).mul_scalar(s.ent_coef);
        let mut value_loss = None;
        if let Some(v) = eval.values {
            let v = match self.ppo.and_then(|(_, vf)| vf) {
                Some(c) => clipped_values(v, column(&rows.values[r.clone()], learn), c),
                None => v,
            };
            let loss = mse(v, column(&rows.returns[r.clone()], learn));
            value_loss = Some(checked_loss("value loss", &loss, step)?);
            total = total + loss.mul_scalar(s.vf_coef);
        }
        let policy_loss = checked_loss("policy loss", &policy_loss, step)?;
        checked_loss(&format!("{} loss", s.name), &total, step)?;
        let share = k as f64 / n as f64;
        let grads = GradientsParams::from_grads(total.mul_scalar(share).backward(), &net);
        Ok(ShareGrads {
            grads,
            share,
            losses: StepLosses {
                policy_loss,
                value_loss,
                entropy,
                ratios,
            },
        })
    }
}

/// What a PPO update changes: copies of the network, optimizer and generator (handles,
/// no weight copies), committed by the caller only when every minibatch succeeded.
struct Work {
    net: ActorCriticNet,
    optim: ModuleOptimizer,
    rng: EmberRng,
}

/// The rows of one PPO minibatch, gathered on the host.
#[derive(Debug, Default)]
struct Minibatch<O> {
    obs: Vec<O>,
    actions: Vec<f32>,
    advantages: Vec<f32>,
    returns: Vec<f32>,
    log_probs: Vec<f32>,
    values: Vec<f32>,
}

impl<O: Copy> Minibatch<O> {
    fn rows(&self) -> Rows<'_, O> {
        Rows {
            obs: &self.obs,
            actions: &self.actions,
            advantages: &self.advantages,
            returns: &self.returns,
            log_probs: &self.log_probs,
            values: &self.values,
        }
    }

    fn gather(&mut self, batch: &RolloutBatch<O>, rows: &[usize], obs_dim: usize, w: usize) {
        self.obs.clear();
        self.actions.clear();
        self.advantages.clear();
        self.returns.clear();
        self.log_probs.clear();
        self.values.clear();
        for &i in rows {
            self.obs
                .extend_from_slice(&batch.obs[i * obs_dim..(i + 1) * obs_dim]);
            self.actions
                .extend_from_slice(&batch.actions[i * w..(i + 1) * w]);
            self.advantages.push(batch.advantages[i]);
            self.returns.push(batch.returns[i]);
            self.log_probs.push(batch.log_probs[i]);
            if !batch.values.is_empty() {
                self.values.push(batch.values[i]);
            }
        }
    }
}

/// What the learner's observations are: their width and, for images, the stacks' shape.
#[derive(Clone, Copy, Debug)]
struct Input {
    obs_dim: usize,
    pixels: Option<[usize; 3]>,
}

impl Input {
    /// The heads' input for the observation rows `obs` on `device`: vectors as they are,
    /// image stacks through `net`'s encoder.
    fn rows<O: ObsRows>(
        &self,
        net: &ActorCriticNet,
        obs: &[O],
        name: &str,
        device: &Device,
    ) -> Result<Tensor<2>> {
        O::check_kind(self.pixels, name)?;
        let n = obs.len() / self.obs_dim.max(1);
        Error::check_len(
            "observations (batch × obs_dim)",
            n * self.obs_dim,
            obs.len(),
        )?;
        O::input(net, obs, n, self, device)
    }
}

/// Observation rows a policy-gradient learner takes: `f32` vectors, or `u8` frame stacks
/// (divided by 255 on the device and read through the network's encoder).
trait ObsRows: Copy + Default + Send + Sync + 'static {
    /// Checks that a learner of `pixels` (or of vectors, `None`) takes these rows.
    fn check_kind(pixels: Option<[usize; 3]>, name: &str) -> Result<()>;
    /// The heads' input for `n` checked rows.
    fn input(
        net: &ActorCriticNet,
        rows: &[Self],
        n: usize,
        input: &Input,
        device: &Device,
    ) -> Result<Tensor<2>>;
    /// [`RolloutBatch::check`] for these rows.
    fn check(batch: &RolloutBatch<Self>, obs_dim: usize, act_dim: usize) -> Result<()>;
}

impl ObsRows for f32 {
    fn check_kind(pixels: Option<[usize; 3]>, name: &str) -> Result<()> {
        match pixels {
            None => Ok(()),
            Some(_) => Err(Error::invalid(
                format!("{name} observations"),
                "f32 vectors",
                "images through `act_pixels`, `values_pixels` and `update_frames` (this \
                 learner was built for images)",
            )),
        }
    }

    fn input(
        _net: &ActorCriticNet,
        rows: &[f32],
        n: usize,
        input: &Input,
        device: &Device,
    ) -> Result<Tensor<2>> {
        Ok(matrix(rows, n, input.obs_dim, device))
    }

    fn check(batch: &RolloutBatch, obs_dim: usize, act_dim: usize) -> Result<()> {
        batch.check(obs_dim, act_dim)
    }
}

impl ObsRows for u8 {
    fn check_kind(pixels: Option<[usize; 3]>, _name: &str) -> Result<()> {
        match pixels {
            Some(_) => Ok(()),
            None => Err(crate::agent::pixels_unavailable("images")),
        }
    }

    fn input(
        net: &ActorCriticNet,
        rows: &[u8],
        n: usize,
        input: &Input,
        device: &Device,
    ) -> Result<Tensor<2>> {
        let [c, h, w] = input
            .pixels
            .ok_or_else(|| crate::agent::pixels_unavailable("images"))?;
        if n == 0 {
            return Err(Error::invalid("image observations", 0, ">= 1 stack"));
        }
        Ok(net.encode(pixels_to_unit(rows, [n, c, h, w], device)?))
    }

    fn check(batch: &FrameRolloutBatch, obs_dim: usize, act_dim: usize) -> Result<()> {
        batch.check_frames(obs_dim, act_dim)
    }
}

/// Standardises `x` in place (unbiased variance, as PyTorch's `std`); one value is left as is.
fn normalize(x: &mut [f32]) {
    let n = x.len();
    if n < 2 {
        return;
    }
    let mean = x.iter().sum::<f32>() / n as f32;
    let var = x.iter().map(|a| (a - mean) * (a - mean)).sum::<f32>() / (n - 1) as f32;
    let scale = 1.0 / (var.sqrt() + 1e-8);
    x.iter_mut().for_each(|a| *a = (*a - mean) * scale);
}

/// Fisher–Yates shuffle from `rng`.
fn shuffle(order: &mut [usize], rng: &mut EmberRng) {
    for i in (1..order.len()).rev() {
        let j = (rng.next_f64() * (i + 1) as f64) as usize;
        order.swap(i, j.min(i));
    }
}

impl crate::agent::OnnxPolicy for PolicyGradient {
    fn onnx_images(&self) -> Option<[usize; 3]> {
        self.pixels
    }

    /// The most likely action of a categorical head; the mean of a Gaussian or gSDE head
    /// clipped to the action box; `scale · tanh(μ) + bias` of a tanh head. Observation
    /// statistics, when the run normalised observations, are the caller's to put first.
    fn onnx_outputs(
        &self,
        g: &mut emberlab_nn::OnnxGraph,
        obs: &str,
    ) -> Result<Vec<crate::agent::OnnxOutput>> {
        let net = self.acting.module();
        let rows = match self.pixels {
            Some(_) => emberlab_nn::image_rows_onnx(g, net.encoder.as_ref(), obs)?,
            None => obs.to_string(),
        };
        let greedy = net.greedy_onnx(g, &rows)?;
        let (value, width) = match &self.action_box {
            None => (greedy, None),
            Some(b) => (g.clamp_columns(&greedy, b.low(), b.high())?, Some(b.dim())),
        };
        Ok(vec![crate::agent::OnnxOutput {
            value,
            name: "action",
            width,
        }])
    }
}

impl Agent for PolicyGradient {
    fn obs_dim(&self) -> usize {
        self.obs_dim
    }

    fn act(&mut self, obs: &[f32], explore: bool, out: &mut ActionBuf) -> Result<()> {
        self.act_into(obs, explore, out)
    }

    fn act_pixels(&mut self, obs: &[u8], explore: bool, out: &mut ActionBuf) -> Result<()> {
        self.act_into(obs, explore, out)
    }
}

impl OnPolicyLearner for PolicyGradient {
    fn act_rollout(
        &mut self,
        obs: &[f32],
        out: &mut ActionBuf,
        record: &mut ActingRecord,
    ) -> Result<()> {
        self.act_into(obs, true, out)?;
        self.record_acting(record);
        Ok(())
    }

    fn act_rollout_pixels(
        &mut self,
        obs: &[u8],
        out: &mut ActionBuf,
        record: &mut ActingRecord,
    ) -> Result<()> {
        self.act_into(obs, true, out)?;
        self.record_acting(record);
        Ok(())
    }

    fn on_env_steps(&mut self, env_steps: u64, total_steps: u64) {
        self.remaining = 1.0 - (env_steps as f64 / total_steps.max(1) as f64).min(1.0);
    }

    fn advantage_mode(&self) -> AdvantageMode {
        self.settings.mode
    }

    fn values(&mut self, obs: &[f32]) -> Result<Option<Vec<f32>>> {
        self.values_of(obs)
    }

    fn values_pixels(&mut self, obs: &[u8]) -> Result<Option<Vec<f32>>> {
        self.values_of(obs)
    }

    fn update(&mut self, batch: &RolloutBatch, step: u64) -> Result<Metrics> {
        self.update_rows(batch, step)
    }

    fn update_frames(&mut self, batch: &FrameRolloutBatch, step: u64) -> Result<Metrics> {
        self.update_rows(batch, step)
    }

    fn progress(&mut self) -> &mut Progress {
        &mut self.progress
    }

    fn checkpoint(&mut self) -> Option<&mut dyn Checkpoint> {
        Some(self)
    }

    fn training_state(&mut self) -> Option<&mut dyn TrainingState> {
        Some(self)
    }
}

impl PolicyGradient {
    /// What the last act recorded, into `record` (cleared first).
    fn record_acting(&self, record: &mut ActingRecord) {
        record.clear();
        if self.action_box.is_some() {
            record.stored_actions.extend_from_slice(&self.host.actions);
        }
        record.log_probs.extend_from_slice(&self.host.log_probs);
        record.values.extend_from_slice(&self.host.values);
    }

    /// Values of observation rows on the plain device.
    fn values_of<O: ObsRows>(&mut self, obs: &[O]) -> Result<Option<Vec<f32>>> {
        let _flush = emberlab_core::denormals::flush_denormals_here();
        let net = self.net.valid();
        if net.value.is_none() {
            return Ok(None);
        }
        let x = self
            .input()
            .rows(&net, obs, self.settings.name, &self.plain)?;
        Ok(net.values(x).map(host))
    }

    /// One update from rows of either kind (see [`OnPolicyLearner::update`]).
    fn update_rows<O: ObsRows>(&mut self, batch: &RolloutBatch<O>, step: u64) -> Result<Metrics> {
        self.check_batch(batch)?;
        let _flush = emberlab_core::denormals::flush_denormals_here();
        let metrics = match self.settings.ppo.clone() {
            None => self.plain_update(batch, step)?,
            Some(ppo) => {
                let mut work = Work {
                    net: self.net.clone(),
                    optim: self.optim.clone(),
                    rng: self.rng.clone(),
                };
                let m = self.ppo_update(&mut work, batch, step, &ppo)?;
                (self.net, self.optim, self.rng) = (work.net, work.optim, work.rng);
                m
            }
        };
        self.acting.after_update(&self.net);
        self.sde.updated();
        Ok(metrics)
    }
}

impl Persist for PolicyGradient {
    fn kind(&self) -> &str {
        self.settings.name
    }

    /// The actor-critic network and its optimizer; the generator, the counters, the
    /// acting copy and the gSDE schedule.
    fn persist<V: Visitor>(&mut self, v: &mut V) -> Result<()> {
        v.net("actor_critic", &mut self.net)?;
        v.optim("optim", &mut self.optim)?;
        v.value(&mut self.rng)?;
        v.value(&mut self.progress)?;
        v.acting(&mut self.acting, &mut self.net)?;
        v.value(&mut self.sde)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shuffles_are_permutations_and_normalising_standardises() {
        let mut order: Vec<usize> = (0..100).collect();
        shuffle(&mut order, &mut EmberRng::seed_from(3));
        let mut sorted = order.clone();
        sorted.sort();
        assert_eq!(sorted, (0..100).collect::<Vec<_>>());
        assert_ne!(order, sorted);
        let mut x = vec![1.0, 2.0, 3.0, 4.0];
        normalize(&mut x);
        let mean: f32 = x.iter().sum::<f32>() / 4.0;
        let var: f32 = x.iter().map(|a| a * a).sum::<f32>() / 3.0;
        assert!(mean.abs() < 1e-6 && (var - 1.0).abs() < 1e-5, "{x:?}");
    }
}
