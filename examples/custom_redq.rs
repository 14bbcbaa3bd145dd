//! REDQ (Chen et al. 2021, "Randomized Ensembled Double Q-Learning") — an algorithm that is
//! not in the library — assembled from Ember's public parts: SAC's tanh-Gaussian actor and
//! temperature, ten critics fused into one `CriticEnsemble` (one batched matmul per layer),
//! targets from the minimum of a random pair of target critics, many critic updates per env
//! step (the shared off-policy trainer's `gradient_steps`), the actor updated once per env
//! step against the mean of all ten critics. The ten critics are two ensembles of five,
//! each with its own loss and Adam step (Adam is per weight, so this is the same as one
//! ensemble of ten), which the update runs side by side on two cores with the library's
//! [`emberlab::algo::parts`]. The targets are split by rows (half of the batch per core), and
//! so is the actor's step: each half of its rows is a part beside a critic half, and the
//! halves' gradients are summed ([`emberlab::algo::parts::sum_gradients`]) for one step. Its
//! learning test (`tests/redq_example.rs`) trains it on Pendulum-v1 beside the library's
//! SAC with the same seed and settings.
//!
//! Registered as `redq` ([`RedqConfig`]: the section `[redq]` of a run's config), it is run
//! by the `ember` command like the built-in algorithms: `custom_redq train redq --env
//! Pendulum-v1`, `--resume`, `eval`, `export --onnx`, `plot`.
//!
//! `cargo run --release --example custom_redq` (seed 1)

use burn::module::Module;
use burn::optim::{GradientsParams, ModuleOptimizer};
use burn::tensor::{Device, Tensor};
use emberlab::algo::parts::{
    Part, Parts, UpdateSchedule, own_leaves, part, row_shares, run_by_rows, sum_gradients,
};
use emberlab::algo::tensors::{column, learner_devices, matrix, obs_batch, rows_of};
use emberlab::algo::{
    ActingCopy, ActionBuf, Agent, Checkpoint, Devices, OffPolicyConfig, OffPolicyLearner,
    OnnxOutput, OnnxPolicy, OptimizerKind, Persist, Progress, SacConfig, TrainReport,
    TrainingState, Update, Validate, Visitor, step_in_place, train_off_policy,
};
use emberlab::core::{Batch, EmberRng, Result, Space};
use emberlab::env::{SyncVecEnv, VecEnv};
use emberlab::loss::{
    checked_loss, sac_actor_loss, sac_critic_loss, sac_target_discounted, sac_temperature_loss,
};
use emberlab::nn::{
    CriticEnsemble, CriticEnsembleConfig, GaussianTanhPolicy, GaussianTanhPolicyConfig,
    Temperature, noise, polyak_update,
};
use emberlab::run::kinds::{Kind, LearnerConfig, Preset, PresetSource, TrainerConfig, TrainerKind};
use emberlab::run::{OffPolicy, RunLearner};
use serde::{Deserialize, Serialize};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// N critics, G critic updates per env step (the paper's N = 10, G = 20); 64×64 critics.
const CRITICS: usize = 10;
/// The critics, as two ensembles of `HALF` (one per core).
const HALF: usize = CRITICS / 2;
pub const UPDATES_PER_STEP: usize = 10;
const HIDDEN: [usize; 2] = [64, 64];
const GAMMA: f64 = 0.99;
const TAU: f64 = 0.005;
const LR: f64 = 1e-3;

/// The sizes and the schedule of a run. The default (every run but `--steps` with the
/// flags below, and the learning test): `HIDDEN` critics, SAC's 256×256 actor, SAC's
/// Pendulum batches of 256, the parts scheduled as the first updates time fastest here
/// (side by side or not). `--width 2 --batch 2` leaves the update almost no arithmetic, so
/// its time is what its operations cost apart from their sizes; `--sequential` runs its
/// parts one after the other on one core, `--parallel` side by side.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Shapes {
    /// Every hidden layer's width, the actor's and the critics' (`None`: the default).
    pub width: Option<usize>,
    /// Rows per update (`None`: the preset's).
    pub batch: Option<usize>,
    /// The update's parts side by side, one after the other, or whichever is faster.
    pub schedule: UpdateSchedule,
}

