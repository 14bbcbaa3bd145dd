//! `Walker2d-v5`: walk forward on two legs (Gymnasium 1.4's `walker2d_v5.py` with its
//! default arguments, and its model `walker2d_v5.xml`).

use crate::mujoco::sim::Sim;
use crate::mujoco::task::{Outcome, Task, TaskSpec, action_cost, clip, put, reset_with_noise};
use crate::numpy_random::NumpyRng;

const SPEC: TaskSpec = TaskSpec {
    id: "Walker2d-v5",
    xml_file: "walker2d_v5.xml",
    frame_skip: 4,
    max_episode_steps: 1000,
    reward_terms: &["reward_forward", "reward_ctrl", "reward_survive"],
};
const FORWARD_REWARD_WEIGHT: f64 = 1.0;
const CTRL_COST_WEIGHT: f64 = 0.001;
const HEALTHY_REWARD: f64 = 1.0;
const HEALTHY_Z: (f64, f64) = (0.8, 2.0);
const HEALTHY_ANGLE: (f64, f64) = (-1.0, 1.0);
const RESET_NOISE_SCALE: f64 = 0.005;

/// Observation: `qpos[1:]`, `clip(qvel, -10, 10)`. Reward: forward velocity + 1 while
/// healthy − `0.001 |a|²`. Terminates when the height leaves (0.8, 2) or the angle leaves
/// (−1, 1). Reset: uniform noise of ±0.005.
#[derive(Debug, Default)]
pub(crate) struct Walker2d;

impl Task for Walker2d {
    fn spec(&self) -> &'static TaskSpec {
        &SPEC
    }

    fn obs_dim(&self, sim: &Sim) -> usize {
        sim.nq() - 1 + sim.nv()
    }

    fn reset(&mut self, sim: &mut Sim, rng: &mut NumpyRng) {
        reset_with_noise(sim, rng, RESET_NOISE_SCALE, false);
    }

    fn step(&mut self, sim: &mut Sim, action: &[f32], terms: &mut [f64]) -> Outcome {
        let x_before = sim.qpos()[0];
        sim.do_simulation(action);
        let x_velocity = (sim.qpos()[0] - x_before) / sim.dt();
        let (z, angle) = (sim.qpos()[1], sim.qpos()[2]);
        let healthy = HEALTHY_Z.0 < z
            && z < HEALTHY_Z.1
            && HEALTHY_ANGLE.0 < angle
            && angle < HEALTHY_ANGLE.1;
        let forward = FORWARD_REWARD_WEIGHT * x_velocity;
        let survive = if healthy { HEALTHY_REWARD } else { 0.0 };
        let ctrl = action_cost(CTRL_COST_WEIGHT, action);
        terms.copy_from_slice(&[forward, -ctrl, survive]);
        Outcome {
            reward: (forward + survive) - ctrl,
            terminated: !healthy,
        }
    }

    fn observe(&self, sim: &Sim, obs: &mut [f32]) {
        let mut at = 0;
        put(obs, &mut at, sim.qpos()[1..].iter().copied());
        put(
            obs,
            &mut at,
            sim.qvel().iter().map(|&v| clip(v, -10.0, 10.0)),
        );
    }
}
