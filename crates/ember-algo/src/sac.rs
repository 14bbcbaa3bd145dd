//! Soft actor-critic (Haarnoja et al. 2018) with twin critics as one fused ensemble,
//! automatic temperature and Polyak targets.
//!
//! ## Update semantics
//! One update uses the parameters from *before* the update everywhere — the original SAC's
//! simultaneous update (TensorFlow ran all steps in one `session.run`):
//! - the soft target `y = r + γ(1 − d)(min Q̄(s', a') − α log π(a'|s'))` uses the actor and
//!   the temperature from before this update;
//! - the critic step regresses `Q(s, a)` on `y`;
//! - the actor step minimises `α log π(a|s) − min Q(s, a)` through the critic from before
//!   this update's critic step (its weights get no gradient), and the temperature step
//!   uses the same `log π(a|s)`;
//! - then the targets move: `Q̄ ← (1 − τ) Q̄ + τ Q`.
//!
//! These parts are independent, so [`UpdateSchedule::Parallel`] runs the target + critic
//! step on one thread and the actor + temperature step on another. The noise of both is
//! drawn on the host before either starts, so the parallel schedule computes exactly what
//! [`UpdateSchedule::Sequential`] computes (bit-identical, tested). Both losses are checked
//! before any parameter changes: a NaN or infinite loss returns
//! [`ember_core::Error::Diverged`] and leaves the learner as it was.

use crate::acting::ActingCopy;
use crate::agent::{ActionBuf, Agent};
use crate::checkpoint::{Checkpoint, load_module, save_module};
use crate::config::{Validate, check_hidden, check_open_closed, check_range};
use crate::learner::{Metrics, OffPolicyLearner};
use crate::off_policy::OffPolicyConfig;
use crate::optimizer::OptimizerKind;
use crate::tensors::{column, matrix};
use crate::worker::Worker;
use burn::module::{Module, Param};
use burn::optim::{GradientsParams, ModuleOptimizer};
use burn::tensor::{Device, Tensor, TensorData};
use ember_core::{Batch, EmberRng, Error, Result, Space};
use ember_loss::{checked_loss, sac_actor_loss, sac_critic_loss, sac_target, sac_temperature_loss};
use ember_nn::{
    CriticEnsemble, CriticEnsembleConfig, GaussianTanhPolicy, GaussianTanhPolicyConfig,
    hard_target, polyak_update,
};
use serde::{Deserialize, Serialize};
use std::path::Path;
use std::sync::{Arc, Condvar, Mutex};

/// How the parts of one update are scheduled (same results either way).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UpdateSchedule {
    /// Target + critic step on one thread, actor + temperature step on another.
    #[default]
    Parallel,
    /// Everything on the calling thread, one part after the other.
    Sequential,
}

/// SAC hyper-parameters (SB3 / rl-baselines3-zoo names and defaults).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SacConfig {
    /// Hidden widths of the actor and of each critic.
    pub hidden: Vec<usize>,
    /// Adam learning rate of actor, critics and temperature.
    pub learning_rate: f64,
    /// Discount γ in `[0, 1]`.
    pub gamma: f64,
    /// Polyak coefficient τ in `(0, 1]`.
    pub tau: f64,
    /// Initial temperature α (> 0).
    pub init_alpha: f64,
    /// Learn α to reach the target entropy; otherwise α stays at `init_alpha`.
    pub auto_alpha: bool,
    /// Target entropy; `None` means `−act_dim`.
    pub target_entropy: Option<f64>,
    /// Parallel or sequential update.
    pub update_schedule: UpdateSchedule,
    /// Refresh the acting copy every this many updates.
    pub sync_every: u64,
    /// Seed of the initial weights and of all noise.
    pub seed: u64,
}

impl Default for SacConfig {
    fn default() -> Self {
        SacConfig {
            hidden: vec![256, 256],
            learning_rate: 3e-4,
            gamma: 0.99,
            tau: 0.005,
            init_alpha: 1.0,
            auto_alpha: true,
            target_entropy: None,
            update_schedule: UpdateSchedule::Parallel,
            sync_every: 1,
            seed: 0,
        }
    }
}

