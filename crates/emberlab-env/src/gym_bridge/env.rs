//! [`GymEnv`]: any installed Gymnasium environment with Box or Discrete spaces as an Ember
//! [`Env`], stepped in a Python process of its own.

use super::worker::{StepAction, Worker, default_python};
use crate::checks;
use emberlab_core::{Action, Env, Result, Space, StepInfo};

/// A Gymnasium environment (`gymnasium.make(id)`, its registered wrappers and time limit
/// included) stepped in a Python worker process of its own, so that the environments of a
/// [`crate::ThreadedVecEnv`] step in parallel whatever Python's GIL does. `emberlab_env::make(
/// "gym:ID")` builds one.
///
/// Observations arrive as `f32` (Box observations flattened; a Discrete observation as its
/// index), actions leave as the space's dtype. Seeds go to `env.reset(seed=...)`. The
/// interpreter is `EMBER_PYTHON`, else `python3`. A Python exception in `reset` or `step`
/// is an error naming it, and the worker goes on; a worker that dies is an error quoting
/// its last words. Snapshots are not available (resumed runs need them; a bridged run
/// checkpoints its weights only).
///
/// ```no_run
/// use emberlab_core::{Action, Env};
///
/// let mut env = emberlab_env::make("gym:LunarLander-v3")?;
/// env.reset(Some(0))?;
/// let step = env.step(Action::Discrete(2))?;
/// # Ok::<(), emberlab_core::Error>(())
/// ```
pub struct GymEnv {
    id: String,
    worker: Worker,
    observation_space: Space,
    action_space: Space,
    started: bool,
}

impl std::fmt::Debug for GymEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("GymEnv")
            .field("id", &self.id)
            .field("observation_space", &self.observation_space)
            .field("action_space", &self.action_space)
            .finish()
    }
}

impl GymEnv {
    /// Starts a worker with `gymnasium.make(id)` (`id` without the `gym:` prefix).
    ///
    /// # Errors
    /// No Python, no `gymnasium`, an unknown id, a space other than Box (float) or
    /// Discrete (from 0), or `make` raising: each named in the error.
    pub fn new(id: &str) -> Result<Self> {
        Self::with_python(id, &default_python())
    }

    /// As [`GymEnv::new`], with the interpreter `python` (a path or a command name).
    ///
    /// # Errors
    /// As [`GymEnv::new`].
    pub fn with_python(id: &str, python: &str) -> Result<Self> {
        let (worker, observation_space, action_space) = Worker::start(python, id)?;
        Ok(GymEnv {
            id: id.to_string(),
            worker,
            observation_space,
            action_space,
            started: false,
        })
    }

    /// The Gymnasium id.
    pub fn id(&self) -> &str {
        &self.id
    }
}

impl Env for GymEnv {
    fn observation_space(&self) -> &Space {
        &self.observation_space
    }

    fn action_space(&self) -> &Space {
        &self.action_space
    }

    fn reset_into(&mut self, seed: Option<u64>, obs: &mut [f32]) -> Result<()> {
        checks::obs_len(obs, &self.observation_space)?;
        self.worker.reset(seed, obs)?;
        self.started = true;
        Ok(())
    }

    fn step_into(&mut self, action: Action<'_>, obs: &mut [f32]) -> Result<StepInfo> {
        let action = match &self.action_space {
            Space::Box(_) => {
                StepAction::Continuous(checks::continuous_action(action, &self.action_space)?)
            }
            Space::Discrete(_) => {
                StepAction::Discrete(checks::discrete_action(action, &self.action_space)?)
            }
        };
        checks::obs_len(obs, &self.observation_space)?;
        if !self.started {
            return Err(checks::reset_needed(&format!("gym:{}", self.id)));
        }
        let r = self.worker.step(action, obs)?;
        Ok(StepInfo {
            reward: r.reward,
            terminated: r.terminated,
            truncated: r.truncated,
        })
    }
}
