//! [`MujocoEnv`]: a Gymnasium v5 MuJoCo task as an Ember [`Env`].

use super::sim::{Sim, default_xml_path};
use super::task::Task;
use super::tasks;
use crate::checks;
use crate::numpy_random::NumpyRng;
use emberlab_core::state::{StateReader, StateWriter};
use emberlab_core::{Action, BoxSpace, Env, Error, Result, Space, StepInfo};
use std::path::Path;

/// One of Gymnasium 1.4's MuJoCo v5 tasks with its default arguments, simulated by the
/// MuJoCo library itself (the same `libmujoco.so.3.17.0` Gymnasium's `mujoco==3.17.0`
/// uses), so that from the same state and actions it produces Gymnasium's transitions.
///
/// Build it by id ([`MujocoEnv::new`]; [`crate::make`] adds the 1,000-step time limit) from
/// the task's XML file in Gymnasium's package (found through `EMBER_GYMNASIUM_ASSETS`), or
/// from a file of your own ([`MujocoEnv::with_xml`]). Observations are Gymnasium's
/// `float64` values rounded to `f32`; rewards are `f64`, and their terms (Gymnasium's `info`
/// keys such as `reward_forward`, `reward_ctrl`) are kept by [`MujocoEnv::reward_terms`].
///
/// The reset noise is drawn from NumPy's generator as Gymnasium seeds it
/// (`np.random.default_rng(seed)`), the normal noise (HalfCheetah, Ant and
/// InvertedDoublePendulum velocities) by NumPy's own sampler ([`crate::NumpyRng`]): a seeded
/// reset puts every task into Gymnasium's state to the bit.
///
/// Snapshots ([`Env::save_state`]) hold MuJoCo's full integration state (positions,
/// velocities, activations, controls, warm start, time), the generator and what the task
/// keeps between steps: a loaded snapshot continues bit for bit.
///
/// ```no_run
/// use emberlab_core::{Action, Env};
/// use emberlab_env::MujocoEnv;
///
/// let mut env = MujocoEnv::new("HalfCheetah-v5")?;
/// let obs = env.reset(Some(0))?;
/// assert_eq!(obs.len(), 17);
/// let step = env.step(Action::Continuous(&[0.1; 6]))?;
/// println!("{} = {:?}", step.reward, env.reward_terms());
/// # Ok::<(), emberlab_core::Error>(())
/// ```
pub struct MujocoEnv {
    task: Box<dyn Task>,
    sim: Sim,
    rng: NumpyRng,
    observation_space: Space,
    action_space: Space,
    terms: Vec<f64>,
    started: bool,
}

impl std::fmt::Debug for MujocoEnv {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("MujocoEnv")
            .field("id", &self.id())
            .field("sim", &self.sim)
            .finish()
    }
}

impl MujocoEnv {
    /// The simulation (model and data), for the renderer.
    #[cfg(feature = "mujoco-render")]
    pub(super) fn sim_mut(&mut self) -> &mut Sim {
        &mut self.sim
    }

    #[cfg(feature = "mujoco-render")]
    pub(super) fn sim(&self) -> &Sim {
        &self.sim
    }

    /// The task registered as `id` (e.g. `"Hopper-v5"`), from Gymnasium's XML file.
    ///
    /// # Errors
    /// An unknown id (listing the known ones), `EMBER_GYMNASIUM_ASSETS` not set, or the
    /// model file missing or not loadable.
    pub fn new(id: &str) -> Result<Self> {
        let task = known_task(id)?;
        let path = default_xml_path(task.spec().xml_file)?;
        Self::build(task, &path)
    }

    /// The task `id` on the model in `xml` (a variant of the task's model with the same
    /// joints, as Gymnasium's `xml_file` argument).
    ///
    /// # Errors
    /// As [`MujocoEnv::new`], for the given file.
    pub fn with_xml(id: &str, xml: impl AsRef<Path>) -> Result<Self> {
        Self::build(known_task(id)?, xml.as_ref())
    }

    fn build(mut task: Box<dyn Task>, path: &Path) -> Result<Self> {
        let sim = Sim::load(path, task.spec().frame_skip)?;
        task.check_model(&sim)?;
        let dim = task.obs_dim(&sim);
        let observation_space =
            Space::Box(BoxSpace::uniform(dim, f32::NEG_INFINITY, f32::INFINITY)?);
        let (low, high) = sim.ctrl_bounds();
        let action_space = Space::Box(BoxSpace::new(low, high)?);
        let terms = vec![0.0; task.spec().reward_terms.len()];
        Ok(MujocoEnv {
            task,
            sim,
            rng: NumpyRng::seed_from(crate::DEFAULT_SEED),
            observation_space,
            action_space,
            terms,
            started: false,
        })
    }