impl Validate for SacConfig {
    fn validate(&self) -> Result<()> {
        check_hidden("hidden", &self.hidden)?;
        check_open_closed("learning_rate", self.learning_rate, 0.0, 1.0)?;
        check_range("gamma", self.gamma, 0.0, 1.0)?;
        check_open_closed("tau", self.tau, 0.0, 1.0)?;
        check_open_closed("init_alpha", self.init_alpha, 0.0, 1e6)?;
        if let Some(h) = self.target_entropy {
            check_range("target_entropy", h, -1e6, 1e6)?;
        }
        Ok(())
    }
}

impl SacConfig {
    /// rl-baselines3-zoo's hyper-parameters for `env_id` (the trainer settings too).
    /// Known: `Pendulum-v1`, `MountainCarContinuous-v0` (zoo's gSDE is not implemented:
    /// plain Gaussian exploration with its other settings).
    pub fn zoo(env_id: &str) -> Result<(SacConfig, OffPolicyConfig)> {
        match env_id {
            "Pendulum-v1" => Ok((
                SacConfig {
                    learning_rate: 1e-3,
                    ..SacConfig::default()
                },
                OffPolicyConfig {
                    total_steps: 20_000,
                    ..OffPolicyConfig::default()
                },
            )),
            "MountainCarContinuous-v0" => Ok((
                SacConfig {
                    hidden: vec![64, 64],
                    learning_rate: 3e-4,
                    gamma: 0.9999,
                    tau: 0.01,
                    init_alpha: 0.1,
                    auto_alpha: false,
                    ..SacConfig::default()
                },
                OffPolicyConfig {
                    total_steps: 50_000,
                    buffer_size: 50_000,
                    batch_size: 512,
                    learning_starts: 0,
                    train_freq: 32,
                    gradient_steps: 32,
                    ..OffPolicyConfig::default()
                },
            )),
            other => Err(Error::invalid(
                "SAC zoo env id",
                other,
                "one of Pendulum-v1, MountainCarContinuous-v0",
            )),
        }
    }
}

/// The learnable temperature `log α`.
#[derive(Module, Debug)]
pub struct Temperature {
    /// `log α`, one element.
    pub log_alpha: Param<Tensor<1>>,
}

impl Temperature {
    /// `α = exp(log α)`, read back to the host.
    pub fn alpha(&self) -> f64 {
        self.log_alpha.val().exp().into_scalar::<f64>()
    }
}

/// One update's inputs, on the devices where they are used.
#[derive(Clone)]
struct Inputs {
    obs: Tensor<2>,
    action: Tensor<2>,
    next_obs: Tensor<2>,
    reward: Tensor<2>,
    terminated: Tensor<2>,
    noise_next: Tensor<2>,
    noise_pi: Tensor<2>,
}

/// The optimizer state, one Adam per network (the critic's travels with the critic half).
struct Optimizers {
    actor: ModuleOptimizer,
    critic: Option<ModuleOptimizer>,
    alpha: ModuleOptimizer,
}

/// What the actor + temperature part computes before stepping.
struct ActorGrads {
    actor_loss: Result<f64>,
    alpha_loss: Option<Result<f64>>,
    actor: GradientsParams,
    temperature: Option<GradientsParams>,
}

/// A SAC learner and agent. Learns on `learn` (with autodiff), acts on `act` through an
/// inference copy refreshed every `sync_every` updates.
pub struct Sac {
    config: SacConfig,
    obs_dim: usize,
    act_dim: usize,
    learn: Device,
    plain: Device,
    actor: Option<GaussianTanhPolicy>,
    critic: Option<CriticEnsemble>,
    target: Option<CriticEnsemble>,
    temperature: Option<Temperature>,
    optim: Optimizers,
    alpha: f64,
    target_entropy: f64,
    noise_rng: EmberRng,
    act_rng: EmberRng,
    acting: ActingCopy<GaussianTanhPolicy>,
    /// The critic half's thread under [`UpdateSchedule::Parallel`], started on first use.
    worker: Option<Worker>,
}

