//! `InvertedDoublePendulum-v5`: balance two stacked poles on a cart (Gymnasium 1.4's
//! `inverted_double_pendulum_v5.py` with its default arguments).

use crate::mujoco::sim::Sim;
use crate::mujoco::task::{Outcome, Task, TaskSpec, clip, put, reset_with_noise};
use crate::numpy_random::NumpyRng;

const SPEC: TaskSpec = TaskSpec {
    id: "InvertedDoublePendulum-v5",
    xml_file: "inverted_double_pendulum.xml",
    frame_skip: 5,
    max_episode_steps: 1000,
    reward_terms: &["reward_survive", "distance_penalty", "velocity_penalty"],
};
const HEALTHY_REWARD: f64 = 10.0;
const RESET_NOISE_SCALE: f64 = 0.1;

/// Observation: the cart's position, `sin` and `cos` of both hinge angles,
/// `clip(qvel, -10, 10)`, the cart's `clip(qfrc_constraint, -10, 10)`. Reward: 10 while the
/// tip is above y = 1, minus `0.01 x² + (y − 2)²` (tip position) and `0.001 v₁² + 0.005 v₂²`.
/// Terminates when the tip's height is at most 1. Reset: uniform noise on `qpos`, normal
/// noise on `qvel` (scale 0.1).
#[derive(Debug, Default)]
pub(crate) struct InvertedDoublePendulum;

impl Task for InvertedDoublePendulum {
    fn spec(&self) -> &'static TaskSpec {
        &SPEC
    }

    fn obs_dim(&self, sim: &Sim) -> usize {
        1 + 2 * (sim.nq() - 1) + sim.nv() + 1
    }

    fn reset(&mut self, sim: &mut Sim, rng: &mut NumpyRng) {
        reset_with_noise(sim, rng, RESET_NOISE_SCALE, true);
    }

    fn step(&mut self, sim: &mut Sim, action: &[f32], terms: &mut [f64]) -> Outcome {
        sim.do_simulation(action);
        let tip = sim.data().site_xpos()[0];
        let (x, y) = (tip[0], tip[2]);
        let terminated = y <= 1.0;
        let (v1, v2) = (sim.qvel()[1], sim.qvel()[2]);
        let distance = 0.01 * (x * x) + (y - 2.0) * (y - 2.0);
        let velocity = 0.001 * (v1 * v1) + 0.005 * (v2 * v2);
        let alive = if terminated { 0.0 } else { HEALTHY_REWARD };
        terms.copy_from_slice(&[alive, -distance, -velocity]);
        Outcome {
            reward: alive - distance - velocity,
            terminated,
        }
    }

    fn observe(&self, sim: &Sim, obs: &mut [f32]) {
        let q = sim.qpos();
        let mut at = 0;
        put(obs, &mut at, [q[0]]);
        put(obs, &mut at, q[1..].iter().map(|a| a.sin()));
        put(obs, &mut at, q[1..].iter().map(|a| a.cos()));
        put(
            obs,
            &mut at,
            sim.qvel().iter().map(|&v| clip(v, -10.0, 10.0)),
        );
        put(
            obs,
            &mut at,
            [clip(sim.data().qfrc_constraint()[0], -10.0, 10.0)],
        );
    }
}
