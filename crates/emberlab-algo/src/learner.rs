//! What learns: learners for the two trainer families, the [`Metrics`] and TD errors they
//! report, and the [`Progress`] they carry from one training call to the next.

use crate::agent::Agent;
use crate::checkpoint::Checkpoint;
use crate::training_state::TrainingState;
use emberlab_core::{Batch, Error, Result};
use emberlab_replay::FrameBatch;

/// Named scalar metrics of one update (`critic_loss`, `alpha`, …), in a fixed order.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Metrics(pub Vec<(&'static str, f64)>);

impl Metrics {
    /// The value named `name`, if reported.
    pub fn get(&self, name: &str) -> Option<f64> {
        self.0.iter().find(|(n, _)| *n == name).map(|&(_, v)| v)
    }

    /// Appends a metric.
    pub fn push(&mut self, name: &'static str, value: f64) {
        self.0.push((name, value));
    }
}

/// How far a learner has been trained, over every training call: the trainers read it at
/// the start of a call and add to it, so that a second call continues counters and
/// schedules instead of starting them again.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Progress {
    /// Env steps collected for this learner (all sub-environments).
    pub env_steps: u64,
    /// Updates made (successful ones only).
    pub updates: u64,
}

/// What one off-policy update hands back to the trainer.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Update {
    /// Named scalars of the update.
    pub metrics: Metrics,
    /// `|TD error|` per batch row (before the update), which the trainer writes back as
    /// priorities when the replay sampler uses them; `None` from learners without TD
    /// errors (they cannot train with prioritized replay).
    pub td_errors: Option<Vec<f32>>,
}

/// A learner for the off-policy trainer: one update from a replay batch. It is also the
/// agent that collects experience (through an acting copy that may live on another device).
///
/// Contract: an update that returns an error (a bad batch, a NaN loss) leaves the learner
/// exactly as it was, and usable; the trainers also turn a panic inside `update` into an
/// [`Error::Panicked`].
pub trait OffPolicyLearner: Agent {
    /// One gradient update from `batch` (weight the TD losses by `batch.weights` when they
    /// are not all 1; bootstrap with `batch.discount` when it is not empty); `step` is the
    /// number of updates made before this one (for schedules and error messages).
    ///
    /// # Errors
    /// A batch that does not fit the learner ([`Batch::check`]), and a NaN or infinite loss
    /// ([`Error::Diverged`], returned before any parameter changes).
    fn update(&mut self, batch: &Batch, step: u64) -> Result<Update>;

    /// As [`OffPolicyLearner::update`], from a batch of image observations drawn from
    /// frame replay (`batch.obs`/`next_obs` are stacks of `u8` frames; `batch.discount` is
    /// always filled).
    ///
    /// # Errors
    /// As [`OffPolicyLearner::update`]; default: [`Error::Unavailable`], a learner of
    /// vector observations only.
    fn update_frames(&mut self, batch: &FrameBatch, step: u64) -> Result<Update> {
        let _ = (batch, step);
        Err(crate::agent::pixels_unavailable(
            "updates from image batches",
        ))
    }

    /// Called after every vector step with the number of env steps so far (over every
    /// training call) and the planned total (exploration schedules, step-counted target
    /// updates). Default: nothing.
    fn on_env_steps(&mut self, _env_steps: u64, _total_steps: u64) {}

    /// The learner's counters, which the trainers advance.
    fn progress(&mut self) -> &mut Progress;

    /// The discount γ the learner bootstraps with, if it has one: the trainer checks that
    /// n-step returns use the same.
    fn gamma(&self) -> Option<f64> {
        None
    }

    /// The learner's networks as a [`Checkpoint`], if it can write them (the trainers
    /// refuse a checkpoint config up front otherwise). Default: `None`.
    fn checkpoint(&mut self) -> Option<&mut dyn Checkpoint> {
        None
    }

    /// The learner's whole training state, if it can save and restore it (what resuming a
    /// run exactly needs). Default: `None`.
    fn training_state(&mut self) -> Option<&mut dyn TrainingState> {
        None
    }
}

