//! REDQ (Chen et al. 2021, "Randomized Ensembled Double Q-Learning") — an algorithm that is
//! not in the library — assembled from Ember's public parts: SAC's tanh-Gaussian actor and
//! temperature, ten critics fused into one `CriticEnsemble` (one batched matmul per layer),
//! targets from the minimum of a random pair of target critics, many critic updates per env
//! step (the shared off-policy trainer's `gradient_steps`), the actor updated once per env
//! step against the mean of all ten critics. Its learning test (`tests/redq_example.rs`)
//! trains it on Pendulum-v1 beside the library's SAC with the same seed and settings.
//!
//! `cargo run --release --example custom_redq` (seed 1)

use burn::module::Module;
use burn::optim::{GradientsParams, ModuleOptimizer};
use burn::tensor::{Device, Tensor};
use ember::algo::tensors::{column, learner_devices, matrix, obs_batch};
use ember::algo::{
    ActingCopy, ActionBuf, Agent, Devices, OffPolicyConfig, OffPolicyLearner, OptimizerKind,
    Progress, SacConfig, TrainReport, Update, step_in_place, train_off_policy,
};
use ember::core::{Batch, EmberRng, Result};
use ember::env::{SyncVecEnv, VecEnv};
use ember::loss::{
    checked_loss, sac_actor_loss, sac_critic_loss, sac_target_discounted, sac_temperature_loss,
};
use ember::nn::{
    CriticEnsemble, CriticEnsembleConfig, GaussianTanhPolicy, GaussianTanhPolicyConfig,
    Temperature, noise, polyak_update,
};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// N critics, G critic updates per env step (the paper's N = 10, G = 20); 64×64 critics.
const CRITICS: usize = 10;
pub const UPDATES_PER_STEP: usize = 10;
const HIDDEN: [usize; 2] = [64, 64];
const GAMMA: f64 = 0.99;
const TAU: f64 = 0.005;
const LR: f64 = 1e-3;

struct Redq {
    obs_dim: usize,
    act_dim: usize,
    learn: Device,
    plain: Device,
    actor: GaussianTanhPolicy,
    critic: CriticEnsemble,
    target: CriticEnsemble,
    temperature: Temperature,
    opts: [ModuleOptimizer; 3],
    acting: ActingCopy<GaussianTanhPolicy>,
    rng: EmberRng,
    progress: Progress,
}

impl Redq {
    fn new(env: &dyn VecEnv, seed: u64, devices: &Devices) -> Result<Redq> {
        let (plain, learn) = learner_devices(&devices.learn, seed);
        let obs_dim = env.single_observation_space().flat_dim();
        let ember::core::Space::Box(b) = env.single_action_space() else {
            unreachable!("Pendulum-v1 has a Box action space")
        };
        let actor = GaussianTanhPolicyConfig::new(obs_dim, b.dim())
            .with_bounds(b.low().to_vec(), b.high().to_vec())
            .init(&learn)?;
        let critic = CriticEnsembleConfig::new(CRITICS, obs_dim + b.dim(), HIDDEN).init(&learn)?;
        Ok(Redq {
            obs_dim,
            act_dim: b.dim(),
            target: critic.valid(),
            acting: ActingCopy::new(&actor, &devices.act, 1),
            actor,
            critic,
            temperature: Temperature::new(1.0, &learn)?,
            opts: [(); 3].map(|_| OptimizerKind::Adam.build(0.0, &learn)),
            rng: EmberRng::seed_from(seed).fork(9),
            progress: Progress::default(),
            learn,
            plain,
        })
    }
}

impl Agent for Redq {
    fn obs_dim(&self) -> usize {
        self.obs_dim
    }

    fn act(&mut self, obs: &[f32], explore: bool, out: &mut ActionBuf) -> Result<()> {
        let (x, _) = obs_batch(obs, self.obs_dim, self.acting.device())?;
        let out = out.continuous_mut("REDQ")?;
        match explore {
            true => self.acting.module().act_host(x, &mut self.rng, out),
            false => *out = ember::algo::tensors::host(self.acting.module().deterministic(x)),
        }
        Ok(())
    }
}

