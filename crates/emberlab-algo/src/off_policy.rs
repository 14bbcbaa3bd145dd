//! The shared off-policy loop: collect from a vector environment into a replay buffer,
//! update at a configurable ratio, evaluate every N env steps. Algorithms plug in as
//! [`OffPolicyLearner`]s; nothing of this loop is repeated inside them.

use crate::agent::{ActionBuf, stored_action_dim};
use crate::books::{LoopBooks, Running, SavedBooks};
use crate::checkpoint::{CheckpointConfig, Checkpointer};
use crate::config::{Validate, check_positive};
use crate::learner::{OffPolicyLearner, Progress, Update};
use crate::replay::ReplayConfig;
use crate::report::{EpisodeTracker, EvalSchedule, TrainReport};
use emberlab_core::state::{StateReader, StateWriter, load_words, save_words};
use emberlab_core::{Batch, EmberRng, Error, Result, Space, Transition};
use emberlab_env::{EnvFactory, VecEnv};
use emberlab_replay::{EpisodeWriter, ReplayBuffer, Sampler};
use serde::{Deserialize, Serialize};
use std::path::Path;

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
    pub fn build_replay(
        &self,
        env: &dyn VecEnv,
    ) -> Result<ReplayBuffer<emberlab_replay::AnySampler>> {
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
/// the end. The whole call is [`OffPolicyTrainer::new`], [`OffPolicyTrainer::step`] until
/// done, and [`OffPolicyTrainer::finish`]; drive the trainer yourself to watch progress,
/// stop early or save the run's state for an exact resume.
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
    let mut trainer = OffPolicyTrainer::new(learner, env, replay, eval_env, config)?;
    while !trainer.is_done() {
        trainer.step()?;
    }
    trainer.finish()
}

/// The off-policy loop as a value: one [`OffPolicyTrainer::step`] at a time, with the
/// run's whole state (learner, replay, environments, the loop's own counters and
/// generators) saved and restored by [`OffPolicyTrainer::save_state`] /
/// [`OffPolicyTrainer::load_state`], so that a run stopped and resumed produces the same
/// bits as one that never stopped (same backend and CPU).
pub struct OffPolicyTrainer<'a, L: OffPolicyLearner, S: Sampler> {
    learner: &'a mut L,
    env: &'a mut dyn VecEnv,
    replay: &'a mut ReplayBuffer<S>,
    config: OffPolicyConfig,
    space: Space,
    obs_dim: usize,
    act_dim: usize,
    writer: EpisodeWriter,
    priorities: bool,
    start: Progress,
    rng: EmberRng,
    actions: ActionBuf,
    batch: Batch,
    obs: Vec<f32>,
    resetting: Vec<bool>,
    row: Vec<f32>,
    books: LoopBooks<'a>,
    vector_steps: u64,
    reached_target: bool,
}

/// The snapshot kind of the loop's own state.
const TRAINER_STATE: &str = "off-policy trainer";

impl<'a, L: OffPolicyLearner, S: Sampler> OffPolicyTrainer<'a, L, S> {
    /// Checks everything that can be checked before training (see [`train_off_policy`]),
    /// resets `env` with `config.seed` and writes the first weight checkpoint if
    /// `config.checkpoint` asks for them.
    ///
    /// # Errors
    /// An invalid config, spaces or widths that do not fit, a bad evaluation env, an
    /// n-step discount other than the learner's, checkpoints of a learner without them.
    pub fn new(
        learner: &'a mut L,
        env: &'a mut dyn VecEnv,
        replay: &'a mut ReplayBuffer<S>,
        eval_env: &'a dyn EnvFactory,
        config: &OffPolicyConfig,
    ) -> Result<Self> {
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
        let writer = EpisodeWriter::new(replay, n, config.replay.n_step, gamma)?;
        let priorities = replay.sampler().uses_priorities();
        let start = *learner.progress();
        let obs = env.reset(Some(config.seed))?.to_vec();
        let evals = EvalSchedule::new(
            Box::new(crate::report::Borrowed(eval_env)),
            config.eval_episodes,
            config.seed,
            config.eval_every,
            config.target_return,
        );
        let mut checkpoints = Checkpointer::new(&config.checkpoint, learner.checkpoint())?;
        checkpoints.maybe(learner.checkpoint(), start.env_steps, start.updates)?;
        Ok(OffPolicyTrainer {
            learner,
            env,
            replay,
            config: config.clone(),
            actions: ActionBuf::for_space(&space),
            space,
            obs_dim,
            act_dim,
            writer,
            priorities,
            start,
            rng: EmberRng::seed_from(config.seed).fork(1),
            batch: Batch::with_capacity(obs_dim, act_dim, config.batch_size),
            obs,
            resetting: vec![false; n],
            row: Vec::with_capacity(act_dim),
            books: LoopBooks::new(n, evals, checkpoints),
            vector_steps: 0,
            reached_target: false,
        })
    }

