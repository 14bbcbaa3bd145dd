//! TD3 (Fujimoto et al. 2018) assembled from Ember's public parts — an MLP actor, the fused
//! twin-critic ensemble, Polyak targets, TD targets, the shared off-policy trainer — and
//! trained on Pendulum-v1. Run: `cargo run --release --example custom_td3 [steps]`.

use burn::module::Module;
use burn::optim::{GradientsParams, ModuleOptimizer};
use burn::tensor::activation::tanh;
use burn::tensor::{Device, Tensor};
use ember::algo::tensors::{column, host, matrix};
use ember::algo::{
    ActingCopy, ActionBuf, Agent, Checkpoint, Metrics, OffPolicyConfig, OffPolicyLearner,
    OptimizerKind, train_off_policy,
};
use ember::core::{Batch, EmberRng, Result};
use ember::env::{SyncVecEnv, VecEnv};
use ember::loss::{checked_loss, sac_critic_loss, td_target};
use ember::nn::{CriticEnsemble, CriticEnsembleConfig, Mlp, MlpConfig, noise, polyak_update};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

struct Td3 {
    obs_dim: usize,
    act_dim: usize,
    max_action: f32,
    learn: Device,
    plain: Device,
    actor: Option<Mlp>,
    actor_target: Mlp,
    critic: Option<CriticEnsemble>,
    critic_target: CriticEnsemble,
    actor_opt: ModuleOptimizer,
    critic_opt: ModuleOptimizer,
    acting: ActingCopy<Mlp>,
    rng: EmberRng,
}

const GAMMA: f64 = 0.99;
const TAU: f64 = 0.005;
const LR: f64 = 1e-3;
const POLICY_DELAY: u64 = 2;
const EXPLORE_STD: f32 = 0.1;
const TARGET_STD: f32 = 0.2;
const TARGET_CLIP: f32 = 0.5;

impl Td3 {
    fn new(obs_dim: usize, act_dim: usize, max_action: f32, device: &Device) -> Result<Td3> {
        let plain = device.clone();
        let learn = plain.clone().autodiff();
        plain.seed(0);
        let actor = MlpConfig::new([obs_dim, 256, 256, act_dim]).init(&learn)?;
        let critic = CriticEnsembleConfig::new(2, obs_dim + act_dim, [256, 256]).init(&learn)?;
        Ok(Td3 {
            obs_dim,
            act_dim,
            max_action,
            actor_target: actor.valid(),
            critic_target: critic.valid(),
            acting: ActingCopy::new(&actor, &plain, 1),
            actor: Some(actor),
            critic: Some(critic),
            actor_opt: OptimizerKind::Adam.build(0.0, &learn),
            critic_opt: OptimizerKind::Adam.build(0.0, &learn),
            rng: EmberRng::seed_from(0),
            learn,
            plain,
        })
    }

    /// `max_action · tanh(actor(obs))`.
    fn policy(&self, actor: &Mlp, obs: Tensor<2>) -> Tensor<2> {
        tanh(actor.forward(obs)).mul_scalar(self.max_action)
    }
}

impl Checkpoint for Td3 {} // no checkpoints: the defaults say so

impl Agent for Td3 {
    fn obs_dim(&self) -> usize {
        self.obs_dim
    }

    fn act(&mut self, obs: &[f32], explore: bool, out: &mut ActionBuf) -> Result<()> {
        let n = obs.len() / self.obs_dim;
        let x = matrix(obs, n, self.obs_dim, self.acting.device());
        let out = out.continuous_mut("TD3")?;
        *out = host(self.policy(self.acting.module(), x));
        if explore {
            let mut eps = Vec::with_capacity(out.len());
            noise::fill_standard_normal(out.len(), &mut self.rng, &mut eps);
            for (a, e) in out.iter_mut().zip(eps) {
                let m = self.max_action;
                *a = (*a + e * EXPLORE_STD * m).clamp(-m, m);
            }
        }
        Ok(())
    }
}

