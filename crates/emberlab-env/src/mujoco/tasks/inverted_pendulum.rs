//! `InvertedPendulum-v5`: balance a pole on a cart (Gymnasium 1.4's
//! `inverted_pendulum_v5.py` with its default arguments).

use crate::mujoco::sim::Sim;
use crate::mujoco::task::{Outcome, Task, TaskSpec, put, reset_with_noise};
use crate::numpy_random::NumpyRng;

const SPEC: TaskSpec = TaskSpec {
    id: "InvertedPendulum-v5",
    xml_file: "inverted_pendulum.xml",
    frame_skip: 2,
    max_episode_steps: 1000,
    reward_terms: &["reward_survive"],
};
const RESET_NOISE_SCALE: f64 = 0.01;

/// Observation: `qpos`, `qvel`. Reward 1 per step while the pole stands; terminates when an
/// observation is not finite or the pole's angle exceeds 0.2 rad (reward 0 then). Reset:
/// uniform noise of ±0.01.
#[derive(Debug, Default)]
pub(crate) struct InvertedPendulum;

impl Task for InvertedPendulum {
    fn spec(&self) -> &'static TaskSpec {
        &SPEC
    }

    fn obs_dim(&self, sim: &Sim) -> usize {
        sim.nq() + sim.nv()
    }

    fn reset(&mut self, sim: &mut Sim, rng: &mut NumpyRng) {
        reset_with_noise(sim, rng, RESET_NOISE_SCALE, false);
    }

    fn step(&mut self, sim: &mut Sim, action: &[f32], terms: &mut [f64]) -> Outcome {
        sim.do_simulation(action);
        let finite = sim.qpos().iter().chain(sim.qvel()).all(|v| v.is_finite());
        let terminated = !finite || sim.qpos()[1].abs() > 0.2;
        let reward = if terminated { 0.0 } else { 1.0 };
        terms[0] = reward;
        Outcome { reward, terminated }
    }

    fn observe(&self, sim: &Sim, obs: &mut [f32]) {
        let mut at = 0;
        put(obs, &mut at, sim.qpos().iter().copied());
        put(obs, &mut at, sim.qvel().iter().copied());
    }
}