impl std::fmt::Debug for Sac {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("Sac")
            .field("config", &self.config)
            .field("alpha", &self.alpha)
            .finish_non_exhaustive()
    }
}

impl Sac {
    /// Builds the networks for `obs_space` → `action_space` (a `Box`); weights are seeded
    /// from `config.seed` through the backend's generator (`Device::seed`).
    pub fn new(
        config: &SacConfig,
        obs_space: &Space,
        action_space: &Space,
        learn: &Device,
        act: &Device,
    ) -> Result<Sac> {
        config.validate()?;
        let Space::Box(bounds) = action_space else {
            return Err(Error::invalid(
                "SAC action space",
                action_space,
                "a Box (continuous) space",
            ));
        };
        let obs_dim = obs_space.flat_dim();
        let act_dim = bounds.dim();
        let (plain, learn) = crate::tensors::learner_devices(learn, config.seed);
        let actor = GaussianTanhPolicyConfig::new(obs_dim, act_dim)
            .with_hidden(config.hidden.clone())
            .with_bounds(bounds.low().to_vec(), bounds.high().to_vec())
            .init(&learn)?;
        let critic =
            CriticEnsembleConfig::new(2, obs_dim + act_dim, config.hidden.clone()).init(&learn)?;
        let target = hard_target(&critic);
        let temperature = Temperature {
            log_alpha: Param::from_tensor(Tensor::from_data(
                TensorData::new(vec![config.init_alpha.ln() as f32], [1]),
                &learn,
            )),
        };
        let adam = || OptimizerKind::Adam.build(0.0, &learn);
        let optim = Optimizers {
            actor: adam(),
            critic: Some(adam()),
            alpha: adam(),
        };
        let acting = ActingCopy::new(&actor, act, config.sync_every);
        let mut rng = EmberRng::seed_from(config.seed);
        Ok(Sac {
            obs_dim,
            act_dim,
            learn,
            plain,
            actor: Some(actor),
            critic: Some(critic),
            target: Some(target),
            temperature: Some(temperature),
            optim,
            alpha: config.init_alpha,
            target_entropy: config.target_entropy.unwrap_or(-(act_dim as f64)),
            noise_rng: rng.fork(1),
            act_rng: rng.fork(2),
            acting,
            worker: None,
            config: config.clone(),
        })
    }

    /// The current temperature α.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// The actor being trained.
    pub fn actor(&self) -> &GaussianTanhPolicy {
        self.actor.as_ref().expect("actor present between updates")
    }

    /// The critic ensemble being trained.
    pub fn critic(&self) -> &CriticEnsemble {
        self.critic
            .as_ref()
            .expect("critic present between updates")
    }

    /// The target critics.
    pub fn target_critic(&self) -> &CriticEnsemble {
        self.target
            .as_ref()
            .expect("target present between updates")
    }

    /// The config this learner was built with.
    pub fn config(&self) -> &SacConfig {
        &self.config
    }

    fn inputs(&mut self, batch: &Batch) -> Result<Inputs> {
        Error::check_len("batch observation width", self.obs_dim, batch.obs_dim)?;
        Error::check_len("batch action width", self.act_dim, batch.act_dim)?;
        let (b, o, a) = (batch.len, self.obs_dim, self.act_dim);
        let mut noise = Vec::with_capacity(2 * b * a);
        ember_nn::noise::fill_standard_normal(2 * b * a, &mut self.noise_rng, &mut noise);
        let (noise_next, noise_pi) = noise.split_at(b * a);
        Ok(Inputs {
            obs: matrix(&batch.obs, b, o, &self.learn),
            action: matrix(&batch.action, b, a, &self.learn),
            next_obs: matrix(&batch.next_obs, b, o, &self.plain),
            reward: column(&batch.reward, &self.plain),
            terminated: column(&batch.terminated, &self.plain),
            noise_next: matrix(noise_next, b, a, &self.plain),
            noise_pi: matrix(noise_pi, b, a, &self.learn),
        })
    }
}

