//! `emberlab.VecEnv` and `emberlab.Env`: Ember's environments from Python, stepped with the GIL
//! released. The Python package wraps them as `gymnasium.vector.VectorEnv` and
//! `gymnasium.Env` (`emberlab/gym.py`).

use crate::arrays::{Values, floats, ints, shape_str, to_numpy};
use crate::errors::IntoPy;
use emberlab_core::{Action, Env, Space};
use emberlab_env::{ThreadedVecEnv, VecActions, VecEnv};
use numpy::PyArrayDyn;
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::sync::{Mutex, MutexGuard};

/// The ids of every registered environment (`emberlab.env_ids()`).
#[pyfunction]
pub fn env_ids() -> Vec<String> {
    emberlab_env::ids()
}

/// A space as a dict: `{"kind": "box", "low": array, "high": array}` or
/// `{"kind": "discrete", "n": n}`.
pub(crate) fn space_dict<'py>(py: Python<'py>, space: &Space) -> PyResult<Bound<'py, PyDict>> {
    let d = PyDict::new(py);
    match space {
        Space::Box(b) => {
            let n = b.dim();
            d.set_item("kind", "box")?;
            d.set_item("low", to_numpy(py, b.low().to_vec(), &[n])?)?;
            d.set_item("high", to_numpy(py, b.high().to_vec(), &[n])?)?;
        }
        Space::Discrete(s) => {
            d.set_item("kind", "discrete")?;
            d.set_item("n", s.n())?;
        }
    }
    Ok(d)
}

/// An environment's spaces, read once when it is built.
struct Spaces {
    obs_dim: usize,
    observation: Space,
    action: Space,
}

impl Spaces {
    fn of(observation: &Space, action: &Space) -> Self {
        Spaces {
            obs_dim: observation.flat_dim(),
            observation: observation.clone(),
            action: action.clone(),
        }
    }
}

/// Actions from Python for `n` sub-environments (`batched`) or one environment.
enum Actions {
    Discrete(Vec<usize>),
    Continuous(Vec<f32>),
}

fn actions(obj: &Bound<'_, PyAny>, space: &Space, n: usize, batched: bool) -> PyResult<Actions> {
    let want = |per: &[usize]| {
        let mut w = if batched { vec![n] } else { Vec::new() };
        w.extend_from_slice(per);
        w
    };
    let shape_error = |got: &[usize], want: &[usize]| {
        PyValueError::new_err(format!(
            "actions have shape {}, expected {}",
            shape_str(got),
            shape_str(want)
        ))
    };
    match space {
        Space::Discrete(d) => {
            let a: Values<'_, i64> = ints(obj, "actions")?;
            if a.shape != want(&[]) {
                return Err(shape_error(&a.shape, &want(&[])));
            }
            a.data()
                .iter()
                .map(|&x| {
                    usize::try_from(x)
                        .ok()
                        .filter(|&u| u < d.n())
                        .ok_or_else(|| {
                            PyValueError::new_err(format!(
                                "action {x} is outside the action space Discrete({})",
                                d.n()
                            ))
                        })
                })
                .collect::<PyResult<_>>()
                .map(Actions::Discrete)
        }
        Space::Box(b) => {
            let a = floats(obj, "actions")?;
            if a.shape != want(&[b.dim()]) {
                return Err(shape_error(&a.shape, &want(&[b.dim()])));
            }
            Ok(Actions::Continuous(a.data().to_vec()))
        }
    }
}

/// A vector environment: `num_envs` copies of a registered environment stepped by
/// `workers` threads (Ember's [`ThreadedVecEnv`]) with Gymnasium's next-step autoreset.
#[pyclass(module = "emberlab._emberlab", name = "VecEnv")]
pub struct PyVecEnv {
    inner: Mutex<ThreadedVecEnv>,
    id: String,
    num_envs: usize,
    spaces: Spaces,
}

impl PyVecEnv {
    fn lock(&self) -> MutexGuard<'_, ThreadedVecEnv> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[pymethods]
impl PyVecEnv {
    /// `VecEnv(env_id, num_envs, workers=1)`: `num_envs` must be a multiple of `workers`.
    #[new]
    #[pyo3(signature = (env_id, num_envs, workers=1))]
    fn new(py: Python<'_>, env_id: &str, num_envs: usize, workers: usize) -> PyResult<Self> {
        if workers == 0 || num_envs == 0 || !num_envs.is_multiple_of(workers) {
            return Err(PyValueError::new_err(format!(
                "num_envs ({num_envs}) must be a positive multiple of workers ({workers})"
            )));
        }
        let envs = py
            .detach(|| ThreadedVecEnv::from_id(env_id, workers, num_envs / workers))
            .py()?;
        let spaces = Spaces::of(envs.single_observation_space(), envs.single_action_space());
        Ok(PyVecEnv {
            inner: Mutex::new(envs),
            id: env_id.to_string(),
            num_envs,
            spaces,
        })
    }