/// Checks a batch of image observations against a learner's observation length `obs_len`
/// (bytes per stack) and one action value per row: the lengths of the columns a learner
/// reads (observations, actions, rewards, masks, discounts, weights), finite rewards,
/// masks of 0 or 1, discounts in `[0, 1]` and finite non-negative weights.
///
/// # Errors
/// [`Error::InvalidArgument`] or [`Error::Shape`] naming the column and row.
pub fn check_frame_batch(batch: &FrameBatch, obs_len: usize) -> Result<()> {
    let n = batch.len;
    if n == 0 {
        return Err(Error::invalid("batch.len", 0, ">= 1"));
    }
    Error::check_len("batch.obs (len × c·h·w)", n * obs_len, batch.obs.len())?;
    Error::check_len(
        "batch.next_obs (len × c·h·w)",
        n * obs_len,
        batch.next_obs.len(),
    )?;
    for (name, col) in [
        ("batch.action", &batch.action),
        ("batch.reward", &batch.reward),
        ("batch.terminated", &batch.terminated),
        ("batch.discount", &batch.discount),
        ("batch.weights", &batch.weights),
    ] {
        Error::check_len(name, n, col.len())?;
    }
    Error::check_finite_rows("batch.action", &batch.action, 1)?;
    Error::check_finite_rows("batch.reward", &batch.reward, 1)?;
    let bad = |name: &str, col: &[f32], ok: &dyn Fn(f32) -> bool, want: &str| match col
        .iter()
        .position(|&v| !ok(v))
    {
        Some(i) => Err(Error::invalid(format!("{name}[{i}]"), col[i], want)),
        None => Ok(()),
    };
    bad(
        "batch.terminated",
        &batch.terminated,
        &|m| m == 0.0 || m == 1.0,
        "0 or 1",
    )?;
    bad(
        "batch.discount",
        &batch.discount,
        &|d| (0.0..=1.0).contains(&d),
        "a discount in [0, 1]",
    )?;
    bad(
        "batch.weights",
        &batch.weights,
        &|w| w >= 0.0 && w.is_finite(),
        "a finite weight >= 0",
    )
}

/// How the on-policy trainer turns a rollout into advantages.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum AdvantageMode {
    /// GAE(λ) from the learner's value estimates, bootstrapping at the rollout's end and at
    /// truncations (A2C).
    Gae {
        /// Discount γ.
        gamma: f32,
        /// λ in `[0, 1]`.
        lambda: f32,
    },
    /// Monte-Carlo returns of complete episodes (REINFORCE): steps whose episode does not
    /// end inside the rollout are dropped. With a value baseline the advantage is
    /// `G − V(s)`, otherwise `G`.
    MonteCarlo {
        /// Discount γ.
        gamma: f32,
        /// Subtract the learner's value estimate.
        baseline: bool,
    },
}

/// The training rows of one rollout (reset steps and unusable tails already removed), with
/// observations of type `O`: `f32` vectors, or `u8` image stacks ([`FrameRolloutBatch`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RolloutBatch<O = f32> {
    /// Number of rows.
    pub len: usize,
    /// `[len, obs_dim]` observations.
    pub obs: Vec<O>,
    /// `[len, act_dim]` actions as stored (discrete indices as one `f32`).
    pub actions: Vec<f32>,
    /// `[len]` advantages.
    pub advantages: Vec<f32>,
    /// `[len]` value targets (returns).
    pub returns: Vec<f32>,
    /// `[len]` `log π_old(a|s)` of the behaviour policy, recorded when it acted (empty when
    /// the learner does not record them; PPO needs them).
    pub log_probs: Vec<f32>,
    /// `[len]` `V_old(s)` recorded when acting (empty when not recorded; PPO's value
    /// clipping needs them).
    pub values: Vec<f32>,
}

/// A rollout of image observations: each row's observation is a stack of `u8` frames
/// `[k · c, h, w]` (as `emberlab_env::FrameVecEnv` stacks them), `obs_dim` bytes.
pub type FrameRolloutBatch = RolloutBatch<u8>;

impl<O> RolloutBatch<O> {
    /// Every check of [`RolloutBatch::check`] but the observations' finiteness.
    fn check_columns(&self, obs_dim: usize, act_dim: usize) -> Result<()> {
        if self.len == 0 {
            return Err(Error::invalid("rollout.len", 0, ">= 1"));
        }
        let n = self.len;
        Error::check_len("rollout.obs (len × obs_dim)", n * obs_dim, self.obs.len())?;
        Error::check_len(
            "rollout.actions (len × act_dim)",
            n * act_dim,
            self.actions.len(),
        )?;
        Error::check_len("rollout.advantages", n, self.advantages.len())?;
        Error::check_len("rollout.returns", n, self.returns.len())?;
        Error::check_finite_rows("rollout.actions", &self.actions, act_dim)?;
        Error::check_finite_rows("rollout.advantages", &self.advantages, 1)?;
        Error::check_finite_rows("rollout.returns", &self.returns, 1)?;
        for (name, column) in [
            ("rollout.log_probs", &self.log_probs),
            ("rollout.values", &self.values),
        ] {
            if !column.is_empty() {
                Error::check_len(name, n, column.len())?;
                Error::check_finite_rows(name, column, 1)?;
            }
        }
        Ok(())
    }
}