struct Redq {
    obs_dim: usize,
    act_dim: usize,
    learn: Device,
    plain: Device,
    actor: GaussianTanhPolicy,
    /// Critics 0..5 and 5..10, and their targets.
    critics: [CriticEnsemble; 2],
    targets: [CriticEnsemble; 2],
    temperature: Temperature,
    /// The critics' (one per ensemble), the actor's and the temperature's.
    critic_opts: [ModuleOptimizer; 2],
    actor_opts: [ModuleOptimizer; 2],
    acting: ActingCopy<GaussianTanhPolicy>,
    rng: EmberRng,
    progress: Progress,
    parts: Parts,
}

impl Redq {
    fn new(obs: &Space, act: &Space, seed: u64, devices: &Devices, shapes: Shapes) -> Result<Redq> {
        let (plain, learn, _seeded) = learner_devices(&devices.learn, seed);
        let obs_dim = obs.flat_dim();
        let Space::Box(b) = act else {
            let what = "a Box action space (REDQ acts continuously)";
            return Err(emberlab::core::Error::invalid(
                "action space",
                "Discrete",
                what,
            ));
        };
        let mut actor = GaussianTanhPolicyConfig::new(obs_dim, b.dim())
            .with_bounds(b.low().to_vec(), b.high().to_vec());
        let mut hidden = HIDDEN;
        if let Some(w) = shapes.width {
            actor = actor.with_hidden([w, w]);
            hidden = [w, w];
        }
        let actor = actor.init(&learn)?;
        let config = CriticEnsembleConfig::new(HALF, obs_dim + b.dim(), hidden);
        let critics = [config.init(&learn)?, config.init(&learn)?];
        let adam = || OptimizerKind::Adam.build(0.0, &learn);
        Ok(Redq {
            obs_dim,
            act_dim: b.dim(),
            targets: critics.clone().map(|c| c.valid()),
            acting: ActingCopy::new(&actor, &devices.act, 1),
            actor,
            critics,
            temperature: Temperature::new(1.0, &learn)?,
            critic_opts: [adam(), adam()],
            actor_opts: [adam(), adam()],
            rng: EmberRng::seed_from(seed).fork(9),
            progress: Progress::default(),
            parts: shapes.schedule.parts("redq"),
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
            false => *out = emberlab::algo::tensors::host(self.acting.module().deterministic(x)),
        }
        Ok(())
    }
}

impl OnnxPolicy for Redq {
    /// `action = scale · tanh(μ(obs)) + bias` from the actor, as SAC's.
    fn onnx_outputs(&self, g: &mut emberlab::nn::OnnxGraph, obs: &str) -> Result<Vec<OnnxOutput>> {
        let value = self.actor.deterministic_onnx(g, obs)?;
        let width = Some(self.act_dim);
        Ok(vec![OnnxOutput {
            value,
            name: "action",
            width,
        }])
    }
}

/// A critic half's part: regress its critics on the targets `y`, check the loss, and
/// commit a stepped clone (and its moved target) into `out`.
fn critic_part<'a>(
    (critic, target, opt): (&'a CriticEnsemble, &'a CriticEnsemble, &'a ModuleOptimizer),
    (obs, act, y): (Tensor<2>, Tensor<2>, Tensor<2>),
    step: u64,
    out: &'a mut Option<(CriticEnsemble, CriticEnsemble, ModuleOptimizer, f64)>,
) -> Part<'a> {
    part(move || {
        let loss = sac_critic_loss(critic.forward(obs, act), y);
        let value = checked_loss("REDQ critic loss", &loss, step)?;
        let grads = GradientsParams::from_grads(loss.backward(), critic);
        Ok(move || {
            let (mut critic, mut opt) = (critic.clone(), opt.clone());
            step_in_place(&mut opt, LR, &mut critic, grads);
            *out = Some((
                polyak_update(target.clone(), &critic, TAU),
                critic,
                opt,
                value,
            ));
        })
    })
}

/// One share of the rows' actor and temperature gradients (each loss scaled by the share's
/// fraction of the rows) and its share of the actor loss.
struct ActorGrads {
    actor: GradientsParams,
    alpha: GradientsParams,
    loss: f64,
}

