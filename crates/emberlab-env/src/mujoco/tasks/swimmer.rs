//! `Swimmer-v5`: swim forward in a viscous fluid (Gymnasium 1.4's `swimmer_v5.py` with its
//! default arguments).

use super::forward::Forward;
use crate::mujoco::task::TaskSpec;

const SPEC: TaskSpec = TaskSpec {
    id: "Swimmer-v5",
    xml_file: "swimmer.xml",
    frame_skip: 4,
    max_episode_steps: 1000,
    reward_terms: &["reward_forward", "reward_ctrl"],
};

/// Observation: `qpos[2:]`, `qvel`. Reward: x velocity − `1e-4 |a|²`. Never terminates.
/// Reset: uniform noise of ±0.1.
pub(crate) fn swimmer() -> Forward {
    Forward {
        spec: &SPEC,
        forward_weight: 1.0,
        ctrl_weight: 1e-4,
        reset_noise: 0.1,
        normal_qvel: false,
        skipped_qpos: 2,
        clip_qvel: false,
        health: None,
    }
}
