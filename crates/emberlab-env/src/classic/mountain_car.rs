//! `MountainCar-v0`: drive an under-powered car up a hill by rocking it (discrete pushes).
//! Also holds what the discrete and continuous mountain cars share.

use super::classic_env::ClassicEnv;
use super::seeding::EnvRng;
use crate::checks;
use emberlab_core::{Action, BoxSpace, Discrete, Env, Result, Space, StepInfo};

/// The left end of the track (the car stops there).
pub const MIN_POSITION: f64 = -1.2;
/// The right end of the track.
pub const MAX_POSITION: f64 = 0.6;
/// The largest speed either way.
pub const MAX_SPEED: f64 = 0.07;
const FORCE: f64 = 0.001;
const GRAVITY: f64 = 0.0025;
/// `MountainCar-v0` terminates when the car reaches this position (with velocity ≥ 0).
pub const GOAL_POSITION: f64 = 0.5;

/// The observation space both mountain cars share: `[position, velocity]` within
/// `[-1.2, 0.6] × [-0.07, 0.07]`.
pub(crate) fn observation_space() -> Space {
    Space::Box(
        BoxSpace::new(
            vec![MIN_POSITION as f32, -MAX_SPEED as f32],
            vec![MAX_POSITION as f32, MAX_SPEED as f32],
        )
        .expect("constant bounds are valid"),
    )
}

/// The reset state both mountain cars share: position `~ U(-0.6, -0.4)`, velocity 0.
pub(crate) fn reset_state(rng: &mut EnvRng) -> [f64; 2] {
    [rng.uniform(-0.6, -0.4), 0.0]
}

/// Gymnasium's `MountainCar-v0` (`gymnasium/envs/classic_control/mountain_car.py`,
/// Gymnasium 1.4).
///
/// State `[position, velocity]` in `f64`, observed as `f32`. Actions `Discrete(3)`:
/// accelerate left, don't accelerate, accelerate right. Reward −1 per step; terminates when
/// `position ≥ 0.5` with `velocity ≥ 0` (the registry truncates at 200 steps). Hitting the
/// left wall stops the car.
#[derive(Clone, Debug)]
pub struct MountainCar {
    state: Option<[f64; 2]>,
    rng: EnvRng,
    observation_space: Space,
    action_space: Space,
}

impl Default for MountainCar {
    fn default() -> Self {
        Self::new()
    }
}

impl MountainCar {
    /// A mountain car with Gymnasium's defaults (`goal_velocity = 0`).
    pub fn new() -> Self {
        MountainCar {
            state: None,
            rng: EnvRng::default(),
            observation_space: observation_space(),
            action_space: Space::Discrete(Discrete::new(3).expect("3 > 0")),
        }
    }

    fn write_obs(s: &[f64; 2], obs: &mut [f32]) {
        obs[0] = s[0] as f32;
        obs[1] = s[1] as f32;
    }
}

impl Env for MountainCar {
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
        let s = reset_state(&mut self.rng);
        Self::write_obs(&s, obs);
        self.state = Some(s);
        Ok(())
    }

    fn step_into(&mut self, action: Action<'_>, obs: &mut [f32]) -> Result<StepInfo> {
        let a = checks::discrete_action(action, &self.action_space)?;
        checks::obs_len(obs, &self.observation_space)?;
        let [mut position, mut velocity] =
            self.state.ok_or_else(|| checks::reset_needed(Self::ID))?;
        velocity += (a as f64 - 1.0) * FORCE + (3.0 * position).cos() * (-GRAVITY);
        velocity = velocity.clamp(-MAX_SPEED, MAX_SPEED);
        position += velocity;
        position = position.clamp(MIN_POSITION, MAX_POSITION);
        if position == MIN_POSITION && velocity < 0.0 {
            velocity = 0.0;
        }
        let terminated = position >= GOAL_POSITION && velocity >= 0.0;
        let s = [position, velocity];
        self.state = Some(s);
        Self::write_obs(&s, obs);
        Ok(StepInfo {
            reward: -1.0,
            terminated,
            truncated: false,
        })
    }
}

impl ClassicEnv for MountainCar {
    const ID: &'static str = "MountainCar-v0";
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
    fn reset_in_range_with_zero_velocity() {
        let mut env = MountainCar::new();
        for seed in 0..200 {
            let obs = env.reset(Some(seed)).unwrap();
            assert!((-0.6..-0.4).contains(&obs[0]) && obs[1] == 0.0, "{obs:?}");
        }
    }

    #[test]
    fn left_wall_stops_the_car_and_goal_terminates() {
        let mut env = MountainCar::new();
        env.set_state(&[-1.19, -0.05]).unwrap();
        let s = env.step(Action::Discrete(0)).unwrap();
        assert_eq!(s.obs, vec![-1.2, 0.0]);
        assert_eq!(s.reward, -1.0);
        env.set_state(&[0.49, 0.05]).unwrap();
        assert!(env.step(Action::Discrete(2)).unwrap().terminated);
        assert!(env.step(Action::Discrete(3)).is_err());
    }
}