    /// Whether the budget is spent or an evaluation reached `config.target_return`.
    pub fn is_done(&self) -> bool {
        self.reached_target || self.books.report.env_steps >= self.config.total_steps
    }

    /// The run so far: counters of this call, evaluations, the last update's metrics, the
    /// mean return of recent training episodes, wall seconds.
    pub fn report(&self) -> &TrainReport {
        &self.books.report
    }

    /// The learner being trained.
    pub fn learner(&mut self) -> &mut L {
        self.learner
    }

    /// One vector step of every sub-environment, the rounds of updates due after it, then
    /// a checkpoint and an evaluation when due. Does nothing once [`Self::is_done`].
    ///
    /// # Errors
    /// As [`train_off_policy`]; after an error the trainer should be dropped.
    pub fn step(&mut self) -> Result<()> {
        if self.is_done() {
            return Ok(());
        }
        let n = self.resetting.len();
        let (obs_dim, act_dim) = (self.obs_dim, self.act_dim);
        let config = &self.config;
        if self.start.env_steps + self.books.report.env_steps < config.learning_starts {
            random_actions(&self.space, n, &mut self.rng, &mut self.actions);
        } else {
            let (learner, obs, actions) = (&mut *self.learner, &self.obs, &mut self.actions);
            crate::guard::run_learner(
                || "the learner's act".into(),
                || learner.act(obs, true, actions),
            )?;
        }
        let step = self.env.step(self.actions.as_vec_actions())?;
        for i in 0..n {
            if self.resetting[i] {
                self.resetting[i] = false;
                continue;
            }
            let done = step.terminated[i] || step.truncated[i];
            self.actions.write_row(i, act_dim, &mut self.row);
            let t = Transition {
                obs: &self.obs[i * obs_dim..(i + 1) * obs_dim],
                action: &self.row,
                reward: step.rewards[i] as f32,
                next_obs: &step.obs[i * obs_dim..(i + 1) * obs_dim],
                terminated: step.terminated[i],
                truncated: step.truncated[i],
            };
            self.writer.push(i, &t, self.replay)?;
            self.books.episodes.record(i, step.env_rewards()[i], done);
            self.resetting[i] = done;
        }
        self.obs.copy_from_slice(step.obs);
        let planned = self.start.env_steps + config.total_steps;
        let due = count_vector_step(
            self.learner,
            &mut self.books.report,
            &mut self.vector_steps,
            (n, planned),
            (config, self.replay.len()),
        );
        if due {
            self.update_round()?;
        }
        let parts = (
            &mut self.books.checkpoints,
            &self.books.episodes,
            &mut self.books.evals,
        );
        self.reached_target |= after_vector_step(self.learner, &mut self.books.report, parts)?;
        Ok(())
    }

