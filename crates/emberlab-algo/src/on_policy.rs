//! The shared on-policy loop: rollouts of `n_steps` from a vector environment, advantages
//! (GAE or Monte-Carlo returns), one update per rollout, evaluation every N env steps.
//! Algorithms plug in as [`OnPolicyLearner`]s.

use crate::agent::{ActionBuf, stored_action_dim};
use crate::books::{LoopBooks, Running};
use crate::checkpoint::{CheckpointConfig, Checkpointer};
use crate::config::{Validate, check_positive};
use crate::learner::{
    ActingRecord, AdvantageMode, Metrics, OnPolicyLearner, Progress, RolloutBatch,
};
use crate::report::{EpisodeTracker, EvalSchedule, TrainReport};
use emberlab_core::state::{StateReader, StateWriter, load_words, save_words};
use emberlab_core::{Error, Result};
use emberlab_env::{EnvFactory, NormalizeConfig, ObsNormalizer, VecEnv, VecNormalize};
use emberlab_loss::{Rollout, discounted_returns, gae};
use serde::{Deserialize, Serialize};
use std::path::Path;

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
    /// Normalise observations and rewards as SB3's `VecNormalize` does (zoo's
    /// `normalize: true`): the trainer wraps the env in [`emberlab_env::VecNormalize`],
    /// evaluates through the same (frozen) observation statistics, and saves them with its
    /// state and beside every weight checkpoint ([`emberlab_env::OBS_NORMALIZER_FILE`]).
    /// `None` (the default): the env's own observations and rewards.
    pub normalize: Option<NormalizeConfig>,
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
            normalize: None,
        }
    }
}

impl Validate for OnPolicyConfig {
    fn validate(&self) -> Result<()> {
        check_positive("total_steps", self.total_steps as usize)?;
        check_positive("n_steps", self.n_steps)?;
        crate::report::check_eval_settings(self.eval_episodes, self.target_return)?;
        if let Some(n) = &self.normalize {
            n.validate()?;
        }
        self.checkpoint.validate()
    }
}

/// One rollout as collected: `n_steps + 1` observation rows per env (time-major), and per
/// step the action, reward, flags and whether the step was an autoreset step (not a real
/// transition under next-step autoreset); with the behaviour policy's log-probabilities
/// and values when the learner records them (each complete or empty).
#[derive(Debug, Default)]
pub(crate) struct RolloutBuffer<O = f32> {
    obs: Vec<O>,
    actions: Vec<f32>,
    rewards: Vec<f32>,
    terminated: Vec<f32>,
    truncated: Vec<f32>,
    reset_step: Vec<bool>,
    log_probs: Vec<f32>,
    values: Vec<f32>,
    /// Whether every step recorded log-probabilities / values so far.
    has_log_probs: bool,
    has_values: bool,
}

impl<O: RolloutObs> RolloutBuffer<O> {
    pub(crate) fn clear(&mut self) {
        self.obs.clear();
        self.actions.clear();
        self.rewards.clear();
        self.terminated.clear();
        self.truncated.clear();
        self.reset_step.clear();
        self.log_probs.clear();
        self.values.clear();
        self.has_log_probs = true;
        self.has_values = true;
    }

    /// Keeps what the behaviour policy recorded for one vector step of `n` rows; a column
    /// missing at any step is dropped for the whole rollout.
    fn record(&mut self, record: &ActingRecord, n: usize) -> Result<()> {
        for (name, column, has, out) in [
            (
                "recorded log-probabilities",
                &record.log_probs,
                &mut self.has_log_probs,
                &mut self.log_probs,
            ),
            (
                "recorded values",
                &record.values,
                &mut self.has_values,
                &mut self.values,
            ),
        ] {
            if column.is_empty() {
                *has = false;
            } else {
                Error::check_len(name, n, column.len())?;
            }
            if *has {
                out.extend_from_slice(column);
            }
        }
        Ok(())
    }

    /// Begins a vector step: keeps the observations `obs` the learner acts on, acts
    /// through it (exploring) and keeps what it recorded; checks recorded actions' width.
    pub(crate) fn act<L: OnPolicyLearner + ?Sized>(
        &mut self,
        learner: &mut L,
        obs: &[O],
        (actions, record): (&mut ActionBuf, &mut ActingRecord),
        (n, act_dim): (usize, usize),
    ) -> Result<()> {
        self.obs.extend_from_slice(obs);
        crate::guard::run_learner(
            || "the learner's act".into(),
            || O::act(learner, obs, actions, record),
        )?;
        self.record(record, n)?;
        let stored = &record.stored_actions;
        if !stored.is_empty() {
            Error::check_len(
                "recorded actions (rows × act_dim)",
                n * act_dim,
                stored.len(),
            )?;
        }
        Ok(())
    }

