//! `HalfCheetah-v5`: run forward as fast as possible (Gymnasium 1.4's `half_cheetah_v5.py`
//! with its default arguments).

use super::forward::Forward;
use crate::mujoco::task::TaskSpec;

const SPEC: TaskSpec = TaskSpec {
    id: "HalfCheetah-v5",
    xml_file: "half_cheetah.xml",
    frame_skip: 5,
    max_episode_steps: 1000,
    reward_terms: &["reward_forward", "reward_ctrl"],
};

/// Observation: `qpos[1:]` (the x position excluded), `qvel`. Reward: forward velocity of
/// the root minus `0.1 |a|²`. Never terminates. Reset: uniform noise on `qpos`, normal
/// noise on `qvel` (scale 0.1).
pub(crate) fn half_cheetah() -> Forward {
    Forward {
        spec: &SPEC,
        forward_weight: 1.0,
        ctrl_weight: 0.1,
        reset_noise: 0.1,
        normal_qvel: true,
        skipped_qpos: 1,
        clip_qvel: false,
        health: None,
    }
}