    /// `config.gradient_steps` updates (fewer if the sampler cannot draw a batch yet).
    fn update_round(&mut self) -> Result<()> {
        let config = &self.config;
        let progress = (self.books.report.env_steps as f64 / config.total_steps as f64).min(1.0);
        self.replay.sampler_mut().anneal(progress)?;
        for _ in 0..config.gradient_steps {
            match self.replay.sample(config.batch_size, &mut self.batch) {
                Ok(()) => {}
                // Not yet enough to draw a batch (fewer transitions than a draw without
                // replacement takes, priorities all zero): wait for more transitions.
                Err(e) if waits_for_transitions(&e) => {
                    self.books.report.sample_waits += 1;
                    break;
                }
                Err(e) => return Err(e),
            }
            let batch = &mut self.batch;
            if config.replay.n_step > 1 {
                batch.discount.clear();
                batch.discount.extend_from_slice(&batch.extras[0]);
            }
            let update = update_once(self.learner, batch)?;
            if self.priorities {
                self.replay
                    .update_priorities(&batch.indices, td_priorities(&update)?)?;
            }
            self.books.report.last_metrics = update.metrics;
            self.books.report.updates += 1;
        }
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

    /// Writes the run's whole state into `dir` (created if needed, best inside
    /// [`crate::checkpoint::write_dir_atomically`]): `learner/` (the learner's
    /// [`crate::TrainingState`]), `replay.bin`, `env.state` and `trainer.state`.
    ///
    /// # Errors
    /// A learner or environment without exact snapshots ([`Error::Unavailable`]), an I/O
    /// error.
    pub fn save_state(&mut self, dir: &Path) -> Result<()> {
        crate::training_state::save_learner_and_env(
            self.learner.training_state(),
            &*self.env,
            dir,
        )?;
        self.replay.save(dir.join("replay.bin"))?;
        let mut out = StateWriter::new();
        self.save_own_state(&mut out);
        save_words(&dir.join("trainer.state"), TRAINER_STATE, out.words())
    }

    fn save_own_state(&self, out: &mut StateWriter) {
        let c = &self.config;
        out.usize(self.resetting.len())
            .usize(self.obs_dim)
            .usize(self.act_dim)
            .u64(c.total_steps)
            .u64(c.seed)
            .u64(self.start.env_steps)
            .u64(self.start.updates)
            .rng(&self.rng)
            .f32s(&self.obs)
            .bools(&self.resetting)
            .u64(self.vector_steps)
            .bool(self.reached_target);
        self.books.save_state(out);
        self.writer.save_state(out);
    }

    /// Restores the state [`OffPolicyTrainer::save_state`] wrote into `dir`, into a
    /// trainer built like the saved one (same config, spaces, learner and replay kinds).
    /// Read everything first: on an error nothing has changed.
    ///
    /// # Errors
    /// A missing, truncated or damaged file (every file listed in the folder's
    /// [`crate::manifest::MANIFEST`] is checked first), or the state of a different run.
    pub fn load_state(&mut self, dir: &Path) -> Result<()> {
        crate::manifest::verify_dir(dir)?;
        let words = load_words(&dir.join("trainer.state"), TRAINER_STATE)?;
        let env_words = load_words(&dir.join("env.state"), "vector env")?;
        let replay = ReplayBuffer::<S>::load(dir.join("replay.bin"))?;
        check_same_sampler(self.replay.sampler(), replay.sampler())?;
        Error::check_len(
            "replay observation width in the saved run",
            self.obs_dim,
            replay.storage().obs_dim(),
        )?;
        Error::check_len(
            "replay capacity in the saved run",
            self.replay.storage().capacity(),
            replay.storage().capacity(),
        )?;
        let mut trainer = self.clone_own_state();
        let books = {
            let mut src = StateReader::new(&words, TRAINER_STATE);
            let books = trainer.load_own_state(&mut src, &self.config, &self.books)?;
            src.finish()?;
            books
        };
        crate::training_state::load_learner_and_env(
            self.learner.training_state(),
            &mut *self.env,
            &env_words,
            dir,
        )?;
        *self.replay = replay;
        trainer.apply_to(self);
        books.restore(&mut self.books, *self.learner.progress(), Running::Continue);
        Ok(())
    }
}

/// The trainer's own restorable fields, read into a copy before any is replaced.
struct OwnState {
    start: Progress,
    rng: EmberRng,
    obs: Vec<f32>,
    resetting: Vec<bool>,
    vector_steps: u64,
    reached_target: bool,
    writer: EpisodeWriter,
}

impl<L: OffPolicyLearner, S: Sampler> OffPolicyTrainer<'_, L, S> {
    fn clone_own_state(&self) -> OwnState {
        OwnState {
            start: self.start,
            rng: self.rng.clone(),
            obs: self.obs.clone(),
            resetting: self.resetting.clone(),
            vector_steps: self.vector_steps,
            reached_target: self.reached_target,
            writer: self.writer.clone(),
        }
    }
}