    /// Stores sub-environment `i`'s part of a vector step: its action (as recorded, or
    /// as acted), reward and flags, and whether it was an autoreset step.
    pub(crate) fn push(
        &mut self,
        i: usize,
        (actions, stored, row, act_dim): (&ActionBuf, &[f32], &mut Vec<f32>, usize),
        reward: f32,
        (terminated, truncated): (bool, bool),
        reset_step: bool,
    ) {
        if stored.is_empty() {
            actions.write_row(i, act_dim, row);
            self.actions.extend_from_slice(row);
        } else {
            self.actions
                .extend_from_slice(&stored[i * act_dim..(i + 1) * act_dim]);
        }
        self.rewards.push(reward);
        self.terminated.push(terminated as u8 as f32);
        self.truncated.push(truncated as u8 as f32);
        self.reset_step.push(reset_step);
    }

    /// Ends the rollout with the observations after its last step.
    pub(crate) fn close(&mut self, last: &[O]) {
        self.obs.extend_from_slice(last);
    }
}

/// The observations of a rollout: `f32` vectors or `u8` image stacks, each with the
/// learner's methods for it.
pub(crate) trait RolloutObs: Copy + Default + 'static {
    /// [`OnPolicyLearner::act_rollout`] or [`OnPolicyLearner::act_rollout_pixels`].
    fn act<L: OnPolicyLearner + ?Sized>(
        learner: &mut L,
        obs: &[Self],
        out: &mut ActionBuf,
        record: &mut ActingRecord,
    ) -> Result<()>;
    /// [`OnPolicyLearner::values`] or [`OnPolicyLearner::values_pixels`].
    fn values<L: OnPolicyLearner + ?Sized>(
        learner: &mut L,
        obs: &[Self],
    ) -> Result<Option<Vec<f32>>>;
    /// [`OnPolicyLearner::update`] or [`OnPolicyLearner::update_frames`].
    fn update<L: OnPolicyLearner + ?Sized>(
        learner: &mut L,
        batch: &RolloutBatch<Self>,
        step: u64,
    ) -> Result<Metrics>;
}

impl RolloutObs for f32 {
    fn act<L: OnPolicyLearner + ?Sized>(
        learner: &mut L,
        obs: &[f32],
        out: &mut ActionBuf,
        record: &mut ActingRecord,
    ) -> Result<()> {
        learner.act_rollout(obs, out, record)
    }

    fn values<L: OnPolicyLearner + ?Sized>(
        learner: &mut L,
        obs: &[f32],
    ) -> Result<Option<Vec<f32>>> {
        learner.values(obs)
    }

    fn update<L: OnPolicyLearner + ?Sized>(
        learner: &mut L,
        batch: &RolloutBatch,
        step: u64,
    ) -> Result<Metrics> {
        learner.update(batch, step)
    }
}

impl RolloutObs for u8 {
    fn act<L: OnPolicyLearner + ?Sized>(
        learner: &mut L,
        obs: &[u8],
        out: &mut ActionBuf,
        record: &mut ActingRecord,
    ) -> Result<()> {
        learner.act_rollout_pixels(obs, out, record)
    }

    fn values<L: OnPolicyLearner + ?Sized>(
        learner: &mut L,
        obs: &[u8],
    ) -> Result<Option<Vec<f32>>> {
        learner.values_pixels(obs)
    }

    fn update<L: OnPolicyLearner + ?Sized>(
        learner: &mut L,
        batch: &RolloutBatch<u8>,
        step: u64,
    ) -> Result<Metrics> {
        learner.update_frames(batch, step)
    }
}