/// The critic half of an update, owning what it reads and writes so that it can run on the
/// worker thread: soft target, critic loss and gradients, critic step, Polyak targets.
struct CriticJob {
    critic: CriticEnsemble,
    target: CriticEnsemble,
    optim: ModuleOptimizer,
    /// The actor from before this update, without autodiff (for `a' ~ π(·|s')`).
    actor: GaussianTanhPolicy,
    x: Inputs,
    lr: f64,
    alpha: f64,
    gamma: f64,
    tau: f64,
    step: u64,
}

/// What the critic half hands back.
struct CriticDone {
    critic: CriticEnsemble,
    target: CriticEnsemble,
    optim: ModuleOptimizer,
    loss: Result<f64>,
}

impl CriticJob {
    /// The soft TD target (no graph is built), the critic loss and its gradients.
    fn grads(&self) -> (Result<f64>, GradientsParams) {
        let x = &self.x;
        let (next_action, next_log_prob) =
            self.actor.sample(x.next_obs.clone(), x.noise_next.clone());
        let next_q = self.target.min_q(x.next_obs.clone(), next_action);
        let y = sac_target(
            x.reward.clone(),
            x.terminated.clone(),
            next_q,
            next_log_prob,
            self.alpha,
            self.gamma,
        );
        let q = self.critic.forward(x.obs.clone(), x.action.clone());
        let loss = sac_critic_loss(q, Tensor::from_inner(y));
        let value = checked_loss("critic loss", &loss, self.step);
        let grads = GradientsParams::from_grads(loss.backward(), &self.critic);
        (value, grads)
    }

    /// Steps the critic and moves the targets when `ok` (both halves' losses finite).
    fn finish(self, loss: Result<f64>, grads: GradientsParams, ok: bool) -> CriticDone {
        let CriticJob {
            critic,
            target,
            mut optim,
            lr,
            tau,
            ..
        } = self;
        let (critic, target) = if ok {
            let critic = optim.step(lr, critic, grads);
            let target = polyak_update(target, &critic, tau);
            (critic, target)
        } else {
            (critic, target)
        };
        CriticDone {
            critic,
            target,
            optim,
            loss,
        }
    }

    /// The whole half: gradients, `gate` (told whether this half's loss is finite, says
    /// whether both are), step.
    fn run(self, gate: impl FnOnce(bool) -> bool) -> CriticDone {
        let (loss, grads) = self.grads();
        let ok = gate(loss.is_ok());
        self.finish(loss, grads, ok)
    }
}

/// Actor (and temperature) losses and their gradients, through a frozen critic.
fn actor_grads(
    actor: &GaussianTanhPolicy,
    temperature: Option<&Temperature>,
    frozen_critic: &CriticEnsemble,
    x: &Inputs,
    alpha: f64,
    target_entropy: f64,
    step: u64,
) -> ActorGrads {
    let (action, log_prob) = actor.sample(x.obs.clone(), x.noise_pi.clone());
    let min_q = frozen_critic.min_q(x.obs.clone(), action);
    let actor_loss = sac_actor_loss(log_prob.clone(), min_q, alpha);
    let actor_value = checked_loss("actor loss", &actor_loss, step);
    let (total, alpha_value) = match temperature {
        Some(t) => {
            let alpha_loss = sac_temperature_loss(t.log_alpha.val(), log_prob, target_entropy);
            let v = checked_loss("temperature loss", &alpha_loss, step);
            (actor_loss + alpha_loss, Some(v))
        }
        None => (actor_loss, None),
    };
    let mut grads = total.backward();
    ActorGrads {
        actor_loss: actor_value,
        alpha_loss: alpha_value,
        actor: GradientsParams::from_module(&mut grads, actor),
        temperature: temperature.map(|t| GradientsParams::from_module(&mut grads, t)),
    }
}

