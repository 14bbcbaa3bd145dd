//! TD3 (Fujimoto et al. 2018): a deterministic actor `tanh(μ(s))` mapped onto the action
//! box, twin critics (one fused [`CriticEnsemble`]) with the clipped double-Q target,
//! target-policy smoothing, delayed actor and target updates, Gaussian exploration noise.

use crate::acting::{ActingBefore, ActingCopy};
use crate::agent::{ActionBuf, Agent};
use crate::checkpoint::Checkpoint;
use crate::config::{Validate, check_hidden, check_open_closed, check_positive, check_range};
use crate::devices::Devices;
use crate::learner::{Metrics, OffPolicyLearner, Progress, Update};
use crate::off_policy::{MUJOCO_ZOO, OffPolicyConfig, zoo_mujoco};
use crate::optimizer::{OptimizerKind, stepped};
use crate::parts::{Part, Parts, UpdateSchedule, own_leaves, part, run_by_rows, sum_gradients};
use crate::persist::{Persist, Visitor};
use crate::replay::ReplayConfig;
use crate::tensors::{column, host, matrix, rows_of};
use crate::training_state::TrainingState;
use burn::module::Module;
use burn::optim::{GradientsParams, ModuleOptimizer};
use burn::tensor::activation::tanh;
use burn::tensor::{Device, Tensor, TensorData};
use emberlab_core::{Batch, EmberRng, Error, Result, Space};
use emberlab_loss::{
    checked_loss, ensemble_td_errors, sac_critic_loss, sac_critic_loss_weighted, td_target,
    td_target_discounted,
};
use emberlab_nn::{
    CriticEnsemble, CriticEnsembleConfig, FrozenMlp, Mlp, MlpConfig, noise, polyak_update,
};
use serde::{Deserialize, Serialize};
use std::ops::Range;

/// TD3 hyper-parameters (SB3 / rl-baselines3-zoo names and defaults).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct Td3Config {
    /// Hidden widths of the actor and of each critic (SB3: `[400, 300]`).
    pub hidden: Vec<usize>,
    /// Adam learning rate of the actor and the critics.
    pub learning_rate: f64,
    /// Discount γ in `[0, 1]`.
    pub gamma: f64,
    /// Polyak coefficient of the target networks.
    pub tau: f64,
    /// Update the actor and the targets every this many critic updates.
    pub policy_delay: u64,
    /// Standard deviation of the target-policy smoothing noise (in half-widths of the box).
    pub target_policy_noise: f64,
    /// Clip of the smoothing noise (in half-widths).
    pub target_noise_clip: f64,
    /// Standard deviation of the Gaussian exploration noise (in half-widths; zoo's
    /// `noise_type: normal`).
    pub action_noise_std: f64,
    /// Refresh the acting copy every this many actor updates.
    pub sync_every: u64,
    /// Parallel (each half of the rows' gradients on a core of its own, then the critic
    /// step beside the delayed actor step) or sequential update, or `auto` (the default):
    /// whichever runs faster here; the same results every way.
    pub update_schedule: UpdateSchedule,
    /// Seed of the weights and of the noise.
    pub seed: u64,
}

impl Default for Td3Config {
    fn default() -> Self {
        Td3Config {
            hidden: vec![400, 300],
            learning_rate: 1e-3,
            gamma: 0.99,
            tau: 0.005,
            policy_delay: 2,
            target_policy_noise: 0.2,
            target_noise_clip: 0.5,
            action_noise_std: 0.1,
            sync_every: 1,
            update_schedule: UpdateSchedule::Auto,
            seed: 0,
        }
    }
}