/// Everything after a rollout of `n` sub-environments, shared by the vector and image
/// loops: counts its env steps, gets the values advantages need (only the last
/// observations' when the learner recorded the others while acting), fills `batch` and
/// makes one update when it has rows. `total_steps` is the call's budget (for the
/// learner's schedules).
pub(crate) fn learn_from_rollout<O: RolloutObs, L: OnPolicyLearner + ?Sized>(
    learner: &mut L,
    buf: &mut RolloutBuffer<O>,
    (last_obs, n, obs_dim, act_dim): (&[O], usize, usize, usize),
    batch: &mut RolloutBatch<O>,
    report: &mut TrainReport,
    total_steps: u64,
) -> Result<()> {
    let steps = buf.rewards.len() as u64;
    report.env_steps += steps;
    learner.progress().env_steps += steps;
    let values = if buf.has_values {
        let last = crate::guard::run_learner(
            || "the learner's values".into(),
            || O::values(learner, last_obs),
        )?;
        match last {
            Some(v) => {
                Error::check_len("learner values (last observations)", n, v.len())?;
                buf.values.extend_from_slice(&v);
                Some(std::mem::take(&mut buf.values))
            }
            None => None,
        }
    } else {
        crate::guard::run_learner(
            || "the learner's values".into(),
            || O::values(learner, &buf.obs),
        )?
    };
    advantages(
        learner.advantage_mode(),
        buf,
        values.as_deref(),
        (n, obs_dim, act_dim),
        batch,
    )?;
    if batch.len > 0 {
        let env_steps = learner.progress().env_steps;
        let planned = env_steps - report.env_steps + total_steps;
        learner.on_env_steps(env_steps, planned);
        let step = learner.progress().updates;
        report.last_metrics = crate::guard::run_learner(
            || format!("the learner's update {step}"),
            || O::update(learner, batch, step),
        )?;
        learner.progress().updates += 1;
        report.updates += 1;
    }
    Ok(())
}

/// [`crate::report::after_steps`] for an on-policy learner, after a rollout's update.
pub(crate) fn after_rollout<L: OnPolicyLearner>(
    learner: &mut L,
    report: &mut TrainReport,
    parts: (&mut Checkpointer, &EpisodeTracker, &mut EvalSchedule<'_>),
) -> Result<bool> {
    fn counters<L: OnPolicyLearner>(l: &mut L) -> Progress {
        *l.progress()
    }
    fn weights<L: OnPolicyLearner>(l: &mut L) -> Option<&mut dyn crate::checkpoint::Checkpoint> {
        l.checkpoint()
    }
    let learner_parts = (counters::<L> as fn(&mut L) -> Progress, weights::<L> as _);
    crate::report::after_steps(learner, learner_parts, report, parts)
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
    let mut trainer = OnPolicyTrainer::new(learner, env, eval_env, config)?;
    while !trainer.is_done() {
        trainer.step()?;
    }
    trainer.finish()
}

/// The on-policy loop as a value: one rollout and update per [`OnPolicyTrainer::step`],
/// with the run's state saved and restored exactly ([`OnPolicyTrainer::save_state`]).
pub struct OnPolicyTrainer<'a, L: OnPolicyLearner> {
    learner: &'a mut L,
    /// The caller's env, in a [`VecNormalize`] when the config normalises.
    env: Box<dyn VecEnv + 'a>,
    normalizer: Option<ObsNormalizer>,
    config: OnPolicyConfig,
    obs_dim: usize,
    act_dim: usize,
    actions: ActionBuf,
    obs: Vec<f32>,
    resetting: Vec<bool>,
    row: Vec<f32>,
    books: LoopBooks<'a>,
    buf: RolloutBuffer,
    record: ActingRecord,
    batch: RolloutBatch,
    reached_target: bool,
}

/// The snapshot kind of the loop's own state.
const TRAINER_STATE: &str = "on-policy trainer";

