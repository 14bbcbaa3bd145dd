//! `Acrobot-v1`: swing the tip of a two-link chain above a line by torquing the middle joint.

use super::classic_env::ClassicEnv;
use super::rk4::rk4;
use super::seeding::EnvRng;
use crate::checks;
use emberlab_core::{Action, BoxSpace, Discrete, Env, Result, Space, StepInfo};
use std::f64::consts::PI;

/// Integration time step (seconds).
const DT: f64 = 0.2;
const LINK_LENGTH_1: f64 = 1.0;
const LINK_MASS_1: f64 = 1.0;
const LINK_MASS_2: f64 = 1.0;
const LINK_COM_POS_1: f64 = 0.5;
const LINK_COM_POS_2: f64 = 0.5;
const LINK_MOI: f64 = 1.0;
const GRAVITY: f64 = 9.8;
/// The largest angular speed of the first joint.
pub const MAX_VEL_1: f64 = 4.0 * PI;
/// The largest angular speed of the second joint.
pub const MAX_VEL_2: f64 = 9.0 * PI;
/// Torque of each action.
const AVAIL_TORQUE: [f64; 3] = [-1.0, 0.0, 1.0];

/// Gymnasium's `Acrobot-v1` (`gymnasium/envs/classic_control/acrobot.py`, Gymnasium 1.4,
/// the "book" dynamics, no torque noise).
///
/// State `[θ1, θ2, θ̇1, θ̇2]` in `f64` (Gymnasium's reset state is `f32`, widened at the
/// first step; Ember rounds its reset draw to `f32` the same way). Observation
/// `[cos θ1, sin θ1, cos θ2, sin θ2, θ̇1, θ̇2]` as `f32`. Actions `Discrete(3)`: torque −1,
/// 0, +1 on the middle joint; one RK4 step of 0.2 s, then angles wrapped into `[-π, π]`
/// and speeds bounded by `4π` and `9π`. Reward −1 per step, 0 on termination, which
/// happens when `-cos θ1 - cos(θ1 + θ2) > 1`. Reset draws all four values from
/// `U(-0.1, 0.1)`.
#[derive(Clone, Debug)]
pub struct Acrobot {
    state: Option<[f64; 4]>,
    rng: EnvRng,
    observation_space: Space,
    action_space: Space,
}

impl Default for Acrobot {
    fn default() -> Self {
        Self::new()
    }
}

/// Gymnasium's `wrap`: shifts `x` by whole periods `M - m` into `[m, M]`.
fn wrap(mut x: f64, m: f64, big_m: f64) -> f64 {
    let diff = big_m - m;
    while x > big_m {
        x -= diff;
    }
    while x < m {
        x += diff;
    }
    x
}

/// The time derivative of the augmented state `[θ1, θ2, θ̇1, θ̇2, torque]`.
fn dsdt(s: &[f64; 5]) -> [f64; 5] {
    let (m1, m2, l1) = (LINK_MASS_1, LINK_MASS_2, LINK_LENGTH_1);
    let (lc1, lc2, i1, i2, g) = (LINK_COM_POS_1, LINK_COM_POS_2, LINK_MOI, LINK_MOI, GRAVITY);
    let [theta1, theta2, dtheta1, dtheta2, a] = *s;
    let d1 = m1 * lc1.powi(2)
        + m2 * (l1.powi(2) + lc2.powi(2) + 2.0 * l1 * lc2 * theta2.cos())
        + i1
        + i2;
    let d2 = m2 * (lc2.powi(2) + l1 * lc2 * theta2.cos()) + i2;
    let phi2 = m2 * lc2 * g * (theta1 + theta2 - PI / 2.0).cos();
    let phi1 = -m2 * l1 * lc2 * dtheta2.powi(2) * theta2.sin()
        - 2.0 * m2 * l1 * lc2 * dtheta2 * dtheta1 * theta2.sin()
        + (m1 * lc1 + m2 * l1) * g * (theta1 - PI / 2.0).cos()
        + phi2;
    let ddtheta2 = (a + d2 / d1 * phi1 - m2 * l1 * lc2 * dtheta1.powi(2) * theta2.sin() - phi2)
        / (m2 * lc2.powi(2) + i2 - d2.powi(2) / d1);
    let ddtheta1 = -(d2 * ddtheta2 + phi1) / d1;
    [dtheta1, dtheta2, ddtheta1, ddtheta2, 0.0]
}

