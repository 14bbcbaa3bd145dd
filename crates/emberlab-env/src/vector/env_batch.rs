//! [`EnvBatch`]: a run of sub-environments stepped in order with next-step autoreset; the
//! building block of both vector environments.

use super::vec_env::VecActions;
use emberlab_core::state::{StateReader, StateWriter};
use emberlab_core::{Env, Error, Result, Space};

/// Where one batch writes a step's results (disjoint slices of the vector env's buffers).
pub(crate) struct StepOut<'a> {
    pub obs: &'a mut [f32],
    pub rewards: &'a mut [f64],
    pub terminated: &'a mut [bool],
    pub truncated: &'a mut [bool],
}

/// Sub-environments `first .. first + envs.len()` of a vector environment.
pub(crate) struct EnvBatch<E> {
    envs: Vec<E>,
    autoreset: Vec<bool>,
    first: usize,
    obs_dim: usize,
    act_dim: usize,
}

/// Checks that every environment has the spaces of the first; returns them.
pub(crate) fn common_spaces<E: Env>(envs: &[E]) -> Result<(Space, Space)> {
    let first = envs
        .first()
        .ok_or_else(|| Error::invalid("number of sub-environments", 0, ">= 1"))?;
    let (obs, act) = (first.observation_space(), first.action_space());
    for (i, e) in envs.iter().enumerate() {
        if e.observation_space() != obs || e.action_space() != act {
            return Err(Error::invalid(
                format!("spaces of sub-environment {i}"),
                format!("{} / {}", e.observation_space(), e.action_space()),
                format!("those of sub-environment 0: {obs} / {act}"),
            ));
        }
    }
    Ok((obs.clone(), act.clone()))
}

impl<E: Env> EnvBatch<E> {
    /// A batch of `envs` (non-empty, same spaces: see [`common_spaces`]) numbered from
    /// `first` in the vector environment.
    pub(crate) fn new(envs: Vec<E>, first: usize) -> Self {
        let obs_dim = envs[0].observation_space().flat_dim();
        let act_dim = envs[0].action_space().flat_dim();
        EnvBatch {
            autoreset: vec![false; envs.len()],
            envs,
            first,
            obs_dim,
            act_dim,
        }
    }

    /// Resets every sub-environment, the `i`-th of the vector env with `seed + i`.
    pub(crate) fn reset(&mut self, seed: Option<u64>, obs: &mut [f32]) -> Result<()> {
        for (i, (env, o)) in self
            .envs
            .iter_mut()
            .zip(obs.chunks_exact_mut(self.obs_dim))
            .enumerate()
        {
            env.reset_into(seed.map(|s| s.wrapping_add((self.first + i) as u64)), o)?;
        }
        self.autoreset.fill(false);
        Ok(())
    }

    /// Steps (or autoresets) every sub-environment; `actions` are this batch's own, already
    /// checked.
    pub(crate) fn step(&mut self, actions: VecActions<'_>, out: StepOut<'_>) -> Result<()> {
        let obs = out.obs.chunks_exact_mut(self.obs_dim);
        for (i, (env, o)) in self.envs.iter_mut().zip(obs).enumerate() {
            if self.autoreset[i] {
                env.reset_into(None, o)?;
                out.rewards[i] = 0.0;
                out.terminated[i] = false;
                out.truncated[i] = false;
                self.autoreset[i] = false;
            } else {
                let info = env.step_into(actions.get(i, self.act_dim), o)?;
                out.rewards[i] = info.reward;
                out.terminated[i] = info.terminated;
                out.truncated[i] = info.truncated;
                self.autoreset[i] = info.terminated || info.truncated;
            }
        }
        Ok(())
    }

    /// Appends the pending autoresets and every sub-environment's snapshot.
    pub(crate) fn save_state(&self, out: &mut StateWriter) -> Result<()> {
        out.bools(&self.autoreset);
        for env in &self.envs {
            env.save_state(out)?;
        }
        Ok(())
    }

    /// Restores what [`EnvBatch::save_state`] wrote.
    pub(crate) fn load_state(&mut self, src: &mut StateReader<'_>) -> Result<()> {
        let autoreset = src.bools(Some(self.envs.len()))?;
        for env in &mut self.envs {
            env.load_state(src)?;
        }
        self.autoreset = autoreset;
        Ok(())
    }

    /// The sub-environments.
    pub(crate) fn envs(&self) -> &[E] {
        &self.envs
    }
}
