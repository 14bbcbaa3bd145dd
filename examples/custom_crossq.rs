//! CrossQ (Bhatt et al., ICLR 2024) from Ember's public parts, run by the `ember` command:
//! SAC's actor side ([`SacActor`]), two batch-normalised critics ([`BatchNormCritic`]) and
//! no target networks: the critics see `(s, a)` and `(s', a')` rows in one pass, normalised
//! alike; the next values are its second half, without gradient. The actor steps every
//! `policy_delay` updates, beside the critics. (The paper: 2048 wide, Adam's β₁ = 0.5.)
//! `cargo run --release --example custom_crossq -- train crossq --env Pendulum-v1`, then
//! `train --resume RUN`, `eval RUN`, `export RUN --onnx FILE`, `plot`, ...
use emberlab::algo::sac::SacActor;
use emberlab::loss::{sac_critic_loss, sac_target_discounted};
use emberlab::nn::BatchNormCritic;
use emberlab::prelude::*;
use std::num::NonZeroU64;

const GAMMA: f64 = 0.99;
const LR: f64 = 1e-3;
/// Weight of a batch in the critics' running statistics.
const MOMENTUM: f64 = 0.01;

struct CrossQ {
    obs_dim: usize,
    devices: (Device, Device), // (plain, learn)
    actor: SacActor,
    critic: BatchNormCritic,
    critic_opt: ModuleOptimizer,
    acting: GaussianActing,
    rng: EmberRng,
    progress: Progress,
    parts: Parts,
    policy_delay: u64,
}

impl CrossQ {
    fn new(obs: &Space, act: &Space, c: &CrossQConfig, devices: &Devices) -> Result<CrossQ> {
        let (plain, learn, _seeded) = learner_devices(&devices.learn, c.seed);
        let (o, b) = (obs.flat_dim(), act.as_box("CrossQ")?);
        let actor = SacActor::new(o, b, None, LR, &learn)?;
        let critic = BatchNormCritic::new(
            2,
            o + b.dim(),
            &[c.width.unwrap_or(256); 2],
            MOMENTUM,
            &learn,
        )?;
        Ok(CrossQ {
            obs_dim: o,
            acting: GaussianActing::new(&actor.policy, &devices.act, 1),
            critic_opt: OptimizerKind::Adam.build(0.0, &learn),
            rng: EmberRng::seed_from(c.seed).fork(9),
            progress: Progress::default(),
            parts: c.update_schedule.parts("crossq"),
            policy_delay: c.policy_delay.map_or(3, NonZeroU64::get),
            devices: (plain, learn),
            actor,
            critic,
        })
    }
}

