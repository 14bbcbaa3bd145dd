//! The off-policy loop on images: [`FrameVecEnv`] stacks of `u8` frames, collected into
//! frame replay ([`FrameReplay`], each frame stored once) and learned from through
//! [`OffPolicyLearner::update_frames`]. The loop's settings, schedule and report are the
//! vector loop's ([`crate::OffPolicyConfig`], [`crate::TrainReport`]); only what it stores
//! and hands the learner differ.

use crate::agent::ActionBuf;
use crate::books::{LoopBooks, Running};
use crate::checkpoint::Checkpointer;
use crate::config::Validate;
use crate::learner::{OffPolicyLearner, Progress};
use crate::off_policy::{
    OffPolicyConfig, after_vector_step, check_same_sampler, count_vector_step, td_priorities,
    update_counted, waits_for_transitions,
};
use crate::report::{EvalSchedule, FrameEval, TrainReport};
use emberlab_core::state::{StateReader, StateWriter, load_words, save_words};
use emberlab_core::{EmberRng, Error, Result};
use emberlab_env::{FrameEnvFactory, FrameVecEnv};
use emberlab_replay::{FrameBatch, FrameReplay, Sampler};
use std::path::Path;

/// The snapshot kind of the loop's own state.
const TRAINER_STATE: &str = "frame off-policy trainer";

/// Trains `learner` on the image environments `env` for `config.total_steps` env steps,
/// storing frames in `replay` and evaluating whole games on fresh environments from
/// `eval_env` every `config.eval_every` steps and at the end. The whole call is
/// [`FrameOffPolicyTrainer::new`], [`FrameOffPolicyTrainer::step`] until done, and
/// [`FrameOffPolicyTrainer::finish`].
///
/// - `replay` fixes the stack, n-step window and discount (`emberlab_replay::FrameStorage`):
///   its stack must be `env`'s, its discount the learner's; `config.replay` is not read.
///   Batches carry n-step returns with their discounts in `FrameBatch::discount`.
/// - Episodes follow the env's same-step autoreset: an ended episode's last frame is
///   stored as its final observation (truncated steps bootstrap from it), and the next
///   episode begins with the reset frame.
/// - Training returns ([`TrainReport::recent_train_return`]) and evaluations count whole
///   games ([`emberlab_env::FrameStep::game_over`]), not the lives that end episodes for
///   learning.
/// - Prioritized replay gets the learner's TD errors as priorities and its β annealed over
///   the call, as in [`crate::train_off_policy`].
///
/// # Errors
/// As [`FrameOffPolicyTrainer::new`] and [`FrameOffPolicyTrainer::step`].
pub fn train_off_policy_frames<L: OffPolicyLearner, S: Sampler>(
    learner: &mut L,
    env: &mut FrameVecEnv,
    replay: &mut FrameReplay<S>,
    eval_env: &dyn FrameEnvFactory,
    config: &OffPolicyConfig,
) -> Result<TrainReport> {
    let mut trainer = FrameOffPolicyTrainer::new(learner, env, replay, eval_env, config)?;
    while !trainer.is_done() {
        trainer.step()?;
    }
    trainer.finish()
}

/// The image off-policy loop as a value (see [`train_off_policy_frames`]).
pub struct FrameOffPolicyTrainer<'a, L: OffPolicyLearner, S: Sampler> {
    learner: &'a mut L,
    env: &'a mut FrameVecEnv,
    replay: &'a mut FrameReplay<S>,
    config: OffPolicyConfig,
    priorities: bool,
    start: Progress,
    rng: EmberRng,
    actions: ActionBuf,
    batch: FrameBatch,
    books: LoopBooks<'a>,
    vector_steps: u64,
    reached_target: bool,
}

