//! [`NormalizeObservation`]: centre and scale observations by running statistics.

use super::running_mean_std::RunningMeanStd;
use crate::checks;
use emberlab_core::{Action, BoxSpace, Env, Error, Result, Space, StepInfo};

/// Gymnasium's `NormalizeObservation`: every observation (from `reset` and `step`) first
/// updates the running mean and variance (unless frozen), then is returned as
/// `(obs - mean) / sqrt(var + epsilon)`, all in `f32` as Gymnasium computes it. Freeze the
/// statistics for evaluation with [`NormalizeObservation::set_update_running_mean`].
///
/// ```
/// use emberlab_core::{Action, Env};
/// use emberlab_env::{CartPole, NormalizeObservation};
///
/// let mut env = NormalizeObservation::new(CartPole::new())?;
/// env.reset(Some(0))?;
/// env.step(Action::Discrete(0))?;
/// env.set_update_running_mean(false); // evaluation: statistics frozen
/// let before = env.running_mean_std().clone();
/// env.step(Action::Discrete(1))?;
/// assert_eq!(env.running_mean_std(), &before);
/// # Ok::<(), emberlab_core::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct NormalizeObservation<E> {
    env: E,
    rms: RunningMeanStd,
    epsilon: f32,
    update: bool,
    observation_space: Space,
}

impl<E: Env> NormalizeObservation<E> {
    /// Wraps `env` (whose observation space must be a box) with `epsilon = 1e-8`.
    pub fn new(env: E) -> Result<Self> {
        Self::with_epsilon(env, 1e-8)
    }

    /// Wraps `env` with a positive, finite `epsilon` added to the variance.
    pub fn with_epsilon(env: E, epsilon: f64) -> Result<Self> {
        if !(epsilon > 0.0 && epsilon.is_finite()) {
            return Err(Error::invalid("epsilon", epsilon, "a finite value > 0"));
        }
        let dim = match env.observation_space() {
            Space::Box(b) => b.dim(),
            other => {
                return Err(Error::invalid(
                    "observation space for NormalizeObservation",
                    other,
                    "a Box space",
                ));
            }
        };
        Ok(NormalizeObservation {
            env,
            rms: RunningMeanStd::new(dim),
            epsilon: epsilon as f32,
            update: true,
            observation_space: Space::Box(BoxSpace::uniform(
                dim,
                f32::NEG_INFINITY,
                f32::INFINITY,
            )?),
        })
    }

    /// Whether observations update the statistics (Gymnasium's `update_running_mean`).
    pub fn update_running_mean(&self) -> bool {
        self.update
    }

    /// Freezes (`false`) or resumes (`true`) updating the statistics.
    pub fn set_update_running_mean(&mut self, on: bool) {
        self.update = on;
    }

    /// The running statistics.
    pub fn running_mean_std(&self) -> &RunningMeanStd {
        &self.rms
    }

    /// Replaces the running statistics (e.g. with a trained agent's, for evaluation); the
    /// dimension must match.
    pub fn set_running_mean_std(&mut self, rms: RunningMeanStd) -> Result<()> {
        Error::check_len(
            "RunningMeanStd dimension",
            self.rms.mean().len(),
            rms.mean().len(),
        )?;
        self.rms = rms;
        Ok(())
    }

    /// The wrapped environment.
    pub fn inner(&self) -> &E {
        &self.env
    }

    /// The wrapped environment, mutably.
    pub fn inner_mut(&mut self) -> &mut E {
        &mut self.env
    }

    fn normalize(&mut self, obs: &mut [f32]) {
        if self.update {
            self.rms.update(obs);
        }
        for ((o, &m), &v) in obs.iter_mut().zip(self.rms.mean()).zip(self.rms.var()) {
            *o = (*o - m) / (v + self.epsilon).sqrt();
        }
    }
}

impl<E: Env> Env for NormalizeObservation<E> {
    fn save_state(&self, out: &mut emberlab_core::state::StateWriter) -> Result<()> {
        self.env.save_state(out)?;
        self.rms.save_state(out);
        Ok(())
    }

    fn load_state(&mut self, src: &mut emberlab_core::state::StateReader<'_>) -> Result<()> {
        self.env.load_state(src)?;
        self.rms.load_state(src)
    }

    fn observation_space(&self) -> &Space {
        &self.observation_space
    }

    fn action_space(&self) -> &Space {
        self.env.action_space()
    }

    fn reset_into(&mut self, seed: Option<u64>, obs: &mut [f32]) -> Result<()> {
        checks::obs_len(obs, &self.observation_space)?;
        self.env.reset_into(seed, obs)?;
        self.normalize(obs);
        Ok(())
    }

    fn step_into(&mut self, action: Action<'_>, obs: &mut [f32]) -> Result<StepInfo> {
        checks::obs_len(obs, &self.observation_space)?;
        let info = self.env.step_into(action, obs)?;
        self.normalize(obs);
        Ok(info)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{CartPole, MountainCar};

    #[test]
    fn normalized_observations_have_unit_scale_and_freezing_works() {
        assert!(NormalizeObservation::with_epsilon(CartPole::new(), 0.0).is_err());
        let mut env = NormalizeObservation::new(MountainCar::new()).unwrap();
        let mut sum = [0.0f64; 2];
        let mut sq = [0.0f64; 2];
        let mut n = 0.0;
        for ep in 0..20 {
            env.reset(Some(ep)).unwrap();
            for t in 0..100 {
                let s = env
                    .step(Action::Discrete(if t % 30 < 15 { 0 } else { 2 }))
                    .unwrap();
                if ep >= 10 {
                    for i in 0..2 {
                        sum[i] += f64::from(s.obs[i]);
                        sq[i] += f64::from(s.obs[i]).powi(2);
                    }
                    n += 1.0;
                }
            }
        }
        for i in 0..2 {
            let mean = sum[i] / n;
            let var = sq[i] / n - mean * mean;
            assert!(
                mean.abs() < 0.5 && (0.3..3.0).contains(&var),
                "dim {i}: {mean} {var}"
            );
        }
        env.set_update_running_mean(false);
        assert!(!env.update_running_mean());
        let frozen = env.running_mean_std().clone();
        env.reset(Some(99)).unwrap();
        env.step(Action::Discrete(1)).unwrap();
        assert_eq!(env.running_mean_std(), &frozen);
        assert!(env.set_running_mean_std(RunningMeanStd::new(3)).is_err());
    }
}
