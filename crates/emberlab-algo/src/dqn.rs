//! DQN (Mnih et al. 2015) with the double-DQN target (van Hasselt et al. 2016), a hard-copied
//! target network, an ε-greedy schedule, Huber loss and gradient-norm clipping.

use crate::acting::ActingCopy;
use crate::agent::{ActionBuf, Agent};
use crate::checkpoint::Checkpoint;
use crate::config::{Validate, check_hidden, check_open_closed, check_positive, check_range};
use crate::devices::Devices;
use crate::learner::{
    Metrics, OffPolicyLearner, Progress, Update, check_discrete_actions, check_frame_batch,
};
use crate::off_policy::OffPolicyConfig;
use crate::optimizer::{OptimizerKind, step_in_place};
use crate::parts::{Parts, UpdateSchedule, own_leaves, run_by_rows, sum_gradients};
use crate::persist::{Persist, Visitor};
use crate::replay::ReplayConfig;
use crate::schedule::LinearSchedule;
use crate::tensors::{column, host, host_indices, index_column, matrix};
use crate::training_state::TrainingState;
use burn::module::Module;
use burn::optim::{GradientsParams, ModuleOptimizer};
use burn::tensor::{Device, Tensor};
use emberlab_core::{Batch, EmberRng, Error, Result, Space};
use emberlab_loss::{
    checked_loss, double_dqn_value, huber, huber_weighted, td_target, td_target_discounted,
};
use emberlab_nn::{DiscreteQ, FrozenMlp, MlpConfig, PixelEncoderKind, hard_target, pixels_to_unit};
use emberlab_replay::FrameBatch;
use serde::{Deserialize, Serialize};

/// DQN hyper-parameters (SB3 / rl-baselines3-zoo names and defaults).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct DqnConfig {
    /// Hidden widths of the Q network.
    pub hidden: Vec<usize>,
    /// Adam learning rate.
    pub learning_rate: f64,
    /// Discount γ in `[0, 1]`.
    pub gamma: f64,
    /// Double-DQN target (online net picks, target net values); otherwise `max Q̄`.
    pub double_q: bool,
    /// Copy the online net into the target every this many env steps.
    pub target_update_interval: u64,
    /// ε over the share of training done.
    pub exploration: LinearSchedule,
    /// Huber threshold.
    pub huber_delta: f64,
    /// Clip the gradient's global norm to this (0: no clipping).
    pub max_grad_norm: f64,
    /// Refresh the acting copy every this many updates.
    pub sync_every: u64,
    /// Parallel (each half of the batch's rows on a core of its own, their gradients
    /// summed for one step) or sequential update, or `auto` (the default): whichever runs
    /// faster here; the same results every way.
    pub update_schedule: UpdateSchedule,
    /// Seed of the initial weights and of the exploration.
    pub seed: u64,
    /// On images ([`DqnConfig::build_pixels`]): the encoder in front of the Q-network,
    /// `"nature"` (SB3's `NatureCNN`) or `"impala"`.
    pub encoder: PixelEncoderKind,
    /// On images: hidden widths between the encoder's features and the action values
    /// (SB3's DQN on `NatureCNN`: none, one linear layer).
    pub pixel_hidden: Vec<usize>,
}

impl Default for DqnConfig {
    fn default() -> Self {
        DqnConfig {
            hidden: vec![64, 64],
            learning_rate: 1e-4,
            gamma: 0.99,
            double_q: true,
            target_update_interval: 10_000,
            exploration: LinearSchedule {
                start: 1.0,
                end: 0.05,
                fraction: 0.1,
            },
            huber_delta: 1.0,
            max_grad_norm: 10.0,
            sync_every: 1,
            update_schedule: UpdateSchedule::Auto,
            seed: 0,
            encoder: PixelEncoderKind::Nature,
            pixel_hidden: Vec::new(),
        }
    }
}

impl Validate for DqnConfig {
    fn validate(&self) -> Result<()> {
        check_hidden("hidden", &self.hidden)?;
        check_open_closed("learning_rate", self.learning_rate, 0.0, 1.0)?;
        check_range("gamma", self.gamma, 0.0, 1.0)?;
        check_positive(
            "target_update_interval",
            self.target_update_interval as usize,
        )?;
        check_range("exploration.start", self.exploration.start, 0.0, 1.0)?;
        check_range("exploration.end", self.exploration.end, 0.0, 1.0)?;
        check_range("exploration.fraction", self.exploration.fraction, 0.0, 1.0)?;
        check_open_closed("huber_delta", self.huber_delta, 0.0, 1e9)?;
        check_range("max_grad_norm", self.max_grad_norm, 0.0, 1e9)?;
        crate::config::check_widths("pixel_hidden", &self.pixel_hidden)
    }
}

