//! DQN (Mnih et al. 2015) with the double-DQN target (van Hasselt et al. 2016), a hard-copied
//! target network, an ε-greedy schedule, Huber loss and gradient-norm clipping.

use crate::acting::ActingCopy;
use crate::agent::{ActionBuf, Agent};
use crate::checkpoint::Checkpoint;
use crate::config::{Validate, check_hidden, check_open_closed, check_positive, check_range};
use crate::devices::Devices;
use crate::learner::{Metrics, OffPolicyLearner, Progress, Update, check_discrete_actions};
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
use emberlab_nn::{DiscreteQ, FrozenMlp, MlpConfig, hard_target};
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
        Ok(())
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

    /// rl-baselines3-zoo's hyper-parameters for `env_id` (the trainer settings too).
    /// Known: `CartPole-v1`, `Acrobot-v1` (zoo's `gradient_steps: -1` with one env is 4
    /// updates per 4 steps).
    pub fn zoo(env_id: &str) -> Result<(DqnConfig, OffPolicyConfig)> {
        match env_id {
            "CartPole-v1" => Ok((
                DqnConfig {
                    hidden: vec![256, 256],
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
            other => Err(Error::invalid(
                "DQN zoo env id",
                other,
                "one of CartPole-v1, Acrobot-v1",
            )),
        }
    }
}

/// A DQN learner and ε-greedy agent.
pub struct Dqn {
    config: DqnConfig,
    obs_dim: usize,
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

/// What the halves of a DQN update read: the learner's networks from before the update.
struct DqnView<'a> {
    config: &'a DqnConfig,
    obs_dim: usize,
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
        batch: &Batch,
        rows: std::ops::Range<usize>,
        step: u64,
    ) -> Result<(GradientsParams, f64, Vec<f32>)> {
        let (b, o, n) = (batch.len, self.obs_dim, rows.len());
        let share = n as f64 / b as f64;
        let (p, l) = (&self.plain, &self.learn);
        let next_obs = matrix(&batch.next_obs[rows.start * o..rows.end * o], n, o, p);
        let reward = column(&batch.reward[rows.clone()], p);
        let terminated = column(&batch.terminated[rows.clone()], p);
        let next_target = self.target.forward(next_obs.clone());
        let value = match &self.online {
            Some(q) => double_dqn_value(q.forward(next_obs), next_target),
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
        let q_taken = q
            .forward(matrix(&batch.obs[rows.start * o..rows.end * o], n, o, l))
            .gather(1, index_column(&batch.action[rows.clone()], l));
        let td_errors = host((q_taken.clone().detach() - y.clone()).abs());
        let loss = if batch.unweighted() {
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
        Ok(Dqn {
            obs_dim,
            actions: d.n(),
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
    /// `q_values = Q(obs)` and the greedy `action = argmax q_values`.
    fn onnx_outputs(
        &self,
        g: &mut emberlab_nn::OnnxGraph,
        obs: &str,
    ) -> Result<Vec<crate::agent::OnnxOutput>> {
        let q = self.q.net.to_onnx(g, obs, "q")?;
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
            for a in out.iter_mut() {
                if self.rng.next_f64() < self.epsilon {
                    *a = self.rng.below(self.actions as u64) as usize;
                }
            }
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
        batch.check(self.obs_dim, 1)?;
        check_discrete_actions("batch.action", &batch.action, self.actions)?;
        let _flush = emberlab_core::denormals::flush_denormals_here();

        // Each half of the rows on a core of its own: its targets, its share of the loss
        // (scaled by its fraction of the rows) and the gradients, through a copy of the
        // network with leaves of its own; then one step on their sum.
        let b = batch.len;
        let view = DqnView {
            config: &self.config,
            obs_dim: self.obs_dim,
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
