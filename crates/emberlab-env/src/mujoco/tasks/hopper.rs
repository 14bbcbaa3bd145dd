//! `Hopper-v5`: hop forward without falling (Gymnasium 1.4's `hopper_v5.py` with its
//! default arguments).

use super::forward::{Forward, Health};
use crate::mujoco::sim::Sim;
use crate::mujoco::task::TaskSpec;

const SPEC: TaskSpec = TaskSpec {
    id: "Hopper-v5",
    xml_file: "hopper.xml",
    frame_skip: 4,
    max_episode_steps: 1000,
    reward_terms: &["reward_forward", "reward_ctrl", "reward_survive"],
};
const HEALTHY_STATE: (f64, f64) = (-100.0, 100.0);
const HEALTHY_Z: (f64, f64) = (0.7, f64::INFINITY);
const HEALTHY_ANGLE: (f64, f64) = (-0.2, 0.2);

/// Healthy: every one of `(qpos, qvel)[2:]` inside (−100, 100), the height inside (0.7, ∞)
/// and the angle inside (−0.2, 0.2).
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

/// Observation: `qpos[1:]`, `clip(qvel, -10, 10)`. Reward: forward velocity + 1 while
/// healthy − `0.001 |a|²`; terminates when unhealthy. Reset: uniform noise of ±0.005.
pub(crate) fn hopper() -> Forward {
    Forward {
        spec: &SPEC,
        forward_weight: 1.0,
        ctrl_weight: 0.001,
        reset_noise: 0.005,
        normal_qvel: false,
        skipped_qpos: 1,
        clip_qvel: true,
        health: Some(Health {
            is_healthy,
            reward: 1.0,
        }),
    }
}
