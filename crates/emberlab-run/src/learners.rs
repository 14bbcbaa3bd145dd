//! A learner as the command runs it, whatever its algorithm: [`RunLearner`] is what `ember
//! train`, `--resume`, `eval`, `export` and `serve` ask of it. A learner of your own gets
//! there by wrapping it in [`OffPolicy`] or [`OnPolicy`] (see [`crate::kinds`] for how the
//! command builds it from a config section).

use crate::error::{Result, RunError};
use emberlab_algo::{
    ActingRecord, ActionBuf, AdvantageMode, Agent, Checkpoint, Devices, Metrics, OffPolicyLearner,
    OnPolicyLearner, OnnxPolicy, PolicyWeights, Progress, RolloutBatch, TrainingState, Update,
};
use emberlab_backend::DeviceSpec;
use emberlab_core::Batch;
use emberlab_core::Result as CoreResult;

/// The learner as its trainer drives it.
pub enum Trainee<'a> {
    /// Driven by the off-policy trainer (replay).
    OffPolicy(&'a mut dyn OffPolicyLearner),
    /// Driven by the on-policy trainer (rollouts).
    OnPolicy(&'a mut dyn OnPolicyLearner),
}

/// A learner the `ember` command runs: trains it, checkpoints and resumes it exactly,
/// evaluates and exports its policy. Object-safe: the command holds `Box<dyn RunLearner>`.
pub trait RunLearner: Send {
    /// The learner as an agent (evaluation, `eval --gif`).
    fn agent(&mut self) -> &mut dyn Agent;

    /// Its greedy policy, for export as ONNX.
    fn onnx(&self) -> &dyn OnnxPolicy;

    /// Its weight checkpoints (the best weights, `eval`).
    fn checkpoint(&mut self) -> &mut dyn Checkpoint;

    /// Its whole training state (exact resume).
    fn training_state(&mut self) -> &mut dyn TrainingState;

    /// The learner as its trainer drives it.
    fn trainee(&mut self) -> Trainee<'_>;

    /// Its acting policy as flat weights (what the distributed learner publishes to actors
    /// that act locally), if it travels so.
    fn policy_weights(&mut self) -> Option<&mut dyn PolicyWeights>;

    /// The learner as the distributed learner (`ember serve`) takes it: off-policy learners
    /// that publish their policy's weights. `Err` gives the learner back.
    ///
    /// # Errors
    /// An on-policy learner.
    fn into_served(self: Box<Self>) -> std::result::Result<Served, Box<dyn RunLearner>>;
}

/// An off-policy learner (SAC, TD3, DQN, yours) as the command runs it. Its trainer gets
/// the learner's checkpoints and training state from its `Persist` list, so the learner
/// itself need not offer them (`OffPolicyLearner::checkpoint` keeps its default).
pub struct OffPolicy<L>(pub L);

/// An on-policy learner (PPO, A2C, REINFORCE, yours) as the command runs it; checkpoints
/// and training state as for [`OffPolicy`].
pub struct OnPolicy<L>(pub L);

impl<L: Agent> Agent for OffPolicy<L> {
    fn obs_dim(&self) -> usize {
        self.0.obs_dim()
    }

    fn act(&mut self, obs: &[f32], explore: bool, out: &mut ActionBuf) -> CoreResult<()> {
        self.0.act(obs, explore, out)
    }

    fn act_pixels(
        &mut self,
        obs: &[u8],
        explore: bool,
        out: &mut emberlab_algo::ActionBuf,
    ) -> emberlab_core::Result<()> {
        self.0.act_pixels(obs, explore, out)
    }
}

impl<L: OffPolicyLearner + Checkpoint + TrainingState> OffPolicyLearner for OffPolicy<L> {
    fn update(&mut self, batch: &Batch, step: u64) -> CoreResult<Update> {
        self.0.update(batch, step)
    }

    fn update_frames(
        &mut self,
        batch: &emberlab_algo::FrameBatch,
        step: u64,
    ) -> emberlab_core::Result<Update> {
        self.0.update_frames(batch, step)
    }

    fn on_env_steps(&mut self, env_steps: u64, total_steps: u64) {
        self.0.on_env_steps(env_steps, total_steps);
    }

    fn progress(&mut self) -> &mut Progress {
        self.0.progress()
    }

    fn gamma(&self) -> Option<f64> {
        self.0.gamma()
    }

    fn checkpoint(&mut self) -> Option<&mut dyn Checkpoint> {
        Some(&mut self.0)
    }

    fn training_state(&mut self) -> Option<&mut dyn TrainingState> {
        Some(&mut self.0)
    }
}

impl<L: PolicyWeights> PolicyWeights for OffPolicy<L> {
    fn policy_weights(&mut self) -> Vec<f32> {
        self.0.policy_weights()
    }

    fn load_policy_weights(&mut self, weights: &[f32]) -> CoreResult<()> {
        self.0.load_policy_weights(weights)
    }
}

impl<L: Agent> Agent for OnPolicy<L> {
    fn obs_dim(&self) -> usize {
        self.0.obs_dim()
    }

    fn act(&mut self, obs: &[f32], explore: bool, out: &mut ActionBuf) -> CoreResult<()> {
        self.0.act(obs, explore, out)
    }

    fn act_pixels(
        &mut self,
        obs: &[u8],
        explore: bool,
        out: &mut emberlab_algo::ActionBuf,
    ) -> emberlab_core::Result<()> {
        self.0.act_pixels(obs, explore, out)
    }
}

impl<L: OnPolicyLearner + Checkpoint + TrainingState> OnPolicyLearner for OnPolicy<L> {
    fn act_rollout(
        &mut self,
        obs: &[f32],
        out: &mut ActionBuf,
        record: &mut ActingRecord,
    ) -> CoreResult<()> {
        self.0.act_rollout(obs, out, record)
    }

    fn on_env_steps(&mut self, env_steps: u64, total_steps: u64) {
        self.0.on_env_steps(env_steps, total_steps);
    }

    fn advantage_mode(&self) -> AdvantageMode {
        self.0.advantage_mode()
    }

    fn values(&mut self, obs: &[f32]) -> CoreResult<Option<Vec<f32>>> {
        self.0.values(obs)
    }

    fn update(&mut self, batch: &RolloutBatch, step: u64) -> CoreResult<Metrics> {
        self.0.update(batch, step)
    }

    fn act_rollout_pixels(
        &mut self,
        obs: &[u8],
        out: &mut ActionBuf,
        record: &mut ActingRecord,
    ) -> CoreResult<()> {
        self.0.act_rollout_pixels(obs, out, record)
    }

    fn values_pixels(&mut self, obs: &[u8]) -> CoreResult<Option<Vec<f32>>> {
        self.0.values_pixels(obs)
    }

    fn update_frames(
        &mut self,
        batch: &emberlab_algo::FrameRolloutBatch,
        step: u64,
    ) -> CoreResult<Metrics> {
        self.0.update_frames(batch, step)
    }

    fn progress(&mut self) -> &mut Progress {
        self.0.progress()
    }

    fn checkpoint(&mut self) -> Option<&mut dyn Checkpoint> {
        Some(&mut self.0)
    }

    fn training_state(&mut self) -> Option<&mut dyn TrainingState> {
        Some(&mut self.0)
    }
}

impl<L> RunLearner for OffPolicy<L>
where
    L: OffPolicyLearner + PolicyWeights + OnnxPolicy + Checkpoint + TrainingState + Send + 'static,
{
    fn agent(&mut self) -> &mut dyn Agent {
        &mut self.0
    }

    fn onnx(&self) -> &dyn OnnxPolicy {
        &self.0
    }

    fn checkpoint(&mut self) -> &mut dyn Checkpoint {
        &mut self.0
    }

    fn training_state(&mut self) -> &mut dyn TrainingState {
        &mut self.0
    }

    fn trainee(&mut self) -> Trainee<'_> {
        Trainee::OffPolicy(self)
    }

    fn policy_weights(&mut self) -> Option<&mut dyn PolicyWeights> {
        Some(&mut self.0)
    }

    fn into_served(self: Box<Self>) -> std::result::Result<Served, Box<dyn RunLearner>> {
        Ok(Served(self))
    }
}