impl Validate for Td3Config {
    fn validate(&self) -> Result<()> {
        check_hidden("hidden", &self.hidden)?;
        check_open_closed("learning_rate", self.learning_rate, 0.0, 1.0)?;
        check_range("gamma", self.gamma, 0.0, 1.0)?;
        check_open_closed("tau", self.tau, 0.0, 1.0)?;
        check_positive("policy_delay", self.policy_delay as usize)?;
        check_range("target_policy_noise", self.target_policy_noise, 0.0, 1e3)?;
        check_range("target_noise_clip", self.target_noise_clip, 0.0, 1e3)?;
        check_range("action_noise_std", self.action_noise_std, 0.0, 1e3)
    }
}

impl Td3Config {
    /// The TD3 learner for `obs_space` → `action_space` (a bounded `Box`), learning on
    /// `devices.learn`, acting on `devices.act`.
    ///
    /// # Errors
    /// A config value out of range, or an action space that is not a `Box`.
    pub fn build(&self, obs_space: &Space, action_space: &Space, devices: &Devices) -> Result<Td3> {
        Td3::new(self, obs_space, action_space, devices)
    }

    /// rl-baselines3-zoo's hyper-parameters for `env_id` (the trainer settings too). Known:
    /// `Pendulum-v1` (20k steps; zoo trains after each episode with as many updates as
    /// steps, the same count as one update per step), `MountainCarContinuous-v0`, and zoo's
    /// MuJoCo preset for the locomotion tasks (`HalfCheetah-v5`, ... as SAC's).
    ///
    /// # Errors
    /// An env id without a preset.
    pub fn zoo(env_id: &str) -> Result<(Td3Config, OffPolicyConfig)> {
        match env_id {
            "Pendulum-v1" => Ok((
                Td3Config {
                    gamma: 0.98,
                    ..Td3Config::default()
                },
                OffPolicyConfig {
                    total_steps: 20_000,
                    learning_starts: 10_000,
                    replay: ReplayConfig {
                        capacity: 200_000,
                        ..ReplayConfig::default()
                    },
                    ..OffPolicyConfig::default()
                },
            )),
            "MountainCarContinuous-v0" => Ok((
                Td3Config {
                    action_noise_std: 0.5,
                    ..Td3Config::default()
                },
                OffPolicyConfig {
                    total_steps: 300_000,
                    ..OffPolicyConfig::default()
                },
            )),
            // zoo's `mujoco-defaults`: TD3's defaults (normal noise 0.1, lr 1e-3, batch 256,
            // 400×300 nets).
            other if zoo_mujoco(other).is_some() => {
                let (gamma, trainer) = zoo_mujoco(other).expect("checked");
                Ok((
                    Td3Config {
                        gamma,
                        ..Td3Config::default()
                    },
                    trainer,
                ))
            }
            other => Err(Error::invalid(
                "TD3 zoo env id",
                other,
                format!(
                    "one of Pendulum-v1, MountainCarContinuous-v0, {}",
                    MUJOCO_ZOO.join(", ")
                ),
            )),
        }
    }
}

/// The TD3 learner (see the module docs).
pub struct Td3 {
    config: Td3Config,
    obs_dim: usize,
    act_dim: usize,
    /// Half-widths and centres of the action box.
    scale: Vec<f32>,
    bias: Vec<f32>,
    learn: Device,
    plain: Device,
    actor: Mlp,
    actor_target: Mlp,
    critic: CriticEnsemble,
    critic_target: CriticEnsemble,
    actor_opt: ModuleOptimizer,
    critic_opt: ModuleOptimizer,
    /// The acting copy, with the host fast path when it acts on flex or ndarray.
    acting: ActingCopy<Mlp, FrozenMlp>,
    rng: EmberRng,
    progress: Progress,
    /// Runs the halves of the rows side by side, then the two steps.
    parts: Parts,
}

impl std::fmt::Debug for Td3 {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Td3")
            .field("config", &self.config)
            .finish_non_exhaustive()
    }
}

