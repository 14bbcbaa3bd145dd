//! The shared off-policy loop: collect from a vector environment into a replay buffer,
//! update at a configurable ratio, evaluate every N env steps. Algorithms plug in as
//! [`OffPolicyLearner`]s; nothing of this loop is repeated inside them.

use crate::agent::{ActionBuf, stored_action_dim};
use crate::checkpoint::{CheckpointConfig, Checkpointer};
use crate::config::{Validate, check_positive};
use crate::learner::{OffPolicyLearner, Progress, Update};
use crate::replay::{EpisodeWriter, ReplayConfig};
use crate::report::{EpisodeTracker, EvalSchedule, TrainReport};
use ember_core::{Batch, EmberRng, Error, Result, Space, Transition};
use ember_env::{EnvFactory, VecEnv};
use ember_replay::{ReplayBuffer, Sampler};
use serde::{Deserialize, Serialize};

/// Settings of the off-policy loop (SB3's names and defaults).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OffPolicyConfig {
    /// Env steps to collect in this training call (all sub-environments together).
    pub total_steps: u64,
    /// Env steps of uniformly random actions before learning starts (counted over every
    /// training call of the learner).
    pub learning_starts: u64,
    /// Transitions per update.
    pub batch_size: usize,
    /// Vector steps between rounds of updates.
    pub train_freq: u64,
    /// Updates per round.
    pub gradient_steps: usize,
    /// Evaluate every this many env steps (0: only at the end).
    pub eval_every: u64,
    /// Deterministic episodes per evaluation (0: no evaluation at all, e.g. to time
    /// training alone).
    pub eval_episodes: usize,
    /// Stop early once an evaluation's mean return reaches this (`None`: run the budget).
    pub target_return: Option<f64>,
    /// Seed of the environments, the random warm-up actions and the replay sampler.
    pub seed: u64,
    /// The replay buffer ([`ReplayConfig::build`] makes it; the trainer itself reads
    /// `n_step` and `gamma` from here, whoever built the buffer).
    pub replay: ReplayConfig,
    /// Weight checkpoints (none by default).
    pub checkpoint: CheckpointConfig,
}

impl Default for OffPolicyConfig {
    fn default() -> Self {
        OffPolicyConfig {
            total_steps: 100_000,
            learning_starts: 100,
            batch_size: 256,
            train_freq: 1,
            gradient_steps: 1,
            eval_every: 0,
            eval_episodes: 10,
            target_return: None,
            seed: 0,
            replay: ReplayConfig::default(),
            checkpoint: CheckpointConfig::default(),
        }
    }
}

impl Validate for OffPolicyConfig {
    fn validate(&self) -> Result<()> {
        check_positive("total_steps", self.total_steps as usize)?;
        check_positive("batch_size", self.batch_size)?;
        check_positive("train_freq", self.train_freq as usize)?;
        check_positive("gradient_steps", self.gradient_steps)?;
        crate::report::check_eval_settings(self.eval_episodes, self.target_return)?;
        self.replay.validate()?;
        self.checkpoint.validate()?;
        if self.batch_size > self.replay.capacity {
            return Err(Error::invalid(
                "batch_size",
                self.batch_size,
                format!("<= replay.capacity = {}", self.replay.capacity),
            ));
        }
        Ok(())
    }
}

impl OffPolicyConfig {
    /// The replay buffer `self.replay` describes, for `env`'s transitions, seeded with
    /// `self.seed`.
    ///
    /// # Errors
    /// See [`ReplayConfig::build`].
    pub fn build_replay(&self, env: &dyn VecEnv) -> Result<ReplayBuffer<ember_replay::AnySampler>> {
        self.replay.build(
            env.single_observation_space().flat_dim(),
            stored_action_dim(env.single_action_space()),
            self.seed,
        )
    }
}