impl<L> RunLearner for OnPolicy<L>
where
    L: OnPolicyLearner + OnnxPolicy + Checkpoint + TrainingState + Send + 'static,
{
    fn agent(&mut self) -> &mut dyn Agent {
        &mut self.0
    }

    fn onnx(&self) -> &dyn OnnxPolicy {
        &self.0
    }

    fn checkpoint(&mut self) -> &mut dyn Checkpoint {
        &mut self.0
    }

    fn training_state(&mut self) -> &mut dyn TrainingState {
        &mut self.0
    }

    fn trainee(&mut self) -> Trainee<'_> {
        Trainee::OnPolicy(self)
    }

    fn policy_weights(&mut self) -> Option<&mut dyn PolicyWeights> {
        None
    }

    fn into_served(self: Box<Self>) -> std::result::Result<Served, Box<dyn RunLearner>> {
        Err(self)
    }
}

/// What the distributed learner needs of a learner: off-policy updates and published
/// policy weights, movable to its thread.
pub trait ServedLearner: OffPolicyLearner + PolicyWeights + Send {}

impl<T: OffPolicyLearner + PolicyWeights + Send> ServedLearner for T {}

/// A learner chosen at run time, owned, as the distributed learner takes it.
pub struct Served(Box<dyn ServedLearner>);