/// The actor's and α's gradients over the rows `obs` (noise `eps`), against the mean of all
/// ten critics, frozen. Each network is differentiated through a copy of its own
/// ([`own_leaves`]), so two shares' graphs are independent.
fn actor_grads(
    (actor, temperature, critics): (&GaussianTanhPolicy, &Temperature, &[CriticEnsemble; 2]),
    (obs, eps): (Tensor<2>, Tensor<2>),
    alpha: f64,
    share: f64,
    step: u64,
) -> Result<ActorGrads> {
    let (actor, temperature) = (own_leaves(actor), own_leaves(temperature));
    let (act, logp) = actor.sample(obs.clone(), eps);
    let q = critics
        .each_ref()
        .map(|c| c.clone().no_grad().forward(obs.clone(), act.clone()));
    let [rows, act_dim] = act.dims();
    let q = Tensor::cat(q.to_vec(), 0).mean_dim(0).reshape([rows, 1]);
    let actor_loss = sac_actor_loss(logp.clone(), q, alpha).mul_scalar(share);
    let loss = checked_loss("REDQ actor loss", &actor_loss, step)?;
    let log_alpha = temperature.log_alpha.val();
    let alpha_loss =
        sac_temperature_loss(log_alpha, logp.detach(), -(act_dim as f64)).mul_scalar(share);
    checked_loss("REDQ temperature loss", &alpha_loss, step)?;
    Ok(ActorGrads {
        actor: GradientsParams::from_grads(actor_loss.backward(), &actor),
        alpha: GradientsParams::from_grads(alpha_loss.backward(), &temperature),
        loss,
    })
}

