//! `HalfCheetah-v5`: run forward as fast as possible (Gymnasium 1.4's `half_cheetah_v5.py`
//! with its default arguments).

use crate::mujoco::sim::Sim;
use crate::mujoco::task::{Outcome, Task, TaskSpec, action_cost, put, reset_with_noise};
use crate::numpy_random::NumpyRng;

const SPEC: TaskSpec = TaskSpec {
    id: "HalfCheetah-v5",
    xml_file: "half_cheetah.xml",
    frame_skip: 5,
    max_episode_steps: 1000,
    reward_terms: &["reward_forward", "reward_ctrl"],
};
const FORWARD_REWARD_WEIGHT: f64 = 1.0;
const CTRL_COST_WEIGHT: f64 = 0.1;
const RESET_NOISE_SCALE: f64 = 0.1;

/// Observation: `qpos[1:]` (the x position excluded), `qvel`. Reward: forward velocity of
/// the root minus `0.1 |a|²`. Never terminates. Reset: uniform noise on `qpos`, normal
/// noise on `qvel`.
#[derive(Debug, Default)]
pub(crate) struct HalfCheetah;

impl Task for HalfCheetah {
    fn spec(&self) -> &'static TaskSpec {
        &SPEC
    }

    fn obs_dim(&self, sim: &Sim) -> usize {
        sim.nq() - 1 + sim.nv()
    }

    fn reset(&mut self, sim: &mut Sim, rng: &mut NumpyRng) {
        reset_with_noise(sim, rng, RESET_NOISE_SCALE, true);
    }

    fn step(&mut self, sim: &mut Sim, action: &[f32], terms: &mut [f64]) -> Outcome {
        let x_before = sim.qpos()[0];
        sim.do_simulation(action);
        let x_velocity = (sim.qpos()[0] - x_before) / sim.dt();
        let forward = FORWARD_REWARD_WEIGHT * x_velocity;
        let ctrl = action_cost(CTRL_COST_WEIGHT, action);
        terms.copy_from_slice(&[forward, -ctrl]);
        Outcome {
            reward: forward - ctrl,
            terminated: false,
        }
    }

    fn observe(&self, sim: &Sim, obs: &mut [f32]) {
        let mut at = 0;
        put(obs, &mut at, sim.qpos()[1..].iter().copied());
        put(obs, &mut at, sim.qvel().iter().copied());
    }
}
