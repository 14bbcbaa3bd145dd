//! The shared off-policy loop: collect from a vector environment into a replay buffer,
//! update at a configurable ratio, evaluate every N env steps. Algorithms plug in as
//! [`OffPolicyLearner`]s; nothing of this loop is repeated inside them.

use crate::agent::{ActionBuf, stored_action_dim};
use crate::checkpoint::{CheckpointConfig, Checkpointer};
use crate::config::{Validate, check_positive};
use crate::learner::OffPolicyLearner;
use crate::report::{EpisodeTracker, EvalSchedule, TrainReport};
use ember_core::{Batch, EmberRng, Error, Result, Space, Transition};
use ember_env::VecEnv;
use ember_replay::{ReplayBuffer, RingStorage, Uniform};
use serde::{Deserialize, Serialize};

/// Settings of the off-policy loop (SB3's names and defaults).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OffPolicyConfig {
    /// Env steps to collect (all sub-environments together).
    pub total_steps: u64,
    /// Replay capacity in transitions.
    pub buffer_size: usize,
    /// Env steps of uniformly random actions before learning starts.
    pub learning_starts: u64,
    /// Transitions per update.
    pub batch_size: usize,
    /// Vector steps between rounds of updates.
    pub train_freq: u64,
    /// Updates per round.
    pub gradient_steps: usize,
    /// Evaluate every this many env steps (0: only at the end).
    pub eval_every: u64,
    /// Deterministic episodes per evaluation.
    pub eval_episodes: usize,
    /// Stop early once an evaluation's mean return reaches this (`None`: run the budget).
    pub target_return: Option<f64>,
    /// Seed of the environments, the random warm-up actions and the replay sampler.
    pub seed: u64,
    /// Weight checkpoints (none by default).
    pub checkpoint: CheckpointConfig,
}

impl Default for OffPolicyConfig {
    fn default() -> Self {
        OffPolicyConfig {
            total_steps: 100_000,
            buffer_size: 1_000_000,
            learning_starts: 100,
            batch_size: 256,
            train_freq: 1,
            gradient_steps: 1,
            eval_every: 0,
            eval_episodes: 10,
            target_return: None,
            seed: 0,
            checkpoint: CheckpointConfig::default(),
        }
    }
}

impl Validate for OffPolicyConfig {
    fn validate(&self) -> Result<()> {
        check_positive("total_steps", self.total_steps as usize)?;
        check_positive("buffer_size", self.buffer_size)?;
        check_positive("batch_size", self.batch_size)?;
        check_positive("train_freq", self.train_freq as usize)?;
        check_positive("gradient_steps", self.gradient_steps)?;
        check_positive("eval_episodes", self.eval_episodes)?;
        self.checkpoint.validate()?;
        if self.batch_size > self.buffer_size {
            return Err(Error::invalid(
                "batch_size",
                self.batch_size,
                format!("<= buffer_size = {}", self.buffer_size),
            ));
        }
        Ok(())
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

/// Trains `learner` on `env` for `config.total_steps` env steps; evaluates on fresh
/// `eval_env` environments (a registry id) every `config.eval_every` steps and at the end.
///
/// Transitions follow the vector env's next-step autoreset: the reset step after an
/// episode end is not stored, and a truncated step stores its final observation (so the
/// learner bootstraps through time limits). The first error (an env error, a diverged loss)
/// stops training and is returned.
pub fn train_off_policy<L: OffPolicyLearner>(
    learner: &mut L,
    env: &mut dyn VecEnv,
    eval_env: &str,
    config: &OffPolicyConfig,
) -> Result<TrainReport> {
    config.validate()?;
    let n = env.num_envs();
    let obs_dim = env.single_observation_space().flat_dim();
    Error::check_len("learner observation width", obs_dim, learner.obs_dim())?;
    let space = env.single_action_space().clone();
    let act_dim = stored_action_dim(&space);
    let storage = RingStorage::new(config.buffer_size, obs_dim, act_dim)?;
    let mut replay =
        ReplayBuffer::new(storage, Uniform::new(config.buffer_size, true), config.seed)?;
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
    let mut checkpoints = Checkpointer::new(&config.checkpoint);
    checkpoints.maybe(learner, 0, 0)?;
    while report.env_steps < config.total_steps {
        if report.env_steps < config.learning_starts {
            random_actions(&space, n, &mut rng, &mut actions);
        } else {
            learner.act(&obs, true, &mut actions)?;
        }
        let step = env.step(actions.as_vec_actions())?;
        for i in 0..n {
            if resetting[i] {
                resetting[i] = false;
                continue;
            }
            let done = step.terminated[i] || step.truncated[i];
            actions.write_row(i, act_dim, &mut row);
            replay.push(&Transition {
                obs: &obs[i * obs_dim..(i + 1) * obs_dim],
                action: &row,
                reward: step.rewards[i] as f32,
                next_obs: &step.obs[i * obs_dim..(i + 1) * obs_dim],
                terminated: step.terminated[i],
                truncated: step.truncated[i],
            })?;
            episodes.record(i, step.rewards[i], done);
            resetting[i] = done;
        }
        obs.copy_from_slice(step.obs);
        report.env_steps += n as u64;
        vector_steps += 1;
        learner.on_env_steps(report.env_steps, config.total_steps);
        let ready = report.env_steps >= config.learning_starts && replay.len() >= config.batch_size;
        if ready && vector_steps.is_multiple_of(config.train_freq) {
            for _ in 0..config.gradient_steps {
                replay.sample(config.batch_size, &mut batch)?;
                report.last_metrics = learner.update(&batch, report.updates)?;
                report.updates += 1;
            }
        }
        checkpoints.maybe(learner, report.env_steps, report.updates)?;
        if evals.maybe(learner, &mut report)? {
            break;
        }
    }
    checkpoints.finish(learner, report.env_steps, report.updates)?;
    evals.finish(learner, report, &episodes)
}
