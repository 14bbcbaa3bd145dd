//! `Pendulum-v1`: swing a frictionless pendulum up and keep it upright.

use super::classic_env::ClassicEnv;
use super::seeding::EnvRng;
use crate::checks;
use emberlab_core::{Action, BoxSpace, Env, Result, Space, StepInfo};
use std::f64::consts::PI;

/// The largest angular speed; faster speeds are clipped.
pub const MAX_SPEED: f64 = 8.0;
/// The largest torque; larger actions are clipped.
pub const MAX_TORQUE: f32 = 2.0;
/// The time step, in seconds.
pub(crate) const DT: f64 = 0.05;
/// The pendulum's mass.
pub(crate) const M: f64 = 1.0;
/// The pendulum's length.
pub(crate) const L: f64 = 1.0;
/// Gymnasium's default gravity.
pub const DEFAULT_GRAVITY: f64 = 10.0;

/// Gymnasium's `Pendulum-v1` (`gymnasium/envs/classic_control/pendulum.py`, Gymnasium 1.4).
///
/// State `[theta, theta_dot]` in `f64`; observation `[cos θ, sin θ, θ̇]` as `f32`. The
/// action (one torque, `Box(-2, 2)`) is clipped into `[-2, 2]` in `f32`, as Gymnasium does;
/// the cost `angle_normalize(θ)² + 0.1 θ̇² + 0.001 u²` (with `0.001 u²` in `f32`, NumPy's
/// promotion) is returned negated. Never terminates (the registry's time limit truncates
/// at 200 steps). Reset draws `θ ~ U(-π, π)`, `θ̇ ~ U(-1, 1)`.
#[derive(Clone, Debug)]
pub struct Pendulum {
    state: Option<[f64; 2]>,
    g: f64,
    rng: EnvRng,
    observation_space: Space,
    action_space: Space,
}

impl Default for Pendulum {
    fn default() -> Self {
        Self::new()
    }
}

/// Maps an angle into `[-π, π)` as Gymnasium's `angle_normalize` does (a floored modulo).
fn angle_normalize(x: f64) -> f64 {
    (x + PI).rem_euclid(2.0 * PI) - PI
}

impl Pendulum {
    /// A pendulum with Gymnasium's default gravity `g = 10`.
    pub fn new() -> Self {
        let high = [1.0, 1.0, MAX_SPEED as f32];
        Pendulum {
            state: None,
            g: DEFAULT_GRAVITY,
            rng: EnvRng::default(),
            observation_space: Space::Box(
                BoxSpace::new(high.map(|h| -h).to_vec(), high.to_vec())
                    .expect("constant bounds are valid"),
            ),
            action_space: Space::Box(
                BoxSpace::uniform(1, -MAX_TORQUE, MAX_TORQUE).expect("constant bounds are valid"),
            ),
        }
    }

    /// Gymnasium's `g` argument; must be finite.
    pub fn with_gravity(mut self, g: f64) -> Result<Self> {
        self.g = emberlab_core::Error::check_finite(|| "Pendulum gravity".into(), g)?;
        Ok(self)
    }

    fn write_obs(s: &[f64; 2], obs: &mut [f32]) {
        let [th, thdot] = *s;
        obs[0] = th.cos() as f32;
        obs[1] = th.sin() as f32;
        obs[2] = thdot as f32;
    }
}

impl Env for Pendulum {
    fn save_state(&self, out: &mut emberlab_core::state::StateWriter) -> Result<()> {
        super::seeding::save_classic(out, self.state.as_ref().map(|s| &s[..]), &self.rng);
        Ok(())
    }

    fn load_state(&mut self, src: &mut emberlab_core::state::StateReader<'_>) -> Result<()> {
        let (state, rng) = super::seeding::load_classic::<2>(src)?;
        self.state = state;
        self.rng = rng;
        Ok(())
    }

    fn observation_space(&self) -> &Space {
        &self.observation_space
    }

    fn action_space(&self) -> &Space {
        &self.action_space
    }