impl<'a, L: OnPolicyLearner> OnPolicyTrainer<'a, L> {
    /// Checks what can be checked before training, resets `env` with `config.seed` and
    /// writes the first weight checkpoint if `config.checkpoint` asks for them.
    ///
    /// # Errors
    /// An invalid config; a width or space mismatch between the env, the evaluation env
    /// and the learner; checkpoints asked of a learner without them.
    pub fn new(
        learner: &'a mut L,
        env: &'a mut dyn VecEnv,
        eval_env: &'a dyn EnvFactory,
        config: &OnPolicyConfig,
    ) -> Result<Self> {
        config.validate()?;
        let n = env.num_envs();
        let obs_dim = env.single_observation_space().flat_dim();
        Error::check_len("learner observation width", obs_dim, learner.obs_dim())?;
        crate::evaluate::check_eval_env(env, eval_env)?;
        let (mut env, normalizer, eval_env): (Box<dyn VecEnv + 'a>, _, Box<dyn EnvFactory + 'a>) =
            match &config.normalize {
                Some(nc) => {
                    let wrapped = VecNormalize::new(env, nc.clone())?;
                    let normalizer = wrapped.obs_normalizer();
                    let eval: Box<dyn EnvFactory + 'a> = if nc.observations {
                        Box::new(normalizer.factory(crate::report::Borrowed(eval_env)))
                    } else {
                        Box::new(crate::report::Borrowed(eval_env))
                    };
                    (Box::new(wrapped), Some(normalizer), eval)
                }
                None => (
                    Box::new(env),
                    None,
                    Box::new(crate::report::Borrowed(eval_env)),
                ),
            };
        let space = env.single_action_space().clone();
        let act_dim = stored_action_dim(&space);
        let obs = env.reset(Some(config.seed))?.to_vec();
        let evals = EvalSchedule::new(
            Box::new(eval_env),
            config.eval_episodes,
            config.seed,
            config.eval_every,
            config.target_return,
        );
        let mut checkpoints = Checkpointer::new(&config.checkpoint, learner.checkpoint())?
            .with_normalizer(normalizer.clone());
        let Progress { env_steps, updates } = *learner.progress();
        checkpoints.maybe(learner.checkpoint(), env_steps, updates)?;
        Ok(OnPolicyTrainer {
            learner,
            env,
            normalizer,
            config: config.clone(),
            obs_dim,
            act_dim,
            actions: ActionBuf::for_space(&space),
            obs,
            resetting: vec![false; n],
            row: Vec::with_capacity(act_dim),
            books: LoopBooks::new(n, evals, checkpoints),
            buf: RolloutBuffer::default(),
            record: ActingRecord::default(),
            batch: RolloutBatch::default(),
            reached_target: false,
        })
    }

    /// Whether the budget is spent or an evaluation reached `config.target_return`.
    pub fn is_done(&self) -> bool {
        self.reached_target || self.books.report.env_steps >= self.config.total_steps
    }

    /// The run so far (see [`crate::OffPolicyTrainer::report`]).
    pub fn report(&self) -> &TrainReport {
        &self.books.report
    }

    /// The learner being trained.
    pub fn learner(&mut self) -> &mut L {
        self.learner
    }

    /// The observation statistics the learner sees through (`config.normalize`): a shared
    /// handle, e.g. to wrap environments for acting after training
    /// ([`ObsNormalizer::wrap`]).
    pub fn obs_normalizer(&self) -> Option<ObsNormalizer> {
        self.normalizer.clone()
    }

    /// One rollout of `n_steps` per sub-environment and one update from it, then a
    /// checkpoint and an evaluation when due. Does nothing once [`Self::is_done`].
    ///
    /// # Errors
    /// As [`train_on_policy`]; after an error the trainer should be dropped.
    pub fn step(&mut self) -> Result<()> {
        if self.is_done() {
            return Ok(());
        }
        let n = self.resetting.len();
        let (obs_dim, act_dim) = (self.obs_dim, self.act_dim);
        let buf = &mut self.buf;
        buf.clear();
        for _ in 0..self.config.n_steps {
            let acting = (&mut self.actions, &mut self.record);
            buf.act(&mut *self.learner, &self.obs, acting, (n, act_dim))?;
            let step = self.env.step(self.actions.as_vec_actions())?;
            let stored = &self.record.stored_actions;
            for (i, resetting) in self.resetting.iter_mut().enumerate() {
                let (terminated, truncated) = (step.terminated[i], step.truncated[i]);
                let acted = (&self.actions, &stored[..], &mut self.row, act_dim);
                let reward = step.rewards[i] as f32;
                buf.push(i, acted, reward, (terminated, truncated), *resetting);
                let done = terminated || truncated;
                if !*resetting {
                    self.books.episodes.record(i, step.env_rewards()[i], done);
                }
                *resetting = done;
            }
            self.obs.copy_from_slice(step.obs);
        }
        buf.close(&self.obs);
        let shape = (&self.obs[..], n, obs_dim, act_dim);
        let (batch, report) = (&mut self.batch, &mut self.books.report);
        learn_from_rollout(
            &mut *self.learner,
            buf,
            shape,
            batch,
            report,
            self.config.total_steps,
        )?;
        let parts = (
            &mut self.books.checkpoints,
            &self.books.episodes,
            &mut self.books.evals,
        );
        self.reached_target |= after_rollout(self.learner, &mut self.books.report, parts)?;
        Ok(())
    }

    /// The final weight checkpoint and evaluation, and the report of the call.
    ///
    /// # Errors
    /// An error writing the checkpoint or evaluating.
    pub fn finish(mut self) -> Result<TrainReport> {
        let Progress { env_steps, updates } = *self.learner.progress();
        self.books
            .checkpoints
            .finish(self.learner.checkpoint(), env_steps, updates)?;
        self.books.report.progress = *self.learner.progress();
        self.books
            .evals
            .finish(self.learner, self.books.report, &self.books.episodes)
    }

    /// Writes the run's whole state into `dir`: `learner/` (its [`crate::TrainingState`]),
    /// `env.state` and `trainer.state`.
    ///
    /// # Errors
    /// A learner or environment without exact snapshots, an I/O error.
    pub fn save_state(&mut self, dir: &Path) -> Result<()> {
        crate::training_state::save_learner_and_env(
            self.learner.training_state(),
            &*self.env,
            dir,
        )?;
        if let Some(n) = &self.normalizer {
            n.save_file(&dir.join(emberlab_env::OBS_NORMALIZER_FILE))?;
        }
        let mut out = StateWriter::new();
        out.usize(self.resetting.len())
            .u64(self.config.total_steps)
            .u64(self.config.seed)
            .f32s(&self.obs)
            .bools(&self.resetting)
            .bool(self.reached_target);
        self.books.save_state(&mut out);
        save_words(&dir.join("trainer.state"), TRAINER_STATE, out.words())
    }

    /// Restores what [`OnPolicyTrainer::save_state`] wrote, into a trainer built like the
    /// saved one. On an error nothing has changed.
    ///
    /// # Errors
    /// A missing, truncated or damaged file (every file listed in the folder's
    /// [`crate::manifest::MANIFEST`] is checked first), or the state of a different run.
    pub fn load_state(&mut self, dir: &Path) -> Result<()> {
        crate::manifest::verify_dir(dir)?;
        let words = load_words(&dir.join("trainer.state"), TRAINER_STATE)?;
        let mut src = StateReader::new(&words, TRAINER_STATE);
        let n = self.resetting.len();
        Error::check_len("sub-environments of the saved run", n, src.usize()?)?;
        crate::training_state::check_saved("total_steps", self.config.total_steps, src.u64()?)?;
        crate::training_state::check_saved("seed", self.config.seed, src.u64()?)?;
        let obs = src.f32s(Some(self.obs.len()))?;
        let resetting = src.bools(Some(n))?;
        let reached_target = src.bool()?;
        let books = self.books.read_state(&mut src)?;
        src.finish()?;
        let env_words = load_words(&dir.join("env.state"), "vector env")?;
        crate::training_state::load_learner_and_env(
            self.learner.training_state(),
            &mut *self.env,
            &env_words,
            dir,
        )?;
        (self.obs, self.resetting, self.reached_target) = (obs, resetting, reached_target);
        books.restore(&mut self.books, *self.learner.progress(), Running::Continue);
        Ok(())
    }
}