impl OwnState {
    /// Reads the trainer's own words into `self` and returns the loop's books read
    /// between them, for the caller to put in place once everything else is loaded.
    fn load_own_state(
        &mut self,
        src: &mut StateReader<'_>,
        config: &OffPolicyConfig,
        books: &LoopBooks<'_>,
    ) -> Result<SavedBooks> {
        let n = self.resetting.len();
        Error::check_len("sub-environments of the saved run", n, src.usize()?)?;
        let obs_dim = self.obs.len() / n.max(1);
        Error::check_len("observation width of the saved run", obs_dim, src.usize()?)?;
        let _act_dim = src.u64()?;
        crate::training_state::check_saved("total_steps", config.total_steps, src.u64()?)?;
        crate::training_state::check_saved("seed", config.seed, src.u64()?)?;
        self.start = Progress {
            env_steps: src.u64()?,
            updates: src.u64()?,
        };
        self.rng = src.rng()?;
        self.obs = src.f32s(Some(self.obs.len()))?;
        self.resetting = src.bools(Some(n))?;
        self.vector_steps = src.u64()?;
        self.reached_target = src.bool()?;
        let books = books.read_state(src)?;
        self.writer.load_state(src)?;
        Ok(books)
    }

    fn apply_to<L: OffPolicyLearner, S: Sampler>(self, t: &mut OffPolicyTrainer<'_, L, S>) {
        t.start = self.start;
        t.rng = self.rng;
        t.obs = self.obs;
        t.resetting = self.resetting;
        t.vector_steps = self.vector_steps;
        t.reached_target = self.reached_target;
        t.writer = self.writer;
    }
}

/// A saved run's sampler must be of this run's kind (an `AnySampler` loads any kind): the
/// same use of priorities and of scores.
///
/// # Errors
/// [`Error::InvalidArgument`] naming the saved kind.
pub(crate) fn check_same_sampler<S: Sampler>(ours: &S, saved: &S) -> Result<()> {
    let kind = |s: &S| (s.uses_priorities(), s.uses_scores());
    if kind(ours) == kind(saved) {
        return Ok(());
    }
    let name = |(p, s): (bool, bool)| match (p, s) {
        (true, _) => "prioritized",
        (_, true) => "return-weighted",
        _ => "uniform",
    };
    Err(Error::invalid(
        "replay sampler of the saved run",
        name(kind(saved)),
        format!("this run's {} sampler", name(kind(ours))),
    ))
}

/// Counts a vector step of `n` env steps (this call's report, the learner's progress, the
/// vector steps) and hands the learner its schedule hook with the `planned` total; returns
/// whether a round of updates is due: learning has started, the replay holds `drawable`
/// rows for a batch, and the step is a multiple of `train_freq`.
pub(crate) fn count_vector_step<L: OffPolicyLearner>(
    learner: &mut L,
    report: &mut TrainReport,
    vector_steps: &mut u64,
    (n, planned): (usize, u64),
    (config, drawable): (&OffPolicyConfig, usize),
) -> bool {
    report.env_steps += n as u64;
    learner.progress().env_steps += n as u64;
    *vector_steps += 1;
    let env_steps = learner.progress().env_steps;
    learner.on_env_steps(env_steps, planned);
    env_steps >= config.learning_starts
        && drawable >= config.batch_size
        && vector_steps.is_multiple_of(config.train_freq)
}

