//! REDQ (Chen et al. 2021) assembled from Ember's public parts and run by the `ember`
//! command: SAC's actor and temperature, ten critics as two fused ensembles of five (one
//! batched matmul per layer, each half its own loss and Adam step), targets from the
//! minimum of a random pair of target critics, `UPDATES_PER_STEP` critic updates per env
//! step, the actor once per env step against the mean of all ten. The update is one run of
//! [`emberlab::algo::parts`]: the critic halves and the actor's two row shares side by side.
//!
//! `cargo run --release --example custom_redq -- train redq --env Pendulum-v1` (then
//! `train --resume RUN`, `eval RUN`, `export RUN --onnx FILE`, `plot`, ...).
use burn::module::Module;
use burn::optim::{GradientsParams, ModuleOptimizer};
use burn::tensor::{Device, Tensor};
use emberlab::algo::parts::run_by_rows;
use emberlab::algo::parts::{Part, Parts, UpdateSchedule, part, row_parts};
use emberlab::algo::sac::{ActorGrads, ActorStep};
use emberlab::algo::tensors::{column, learner_devices, matrix, rows_of};
use emberlab::algo::{ActionBuf, Agent, Checkpoint, Devices, GaussianActing};
use emberlab::algo::{OffPolicyLearner, OnnxOutput, OnnxPolicy, OptimizerKind, Persist};
use emberlab::algo::{Progress, TrainingState, Update, Validate, Visitor, step_in_place};
use emberlab::core::{Batch, EmberRng, Result, Space};
use emberlab::loss::{checked_loss, sac_critic_loss, sac_target_discounted};
use emberlab::nn::{CriticEnsemble, CriticEnsembleConfig, GaussianTanhPolicy, Temperature};
use emberlab::nn::{GaussianTanhPolicyConfig, noise, polyak_update};
use emberlab::run::kinds::{Kind, LearnerConfig, Preset, TrainerKind};
use emberlab::run::{OffPolicy, RunLearner};

/// N = 10 critics as two ensembles of `HALF`; G critic updates per env step.
const HALF: usize = 5;
pub const UPDATES_PER_STEP: usize = 10;
const G: u64 = UPDATES_PER_STEP as u64;
const GAMMA: f64 = 0.99;
const TAU: f64 = 0.005;
const LR: f64 = 1e-3;

struct Redq {
    dims: (usize, usize),
    devices: (Device, Device), // (plain, learn): targets need no graph
    actor: GaussianTanhPolicy,
    critics: [CriticEnsemble; 2],
    targets: [CriticEnsemble; 2],
    temperature: Temperature,
    critic_opts: [ModuleOptimizer; 2],
    actor_opts: [ModuleOptimizer; 2], // the actor's and the temperature's
    acting: GaussianActing,
    rng: EmberRng,
    progress: Progress,
    parts: Parts,
}

/// A critic half's step, on clones: nothing moves into the learner before every part is
/// done. (Its target, critic, optimizer, loss.)
type CriticStep = (CriticEnsemble, CriticEnsemble, ModuleOptimizer, f64);

impl Redq {
    fn new(obs: &Space, act: &Space, c: &RedqConfig, devices: &Devices) -> Result<Redq> {
        let (plain, learn, _seeded) = learner_devices(&devices.learn, c.seed);
        let (o, b) = (obs.flat_dim(), act.as_box("REDQ")?);
        let actor = GaussianTanhPolicyConfig::new(o, b.dim())
            .with_bounds(b.low().to_vec(), b.high().to_vec());
        let actor = c.width.map_or(actor.clone(), |w| actor.with_hidden([w; 2]));
        let critic = CriticEnsembleConfig::new(HALF, o + b.dim(), [c.width.unwrap_or(64); 2]);
        let critics = [critic.init(&learn)?, critic.init(&learn)?];
        let adam = || OptimizerKind::Adam.build(0.0, &learn);
        let actor = actor.init(&learn)?;
        Ok(Redq {
            dims: (o, b.dim()),
            targets: critics.clone().map(|c| c.valid()),
            acting: GaussianActing::new(&actor, &devices.act, 1),
            temperature: Temperature::new(1.0, &learn)?,
            critic_opts: [adam(), adam()],
            actor_opts: [adam(), adam()],
            rng: EmberRng::seed_from(c.seed).fork(9),
            progress: Progress::default(),
            parts: c.update_schedule.parts("redq"),
            devices: (plain, learn),
            actor,
            critics,
        })
    }
}

