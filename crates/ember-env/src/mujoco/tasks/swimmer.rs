//! `Swimmer-v5`: swim forward in a viscous fluid (Gymnasium 1.4's `swimmer_v5.py` with its
//! default arguments).

use crate::mujoco::sim::Sim;
use crate::mujoco::task::{Outcome, Task, TaskSpec, action_cost, put, reset_with_noise};
use crate::numpy_random::NumpyRng;

const SPEC: TaskSpec = TaskSpec {
    id: "Swimmer-v5",
    xml_file: "swimmer.xml",
    frame_skip: 4,
    max_episode_steps: 1000,
    reward_terms: &["reward_forward", "reward_ctrl"],
};
const FORWARD_REWARD_WEIGHT: f64 = 1.0;
const CTRL_COST_WEIGHT: f64 = 1e-4;
const RESET_NOISE_SCALE: f64 = 0.1;

/// Observation: `qpos[2:]`, `qvel`. Reward: x velocity − `1e-4 |a|²`. Never terminates.
/// Reset: uniform noise of ±0.1.
#[derive(Debug, Default)]
pub(crate) struct Swimmer;

impl Task for Swimmer {
    fn spec(&self) -> &'static TaskSpec {
        &SPEC
    }

    fn obs_dim(&self, sim: &Sim) -> usize {
        sim.nq() - 2 + sim.nv()
    }

    fn reset(&mut self, sim: &mut Sim, rng: &mut NumpyRng) {
        reset_with_noise(sim, rng, RESET_NOISE_SCALE, false);
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
        put(obs, &mut at, sim.qpos()[2..].iter().copied());
        put(obs, &mut at, sim.qvel().iter().copied());
    }
}