impl ActorGrads {
    fn ok(&self) -> bool {
        self.actor_loss.is_ok() && !matches!(self.alpha_loss, Some(Err(_)))
    }
}

/// Steps the actor and (when learnt) the temperature; returns the new α when it moved.
fn step_actor(
    actor_opt: &mut ModuleOptimizer,
    alpha_opt: &mut ModuleOptimizer,
    lr: f64,
    actor: GaussianTanhPolicy,
    temperature: Option<Temperature>,
    grads: ActorGrads,
) -> (
    GaussianTanhPolicy,
    Option<Temperature>,
    Option<f64>,
    ActorLosses,
) {
    let actor = actor_opt.step(lr, actor, grads.actor);
    let (temperature, alpha) = match (temperature, grads.temperature) {
        (Some(t), Some(g)) => {
            let t = alpha_opt.step(lr, t, g);
            let alpha = t.alpha();
            (Some(t), Some(alpha))
        }
        (t, _) => (t, None),
    };
    let losses = (grads.actor_loss, grads.alpha_loss);
    (actor, temperature, alpha, losses)
}

type ActorLosses = (Result<f64>, Option<Result<f64>>);

/// Two threads agreeing that both halves of an update succeeded before either steps.
/// A half that panics before arriving counts as failed (see [`Arrival`]), so the other
/// half never waits forever.
#[derive(Default)]
struct Gate {
    /// (halves arrived, all arrived halves succeeded)
    state: Mutex<(u8, bool)>,
    both_arrived: Condvar,
}

impl Gate {
    /// Reports this half's success, waits for the other half, and says whether both
    /// succeeded.
    fn both_ok(&self, mine: bool) -> bool {
        let mut s = self.state.lock().unwrap_or_else(|e| e.into_inner());
        s.1 = if s.0 == 0 { mine } else { s.1 && mine };
        s.0 += 1;
        if s.0 == 2 {
            self.both_arrived.notify_all();
        }
        while s.0 < 2 {
            s = self.both_arrived.wait(s).unwrap_or_else(|e| e.into_inner());
        }
        s.1
    }
}

/// One half's place at the [`Gate`]: it arrives at most once, and as failed when dropped
/// without arriving (its half panicked).
struct Arrival(Arc<Gate>, bool);

impl Arrival {
    fn both_ok(&mut self, mine: bool) -> bool {
        self.1 = true;
        self.0.both_ok(mine)
    }
}

impl Drop for Arrival {
    fn drop(&mut self) {
        if !self.1 {
            self.0.both_ok(false);
        }
    }
}

impl Checkpoint for Sac {
    /// `actor`, `critic`, `target_critic` and `temperature` safetensors files.
    fn save_networks(&self, dir: &Path) -> Result<()> {
        save_module(self.actor(), dir, "actor")?;
        save_module(self.critic(), dir, "critic")?;
        save_module(self.target_critic(), dir, "target_critic")?;
        let t = self.temperature.as_ref().expect("temperature present");
        save_module(t, dir, "temperature")
    }

    fn load_networks(&mut self, dir: &Path) -> Result<()> {
        let actor = load_module(self.actor().clone(), dir, "actor")?;
        let critic = load_module(self.critic().clone(), dir, "critic")?;
        let target = load_module(self.target_critic().clone(), dir, "target_critic")?;
        let t = self.temperature.clone().expect("temperature present");
        let t = load_module(t, dir, "temperature")?;
        self.alpha = t.alpha();
        self.acting.refresh(&actor);
        (self.actor, self.critic, self.target) = (Some(actor), Some(critic), Some(target));
        self.temperature = Some(t);
        Ok(())
    }
}

impl Agent for Sac {
    fn obs_dim(&self) -> usize {
        self.obs_dim
    }

    fn act(&mut self, obs: &[f32], explore: bool, out: &mut ActionBuf) -> Result<()> {
        let out = out.continuous_mut("SAC")?;
        let (x, _) = crate::tensors::obs_batch(obs, self.obs_dim, self.acting.device())?;
        let policy = self.acting.module();
        if explore {
            policy.act_host(x, &mut self.act_rng, out);
        } else {
            *out = crate::tensors::host(policy.deterministic(x));
        }
        Ok(())
    }
}

