//! The shared on-policy loop: rollouts of `n_steps` from a vector environment, advantages
//! (GAE or Monte-Carlo returns), one update per rollout, evaluation every N env steps.
//! Algorithms plug in as [`OnPolicyLearner`]s.

use crate::agent::{ActionBuf, stored_action_dim};
use crate::checkpoint::{CheckpointConfig, Checkpointer};
use crate::config::{Validate, check_positive};
use crate::learner::{AdvantageMode, OnPolicyLearner, Progress, RolloutBatch};
use crate::report::{EpisodeTracker, EvalSchedule, TrainReport};
use ember_core::{Error, Result};
use ember_env::{EnvFactory, VecEnv};
use ember_loss::{Rollout, discounted_returns, gae};
use serde::{Deserialize, Serialize};

/// Settings of the on-policy loop.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct OnPolicyConfig {
    /// Env steps to collect in this training call (all sub-environments together).
    pub total_steps: u64,
    /// Steps per sub-environment in one rollout.
    pub n_steps: usize,
    /// Evaluate every this many env steps (0: only at the end).
    pub eval_every: u64,
    /// Deterministic episodes per evaluation (0: no evaluation at all, e.g. to time
    /// training alone).
    pub eval_episodes: usize,
    /// Stop early once an evaluation's mean return reaches this (`None`: run the budget).
    pub target_return: Option<f64>,
    /// Seed of the environments.
    pub seed: u64,
    /// Weight checkpoints (none by default).
    pub checkpoint: CheckpointConfig,
}

impl Default for OnPolicyConfig {
    fn default() -> Self {
        OnPolicyConfig {
            total_steps: 100_000,
            n_steps: 5,
            eval_every: 0,
            eval_episodes: 10,
            target_return: None,
            seed: 0,
            checkpoint: CheckpointConfig::default(),
        }
    }
}

impl Validate for OnPolicyConfig {
    fn validate(&self) -> Result<()> {
        check_positive("total_steps", self.total_steps as usize)?;
        check_positive("n_steps", self.n_steps)?;
        crate::report::check_eval_settings(self.eval_episodes, self.target_return)?;
        self.checkpoint.validate()
    }
}

/// One rollout as collected: `n_steps + 1` observation rows per env (time-major), and per
/// step the action, reward, flags and whether the step was an autoreset step (not a real
/// transition under next-step autoreset).
#[derive(Debug, Default)]
struct RolloutBuffer {
    obs: Vec<f32>,
    actions: Vec<f32>,
    rewards: Vec<f32>,
    terminated: Vec<f32>,
    truncated: Vec<f32>,
    reset_step: Vec<bool>,
}

impl RolloutBuffer {
    fn clear(&mut self) {
        self.obs.clear();
        self.actions.clear();
        self.rewards.clear();
        self.terminated.clear();
        self.truncated.clear();
        self.reset_step.clear();
    }
}

