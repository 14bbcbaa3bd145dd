//! [`SyncVecEnv`]: sub-environments stepped one after another on the calling thread.

use super::env_batch::{EnvBatch, StepOut, common_spaces};
use super::vec_env::{VecActions, VecEnv, VecStep};
use emberlab_core::state::{StateReader, StateWriter};
use emberlab_core::{Env, Result, Space};

/// Gymnasium's `SyncVectorEnv` with next-step autoreset: steps its sub-environments in
/// order on the calling thread, writing into buffers it owns (no allocation per step).
///
/// ```
/// use emberlab_env::{SyncVecEnv, VecActions, VecEnv};
///
/// let mut envs = SyncVecEnv::from_id("CartPole-v1", 3)?;
/// let obs = envs.reset(Some(42))?;
/// assert_eq!(obs.len(), 3 * 4);
/// let step = envs.step(VecActions::Discrete(&[0, 1, 0]))?;
/// assert_eq!(step.rewards, &[1.0, 1.0, 1.0]);
/// # Ok::<(), emberlab_core::Error>(())
/// ```
pub struct SyncVecEnv<E = Box<dyn Env>> {
    batch: EnvBatch<E>,
    observation_space: Space,
    action_space: Space,
    obs: Vec<f32>,
    rewards: Vec<f64>,
    terminated: Vec<bool>,
    truncated: Vec<bool>,
}

impl SyncVecEnv {
    /// `num_envs` copies of the registered environment `id` (see [`crate::make`]).
    pub fn from_id(id: &str, num_envs: usize) -> Result<Self> {
        Self::new(
            (0..num_envs)
                .map(|_| crate::make(id))
                .collect::<Result<_>>()?,
        )
    }
}

impl<E: Env> SyncVecEnv<E> {
    /// A vector of `envs`: at least one, all with the same spaces.
    pub fn new(envs: Vec<E>) -> Result<Self> {
        let (observation_space, action_space) = common_spaces(&envs)?;
        let n = envs.len();
        Ok(SyncVecEnv {
            obs: vec![0.0; n * observation_space.flat_dim()],
            rewards: vec![0.0; n],
            terminated: vec![false; n],
            truncated: vec![false; n],
            batch: EnvBatch::new(envs, 0),
            observation_space,
            action_space,
        })
    }

    /// The sub-environments.
    pub fn envs(&self) -> &[E] {
        self.batch.envs()
    }

    /// The observations of the last reset or step, `num_envs × obs_dim`.
    pub fn observations(&self) -> &[f32] {
        &self.obs
    }
}

impl<E: Env> VecEnv for SyncVecEnv<E> {
    fn num_envs(&self) -> usize {
        self.rewards.len()
    }

    fn single_observation_space(&self) -> &Space {
        &self.observation_space
    }

    fn single_action_space(&self) -> &Space {
        &self.action_space
    }

    fn reset(&mut self, seed: Option<u64>) -> Result<&[f32]> {
        self.batch.reset(seed, &mut self.obs)?;
        Ok(&self.obs)
    }

    fn step(&mut self, actions: VecActions<'_>) -> Result<VecStep<'_>> {
        actions.check(&self.action_space, self.num_envs())?;
        self.batch.step(
            actions,
            StepOut {
                obs: &mut self.obs,
                rewards: &mut self.rewards,
                terminated: &mut self.terminated,
                truncated: &mut self.truncated,
            },
        )?;
        Ok(VecStep {
            obs: &self.obs,
            rewards: &self.rewards,
            terminated: &self.terminated,
            truncated: &self.truncated,
            raw_rewards: None,
        })
    }

    fn save_state(&self, out: &mut StateWriter) -> Result<()> {
        self.batch.save_state(out)
    }

    fn load_state(&mut self, src: &mut StateReader<'_>) -> Result<()> {
        self.batch.load_state(src)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CartPole, ClassicEnv, Pendulum, TimeLimit};

    #[test]
    fn next_step_autoreset_ignores_the_action_and_reports_zero_reward() {
        let mut envs = SyncVecEnv::new(vec![CartPole::new(), CartPole::new()]).unwrap();
        let first = envs.reset(Some(7)).unwrap().to_vec();
        // Sub-environment i is seeded with 7 + i, as a lone env would be.
        let mut lone = CartPole::new();
        assert_eq!(lone.reset(Some(8)).unwrap(), first[4..8]);
        // Push both right until sub-environment 0 terminates.
        let mut steps = 0;
        loop {
            steps += 1;
            let s = envs.step(VecActions::Discrete(&[1, 1])).unwrap();
            assert_eq!(s.rewards[0], 1.0);
            if s.terminated[0] {
                break;
            }
            assert!(steps < 100);
        }
        let s = envs.step(VecActions::Discrete(&[1, 1])).unwrap();
        assert_eq!(
            (s.rewards[0], s.terminated[0], s.truncated[0]),
            (0.0, false, false)
        );
        assert!(
            s.obs[..4].iter().all(|x| x.abs() < 0.05),
            "reset obs {:?}",
            &s.obs[..4]
        );
        assert_eq!(envs.envs()[0].state().unwrap().len(), 4);
        // Then it steps normally again.
        assert_eq!(
            envs.step(VecActions::Discrete(&[0, 0])).unwrap().rewards[0],
            1.0
        );
    }

    #[test]
    fn truncation_autoresets_too_and_bad_input_is_an_error() {
        let make = || TimeLimit::new(Pendulum::new(), 2).unwrap();
        let mut envs = SyncVecEnv::new(vec![make(), make()]).unwrap();
        envs.reset(Some(0)).unwrap();
        let a = [0.5f32, -0.5];
        envs.step(VecActions::Continuous(&a)).unwrap();
        let s = envs.step(VecActions::Continuous(&a)).unwrap();
        assert_eq!(s.truncated, &[true, true]);
        let s = envs.step(VecActions::Continuous(&a)).unwrap();
        assert_eq!(s.rewards, &[0.0, 0.0]);
        assert_eq!(s.truncated, &[false, false]);
        assert!(envs.step(VecActions::Continuous(&[0.0])).is_err());
        assert!(envs.step(VecActions::Discrete(&[0, 0])).is_err());
        assert!(SyncVecEnv::<CartPole>::new(vec![]).is_err());
        let mixed: Vec<Box<dyn Env>> = vec![Box::new(CartPole::new()), Box::new(Pendulum::new())];
        assert!(SyncVecEnv::new(mixed).is_err());
        assert!(SyncVecEnv::from_id("Nope-v0", 2).is_err());
    }
}
