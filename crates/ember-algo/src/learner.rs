//! What learns: [`Learner`]s for the two trainer families, and the [`Metrics`] they report.

use crate::agent::Agent;
use crate::checkpoint::Checkpoint;
use ember_core::{Batch, Result};

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

/// A learner for the off-policy trainer: one update from a replay batch. It is also the
/// agent that collects experience (through an acting copy that may live on another device).
pub trait OffPolicyLearner: Agent + Checkpoint {
    /// One gradient update from `batch`; `step` is the update count (used in error
    /// messages). A NaN or infinite loss is an [`ember_core::Error::Diverged`] naming the
    /// loss and the step, returned before any parameter changes.
    fn update(&mut self, batch: &Batch, step: u64) -> Result<Metrics>;

    /// Called after every vector step with the number of env steps so far and the planned
    /// total (exploration schedules, step-counted target updates). Default: nothing.
    fn on_env_steps(&mut self, _env_steps: u64, _total_steps: u64) {}
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

/// The training rows of one rollout (reset steps and unusable tails already removed).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct RolloutBatch {
    /// Number of rows.
    pub len: usize,
    /// `[len, obs_dim]` observations.
    pub obs: Vec<f32>,
    /// `[len, act_dim]` actions as stored (discrete indices as one `f32`).
    pub actions: Vec<f32>,
    /// `[len]` advantages.
    pub advantages: Vec<f32>,
    /// `[len]` value targets (returns).
    pub returns: Vec<f32>,
}

/// A learner for the on-policy trainer: one update from a rollout.
pub trait OnPolicyLearner: Agent + Checkpoint {
    /// How advantages are computed for this learner.
    fn advantage_mode(&self) -> AdvantageMode;

    /// Value estimates `V(s)` for the observation rows of `obs` (`batch × obs_dim`), or
    /// `None` for a learner without a critic.
    fn values(&mut self, obs: &[f32]) -> Result<Option<Vec<f32>>>;

    /// One update from a rollout; `step` is the update count.
    fn update(&mut self, batch: &RolloutBatch, step: u64) -> Result<Metrics>;
}