impl OffPolicyLearner for Td3 {
    fn update(&mut self, batch: &Batch, step: u64) -> Result<Metrics> {
        let (b, o, a) = (batch.len, self.obs_dim, self.act_dim);
        let m = self.max_action;
        // Target: clipped double Q with target policy smoothing.
        let next_obs = matrix(&batch.next_obs, b, o, &self.plain);
        let smoothing = noise::standard_normal(b, a, &mut self.rng, &self.plain)
            .mul_scalar(TARGET_STD * m)
            .clamp(-TARGET_CLIP * m, TARGET_CLIP * m);
        let next_action =
            (self.policy(&self.actor_target, next_obs.clone()) + smoothing).clamp(-m, m);
        let next_q = self.critic_target.min_q(next_obs, next_action);
        let reward = column(&batch.reward, &self.plain);
        let done = column(&batch.terminated, &self.plain);
        let y = td_target(reward, done, next_q, GAMMA);
        // Critic step.
        let obs = matrix(&batch.obs, b, o, &self.learn);
        let critic = self.critic.take().expect("critic");
        let q = critic.forward(obs.clone(), matrix(&batch.action, b, a, &self.learn));
        let loss = sac_critic_loss(q, Tensor::from_inner(y));
        let mut metrics = Metrics::default();
        let checked = checked_loss("TD3 critic loss", &loss, step);
        let Ok(value) = checked else {
            self.critic = Some(critic);
            return checked.map(|_| metrics);
        };
        metrics.push("critic_loss", value);
        let grads = GradientsParams::from_grads(loss.backward(), &critic);
        let critic = self.critic_opt.step(LR, critic, grads);
        // Delayed actor step through the first critic, then the targets.
        if step.is_multiple_of(POLICY_DELAY) {
            let actor = self.actor.take().expect("actor");
            let q = critic
                .clone()
                .no_grad()
                .forward(obs.clone(), self.policy(&actor, obs));
            let actor_loss = q.slice([0..1, 0..b, 0..1]).mean().neg();
            metrics.push(
                "actor_loss",
                checked_loss("TD3 actor loss", &actor_loss, step)?,
            );
            let grads = GradientsParams::from_grads(actor_loss.backward(), &actor);
            let actor = self.actor_opt.step(LR, actor, grads);
            let target = std::mem::replace(&mut self.actor_target, actor.valid());
            self.actor_target = polyak_update(target, &actor, TAU);
            let target = std::mem::replace(&mut self.critic_target, critic.valid());
            self.critic_target = polyak_update(target, &critic, TAU);
            self.acting.refresh(&actor);
            self.actor = Some(actor);
        }
        self.critic = Some(critic);
        Ok(metrics)
    }
}

fn main() -> Result<()> {
    let steps: u64 = std::env::args()
        .nth(1)
        .and_then(|s| s.parse().ok())
        .unwrap_or(15_000);
    let device = ember::backend::DeviceSpec::Flex.device()?;
    let mut env = SyncVecEnv::from_id("Pendulum-v1", 1)?;
    let obs_dim = env.single_observation_space().flat_dim();
    let act_dim = env.single_action_space().flat_dim();
    let mut td3 = Td3::new(obs_dim, act_dim, 2.0, &device)?;
    let trainer = OffPolicyConfig {
        total_steps: steps,
        learning_starts: 1_000,
        eval_every: 2_500,
        ..OffPolicyConfig::default()
    };
    let report = train_off_policy(&mut td3, &mut env, "Pendulum-v1", &trainer)?;
    for e in &report.evals {
        println!(
            "{:>6} steps: mean eval return {:8.1}",
            e.env_steps, e.mean_return
        );
    }
    println!(
        "TD3 Pendulum-v1: {} env steps, {} updates in {:.1} s; final eval {:.1}",
        report.env_steps,
        report.updates,
        report.wall_secs,
        report.final_eval().unwrap_or(f64::NAN)
    );
    Ok(())
}