impl Td3 {
    fn new(
        config: &Td3Config,
        obs_space: &Space,
        action_space: &Space,
        devices: &Devices,
    ) -> Result<Td3> {
        config.validate()?;
        let b = action_space.as_box("TD3")?;
        let obs_dim = obs_space.flat_dim();
        let act_dim = b.dim();
        let (plain, learn, _seeded) = crate::tensors::learner_devices(&devices.learn, config.seed);
        let mut sizes = vec![obs_dim];
        sizes.extend(&config.hidden);
        sizes.push(act_dim);
        let actor = MlpConfig::new(sizes).init(&learn)?;
        let critic =
            CriticEnsembleConfig::new(2, obs_dim + act_dim, config.hidden.clone()).init(&learn)?;
        let (low, high) = (b.low(), b.high());
        Ok(Td3 {
            obs_dim,
            act_dim,
            scale: low.iter().zip(high).map(|(l, h)| (h - l) / 2.0).collect(),
            bias: low.iter().zip(high).map(|(l, h)| (h + l) / 2.0).collect(),
            actor_target: actor.valid(),
            critic_target: critic.valid(),
            acting: ActingCopy::new(&actor, &devices.act, config.sync_every),
            actor,
            critic,
            actor_opt: OptimizerKind::Adam.build(0.0, &learn),
            critic_opt: OptimizerKind::Adam.build(0.0, &learn),
            rng: EmberRng::seed_from(config.seed).fork(5),
            progress: Progress::default(),
            parts: config.update_schedule.parts("ember-td3"),
            learn,
            plain,
            config: config.clone(),
        })
    }

    /// The actor network (pre-squash outputs).
    pub fn actor(&self) -> &Mlp {
        &self.actor
    }

    /// The actor's target network.
    pub fn actor_target(&self) -> &Mlp {
        &self.actor_target
    }

    /// The twin critics.
    pub fn critic(&self) -> &CriticEnsemble {
        &self.critic
    }

    /// The twin critics' targets.
    pub fn critic_target(&self) -> &CriticEnsemble {
        &self.critic_target
    }
}

/// What TD3's parts read: the learner's networks from before the update and the batch.
struct Td3View<'a> {
    config: &'a Td3Config,
    scale: &'a [f32],
    bias: &'a [f32],
    plain: &'a Device,
    learn: &'a Device,
    actor: &'a Mlp,
    actor_target: &'a Mlp,
    critic: &'a CriticEnsemble,
    critic_target: &'a CriticEnsemble,
    batch: &'a Batch,
    dims: (usize, usize, usize),
    step: u64,
}

/// One share of the rows' gradients: the critic's (with its share of the loss and its
/// rows' TD errors) and, on actor steps, the actor's (with its share of the loss).
struct RowsGrads {
    critic: GradientsParams,
    critic_loss: f64,
    td: Vec<f32>,
    actor: Option<(GradientsParams, f64)>,
}

/// The critic step's result: the stepped critic and its optimizer, the moved target
/// critic (on actor steps).
type CriticStep = (CriticEnsemble, ModuleOptimizer, Option<CriticEnsemble>);

/// The actor step's result: the stepped actor, its optimizer, its moved target.
type ActorStep = (Mlp, ModuleOptimizer, Mlp);

/// The acting copy an actor step refreshes early, and where it leaves the copy's state
/// from before.
type EarlyActing<'a> = (
    &'a mut ActingCopy<Mlp, FrozenMlp>,
    &'a mut Option<ActingBefore<Mlp>>,
);

