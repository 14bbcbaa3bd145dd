//! `CartPole-v1`: balance a pole on a cart by pushing it left or right.

use super::classic_env::ClassicEnv;
use super::seeding::EnvRng;
use crate::checks;
use emberlab_core::{Action, BoxSpace, Discrete, Env, Result, Space, StepInfo};
use std::f64::consts::PI;

pub(crate) const GRAVITY: f64 = 9.8;
const MASSCART: f64 = 1.0;
pub(crate) const MASSPOLE: f64 = 0.1;
pub(crate) const TOTAL_MASS: f64 = MASSPOLE + MASSCART;
/// Half the pole's length.
pub(crate) const LENGTH: f64 = 0.5;
pub(crate) const POLEMASS_LENGTH: f64 = MASSPOLE * LENGTH;
pub(crate) const FORCE_MAG: f64 = 10.0;
/// Seconds between state updates.
pub(crate) const TAU: f64 = 0.02;
/// The pole angle (radians) beyond which the episode terminates (12 degrees).
pub const THETA_THRESHOLD_RADIANS: f64 = 12.0 * 2.0 * PI / 360.0;
/// The cart position beyond which the episode terminates.
pub const X_THRESHOLD: f64 = 2.4;

/// Gymnasium's `CartPole-v1` (`gymnasium/envs/classic_control/cartpole.py`, Gymnasium 1.4).
///
/// State `[x, x_dot, theta, theta_dot]` in `f64` (as Gymnasium keeps it), observed as `f32`.
/// Actions `Discrete(2)`: 0 pushes left, 1 pushes right, with force 10. Explicit Euler
/// integration with `tau = 0.02`. Reward 1 for every step including the terminating one
/// (0 for steps taken after termination), or with [`CartPole::with_sutton_barto_reward`]
/// 0 per step and −1 at termination. Terminates when `|x| > 2.4` or `|theta| > 12°`.
/// Reset draws every state variable uniformly from `(-0.05, 0.05)`.
///
/// ```
/// use emberlab_core::{Action, Env};
/// use emberlab_env::CartPole;
///
/// let mut env = CartPole::new();
/// let obs = env.reset(Some(0))?;
/// assert!(obs.iter().all(|x| x.abs() < 0.05));
/// let step = env.step(Action::Discrete(1))?;
/// assert_eq!(step.reward, 1.0);
/// # Ok::<(), emberlab_core::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct CartPole {
    state: Option<[f64; 4]>,
    steps_beyond_terminated: Option<u32>,
    sutton_barto_reward: bool,
    rng: EnvRng,
    observation_space: Space,
    action_space: Space,
}

impl Default for CartPole {
    fn default() -> Self {
        Self::new()
    }
}

impl CartPole {
    /// A cart-pole with Gymnasium's default reward (+1 per step).
    pub fn new() -> Self {
        let high = [
            (X_THRESHOLD * 2.0) as f32,
            f32::INFINITY,
            (THETA_THRESHOLD_RADIANS * 2.0) as f32,
            f32::INFINITY,
        ];
        let low = high.map(|h| -h);
        CartPole {
            state: None,
            steps_beyond_terminated: None,
            sutton_barto_reward: false,
            rng: EnvRng::default(),
            observation_space: Space::Box(
                BoxSpace::new(low.to_vec(), high.to_vec()).expect("constant bounds are valid"),
            ),
            action_space: Space::Discrete(Discrete::new(2).expect("2 > 0")),
        }
    }

    /// Gymnasium's `sutton_barto_reward` option: reward 0 per step and −1 at termination.
    pub fn with_sutton_barto_reward(mut self, on: bool) -> Self {
        self.sutton_barto_reward = on;
        self
    }

    /// One Euler step of the dynamics under `force`, in Gymnasium's order of operations.
    fn dynamics(s: [f64; 4], force: f64) -> [f64; 4] {
        let [x, x_dot, theta, theta_dot] = s;
        let costheta = theta.cos();
        let sintheta = theta.sin();
        let temp = (force + POLEMASS_LENGTH * (theta_dot * theta_dot) * sintheta) / TOTAL_MASS;
        let thetaacc = (GRAVITY * sintheta - costheta * temp)
            / (LENGTH * (4.0 / 3.0 - MASSPOLE * (costheta * costheta) / TOTAL_MASS));
        let xacc = temp - POLEMASS_LENGTH * thetaacc * costheta / TOTAL_MASS;
        [
            x + TAU * x_dot,
            x_dot + TAU * xacc,
            theta + TAU * theta_dot,
            theta_dot + TAU * thetaacc,
        ]
    }

    fn write_obs(s: &[f64; 4], obs: &mut [f32]) {
        for (o, &v) in obs.iter_mut().zip(s) {
            *o = v as f32;
        }
    }
}

impl Env for CartPole {
    fn save_state(&self, out: &mut emberlab_core::state::StateWriter) -> Result<()> {
        super::seeding::save_classic(out, self.state.as_ref().map(|s| &s[..]), &self.rng);
        out.u64(self.steps_beyond_terminated.map_or(u64::MAX, u64::from));
        Ok(())
    }