/// A critic half regressed on the targets `y`; it steps only if every part's loss is finite.
fn critic_step<'a>(
    (critic, target, opt): (&'a CriticEnsemble, &'a CriticEnsemble, &'a ModuleOptimizer),
    (obs, act, y): (Tensor<2>, Tensor<2>, Tensor<2>),
    step: u64,
) -> Part<'a, CriticStep> {
    part(move || {
        let loss = sac_critic_loss(critic.forward(obs, act), y);
        let value = checked_loss("REDQ critic loss", &loss, step)?;
        let grads = GradientsParams::from_grads(loss.backward(), critic);
        Ok(move || {
            let (mut critic, mut opt) = (critic.clone(), opt.clone());
            step_in_place(&mut opt, LR, &mut critic, grads);
            let target = polyak_update(target.clone(), &critic, TAU);
            (target, critic, opt, value)
        })
    })
}

impl OffPolicyLearner for Redq {
    fn update(&mut self, batch: &Batch, step: u64) -> Result<Update> {
        let ((o, a), (plain, learn), b) = (self.dims, &self.devices, batch.len);
        batch.check(o, a)?;
        let (alpha, mut rng) = (self.temperature.alpha(), self.rng.clone()); // kept on success
        // Targets from a random pair (i, j) of the ten target critics, half the rows per core.
        let eps = noise::standard_normal(b, a, &mut rng, plain);
        let i = rng.below(2 * HALF as u64) as usize;
        let j = (i + 1 + rng.below(2 * HALF as u64 - 1) as usize) % (2 * HALF);
        let gammas = match batch.discount.is_empty() {
            true => vec![GAMMA as f32; b],
            false => batch.discount.clone(), // n-step rows carry γ^m
        };
        let next_obs = matrix(&batch.next_obs, b, o, plain);
        let [r, d, g] = [&batch.reward, &batch.terminated, &gammas].map(|v| column(v, plain));
        let (actor, targets) = (self.actor.valid(), &self.targets);
        let y = run_by_rows(&mut self.parts, "REDQ targets", (b, 2), |rows| {
            let [s, e, r, d, g] = [&next_obs, &eps, &r, &d, &g].map(|t| rows_of(t, &rows));
            let (next_a, next_logp) = actor.sample(s.clone(), e);
            let q = |k: usize| {
                targets[k / HALF]
                    .member(k % HALF)
                    .forward(s.clone(), next_a.clone())
            };
            Ok(sac_target_discounted(
                r,
                d,
                q(i).min_pair(q(j)),
                next_logp,
                alpha,
                g,
            ))
        })?;
        let y = Tensor::from_inner(Tensor::cat(y, 0));
        let obs = matrix(&batch.obs, b, o, learn);
        let inputs = (obs.clone(), matrix(&batch.action, b, a, learn), y);
        // The two critic halves and, once per env step, the actor's two row shares (against
        // the critics as they were), side by side. Every loss is checked before any step.
        let eps = (step % G == G - 1).then(|| noise::standard_normal(b, a, &mut rng, learn));
        let critics = &self.critics;
        let mean_q = |s: Tensor<2>, act: Tensor<2>| {
            let q = critics
                .each_ref()
                .map(|c| c.clone().no_grad().forward(s.clone(), act.clone()));
            let [_, rows, _] = q[0].dims();
            Tensor::cat(q.to_vec(), 0).mean_dim(0).reshape([rows, 1])
        };
        let (actor, temperature) = (&self.actor, Some(&self.temperature));
        let s = ActorStep {
            actor,
            temperature,
            alpha,
            target_entropy: -(a as f64),
            update: step,
        };
        let actor = eps.map(|eps| {
            move |rows, share| s.grads((rows_of(&obs, &rows), rows_of(&eps, &rows)), share, mean_q)
        });
        let half = |k: usize| (&self.critics[k], &self.targets[k], &self.critic_opts[k]);
        let critics = [0, 1].map(|k| critic_step(half(k), inputs.clone(), step));
        let parts = (critics, actor.as_ref().map(|f| row_parts((b, 2), f)));
        let (halves, actor_shares) = self.parts.run("REDQ update", parts)?;
        // The actor's and α's step on the shares' summed gradients, also on clones.
        let actor = actor_shares.map(|shares| {
            let g = ActorGrads::sum(shares, &self.actor, Some(&self.temperature));
            let mut nets = (
                self.actor.clone(),
                self.temperature.clone(),
                self.actor_opts.clone(),
            );
            step_in_place(&mut nets.2[0], LR, &mut nets.0, g.actor);
            if let Some(gt) = g.temperature {
                step_in_place(&mut nets.2[1], LR, &mut nets.1, gt);
            }
            (nets, g.actor_loss)
        });
        let mut update = Update::default();
        for (k, (target, critic, opt, loss)) in halves.into_iter().enumerate() {
            (self.targets[k], self.critics[k], self.critic_opts[k]) = (target, critic, opt);
            update
                .metrics
                .push(["critic_loss_a", "critic_loss_b"][k], loss);
        }
        if let Some(((actor, temperature, opts), loss)) = actor {
            (self.actor, self.temperature, self.actor_opts) = (actor, temperature, opts);
            update.metrics.push("actor_loss", loss);
            self.acting.refresh(&self.actor);
        }
        self.rng = rng;
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

impl Agent for Redq {
    fn obs_dim(&self) -> usize {
        self.dims.0
    }

    fn act(&mut self, obs: &[f32], explore: bool, out: &mut ActionBuf) -> Result<()> {
        let out = out.continuous_mut("REDQ")?;
        self.acting
            .act(obs, self.dims.0, explore, &mut self.rng, out)
    }
}

impl OnnxPolicy for Redq {
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
impl Persist for Redq {
    fn kind(&self) -> &str {
        "redq"
    }

    fn persist<V: Visitor>(&mut self, v: &mut V) -> Result<()> {
        v.net("actor", &mut self.actor)?;
        v.nets("critic", &mut self.critics)?;
        v.nets("target", &mut self.targets)?;
        v.net("temperature", &mut self.temperature)?;
        v.optims("critic_optim", &mut self.critic_opts)?;
        v.optims("actor_optim", &mut self.actor_opts)?;
        v.value(&mut self.rng)?;
        v.value(&mut self.progress)?;
        v.acting(&mut self.acting, &mut self.actor)
    }
}

/// REDQ's section of a run's config, `[redq]`: seed, every hidden layer's width (absent:
/// 64 for the critics, SAC's for the actor), the schedule of the update's parts.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RedqConfig {
    pub seed: u64,
    pub width: Option<usize>,
    pub update_schedule: UpdateSchedule,
}

impl Validate for RedqConfig {
    fn validate(&self) -> Result<()> {
        emberlab::algo::check_positive("redq.width", self.width.unwrap_or(1))
    }
}

impl LearnerConfig for RedqConfig {
    const TRAINER: TrainerKind = TrainerKind::OffPolicy;
    const METRICS: &'static [&'static str] = &["critic_loss_a", "critic_loss_b", "actor_loss"];

    fn build_learner(&self, obs: &Space, act: &Space, d: &Devices) -> Result<Box<dyn RunLearner>> {
        Ok(Box::new(OffPolicy(Redq::new(obs, act, self, d)?)))
    }

    /// SAC's zoo trainer for `env`, G updates per env step.
    fn preset(env: &str) -> Preset<Self> {
        Preset::sac_trainer(env, RedqConfig::default(), |t| {
            t.gradient_steps = UPDATES_PER_STEP
        })
    }
}

/// Adds REDQ to the `ember` command's learners as `redq`.
///
/// # Errors
/// The name is taken.
pub fn register() -> emberlab::run::Result<()> {
    emberlab::run::register(Kind::<RedqConfig>::named("redq"))
}

/// The `ember` command with REDQ registered.
#[allow(dead_code)] // the tests include this file as a module
fn main() -> std::process::ExitCode {
    if let Err(e) = register() {
        eprintln!("error: {e}");
        return std::process::ExitCode::FAILURE;
    }
    emberlab_cli::app::main_with_args(
        std::iter::once("ember".into()).chain(std::env::args().skip(1)),
    )
}
