//! [`TimeLimit`]: truncate episodes after a fixed number of steps.

use emberlab_core::{Action, Env, Error, Result, Space, StepInfo};

/// Gymnasium's `TimeLimit`: sets `truncated` on the step at which the episode has lasted
/// `max_episode_steps` steps (`elapsed >= max_episode_steps`). The count restarts at every
/// reset.
///
/// ```
/// use emberlab_core::{Action, Env};
/// use emberlab_env::{Pendulum, TimeLimit};
///
/// let mut env = TimeLimit::new(Pendulum::new(), 2)?;
/// env.reset(Some(0))?;
/// assert!(!env.step(Action::Continuous(&[0.0]))?.truncated);
/// assert!(env.step(Action::Continuous(&[0.0]))?.truncated);
/// # Ok::<(), emberlab_core::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct TimeLimit<E> {
    env: E,
    max_episode_steps: u32,
    elapsed: u32,
}

impl<E: Env> TimeLimit<E> {
    /// Wraps `env`; `max_episode_steps` must be positive.
    pub fn new(env: E, max_episode_steps: u32) -> Result<Self> {
        if max_episode_steps == 0 {
            return Err(Error::invalid("max_episode_steps", 0, ">= 1"));
        }
        Ok(TimeLimit {
            env,
            max_episode_steps,
            elapsed: 0,
        })
    }

    /// The step count at which episodes are truncated.
    pub fn max_episode_steps(&self) -> u32 {
        self.max_episode_steps
    }

    /// Steps taken since the last reset.
    pub fn elapsed_steps(&self) -> u32 {
        self.elapsed
    }

    /// The wrapped environment.
    pub fn inner(&self) -> &E {
        &self.env
    }

    /// The wrapped environment, mutably.
    pub fn inner_mut(&mut self) -> &mut E {
        &mut self.env
    }

    /// Unwraps the environment.
    pub fn into_inner(self) -> E {
        self.env
    }
}

impl<E: Env> Env for TimeLimit<E> {
    fn save_state(&self, out: &mut emberlab_core::state::StateWriter) -> Result<()> {
        self.env.save_state(out)?;
        out.u64(u64::from(self.elapsed));
        Ok(())
    }

    fn load_state(&mut self, src: &mut emberlab_core::state::StateReader<'_>) -> Result<()> {
        self.env.load_state(src)?;
        let elapsed = src.u64()?;
        self.elapsed = u32::try_from(elapsed)
            .map_err(|_| Error::invalid("TimeLimit snapshot: elapsed steps", elapsed, "a u32"))?;
        Ok(())
    }

    fn observation_space(&self) -> &Space {
        self.env.observation_space()
    }

    fn action_space(&self) -> &Space {
        self.env.action_space()
    }

    fn reset_into(&mut self, seed: Option<u64>, obs: &mut [f32]) -> Result<()> {
        self.env.reset_into(seed, obs)?;
        self.elapsed = 0;
        Ok(())
    }

    fn step_into(&mut self, action: Action<'_>, obs: &mut [f32]) -> Result<StepInfo> {
        let mut info = self.env.step_into(action, obs)?;
        self.elapsed = self.elapsed.saturating_add(1);
        if self.elapsed >= self.max_episode_steps {
            info.truncated = true;
        }
        Ok(info)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::CartPole;

    #[test]
    fn truncates_at_the_limit_and_restarts_on_reset() {
        assert!(TimeLimit::new(CartPole::new(), 0).is_err());
        let mut env = TimeLimit::new(CartPole::new(), 3).unwrap();
        env.reset(Some(0)).unwrap();
        let flags: Vec<bool> = (0..3)
            .map(|i| env.step(Action::Discrete(i % 2)).unwrap().truncated)
            .collect();
        assert_eq!(flags, [false, false, true]);
        assert_eq!(env.elapsed_steps(), 3);
        env.reset(None).unwrap();
        assert_eq!(env.elapsed_steps(), 0);
        assert!(!env.step(Action::Discrete(0)).unwrap().truncated);
        // A failed step does not count.
        assert!(env.step(Action::Discrete(5)).is_err());
        assert_eq!(env.elapsed_steps(), 1);
    }
}
