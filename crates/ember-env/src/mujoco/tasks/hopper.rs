//! `Hopper-v5`: hop forward without falling (Gymnasium 1.4's `hopper_v5.py` with its
//! default arguments).

use crate::mujoco::sim::Sim;
use crate::mujoco::task::{Outcome, Task, TaskSpec, action_cost, clip, put, reset_with_noise};
use crate::numpy_random::NumpyRng;

const SPEC: TaskSpec = TaskSpec {
    id: "Hopper-v5",
    xml_file: "hopper.xml",
    frame_skip: 4,
    max_episode_steps: 1000,
    reward_terms: &["reward_forward", "reward_ctrl", "reward_survive"],
};
const FORWARD_REWARD_WEIGHT: f64 = 1.0;
const CTRL_COST_WEIGHT: f64 = 0.001;
const HEALTHY_REWARD: f64 = 1.0;
const HEALTHY_STATE: (f64, f64) = (-100.0, 100.0);
const HEALTHY_Z: (f64, f64) = (0.7, f64::INFINITY);
const HEALTHY_ANGLE: (f64, f64) = (-0.2, 0.2);
const RESET_NOISE_SCALE: f64 = 0.005;

/// Observation: `qpos[1:]`, `clip(qvel, -10, 10)`. Reward: forward velocity + 1 while
/// healthy − `0.001 |a|²`. Terminates when unhealthy: any of `(qpos, qvel)[2:]` outside
/// (−100, 100), the height outside (0.7, ∞) or the angle outside (−0.2, 0.2). Reset:
/// uniform noise of ±0.005.
#[derive(Debug, Default)]
pub(crate) struct Hopper;

fn is_healthy(sim: &Sim) -> bool {
    let (z, angle) = (sim.qpos()[1], sim.qpos()[2]);
    let inside = |v: f64, (lo, hi): (f64, f64)| lo < v && v < hi;
    sim.qpos()[2..]
        .iter()
        .chain(sim.qvel())
        .all(|&s| inside(s, HEALTHY_STATE))
        && inside(z, HEALTHY_Z)
        && inside(angle, HEALTHY_ANGLE)
}

impl Task for Hopper {
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
        let healthy = is_healthy(sim);
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
