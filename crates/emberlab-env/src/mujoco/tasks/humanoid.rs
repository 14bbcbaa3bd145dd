//! `Humanoid-v5`: walk a humanoid forward without falling (Gymnasium 1.4's `humanoid_v5.py`
//! with its default arguments).

use crate::mujoco::numpy_sum::pairwise_sum;
use crate::mujoco::sim::Sim;
use crate::mujoco::task::{
    Outcome, Task, TaskSpec, clip, load_xy, put, reset_with_noise, save_xy, sum_of_squares,
};
use crate::numpy_random::NumpyRng;
use emberlab_core::Result;
use emberlab_core::state::{StateReader, StateWriter};

const SPEC: TaskSpec = TaskSpec {
    id: "Humanoid-v5",
    xml_file: "humanoid.xml",
    frame_skip: 5,
    max_episode_steps: 1000,
    reward_terms: &[
        "reward_survive",
        "reward_forward",
        "reward_ctrl",
        "reward_contact",
    ],
};
const FORWARD_REWARD_WEIGHT: f64 = 1.25;
const CTRL_COST_WEIGHT: f64 = 0.1;
const CONTACT_COST_WEIGHT: f64 = 5e-7;
const CONTACT_COST_MAX: f64 = 10.0;
const HEALTHY_REWARD: f64 = 5.0;
const HEALTHY_Z: (f64, f64) = (1.0, 2.0);
const RESET_NOISE_SCALE: f64 = 0.01;

/// Observation: `qpos[2:]`, `qvel`, `cinert[1:]`, `cvel[1:]`, `qfrc_actuator[6:]`,
/// `cfrc_ext[1:]` (348 values). Reward: 1.25 × the centre of mass's x velocity + 5 while
/// healthy − `0.1 |ctrl|²` − `min(5e-7 |cfrc_ext|², 10)`. Terminates when the root's height
/// leaves (1, 2). Reset: uniform noise of ±0.01.
#[derive(Debug, Default)]
pub(crate) struct Humanoid {
    /// The centre of mass's (x, y) as the next step reads it before simulating.
    xy_before: [f64; 2],
}

/// Gymnasium's `mass_center`: `einsum('b,bj->j', body_mass, xipos) / body_mass.sum()`.
fn mass_center(sim: &Sim) -> [f64; 2] {
    let mass = sim.model().body_mass();
    let mut num = [0.0; 2];
    for (m, p) in mass.iter().zip(sim.data().xipos()) {
        num[0] += m * p[0];
        num[1] += m * p[1];
    }
    let total = pairwise_sum(mass);
    [num[0] / total, num[1] / total]
}

impl Task for Humanoid {
    fn spec(&self) -> &'static TaskSpec {
        &SPEC
    }

    fn obs_dim(&self, sim: &Sim) -> usize {
        let nbody = sim.data().cfrc_ext().len();
        sim.nq() - 2 + sim.nv() + (nbody - 1) * (10 + 6 + 6) + (sim.nv() - 6)
    }

    fn reset(&mut self, sim: &mut Sim, rng: &mut NumpyRng) {
        reset_with_noise(sim, rng, RESET_NOISE_SCALE, false);
    }

    fn after_set_state(&mut self, sim: &Sim) {
        self.xy_before = mass_center(sim);
    }

    fn step(&mut self, sim: &mut Sim, action: &[f32], terms: &mut [f64]) -> Outcome {
        let before = self.xy_before;
        sim.do_simulation(action);
        let after = mass_center(sim);
        self.xy_before = after;
        let x_velocity = (after[0] - before[0]) / sim.dt();
        let z = sim.qpos()[2];
        let healthy = HEALTHY_Z.0 < z && z < HEALTHY_Z.1;
        let forward = FORWARD_REWARD_WEIGHT * x_velocity;
        let survive = if healthy { HEALTHY_REWARD } else { 0.0 };
        // Humanoid's control cost reads the controls (float64), not the action.
        let ctrl = CTRL_COST_WEIGHT * sum_of_squares(sim.data().ctrl().iter().copied());
        let contact = clip(
            CONTACT_COST_WEIGHT * sum_of_squares(sim.data().cfrc_ext().iter().flatten().copied()),
            f64::NEG_INFINITY,
            CONTACT_COST_MAX,
        );
        terms.copy_from_slice(&[survive, forward, -ctrl, -contact]);
        Outcome {
            reward: (forward + survive) - (ctrl + contact),
            terminated: !healthy,
        }
    }

    fn observe(&self, sim: &Sim, obs: &mut [f32]) {
        let d = sim.data();
        let mut at = 0;
        put(obs, &mut at, sim.qpos()[2..].iter().copied());
        put(obs, &mut at, sim.qvel().iter().copied());
        put(obs, &mut at, d.cinert()[1..].iter().flatten().copied());
        put(obs, &mut at, d.cvel()[1..].iter().flatten().copied());
        put(obs, &mut at, d.qfrc_actuator()[6..].iter().copied());
        put(obs, &mut at, d.cfrc_ext()[1..].iter().flatten().copied());
    }

    fn save(&self, out: &mut StateWriter) {
        save_xy(out, &self.xy_before);
    }

    fn load(&mut self, src: &mut StateReader<'_>) -> Result<()> {
        self.xy_before = load_xy(src)?;
        Ok(())
    }
}
