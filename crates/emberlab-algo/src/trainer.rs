//! [`Trainer`]: what the off-policy and on-policy trainers have in common when driven one
//! step at a time (by a command-line front end, a scheduler, a test), and the state files
//! both write.

use crate::agent::Agent;
use crate::checkpoint::Checkpoint;
use crate::frame_off_policy::FrameOffPolicyTrainer;
use crate::frame_on_policy::FrameOnPolicyTrainer;
use crate::learner::{OffPolicyLearner, OnPolicyLearner};
use crate::off_policy::OffPolicyTrainer;
use crate::on_policy::OnPolicyTrainer;
use crate::report::TrainReport;
use emberlab_core::Result;
use emberlab_replay::Sampler;
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
    /// observations (save them beside weights: [`emberlab_env::ObsNormalizer::save_file`]).
    fn obs_normalizer(&self) -> Option<emberlab_env::ObsNormalizer> {
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

impl<L: OffPolicyLearner, S: Sampler> Trainer for FrameOffPolicyTrainer<'_, L, S> {
    fn step(&mut self) -> Result<()> {
        FrameOffPolicyTrainer::step(self)
    }
    fn is_done(&self) -> bool {
        FrameOffPolicyTrainer::is_done(self)
    }
    fn report(&self) -> &TrainReport {
        FrameOffPolicyTrainer::report(self)
    }
    fn save_state(&mut self, dir: &Path) -> Result<()> {
        FrameOffPolicyTrainer::save_state(self, dir)
    }
    fn load_state(&mut self, dir: &Path) -> Result<()> {
        FrameOffPolicyTrainer::load_state(self, dir)
    }
    fn agent(&mut self) -> &mut dyn Agent {
        self.learner()
    }
    fn checkpoint(&mut self) -> Option<&mut dyn Checkpoint> {
        self.learner().checkpoint()
    }
    fn finish(self: Box<Self>) -> Result<TrainReport> {
        FrameOffPolicyTrainer::finish(*self)
    }
}

impl<L: OnPolicyLearner> Trainer for FrameOnPolicyTrainer<'_, L> {
    fn step(&mut self) -> Result<()> {
        FrameOnPolicyTrainer::step(self)
    }
    fn is_done(&self) -> bool {
        FrameOnPolicyTrainer::is_done(self)
    }
    fn report(&self) -> &TrainReport {
        FrameOnPolicyTrainer::report(self)
    }
    fn save_state(&mut self, dir: &Path) -> Result<()> {
        FrameOnPolicyTrainer::save_state(self, dir)
    }
    fn load_state(&mut self, dir: &Path) -> Result<()> {
        FrameOnPolicyTrainer::load_state(self, dir)
    }
    fn agent(&mut self) -> &mut dyn Agent {
        self.learner()
    }
    fn checkpoint(&mut self) -> Option<&mut dyn Checkpoint> {
        self.learner().checkpoint()
    }
    fn finish(self: Box<Self>) -> Result<TrainReport> {
        FrameOnPolicyTrainer::finish(*self)
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
    fn obs_normalizer(&self) -> Option<emberlab_env::ObsNormalizer> {
        OnPolicyTrainer::obs_normalizer(self)
    }
    fn finish(self: Box<Self>) -> Result<TrainReport> {
        OnPolicyTrainer::finish(*self)
    }
}