impl RolloutBatch {
    /// Checks that this rollout fits a learner of the given widths: `len` rows in every
    /// column, all values finite. The error names the offending field (and row).
    ///
    /// # Errors
    /// [`Error::Shape`] for a length mismatch, [`Error::NonFinite`] for a NaN or infinity,
    /// [`Error::InvalidArgument`] for an empty rollout.
    pub fn check(&self, obs_dim: usize, act_dim: usize) -> Result<()> {
        self.check_columns(obs_dim, act_dim)?;
        Error::check_finite_rows("rollout.obs", &self.obs, obs_dim)
    }
}

impl FrameRolloutBatch {
    /// Checks that this image rollout fits a learner whose observations are `obs_len`
    /// bytes: `len` rows in every column, every value finite.
    ///
    /// # Errors
    /// As [`RolloutBatch::check`].
    pub fn check_frames(&self, obs_len: usize, act_dim: usize) -> Result<()> {
        self.check_columns(obs_len, act_dim)
    }
}

/// Checks that every stored discrete action (an `f32` per row) is an integer in
/// `0..actions`; the error names `field` and the row.
///
/// # Errors
/// [`Error::InvalidAction`] for the first action out of range.
pub fn check_discrete_actions(field: &str, actions: &[f32], n: usize) -> Result<()> {
    match actions
        .iter()
        .position(|&a| !(a >= 0.0 && a < n as f32 && a.fract() == 0.0))
    {
        None => Ok(()),
        Some(i) => Err(Error::InvalidAction {
            action: format!("{} ({field}[{i}])", actions[i]),
            space: format!("Discrete({n})"),
        }),
    }
}

/// What the behaviour policy recorded while acting for a rollout, per observation row
/// (see [`OnPolicyLearner::act_rollout`]). Each field is either empty (not recorded) or
/// complete.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ActingRecord {
    /// `[rows, act_dim]` actions to train on when they differ from the ones the environment
    /// gets (a Gaussian sample before it is clipped to the action box); empty: the
    /// environment's actions.
    pub stored_actions: Vec<f32>,
    /// `[rows]` `log π(a|s)` of the chosen actions under the acting policy.
    pub log_probs: Vec<f32>,
    /// `[rows]` `V(s)` of the acting network.
    pub values: Vec<f32>,
}

impl ActingRecord {
    /// Empties every field.
    pub fn clear(&mut self) {
        self.stored_actions.clear();
        self.log_probs.clear();
        self.values.clear();
    }
}

/// A learner for the on-policy trainer: one update from a rollout. The same contract as
/// [`OffPolicyLearner`]: an error leaves it unchanged and usable.
pub trait OnPolicyLearner: Agent {
    /// Acts for a rollout (exploring) and records what the behaviour policy knew at that
    /// moment: the log-probabilities of its actions and its value estimates, which stay
    /// correct when the acting copy lags the learner. Default: [`Agent::act`] with nothing
    /// recorded (the trainer then asks [`OnPolicyLearner::values`] after the rollout).
    ///
    /// # Errors
    /// As [`Agent::act`].
    fn act_rollout(
        &mut self,
        obs: &[f32],
        out: &mut crate::agent::ActionBuf,
        record: &mut ActingRecord,
    ) -> Result<()> {
        record.clear();
        self.act(obs, true, out)
    }

    /// Called before each update with the env steps so far (over every training call) and
    /// the planned total (learning-rate and clip-range schedules). Default: nothing.
    fn on_env_steps(&mut self, _env_steps: u64, _total_steps: u64) {}

    /// How advantages are computed for this learner.
    fn advantage_mode(&self) -> AdvantageMode;

    /// Value estimates `V(s)` for the observation rows of `obs` (`batch × obs_dim`), or
    /// `None` for a learner without a critic.
    ///
    /// # Errors
    /// Observations whose length is not a multiple of the observation width.
    fn values(&mut self, obs: &[f32]) -> Result<Option<Vec<f32>>>;

    /// One update from a rollout; `step` is the number of updates made before this one.
    ///
    /// # Errors
    /// A rollout that does not fit the learner ([`RolloutBatch::check`], actions out of
    /// range), and a NaN or infinite loss (before any parameter changes).
    fn update(&mut self, batch: &RolloutBatch, step: u64) -> Result<Metrics>;