impl OffPolicyLearner for Redq {
    fn update(&mut self, batch: &Batch, step: u64) -> Result<Update> {
        batch.check(self.obs_dim, self.act_dim)?;
        let (b, o, a) = (batch.len, self.obs_dim, self.act_dim);
        let alpha = self.temperature.alpha();
        // Target: a' ~ π(s'), the minimum over a random pair of the ten target critics.
        let next_obs = matrix(&batch.next_obs, b, o, &self.plain);
        let eps = noise::standard_normal(b, a, &mut self.rng, &self.plain);
        let (next_a, next_logp) = self.actor.valid().sample(next_obs.clone(), eps);
        let q_next = self.target.forward(next_obs, next_a);
        let i = self.rng.below(CRITICS as u64) as usize;
        let j = (i + 1 + self.rng.below(CRITICS as u64 - 1) as usize) % CRITICS;
        let pick = |k: usize| q_next.clone().slice([k..k + 1, 0..b, 0..1]).reshape([b, 1]);
        let (r, d) = (&batch.reward, &batch.terminated);
        let (r, d) = (column(r, &self.plain), column(d, &self.plain));
        let min_q = pick(i).min_pair(pick(j));
        let gammas = match batch.discount.is_empty() {
            true => vec![GAMMA as f32; b],
            false => batch.discount.clone(), // n-step rows carry γ^m
        };
        let y = sac_target_discounted(r, d, min_q, next_logp, alpha, column(&gammas, &self.plain));
        let obs = matrix(&batch.obs, b, o, &self.learn);
        let act = matrix(&batch.action, b, a, &self.learn);
        let loss = sac_critic_loss(self.critic.forward(obs.clone(), act), Tensor::from_inner(y));
        let mut update = Update::default();
        let critic_loss = checked_loss("REDQ critic loss", &loss, step)?;
        update.metrics.push("critic_loss", critic_loss);
        // Once per env step: the actor against the mean of all critics (as they were before
        // this update), and α. Every loss is checked before anything steps.
        let mut actor_step = None;
        if step % UPDATES_PER_STEP as u64 == UPDATES_PER_STEP as u64 - 1 {
            let eps = noise::standard_normal(b, a, &mut self.rng, &self.learn);
            let (act, logp) = self.actor.sample(obs.clone(), eps);
            let q = self.critic.clone().no_grad().forward(obs, act);
            let actor_loss = sac_actor_loss(logp.clone(), q.mean_dim(0).reshape([b, 1]), alpha);
            let value = checked_loss("REDQ actor loss", &actor_loss, step)?;
            update.metrics.push("actor_loss", value);
            let log_alpha = self.temperature.log_alpha.val();
            let alpha_loss = sac_temperature_loss(log_alpha, logp.detach(), -(a as f64));
            actor_step = Some((actor_loss, alpha_loss));
        }
        let grads = GradientsParams::from_grads(loss.backward(), &self.critic);
        step_in_place(&mut self.opts[0], LR, &mut self.critic, grads);
        self.target = polyak_update(self.target.clone(), &self.critic, TAU);
        if let Some((actor_loss, alpha_loss)) = actor_step {
            let grads = GradientsParams::from_grads(actor_loss.backward(), &self.actor);
            step_in_place(&mut self.opts[1], LR, &mut self.actor, grads);
            let grads = GradientsParams::from_grads(alpha_loss.backward(), &self.temperature);
            step_in_place(&mut self.opts[2], LR, &mut self.temperature, grads);
            self.acting.refresh(&self.actor);
        }
        Ok(update)
    }

    fn progress(&mut self) -> &mut Progress {
        &mut self.progress
    }

    fn gamma(&self) -> Option<f64> {
        Some(GAMMA)
    }
}

/// REDQ on Pendulum-v1: SAC's zoo trainer settings but `UPDATES_PER_STEP` updates per env
/// step, evaluated every `eval_every` steps, stopping at the first evaluation ≥ −200.
///
/// # Errors
/// An error of the environment or the learner.
pub fn run_redq(seed: u64, eval_every: u64) -> Result<TrainReport> {
    let device = ember::backend::DeviceSpec::Flex.device()?;
    let mut env = SyncVecEnv::from_id("Pendulum-v1", 1)?;
    let mut redq = Redq::new(&env, seed, &Devices::same(&device))?;
    let (_, trainer) = SacConfig::zoo("Pendulum-v1")?;
    let config = OffPolicyConfig {
        gradient_steps: UPDATES_PER_STEP,
        eval_every,
        target_return: Some(-200.0),
        seed,
        ..trainer
    };
    let mut replay = config.build_replay(&env)?;
    let eval = ember::env::factory("Pendulum-v1")?;
    train_off_policy(&mut redq, &mut env, &mut replay, eval.as_ref(), &config)
}

#[allow(dead_code)] // the learning test includes this file as a module
fn main() -> Result<()> {
    let report = run_redq(1, 250)?;
    for e in &report.evals {
        println!("{:>6} env steps: eval {:.1}", e.env_steps, e.mean_return);
    }
    println!("{} updates in {:.1} s", report.updates, report.wall_secs);
    Ok(())
}
