//! The on-policy loop on images: rollouts of [`FrameVecEnv`] stacks of `u8` frames, kept as
//! bytes and learned from through [`OnPolicyLearner::update_frames`] (PPO and A2C on
//! Atari). The settings, advantages, update and report are the vector loop's
//! ([`OnPolicyConfig`], [`crate::on_policy`]); only the observations and the environments'
//! autoreset differ.

use crate::agent::ActionBuf;
use crate::books::{LoopBooks, Running};
use crate::checkpoint::Checkpointer;
use crate::config::Validate;
use crate::learner::{ActingRecord, AdvantageMode, FrameRolloutBatch, OnPolicyLearner, Progress};
use crate::on_policy::{OnPolicyConfig, RolloutBuffer, after_rollout, learn_from_rollout};
use crate::report::{EvalSchedule, FrameEval, TrainReport};
use emberlab_core::state::{StateReader, StateWriter, load_words, save_words};
use emberlab_core::{Error, Result};
use emberlab_env::{FrameEnvFactory, FrameVecEnv};
use std::path::Path;

/// The snapshot kind of the loop's own state.
const TRAINER_STATE: &str = "frame on-policy trainer";

/// Trains `learner` on the image environments `env` for `config.total_steps` env steps,
/// one update per rollout of `config.n_steps` steps per environment, evaluating whole games
/// on fresh environments from `eval_env` every `config.eval_every` steps and at the end.
/// The whole call is [`FrameOnPolicyTrainer::new`], [`FrameOnPolicyTrainer::step`] until
/// done, and [`FrameOnPolicyTrainer::finish`].
///
/// - Observations stay `u8` stacks from the environment to the learner
///   ([`crate::FrameRolloutBatch`]), which divides them by 255 on its device.
/// - The environments restart in the step that ends an episode. A truncated episode's
///   last step is learned from as SB3 does: its reward gets `γ · V(final stack)` and the
///   step counts as terminal (for GAE learners; Monte-Carlo ones keep it truncated).
/// - Training returns ([`TrainReport::recent_train_return`]) and evaluations count whole
///   games' scores ([`emberlab_env::FrameStep::game_over`]), not lives or clipped rewards.
/// - `config.normalize` does not apply to images and is refused.
///
/// # Errors
/// As [`FrameOnPolicyTrainer::new`] and [`FrameOnPolicyTrainer::step`].
pub fn train_on_policy_frames<L: OnPolicyLearner>(
    learner: &mut L,
    env: &mut FrameVecEnv,
    eval_env: &dyn FrameEnvFactory,
    config: &OnPolicyConfig,
) -> Result<TrainReport> {
    let mut trainer = FrameOnPolicyTrainer::new(learner, env, eval_env, config)?;
    while !trainer.is_done() {
        trainer.step()?;
    }
    trainer.finish()
}

/// The image on-policy loop as a value (see [`train_on_policy_frames`]).
pub struct FrameOnPolicyTrainer<'a, L: OnPolicyLearner> {
    learner: &'a mut L,
    env: &'a mut FrameVecEnv,
    config: OnPolicyConfig,
    obs_len: usize,
    actions: ActionBuf,
    obs: Vec<u8>,
    row: Vec<f32>,
    /// A truncated episode's last stack, to bootstrap from.
    final_stack: Vec<u8>,
    books: LoopBooks<'a>,
    buf: RolloutBuffer<u8>,
    record: ActingRecord,
    batch: FrameRolloutBatch,
    reached_target: bool,
}

