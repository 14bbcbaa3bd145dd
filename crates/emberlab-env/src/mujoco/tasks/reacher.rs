//! `Reacher-v5`: move a two-joint arm's fingertip to a random target (Gymnasium 1.4's
//! `reacher_v5.py` with its default arguments).

use crate::mujoco::sim::Sim;
use crate::mujoco::task::{Outcome, Task, TaskSpec, action_cost, put};
use crate::numpy_random::NumpyRng;
use emberlab_core::{Error, Result};
use mujoco_rs::prelude::MjtObjBase;

const SPEC: TaskSpec = TaskSpec {
    id: "Reacher-v5",
    xml_file: "reacher.xml",
    frame_skip: 2,
    max_episode_steps: 50,
    reward_terms: &["reward_dist", "reward_ctrl"],
};
const REWARD_DIST_WEIGHT: f64 = 1.0;
const REWARD_CONTROL_WEIGHT: f64 = 1.0;

/// Observation: `cos` and `sin` of the two arm angles, the target's position (`qpos[2:]`),
/// the arm's joint velocities, and the fingertip's (x, y) minus the target's. Reward:
/// −distance to the target − `|a|²`. Never terminates (truncated after 50 steps). Reset: arm
/// angles ±0.1, a target drawn uniformly from the disc of radius 0.2 (by rejection), arm
/// velocities ±0.005, the target at rest.
#[derive(Debug, Default)]
pub(crate) struct Reacher {
    /// The body ids of `fingertip` and `target` in the model.
    bodies: [usize; 2],
}

impl Reacher {
    fn fingertip_minus_target(&self, sim: &Sim) -> [f64; 3] {
        let (f, t) = (
            sim.data().xpos()[self.bodies[0]],
            sim.data().xpos()[self.bodies[1]],
        );
        [f[0] - t[0], f[1] - t[1], f[2] - t[2]]
    }
}

impl Task for Reacher {
    fn spec(&self) -> &'static TaskSpec {
        &SPEC
    }

    fn check_model(&mut self, sim: &Sim) -> Result<()> {
        for (slot, name) in self.bodies.iter_mut().zip(["fingertip", "target"]) {
            *slot = sim
                .model()
                .name_to_id(MjtObjBase::mjOBJ_BODY, name)
                .ok_or_else(|| {
                    Error::invalid(
                        "Reacher-v5 model",
                        "a model",
                        format!("a body named {name:?}"),
                    )
                })?;
        }
        Ok(())
    }

    fn obs_dim(&self, sim: &Sim) -> usize {
        2 + 2 + (sim.nq() - 2) + 2 + 2
    }

    fn reset(&mut self, sim: &mut Sim, rng: &mut NumpyRng) {
        let mut qpos: Vec<f64> = sim
            .init_qpos()
            .iter()
            .map(|&x| rng.uniform(-0.1, 0.1) + x)
            .collect();
        let goal = loop {
            let g = [rng.uniform(-0.2, 0.2), rng.uniform(-0.2, 0.2)];
            if (g[0] * g[0] + g[1] * g[1]).sqrt() < 0.2 {
                break g;
            }
        };
        let n = qpos.len();
        qpos[n - 2..].copy_from_slice(&goal);
        let mut qvel: Vec<f64> = sim
            .init_qvel()
            .iter()
            .map(|&x| x + rng.uniform(-0.005, 0.005))
            .collect();
        let n = qvel.len();
        qvel[n - 2..].fill(0.0);
        sim.set_state(&qpos, &qvel);
    }

    fn step(&mut self, sim: &mut Sim, action: &[f32], terms: &mut [f64]) -> Outcome {
        sim.do_simulation(action);
        let v = self.fingertip_minus_target(sim);
        let dist = -(v[0] * v[0] + v[1] * v[1] + v[2] * v[2]).sqrt() * REWARD_DIST_WEIGHT;
        let ctrl = -action_cost(REWARD_CONTROL_WEIGHT, action);
        terms.copy_from_slice(&[dist, ctrl]);
        Outcome {
            reward: dist + ctrl,
            terminated: false,
        }
    }

    fn observe(&self, sim: &Sim, obs: &mut [f32]) {
        let q = sim.qpos();
        let mut at = 0;
        put(obs, &mut at, q[..2].iter().map(|a| a.cos()));
        put(obs, &mut at, q[..2].iter().map(|a| a.sin()));
        put(obs, &mut at, q[2..].iter().copied());
        put(obs, &mut at, sim.qvel()[..2].iter().copied());
        let v = self.fingertip_minus_target(sim);
        put(obs, &mut at, [v[0], v[1]]);
    }
}