impl DqnConfig {
    /// The DQN learner for `obs_space` → `action_space` (a `Discrete`), learning on
    /// `devices.learn` (autodiff added), acting on `devices.act`.
    ///
    /// # Errors
    /// A config value out of range, or an action space that is not `Discrete`.
    pub fn build(&self, obs_space: &Space, action_space: &Space, devices: &Devices) -> Result<Dqn> {
        Dqn::new(self, obs_space, action_space, devices)
    }

    /// The DQN learner for image observations `obs = [channels, height, width]` (stacks of
    /// `u8` frames, e.g. `FrameVecEnv::obs_shape`) and `actions` discrete actions: the
    /// Q-network is `self.encoder` followed by `self.pixel_hidden` layers. It acts through
    /// [`Agent::act_pixels`] and learns through [`OffPolicyLearner::update_frames`].
    ///
    /// # Errors
    /// A config value out of range, no actions, or an image too small for the encoder.
    pub fn build_pixels(&self, obs: [usize; 3], actions: usize, devices: &Devices) -> Result<Dqn> {
        Dqn::new_pixels(self, obs, actions, devices)
    }

    /// rl-baselines3-zoo's hyper-parameters for `env_id` (the trainer settings too).
    /// Known: `CartPole-v1`, `Acrobot-v1` (zoo's `gradient_steps: -1` with one env is 4
    /// updates per 4 steps), and every Atari id (zoo's `atari` entry, for
    /// [`DqnConfig::build_pixels`] on stacks of 4 frames; evaluation every 250k steps on 5
    /// games is ours). zoo trains SB3's DQN, whose target is the target network's own
    /// maximum, so every preset sets `double_q: false`.
    ///
    /// # Errors
    /// An id zoo has no DQN entry for.
    pub fn zoo(env_id: &str) -> Result<(DqnConfig, OffPolicyConfig)> {
        match env_id {
            "CartPole-v1" => Ok((
                DqnConfig {
                    hidden: vec![256, 256],
                    double_q: false,
                    learning_rate: 2.3e-3,
                    target_update_interval: 10,
                    exploration: LinearSchedule {
                        start: 1.0,
                        end: 0.04,
                        fraction: 0.16,
                    },
                    ..DqnConfig::default()
                },
                OffPolicyConfig {
                    total_steps: 50_000,
                    replay: ReplayConfig {
                        capacity: 100_000,
                        ..ReplayConfig::default()
                    },
                    learning_starts: 1000,
                    batch_size: 64,
                    train_freq: 256,
                    gradient_steps: 128,
                    ..OffPolicyConfig::default()
                },
            )),
            "Acrobot-v1" => Ok((
                DqnConfig {
                    hidden: vec![256, 256],
                    double_q: false,
                    learning_rate: 6.3e-4,
                    target_update_interval: 250,
                    exploration: LinearSchedule {
                        start: 1.0,
                        end: 0.1,
                        fraction: 0.12,
                    },
                    ..DqnConfig::default()
                },
                OffPolicyConfig {
                    total_steps: 100_000,
                    replay: ReplayConfig {
                        capacity: 50_000,
                        ..ReplayConfig::default()
                    },
                    learning_starts: 0,
                    batch_size: 128,
                    train_freq: 4,
                    gradient_steps: 4,
                    ..OffPolicyConfig::default()
                },
            )),
            // zoo's `atari` entry: NatureCNN on stacks of 4 frames, 10M steps.
            atari if emberlab_env::is_atari_id(atari) => Ok((
                DqnConfig {
                    learning_rate: 1e-4,
                    double_q: false,
                    target_update_interval: 1000,
                    exploration: LinearSchedule {
                        start: 1.0,
                        end: 0.01,
                        fraction: 0.1,
                    },
                    ..DqnConfig::default()
                },
                OffPolicyConfig {
                    total_steps: 10_000_000,
                    replay: ReplayConfig {
                        capacity: 100_000,
                        ..ReplayConfig::default()
                    },
                    learning_starts: 100_000,
                    batch_size: 32,
                    train_freq: 4,
                    gradient_steps: 1,
                    eval_every: 250_000,
                    eval_episodes: 5,
                    ..OffPolicyConfig::default()
                },
            )),
            other => Err(Error::invalid(
                "DQN zoo env id",
                other,
                "one of CartPole-v1, Acrobot-v1, or an Atari id (ALE/Pong-v5, PongNoFrameskip-v4)",
            )),
        }
    }
}