    fn load_state(&mut self, src: &mut emberlab_core::state::StateReader<'_>) -> Result<()> {
        let (state, rng) = super::seeding::load_classic::<4>(src)?;
        let beyond = src.u64()?;
        let beyond = match beyond {
            u64::MAX => None,
            n => Some(u32::try_from(n).map_err(|_| {
                emberlab_core::Error::invalid(
                    "CartPole snapshot: steps beyond terminated",
                    n,
                    "a u32",
                )
            })?),
        };
        self.state = state;
        self.steps_beyond_terminated = beyond;
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
        let s = [(); 4].map(|()| self.rng.uniform(-0.05, 0.05));
        Self::write_obs(&s, obs);
        self.state = Some(s);
        self.steps_beyond_terminated = None;
        Ok(())
    }

    fn step_into(&mut self, action: Action<'_>, obs: &mut [f32]) -> Result<StepInfo> {
        let a = checks::discrete_action(action, &self.action_space)?;
        checks::obs_len(obs, &self.observation_space)?;
        let s = self.state.ok_or_else(|| checks::reset_needed(Self::ID))?;
        let force = if a == 1 { FORCE_MAG } else { -FORCE_MAG };
        let s = Self::dynamics(s, force);
        self.state = Some(s);
        let [x, _, theta, _] = s;
        // Gymnasium's four comparisons (a NaN state would not terminate, as there).
        #[allow(clippy::manual_range_contains)]
        let terminated = x < -X_THRESHOLD
            || x > X_THRESHOLD
            || theta < -THETA_THRESHOLD_RADIANS
            || theta > THETA_THRESHOLD_RADIANS;
        let sb = self.sutton_barto_reward;
        let reward = if !terminated {
            if sb { 0.0 } else { 1.0 }
        } else if let Some(n) = self.steps_beyond_terminated.as_mut() {
            *n += 1;
            if sb { -1.0 } else { 0.0 }
        } else {
            self.steps_beyond_terminated = Some(0);
            if sb { -1.0 } else { 1.0 }
        };
        Self::write_obs(&s, obs);
        Ok(StepInfo {
            reward,
            terminated,
            truncated: false,
        })
    }
}

impl ClassicEnv for CartPole {
    const ID: &'static str = "CartPole-v1";
    const MAX_EPISODE_STEPS: u32 = 500;
    const STATE_DIM: usize = 4;

    fn state(&self) -> Option<Vec<f64>> {
        self.state.map(|s| s.to_vec())
    }

    fn set_state(&mut self, state: &[f64]) -> Result<()> {
        checks::state_values(Self::ID, state, Self::STATE_DIM)?;
        self.state = Some([state[0], state[1], state[2], state[3]]);
        self.steps_beyond_terminated = None;
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
    fn reset_is_seeded_and_in_range() {
        let mut env = CartPole::new();
        let a = env.reset(Some(3)).unwrap();
        let b = env.reset(Some(3)).unwrap();
        let c = env.reset(None).unwrap();
        assert_eq!(a, b);
        assert_ne!(a, c);
        let mut lo = [f64::MAX; 4];
        let mut hi = [f64::MIN; 4];
        for seed in 0..2000 {
            env.reset(Some(seed)).unwrap();
            for (i, v) in env.state().unwrap().into_iter().enumerate() {
                lo[i] = lo[i].min(v);
                hi[i] = hi[i].max(v);
            }
        }
        for i in 0..4 {
            assert!(lo[i] >= -0.05 && lo[i] < -0.049, "{lo:?}");
            assert!(hi[i] < 0.05 && hi[i] > 0.049, "{hi:?}");
        }
    }

    #[test]
    fn terminates_with_reward_one_then_zero_after() {
        let mut env = CartPole::new();
        env.reset(Some(0)).unwrap();
        let mut n = 0;
        loop {
            let s = env.step(Action::Discrete(1)).unwrap();
            n += 1;
            assert_eq!(s.reward, 1.0);
            if s.terminated {
                break;
            }
            assert!(n < 100);
        }
        assert!(n > 3, "terminated after {n} steps");
        let after = env.step(Action::Discrete(0)).unwrap();
        assert!(after.terminated);
        assert_eq!(after.reward, 0.0);
    }

    #[test]
    fn sutton_barto_reward() {
        let mut env = CartPole::new().with_sutton_barto_reward(true);
        env.set_state(&[0.0, 0.0, 0.2, 1.0]).unwrap();
        let s = env.step(Action::Discrete(1)).unwrap();
        assert!(s.terminated);
        assert_eq!(s.reward, -1.0);
        env.set_state(&[0.0; 4]).unwrap();
        assert_eq!(env.step(Action::Discrete(1)).unwrap().reward, 0.0);
    }

    #[test]
    fn bad_input_is_an_error() {
        let mut env = CartPole::new();
        assert!(env.step(Action::Discrete(0)).is_err(), "step before reset");
        env.reset(Some(0)).unwrap();
        let e = env.step(Action::Discrete(2)).unwrap_err().to_string();
        assert!(e.contains("Discrete(2)"), "{e}");
        assert!(env.step(Action::Continuous(&[1.0])).is_err());
        assert!(env.reset_into(None, &mut [0.0; 3]).is_err());
        assert!(env.set_state(&[0.0; 3]).is_err());
    }
}