    /// As [`OnPolicyLearner::act_rollout`], for image stacks (see
    /// [`crate::Agent::act_pixels`]). Default: [`crate::Agent::act_pixels`] with nothing
    /// recorded.
    ///
    /// # Errors
    /// As [`crate::Agent::act_pixels`].
    fn act_rollout_pixels(
        &mut self,
        obs: &[u8],
        out: &mut crate::agent::ActionBuf,
        record: &mut ActingRecord,
    ) -> Result<()> {
        record.clear();
        self.act_pixels(obs, true, out)
    }

    /// As [`OnPolicyLearner::values`], for image stacks.
    ///
    /// # Errors
    /// Default: [`Error::Unavailable`], a learner of vector observations only.
    fn values_pixels(&mut self, obs: &[u8]) -> Result<Option<Vec<f32>>> {
        let _ = obs;
        Err(crate::agent::pixels_unavailable("values of images"))
    }

    /// As [`OnPolicyLearner::update`], from a rollout of image stacks.
    ///
    /// # Errors
    /// As [`OnPolicyLearner::update`]; default: [`Error::Unavailable`], a learner of
    /// vector observations only.
    fn update_frames(&mut self, batch: &FrameRolloutBatch, step: u64) -> Result<Metrics> {
        let _ = (batch, step);
        Err(crate::agent::pixels_unavailable(
            "updates from image rollouts",
        ))
    }

    /// The learner's counters, which the trainers advance.
    fn progress(&mut self) -> &mut Progress;

    /// The learner's networks as a [`Checkpoint`], if it can write them. Default: `None`.
    fn checkpoint(&mut self) -> Option<&mut dyn Checkpoint> {
        None
    }

    /// The learner's whole training state, if it can save and restore it (what resuming a
    /// run exactly needs). Default: `None`.
    fn training_state(&mut self) -> Option<&mut dyn TrainingState> {
        None
    }
}

/// A borrowed learner trains as the learner: a trainer drives `&mut dyn OffPolicyLearner`
/// (a learner chosen at run time) as it drives a concrete one.
impl<T: OffPolicyLearner + ?Sized> OffPolicyLearner for &mut T {
    fn update(&mut self, batch: &Batch, step: u64) -> Result<Update> {
        (**self).update(batch, step)
    }

    fn update_frames(&mut self, batch: &FrameBatch, step: u64) -> Result<Update> {
        (**self).update_frames(batch, step)
    }

    fn on_env_steps(&mut self, env_steps: u64, total_steps: u64) {
        (**self).on_env_steps(env_steps, total_steps);
    }

    fn progress(&mut self) -> &mut Progress {
        (**self).progress()
    }

    fn gamma(&self) -> Option<f64> {
        (**self).gamma()
    }

    fn checkpoint(&mut self) -> Option<&mut dyn Checkpoint> {
        (**self).checkpoint()
    }

    fn training_state(&mut self) -> Option<&mut dyn TrainingState> {
        (**self).training_state()
    }
}

/// A borrowed learner trains as the learner (see the [`OffPolicyLearner`] impl).
impl<T: OnPolicyLearner + ?Sized> OnPolicyLearner for &mut T {
    fn act_rollout(
        &mut self,
        obs: &[f32],
        out: &mut crate::agent::ActionBuf,
        record: &mut ActingRecord,
    ) -> Result<()> {
        (**self).act_rollout(obs, out, record)
    }

    fn on_env_steps(&mut self, env_steps: u64, total_steps: u64) {
        (**self).on_env_steps(env_steps, total_steps);
    }

    fn advantage_mode(&self) -> AdvantageMode {
        (**self).advantage_mode()
    }

    fn values(&mut self, obs: &[f32]) -> Result<Option<Vec<f32>>> {
        (**self).values(obs)
    }

    fn update(&mut self, batch: &RolloutBatch, step: u64) -> Result<Metrics> {
        (**self).update(batch, step)
    }

    fn act_rollout_pixels(
        &mut self,
        obs: &[u8],
        out: &mut crate::agent::ActionBuf,
        record: &mut ActingRecord,
    ) -> Result<()> {
        (**self).act_rollout_pixels(obs, out, record)
    }

    fn values_pixels(&mut self, obs: &[u8]) -> Result<Option<Vec<f32>>> {
        (**self).values_pixels(obs)
    }

    fn update_frames(&mut self, batch: &FrameRolloutBatch, step: u64) -> Result<Metrics> {
        (**self).update_frames(batch, step)
    }

    fn progress(&mut self) -> &mut Progress {
        (**self).progress()
    }

    fn checkpoint(&mut self) -> Option<&mut dyn Checkpoint> {
        (**self).checkpoint()
    }

    fn training_state(&mut self) -> Option<&mut dyn TrainingState> {
        (**self).training_state()
    }
}