/// A DQN learner and ε-greedy agent.
pub struct Dqn {
    config: DqnConfig,
    obs_dim: usize,
    /// `[c, h, w]` of an image observation, for a Q-network on pixels.
    pixels: Option<[usize; 3]>,
    actions: usize,
    learn: Device,
    plain: Device,
    q: DiscreteQ,
    target: DiscreteQ,
    optim: ModuleOptimizer,
    epsilon: f64,
    last_target_update: u64,
    rng: EmberRng,
    /// The acting copy, with the host fast path when it acts on flex or ndarray.
    acting: ActingCopy<DiscreteQ, FrozenMlp>,
    progress: Progress,
    /// Runs the halves of the rows side by side.
    parts: Parts,
}

impl std::fmt::Debug for Dqn {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Dqn")
            .field("config", &self.config)
            .field("epsilon", &self.epsilon)
            .finish_non_exhaustive()
    }
}

/// The columns of a batch a DQN update reads: a vector batch's or an image batch's.
struct TdBatch<'a> {
    len: usize,
    obs: Inputs<'a>,
    next_obs: Inputs<'a>,
    action: &'a [f32],
    reward: &'a [f32],
    terminated: &'a [f32],
    /// Empty: every row bootstraps with γ.
    discount: &'a [f32],
    weights: &'a [f32],
    unweighted: bool,
}

impl<'a> TdBatch<'a> {
    fn vector(batch: &'a Batch) -> Self {
        TdBatch {
            len: batch.len,
            obs: Inputs::Vector(&batch.obs, batch.obs_dim),
            next_obs: Inputs::Vector(&batch.next_obs, batch.obs_dim),
            action: &batch.action,
            reward: &batch.reward,
            terminated: &batch.terminated,
            discount: &batch.discount,
            weights: &batch.weights,
            unweighted: batch.unweighted(),
        }
    }

    fn frames(batch: &'a FrameBatch, shape: [usize; 3]) -> Self {
        TdBatch {
            len: batch.len,
            obs: Inputs::Pixels(&batch.obs, shape),
            next_obs: Inputs::Pixels(&batch.next_obs, shape),
            action: &batch.action,
            reward: &batch.reward,
            terminated: &batch.terminated,
            discount: &batch.discount,
            weights: &batch.weights,
            unweighted: batch.weights.iter().all(|&w| w == 1.0),
        }
    }
}

/// Observation rows: `f32` vectors of a width, or `u8` images of a shape.
#[derive(Clone, Copy)]
enum Inputs<'a> {
    Vector(&'a [f32], usize),
    Pixels(&'a [u8], [usize; 3]),
}

/// Rows of [`Inputs`] as a tensor on a device.
#[derive(Clone)]
enum InputRows {
    Vector(Tensor<2>),
    Pixels(Tensor<4>),
}

impl Inputs<'_> {
    fn rows(&self, rows: std::ops::Range<usize>, device: &Device) -> Result<InputRows> {
        let n = rows.len();
        Ok(match *self {
            Inputs::Vector(v, o) => {
                InputRows::Vector(matrix(&v[rows.start * o..rows.end * o], n, o, device))
            }
            Inputs::Pixels(b, [c, h, w]) => {
                let per = c * h * w;
                InputRows::Pixels(pixels_to_unit(
                    &b[rows.start * per..rows.end * per],
                    [n, c, h, w],
                    device,
                )?)
            }
        })
    }
}

impl InputRows {
    /// The action values of `q`.
    fn q(&self, q: &DiscreteQ) -> Tensor<2> {
        match self {
            InputRows::Vector(x) => q.forward(x.clone()),
            InputRows::Pixels(x) => q.forward_pixels(x.clone()),
        }
    }
}