    /// The Gymnasium id, e.g. `"HalfCheetah-v5"`.
    pub fn id(&self) -> &'static str {
        self.task.spec().id
    }

    /// The registered episode length (1,000 steps; Reacher 50).
    pub fn max_episode_steps(&self) -> u32 {
        self.task.spec().max_episode_steps
    }

    /// The simulated time of one env step (`timestep × frame_skip`), in seconds.
    pub fn dt(&self) -> f64 {
        self.sim.dt()
    }

    /// The generalized positions (`data.qpos`).
    pub fn qpos(&self) -> &[f64] {
        self.sim.qpos()
    }

    /// The generalized velocities (`data.qvel`).
    pub fn qvel(&self) -> &[f64] {
        self.sim.qvel()
    }

    /// The last step's reward terms, named as Gymnasium's `info` keys (zeros before the
    /// first step). Their sum in the task's order of operations is the reward.
    pub fn reward_terms(&self) -> Vec<(&'static str, f64)> {
        self.task
            .spec()
            .reward_terms
            .iter()
            .copied()
            .zip(self.terms.iter().copied())
            .collect()
    }

    /// Gymnasium's `env.unwrapped.set_state(qpos, qvel)`: overwrites the positions and
    /// velocities (then `mj_forward`), as if an episode had been reset into them.
    ///
    /// # Errors
    /// Wrong lengths or a value that is not finite; the environment is then unchanged.
    pub fn set_state(&mut self, qpos: &[f64], qvel: &[f64]) -> Result<()> {
        Error::check_len("qpos", self.sim.nq(), qpos.len())?;
        Error::check_len("qvel", self.sim.nv(), qvel.len())?;
        for (name, values) in [("qpos", qpos), ("qvel", qvel)] {
            for (i, &v) in values.iter().enumerate() {
                Error::check_finite(|| format!("{name}[{i}]"), v)?;
            }
        }
        self.sim.set_state(qpos, qvel);
        self.task.after_set_state(&self.sim);
        self.started = true;
        Ok(())
    }

    /// Writes the observation of the current state into `obs`.
    ///
    /// # Errors
    /// A wrong-length buffer, or no state yet (before the first reset).
    pub fn observe_into(&self, obs: &mut [f32]) -> Result<()> {
        checks::obs_len(obs, &self.observation_space)?;
        if !self.started {
            return Err(checks::reset_needed(self.id()));
        }
        self.task.observe(&self.sim, obs);
        Ok(())
    }
}

/// The task for `id`, or an error listing the MuJoCo ids.
fn known_task(id: &str) -> Result<Box<dyn Task>> {
    tasks::task(id).ok_or_else(|| {
        Error::invalid(
            "MuJoCo task id",
            id,
            format!("one of {}", tasks::IDS.join(", ")),
        )
    })
}

impl Env for MujocoEnv {
    fn observation_space(&self) -> &Space {
        &self.observation_space
    }

    fn action_space(&self) -> &Space {
        &self.action_space
    }

    fn reset_into(&mut self, seed: Option<u64>, obs: &mut [f32]) -> Result<()> {
        checks::obs_len(obs, &self.observation_space)?;
        if let Some(seed) = seed {
            self.rng = NumpyRng::seed_from(seed);
        }
        self.sim.reset_data();
        self.task.reset(&mut self.sim, &mut self.rng);
        self.task.after_set_state(&self.sim);
        self.terms.fill(0.0);
        self.started = true;
        self.task.observe(&self.sim, obs);
        Ok(())
    }

    fn step_into(&mut self, action: Action<'_>, obs: &mut [f32]) -> Result<StepInfo> {
        let action = checks::continuous_action(action, &self.action_space)?;
        checks::obs_len(obs, &self.observation_space)?;
        if !self.started {
            return Err(checks::reset_needed(self.id()));
        }
        let out = self.task.step(&mut self.sim, action, &mut self.terms);
        self.task.observe(&self.sim, obs);
        Ok(StepInfo {
            reward: out.reward,
            terminated: out.terminated,
            truncated: false,
        })
    }

    fn save_state(&self, out: &mut StateWriter) -> Result<()> {
        out.str(self.id()).bool(self.started);
        // Nested, so that a load can check the simulation's part before touching anything.
        let mut sim_words = StateWriter::new();
        self.sim.save(&mut sim_words);
        out.nested(sim_words.words());
        self.rng.save(out);
        self.task.save(out);
        out.f64s(&self.terms);
        Ok(())
    }

    fn load_state(&mut self, src: &mut StateReader<'_>) -> Result<()> {
        let id = src.string()?;
        if id != self.id() {
            return Err(Error::invalid(
                "environment snapshot",
                format!("a snapshot of {id}"),
                format!("a snapshot of {}", self.id()),
            ));
        }
        let started = src.bool()?;
        let sim_words = src.nested()?;
        let rng = NumpyRng::load(src)?;
        let mut task_words = StateWriter::new();
        self.task.save(&mut task_words);
        // The task loads in place and is rolled back if what follows fails: a bad snapshot
        // leaves the environment as it was (the simulation's part is checked whole before
        // it is applied).
        let before = task_words.into_words();
        self.task.load(src)?;
        let terms = match src.f64s(Some(self.terms.len())) {
            Ok(t) => t,
            Err(e) => {
                self.task
                    .load(&mut StateReader::new(&before, "task state"))?;
                return Err(e);
            }
        };
        if let Err(e) = self
            .sim
            .restore(&mut StateReader::new(sim_words, "MuJoCo state"))
        {
            self.task
                .load(&mut StateReader::new(&before, "task state"))?;
            return Err(e);
        }
        self.rng = rng;
        self.terms = terms;
        self.started = started;
        Ok(())
    }
}
