//! [`ClipAction`]: clip continuous actions into the action space.

use crate::checks;
use emberlab_core::{Action, BoxSpace, Env, Error, Result, Space, StepInfo};

/// Gymnasium's `ClipAction`: a continuous action is clipped into the wrapped environment's
/// action box before it is passed on; the wrapper's own action space is unbounded (as in
/// Gymnasium 1.x). Actions of the wrong length or with NaN are still errors. Clipping uses a
/// buffer kept in the wrapper, so stepping does not allocate.
///
/// ```
/// use emberlab_core::{Action, Env};
/// use emberlab_env::{ClipAction, MountainCarContinuous};
///
/// let mut env = ClipAction::new(MountainCarContinuous::new())?;
/// env.reset(Some(0))?;
/// let s = env.step(Action::Continuous(&[5.0]))?;
/// assert!((s.reward + 0.1).abs() < 1e-12); // the inner env saw 1.0
/// # Ok::<(), emberlab_core::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct ClipAction<E> {
    env: E,
    bounds: BoxSpace,
    action_space: Space,
    scratch: Vec<f32>,
}

impl<E: Env> ClipAction<E> {
    /// Wraps `env`, whose action space must be a box.
    pub fn new(env: E) -> Result<Self> {
        let bounds = match env.action_space() {
            Space::Box(b) => b.clone(),
            other => {
                return Err(Error::invalid(
                    "action space for ClipAction",
                    other,
                    "a Box space",
                ));
            }
        };
        let dim = bounds.dim();
        Ok(ClipAction {
            env,
            action_space: Space::Box(BoxSpace::uniform(dim, f32::NEG_INFINITY, f32::INFINITY)?),
            bounds,
            scratch: vec![0.0; dim],
        })
    }

    /// The wrapped environment.
    pub fn inner(&self) -> &E {
        &self.env
    }

    /// The wrapped environment, mutably.
    pub fn inner_mut(&mut self) -> &mut E {
        &mut self.env
    }
}

impl<E: Env> Env for ClipAction<E> {
    fn save_state(&self, out: &mut emberlab_core::state::StateWriter) -> Result<()> {
        self.env.save_state(out)
    }

    fn load_state(&mut self, src: &mut emberlab_core::state::StateReader<'_>) -> Result<()> {
        self.env.load_state(src)
    }

    fn observation_space(&self) -> &Space {
        self.env.observation_space()
    }

    fn action_space(&self) -> &Space {
        &self.action_space
    }

    fn reset_into(&mut self, seed: Option<u64>, obs: &mut [f32]) -> Result<()> {
        self.env.reset_into(seed, obs)
    }

    fn step_into(&mut self, action: Action<'_>, obs: &mut [f32]) -> Result<StepInfo> {
        let x = checks::continuous_action(action, &self.action_space)?;
        self.scratch.copy_from_slice(x);
        self.bounds.clip(&mut self.scratch);
        self.env.step_into(Action::Continuous(&self.scratch), obs)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CartPole, Pendulum};

    #[test]
    fn clips_into_the_box() {
        assert!(ClipAction::new(CartPole::new()).is_err());
        let mut env = ClipAction::new(Pendulum::new()).unwrap();
        let mut raw = Pendulum::new();
        env.reset(Some(4)).unwrap();
        raw.reset(Some(4)).unwrap();
        let a = env.step(Action::Continuous(&[-9.0])).unwrap();
        let b = raw.step(Action::Continuous(&[-2.0])).unwrap();
        assert_eq!(a, b);
        assert!(env.step(Action::Continuous(&[f32::NAN])).is_err());
        assert!(env.step(Action::Continuous(&[0.0, 1.0])).is_err());
        match env.action_space() {
            Space::Box(b) => assert_eq!(b.high(), &[f32::INFINITY]),
            Space::Discrete(_) => panic!("ClipAction's action space must be a box"),
        }
    }
}