impl<'a, L: OnPolicyLearner> FrameOnPolicyTrainer<'a, L> {
    /// Checks what can be checked before training, resets `env` with `config.seed` and
    /// writes the first weight checkpoint if `config.checkpoint` asks for them.
    ///
    /// # Errors
    /// An invalid config (`normalize` among them); a learner whose observation length
    /// differs from `env`'s stacks; an evaluation env whose frames or actions differ from
    /// `env`'s; checkpoints asked of a learner without them; an environment's error. (The
    /// learner's action count is not compared: a learner built for fewer actions than the
    /// game has never takes the others.)
    pub fn new(
        learner: &'a mut L,
        env: &'a mut FrameVecEnv,
        eval_env: &'a dyn FrameEnvFactory,
        config: &OnPolicyConfig,
    ) -> Result<Self> {
        config.validate()?;
        if config.normalize.is_some() {
            return Err(Error::invalid(
                "normalize",
                "set",
                "none on images (frames are divided by 255 by the learner)",
            ));
        }
        let obs_len: usize = env.obs_shape().iter().product();
        Error::check_len("learner observation length", obs_len, learner.obs_dim())?;
        crate::evaluate::check_frame_eval_env(env, eval_env)?;
        let mut checkpoints = Checkpointer::new(&config.checkpoint, learner.checkpoint())?;
        let Progress { env_steps, updates } = *learner.progress();
        checkpoints.maybe(learner.checkpoint(), env_steps, updates)?;
        let obs = env.reset(Some(config.seed))?.to_vec();
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
        let n = env.num_envs();
        Ok(FrameOnPolicyTrainer {
            learner,
            config: config.clone(),
            obs_len,
            actions: ActionBuf::Discrete(Vec::with_capacity(n)),
            obs,
            row: Vec::with_capacity(1),
            final_stack: Vec::with_capacity(obs_len),
            books: LoopBooks::new(n, evals, checkpoints),
            buf: RolloutBuffer::default(),
            record: ActingRecord::default(),
            batch: FrameRolloutBatch::default(),
            reached_target: false,
            env,
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

    /// One rollout of `n_steps` per environment and one update from it, then a
    /// checkpoint and an evaluation when due. Does nothing once [`Self::is_done`].
    ///
    /// # Errors
    /// An environment's or the learner's error (a panic inside it among them); after an
    /// error the trainer should be dropped.
    pub fn step(&mut self) -> Result<()> {
        if self.is_done() {
            return Ok(());
        }
        let n = self.env.num_envs();
        let gamma = match self.learner.advantage_mode() {
            AdvantageMode::Gae { gamma, .. } => Some(gamma),
            AdvantageMode::MonteCarlo { .. } => None,
        };
        let frame: usize = self.env.frame_shape().iter().product();
        let per = self.obs_len;
        let buf = &mut self.buf;
        buf.clear();
        for _ in 0..self.config.n_steps {
            let acting = (&mut self.actions, &mut self.record);
            buf.act(&mut *self.learner, &self.obs, acting, (n, 1))?;
            let actions = self.actions.discrete_mut("the frame trainer")?;
            let step = self.env.step(actions)?;
            let stored = &self.record.stored_actions;
            for i in 0..n {
                let (mut terminated, truncated) = (step.terminated[i], step.truncated[i]);
                let mut reward = step.rewards[i];
                if let Some(gamma) = gamma
                    && truncated
                    && !terminated
                {
                    // The stack the episode ended on: the one acted on, a frame on.
                    let before = &self.obs[i * per..(i + 1) * per];
                    self.final_stack.clear();
                    self.final_stack.extend_from_slice(&before[frame..]);
                    self.final_stack
                        .extend_from_slice(&step.final_frames[i * frame..(i + 1) * frame]);
                    let learner = &mut *self.learner;
                    let last = crate::guard::run_learner(
                        || "the learner's values".into(),
                        || learner.values_pixels(&self.final_stack),
                    )?;
                    if let Some(v) = last {
                        Error::check_len("learner values (a final stack)", 1, v.len())?;
                        reward += gamma * v[0];
                        terminated = true;
                    }
                }
                let acted = (&self.actions, &stored[..], &mut self.row, 1);
                let flags = (terminated, truncated && !terminated);
                buf.push(i, acted, reward, flags, false);
                self.books
                    .episodes
                    .record(i, step.scores[i] as f64, step.game_over[i]);
            }
            self.obs.copy_from_slice(step.obs);
        }
        buf.close(&self.obs);
        let shape = (&self.obs[..], n, per, 1);
        let (batch, report) = (&mut self.batch, &mut self.books.report);
        let total = self.config.total_steps;
        learn_from_rollout(&mut *self.learner, buf, shape, batch, report, total)?;
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

    /// Writes the run's state into `dir`: `learner/` (the learner's
    /// [`crate::TrainingState`]) and `trainer.state`. Rollouts are consumed within a
    /// [`FrameOnPolicyTrainer::step`], so nothing else is pending; the environments' own
    /// state is not saved (an Atari emulator's lives in its worker).
    ///
    /// # Errors
    /// A learner without a training state ([`Error::Unavailable`]), an I/O error.
    pub fn save_state(&mut self, dir: &Path) -> Result<()> {
        crate::training_state::save_learner(self.learner.training_state(), dir)?;
        let mut out = StateWriter::new();
        out.usize(self.env.num_envs())
            .usize(self.obs_len)
            .u64(self.config.total_steps)
            .u64(self.config.seed)
            .bool(self.reached_target);
        self.books.save_state(&mut out);
        save_words(&dir.join("trainer.state"), TRAINER_STATE, out.words())
    }

    /// Resumes the run [`FrameOnPolicyTrainer::save_state`] wrote into `dir`, in a trainer
    /// built like the saved one: the learner, counters, report and schedules continue;
    /// the environments start new episodes (reset with the config's seed plus the env
    /// steps so far), whose returns so far are left out of the training returns.
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
        let check = crate::training_state::check_saved;
        let mut src = StateReader::new(&words, TRAINER_STATE);
        let n = self.env.num_envs();
        Error::check_len("environments of the saved run", n, src.usize()?)?;
        let saved_len = src.usize()?;
        Error::check_len(
            "observation length of the saved run",
            self.obs_len,
            saved_len,
        )?;
        check("total_steps", self.config.total_steps, src.u64()?)?;
        check("seed", self.config.seed, src.u64()?)?;
        let reached_target = src.bool()?;
        let books = self.books.read_state(&mut src)?;
        src.finish()?;
        crate::training_state::load_learner(self.learner.training_state(), dir)?;
        self.reached_target = reached_target;
        books.restore(&mut self.books, *self.learner.progress(), Running::Restart);
        let seed = self
            .config
            .seed
            .wrapping_add(self.learner.progress().env_steps);
        self.obs.copy_from_slice(self.env.reset(Some(seed))?);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::agent::Agent;
    use crate::learner::Metrics;
    use emberlab_env::{FrameEnv, FrameStep};

    /// One 1×1×1 frame holding the step count since the reset; reward 1 per step; every
    /// episode is cut short after 3 steps.
    struct Counting {
        t: u8,
    }

    impl FrameEnv for Counting {
        fn frame_shape(&self) -> [usize; 3] {
            [1, 1, 1]
        }
        fn actions(&self) -> usize {
            2
        }
        fn reset(&mut self, _seed: Option<u64>) -> Result<&[u8]> {
            self.t = 0;
            Ok(self.frame())
        }
        fn step(&mut self, _action: usize) -> Result<FrameStep> {
            self.t += 1;
            Ok(FrameStep::new(1.0, false, self.t == 3))
        }
        fn frame(&self) -> &[u8] {
            std::slice::from_ref(&self.t)
        }
    }

    /// A learner whose value of a stack is its frame's byte, and which keeps the rollouts
    /// it is given.
    #[derive(Default)]
    struct Recorder {
        progress: Progress,
        batches: Vec<FrameRolloutBatch>,
    }

    impl Agent for Recorder {
        fn obs_dim(&self) -> usize {
            1
        }
        fn act(&mut self, _obs: &[f32], _explore: bool, _out: &mut ActionBuf) -> Result<()> {
            Err(Error::invalid("observations", "vectors", "images"))
        }
        fn act_pixels(&mut self, obs: &[u8], _explore: bool, out: &mut ActionBuf) -> Result<()> {
            *out.discrete_mut("recorder")? = vec![0; obs.len()];
            Ok(())
        }
    }

    impl OnPolicyLearner for Recorder {
        fn advantage_mode(&self) -> AdvantageMode {
            AdvantageMode::Gae {
                gamma: 0.5,
                lambda: 1.0,
            }
        }
        fn values(&mut self, _obs: &[f32]) -> Result<Option<Vec<f32>>> {
            Ok(None)
        }
        fn values_pixels(&mut self, obs: &[u8]) -> Result<Option<Vec<f32>>> {
            Ok(Some(obs.iter().map(|&b| b as f32).collect()))
        }
        fn update(&mut self, _batch: &crate::RolloutBatch, _step: u64) -> Result<Metrics> {
            Err(Error::invalid("rollout", "vectors", "images"))
        }
        fn update_frames(&mut self, batch: &FrameRolloutBatch, _step: u64) -> Result<Metrics> {
            self.batches.push(batch.clone());
            Ok(Metrics::default())
        }
        fn progress(&mut self) -> &mut Progress {
            &mut self.progress
        }
    }

    /// The games restart in the step that ends them, so a cut-short step bootstraps from
    /// the stack it ended on, γ·V(final), and not from the next game's first stack: the
    /// rollout's returns and advantages are GAE's with that reward and the step terminal.
    #[test]
    fn a_truncated_step_bootstraps_from_its_final_stack() {
        let games = || -> Result<Box<dyn FrameEnv>> { Ok(Box::new(Counting { t: 0 })) };
        let mut env = FrameVecEnv::from_factory(&games, 1, 1).unwrap();
        let mut learner = Recorder::default();
        let config = OnPolicyConfig {
            total_steps: 4,
            n_steps: 4,
            eval_episodes: 1,
            ..OnPolicyConfig::default()
        };
        let report = train_on_policy_frames(&mut learner, &mut env, &games, &config).unwrap();
        assert_eq!((report.env_steps, report.updates), (4, 1));
        let batch = &learner.batches[0];
        // Stacks 0, 1, 2 | cut at 3 (V = 3) | 0 after the restart; then 1 (V = 1).
        assert_eq!(batch.obs, vec![0, 1, 2, 0]);
        // Rewards 1, 1, 1 + 0.5 · 3 (terminal), 1; V = 0, 1, 2, 0, last 1.
        assert_eq!(batch.advantages, vec![2.125, 1.25, 0.5, 1.5]);
        assert_eq!(batch.returns, vec![2.125, 2.25, 2.5, 1.5]);
        assert_eq!(report.episodes, 1);
        assert_eq!(report.recent_train_return, 3.0);
    }
}
