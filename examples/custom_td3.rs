//! TD3 (Fujimoto et al. 2018) assembled from Ember's public parts — an MLP actor, the fused
//! twin-critic ensemble, Polyak targets, TD targets and losses, the in-place optimizer
//! step, the shared off-policy trainer with a replay buffer of your choice — and trained on
//! Pendulum-v1. Walked through in `docs/custom-algorithm.md`.
//!
//! `cargo run --release --example custom_td3 [steps] [uniform|prioritized|return_weighted]`

use burn::module::Module;
use burn::optim::{GradientsParams, ModuleOptimizer};
use burn::tensor::activation::tanh;
use burn::tensor::{Device, Tensor};
use ember::algo::tensors::{column, host, matrix};
use ember::algo::{
    ActingCopy, ActionBuf, Agent, Devices, Metrics, OffPolicyConfig, OffPolicyLearner,
    OptimizerKind, Progress, ReplayKind, Update, step_in_place, train_off_policy,
};
use ember::core::{Batch, EmberRng, Result};
use ember::env::{SyncVecEnv, VecEnv};
use ember::loss::{
    checked_loss, ensemble_td_errors, sac_critic_loss, sac_critic_loss_weighted, td_target,
    td_target_discounted,
};
use ember::nn::{CriticEnsemble, CriticEnsembleConfig, Mlp, MlpConfig, noise, polyak_update};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const GAMMA: f64 = 0.99;
const TAU: f64 = 0.005;
const LR: f64 = 1e-3;
const POLICY_DELAY: u64 = 2;
const EXPLORE_STD: f32 = 0.1;
const TARGET_STD: f32 = 0.2;
const TARGET_CLIP: f32 = 0.5;

struct Td3 {
    obs_dim: usize,
    act_dim: usize,
    max_action: f32,
    learn: Device,
    plain: Device,
    actor: Mlp,
    actor_target: Mlp,
    critic: CriticEnsemble,
    critic_target: CriticEnsemble,
    actor_opt: ModuleOptimizer,
    critic_opt: ModuleOptimizer,
    acting: ActingCopy<Mlp>,
    rng: EmberRng,
    progress: Progress,
}

impl Td3 {
    fn new(obs_dim: usize, act_dim: usize, max_action: f32, devices: &Devices) -> Result<Td3> {
        let (plain, learn) = ember::algo::tensors::learner_devices(&devices.learn, 0);
        let actor = MlpConfig::new([obs_dim, 256, 256, act_dim]).init(&learn)?;
        let critic = CriticEnsembleConfig::new(2, obs_dim + act_dim, [256, 256]).init(&learn)?;
        Ok(Td3 {
            obs_dim,
            act_dim,
            max_action,
            actor_target: actor.valid(),
            critic_target: critic.valid(),
            acting: ActingCopy::new(&actor, &devices.act, 1),
            actor,
            critic,
            actor_opt: OptimizerKind::Adam.build(0.0, &learn),
            critic_opt: OptimizerKind::Adam.build(0.0, &learn),
            rng: EmberRng::seed_from(0),
            progress: Progress::default(),
            learn,
            plain,
        })
    }

    /// `max_action · tanh(actor(obs))`.
    fn policy(&self, actor: &Mlp, obs: Tensor<2>) -> Tensor<2> {
        tanh(actor.forward(obs)).mul_scalar(self.max_action)
    }

    /// Clipped double-Q target with target-policy smoothing; n-step rows bootstrap with
    /// their own discount.
    fn target(&mut self, batch: &Batch) -> Tensor<2> {
        let (b, o, a, m) = (batch.len, self.obs_dim, self.act_dim, self.max_action);
        let next_obs = matrix(&batch.next_obs, b, o, &self.plain);
        let smoothing = noise::standard_normal(b, a, &mut self.rng, &self.plain)
            .mul_scalar(TARGET_STD * m)
            .clamp(-TARGET_CLIP * m, TARGET_CLIP * m);
        let next_action =
            (self.policy(&self.actor_target, next_obs.clone()) + smoothing).clamp(-m, m);
        let next_q = self.critic_target.min_q(next_obs, next_action);
        let (r, d) = (
            column(&batch.reward, &self.plain),
            column(&batch.terminated, &self.plain),
        );
        let y = match batch.discount.is_empty() {
            true => td_target(r, d, next_q, GAMMA),
            false => td_target_discounted(r, d, next_q, column(&batch.discount, &self.plain)),
        };
        Tensor::from_inner(y)
    }
}

impl Agent for Td3 {
    fn obs_dim(&self) -> usize {
        self.obs_dim
    }