impl Td3View<'_> {
    fn row(&self, v: &[f32], device: &Device) -> Tensor<2> {
        Tensor::from_data(TensorData::new(v.to_vec(), [1, self.dims.2]), device)
    }

    /// `tanh(actor(obs))` mapped onto the action box.
    fn policy(&self, actor: &Mlp, obs: Tensor<2>) -> Tensor<2> {
        let device = obs.device();
        tanh(actor.forward(obs)) * self.row(self.scale, &device) + self.row(self.bias, &device)
    }

    /// Clipped double-Q targets with target-policy smoothing (standard normal `noise`,
    /// one row per row of `rows`) for the batch's `rows`; n-step rows bootstrap with their
    /// own discount. Every operation works row by row.
    fn target_rows(&self, noise: Tensor<2>, rows: &Range<usize>) -> Tensor<2> {
        let (_, o, _) = self.dims;
        let (c, p, batch) = (self.config, self.plain, self.batch);
        let next_obs = matrix(
            &batch.next_obs[rows.start * o..rows.end * o],
            rows.len(),
            o,
            p,
        );
        // In the unit box: smoothing noise clipped, the action clipped to [-1, 1], then
        // mapped onto the action box.
        let smoothing = noise
            .mul_scalar(c.target_policy_noise)
            .clamp(-c.target_noise_clip, c.target_noise_clip);
        let unit = (tanh(self.actor_target.forward(next_obs.clone())) + smoothing).clamp(-1.0, 1.0);
        let next_action = unit * self.row(self.scale, p) + self.row(self.bias, p);
        let next_q = self.critic_target.min_q(next_obs, next_action);
        let (r, d) = (
            column(&batch.reward[rows.clone()], p),
            column(&batch.terminated[rows.clone()], p),
        );
        let y = match batch.discount.is_empty() {
            true => td_target(r, d, next_q, c.gamma),
            false => td_target_discounted(r, d, next_q, column(&batch.discount[rows.clone()], p)),
        };
        Tensor::from_inner(y)
    }

    /// One share of the rows: its targets, then the gradients of its share of the critic
    /// loss and, on actor steps, of the actor loss (each loss scaled by the share's
    /// fraction of the rows, so the shares' gradients add up to the batch's), each loss
    /// checked. Each network is differentiated through a copy of its own
    /// ([`own_leaves`]), so the shares' graphs are independent.
    fn rows_grads(
        &self,
        rows: Range<usize>,
        noise: Tensor<2>,
        actor_step: bool,
    ) -> Result<RowsGrads> {
        let (b, o, a) = self.dims;
        let (batch, learn, n) = (self.batch, self.learn, rows.len());
        let share = n as f64 / b as f64;
        let y = self.target_rows(noise, &rows);
        let obs = matrix(&batch.obs[rows.start * o..rows.end * o], n, o, learn);
        let act = matrix(&batch.action[rows.start * a..rows.end * a], n, a, learn);
        let critic = own_leaves(self.critic);
        let q = critic.forward(obs.clone(), act);
        let td = host(ensemble_td_errors(q.clone(), y.clone()));
        let loss = match batch.unweighted() {
            true => sac_critic_loss(q, y),
            false => sac_critic_loss_weighted(q, y, column(&batch.weights[rows], learn)),
        };
        let loss = loss.mul_scalar(share);
        let critic_loss = checked_loss("TD3 critic loss", &loss, self.step)?;
        let critic_grads = GradientsParams::from_grads(loss.backward(), &critic);
        let actor_grads = match actor_step {
            true => Some(self.actor_grads(obs, share)?),
            false => None,
        };
        Ok(RowsGrads {
            critic: critic_grads,
            critic_loss,
            td,
            actor: actor_grads,
        })
    }

    /// The gradients of the actor loss over the rows `obs` (scaled by `share`) through the
    /// first critic as it was before this update (frozen), and the loss, checked. Only
    /// the first critic is read: the others are neither evaluated nor differentiated
    /// through.
    fn actor_grads(&self, obs: Tensor<2>, share: f64) -> Result<(GradientsParams, f64)> {
        let actor = own_leaves(self.actor);
        let first = self.critic.select(0..1)?.no_grad();
        let q = first.forward(obs.clone(), self.policy(&actor, obs));
        let loss = q.mean().neg().mul_scalar(share);
        let value = checked_loss("TD3 actor loss", &loss, self.step)?;
        Ok((GradientsParams::from_grads(loss.backward(), &actor), value))
    }

    /// The critic step: the shares' gradients summed; its commit steps a clone of the
    /// critic (and moves the target critic on actor steps).
    fn critic_step<'a>(
        &'a self,
        grads: Vec<GradientsParams>,
        optim: &'a ModuleOptimizer,
        actor_step: bool,
    ) -> Part<'a, CriticStep> {
        part(move || {
            let grads = sum_gradients(self.critic, grads);
            Ok(move || {
                let (critic, optim) = stepped(self.critic, optim, self.config.learning_rate, grads);
                crate::faults::site("td3.step");
                let target = actor_step
                    .then(|| polyak_update(self.critic_target.clone(), &critic, self.config.tau));
                (critic, optim, target)
            })
        })
    }

    /// The delayed actor step: the shares' gradients summed; its commit steps a clone of
    /// the actor and moves its target, and, given `early` (the parallel schedule), brings
    /// the acting copy up to the stepped actor while the critic still steps, keeping what
    /// puts it back if the update fails.
    fn actor_step<'a>(
        &'a self,
        grads: Vec<GradientsParams>,
        optim: &'a ModuleOptimizer,
        early: Option<EarlyActing<'a>>,
    ) -> Part<'a, ActorStep> {
        part(move || {
            let grads = sum_gradients(self.actor, grads);
            Ok(move || {
                let (actor, optim) = stepped(self.actor, optim, self.config.learning_rate, grads);
                crate::faults::site("td3.actor_step");
                let target = polyak_update(self.actor_target.clone(), &actor, self.config.tau);
                if let Some((acting, before)) = early {
                    *before = Some(acting.after_update_early(&actor));
                }
                (actor, optim, target)
            })
        })
    }
}

