//! REDQ (Chen et al. 2021) from Ember's public parts, run by the `ember` command: SAC's
//! actor side, ten critics as two fused ensembles of five (a core each), targets from a
//! random pair of the ten target critics, `G` critic updates per env step, the actor once
//! per env step against the mean of all ten (its halves of the rows beside the critics).
//! `cargo run --release --example custom_redq -- train redq --env Pendulum-v1`, then
//! `train --resume RUN`, `eval RUN`, `export RUN --onnx FILE`, `plot`, ...
use emberlab::algo::sac::SacActor;
use emberlab::loss::{sac_critic_loss, sac_target_discounted};
use emberlab::nn::{CriticEnsemble, CriticEnsembleConfig, polyak_update};
use emberlab::prelude::*;

/// Two halves of five critics; G critic updates per env step (the paper's N = 10, G = 20).
const HALF: usize = 5;
pub const G: u64 = 10;
const GAMMA: f64 = 0.99;
const TAU: f64 = 0.005;
const LR: f64 = 1e-3;

struct Redq {
    obs_dim: usize,
    devices: (Device, Device), // (plain, learn): the targets need no graph
    actor: SacActor,
    critics: [CriticEnsemble; 2], // critics 0..5 and 5..10
    targets: [CriticEnsemble; 2],
    critic_opts: [ModuleOptimizer; 2],
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
        let critic = CriticEnsembleConfig::new(HALF, o + b.dim(), [c.width.unwrap_or(64); 2]);
        let critics = [critic.init(&learn)?, critic.init(&learn)?];
        let adam = || OptimizerKind::Adam.build(0.0, &learn);
        Ok(Redq {
            obs_dim: o,
            acting: GaussianActing::new(&actor.policy, &devices.act, 1),
            targets: critics.clone().map(|c| c.valid()),
            critic_opts: [adam(), adam()],
            rng: EmberRng::seed_from(c.seed).fork(9),
            progress: Progress::default(),
            parts: c.update_schedule.parts("redq"),
            devices: (plain, learn),
            actor,
            critics,
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
        let i = rng.below(2 * HALF as u64) as usize;
        let j = (i + 1 + rng.below(2 * HALF as u64 - 1) as usize) % (2 * HALF);
        let actor_eps = (step % G == G - 1).then(|| noise::standard_normal(b, a, &mut rng, learn));
        let gammas = batch.discounts(GAMMA); // γ, or the n-step rows' γ^m
        let [r, d, g] = [&batch.reward, &batch.terminated, &*gammas].map(|v| column(v, plain));
        let next_obs = matrix(&batch.next_obs, b, o, plain);
        let (policy, actor) = (self.actor.policy.valid(), self.actor.step(step));
        // The targets from target critics i and j, half of the rows on each core.
        let y = run_by_rows(&mut self.parts, "REDQ targets", (b, 2), |rows| {
            let [s, e, r, d, g] = [&next_obs, &eps, &r, &d, &g].map(|t| rows_of(t, &rows));
            let (next_a, next_logp) = policy.sample(s.clone(), e);
            let member = |k: usize| self.targets[k / HALF].member(k % HALF);
            let next_q = |k: usize| member(k).forward(s.clone(), next_a.clone());
            let (next_q, alpha) = (next_q(i).min_pair(next_q(j)), actor.alpha);
            Ok(sac_target_discounted(r, d, next_q, next_logp, alpha, g))
        })?;
        let y = Tensor::from_inner(Tensor::cat(y, 0));
        let obs = &matrix(&batch.obs, b, o, learn);
        let act = &matrix(&batch.action, b, a, learn);
        // Each critic half a part; once per env step, each half of the rows' actor gradients
        // (against the mean of all ten critics as they were) a part beside them.
        let critics = &self.critics;
        let frozen = critics.each_ref().map(|c| c.clone().no_grad());
        let mean_q = |s: Tensor<2>, a: Tensor<2>| {
            let sum = frozen[0].mean_q(s.clone(), a.clone()) + frozen[1].mean_q(s, a);
            sum.div_scalar(2.0)
        };
        let shares = actor_eps.map(|e| {
            move |rows, share| actor.grads((rows_of(obs, &rows), rows_of(&e, &rows)), share, mean_q)
        });
        let half = |k: usize| {
            let (critic, target, opt) = (&critics[k], &self.targets[k], &self.critic_opts[k]);
            let y = y.clone();
            part(move || {
                let loss = sac_critic_loss(critic.forward(obs.clone(), act.clone()), y);
                let value = checked_loss("REDQ critic loss", &loss, step)?;
                let grads = GradientsParams::from_grads(loss.backward(), critic);
                Ok(move || {
                    let (critic, opt) = stepped(critic, opt, LR, grads);
                    let target = polyak_update(target.clone(), &critic, TAU);
                    (target, critic, opt, value)
                })
            })
        };
        let actor_parts = shares.as_ref().map(|f| row_parts((b, 2), f));
        let parts = ([half(0), half(1)], actor_parts);
        let (halves, actor) = self.parts.run("REDQ update", parts)?;
        let actor = actor.map(|shares| self.actor.stepped(shares)); // also on a copy
        let mut update = Update::default();
        for (k, (target, critic, opt, loss)) in halves.into_iter().enumerate() {
            (self.targets[k], self.critics[k], self.critic_opts[k]) = (target, critic, opt);
            let name = ["critic_loss_a", "critic_loss_b"][k];
            update.metrics.push(name, loss);
        }
        if let Some((actor, loss)) = actor {
            self.actor = actor;
            self.acting.refresh(&self.actor.policy);
            update.metrics.push("actor_loss", loss);
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
    fn onnx_outputs(&self, g: &mut OnnxGraph, obs: &str) -> Result<Vec<OnnxOutput>> {
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
        v.nets("critic", &mut self.critics)?;
        v.nets("target", &mut self.targets)?;
        v.optims("critic_optim", &mut self.critic_opts)?;
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
    const METRICS: &'static [&'static str] = &["critic_loss_a", "critic_loss_b", "actor_loss"];

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
