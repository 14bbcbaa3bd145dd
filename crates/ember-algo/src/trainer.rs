//! [`Trainer`]: what the off-policy and on-policy trainers have in common when driven one
//! step at a time (by a command-line front end, a scheduler, a test), and the state files
//! both write.

use crate::agent::Agent;
use crate::checkpoint::Checkpoint;
use crate::learner::{OffPolicyLearner, OnPolicyLearner};
use crate::off_policy::OffPolicyTrainer;
use crate::on_policy::OnPolicyTrainer;
use crate::report::TrainReport;
use crate::training_state::TrainingState;
use ember_core::state::{StateReader, StateWriter, save_words};
use ember_core::{Error, Result};
use ember_env::VecEnv;
use ember_replay::Sampler;
use std::path::Path;

/// A training run driven one step at a time, whose whole state can be saved and restored.
pub trait Trainer {
    /// One step of the loop (a vector step and its updates, or a rollout and its update).
    ///
    /// # Errors
    /// The first error of the environment or the learner; drop the trainer after one.
    fn step(&mut self) -> Result<()>;

    /// Whether the budget is spent or the target return was reached.
    fn is_done(&self) -> bool;

    /// The run so far.
    fn report(&self) -> &TrainReport;

    /// Writes the run's whole state into `dir`.
    ///
    /// # Errors
    /// Something without exact snapshots, an I/O error.
    fn save_state(&mut self, dir: &Path) -> Result<()>;

    /// Restores a state [`Trainer::save_state`] wrote; nothing changes on an error.
    ///
    /// # Errors
    /// A missing, damaged or foreign state.
    fn load_state(&mut self, dir: &Path) -> Result<()>;

    /// The learner as an agent (to evaluate it, or act with it).
    fn agent(&mut self) -> &mut dyn Agent;

    /// The learner's weight checkpoints, if it has them.
    fn checkpoint(&mut self) -> Option<&mut dyn Checkpoint>;

    /// The observation statistics the learner acts through, when the trainer normalises
    /// observations (save them beside weights: [`ember_env::ObsNormalizer::save_file`]).
    fn obs_normalizer(&self) -> Option<ember_env::ObsNormalizer> {
        None
    }

    /// The final checkpoint and evaluation, and the report.
    ///
    /// # Errors
    /// An error writing the checkpoint or evaluating.
    fn finish(self: Box<Self>) -> Result<TrainReport>;
}

impl<L: OffPolicyLearner, S: Sampler> Trainer for OffPolicyTrainer<'_, L, S> {
    fn step(&mut self) -> Result<()> {
        OffPolicyTrainer::step(self)
    }
    fn is_done(&self) -> bool {
        OffPolicyTrainer::is_done(self)
    }
    fn report(&self) -> &TrainReport {
        OffPolicyTrainer::report(self)
    }
    fn save_state(&mut self, dir: &Path) -> Result<()> {
        OffPolicyTrainer::save_state(self, dir)
    }
    fn load_state(&mut self, dir: &Path) -> Result<()> {
        OffPolicyTrainer::load_state(self, dir)
    }
    fn agent(&mut self) -> &mut dyn Agent {
        self.learner()
    }
    fn checkpoint(&mut self) -> Option<&mut dyn Checkpoint> {
        self.learner().checkpoint()
    }
    fn finish(self: Box<Self>) -> Result<TrainReport> {
        OffPolicyTrainer::finish(*self)
    }
}

impl<L: OnPolicyLearner> Trainer for OnPolicyTrainer<'_, L> {
    fn step(&mut self) -> Result<()> {
        OnPolicyTrainer::step(self)
    }
    fn is_done(&self) -> bool {
        OnPolicyTrainer::is_done(self)
    }
    fn report(&self) -> &TrainReport {
        OnPolicyTrainer::report(self)
    }
    fn save_state(&mut self, dir: &Path) -> Result<()> {
        OnPolicyTrainer::save_state(self, dir)
    }
    fn load_state(&mut self, dir: &Path) -> Result<()> {
        OnPolicyTrainer::load_state(self, dir)
    }
    fn agent(&mut self) -> &mut dyn Agent {
        self.learner()
    }
    fn checkpoint(&mut self) -> Option<&mut dyn Checkpoint> {
        self.learner().checkpoint()
    }
    fn obs_normalizer(&self) -> Option<ember_env::ObsNormalizer> {
        OnPolicyTrainer::obs_normalizer(self)
    }
    fn finish(self: Box<Self>) -> Result<TrainReport> {
        OnPolicyTrainer::finish(*self)
    }
}

/// The learner's missing [`TrainingState`].
fn no_training_state() -> Error {
    Error::Unavailable {
        what: "the training state of this learner".into(),
        hint: "exact resume needs a learner whose `training_state()` returns one".into(),
    }
}

/// Writes `learner/` (the learner's training state) and `env.state` into `dir`.
pub(crate) fn save_learner_and_env(
    learner: Option<&mut dyn TrainingState>,
    env: &dyn VecEnv,
    dir: &Path,
) -> Result<()> {
    let learner = learner.ok_or_else(no_training_state)?;
    let mut words = StateWriter::new();
    env.save_state(&mut words)?;
    let learner_dir = dir.join("learner");
    std::fs::create_dir_all(&learner_dir).map_err(|source| Error::Io {
        path: learner_dir.clone(),
        source,
    })?;
    learner.save_state(&learner_dir)?;
    save_words(&dir.join("env.state"), "vector env", words.words())
}

/// Restores the environments from `env_words`, then the learner from `dir/learner`; if
/// either fails, the environments are put back as they were (the learner restores all or
/// nothing itself). Call after every other part of the state was read and checked.
pub(crate) fn load_learner_and_env(
    learner: Option<&mut dyn TrainingState>,
    env: &mut dyn VecEnv,
    env_words: &[u64],
    dir: &Path,
) -> Result<()> {
    let learner = learner.ok_or_else(no_training_state)?;
    let mut backup = StateWriter::new();
    env.save_state(&mut backup)?;
    let mut src = StateReader::new(env_words, "vector env");
    let loaded = env
        .load_state(&mut src)
        .and_then(|()| src.finish())
        .and_then(|()| learner.load_state(&dir.join("learner")));
    if loaded.is_err() {
        // Put the environments back as they were (their own snapshot cannot fail to load).
        let _ = env.load_state(&mut StateReader::new(backup.words(), "vector env"));
    }
    loaded
}

/// The saved run's `field` must equal this run's.
pub(crate) fn check_saved(field: &str, ours: u64, saved: u64) -> Result<()> {
    if ours == saved {
        Ok(())
    } else {
        Err(Error::invalid(
            field,
            ours,
            format!("the saved run's {saved} (resume with the run's own config)"),
        ))
    }
}
