//! REDQ (Chen et al. 2021) assembled from Ember's public parts and run by the `ember`
//! command: SAC's actor side ([`SacActor`]), ten critics as one fused ensemble (one batched
//! matmul per layer), targets from the minimum of a random pair of the ten target critics,
//! `G` critic updates per env step, the actor once per env step against the
//! mean of all ten. Each update is one run of [`emberlab::algo::parts`] by rows: each half
//! of the batch computes its targets and its share of the gradients on a core of its own.
//!
//! `cargo run --release --example custom_redq -- train redq --env Pendulum-v1` (then
//! `train --resume RUN`, `eval RUN`, `export RUN --onnx FILE`, `plot`, ...).
use burn::module::Module;
use burn::optim::{GradientsParams, ModuleOptimizer};
use burn::tensor::{Device, Tensor};
use emberlab::algo::parts::{Parts, UpdateSchedule, own_leaves, run_by_rows, sum_gradients};
use emberlab::algo::sac::SacActor;
use emberlab::algo::stepped;
use emberlab::algo::tensors::{column, learner_devices, matrix, rows_of};
use emberlab::algo::{ActionBuf, Agent, Devices, GaussianActing, OffPolicyLearner, OnnxOutput};
use emberlab::algo::{OnnxPolicy, OptimizerKind, Persist, Progress, Update, Validate, Visitor};
use emberlab::core::{Batch, EmberRng, Result, Space};
use emberlab::loss::{checked_loss, sac_critic_loss, sac_target_discounted};
use emberlab::nn::{CriticEnsemble, CriticEnsembleConfig, noise, polyak_update};
use emberlab::run::kinds::{Kind, LearnerConfig, Preset, TrainerKind};
use emberlab::run::{OffPolicy, RunLearner};

/// N critics; G critic updates per env step (the paper's N = 10, G = 20).
const CRITICS: u64 = 10;
pub const G: u64 = 10;
const GAMMA: f64 = 0.99;
const TAU: f64 = 0.005;
const LR: f64 = 1e-3;

struct Redq {
    obs_dim: usize,
    devices: (Device, Device), // (plain, learn): the targets need no graph
    actor: SacActor,
    critic: CriticEnsemble,
    target: CriticEnsemble,
    critic_opt: ModuleOptimizer,
    acting: GaussianActing,
    rng: EmberRng,
    progress: Progress,
    parts: Parts,
}

impl Redq {
    fn new(obs: &Space, act: &Space, c: &RedqConfig, devices: &Devices) -> Result<Redq> {
        let (plain, learn, _seeded) = learner_devices(&devices.learn, c.seed);
        let (o, b) = (obs.flat_dim(), act.as_box("REDQ")?);
        let actor = SacActor::new(o, b, c.width.map(|w| vec![w; 2]), LR, &learn)?;
        let sizes = (CRITICS as usize, o + b.dim(), [c.width.unwrap_or(64); 2]);
        let critic = CriticEnsembleConfig::new(sizes.0, sizes.1, sizes.2).init(&learn)?;
        Ok(Redq {
            obs_dim: o,
            acting: GaussianActing::new(&actor.policy, &devices.act, 1),
            target: critic.valid(),
            critic_opt: OptimizerKind::Adam.build(0.0, &learn),
            rng: EmberRng::seed_from(c.seed).fork(9),
            progress: Progress::default(),
            parts: c.update_schedule.parts("redq"),
            devices: (plain, learn),
            actor,
            critic,
        })
    }
}