/// What the halves of a DQN update read: the learner's networks from before the update.
struct DqnView<'a> {
    config: &'a DqnConfig,
    plain: &'a Device,
    learn: &'a Device,
    q: &'a DiscreteQ,
    target: &'a DiscreteQ,
    /// The online network without autodiff, when the target is double-DQN's.
    online: Option<DiscreteQ>,
}

impl DqnView<'_> {
    /// The gradients of the loss over the batch's `rows` (scaled by their fraction of the
    /// batch, checked), the loss's share and the rows' TD errors;
    fn rows_grads(
        &self,
        batch: &TdBatch<'_>,
        rows: std::ops::Range<usize>,
        step: u64,
    ) -> Result<(GradientsParams, f64, Vec<f32>)> {
        let (b, n) = (batch.len, rows.len());
        let share = n as f64 / b as f64;
        let (p, l) = (&self.plain, &self.learn);
        let next_obs = batch.next_obs.rows(rows.clone(), p)?;
        let reward = column(&batch.reward[rows.clone()], p);
        let terminated = column(&batch.terminated[rows.clone()], p);
        let next_target = next_obs.q(self.target);
        let value = match &self.online {
            Some(q) => double_dqn_value(next_obs.q(q), next_target),
            None => next_target.max_dim(1),
        };
        let y = if batch.discount.is_empty() {
            td_target(reward, terminated, value, self.config.gamma)
        } else {
            let discount = column(&batch.discount[rows.clone()], p);
            td_target_discounted(reward, terminated, value, discount)
        };
        let y = Tensor::from_inner(y);
        let q = own_leaves(self.q);
        let q_taken = batch
            .obs
            .rows(rows.clone(), l)?
            .q(&q)
            .gather(1, index_column(&batch.action[rows.clone()], l));
        let td_errors = host((q_taken.clone().detach() - y.clone()).abs());
        let loss = if batch.unweighted {
            huber(q_taken, y, self.config.huber_delta)
        } else {
            let w = column(&batch.weights[rows], l);
            huber_weighted(q_taken, y, self.config.huber_delta, w)
        }
        .mul_scalar(share);
        let value = checked_loss("DQN loss", &loss, step)?;
        Ok((
            GradientsParams::from_grads(loss.backward(), &q),
            value,
            td_errors,
        ))
    }
}

impl Dqn {
    fn new(
        config: &DqnConfig,
        obs_space: &Space,
        action_space: &Space,
        devices: &Devices,
    ) -> Result<Dqn> {
        config.validate()?;
        let Space::Discrete(d) = action_space else {
            return Err(Error::invalid(
                "DQN action space",
                action_space,
                "a Discrete space",
            ));
        };
        let obs_dim = obs_space.flat_dim();
        let (plain, learn, _seeded) = crate::tensors::learner_devices(&devices.learn, config.seed);
        let mut sizes = vec![obs_dim];
        sizes.extend(&config.hidden);
        sizes.push(d.n());
        let q = DiscreteQ::new(MlpConfig::new(sizes).init(&learn)?);
        Ok(Dqn::with_q(
            config,
            q,
            obs_dim,
            None,
            d.n(),
            (plain, learn),
            devices,
        ))
    }

    fn new_pixels(
        config: &DqnConfig,
        obs: [usize; 3],
        actions: usize,
        devices: &Devices,
    ) -> Result<Dqn> {
        config.validate()?;
        if actions == 0 {
            return Err(Error::invalid("DQN actions", 0, ">= 1"));
        }
        let (plain, learn, _seeded) = crate::tensors::learner_devices(&devices.learn, config.seed);
        // SB3's DQN leaves PyTorch's initialisation in place (no orthogonal one).
        let encoder = config.encoder.init(obs, None, &learn)?;
        let mut sizes = vec![encoder.features()];
        sizes.extend(&config.pixel_hidden);
        sizes.push(actions);
        let q = DiscreteQ::with_encoder(encoder, MlpConfig::new(sizes).init(&learn)?);
        let obs_dim = obs.iter().product();
        Ok(Dqn::with_q(
            config,
            q,
            obs_dim,
            Some(obs),
            actions,
            (plain, learn),
            devices,
        ))
    }