/// Fills `out` with the training rows of `buf`: advantages and returns per `mode`, reset
/// steps removed (and, for Monte-Carlo returns, steps whose episode does not end inside
/// the rollout).
fn advantages<O: RolloutObs>(
    mode: AdvantageMode,
    buf: &RolloutBuffer<O>,
    values: Option<&[f32]>,
    (envs, obs_dim, act_dim): (usize, usize, usize),
    out: &mut RolloutBatch<O>,
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
    out.log_probs.clear();
    out.values.clear();
    let log_probs =
        (buf.has_log_probs && buf.log_probs.len() == steps_envs).then_some(&buf.log_probs);
    for (i, _) in keep.iter().enumerate().filter(|(_, k)| **k) {
        if let Some(lp) = log_probs {
            out.log_probs.push(lp[i]);
        }
        if let Some(v) = values {
            out.values.push(v[i]);
        }
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
            ..RolloutBuffer::default()
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
        advantages(mode, &buf, None, (1, 1, 1), &mut out).unwrap();
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
        assert!(advantages(mode, &buf, None, (1, 1, 1), &mut out).is_err());
        let values = [0.5, 0.5, 0.5, 0.5, 2.0];
        advantages(mode, &buf, Some(&values), (1, 1, 1), &mut out).unwrap();
        assert_eq!(out.len, 3);
        assert_eq!(out.obs, vec![0.0, 1.0, 3.0]);
        // Episode 1: returns 2, 1; last step bootstraps V = 2: return 3.
        assert_eq!(out.returns, vec![2.0, 1.0, 3.0]);
        assert_eq!(out.advantages, vec![1.5, 0.5, 2.5]);
    }
}
