//! The environment interface, with Gymnasium's semantics.

use crate::error::{Error, Result};
use crate::space::Space;
use crate::state::{StateReader, StateWriter};

/// An action handed to [`Env::step`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Action<'a> {
    /// A continuous action (for a [`Space::Box`] action space).
    Continuous(&'a [f32]),
    /// A discrete action (for a [`Space::Discrete`] action space).
    Discrete(usize),
}

/// What one step returns besides the observation (which is written into the caller's
/// buffer so that stepping does not allocate).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct StepInfo {
    /// The reward for this step.
    pub reward: f64,
    /// The episode ended in a terminal state of the MDP (do not bootstrap).
    pub terminated: bool,
    /// The episode was cut short (time limit etc.); the next state is not terminal.
    pub truncated: bool,
}

/// One step's full result, for callers who prefer an owned value.
#[derive(Clone, Debug, PartialEq)]
pub struct Step {
    /// The observation after the step.
    pub obs: Vec<f32>,
    /// The reward for this step.
    pub reward: f64,
    /// Terminal state reached.
    pub terminated: bool,
    /// Episode cut short.
    pub truncated: bool,
}

/// A reinforcement-learning environment with Gymnasium semantics: `reset(seed)` starts an
/// episode, `step(action)` advances it and reports `terminated` (a terminal MDP state) apart
/// from `truncated` (cut short, e.g. by a time limit).
///
/// Implementations write observations into caller-owned slices of length
/// `observation_space().flat_dim()`; [`Env::reset`] and [`Env::step`] are allocating
/// conveniences over them. An action outside the action space is an `Err` naming the action
/// and the space.
pub trait Env: Send {
    /// The space observations belong to.
    fn observation_space(&self) -> &Space;
    /// The space actions must belong to.
    fn action_space(&self) -> &Space;
    /// Starts a new episode, reseeding the environment's generator if `seed` is given, and
    /// writes the first observation into `obs`.
    fn reset_into(&mut self, seed: Option<u64>, obs: &mut [f32]) -> Result<()>;
    /// Advances one step and writes the next observation into `obs`.
    fn step_into(&mut self, action: Action<'_>, obs: &mut [f32]) -> Result<StepInfo>;

    /// Appends everything that determines this environment's future (physical state,
    /// generator, step counters) to `out`, so that [`Env::load_state`] on an environment
    /// built the same way continues exactly. Trainers call it to resume runs.
    ///
    /// # Errors
    /// The default: [`Error::Unavailable`] (this environment cannot be snapshotted).
    fn save_state(&self, out: &mut StateWriter) -> Result<()> {
        let _ = out;
        Err(no_snapshot())
    }

    /// Restores what [`Env::save_state`] wrote.
    ///
    /// # Errors
    /// A snapshot of something else (wrong length or values); the default:
    /// [`Error::Unavailable`].
    fn load_state(&mut self, src: &mut StateReader<'_>) -> Result<()> {
        let _ = src;
        Err(no_snapshot())
    }

    /// [`Env::reset_into`] returning a fresh vector.
    fn reset(&mut self, seed: Option<u64>) -> Result<Vec<f32>> {
        let mut obs = vec![0.0; self.observation_space().flat_dim()];
        self.reset_into(seed, &mut obs)?;
        Ok(obs)
    }

    /// [`Env::step_into`] returning an owned [`Step`].
    fn step(&mut self, action: Action<'_>) -> Result<Step> {
        let mut obs = vec![0.0; self.observation_space().flat_dim()];
        let info = self.step_into(action, &mut obs)?;
        Ok(Step {
            obs,
            reward: info.reward,
            terminated: info.terminated,
            truncated: info.truncated,
        })
    }
}

/// A boxed environment (e.g. `Box<dyn Env>` from a registry) is itself an environment, so
/// wrappers generic over `E: Env` accept it.
impl<E: Env + ?Sized> Env for Box<E> {
    fn observation_space(&self) -> &Space {
        (**self).observation_space()
    }

    fn action_space(&self) -> &Space {
        (**self).action_space()
    }

    fn reset_into(&mut self, seed: Option<u64>, obs: &mut [f32]) -> Result<()> {
        (**self).reset_into(seed, obs)
    }

    fn step_into(&mut self, action: Action<'_>, obs: &mut [f32]) -> Result<StepInfo> {
        (**self).step_into(action, obs)
    }

    fn save_state(&self, out: &mut StateWriter) -> Result<()> {
        (**self).save_state(out)
    }

    fn load_state(&mut self, src: &mut StateReader<'_>) -> Result<()> {
        (**self).load_state(src)
    }
}

/// The error of an environment without snapshots.
pub fn no_snapshot() -> Error {
    Error::Unavailable {
        what: "an exact snapshot of this environment".into(),
        hint: "implement `Env::save_state` and `Env::load_state` for it to resume runs exactly"
            .into(),
    }
}