/// [`crate::report::after_steps`] for an off-policy learner.
pub(crate) fn after_vector_step<L: OffPolicyLearner>(
    learner: &mut L,
    report: &mut TrainReport,
    parts: (&mut Checkpointer, &EpisodeTracker, &mut EvalSchedule<'_>),
) -> Result<bool> {
    fn counters<L: OffPolicyLearner>(l: &mut L) -> Progress {
        *l.progress()
    }
    fn weights<L: OffPolicyLearner>(l: &mut L) -> Option<&mut dyn crate::checkpoint::Checkpoint> {
        l.checkpoint()
    }
    let learner_parts = (counters::<L> as fn(&mut L) -> Progress, weights::<L> as _);
    crate::report::after_steps(learner, learner_parts, report, parts)
}

/// Whether a sampling error only means "not yet": fewer transitions than a draw without
/// replacement takes, or priorities all zero. The loops wait for more transitions then.
pub(crate) fn waits_for_transitions(e: &Error) -> bool {
    matches!(e, Error::NotEnough { .. } | Error::ZeroWeight { .. })
}

/// The TD errors of `update`, which prioritized replay takes as priorities.
///
/// # Errors
/// [`Error::Unavailable`] for a learner that returns none.
pub(crate) fn td_priorities(update: &Update) -> Result<&[f32]> {
    update
        .td_errors
        .as_deref()
        .ok_or_else(|| Error::Unavailable {
            what: "TD errors from this learner".into(),
            hint: "prioritized replay needs a learner that returns `Update::td_errors`".into(),
        })
}

/// One update of `learner` from `batch` at its update count, a panic inside it caught and
/// returned as an error; the count advances only on success.
fn update_once<L: OffPolicyLearner>(learner: &mut L, batch: &Batch) -> Result<Update> {
    update_counted(learner, batch.len, |l, step| l.update(batch, step))
}

/// `update` of `learner` at its update count (a batch of `rows`), a panic inside it caught
/// and returned as an error, its TD errors checked to be one per row; the count advances
/// only on success.
pub(crate) fn update_counted<L: OffPolicyLearner>(
    learner: &mut L,
    rows: usize,
    update: impl FnOnce(&mut L, u64) -> Result<Update>,
) -> Result<Update> {
    let step = learner.progress().updates;
    let update = crate::guard::run_learner(
        || format!("the learner's update {step}"),
        || update(learner, step),
    )?;
    if let Some(td) = &update.td_errors {
        Error::check_len("learner TD errors (one per batch row)", rows, td.len())?;
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

/// The MuJoCo tasks with zoo presets for SAC and TD3 (zoo's `mujoco-defaults`, tuned on the
/// v3 tasks, used here for v5).
pub(crate) const MUJOCO_ZOO: [&str; 6] = [
    "HalfCheetah-v5",
    "Ant-v5",
    "Hopper-v5",
    "Walker2d-v5",
    "Humanoid-v5",
    "Swimmer-v5",
];

/// zoo's `mujoco-defaults` shared by SAC and TD3 for `env_id`: the discount (Swimmer
/// 0.9999, else 0.99) and the trainer (1M steps, Humanoid 2M, after 10,000 random steps);
/// `None` for other ids.
pub(crate) fn zoo_mujoco(env_id: &str) -> Option<(f64, OffPolicyConfig)> {
    MUJOCO_ZOO.contains(&env_id).then(|| {
        let gamma = if env_id == "Swimmer-v5" { 0.9999 } else { 0.99 };
        let total_steps = if env_id == "Humanoid-v5" {
            2_000_000
        } else {
            1_000_000
        };
        (
            gamma,
            OffPolicyConfig {
                total_steps,
                learning_starts: 10_000,
                ..OffPolicyConfig::default()
            },
        )
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use emberlab_replay::{AnySampler, Prioritized, ReturnWeighted, Uniform};

    #[test]
    fn a_saved_sampler_of_another_kind_is_refused() {
        let kinds: [AnySampler; 3] = [
            Uniform::new(8, true).into(),
            Prioritized::new(8, 0.6, 0.4).unwrap().into(),
            ReturnWeighted::new(8).into(),
        ];
        for (i, a) in kinds.iter().enumerate() {
            for (j, b) in kinds.iter().enumerate() {
                let r = check_same_sampler(a, b);
                assert_eq!(r.is_ok(), i == j, "{i} {j}: {r:?}");
            }
        }
    }
}