impl crate::agent::OnnxPolicy for Td3 {
    /// `action = scale · tanh(actor(obs)) + bias`.
    fn onnx_outputs(
        &self,
        g: &mut emberlab_nn::OnnxGraph,
        obs: &str,
    ) -> Result<Vec<crate::agent::OnnxOutput>> {
        let out = self.actor.to_onnx(g, obs, "actor")?;
        let unit = g.op("Tanh", &[&out], vec![]);
        let action = g.affine(&unit, &self.scale, &self.bias)?;
        Ok(vec![crate::agent::OnnxOutput {
            value: action,
            name: "action",
            width: Some(self.act_dim),
        }])
    }
}

impl Agent for Td3 {
    fn obs_dim(&self) -> usize {
        self.obs_dim
    }

    fn act(&mut self, obs: &[f32], explore: bool, out: &mut ActionBuf) -> Result<()> {
        let _flush = emberlab_core::denormals::flush_denormals_here();
        let out = out.continuous_mut("TD3")?;
        let rows = obs.len() / self.obs_dim.max(1);
        let unit = match self.acting.frozen(rows) {
            Some(frozen) => {
                let mut unit = Vec::with_capacity(rows * self.act_dim);
                frozen.forward(obs, rows, &mut unit)?;
                unit.iter_mut().for_each(|u| *u = u.tanh());
                unit
            }
            None => {
                let (x, _) = crate::tensors::obs_batch(obs, self.obs_dim, self.acting.device())?;
                host(tanh(self.acting.module().forward(x)))
            }
        };
        out.clear();
        let mut eps = Vec::with_capacity(unit.len());
        if explore {
            noise::fill_standard_normal(unit.len(), &mut self.rng, &mut eps);
        } else {
            eps.resize(unit.len(), 0.0);
        }
        let std = self.config.action_noise_std as f32;
        for (row, e) in unit
            .chunks_exact(self.act_dim)
            .zip(eps.chunks_exact(self.act_dim))
        {
            for j in 0..self.act_dim {
                let a = (row[j] + std * e[j]).clamp(-1.0, 1.0);
                out.push(a * self.scale[j] + self.bias[j]);
            }
        }
        Ok(())
    }
}