impl OffPolicyLearner for CrossQ {
    fn update(&mut self, batch: &Batch, step: u64) -> Result<Update> {
        let ((o, a), b) = ((self.obs_dim, self.actor.policy.act_dim), batch.len);
        let (plain, learn) = &self.devices;
        batch.check(o, a)?;
        let mut rng = self.rng.clone(); // kept only if the update succeeds
        let eps = noise::standard_normal(b, a, &mut rng, plain);
        let next_obs = matrix(&batch.next_obs, b, o, plain);
        let (next_a, next_logp) = self.actor.policy.valid().sample(next_obs.clone(), eps);
        let obs = matrix(&batch.obs, b, o, learn);
        let joint_obs = Tensor::cat(vec![obs.clone(), Tensor::from_inner(next_obs)], 0);
        let act = matrix(&batch.action, b, a, learn);
        let joint_act = Tensor::cat(vec![act, Tensor::from_inner(next_a)], 0);
        let gammas = batch.discounts(GAMMA); // γ, or the n-step rows' γ^m
        let [r, d, g] = [&batch.reward, &batch.terminated, &*gammas].map(|v| column(v, learn));
        let (critic, opt, actor) = (&self.critic, &self.critic_opt, self.actor.step(step));
        // The critics: values and next values from one pass; if every part's loss is finite,
        // their step on clones that also take the batch's statistics.
        let critic_step = part(move || {
            let (q, stats) = critic.forward_train(joint_obs, joint_act);
            let next = q.clone().slice([0..2, b..2 * b]);
            let next_q = next.min_dim(0).reshape([b, 1]).detach();
            let next_logp = Tensor::from_inner(next_logp);
            let y = sac_target_discounted(r, d, next_q, next_logp, actor.alpha, g);
            let loss = sac_critic_loss(q.slice([0..2, 0..b]), y);
            let value = checked_loss("CrossQ critic loss", &loss, step)?;
            let grads = GradientsParams::from_grads(loss.backward(), critic);
            Ok(move || {
                let (next, opt) = stepped(critic, opt, LR, grads);
                (next.with_stats(&stats), opt, value)
            })
        });
        // Every `policy_delay` updates, the actor against the critics as they were.
        let actor_step = step.is_multiple_of(self.policy_delay).then(|| {
            let eps = noise::standard_normal(b, a, &mut rng, learn);
            let sac = &self.actor;
            part(move || {
                let frozen = critic.clone().no_grad();
                let grads = actor.grads((obs, eps), 1.0, |s, a| frozen.min_q(s, a))?;
                Ok(move || sac.stepped(vec![grads]))
            })
        });
        let run = self.parts.run("CrossQ update", (critic_step, actor_step));
        let ((critic, opt, loss), actor) = run?;
        (self.critic, self.critic_opt, self.rng) = (critic, opt, rng);
        let mut update = Update::default();
        update.metrics.push("critic_loss", loss);
        if let Some((actor, loss)) = actor {
            self.actor = actor;
            self.acting.refresh(&self.actor.policy);
            update.metrics.push("actor_loss", loss);
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

impl Agent for CrossQ {
    fn obs_dim(&self) -> usize {
        self.obs_dim
    }

    fn act(&mut self, obs: &[f32], explore: bool, out: &mut ActionBuf) -> Result<()> {
        let out = out.continuous_mut("CrossQ")?;
        self.acting
            .act(obs, self.obs_dim, explore, &mut self.rng, out)
    }
}

impl OnnxPolicy for CrossQ {
    fn onnx_outputs(&self, g: &mut OnnxGraph, obs: &str) -> Result<Vec<OnnxOutput>> {
        self.actor.onnx_outputs(g, obs)
    }
}

/// Checkpoints, exact resume and the published policy follow from this list.
impl Persist for CrossQ {
    fn kind(&self) -> &str {
        "crossq"
    }

    fn persist<V: Visitor>(&mut self, v: &mut V) -> Result<()> {
        self.actor.persist(v)?;
        v.net("critic", &mut self.critic)?; // running statistics included
        v.optim("critic_optim", &mut self.critic_opt)?;
        v.value(&mut self.rng)?;
        v.value(&mut self.progress)?;
        v.acting(&mut self.acting, &mut self.actor.policy)
    }
}

/// CrossQ's section of a run's config, `[crossq]`: its seed, the critics' hidden width
/// (absent: 256), critic updates per actor update (absent: 3), its parts' schedule.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CrossQConfig {
    pub seed: u64,
    pub width: Option<usize>,
    pub policy_delay: Option<NonZeroU64>,
    pub update_schedule: UpdateSchedule,
}

impl Validate for CrossQConfig {}

impl LearnerConfig for CrossQConfig {
    const TRAINER: TrainerKind = TrainerKind::OffPolicy;
    const METRICS: &'static [&'static str] = &["critic_loss", "actor_loss"];

    fn build_learner(&self, obs: &Space, act: &Space, d: &Devices) -> Result<Box<dyn RunLearner>> {
        Ok(Box::new(OffPolicy(CrossQ::new(obs, act, self, d)?)))
    }

    /// SAC's zoo trainer for `env`.
    fn preset(env: &str) -> Preset<Self> {
        Preset::sac_trainer(env, CrossQConfig::default(), |_| {})
    }
}

/// The `ember` command with CrossQ added.
#[allow(dead_code)] // the tests include this file as a module
fn main() -> std::process::ExitCode {
    emberlab_cli::app::main_with([Kind::<CrossQConfig>::named("crossq")])
}
