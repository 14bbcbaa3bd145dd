//! `Ant-v5`: walk a four-legged robot forward (Gymnasium 1.4's `ant_v5.py` with its default
//! arguments).

use crate::mujoco::sim::Sim;
use crate::mujoco::task::{
    Outcome, Task, TaskSpec, action_cost, clip, load_xy, put, reset_with_noise, save_xy,
    sum_of_squares,
};
use crate::numpy_random::NumpyRng;
use emberlab_core::Result;
use emberlab_core::state::{StateReader, StateWriter};

const SPEC: TaskSpec = TaskSpec {
    id: "Ant-v5",
    xml_file: "ant.xml",
    frame_skip: 5,
    max_episode_steps: 1000,
    reward_terms: &[
        "reward_forward",
        "reward_ctrl",
        "reward_contact",
        "reward_survive",
    ],
};
const FORWARD_REWARD_WEIGHT: f64 = 1.0;
const CTRL_COST_WEIGHT: f64 = 0.5;
const CONTACT_COST_WEIGHT: f64 = 5e-4;
const HEALTHY_REWARD: f64 = 1.0;
/// Gymnasium's `main_body=1`: the torso.
const MAIN_BODY: usize = 1;
const HEALTHY_Z: (f64, f64) = (0.2, 1.0);
const CONTACT_FORCE_RANGE: (f64, f64) = (-1.0, 1.0);
const RESET_NOISE_SCALE: f64 = 0.1;

/// Observation: `qpos[2:]`, `qvel`, `clip(cfrc_ext[1:], -1, 1)`. Reward: the torso's x
/// velocity + 1 while healthy − `0.5 |a|²` − `5e-4 |clip(cfrc_ext)|²`. Terminates when the
/// state is not finite or the torso's height leaves [0.2, 1]. Reset: uniform noise on `qpos`,
/// normal noise on `qvel`.
#[derive(Debug, Default)]
pub(crate) struct Ant {
    /// The torso's (x, y) as the next step reads it before simulating (the body positions
    /// of the last `mj_forward`).
    xy_before: [f64; 2],
}

fn torso_xy(sim: &Sim) -> [f64; 2] {
    let p = sim.data().xpos()[MAIN_BODY];
    [p[0], p[1]]
}

fn contact_forces(sim: &Sim) -> impl Iterator<Item = f64> + '_ {
    sim.data()
        .cfrc_ext()
        .iter()
        .flatten()
        .map(|&f| clip(f, CONTACT_FORCE_RANGE.0, CONTACT_FORCE_RANGE.1))
}

impl Task for Ant {
    fn spec(&self) -> &'static TaskSpec {
        &SPEC
    }

    fn obs_dim(&self, sim: &Sim) -> usize {
        sim.nq() - 2 + sim.nv() + (sim.data().cfrc_ext().len() - 1) * 6
    }

    fn reset(&mut self, sim: &mut Sim, rng: &mut NumpyRng) {
        reset_with_noise(sim, rng, RESET_NOISE_SCALE, true);
    }

    fn after_set_state(&mut self, sim: &Sim) {
        self.xy_before = torso_xy(sim);
    }

    fn step(&mut self, sim: &mut Sim, action: &[f32], terms: &mut [f64]) -> Outcome {
        let before = self.xy_before;
        sim.do_simulation(action);
        let after = torso_xy(sim);
        self.xy_before = after;
        let x_velocity = (after[0] - before[0]) / sim.dt();
        let z = sim.qpos()[2];
        let finite = sim.qpos().iter().chain(sim.qvel()).all(|v| v.is_finite());
        let healthy = finite && HEALTHY_Z.0 <= z && z <= HEALTHY_Z.1;
        let forward = x_velocity * FORWARD_REWARD_WEIGHT;
        let survive = if healthy { HEALTHY_REWARD } else { 0.0 };
        let ctrl = action_cost(CTRL_COST_WEIGHT, action);
        let contact = CONTACT_COST_WEIGHT * sum_of_squares(contact_forces(sim));
        terms.copy_from_slice(&[forward, -ctrl, -contact, survive]);
        Outcome {
            reward: (forward + survive) - (ctrl + contact),
            terminated: !healthy,
        }
    }

    fn observe(&self, sim: &Sim, obs: &mut [f32]) {
        let mut at = 0;
        put(obs, &mut at, sim.qpos()[2..].iter().copied());
        put(obs, &mut at, sim.qvel().iter().copied());
        put(obs, &mut at, contact_forces(sim).skip(6));
    }

    fn save(&self, out: &mut StateWriter) {
        save_xy(out, &self.xy_before);
    }

    fn load(&mut self, src: &mut StateReader<'_>) -> Result<()> {
        self.xy_before = load_xy(src)?;
        Ok(())
    }
}