    fn with_q(
        config: &DqnConfig,
        q: DiscreteQ,
        obs_dim: usize,
        pixels: Option<[usize; 3]>,
        actions: usize,
        (plain, learn): (Device, Device),
        devices: &Devices,
    ) -> Dqn {
        Dqn {
            obs_dim,
            pixels,
            actions,
            target: hard_target(&q),
            acting: ActingCopy::new(&q, &devices.act, config.sync_every),
            q,
            progress: Progress::default(),
            optim: OptimizerKind::Adam.build(config.max_grad_norm, &learn),
            epsilon: config.exploration.start,
            last_target_update: 0,
            rng: EmberRng::seed_from(config.seed).fork(3),
            parts: config.update_schedule.parts("ember-dqn"),
            learn,
            plain,
            config: config.clone(),
        }
    }

    /// `[c, h, w]` of an image observation, for a learner built by
    /// [`DqnConfig::build_pixels`].
    pub fn pixel_shape(&self) -> Option<[usize; 3]> {
        self.pixels
    }

    /// Replaces greedy actions by random ones with probability ε.
    fn explore(&mut self, out: &mut [usize]) {
        for a in out.iter_mut() {
            if self.rng.next_f64() < self.epsilon {
                *a = self.rng.below(self.actions as u64) as usize;
            }
        }
    }

    /// One update from `batch` (module docs of [`Dqn`]'s update).
    fn update_from(&mut self, batch: &TdBatch<'_>, step: u64) -> Result<Update> {
        check_discrete_actions("batch.action", batch.action, self.actions)?;
        let _flush = emberlab_core::denormals::flush_denormals_here();

        // Each half of the rows on a core of its own: its targets, its share of the loss
        // (scaled by its fraction of the rows) and the gradients, through a copy of the
        // network with leaves of its own; then one step on their sum.
        let b = batch.len;
        let view = DqnView {
            config: &self.config,
            plain: &self.plain,
            learn: &self.learn,
            q: &self.q,
            target: &self.target,
            online: self.config.double_q.then(|| self.q.valid()),
        };
        let what = format!("DQN update {step}");
        let shares = run_by_rows(&mut self.parts, &what, (b, 2), |rows| {
            view.rows_grads(batch, rows, step)
        })?;
        let (mut grads, mut value, mut td_errors) = (Vec::new(), 0.0, Vec::with_capacity(b));
        for (g, v, td) in shares {
            grads.push(g);
            value += v;
            td_errors.extend(td);
        }
        let grads = sum_gradients(&self.q, grads);
        crate::faults::site("dqn.step");
        step_in_place(
            &mut self.optim,
            self.config.learning_rate,
            &mut self.q,
            grads,
        );
        self.acting.after_update(&self.q);
        let mut m = Metrics::default();
        m.push("loss", value);
        m.push("epsilon", self.epsilon);
        Ok(Update {
            metrics: m,
            td_errors: Some(td_errors),
        })
    }

    /// The current ε.
    pub fn epsilon(&self) -> f64 {
        self.epsilon
    }

    /// The online Q network.
    pub fn q(&self) -> &DiscreteQ {
        &self.q
    }
}

impl crate::agent::OnnxPolicy for Dqn {
    fn onnx_images(&self) -> Option<[usize; 3]> {
        self.pixels
    }

    /// `q_values = Q(obs)` and the greedy `action = argmax q_values`.
    fn onnx_outputs(
        &self,
        g: &mut emberlab_nn::OnnxGraph,
        obs: &str,
    ) -> Result<Vec<crate::agent::OnnxOutput>> {
        let rows = match self.pixels {
            Some(_) => emberlab_nn::image_rows_onnx(g, self.q.encoder.as_ref(), obs)?,
            None => obs.to_string(),
        };
        let q = self.q.net.to_onnx(g, &rows, "q")?;
        let action = g.argmax(&q);
        Ok(vec![
            crate::agent::OnnxOutput {
                value: action,
                name: "action",
                width: None,
            },
            crate::agent::OnnxOutput {
                value: q,
                name: "q_values",
                width: Some(self.actions),
            },
        ])
    }
}

impl Agent for Dqn {
    fn obs_dim(&self) -> usize {
        self.obs_dim
    }

