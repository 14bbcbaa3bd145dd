//! The [`ClassicEnv`] trait: what the registry and the golden-trace tests need of a
//! classic-control environment besides [`Env`].

use emberlab_core::{Env, Result};

/// A Gymnasium classic-control environment: its registered id and time limit, and access to
/// its physical state (for tests, golden traces and planning).
///
/// The state is exchanged as `f64` whatever the environment keeps internally; an environment
/// that keeps `f32` state (e.g. `MountainCarContinuous-v0`) rounds what it is given.
pub trait ClassicEnv: Env + Default + Clone + 'static {
    /// The Gymnasium id, e.g. `"CartPole-v1"`.
    const ID: &'static str;
    /// The `max_episode_steps` Gymnasium registers the id with (applied by the registry
    /// through [`crate::TimeLimit`]).
    const MAX_EPISODE_STEPS: u32;
    /// Number of state variables.
    const STATE_DIM: usize;

    /// The current state, or `None` before the first reset.
    fn state(&self) -> Option<Vec<f64>>;

    /// Overwrites the state as if an episode had just been reset into it (Gymnasium's
    /// `env.unwrapped.state = ...` after `reset`). Errors if the length is not
    /// [`ClassicEnv::STATE_DIM`] or a value is not finite.
    fn set_state(&mut self, state: &[f64]) -> Result<()>;

    /// Writes the observation of the current state into `obs` (errors before the first
    /// reset or on a wrong-length buffer).
    fn observe_into(&self, obs: &mut [f32]) -> Result<()>;
}