impl OffPolicyLearner for Redq {
    fn update(&mut self, batch: &Batch, step: u64) -> Result<Update> {
        let ((o, a), b) = ((self.obs_dim, self.actor.policy.act_dim), batch.len);
        let (plain, learn) = &self.devices;
        batch.check(o, a)?;
        let mut rng = self.rng.clone(); // kept only if the update succeeds
        let eps = noise::standard_normal(b, a, &mut rng, plain);
        let i = rng.below(CRITICS) as usize;
        let j = (i + 1 + rng.below(CRITICS - 1) as usize) % CRITICS as usize;
        let actor_eps = (step % G == G - 1).then(|| noise::standard_normal(b, a, &mut rng, learn));
        let gammas = batch.discounts(GAMMA); // γ, or the n-step rows' γ^m
        let [r, d, g] = [&batch.reward, &batch.terminated, &*gammas].map(|v| column(v, plain));
        let next_obs = matrix(&batch.next_obs, b, o, plain);
        let obs = matrix(&batch.obs, b, o, learn);
        let act = matrix(&batch.action, b, a, learn);
        let (policy, actor) = (self.actor.policy.valid(), self.actor.step(step));
        let (critic, target) = (&self.critic, &self.target);
        // Each half of the rows on a core: its targets, its share of the critics' loss and
        // gradients and, once per env step, of the actor's against the critics' mean.
        let shares = run_by_rows(&mut self.parts, "REDQ update", (b, 2), |rows| {
            let share = rows.len() as f64 / b as f64;
            let [s, e, r, d, g] = [&next_obs, &eps, &r, &d, &g].map(|t| rows_of(t, &rows));
            let (next_a, next_logp) = policy.sample(s.clone(), e);
            let q = |k: usize| target.member(k).forward(s.clone(), next_a.clone());
            let y = sac_target_discounted(r, d, q(i).min_pair(q(j)), next_logp, actor.alpha, g);
            let (obs, net) = (rows_of(&obs, &rows), own_leaves(critic));
            let q = net.forward(obs.clone(), rows_of(&act, &rows));
            let loss = sac_critic_loss(q, Tensor::from_inner(y)).mul_scalar(share);
            let value = checked_loss("REDQ critic loss", &loss, step)?;
            let frozen = critic.clone().no_grad();
            let mean_q = |s, a| frozen.forward(s, a).mean_dim(0).reshape([rows.len(), 1]);
            let rows_eps = actor_eps.as_ref().map(|e| rows_of(e, &rows));
            let actor = rows_eps.map(|e| actor.grads((obs, e), share, mean_q));
            let grads = GradientsParams::from_grads(loss.backward(), &net);
            Ok((grads, value, actor.transpose()?))
        })?;
        // Every loss was finite: the steps on the summed shares, on clones, then move in.
        let loss: f64 = shares.iter().map(|s| s.1).sum();
        let (grads, actor): (Vec<_>, Vec<_>) = shares.into_iter().map(|s| (s.0, s.2)).unzip();
        let grads = sum_gradients(&self.critic, grads);
        let (critic, opt) = stepped(&self.critic, &self.critic_opt, LR, grads);
        let actor: Option<Vec<_>> = actor.into_iter().collect();
        let actor = actor.map(|shares| self.actor.stepped(shares));
        self.target = polyak_update(self.target.clone(), &critic, TAU);
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

impl Agent for Redq {
    fn obs_dim(&self) -> usize {
        self.obs_dim
    }

    fn act(&mut self, obs: &[f32], explore: bool, out: &mut ActionBuf) -> Result<()> {
        let out = out.continuous_mut("REDQ")?;
        self.acting
            .act(obs, self.obs_dim, explore, &mut self.rng, out)
    }
}

impl OnnxPolicy for Redq {
    fn onnx_outputs(&self, g: &mut emberlab::nn::OnnxGraph, obs: &str) -> Result<Vec<OnnxOutput>> {
        self.actor.onnx_outputs(g, obs)
    }
}

/// Checkpoints, exact resume and the published policy follow from this list.
impl Persist for Redq {
    fn kind(&self) -> &str {
        "redq"
    }

    fn persist<V: Visitor>(&mut self, v: &mut V) -> Result<()> {
        self.actor.persist(v)?;
        v.net("critic", &mut self.critic)?;
        v.net("target", &mut self.target)?;
        v.optim("critic_optim", &mut self.critic_opt)?;
        v.value(&mut self.rng)?;
        v.value(&mut self.progress)?;
        v.acting(&mut self.acting, &mut self.actor.policy)
    }
}

/// REDQ's section of a run's config, `[redq]`: its seed, every hidden layer's width
/// (absent: 64 for the critics, SAC's for the actor), its parts' schedule.
#[derive(Clone, Debug, Default, PartialEq, serde::Serialize, serde::Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct RedqConfig {
    pub seed: u64,
    pub width: Option<usize>,
    pub update_schedule: UpdateSchedule,
}

impl Validate for RedqConfig {}

impl LearnerConfig for RedqConfig {
    const TRAINER: TrainerKind = TrainerKind::OffPolicy;
    const METRICS: &'static [&'static str] = &["critic_loss", "actor_loss"];

    fn build_learner(&self, obs: &Space, act: &Space, d: &Devices) -> Result<Box<dyn RunLearner>> {
        Ok(Box::new(OffPolicy(Redq::new(obs, act, self, d)?)))
    }

    /// SAC's zoo trainer for `env`, G critic updates per env step.
    fn preset(env: &str) -> Preset<Self> {
        let g = |t: &mut emberlab::algo::OffPolicyConfig| t.gradient_steps = G as usize;
        Preset::sac_trainer(env, RedqConfig::default(), g)
    }
}

/// The `ember` command with REDQ added.
#[allow(dead_code)] // the tests include this file as a module
fn main() -> std::process::ExitCode {
    emberlab_cli::app::main_with([Kind::<RedqConfig>::named("redq")])
}
