//! CrossQ (Bhatt et al., ICLR 2024) assembled from Ember's public parts and run by the
//! `ember` command: SAC's actor and temperature ([`ActorStep`]), two critics with batch
//! norm ([`BatchNormCritic`]) and *no target networks* — each critic sees the batch's
//! `(s, a)` and `(s', a')` rows in one forward pass, so both are normalised by the same
//! statistics, and the next values are that pass's second half, without gradient. The
//! actor steps every `policy_delay` updates, against the critics' running statistics, as
//! a part beside the critics' step. (The paper's critics are 2048 wide with Adam's
//! β₁ = 0.5; here 256 wide, Adam's defaults.)
//!
//! `cargo run --release --example custom_crossq -- train crossq --env Pendulum-v1` (then
//! `train --resume RUN`, `eval RUN`, `export RUN --onnx FILE`, `plot`, ...).
use burn::module::Module;
use burn::optim::{GradientsParams, ModuleOptimizer};
use burn::tensor::{Device, Tensor};
use emberlab::algo::parts::{Parts, UpdateSchedule, part};
use emberlab::algo::sac::{ActorGrads, ActorStep};
use emberlab::algo::tensors::{column, learner_devices, matrix, rows_of};
use emberlab::algo::{ActionBuf, Agent, Checkpoint, Devices, GaussianActing, OffPolicyLearner};
use emberlab::algo::{OnnxOutput, OnnxPolicy, OptimizerKind, Persist, Progress, TrainingState};
use emberlab::algo::{Update, Validate, Visitor, step_in_place};
use emberlab::core::{Batch, EmberRng, Result, Space};
use emberlab::loss::{checked_loss, sac_critic_loss, sac_target_discounted};
use emberlab::nn::{BatchNormCritic, GaussianTanhPolicy, GaussianTanhPolicyConfig, Temperature};
use emberlab::run::kinds::{Kind, LearnerConfig, Preset, TrainerKind};
use emberlab::run::{OffPolicy, RunLearner};

const GAMMA: f64 = 0.99;
const LR: f64 = 1e-3;
/// Weight of a batch in the critics' running statistics.
const MOMENTUM: f64 = 0.01;

struct CrossQ {
    dims: (usize, usize),
    devices: (Device, Device), // (plain, learn)
    actor: GaussianTanhPolicy,
    temperature: Temperature,
    critics: [BatchNormCritic; 2],
    critic_opts: [ModuleOptimizer; 2],
    actor_opts: [ModuleOptimizer; 2], // the actor's and the temperature's
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
        let actor = GaussianTanhPolicyConfig::new(o, b.dim())
            .with_bounds(b.low().to_vec(), b.high().to_vec())
            .init(&learn)?;
        let critic = || BatchNormCritic::new(o + b.dim(), &[c.width; 2], MOMENTUM, &learn);
        let adam = || OptimizerKind::Adam.build(0.0, &learn);
        Ok(CrossQ {
            dims: (o, b.dim()),
            acting: GaussianActing::new(&actor, &devices.act, 1),
            temperature: Temperature::new(1.0, &learn)?,
            critics: [critic()?, critic()?],
            critic_opts: [adam(), adam()],
            actor_opts: [adam(), adam()],
            rng: EmberRng::seed_from(c.seed).fork(9),
            progress: Progress::default(),
            parts: c.update_schedule.parts("crossq"),
            policy_delay: c.policy_delay,
            devices: (plain, learn),
            actor,
        })
    }
}