/// Fills `out` with uniformly random actions of `space` for `n` sub-environments.
pub fn random_actions(space: &Space, n: usize, rng: &mut EmberRng, out: &mut ActionBuf) {
    match (space, out) {
        (Space::Discrete(d), ActionBuf::Discrete(v)) => {
            v.clear();
            v.extend((0..n).map(|_| rng.below(d.n() as u64) as usize));
        }
        (Space::Box(b), ActionBuf::Continuous(v)) => {
            v.clear();
            for _ in 0..n {
                for (&lo, &hi) in b.low().iter().zip(b.high()) {
                    v.push(lo + (hi - lo) * rng.next_f64() as f32);
                }
            }
        }
        (space, out) => *out = ActionBuf::for_space(space),
    }
}

/// Trains `learner` on `env` for `config.total_steps` env steps, storing transitions in
/// `replay` (any sampler: see [`OffPolicyConfig::build_replay`] or build your own) and
/// evaluating on fresh environments from `eval_env` every `config.eval_every` steps and at
/// the end.
///
/// - Transitions follow the vector env's next-step autoreset: the reset step after an
///   episode end is not stored, and a truncated step stores its final observation (so the
///   learner bootstraps through time limits). With `replay.n_step > 1` they are n-step
///   transitions with their discount in `Batch::discount`.
/// - Prioritized replay gets the learner's per-row TD errors back as priorities, and its β
///   annealed to 1 over this call; return-weighted replay scores transitions by their
///   episode's return ([`crate::replay`]).
/// - Counters continue over calls: the learner's [`crate::Progress`] says where it stands.
/// - Everything that can be checked before training is (spaces, widths, the evaluation
///   env, n-step discount, checkpoint support). The first error during training (an env
///   error, a diverged loss, a panic in the learner) stops it and is returned; the learner
///   is left as it was after its last successful update.
///
/// # Errors
/// See above.
pub fn train_off_policy<L: OffPolicyLearner, S: Sampler>(
    learner: &mut L,
    env: &mut dyn VecEnv,
    replay: &mut ReplayBuffer<S>,
    eval_env: &dyn EnvFactory,
    config: &OffPolicyConfig,
) -> Result<TrainReport> {
    config.validate()?;
    let n = env.num_envs();
    let obs_dim = env.single_observation_space().flat_dim();
    Error::check_len("learner observation width", obs_dim, learner.obs_dim())?;
    let space = env.single_action_space().clone();
    let act_dim = stored_action_dim(&space);
    Error::check_len(
        "replay observation width",
        obs_dim,
        replay.storage().obs_dim(),
    )?;
    Error::check_len("replay action width", act_dim, replay.storage().act_dim())?;
    crate::evaluate::check_eval_env(env, eval_env)?;
    let gamma = n_step_gamma(learner, config)?;
    let mut writer = EpisodeWriter::new(replay, n, config.replay.n_step, gamma)?;
    let priorities = replay.sampler().uses_priorities();
    let start = *learner.progress();
    let planned = start.env_steps + config.total_steps;
    let mut rng = EmberRng::seed_from(config.seed).fork(1);
    let mut actions = ActionBuf::for_space(&space);
    let mut batch = Batch::with_capacity(obs_dim, act_dim, config.batch_size);
    let mut obs = env.reset(Some(config.seed))?.to_vec();
    let mut resetting = vec![false; n];
    let mut row = Vec::with_capacity(act_dim);
    let mut episodes = EpisodeTracker::new(n);
    let mut report = TrainReport::default();
    let mut vector_steps = 0u64;
    let mut evals = EvalSchedule::new(
        eval_env,
        config.eval_episodes,
        config.seed,
        config.eval_every,
        config.target_return,
    );
    let mut checkpoints = Checkpointer::new(&config.checkpoint, learner.checkpoint())?;
    checkpoints.maybe(learner.checkpoint(), start.env_steps, start.updates)?;
    while report.env_steps < config.total_steps {
        if start.env_steps + report.env_steps < config.learning_starts {
            random_actions(&space, n, &mut rng, &mut actions);
        } else {
            crate::guard::run_learner(
                || "the learner's act".into(),
                || learner.act(&obs, true, &mut actions),
            )?;
        }
        let step = env.step(actions.as_vec_actions())?;
        for i in 0..n {
            if resetting[i] {
                resetting[i] = false;
                continue;
            }
            let done = step.terminated[i] || step.truncated[i];
            actions.write_row(i, act_dim, &mut row);
            let t = Transition {
                obs: &obs[i * obs_dim..(i + 1) * obs_dim],
                action: &row,
                reward: step.rewards[i] as f32,
                next_obs: &step.obs[i * obs_dim..(i + 1) * obs_dim],
                terminated: step.terminated[i],
                truncated: step.truncated[i],
            };
            writer.push(i, &t, replay)?;
            episodes.record(i, step.rewards[i], done);
            resetting[i] = done;
        }
        obs.copy_from_slice(step.obs);
        report.env_steps += n as u64;
        learner.progress().env_steps += n as u64;
        vector_steps += 1;
        let env_steps = learner.progress().env_steps;
        learner.on_env_steps(env_steps, planned);
        let ready = env_steps >= config.learning_starts && replay.len() >= config.batch_size;
        if ready && vector_steps.is_multiple_of(config.train_freq) {
            let progress = (report.env_steps as f64 / config.total_steps as f64).min(1.0);
            replay.sampler_mut().anneal(progress)?;
            for _ in 0..config.gradient_steps {
                match replay.sample(config.batch_size, &mut batch) {
                    Ok(()) => {}
                    // Not yet enough weight to draw a batch (return-weighted replay early
                    // on): wait for more transitions.
                    Err(Error::NotEnough { .. } | Error::ZeroWeight { .. }) => {
                        report.sample_waits += 1;
                        break;
                    }
                    Err(e) => return Err(e),
                }
                if config.replay.n_step > 1 {
                    batch.discount.clear();
                    batch.discount.extend_from_slice(&batch.extras[0]);
                }
                let update = update_once(learner, &batch)?;
                if priorities {
                    let td = update.td_errors.as_deref().ok_or_else(|| Error::Unavailable {
                        what: "TD errors from this learner".into(),
                        hint: "prioritized replay needs a learner that returns `Update::td_errors`".into(),
                    })?;
                    replay.update_priorities(&batch.indices, td)?;
                }
                report.last_metrics = update.metrics;
                report.updates += 1;
            }
        }
        let Progress { env_steps, updates } = *learner.progress();
        checkpoints.maybe(learner.checkpoint(), env_steps, updates)?;
        if evals.maybe(learner, &mut report)? {
            break;
        }
    }
    let Progress { env_steps, updates } = *learner.progress();
    checkpoints.finish(learner.checkpoint(), env_steps, updates)?;
    report.progress = *learner.progress();
    evals.finish(learner, report, &episodes)
}