impl Agent for Served {
    fn obs_dim(&self) -> usize {
        self.0.obs_dim()
    }

    fn act(
        &mut self,
        obs: &[f32],
        explore: bool,
        out: &mut emberlab_algo::ActionBuf,
    ) -> emberlab_core::Result<()> {
        self.0.act(obs, explore, out)
    }

    fn act_pixels(
        &mut self,
        obs: &[u8],
        explore: bool,
        out: &mut emberlab_algo::ActionBuf,
    ) -> emberlab_core::Result<()> {
        self.0.act_pixels(obs, explore, out)
    }
}

impl OffPolicyLearner for Served {
    fn update(&mut self, batch: &Batch, step: u64) -> emberlab_core::Result<Update> {
        self.0.update(batch, step)
    }

    fn update_frames(
        &mut self,
        batch: &emberlab_algo::FrameBatch,
        step: u64,
    ) -> emberlab_core::Result<Update> {
        self.0.update_frames(batch, step)
    }

    fn on_env_steps(&mut self, env_steps: u64, total_steps: u64) {
        self.0.on_env_steps(env_steps, total_steps);
    }

    fn progress(&mut self) -> &mut Progress {
        self.0.progress()
    }

    fn gamma(&self) -> Option<f64> {
        self.0.gamma()
    }

    fn checkpoint(&mut self) -> Option<&mut dyn Checkpoint> {
        self.0.checkpoint()
    }

    fn training_state(&mut self) -> Option<&mut dyn TrainingState> {
        self.0.training_state()
    }
}

impl PolicyWeights for Served {
    fn policy_weights(&mut self) -> Vec<f32> {
        self.0.policy_weights()
    }

    fn load_policy_weights(&mut self, weights: &[f32]) -> emberlab_core::Result<()> {
        self.0.load_policy_weights(weights)
    }
}

/// The learn/act devices a config names; a backend that is not compiled in names the
/// cargo feature that adds it.
///
/// # Errors
/// A malformed device or one not compiled into this binary.
pub fn devices(device: &str) -> Result<Devices> {
    let spec: DeviceSpec = device.parse()?;
    let d = spec.device().map_err(|e| {
        RunError::Device(format!(
            "device `{device}` is not available in this `ember` ({e}); build `ember` with \
             `cargo build --release -p emberlab-cli --features {}` (libtorch devices: \
             scripts/setup-libtorch.sh first)",
            spec.backend().feature()
        ))
    })?;
    Ok(Devices::same(&d))
}