    fn act(&mut self, obs: &[f32], explore: bool, out: &mut ActionBuf) -> Result<()> {
        let _flush = emberlab_core::denormals::flush_denormals_here();
        if self.pixels.is_some() {
            return Err(Error::invalid(
                "DQN observations",
                "f32 vectors",
                "images through `act_pixels` (this DQN was built for images)",
            ));
        }
        let out = out.discrete_mut("DQN")?;
        let rows = obs.len() / self.obs_dim.max(1);
        if let Some(frozen) = self.acting.frozen(rows) {
            let mut q = Vec::with_capacity(rows * self.actions);
            frozen.forward(obs, rows, &mut q)?;
            out.clear();
            out.extend(q.chunks_exact(self.actions).map(first_argmax));
        } else {
            let (x, n) = crate::tensors::obs_batch(obs, self.obs_dim, self.acting.device())?;
            let q = self.acting.module().forward(x);
            *out = host_indices(q.argmax(1).reshape([n]));
        }
        if explore {
            self.explore(out);
        }
        Ok(())
    }

    fn act_pixels(&mut self, obs: &[u8], explore: bool, out: &mut ActionBuf) -> Result<()> {
        let Some([c, h, w]) = self.pixels else {
            return Err(crate::agent::pixels_unavailable("acting on images"));
        };
        let _flush = emberlab_core::denormals::flush_denormals_here();
        let out = out.discrete_mut("DQN")?;
        let n = obs.len() / self.obs_dim;
        Error::check_len(
            "image observations (batch × c·h·w)",
            n * self.obs_dim,
            obs.len(),
        )?;
        if n == 0 {
            return Err(Error::invalid("image observations", 0, ">= 1 stack"));
        }
        let x = pixels_to_unit(obs, [n, c, h, w], self.acting.device())?;
        let q = self.acting.module().forward_pixels(x);
        *out = host_indices(q.argmax(1).reshape([n]));
        if explore {
            self.explore(out);
        }
        Ok(())
    }
}

/// The index of the first largest value (as burn's `argmax` picks among ties).
fn first_argmax(values: &[f32]) -> usize {
    let mut best = 0;
    for (i, v) in values.iter().enumerate() {
        if *v > values[best] {
            best = i;
        }
    }
    best
}

impl OffPolicyLearner for Dqn {
    fn update(&mut self, batch: &Batch, step: u64) -> Result<Update> {
        if self.pixels.is_some() {
            return Err(Error::invalid(
                "DQN batch",
                "f32 observations",
                "image batches through `update_frames` (this DQN was built for images)",
            ));
        }
        batch.check(self.obs_dim, 1)?;
        self.update_from(&TdBatch::vector(batch), step)
    }

    fn update_frames(&mut self, batch: &FrameBatch, step: u64) -> Result<Update> {
        let Some(shape) = self.pixels else {
            return Err(crate::agent::pixels_unavailable(
                "updates from image batches",
            ));
        };
        check_frame_batch(batch, self.obs_dim)?;
        self.update_from(&TdBatch::frames(batch, shape), step)
    }

    fn on_env_steps(&mut self, env_steps: u64, total_steps: u64) {
        self.epsilon = self
            .config
            .exploration
            .value(env_steps as f64 / total_steps.max(1) as f64);
        // Saturating: a caller may count env steps from zero again.
        if env_steps.saturating_sub(self.last_target_update) >= self.config.target_update_interval
            || env_steps < self.last_target_update
        {
            self.target = hard_target(&self.q);
            self.last_target_update = env_steps;
        }
    }

    fn progress(&mut self) -> &mut Progress {
        &mut self.progress
    }

    fn gamma(&self) -> Option<f64> {
        Some(self.config.gamma)
    }

    fn checkpoint(&mut self) -> Option<&mut dyn Checkpoint> {
        Some(self)
    }

    fn training_state(&mut self) -> Option<&mut dyn TrainingState> {
        Some(self)
    }
}

impl Persist for Dqn {
    fn kind(&self) -> &str {
        "dqn"
    }

    /// Q and its target, the optimizer; ε, the target-update clock, the generator, the
    /// counters and the acting copy of Q (the published policy).
    fn persist<V: Visitor>(&mut self, v: &mut V) -> Result<()> {
        v.net("q", &mut self.q)?;
        v.net("target_q", &mut self.target)?;
        v.optim("optim", &mut self.optim)?;
        v.value(&mut self.epsilon)?;
        v.value(&mut self.last_target_update)?;
        v.value(&mut self.rng)?;
        v.value(&mut self.progress)?;
        v.acting(&mut self.acting, &mut self.q)
    }
}
