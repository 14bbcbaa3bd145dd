//! The planar runners' shared task: reward the root's forward velocity, charge the action's
//! squared size, and (for the tasks that can fall) pay for staying healthy and end the
//! episode when not. HalfCheetah, Hopper, Walker2d and Swimmer are values of [`Forward`].

use crate::mujoco::sim::Sim;
use crate::mujoco::task::{Outcome, Task, TaskSpec, action_cost, clip, put, reset_with_noise};
use crate::numpy_random::NumpyRng;

/// Staying upright: the check, and the reward per healthy step.
#[derive(Debug)]
pub(crate) struct Health {
    pub is_healthy: fn(&Sim) -> bool,
    pub reward: f64,
}

/// A forward-running task (Gymnasium's `half_cheetah_v5.py`, `hopper_v5.py`,
/// `walker2d_v5.py`, `swimmer_v5.py` share this shape).
#[derive(Debug)]
pub(crate) struct Forward {
    pub spec: &'static TaskSpec,
    pub forward_weight: f64,
    pub ctrl_weight: f64,
    pub reset_noise: f64,
    /// Velocities reset with normal noise (uniform otherwise).
    pub normal_qvel: bool,
    /// Leading positions left out of the observation.
    pub skipped_qpos: usize,
    /// Observed velocities clipped to ±10.
    pub clip_qvel: bool,
    /// `None`: never terminates.
    pub health: Option<Health>,
}

impl Task for Forward {
    fn spec(&self) -> &'static TaskSpec {
        self.spec
    }

    fn obs_dim(&self, sim: &Sim) -> usize {
        sim.nq() - self.skipped_qpos + sim.nv()
    }

    fn reset(&mut self, sim: &mut Sim, rng: &mut NumpyRng) {
        reset_with_noise(sim, rng, self.reset_noise, self.normal_qvel);
    }

    fn step(&mut self, sim: &mut Sim, action: &[f32], terms: &mut [f64]) -> Outcome {
        let x_before = sim.qpos()[0];
        sim.do_simulation(action);
        let x_velocity = (sim.qpos()[0] - x_before) / sim.dt();
        let forward = self.forward_weight * x_velocity;
        let ctrl = action_cost(self.ctrl_weight, action);
        match &self.health {
            None => {
                terms.copy_from_slice(&[forward, -ctrl]);
                Outcome {
                    reward: forward - ctrl,
                    terminated: false,
                }
            }
            Some(h) => {
                let healthy = (h.is_healthy)(sim);
                let survive = if healthy { h.reward } else { 0.0 };
                terms.copy_from_slice(&[forward, -ctrl, survive]);
                Outcome {
                    reward: (forward + survive) - ctrl,
                    terminated: !healthy,
                }
            }
        }
    }

    fn observe(&self, sim: &Sim, obs: &mut [f32]) {
        let mut at = 0;
        put(
            obs,
            &mut at,
            sim.qpos()[self.skipped_qpos..].iter().copied(),
        );
        let limit = if self.clip_qvel { 10.0 } else { f64::INFINITY };
        put(
            obs,
            &mut at,
            sim.qvel().iter().map(|&v| clip(v, -limit, limit)),
        );
    }
}