impl OffPolicyLearner for Sac {
    fn update(&mut self, batch: &Batch, step: u64) -> Result<Metrics> {
        let x = self.inputs(batch)?;
        let lr = self.config.learning_rate;
        let (alpha, h) = (self.alpha, self.target_entropy);
        let actor = self.actor.take().expect("actor present");
        let critic = self.critic.take().expect("critic present");
        let temperature = self.temperature.take();
        let learn_alpha = self.config.auto_alpha;
        let frozen = critic.clone().no_grad();
        let job = CriticJob {
            critic,
            target: self.target.take().expect("target present"),
            optim: self.optim.critic.take().expect("critic optimizer present"),
            actor: actor.valid(),
            x: x.clone(),
            lr,
            alpha,
            gamma: self.config.gamma,
            tau: self.config.tau,
            step,
        };
        let Optimizers {
            actor: actor_opt,
            alpha: alpha_opt,
            ..
        } = &mut self.optim;

        // The actor + temperature half: losses and gradients, agree with the critic half
        // that both are finite, step.
        let mut actor_half = |actor: GaussianTanhPolicy,
                              temperature: Option<Temperature>,
                              gate: &mut dyn FnMut(bool) -> bool| {
            let t = temperature.as_ref().filter(|_| learn_alpha);
            let grads = actor_grads(&actor, t, &frozen, &x, alpha, h, step);
            if gate(grads.ok()) {
                step_actor(actor_opt, alpha_opt, lr, actor, temperature, grads)
            } else {
                let losses = (grads.actor_loss, grads.alpha_loss);
                (actor, temperature, None, losses)
            }
        };
        let (done, (actor, temperature, new_alpha, (actor_loss, alpha_loss))) = match self
            .config
            .update_schedule
        {
            UpdateSchedule::Sequential => {
                // Both losses are checked before either network steps: the critic's
                // gradients first, then the actor half, whose gate decides both steps.
                let (c_loss, c_grads) = job.grads();
                let c_ok = c_loss.is_ok();
                let mut both = false;
                let actor_out = actor_half(actor, temperature, &mut |a_ok| {
                    both = a_ok && c_ok;
                    both
                });
                (job.finish(c_loss, c_grads, both), actor_out)
            }
            UpdateSchedule::Parallel => {
                let gate = Arc::new(Gate::default());
                let mut critic_arrival = Arrival(gate.clone(), false);
                let mut actor_arrival = Arrival(gate, false);
                let worker = self
                    .worker
                    .get_or_insert_with(|| Worker::spawn("ember-sac-critic"));
                let critic_done = worker.submit(move || job.run(|ok| critic_arrival.both_ok(ok)));
                let actor_out = actor_half(actor, temperature, &mut |ok| actor_arrival.both_ok(ok));
                drop(actor_arrival);
                (critic_done.wait(), actor_out)
            }
        };
        let CriticDone {
            critic,
            target,
            optim,
            loss: critic_loss,
        } = done;
        self.actor = Some(actor);
        self.temperature = temperature;
        self.critic = Some(critic);
        self.target = Some(target);
        self.optim.critic = Some(optim);
        let critic_loss = critic_loss?;
        let actor_loss = match (actor_loss, alpha_loss.transpose()) {
            (Ok(a), Ok(t)) => (a, t),
            (Err(e), _) | (_, Err(e)) => return Err(e),
        };
        if let Some(a) = new_alpha {
            self.alpha = a;
        }
        self.acting
            .after_update(self.actor.as_ref().expect("actor present"));

        let mut m = Metrics::default();
        m.push("critic_loss", critic_loss);
        m.push("actor_loss", actor_loss.0);
        if let Some(l) = actor_loss.1 {
            m.push("alpha_loss", l);
        }
        m.push("alpha", self.alpha);
        Ok(m)
    }
}