impl Acrobot {
    /// An acrobot with Gymnasium's defaults.
    pub fn new() -> Self {
        let high = [1.0, 1.0, 1.0, 1.0, MAX_VEL_1 as f32, MAX_VEL_2 as f32];
        Acrobot {
            state: None,
            rng: EnvRng::default(),
            observation_space: Space::Box(
                BoxSpace::new(high.map(|h| -h).to_vec(), high.to_vec())
                    .expect("constant bounds are valid"),
            ),
            action_space: Space::Discrete(Discrete::new(3).expect("3 > 0")),
        }
    }

    fn write_obs(s: &[f64; 4], obs: &mut [f32]) {
        let [t1, t2, d1, d2] = *s;
        let vals = [t1.cos(), t1.sin(), t2.cos(), t2.sin(), d1, d2];
        for (o, v) in obs.iter_mut().zip(vals) {
            *o = v as f32;
        }
    }

    fn terminal(s: &[f64; 4]) -> bool {
        -s[0].cos() - (s[1] + s[0]).cos() > 1.0
    }
}

impl Env for Acrobot {
    fn save_state(&self, out: &mut emberlab_core::state::StateWriter) -> Result<()> {
        super::seeding::save_classic(out, self.state.as_ref().map(|s| &s[..]), &self.rng);
        Ok(())
    }

    fn load_state(&mut self, src: &mut emberlab_core::state::StateReader<'_>) -> Result<()> {
        let (state, rng) = super::seeding::load_classic::<4>(src)?;
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
        let s = [(); 4].map(|()| f64::from(self.rng.uniform(-0.1, 0.1) as f32));
        Self::write_obs(&s, obs);
        self.state = Some(s);
        Ok(())
    }

    fn step_into(&mut self, action: Action<'_>, obs: &mut [f32]) -> Result<StepInfo> {
        let a = checks::discrete_action(action, &self.action_space)?;
        checks::obs_len(obs, &self.observation_space)?;
        let [t1, t2, d1, d2] = self.state.ok_or_else(|| checks::reset_needed(Self::ID))?;
        let ns = rk4(dsdt, [t1, t2, d1, d2, AVAIL_TORQUE[a]], DT);
        let s = [
            wrap(ns[0], -PI, PI),
            wrap(ns[1], -PI, PI),
            ns[2].clamp(-MAX_VEL_1, MAX_VEL_1),
            ns[3].clamp(-MAX_VEL_2, MAX_VEL_2),
        ];
        self.state = Some(s);
        let terminated = Self::terminal(&s);
        Self::write_obs(&s, obs);
        Ok(StepInfo {
            reward: if terminated { 0.0 } else { -1.0 },
            terminated,
            truncated: false,
        })
    }
}

impl ClassicEnv for Acrobot {
    const ID: &'static str = "Acrobot-v1";
    const MAX_EPISODE_STEPS: u32 = 500;
    const STATE_DIM: usize = 4;

    fn state(&self) -> Option<Vec<f64>> {
        self.state.map(|s| s.to_vec())
    }

    fn set_state(&mut self, state: &[f64]) -> Result<()> {
        checks::state_values(Self::ID, state, Self::STATE_DIM)?;
        self.state = Some([state[0], state[1], state[2], state[3]]);
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
    fn wrap_shifts_by_whole_periods() {
        assert!((wrap(3.5, -PI, PI) - (3.5 - 2.0 * PI)).abs() < 1e-15);
        assert!((wrap(-10.0, -PI, PI) - (-10.0 + 4.0 * PI)).abs() < 1e-14);
        assert_eq!(wrap(1.0, -PI, PI), 1.0);
    }

    #[test]
    fn reset_state_is_f32_in_range_and_hanging_is_not_terminal() {
        let mut env = Acrobot::new();
        for seed in 0..100 {
            env.reset(Some(seed)).unwrap();
            for v in env.state().unwrap() {
                assert!(v.abs() <= 0.1 && f64::from(v as f32) == v, "{v}");
            }
        }
        let s = env.step(Action::Discrete(2)).unwrap();
        assert!(!s.terminated);
        assert_eq!(s.reward, -1.0);
        env.set_state(&[PI, 0.0, 0.0, 0.0]).unwrap();
        let s = env.step(Action::Discrete(1)).unwrap();
        assert!(s.terminated);
        assert_eq!(s.reward, 0.0);
    }

    #[test]
    fn speeds_are_bounded() {
        let mut env = Acrobot::new();
        env.set_state(&[0.0, 0.0, 40.0, 60.0]).unwrap();
        env.step(Action::Discrete(0)).unwrap();
        let s = env.state().unwrap();
        assert!(s[2].abs() <= MAX_VEL_1 && s[3].abs() <= MAX_VEL_2, "{s:?}");
        assert!(s[0].abs() <= PI && s[1].abs() <= PI);
        assert!(env.step(Action::Discrete(3)).is_err());
    }
}