impl<'a, L: OffPolicyLearner, S: Sampler> FrameOffPolicyTrainer<'a, L, S> {
    /// Checks what can be checked before training, resets `env` with `config.seed`, begins
    /// every environment's episode in `replay`, and writes the first weight checkpoint if
    /// `config.checkpoint` asks for them.
    ///
    /// # Errors
    /// An invalid config; a learner, replay or evaluation env whose observation length,
    /// stack, environment count, action width or discount differ from `env`'s and the
    /// learner's; a replay that already holds frames; checkpoints of a learner without
    /// them; an environment's error.
    pub fn new(
        learner: &'a mut L,
        env: &'a mut FrameVecEnv,
        replay: &'a mut FrameReplay<S>,
        eval_env: &'a dyn FrameEnvFactory,
        config: &OffPolicyConfig,
    ) -> Result<Self> {
        config.validate()?;
        let [c, h, w] = env.obs_shape();
        Error::check_len("learner observation length", c * h * w, learner.obs_dim())?;
        let storage = replay.storage();
        Error::check_len(
            "replay frame length",
            env.frame_shape().iter().product(),
            storage.frame_len(),
        )?;
        Error::check_len("replay stack", env.stack(), storage.stack())?;
        Error::check_len("replay environments", env.num_envs(), storage.num_envs())?;
        Error::check_len("replay action width", 1, storage.act_dim())?;
        if !storage.is_empty() {
            return Err(Error::invalid(
                "frame replay",
                format!("{} frames stored", storage.len()),
                "an empty replay (a run's replay is restored with its run's state)",
            ));
        }
        if let Some(g) = learner.gamma()
            && (g - storage.gamma()).abs() > 1e-12
        {
            return Err(Error::invalid(
                "frame replay gamma",
                storage.gamma(),
                format!("the learner's gamma {g} (returns must use the learner's discount)"),
            ));
        }
        crate::evaluate::check_frame_eval_env(env, eval_env)?;
        let start = *learner.progress();
        // Everything that can fail before the environments and the replay change.
        let mut checkpoints = Checkpointer::new(&config.checkpoint, learner.checkpoint())?;
        checkpoints.maybe(learner.checkpoint(), start.env_steps, start.updates)?;
        let frame = storage.frame_len();
        let per = env.stack() * frame;
        let obs = env.reset(Some(config.seed))?;
        for (i, stack) in obs.chunks_exact(per).enumerate() {
            replay.begin(i, &stack[stack.len() - frame..])?;
        }
        let evals = EvalSchedule::new(
            Box::new(FrameEval {
                factory: eval_env,
                stack: env.stack(),
            }),
            config.eval_episodes,
            config.seed,
            config.eval_every,
            config.target_return,
        );
        Ok(FrameOffPolicyTrainer {
            priorities: replay.sampler().uses_priorities(),
            actions: ActionBuf::Discrete(Vec::with_capacity(env.num_envs())),
            books: LoopBooks::new(env.num_envs(), evals, checkpoints),
            learner,
            env,
            replay,
            config: config.clone(),
            start,
            rng: EmberRng::seed_from(config.seed).fork(1),
            batch: FrameBatch::default(),
            vector_steps: 0,
            reached_target: false,
        })
    }

    /// Whether the budget is spent or an evaluation reached `config.target_return`.
    pub fn is_done(&self) -> bool {
        self.reached_target || self.books.report.env_steps >= self.config.total_steps
    }

    /// The run so far.
    pub fn report(&self) -> &TrainReport {
        &self.books.report
    }

    /// The learner being trained.
    pub fn learner(&mut self) -> &mut L {
        self.learner
    }