    fn act(&mut self, obs: &[f32], explore: bool, out: &mut ActionBuf) -> Result<()> {
        let (x, _) = ember::algo::tensors::obs_batch(obs, self.obs_dim, self.acting.device())?;
        let out = out.continuous_mut("TD3")?;
        *out = host(self.policy(self.acting.module(), x));
        if explore {
            let mut eps = Vec::with_capacity(out.len());
            noise::fill_standard_normal(out.len(), &mut self.rng, &mut eps);
            let m = self.max_action;
            for (a, e) in out.iter_mut().zip(eps) {
                *a = (*a + e * EXPLORE_STD * m).clamp(-m, m);
            }
        }
        Ok(())
    }
}

impl OffPolicyLearner for Td3 {
    fn update(&mut self, batch: &Batch, step: u64) -> Result<Update> {
        batch.check(self.obs_dim, self.act_dim)?;
        let (b, o, a) = (batch.len, self.obs_dim, self.act_dim);
        let y = self.target(batch);
        let obs = matrix(&batch.obs, b, o, &self.learn);
        let q = self
            .critic
            .forward(obs.clone(), matrix(&batch.action, b, a, &self.learn));
        let td_errors = host(ensemble_td_errors(q.clone(), y.clone()));
        let loss = match batch.unweighted() {
            true => sac_critic_loss(q, y),
            false => sac_critic_loss_weighted(q, y, column(&batch.weights, &self.learn)),
        };
        let mut metrics = Metrics::default();
        metrics.push("critic_loss", checked_loss("TD3 critic loss", &loss, step)?);
        // Delayed actor step through the first critic (pre-update, frozen), checked before
        // anything steps, so that an error leaves the learner as it was.
        let actor_grads = if step.is_multiple_of(POLICY_DELAY) {
            let frozen = self.critic.clone().no_grad();
            let q = frozen.forward(obs.clone(), self.policy(&self.actor, obs));
            let actor_loss = q.slice([0..1, 0..b, 0..1]).mean().neg();
            metrics.push(
                "actor_loss",
                checked_loss("TD3 actor loss", &actor_loss, step)?,
            );
            Some(GradientsParams::from_grads(
                actor_loss.backward(),
                &self.actor,
            ))
        } else {
            None
        };
        let critic_grads = GradientsParams::from_grads(loss.backward(), &self.critic);
        step_in_place(&mut self.critic_opt, LR, &mut self.critic, critic_grads);
        if let Some(grads) = actor_grads {
            step_in_place(&mut self.actor_opt, LR, &mut self.actor, grads);
            self.actor_target = polyak_update(self.actor_target.clone(), &self.actor, TAU);
            self.critic_target = polyak_update(self.critic_target.clone(), &self.critic, TAU);
            self.acting.refresh(&self.actor);
        }
        Ok(Update {
            metrics,
            td_errors: Some(td_errors),
        })
    }

    fn progress(&mut self) -> &mut Progress {
        &mut self.progress
    }

    fn gamma(&self) -> Option<f64> {
        Some(GAMMA)
    }
}

fn main() -> Result<()> {
    let mut args = std::env::args().skip(1);
    let steps: u64 = args.next().and_then(|s| s.parse().ok()).unwrap_or(15_000);
    let kind: ReplayKind = args.next().map_or(Ok(ReplayKind::Uniform), |k| k.parse())?;
    let device = ember::backend::DeviceSpec::Flex.device()?;
    let mut env = SyncVecEnv::from_id("Pendulum-v1", 1)?;
    let obs_dim = env.single_observation_space().flat_dim();
    let act_dim = env.single_action_space().flat_dim();
    let mut td3 = Td3::new(obs_dim, act_dim, 2.0, &Devices::same(&device))?;
    let mut trainer = OffPolicyConfig {
        total_steps: steps,
        learning_starts: 1_000,
        eval_every: 2_500,
        ..OffPolicyConfig::default()
    };
    trainer.replay.kind = kind;
    let mut replay = trainer.build_replay(&env)?;
    let eval = ember::env::factory("Pendulum-v1")?;
    let report = train_off_policy(&mut td3, &mut env, &mut replay, eval.as_ref(), &trainer)?;
    for e in &report.evals {
        println!(
            "{:>6} steps: mean eval return {:8.1}",
            e.env_steps, e.mean_return
        );
    }
    println!(
        "TD3 Pendulum-v1 ({kind:?} replay): {} env steps, {} updates in {:.1} s; final eval {:.1}",
        report.env_steps,
        report.updates,
        report.wall_secs,
        report.final_eval().unwrap_or(f64::NAN)
    );
    Ok(())
}
