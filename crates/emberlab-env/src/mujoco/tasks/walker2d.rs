//! `Walker2d-v5`: walk forward on two legs (Gymnasium 1.4's `walker2d_v5.py` with its
//! default arguments, and its model `walker2d_v5.xml`).

use super::forward::{Forward, Health};
use crate::mujoco::sim::Sim;
use crate::mujoco::task::TaskSpec;

const SPEC: TaskSpec = TaskSpec {
    id: "Walker2d-v5",
    xml_file: "walker2d_v5.xml",
    frame_skip: 4,
    max_episode_steps: 1000,
    reward_terms: &["reward_forward", "reward_ctrl", "reward_survive"],
};
const HEALTHY_Z: (f64, f64) = (0.8, 2.0);
const HEALTHY_ANGLE: (f64, f64) = (-1.0, 1.0);

/// Healthy: the height inside (0.8, 2) and the angle inside (−1, 1).
fn is_healthy(sim: &Sim) -> bool {
    let (z, angle) = (sim.qpos()[1], sim.qpos()[2]);
    HEALTHY_Z.0 < z && z < HEALTHY_Z.1 && HEALTHY_ANGLE.0 < angle && angle < HEALTHY_ANGLE.1
}

/// Observation: `qpos[1:]`, `clip(qvel, -10, 10)`. Reward: forward velocity + 1 while
/// healthy − `0.001 |a|²`; terminates when unhealthy. Reset: uniform noise of ±0.005.
pub(crate) fn walker2d() -> Forward {
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