impl OffPolicyLearner for Td3 {
    /// Two runs of [`crate::parts`]: first each half of the rows (its targets, the
    /// critic's gradients over its rows and, on actor steps, the actor's), then the critic
    /// step beside the delayed actor step on the summed gradients. Every loss is checked
    /// before anything steps, and the learner changes only when every part has stepped.
    fn update(&mut self, batch: &Batch, step: u64) -> Result<Update> {
        batch.check(self.obs_dim, self.act_dim)?;
        let _flush = emberlab_core::denormals::flush_denormals_here();
        let dims = (batch.len, self.obs_dim, self.act_dim);
        // Noise from a copy of the generator, kept only if the update succeeds.
        let mut rng = self.rng.clone();
        let noise = noise::standard_normal(dims.0, dims.2, &mut rng, &self.plain);
        let actor_step = step.is_multiple_of(self.config.policy_delay);
        let view = Td3View {
            config: &self.config,
            scale: &self.scale,
            bias: &self.bias,
            plain: &self.plain,
            learn: &self.learn,
            actor: &self.actor,
            actor_target: &self.actor_target,
            critic: &self.critic,
            critic_target: &self.critic_target,
            batch,
            dims,
            step,
        };
        let what = format!("TD3 gradients {step}");
        let grads = run_by_rows(&mut self.parts, &what, (dims.0, 2), |rows| {
            view.rows_grads(rows.clone(), rows_of(&noise, &rows), actor_step)
        })?;
        let critic_loss: f64 = grads.iter().map(|g| g.critic_loss).sum();
        let td: Vec<f32> = grads.iter().flat_map(|g| g.td.iter().copied()).collect();
        let (mut critic_grads, mut actor_grads, mut actor_loss) = (Vec::new(), Vec::new(), 0.0);
        for g in grads {
            critic_grads.push(g.critic);
            if let Some((grads, loss)) = g.actor {
                actor_grads.push(grads);
                actor_loss += loss;
            }
        }
        // Under the parallel schedule the actor step refreshes the acting copy beside the
        // critic's step; put back below if the update fails.
        let mut acting_before = None;
        let early = (self.parts.threads() > 1).then_some((&mut self.acting, &mut acting_before));
        let parts = (
            view.critic_step(critic_grads, &self.critic_opt, actor_step),
            actor_step.then(|| view.actor_step(actor_grads, &self.actor_opt, early)),
        );
        let run = self.parts.run(&format!("TD3 step {step}"), parts);
        let ((critic, critic_opt, critic_target), actor_out) = match run {
            Ok(out) => out,
            Err(e) => {
                self.acting.failed(acting_before);
                return Err(e);
            }
        };
        let mut metrics = Metrics::default();
        metrics.push("critic_loss", critic_loss);
        (self.critic, self.critic_opt, self.rng) = (critic, critic_opt, rng);
        if let Some(target) = critic_target {
            self.critic_target = target;
        }
        if let Some((actor, actor_opt, actor_target)) = actor_out {
            metrics.push("actor_loss", actor_loss);
            (self.actor, self.actor_opt, self.actor_target) = (actor, actor_opt, actor_target);
            self.acting.committed(&self.actor, acting_before);
        }
        Ok(Update {
            metrics,
            td_errors: Some(td),
        })
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

impl Persist for Td3 {
    fn kind(&self) -> &str {
        "td3"
    }

    /// The actor, the critic ensemble and their targets; both optimizers; the generator,
    /// the counters and the acting copy of the actor (the published policy).
    fn persist<V: Visitor>(&mut self, v: &mut V) -> Result<()> {
        v.net("actor", &mut self.actor)?;
        v.net("critic", &mut self.critic)?;
        v.net("actor_target", &mut self.actor_target)?;
        v.net("critic_target", &mut self.critic_target)?;
        v.optim("actor_optim", &mut self.actor_opt)?;
        v.optim("critic_optim", &mut self.critic_opt)?;
        v.value(&mut self.rng)?;
        v.value(&mut self.progress)?;
        v.acting(&mut self.acting, &mut self.actor)
    }
}