impl OffPolicyLearner for Redq {
    fn update(&mut self, batch: &Batch, step: u64) -> Result<Update> {
        batch.check(self.obs_dim, self.act_dim)?;
        let (b, o, a) = (batch.len, self.obs_dim, self.act_dim);
        let alpha = self.temperature.alpha();
        let mut rng = self.rng.clone(); // kept only if the update succeeds
        // Target: a' ~ π(s'), the minimum over a random pair of the ten target critics;
        // each core computes it for half of the rows (every operation works row by row).
        let eps = noise::standard_normal(b, a, &mut rng, &self.plain);
        let i = rng.below(CRITICS as u64) as usize;
        let j = (i + 1 + rng.below(CRITICS as u64 - 1) as usize) % CRITICS;
        let gammas = match batch.discount.is_empty() {
            true => vec![GAMMA as f32; b],
            false => batch.discount.clone(), // n-step rows carry γ^m
        };
        let [next_obs, eps, r, d, g] = [
            matrix(&batch.next_obs, b, o, &self.plain),
            eps,
            column(&batch.reward, &self.plain),
            column(&batch.terminated, &self.plain),
            column(&gammas, &self.plain),
        ];
        let (actor, targets) = (self.actor.valid(), &self.targets);
        let what = format!("REDQ targets {step}");
        let y = run_by_rows(&mut self.parts, &what, (b, 2), |rows| {
            let of = |t: &Tensor<2>| rows_of(t, &rows);
            let (s, e, r, d, g) = (of(&next_obs), of(&eps), of(&r), of(&d), of(&g));
            let (next_a, next_logp) = actor.sample(s.clone(), e);
            // Only the two picked target critics are evaluated.
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
        let obs = matrix(&batch.obs, b, o, &self.learn);
        let act = matrix(&batch.action, b, a, &self.learn);
        // The two critic halves side by side. Every loss is checked before anything steps.
        let (mut half_a, mut half_b, mut actor_rows) = (None, None, [None, None]);
        let inputs = || (obs.clone(), act.clone(), y.clone());
        let half = |k: usize| (&self.critics[k], &self.targets[k], &self.critic_opts[k]);
        let mut parts = vec![
            critic_part(half(0), inputs(), step, &mut half_a),
            critic_part(half(1), inputs(), step, &mut half_b),
        ];
        // Once per env step also the actor against the mean of all critics (as they were
        // before this update) and α: each half of the rows is a part of its own, beside a
        // critic half on each core; their gradients are summed and stepped after the run.
        let actor_step = step % UPDATES_PER_STEP as u64 == UPDATES_PER_STEP as u64 - 1;
        if actor_step {
            let eps = noise::standard_normal(b, a, &mut rng, &self.learn);
            let shares = row_shares(b, 2).into_iter().zip(&mut actor_rows);
            for (rows, out) in shares {
                let (obs, eps) = (rows_of(&obs, &rows), rows_of(&eps, &rows));
                let share = rows.len() as f64 / b as f64;
                let nets = (&self.actor, &self.temperature, &self.critics);
                parts.push(part(move || {
                    let grads = actor_grads(nets, (obs, eps), alpha, share, step)?;
                    Ok(move || *out = Some(grads))
                }));
            }
        }
        self.parts.run(&format!("REDQ update {step}"), parts)?;
        let mut update = Update::default();
        // The actor's and α's steps on clones, before anything moves into the learner.
        let shares: Vec<ActorGrads> = actor_rows.into_iter().flatten().collect();
        let actor_out = (!shares.is_empty()).then(|| {
            let loss: f64 = shares.iter().map(|g| g.loss).sum();
            let (actor, alpha) = shares.into_iter().map(|g| (g.actor, g.alpha)).unzip();
            let (mut actor_net, mut temperature) = (self.actor.clone(), self.temperature.clone());
            let mut opts = self.actor_opts.clone();
            let actor = sum_gradients(&actor_net, actor);
            let alpha = sum_gradients(&temperature, alpha);
            step_in_place(&mut opts[0], LR, &mut actor_net, actor);
            step_in_place(&mut opts[1], LR, &mut temperature, alpha);
            (actor_net, temperature, opts, loss)
        });
        for (k, half) in [half_a, half_b].into_iter().enumerate() {
            let (target, critic, opt, loss) = half.expect("committed");
            (self.targets[k], self.critics[k], self.critic_opts[k]) = (target, critic, opt);
            update
                .metrics
                .push(["critic_loss_a", "critic_loss_b"][k], loss);
        }
        if let Some((actor, temperature, opts, loss)) = actor_out {
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

/// REDQ's section of a run's config (`[redq]`), as the `ember` command reads it.
#[derive(Clone, Debug, Default, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RedqConfig {
    /// Seeds the networks and the learner's draws.
    pub seed: u64,
    /// Every hidden layer's width, the actor's and the critics' (absent: the default).
    pub width: Option<usize>,
    /// The update's parts side by side, one after the other, or whichever times faster.
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
        let shapes = Shapes {
            width: self.width,
            batch: None,
            schedule: self.update_schedule,
        };
        Ok(Box::new(OffPolicy(Redq::new(
            obs, act, self.seed, d, shapes,
        )?)))
    }

    /// SAC's zoo trainer for `env` (its defaults where zoo has none), `UPDATES_PER_STEP`
    /// updates per env step.
    fn preset(env: &str) -> Preset<Self> {
        let (trainer, source) = match SacConfig::zoo(env) {
            Ok((_, t)) => (t, PresetSource::Zoo),
            Err(_) => (OffPolicyConfig::default(), PresetSource::Defaults),
        };
        let trainer = OffPolicyConfig {
            gradient_steps: UPDATES_PER_STEP,
            ..trainer
        };
        let (learner, num_envs) = (RedqConfig::default(), 1);
        Preset {
            learner,
            trainer: TrainerConfig::OffPolicy(trainer),
            num_envs,
            source,
        }
    }
}

/// Adds REDQ to the `ember` command's learners as `redq`.
///
/// # Errors
/// The name is taken.
pub fn register() -> emberlab::run::Result<()> {
    emberlab::run::register(Kind::<RedqConfig>::named("redq"))
}

/// REDQ on Pendulum-v1: SAC's zoo trainer settings but `UPDATES_PER_STEP` updates per env
/// step, evaluated every `eval_every` steps, stopping at the first evaluation ≥ −200.
///
/// # Errors
/// An error of the environment or the learner.
pub fn run_redq(seed: u64, eval_every: u64) -> Result<TrainReport> {
    train_redq(seed, None, eval_every, Shapes::default())
}

/// [`run_redq`] for `steps` env steps (`None`: the preset's) with evaluations every
/// `eval_every` steps (0: none; then it does not stop early), of `shapes`.
fn train_redq(
    seed: u64,
    steps: Option<u64>,
    eval_every: u64,
    shapes: Shapes,
) -> Result<TrainReport> {
    let device = emberlab::backend::DeviceSpec::Flex.device()?;
    let mut env = SyncVecEnv::from_id("Pendulum-v1", 1)?;
    let (obs, act) = (
        env.single_observation_space().clone(),
        env.single_action_space().clone(),
    );
    let mut redq = Redq::new(&obs, &act, seed, &Devices::same(&device), shapes)?;
    let TrainerConfig::OffPolicy(trainer) = RedqConfig::preset("Pendulum-v1").trainer else {
        unreachable!("REDQ's preset is off-policy")
    };
    let config = OffPolicyConfig {
        batch_size: shapes.batch.unwrap_or(trainer.batch_size),
        eval_every,
        target_return: (eval_every > 0).then_some(-200.0),
        total_steps: steps.unwrap_or(trainer.total_steps),
        seed,
        ..trainer
    };
    let mut replay = config.build_replay(&env)?;
    let eval = emberlab::env::factory("Pendulum-v1")?;
    train_off_policy(&mut redq, &mut env, &mut replay, eval.as_ref(), &config)
}

/// `custom_redq`: trains until the first evaluation ≥ −200 (seed 1). `custom_redq --steps N`:
/// trains N env steps without evaluations and prints the speed (`env_steps_per_s=...`);
/// `--width W`, `--batch B`, `--sequential` and `--parallel` after it change the run's
/// [`Shapes`]. `custom_redq COMMAND ...`: the `ember` command with REDQ registered (`train
/// redq --env Pendulum-v1`, `train --resume RUN`, `eval RUN`, `export RUN --onnx FILE`, ...).
#[allow(dead_code)] // the learning test includes this file as a module
fn main() -> std::process::ExitCode {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().is_some_and(|a| !a.starts_with('-')) {
        if let Err(e) = register() {
            eprintln!("error: {e}");
            return std::process::ExitCode::from(2);
        }
        return emberlab_cli::app::main_with_args(std::iter::once("ember".into()).chain(args));
    }
    match measure(&args) {
        Ok(()) => std::process::ExitCode::SUCCESS,
        Err(e) => {
            eprintln!("error: {e}");
            std::process::ExitCode::FAILURE
        }
    }
}

/// `custom_redq` without a command: the learning run, or `--steps N` measured.
fn measure(args: &[String]) -> Result<()> {
    if let [flag, n, rest @ ..] = args
        && flag == "--steps"
    {
        let steps = n
            .parse()
            .map_err(|_| emberlab::core::Error::invalid("--steps", n, "a number of env steps"))?;
        let r = train_redq(1, Some(steps), 0, parse_flags(rest)?)?;
        let rate = r.env_steps as f64 / r.wall_secs;
        println!(
            "env_steps={} updates={} wall_s={:.2} env_steps_per_s={rate:.1}",
            r.env_steps, r.updates, r.wall_secs
        );
        return Ok(());
    }
    let report = run_redq(1, 250)?;
    for e in &report.evals {
        println!("{:>6} env steps: eval {:.1}", e.env_steps, e.mean_return);
    }
    println!("{} updates in {:.1} s", report.updates, report.wall_secs);
    Ok(())
}

/// The flags after `--steps N`: `--width W`, `--batch B`, `--sequential`, `--parallel`.
///
/// # Errors
/// A flag that is unknown or lacks its value, or a width or batch that is not a positive
/// whole number.
pub fn parse_flags(flags: &[String]) -> Result<Shapes> {
    use emberlab::core::Error;
    let count = |flag: &str, value: Option<&String>| -> Result<usize> {
        let value = value.map(String::as_str).unwrap_or("");
        match value.parse::<usize>() {
            Ok(n) if n > 0 => Ok(n),
            _ => Err(Error::invalid(flag, value, "a positive whole number")),
        }
    };
    let (mut shapes, mut flags) = (Shapes::default(), flags.iter());
    while let Some(flag) = flags.next() {
        match flag.as_str() {
            "--width" => shapes.width = Some(count(flag, flags.next())?),
            "--batch" => shapes.batch = Some(count(flag, flags.next())?),
            "--sequential" => shapes.schedule = UpdateSchedule::Sequential,
            "--parallel" => shapes.schedule = UpdateSchedule::Parallel,
            _ => {
                let expected = "--width W, --batch B, --sequential or --parallel";
                return Err(Error::invalid("argument", flag, expected));
            }
        }
    }
    Ok(shapes)
}
