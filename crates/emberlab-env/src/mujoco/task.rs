//! The [`Task`] trait (what each Gymnasium v5 task adds to a simulation: its reset noise,
//! observation, reward and termination) and the arithmetic the tasks share, written the way
//! NumPy evaluates Gymnasium's expressions.

use super::numpy_sum::pairwise_sum;
use super::sim::Sim;
use crate::numpy_random::NumpyRng;
use emberlab_core::Result;
use emberlab_core::state::{StateReader, StateWriter};

/// A task's constants.
#[derive(Debug)]
pub(crate) struct TaskSpec {
    /// The Gymnasium id, e.g. `HalfCheetah-v5`.
    pub id: &'static str,
    /// The model file in Gymnasium's assets folder.
    pub xml_file: &'static str,
    /// Physics steps per env step.
    pub frame_skip: usize,
    /// The registered `max_episode_steps`.
    pub max_episode_steps: u32,
    /// The names of the reward's terms, as Gymnasium's `info` keys.
    pub reward_terms: &'static [&'static str],
}

/// What a step returns besides the observation; the terms go into the caller's slice.
#[derive(Clone, Copy, Debug)]
pub(crate) struct Outcome {
    pub reward: f64,
    pub terminated: bool,
}

/// One Gymnasium MuJoCo task over a [`Sim`].
pub(crate) trait Task: Send {
    /// The task's constants.
    fn spec(&self) -> &'static TaskSpec;
    /// Checks that the model has what the task reads (named bodies, enough joints).
    ///
    /// # Errors
    /// Names what the model lacks.
    fn check_model(&mut self, sim: &Sim) -> Result<()> {
        let _ = sim;
        Ok(())
    }
    /// The observation's length for this model.
    fn obs_dim(&self, sim: &Sim) -> usize;
    /// `reset_model`: draws the reset noise from `rng` and sets the state (the simulation has
    /// just been `mj_resetData`-ed).
    fn reset(&mut self, sim: &mut Sim, rng: &mut NumpyRng);
    /// Called after every `set_state` (reset or a caller's): refreshes what the task keeps
    /// between steps.
    fn after_set_state(&mut self, sim: &Sim) {
        let _ = sim;
    }
    /// One env step: simulates `action` and returns the reward (its terms written into
    /// `terms`, in the order of [`TaskSpec::reward_terms`]) and termination.
    fn step(&mut self, sim: &mut Sim, action: &[f32], terms: &mut [f64]) -> Outcome;
    /// Writes the observation of the current state.
    fn observe(&self, sim: &Sim, obs: &mut [f32]);
    /// Appends what the task keeps between steps.
    fn save(&self, out: &mut StateWriter) {
        let _ = out;
    }
    /// Restores what [`Task::save`] wrote.
    ///
    /// # Errors
    /// A snapshot of something else.
    fn load(&mut self, src: &mut StateReader<'_>) -> Result<()> {
        let _ = src;
        Ok(())
    }
}

/// Writes `values` (as `f32`) at `obs[*at..]` and moves `at` past them.
pub(crate) fn put(obs: &mut [f32], at: &mut usize, values: impl IntoIterator<Item = f64>) {
    for v in values {
        obs[*at] = v as f32;
        *at += 1;
    }
}

/// NumPy's `np.clip(v, lo, hi)` of one value (a NaN stays NaN).
pub(crate) fn clip(v: f64, lo: f64, hi: f64) -> f64 {
    if v < lo {
        lo
    } else if v > hi {
        hi
    } else {
        v
    }
}

/// `init + rng.uniform(-scale, scale, size=len)`, as Gymnasium's reset noise.
pub(crate) fn uniform_noise(rng: &mut NumpyRng, init: &[f64], scale: f64) -> Vec<f64> {
    init.iter()
        .map(|&x| x + rng.uniform(-scale, scale))
        .collect()
}

/// `init + scale * rng.standard_normal(len)`.
pub(crate) fn normal_noise(rng: &mut NumpyRng, init: &[f64], scale: f64) -> Vec<f64> {
    init.iter()
        .map(|&x| x + scale * rng.standard_normal())
        .collect()
}

/// `weight * np.sum(np.square(action))` for a `float32` action: NumPy 2 computes the whole
/// cost in `float32` (the Python-float weight is a weak scalar).
pub(crate) fn action_cost(weight: f64, action: &[f32]) -> f64 {
    let squares: Vec<f32> = action.iter().map(|a| a * a).collect();
    f64::from(weight as f32 * pairwise_sum(&squares))
}

/// `np.sum(np.square(values))` of `float64` values.
pub(crate) fn sum_of_squares(values: impl IntoIterator<Item = f64>) -> f64 {
    let squares: Vec<f64> = values.into_iter().map(|v| v * v).collect();
    pairwise_sum(&squares)
}

/// The reset all the tasks but Reacher share: uniform noise on positions, then uniform or
/// normal noise on velocities, and `set_state`.
pub(crate) fn reset_with_noise(sim: &mut Sim, rng: &mut NumpyRng, scale: f64, normal_qvel: bool) {
    let qpos = uniform_noise(rng, sim.init_qpos(), scale);
    let qvel = if normal_qvel {
        normal_noise(rng, sim.init_qvel(), scale)
    } else {
        uniform_noise(rng, sim.init_qvel(), scale)
    };
    sim.set_state(&qpos, &qvel);
}

/// Appends an (x, y) position a task keeps between steps.
pub(crate) fn save_xy(out: &mut StateWriter, xy: &[f64; 2]) {
    out.f64s(xy);
}

/// Reads what [`save_xy`] wrote.
///
/// # Errors
/// A snapshot of something else.
pub(crate) fn load_xy(src: &mut StateReader<'_>) -> Result<[f64; 2]> {
    let v = src.f64s(Some(2))?;
    Ok([v[0], v[1]])
}