/// Trains `learner` on `env` for `config.total_steps` env steps, one update per rollout;
/// evaluates on fresh environments from `eval_env` every `config.eval_every` steps and at
/// the end. Counters continue over calls (the learner's [`crate::Progress`]); the first
/// error (an env error, a diverged loss, a panic in the learner, caught) stops training and
/// is returned, the learner left as after its last successful update.
///
/// # Errors
/// See above; and, before any step, a width or space mismatch between the env, the
/// evaluation env and the learner, or checkpoints asked of a learner without them.
pub fn train_on_policy<L: OnPolicyLearner>(
    learner: &mut L,
    env: &mut dyn VecEnv,
    eval_env: &dyn EnvFactory,
    config: &OnPolicyConfig,
) -> Result<TrainReport> {
    config.validate()?;
    let n = env.num_envs();
    let obs_dim = env.single_observation_space().flat_dim();
    Error::check_len("learner observation width", obs_dim, learner.obs_dim())?;
    crate::evaluate::check_eval_env(env, eval_env)?;
    let space = env.single_action_space().clone();
    let act_dim = stored_action_dim(&space);
    let mut actions = ActionBuf::for_space(&space);
    let mut obs = env.reset(Some(config.seed))?.to_vec();
    let mut resetting = vec![false; n];
    let mut row = Vec::with_capacity(act_dim);
    let mut episodes = EpisodeTracker::new(n);
    let mut report = TrainReport::default();
    let mut buf = RolloutBuffer::default();
    let mut batch = RolloutBatch::default();
    let mut evals = EvalSchedule::new(
        eval_env,
        config.eval_episodes,
        config.seed,
        config.eval_every,
        config.target_return,
    );
    let mut checkpoints = Checkpointer::new(&config.checkpoint, learner.checkpoint())?;
    let Progress { env_steps, updates } = *learner.progress();
    checkpoints.maybe(learner.checkpoint(), env_steps, updates)?;
    while report.env_steps < config.total_steps {
        buf.clear();
        for _ in 0..config.n_steps {
            buf.obs.extend_from_slice(&obs);
            crate::guard::run_learner(
                || "the learner's act".into(),
                || learner.act(&obs, true, &mut actions),
            )?;
            let step = env.step(actions.as_vec_actions())?;
            for (i, resetting) in resetting.iter_mut().enumerate() {
                actions.write_row(i, act_dim, &mut row);
                buf.actions.extend_from_slice(&row);
                buf.rewards.push(step.rewards[i] as f32);
                buf.terminated.push(step.terminated[i] as u8 as f32);
                buf.truncated.push(step.truncated[i] as u8 as f32);
                buf.reset_step.push(*resetting);
                let done = step.terminated[i] || step.truncated[i];
                if !*resetting {
                    episodes.record(i, step.rewards[i], done);
                }
                *resetting = done;
            }
            obs.copy_from_slice(step.obs);
        }
        buf.obs.extend_from_slice(&obs);
        report.env_steps += (n * config.n_steps) as u64;
        learner.progress().env_steps += (n * config.n_steps) as u64;
        let values = crate::guard::run_learner(
            || "the learner's values".into(),
            || learner.values(&buf.obs),
        )?;
        advantages(
            learner.advantage_mode(),
            &buf,
            values.as_deref(),
            n,
            obs_dim,
            act_dim,
            &mut batch,
        )?;
        if batch.len > 0 {
            let step = learner.progress().updates;
            report.last_metrics = crate::guard::run_learner(
                || format!("the learner's update {step}"),
                || learner.update(&batch, step),
            )?;
            learner.progress().updates += 1;
            report.updates += 1;
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

/// Fills `out` with the training rows of `buf`: advantages and returns per `mode`, reset
/// steps removed (and, for Monte-Carlo returns, steps whose episode does not end inside
/// the rollout).
fn advantages(
    mode: AdvantageMode,
    buf: &RolloutBuffer,
    values: Option<&[f32]>,
    envs: usize,
    obs_dim: usize,
    act_dim: usize,
    out: &mut RolloutBatch,
) -> Result<()> {
    let steps_envs = buf.rewards.len();
    if let Some(v) = values {
        Error::check_len("learner values (rollout rows)", steps_envs + envs, v.len())?;
    }
    let zeros;
    let next_values = match values {
        Some(v) => &v[envs..],
        None => {
            zeros = vec![0.0; steps_envs];
            &zeros[..]
        }
    };
    let rollout = Rollout {
        envs,
        rewards: &buf.rewards,
        terminated: &buf.terminated,
        truncated: &buf.truncated,
        next_values,
    };
    let (adv, ret, keep): (Vec<f32>, Vec<f32>, Vec<bool>) = match mode {
        AdvantageMode::Gae { gamma, lambda } => {
            let v = values.ok_or_else(|| {
                Error::invalid("advantage mode", "GAE", "a learner with a value function")
            })?;
            let (adv, ret) = gae(&rollout, &v[..steps_envs], gamma, lambda)?;
            let keep = buf.reset_step.iter().map(|&r| !r).collect();
            (adv, ret, keep)
        }
        AdvantageMode::MonteCarlo { gamma, baseline } => {
            // Without bootstrapping, only steps followed by an episode end are usable.
            let mc = Rollout {
                next_values: &vec![0.0; steps_envs],
                ..rollout
            };
            let ret = discounted_returns(&mc, gamma)?;
            let mut keep = vec![false; steps_envs];
            for e in 0..envs {
                let mut ended = false;
                for i in (e..steps_envs).step_by(envs).rev() {
                    ended |= buf.terminated[i] > 0.0 || buf.truncated[i] > 0.0;
                    keep[i] = ended && !buf.reset_step[i];
                }
            }
            let adv = match (baseline, values) {
                (true, Some(v)) => ret.iter().zip(v).map(|(g, v)| g - v).collect(),
                (true, None) => {
                    return Err(Error::invalid(
                        "advantage mode",
                        "Monte-Carlo with baseline",
                        "a learner with a value function",
                    ));
                }
                (false, _) => ret.clone(),
            };
            (adv, ret, keep)
        }
    };
    out.len = 0;
    out.obs.clear();
    out.actions.clear();
    out.advantages.clear();
    out.returns.clear();
    for (i, _) in keep.iter().enumerate().filter(|(_, k)| **k) {
        out.len += 1;
        out.obs
            .extend_from_slice(&buf.obs[i * obs_dim..(i + 1) * obs_dim]);
        out.actions
            .extend_from_slice(&buf.actions[i * act_dim..(i + 1) * act_dim]);
        out.advantages.push(adv[i]);
        out.returns.push(ret[i]);
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    fn buffer(rewards: &[f32], term: &[f32], reset: &[bool]) -> RolloutBuffer {
        RolloutBuffer {
            obs: (0..=rewards.len()).map(|i| i as f32).collect(),
            actions: vec![0.0; rewards.len()],
            rewards: rewards.to_vec(),
            terminated: term.to_vec(),
            truncated: vec![0.0; rewards.len()],
            reset_step: reset.to_vec(),
        }
    }

    #[test]
    fn monte_carlo_drops_reset_steps_and_unfinished_tails() {
        // One env: steps 0,1 end an episode at 1; step 2 is the autoreset step; steps 3,4
        // belong to an episode that has not ended.
        let buf = buffer(
            &[1.0, 1.0, 0.0, 1.0, 1.0],
            &[0.0, 1.0, 0.0, 0.0, 0.0],
            &[false, false, true, false, false],
        );
        let mut out = RolloutBatch::default();
        let mode = AdvantageMode::MonteCarlo {
            gamma: 0.5,
            baseline: false,
        };
        advantages(mode, &buf, None, 1, 1, 1, &mut out).unwrap();
        assert_eq!(out.len, 2);
        assert_eq!(out.obs, vec![0.0, 1.0]);
        assert_eq!(out.returns, vec![1.5, 1.0]);
        assert_eq!(out.advantages, out.returns);
    }

    #[test]
    fn gae_keeps_every_real_step_and_needs_values() {
        let buf = buffer(
            &[1.0, 1.0, 0.0, 1.0],
            &[0.0, 1.0, 0.0, 0.0],
            &[false, false, true, false],
        );
        let mut out = RolloutBatch::default();
        let mode = AdvantageMode::Gae {
            gamma: 1.0,
            lambda: 1.0,
        };
        assert!(advantages(mode, &buf, None, 1, 1, 1, &mut out).is_err());
        let values = [0.5, 0.5, 0.5, 0.5, 2.0];
        advantages(mode, &buf, Some(&values), 1, 1, 1, &mut out).unwrap();
        assert_eq!(out.len, 3);
        assert_eq!(out.obs, vec![0.0, 1.0, 3.0]);
        // Episode 1: returns 2, 1; last step bootstraps V = 2: return 3.
        assert_eq!(out.returns, vec![2.0, 1.0, 3.0]);
        assert_eq!(out.advantages, vec![1.5, 0.5, 2.5]);
    }
}