impl OffPolicyLearner for CrossQ {
    fn update(&mut self, batch: &Batch, step: u64) -> Result<Update> {
        let ((o, a), (plain, learn), b) = (self.dims, &self.devices, batch.len);
        batch.check(o, a)?;
        let (alpha, mut rng) = (self.temperature.alpha(), self.rng.clone()); // kept on success
        let eps = emberlab::nn::noise::standard_normal(b, a, &mut rng, plain);
        let next_obs = matrix(&batch.next_obs, b, o, plain);
        let (next_a, next_logp) = self.actor.valid().sample(next_obs.clone(), eps);
        let obs = matrix(&batch.obs, b, o, learn);
        let joint_obs = Tensor::cat(vec![obs.clone(), Tensor::from_inner(next_obs)], 0);
        let act = matrix(&batch.action, b, a, learn);
        let joint_act = Tensor::cat(vec![act, Tensor::from_inner(next_a)], 0);
        let gammas = match batch.discount.is_empty() {
            true => vec![GAMMA as f32; b],
            false => batch.discount.clone(), // n-step rows carry γ^m
        };
        let [r, d, g] = [&batch.reward, &batch.terminated, &gammas].map(|v| column(v, learn));
        let (critics, opts) = (&self.critics, &self.critic_opts);
        // The critics: values and next values from one pass each; their step, if every
        // part's loss is finite, on clones that also take the batch's statistics.
        let critic_step = part(move || {
            let passes = critics
                .each_ref()
                .map(|c| c.forward_train(joint_obs.clone(), joint_act.clone()));
            let half = |k: usize, rows: std::ops::Range<usize>| rows_of(&passes[k].0, &rows);
            let next_q = half(0, b..2 * b).min_pair(half(1, b..2 * b)).detach();
            let y = sac_target_discounted(r, d, next_q, Tensor::from_inner(next_logp), alpha, g);
            let q = [0, 1].map(|k| half(k, 0..b).reshape([1, b, 1]));
            let loss = sac_critic_loss(Tensor::cat(q.to_vec(), 0), y);
            let value = checked_loss("CrossQ critic loss", &loss, step)?;
            let mut grads = loss.backward();
            let grads = critics
                .each_ref()
                .map(|c| GradientsParams::from_module(&mut grads, c));
            Ok(move || {
                let mut new = (critics.clone(), opts.clone());
                for (k, grads) in grads.into_iter().enumerate() {
                    step_in_place(&mut new.1[k], LR, &mut new.0[k], grads);
                }
                let ([c0, c1], [s0, s1]) = (new.0, passes.map(|(_, stats)| stats));
                ([c0.with_stats(&s0), c1.with_stats(&s1)], new.1, value)
            })
        });
        // Every `policy_delay` updates the actor and α, against the critics as they were.
        let (actor, temperature, actor_opts) = (&self.actor, &self.temperature, &self.actor_opts);
        let actor_step = step.is_multiple_of(self.policy_delay).then(|| {
            let eps = emberlab::nn::noise::standard_normal(b, a, &mut rng, learn);
            let target_entropy = -(a as f64);
            let s = ActorStep {
                actor,
                temperature: Some(temperature),
                alpha,
                target_entropy,
                update: step,
            };
            part(move || {
                let frozen = critics.each_ref().map(|c| c.clone().no_grad());
                let q = |s: Tensor<2>, a: Tensor<2>| {
                    frozen[0]
                        .forward(s.clone(), a.clone())
                        .min_pair(frozen[1].forward(s, a))
                };
                let ActorGrads {
                    actor: ga,
                    temperature: gt,
                    actor_loss,
                    ..
                } = s.grads((obs, eps), 1.0, q)?;
                Ok(move || {
                    let mut new = (actor.clone(), temperature.clone(), actor_opts.clone());
                    step_in_place(&mut new.2[0], LR, &mut new.0, ga);
                    if let Some(gt) = gt {
                        step_in_place(&mut new.2[1], LR, &mut new.1, gt);
                    }
                    (new, actor_loss)
                })
            })
        });
        let ((critics, opts, loss), actor) =
            self.parts.run("CrossQ update", (critic_step, actor_step))?;
        (self.critics, self.critic_opts, self.rng) = (critics, opts, rng);
        let mut update = Update::default();
        update.metrics.push("critic_loss", loss);
        if let Some(((actor, temperature, opts), loss)) = actor {
            (self.actor, self.temperature, self.actor_opts) = (actor, temperature, opts);
            update.metrics.push("actor_loss", loss);
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

    fn checkpoint(&mut self) -> Option<&mut dyn Checkpoint> {
        Some(self)
    }

    fn training_state(&mut self) -> Option<&mut dyn TrainingState> {
        Some(self)
    }
}

impl Agent for CrossQ {
    fn obs_dim(&self) -> usize {
        self.dims.0
    }

    fn act(&mut self, obs: &[f32], explore: bool, out: &mut ActionBuf) -> Result<()> {
        let out = out.continuous_mut("CrossQ")?;
        self.acting
            .act(obs, self.dims.0, explore, &mut self.rng, out)
    }
}

impl OnnxPolicy for CrossQ {
    /// `action = scale · tanh(μ(obs)) + bias`, as SAC's.
    fn onnx_outputs(&self, g: &mut emberlab::nn::OnnxGraph, obs: &str) -> Result<Vec<OnnxOutput>> {
        let value = self.actor.deterministic_onnx(g, obs)?;
        Ok(vec![OnnxOutput {
            value,
            name: "action",
            width: Some(self.dims.1),
        }])
    }
}

/// Checkpoints, exact resume and the published policy follow from this list.
impl Persist for CrossQ {
    fn kind(&self) -> &str {
        "crossq"
    }

    fn persist<V: Visitor>(&mut self, v: &mut V) -> Result<()> {
        v.net("actor", &mut self.actor)?;
        v.nets("critic", &mut self.critics)?;
        v.net("temperature", &mut self.temperature)?;
        v.optims("critic_optim", &mut self.critic_opts)?;
        v.optims("actor_optim", &mut self.actor_opts)?;
        v.value(&mut self.rng)?;
        v.value(&mut self.progress)?;
        v.acting(&mut self.acting, &mut self.actor)
    }
}

/// CrossQ's section of a run's config, `[crossq]`.
#[derive(Clone, Debug, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct CrossQConfig {
    /// Seeds the networks and the learner's draws.
    pub seed: u64,
    /// The critics' hidden widths.
    pub width: usize,
    /// Critic updates per actor update.
    pub policy_delay: u64,
    /// The update's parts side by side, one after the other, or whichever times faster.
    pub update_schedule: UpdateSchedule,
}

impl Default for CrossQConfig {
    fn default() -> Self {
        let update_schedule = UpdateSchedule::Auto;
        CrossQConfig {
            seed: 0,
            width: 256,
            policy_delay: 3,
            update_schedule,
        }
    }
}

impl Validate for CrossQConfig {
    fn validate(&self) -> Result<()> {
        emberlab::algo::check_positive("crossq.width", self.width)?;
        emberlab::algo::check_positive("crossq.policy_delay", self.policy_delay as usize)
    }
}

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

/// Adds CrossQ to the `ember` command's learners as `crossq`.
///
/// # Errors
/// The name is taken.
pub fn register() -> emberlab::run::Result<()> {
    emberlab::run::register(Kind::<CrossQConfig>::named("crossq"))
}

/// The `ember` command with CrossQ registered.
#[allow(dead_code)] // the tests include this file as a module
fn main() -> std::process::ExitCode {
    if let Err(e) = register() {
        eprintln!("error: {e}");
        return std::process::ExitCode::FAILURE;
    }
    let args = std::iter::once("ember".into()).chain(std::env::args().skip(1));
    emberlab_cli::app::main_with_args(args)
}