    /// One step of every environment (random actions before `config.learning_starts`, the
    /// learner's exploring ones after), the rounds of updates due after it, then a
    /// checkpoint and an evaluation when due. Does nothing once [`Self::is_done`].
    ///
    /// # Errors
    /// An environment's, the replay's, or the learner's error (a panic inside it among
    /// them); after an error the trainer should be dropped.
    pub fn step(&mut self) -> Result<()> {
        if self.is_done() {
            return Ok(());
        }
        let n = self.env.num_envs();
        let config = &self.config;
        if self.start.env_steps + self.books.report.env_steps < config.learning_starts {
            let (rng, count) = (&mut self.rng, self.env.actions() as u64);
            let out = self.actions.discrete_mut("the frame trainer")?;
            out.clear();
            out.extend((0..n).map(|_| rng.below(count) as usize));
        } else {
            let (learner, obs, actions) = (&mut *self.learner, self.env.obs(), &mut self.actions);
            crate::guard::run_learner(
                || "the learner's act".into(),
                || learner.act_pixels(obs, true, actions),
            )?;
        }
        let actions = self.actions.discrete_mut("the frame trainer")?;
        let step = self.env.step(actions)?;
        let frame = self.replay.storage().frame_len();
        let per = self.replay.storage().obs_len();
        for (i, &action) in actions.iter().enumerate() {
            let (terminated, truncated) = (step.terminated[i], step.truncated[i]);
            self.replay.push(
                i,
                &[action as f32],
                step.rewards[i],
                terminated,
                truncated,
                &step.final_frames[i * frame..(i + 1) * frame],
            )?;
            if terminated || truncated {
                self.replay
                    .begin(i, &step.obs[(i + 1) * per - frame..(i + 1) * per])?;
            }
            self.books
                .episodes
                .record(i, step.scores[i] as f64, step.game_over[i]);
        }
        let planned = self.start.env_steps + config.total_steps;
        let due = count_vector_step(
            self.learner,
            &mut self.books.report,
            &mut self.vector_steps,
            (n, planned),
            (config, self.replay.drawable()),
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

    /// `config.gradient_steps` updates (fewer if the replay cannot draw a batch yet).
    fn update_round(&mut self) -> Result<()> {
        let config = &self.config;
        let progress = (self.books.report.env_steps as f64 / config.total_steps as f64).min(1.0);
        self.replay.anneal(progress)?;
        for _ in 0..config.gradient_steps {
            match self.replay.sample(config.batch_size, &mut self.batch) {
                Ok(()) => {}
                Err(e) if waits_for_transitions(&e) => {
                    self.books.report.sample_waits += 1;
                    break;
                }
                Err(e) => return Err(e),
            }
            let batch = &self.batch;
            let update = update_counted(self.learner, batch.len, |l, step| {
                l.update_frames(batch, step)
            })?;
            if self.priorities {
                self.replay
                    .update_priorities(&self.batch.indices, td_priorities(&update)?)?;
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
}

impl<L: OffPolicyLearner, S: Sampler> FrameOffPolicyTrainer<'_, L, S> {
    /// Writes the run's state into `dir` (created if needed, best inside
    /// [`crate::checkpoint::write_dir_atomically`]): `learner/` (the learner's
    /// [`crate::TrainingState`]), `replay.frames` and `trainer.state`. The environments'
    /// own state is not saved (an Atari emulator's lives in its worker): see
    /// [`FrameOffPolicyTrainer::load_state`].
    ///
    /// # Errors
    /// A learner without a training state ([`Error::Unavailable`]), an I/O error.
    pub fn save_state(&mut self, dir: &Path) -> Result<()> {
        crate::training_state::save_learner(self.learner.training_state(), dir)?;
        self.replay.save(dir.join("replay.frames"))?;
        let c = &self.config;
        let mut out = StateWriter::new();
        out.usize(self.env.num_envs())
            .usize(self.replay.storage().obs_len())
            .u64(c.total_steps)
            .u64(c.seed)
            .u64(self.start.env_steps)
            .u64(self.start.updates)
            .rng(&self.rng)
            .u64(self.vector_steps)
            .bool(self.reached_target);
        self.books.save_state(&mut out);
        save_words(&dir.join("trainer.state"), TRAINER_STATE, out.words())
    }

    /// Resumes the run [`FrameOffPolicyTrainer::save_state`] wrote into `dir`, in a
    /// trainer built like the saved one (same config, environments, learner and replay
    /// kinds): the learner, the replay, the loop's counters, generator, report and
    /// schedules continue where they were. The environments start new episodes (reset with
    /// the config's seed plus the env steps so far), and each episode that was running is
    /// stored as truncated where the run stopped ([`FrameReplay::cut`]): nothing stored is
    /// lost, and the running episodes' returns are left out of the training returns.
    ///
    /// Everything is read and checked before anything changes; an error resetting the
    /// environments comes last, after the rest was restored.
    ///
    /// # Errors
    /// A missing, truncated or damaged file (every file listed in the folder's
    /// [`crate::manifest::MANIFEST`] is checked first), the state of a different run, or an
    /// environment's error.
    pub fn load_state(&mut self, dir: &Path) -> Result<()> {
        crate::manifest::verify_dir(dir)?;
        let words = load_words(&dir.join("trainer.state"), TRAINER_STATE)?;
        let mut replay = FrameReplay::<S>::load(dir.join("replay.frames"))?;
        let (ours, saved) = (self.replay.storage(), replay.storage());
        for (what, a, b) in [
            ("capacity", ours.capacity(), saved.capacity()),
            ("frame length", ours.frame_len(), saved.frame_len()),
            ("stack", ours.stack(), saved.stack()),
            ("environments", ours.num_envs(), saved.num_envs()),
            ("n-step window", ours.n_step(), saved.n_step()),
            ("action width", ours.act_dim(), saved.act_dim()),
        ] {
            Error::check_len(&format!("replay {what} in the saved run"), a, b)?;
        }
        if ours.gamma() != saved.gamma() {
            return Err(Error::invalid(
                "replay gamma in the saved run",
                saved.gamma(),
                format!("this run's {}", ours.gamma()),
            ));
        }
        check_same_sampler(self.replay.sampler(), replay.sampler())?;
        let c = &self.config;
        let check = crate::training_state::check_saved;
        let mut src = StateReader::new(&words, TRAINER_STATE);
        Error::check_len(
            "environments of the saved run",
            self.env.num_envs(),
            src.usize()?,
        )?;
        Error::check_len(
            "observation length of the saved run",
            ours.obs_len(),
            src.usize()?,
        )?;
        check("total_steps", c.total_steps, src.u64()?)?;
        check("seed", c.seed, src.u64()?)?;
        let start = Progress {
            env_steps: src.u64()?,
            updates: src.u64()?,
        };
        let rng = src.rng()?;
        let vector_steps = src.u64()?;
        let reached_target = src.bool()?;
        let books = self.books.read_state(&mut src)?;
        src.finish()?;
        for env in 0..self.env.num_envs() {
            replay.cut(env)?;
        }
        crate::training_state::load_learner(self.learner.training_state(), dir)?;

        self.start = start;
        self.rng = rng;
        self.vector_steps = vector_steps;
        self.reached_target = reached_target;
        books.restore(&mut self.books, *self.learner.progress(), Running::Restart);
        *self.replay = replay;
        let seed = c.seed.wrapping_add(self.learner.progress().env_steps);
        let frame = self.replay.storage().frame_len();
        let per = self.replay.storage().obs_len();
        let obs = self.env.reset(Some(seed))?;
        for (i, stack) in obs.chunks_exact(per).enumerate() {
            self.replay.begin(i, &stack[per - frame..])?;
        }
        Ok(())
    }
}
