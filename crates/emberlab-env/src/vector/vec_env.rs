//! The [`VecEnv`] interface and the batched action and step types.

use crate::checks;
use emberlab_core::state::{StateReader, StateWriter};
use emberlab_core::{Action, Error, Result, Space};

/// Actions for every sub-environment of a vector environment, in sub-environment order.
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum VecActions<'a> {
    /// One index per sub-environment (a [`Space::Discrete`] action space).
    Discrete(&'a [usize]),
    /// `num_envs × action_dim` values, row-major (a [`Space::Box`] action space).
    Continuous(&'a [f32]),
}

impl<'a> VecActions<'a> {
    /// The action of sub-environment `i` (no checks: see [`VecActions::check`]).
    pub fn get(&self, i: usize, act_dim: usize) -> Action<'a> {
        match *self {
            VecActions::Discrete(a) => Action::Discrete(a[i]),
            VecActions::Continuous(x) => Action::Continuous(&x[i * act_dim..(i + 1) * act_dim]),
        }
    }

    /// Checks that these are `num_envs` actions of `space`: the right variant and length,
    /// discrete indices in range, no NaN. The error names the first offending action.
    pub fn check(&self, space: &Space, num_envs: usize) -> Result<()> {
        let dim = space.flat_dim();
        match (*self, space) {
            (VecActions::Discrete(a), Space::Discrete(_)) => {
                Error::check_len("discrete actions", num_envs, a.len())?;
                for (i, &ai) in a.iter().enumerate() {
                    checks::discrete_action(Action::Discrete(ai), space)
                        .map_err(|e| Self::at(i, e))?;
                }
                Ok(())
            }
            (VecActions::Continuous(x), Space::Box(_)) => {
                Error::check_len(
                    "continuous actions (num_envs × action_dim)",
                    num_envs * dim,
                    x.len(),
                )?;
                for (i, row) in x.chunks_exact(dim.max(1)).enumerate() {
                    checks::continuous_action(Action::Continuous(row), space)
                        .map_err(|e| Self::at(i, e))?;
                }
                Ok(())
            }
            (actions, space) => Err(Error::InvalidAction {
                action: format!("{actions:?}"),
                space: space.to_string(),
            }),
        }
    }

    fn at(i: usize, e: Error) -> Error {
        match e {
            Error::InvalidAction { action, space } => Error::InvalidAction {
                action: format!("{action} (sub-environment {i})"),
                space,
            },
            other => other,
        }
    }
}

/// The result of one vector step, borrowed from the vector environment's buffers (valid
/// until its next call).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct VecStep<'a> {
    /// Observations, `num_envs × obs_dim`, row-major.
    pub obs: &'a [f32],
    /// One reward per sub-environment.
    pub rewards: &'a [f64],
    /// Whether each sub-environment reached a terminal state.
    pub terminated: &'a [bool],
    /// Whether each sub-environment was cut short.
    pub truncated: &'a [bool],
    /// The environment's own rewards when a wrapper ([`crate::VecNormalize`]) changed
    /// `rewards`; episode statistics use these. `None`: `rewards` are the environment's.
    pub raw_rewards: Option<&'a [f64]>,
}

impl VecStep<'_> {
    /// The environment's own rewards (for episode returns): `raw_rewards` or `rewards`.
    pub fn env_rewards(&self) -> &[f64] {
        self.raw_rewards.unwrap_or(self.rewards)
    }
}

/// A batch of environments stepped together with Gymnasium 1.x's next-step autoreset
/// (`AutoresetMode.NEXT_STEP`): the step *after* a sub-environment's episode ends resets
/// it, ignoring its action, and reports the reset observation with reward 0 and
/// `terminated = truncated = false`.
pub trait VecEnv {
    /// Number of sub-environments.
    fn num_envs(&self) -> usize;
    /// The observation space of one sub-environment.
    fn single_observation_space(&self) -> &Space;
    /// The action space of one sub-environment.
    fn single_action_space(&self) -> &Space;
    /// Resets every sub-environment (sub-environment `i` with `seed + i` if a seed is given,
    /// as Gymnasium does) and returns the `num_envs × obs_dim` observations.
    fn reset(&mut self, seed: Option<u64>) -> Result<&[f32]>;
    /// Steps every sub-environment (or resets those whose episode ended at the previous
    /// step). Actions are checked before any sub-environment moves.
    fn step(&mut self, actions: VecActions<'_>) -> Result<VecStep<'_>>;

    /// Appends every sub-environment's snapshot ([`emberlab_core::Env::save_state`]) and the
    /// pending autoresets to `out`, so that [`VecEnv::load_state`] on a vector env built the
    /// same way continues exactly.
    ///
    /// # Errors
    /// A sub-environment without snapshots; the default: [`Error::Unavailable`].
    fn save_state(&self, out: &mut StateWriter) -> Result<()> {
        let _ = out;
        Err(emberlab_core::env::no_snapshot())
    }

    /// Restores what [`VecEnv::save_state`] wrote.
    ///
    /// # Errors
    /// A snapshot of another vector env; the default: [`Error::Unavailable`].
    fn load_state(&mut self, src: &mut StateReader<'_>) -> Result<()> {
        let _ = src;
        Err(emberlab_core::env::no_snapshot())
    }
}

impl<T: VecEnv + ?Sized> VecEnv for &mut T {
    fn num_envs(&self) -> usize {
        (**self).num_envs()
    }
    fn single_observation_space(&self) -> &Space {
        (**self).single_observation_space()
    }
    fn single_action_space(&self) -> &Space {
        (**self).single_action_space()
    }
    fn reset(&mut self, seed: Option<u64>) -> Result<&[f32]> {
        (**self).reset(seed)
    }
    fn step(&mut self, actions: VecActions<'_>) -> Result<VecStep<'_>> {
        (**self).step(actions)
    }
    fn save_state(&self, out: &mut StateWriter) -> Result<()> {
        (**self).save_state(out)
    }
    fn load_state(&mut self, src: &mut StateReader<'_>) -> Result<()> {
        (**self).load_state(src)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use emberlab_core::{BoxSpace, Discrete};

    #[test]
    fn checks_name_the_offending_sub_environment() {
        let d = Space::Discrete(Discrete::new(2).unwrap());
        assert!(VecActions::Discrete(&[0, 1, 1]).check(&d, 3).is_ok());
        let e = VecActions::Discrete(&[0, 2, 1])
            .check(&d, 3)
            .unwrap_err()
            .to_string();
        assert!(
            e.contains("sub-environment 1") && e.contains("Discrete(2)"),
            "{e}"
        );
        assert!(VecActions::Discrete(&[0, 1]).check(&d, 3).is_err());
        assert!(VecActions::Continuous(&[0.0; 3]).check(&d, 3).is_err());
        let b = Space::Box(BoxSpace::uniform(2, -1.0, 1.0).unwrap());
        assert!(VecActions::Continuous(&[0.0; 4]).check(&b, 2).is_ok());
        let e = VecActions::Continuous(&[0.0, 0.0, f32::NAN, 0.0])
            .check(&b, 2)
            .unwrap_err();
        assert!(e.to_string().contains("sub-environment 1"), "{e}");
        assert!(VecActions::Continuous(&[0.0; 3]).check(&b, 2).is_err());
        let a = VecActions::Continuous(&[1.0, 2.0, 3.0, 4.0]);
        assert_eq!(a.get(1, 2), Action::Continuous(&[3.0, 4.0]));
    }
}