    /// Resets every sub-environment (sub-environment `i` with `seed + i` when a seed is
    /// given); returns the `(num_envs, obs_dim)` float32 observations.
    #[pyo3(signature = (seed=None))]
    fn reset<'py>(
        &self,
        py: Python<'py>,
        seed: Option<u64>,
    ) -> PyResult<Bound<'py, PyArrayDyn<f32>>> {
        let obs = py
            .detach(|| self.lock().reset(seed).map(|o| o.to_vec()))
            .py()?;
        to_numpy(py, obs, &[self.num_envs, self.spaces.obs_dim])
    }

    /// Steps every sub-environment: returns `(obs, rewards, terminated, truncated)`, NumPy
    /// arrays of `num_envs` rows (float32, float64, bool, bool).
    #[allow(clippy::type_complexity)]
    fn step<'py>(
        &self,
        py: Python<'py>,
        actions_in: &Bound<'py, PyAny>,
    ) -> PyResult<(
        Bound<'py, PyArrayDyn<f32>>,
        Bound<'py, PyArrayDyn<f64>>,
        Bound<'py, PyArrayDyn<bool>>,
        Bound<'py, PyArrayDyn<bool>>,
    )> {
        let a = actions(actions_in, &self.spaces.action, self.num_envs, true)?;
        let (obs, rewards, terminated, truncated) = py
            .detach(|| {
                let mut envs = self.lock();
                let step = match &a {
                    Actions::Discrete(d) => envs.step(VecActions::Discrete(d)),
                    Actions::Continuous(c) => envs.step(VecActions::Continuous(c)),
                }?;
                Ok::<_, emberlab_core::Error>((
                    step.obs.to_vec(),
                    step.rewards.to_vec(),
                    step.terminated.to_vec(),
                    step.truncated.to_vec(),
                ))
            })
            .py()?;
        let n = self.num_envs;
        Ok((
            to_numpy(py, obs, &[n, self.spaces.obs_dim])?,
            to_numpy(py, rewards, &[n])?,
            to_numpy(py, terminated, &[n])?,
            to_numpy(py, truncated, &[n])?,
        ))
    }

    /// The observation space of one sub-environment, as a dict (see `emberlab/gym.py`).
    #[getter]
    fn single_observation_space<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        space_dict(py, &self.spaces.observation)
    }

    /// The action space of one sub-environment, as a dict.
    #[getter]
    fn single_action_space<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        space_dict(py, &self.spaces.action)
    }

    /// Number of sub-environments.
    #[getter]
    fn num_envs(&self) -> usize {
        self.num_envs
    }

    /// The registered id.
    #[getter]
    fn env_id(&self) -> String {
        self.id.clone()
    }
}

/// One environment (a registered id), for `gymnasium.Env` users and Gymnasium's checker.
#[pyclass(module = "emberlab._emberlab", name = "Env")]
pub struct PyEnv {
    inner: Mutex<Box<dyn Env>>,
    id: String,
    spaces: Spaces,
}

impl PyEnv {
    fn lock(&self) -> MutexGuard<'_, Box<dyn Env>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

#[pymethods]
impl PyEnv {
    /// `Env(env_id)`.
    #[new]
    fn new(env_id: &str) -> PyResult<Self> {
        let env = emberlab_env::make(env_id).py()?;
        let spaces = Spaces::of(env.observation_space(), env.action_space());
        Ok(PyEnv {
            inner: Mutex::new(env),
            id: env_id.to_string(),
            spaces,
        })
    }

    /// Starts an episode (seeded when `seed` is given); returns the float32 observation.
    #[pyo3(signature = (seed=None))]
    fn reset<'py>(
        &self,
        py: Python<'py>,
        seed: Option<u64>,
    ) -> PyResult<Bound<'py, PyArrayDyn<f32>>> {
        let obs = py.detach(|| self.lock().reset(seed)).py()?;
        to_numpy(py, obs, &[self.spaces.obs_dim])
    }

    /// One step: `(obs, reward, terminated, truncated)`.
    #[allow(clippy::type_complexity)]
    fn step<'py>(
        &self,
        py: Python<'py>,
        action: &Bound<'py, PyAny>,
    ) -> PyResult<(Bound<'py, PyArrayDyn<f32>>, f64, bool, bool)> {
        let a = actions(action, &self.spaces.action, 1, false)?;
        let step = py
            .detach(|| {
                let mut env = self.lock();
                match &a {
                    Actions::Discrete(d) => env.step(Action::Discrete(d[0])),
                    Actions::Continuous(c) => env.step(Action::Continuous(c)),
                }
            })
            .py()?;
        Ok((
            to_numpy(py, step.obs, &[self.spaces.obs_dim])?,
            step.reward,
            step.terminated,
            step.truncated,
        ))
    }

    /// The observation space, as a dict (see `emberlab/gym.py`).
    #[getter]
    fn observation_space<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        space_dict(py, &self.spaces.observation)
    }

    /// The action space, as a dict.
    #[getter]
    fn action_space<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        space_dict(py, &self.spaces.action)
    }

    /// The registered id.
    #[getter]
    fn env_id(&self) -> String {
        self.id.clone()
    }
}