/// One update of `learner` from `batch` at its update count, a panic inside it caught and
/// returned as an error; the count advances only on success.
fn update_once<L: OffPolicyLearner>(learner: &mut L, batch: &Batch) -> Result<Update> {
    let step = learner.progress().updates;
    let update = crate::guard::run_learner(
        || format!("the learner's update {step}"),
        || learner.update(batch, step),
    )?;
    if let Some(td) = &update.td_errors {
        Error::check_len("learner TD errors (one per batch row)", batch.len, td.len())?;
    }
    learner.progress().updates += 1;
    Ok(update)
}

/// The discount of n-step returns: the replay config's, else the learner's; both must agree.
fn n_step_gamma<L: OffPolicyLearner>(learner: &L, config: &OffPolicyConfig) -> Result<f64> {
    if config.replay.n_step == 1 {
        return Ok(config.replay.gamma.or(learner.gamma()).unwrap_or(1.0));
    }
    match (config.replay.gamma, learner.gamma()) {
        (Some(r), Some(l)) if (r - l).abs() > 1e-12 => Err(Error::invalid(
            "replay.gamma",
            r,
            format!("the learner's gamma {l} (n-step returns must use the learner's discount)"),
        )),
        (Some(g), _) | (None, Some(g)) => Ok(g),
        (None, None) => Err(Error::invalid(
            "replay.gamma",
            "none",
            "a discount for n-step returns (this learner does not report its own)",
        )),
    }
}