    fn reset_into(&mut self, seed: Option<u64>, obs: &mut [f32]) -> Result<()> {
        checks::obs_len(obs, &self.observation_space)?;
        self.rng.reseed(seed);
        let s = [self.rng.uniform(-PI, PI), self.rng.uniform(-1.0, 1.0)];
        Self::write_obs(&s, obs);
        self.state = Some(s);
        Ok(())
    }

    fn step_into(&mut self, action: Action<'_>, obs: &mut [f32]) -> Result<StepInfo> {
        let u = checks::continuous_action(action, &self.action_space)?[0];
        checks::obs_len(obs, &self.observation_space)?;
        let [th, thdot] = self.state.ok_or_else(|| checks::reset_needed(Self::ID))?;
        let u = u.clamp(-MAX_TORQUE, MAX_TORQUE);
        let costs =
            angle_normalize(th).powi(2) + 0.1 * (thdot * thdot) + f64::from(0.001f32 * (u * u));
        // `3.0 / (m l²) * u` multiplies a NumPy float32 by a Python float: an f32 product.
        let accel = 3.0 * self.g / (2.0 * L) * th.sin() + f64::from((3.0 / (M * L * L)) as f32 * u);
        let newthdot = (thdot + accel * DT).clamp(-MAX_SPEED, MAX_SPEED);
        let newth = th + newthdot * DT;
        let s = [newth, newthdot];
        self.state = Some(s);
        Self::write_obs(&s, obs);
        Ok(StepInfo {
            reward: -costs,
            terminated: false,
            truncated: false,
        })
    }
}

impl ClassicEnv for Pendulum {
    const ID: &'static str = "Pendulum-v1";
    const MAX_EPISODE_STEPS: u32 = 200;
    const STATE_DIM: usize = 2;

    fn state(&self) -> Option<Vec<f64>> {
        self.state.map(|s| s.to_vec())
    }

    fn set_state(&mut self, state: &[f64]) -> Result<()> {
        checks::state_values(Self::ID, state, Self::STATE_DIM)?;
        self.state = Some([state[0], state[1]]);
        Ok(())
    }

    fn observe_into(&self, obs: &mut [f32]) -> Result<()> {
        checks::obs_len(obs, &self.observation_space)?;
        let s = self.state.ok_or_else(|| checks::reset_needed(Self::ID))?;
        Self::write_obs(&s, obs);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn angle_normalize_matches_floored_modulo() {
        assert!((angle_normalize(3.0 * PI / 2.0) + PI / 2.0).abs() < 1e-12);
        assert!((angle_normalize(-3.0 * PI / 2.0) - PI / 2.0).abs() < 1e-12);
        assert!((angle_normalize(0.3) - 0.3).abs() < 1e-15);
        assert!((angle_normalize(-7.0) - (-7.0 + 2.0 * PI)).abs() < 1e-12);
    }

    #[test]
    fn actions_are_clipped_and_checked() {
        let mut a = Pendulum::new();
        let mut b = Pendulum::new();
        a.set_state(&[0.5, 0.1]).unwrap();
        b.set_state(&[0.5, 0.1]).unwrap();
        let sa = a.step(Action::Continuous(&[7.0])).unwrap();
        let sb = b.step(Action::Continuous(&[2.0])).unwrap();
        assert_eq!(sa, sb);
        assert!(a.step(Action::Continuous(&[f32::NAN])).is_err());
        assert!(a.step(Action::Continuous(&[0.0, 0.0])).is_err());
        assert!(a.step(Action::Discrete(0)).is_err());
        assert!(Pendulum::new().with_gravity(f64::NAN).is_err());
    }

    #[test]
    fn speed_is_clipped_and_reset_in_range() {
        let mut env = Pendulum::new();
        env.set_state(&[1.5, 7.99]).unwrap();
        let s = env.step(Action::Continuous(&[2.0])).unwrap();
        assert_eq!(s.obs[2], 8.0);
        assert!(!s.terminated && !s.truncated);
        for seed in 0..200 {
            env.reset(Some(seed)).unwrap();
            let st = env.state().unwrap();
            assert!(st[0].abs() <= PI && st[1].abs() <= 1.0, "{st:?}");
        }
    }
}
