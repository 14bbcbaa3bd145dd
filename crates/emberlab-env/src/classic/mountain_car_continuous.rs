//! `MountainCarContinuous-v0`: the mountain car with a continuous force.

use super::classic_env::ClassicEnv;
use super::mountain_car::{MAX_POSITION, MAX_SPEED, MIN_POSITION, observation_space, reset_state};
use super::seeding::EnvRng;
use crate::checks;
use emberlab_core::{Action, BoxSpace, Env, Result, Space, StepInfo};

const POWER: f64 = 0.0015;
/// `MountainCarContinuous-v0` terminates when the car reaches this position (with velocity
/// ≥ 0).
pub const GOAL_POSITION: f64 = 0.45;

/// Gymnasium's `MountainCarContinuous-v0`
/// (`gymnasium/envs/classic_control/continuous_mountain_car.py`, Gymnasium 1.4).
///
/// State `[position, velocity]` kept in `f32`, as Gymnasium keeps it after a step, with
/// NumPy 2's promotion rules reproduced: the force `a · 0.0015` is an `f32` product when
/// the action lies in `[-1, 1]` and an `f64` one when it is clipped; `cos(3 x)` is taken in
/// `f64` of the `f32` product `3 x`; comparisons with the bounds are in `f32`. The reward is
/// `100` on reaching `position ≥ 0.45` with `velocity ≥ 0`, minus `0.1 a²` of the
/// *unclipped* action. (Gymnasium's very first step after a reset still runs in `f64`,
/// from an `f64` start position; Ember's reset state is rounded to `f32` at once, which
/// changes nothing but the last bits of that step.) Reset draws position `~ U(-0.6, -0.4)`,
/// velocity 0.
#[derive(Clone, Debug)]
pub struct MountainCarContinuous {
    state: Option<[f32; 2]>,
    rng: EnvRng,
    observation_space: Space,
    action_space: Space,
}

impl Default for MountainCarContinuous {
    fn default() -> Self {
        Self::new()
    }
}

impl MountainCarContinuous {
    /// A continuous mountain car with Gymnasium's defaults (`goal_velocity = 0`).
    pub fn new() -> Self {
        MountainCarContinuous {
            state: None,
            rng: EnvRng::default(),
            observation_space: observation_space(),
            action_space: Space::Box(
                BoxSpace::uniform(1, -1.0, 1.0).expect("constant bounds are valid"),
            ),
        }
    }

    /// One step of the dynamics in Gymnasium's mixed `f32`/`f64` arithmetic; returns the new
    /// state and whether it is terminal.
    fn dynamics([position, velocity]: [f32; 2], a: f32) -> ([f32; 2], bool) {
        let slope = 0.0025 * f64::from(3.0 * position).cos();
        let mut velocity = if (-1.0..=1.0).contains(&a) {
            // np.float32 force × Python float → f32; minus a Python float → f32.
            velocity + (a * POWER as f32 - slope as f32)
        } else {
            // The clipped force is a Python float: the increment is computed in f64.
            velocity + (f64::from(a.clamp(-1.0, 1.0)) * POWER - slope) as f32
        };
        let max_speed = MAX_SPEED as f32;
        velocity = velocity.clamp(-max_speed, max_speed);
        let position = (position + velocity).clamp(MIN_POSITION as f32, MAX_POSITION as f32);
        if position == MIN_POSITION as f32 && velocity < 0.0 {
            velocity = 0.0;
        }
        let terminated = position >= GOAL_POSITION as f32 && velocity >= 0.0;
        ([position, velocity], terminated)
    }
}

impl Env for MountainCarContinuous {
    fn save_state(&self, out: &mut emberlab_core::state::StateWriter) -> Result<()> {
        let state = self.state.map(|s| s.map(f64::from));
        super::seeding::save_classic(out, state.as_ref().map(|s| &s[..]), &self.rng);
        Ok(())
    }

    fn load_state(&mut self, src: &mut emberlab_core::state::StateReader<'_>) -> Result<()> {
        let (state, rng) = super::seeding::load_classic::<2>(src)?;
        // The values were f32 when saved: the conversion back is exact.
        self.state = state.map(|s| s.map(|x| x as f32));
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
        let s = reset_state(&mut self.rng).map(|v| v as f32);
        obs.copy_from_slice(&s);
        self.state = Some(s);
        Ok(())
    }

    fn step_into(&mut self, action: Action<'_>, obs: &mut [f32]) -> Result<StepInfo> {
        let a = checks::continuous_action(action, &self.action_space)?[0];
        checks::obs_len(obs, &self.observation_space)?;
        let s = self.state.ok_or_else(|| checks::reset_needed(Self::ID))?;
        let (s, terminated) = Self::dynamics(s, a);
        self.state = Some(s);
        obs.copy_from_slice(&s);
        let bonus = if terminated { 100.0 } else { 0.0 };
        Ok(StepInfo {
            reward: bonus - f64::from(a) * f64::from(a) * 0.1,
            terminated,
            truncated: false,
        })
    }
}

impl ClassicEnv for MountainCarContinuous {
    const ID: &'static str = "MountainCarContinuous-v0";
    const MAX_EPISODE_STEPS: u32 = 999;
    const STATE_DIM: usize = 2;

    fn state(&self) -> Option<Vec<f64>> {
        self.state.map(|s| s.map(f64::from).to_vec())
    }

    fn set_state(&mut self, state: &[f64]) -> Result<()> {
        checks::state_values(Self::ID, state, Self::STATE_DIM)?;
        self.state = Some([state[0] as f32, state[1] as f32]);
        Ok(())
    }

    fn observe_into(&self, obs: &mut [f32]) -> Result<()> {
        checks::obs_len(obs, &self.observation_space)?;
        let s = self.state.ok_or_else(|| checks::reset_needed(Self::ID))?;
        obs.copy_from_slice(&s);
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn goal_pays_100_minus_unclipped_action_cost() {
        let mut env = MountainCarContinuous::new();
        env.set_state(&[0.44, 0.05]).unwrap();
        let s = env.step(Action::Continuous(&[2.0])).unwrap();
        assert!(s.terminated);
        assert!((s.reward - (100.0 - 0.4)).abs() < 1e-12, "{}", s.reward);
        // A clipped action moves the car exactly as the bound does.
        let mut a = MountainCarContinuous::new();
        let mut b = MountainCarContinuous::new();
        a.set_state(&[-0.5, 0.01]).unwrap();
        b.set_state(&[-0.5, 0.01]).unwrap();
        let sa = a.step(Action::Continuous(&[-3.0])).unwrap();
        let sb = b.step(Action::Continuous(&[-1.0])).unwrap();
        assert!((sa.obs[0] - sb.obs[0]).abs() < 1e-7 && (sa.obs[1] - sb.obs[1]).abs() < 1e-7);
        assert!(sa.reward < sb.reward);
    }

    #[test]
    fn bad_actions_are_errors() {
        let mut env = MountainCarContinuous::new();
        assert!(
            env.step(Action::Continuous(&[0.0])).is_err(),
            "before reset"
        );
        env.reset(Some(1)).unwrap();
        assert!(env.step(Action::Continuous(&[f32::NAN])).is_err());
        assert!(env.step(Action::Discrete(1)).is_err());
        assert!(env.step(Action::Continuous(&[0.5])).is_ok());
    }
}
