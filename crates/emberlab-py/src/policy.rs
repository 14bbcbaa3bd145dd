//! `emberlab.load_policy`: a trained run's policy acting on NumPy observations, loaded as
//! `ember eval` loads it (the same learner, weights and observation statistics), with the
//! GIL released while it acts.

use crate::arrays::{bytes, floats, shape_str, to_numpy};
use crate::envs::space_dict;
use emberlab_algo::ActionBuf;
use emberlab_run::RunPolicy;
use numpy::PyUntypedArray;
use pyo3::exceptions::{PyFileNotFoundError, PyValueError};
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::PathBuf;
use std::sync::{Mutex, MutexGuard};

/// A run's policy (`emberlab.load_policy(run)`).
#[pyclass(module = "emberlab._emberlab", name = "Policy")]
pub struct PyPolicy {
    inner: Mutex<RunPolicy>,
    run: PathBuf,
    obs_dim: usize,
    images: Option<[usize; 3]>,
}

impl PyPolicy {
    fn lock(&self) -> MutexGuard<'_, RunPolicy> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }
}

/// `load_policy(run, best=False)`: the policy of the run folder `run` (its last checkpoint,
/// or with `best` the weights of its best evaluation).
///
/// # Errors
/// `FileNotFoundError` for a missing folder; `ValueError` naming the problem for a folder
/// that is not a run, has no checkpoint (or no best weights) yet, or holds weights that do
/// not load (another architecture, a damaged file), and for an environment this wheel was
/// built without.
#[pyfunction]
#[pyo3(signature = (run, best=false))]
pub fn load_policy(py: Python<'_>, run: PathBuf, best: bool) -> PyResult<PyPolicy> {
    if !run.exists() {
        return Err(PyFileNotFoundError::new_err(format!(
            "no run folder {}",
            run.display()
        )));
    }
    let policy = py
        .detach(|| RunPolicy::load(&run, best))
        .map_err(|e| PyValueError::new_err(e.chain()))?;
    Ok(PyPolicy {
        obs_dim: policy.obs_dim(),
        images: policy.images(),
        inner: Mutex::new(policy),
        run,
    })
}

impl PyPolicy {
    /// [`PyPolicy::act`] for a policy on images: uint8 stacks `(c, h, w)` or `(n, c, h,
    /// w)`, or channels last as SB3's `VecFrameStack` gives them (`(h, w, c)`, `(n, h, w,
    /// c)`); int64 actions `()` / `(n,)`.
    fn act_frames<'py>(
        &self,
        py: Python<'py>,
        obs: &Bound<'py, PyAny>,
        [c, h, w]: [usize; 3],
        deterministic: bool,
    ) -> PyResult<Bound<'py, PyUntypedArray>> {
        let values = bytes(obs, "obs")?;
        let shape = values.shape.as_slice();
        let (batched, last) = match shape {
            [a, b, d] if [*a, *b, *d] == [c, h, w] => (false, false),
            [a, b, d] if [*a, *b, *d] == [h, w, c] => (false, true),
            [n, a, b, d] if *n > 0 && [*a, *b, *d] == [c, h, w] => (true, false),
            [n, a, b, d] if *n > 0 && [*a, *b, *d] == [h, w, c] => (true, true),
            got => {
                return Err(PyValueError::new_err(format!(
                    "obs has shape {}, expected uint8 stacks ({c}, {h}, {w}) or (n, {c}, {h}, \
                     {w}), or channels last ({h}, {w}, {c}) / (n, {h}, {w}, {c}) as SB3's \
                     VecFrameStack gives them",
                    shape_str(got)
                )));
            }
        };
        let rows = if batched { shape[0] } else { 1 };
        let data = values.data();
        let actions = py
            .detach(|| {
                let first;
                let stacks = if last {
                    first = channels_first(data, rows, [c, h, w]);
                    &first[..]
                } else {
                    data
                };
                self.lock().act_frames(stacks, !deterministic)
            })
            .map_err(|e| PyValueError::new_err(e.chain()))?;
        let ActionBuf::Discrete(a) = actions else {
            return Err(PyValueError::new_err(
                "a policy on images acts in a Discrete space",
            ));
        };
        let a: Vec<i64> = a.into_iter().map(|i| i as i64).collect();
        let shape: &[usize] = if batched { &[rows] } else { &[] };
        Ok(to_numpy(py, a, shape)?
            .into_any()
            .cast_into::<PyUntypedArray>()?)
    }
}

/// `rows` stacks `(h, w, c)` (channels last) as `(c, h, w)`.
fn channels_first(data: &[u8], rows: usize, [c, h, w]: [usize; 3]) -> Vec<u8> {
    let mut out = vec![0u8; data.len()];
    let plane = h * w;
    for r in 0..rows {
        let (src, dst) = (&data[r * c * plane..], &mut out[r * c * plane..]);
        for p in 0..plane {
            for k in 0..c {
                dst[k * plane + p] = src[p * c + k];
            }
        }
    }
    out
}

#[pymethods]
impl PyPolicy {
    /// The actions for one observation (shape `(obs_dim,)`) or a batch (`(n, obs_dim)`):
    /// float32 `(act_dim,)` / `(n, act_dim)` for a `Box` action space, int64 `()` / `(n,)`
    /// for a `Discrete` one. A policy on images (an Atari run, `frame_stack` not `None`)
    /// takes uint8 stacks `(4, 84, 84)` / `(n, 4, 84, 84)`, or channels last as SB3's
    /// `VecFrameStack` gives them (`(84, 84, 4)`, `(n, 84, 84, 4)`). `deterministic=False`
    /// acts with the behaviour policy the run trained with (sampled actions, ε-greedy).
    #[pyo3(signature = (obs, deterministic=true))]
    fn act<'py>(
        &self,
        py: Python<'py>,
        obs: &Bound<'py, PyAny>,
        deterministic: bool,
    ) -> PyResult<Bound<'py, PyUntypedArray>> {
        if let Some(stack) = self.images {
            return self.act_frames(py, obs, stack, deterministic);
        }
        let values = floats(obs, "obs")?;
        let (rows, batched) = match values.shape.as_slice() {
            [d] if *d == self.obs_dim => (1, false),
            [n, d] if *d == self.obs_dim && *n > 0 => (*n, true),
            got => {
                return Err(PyValueError::new_err(format!(
                    "obs has shape {}, expected ({},) or (n, {}) with n >= 1",
                    shape_str(got),
                    self.obs_dim,
                    self.obs_dim
                )));
            }
        };
        let data = values.data();
        if !emberlab_core::all_finite(data) {
            return Err(PyValueError::new_err(
                "obs holds a NaN or an infinity; the policy acts on finite observations",
            ));
        }
        let actions = py
            .detach(|| self.lock().act_with(data, !deterministic))
            .map_err(|e| PyValueError::new_err(e.chain()))?;
        let array = match actions {
            ActionBuf::Continuous(a) => {
                let d = a.len() / rows;
                let shape: &[usize] = if batched { &[rows, d] } else { &[d] };
                to_numpy(py, a, shape)?.into_any()
            }
            ActionBuf::Discrete(a) => {
                let a: Vec<i64> = a.into_iter().map(|i| i as i64).collect();
                let shape: &[usize] = if batched { &[rows] } else { &[] };
                to_numpy(py, a, shape)?.into_any()
            }
        };
        Ok(array.cast_into::<PyUntypedArray>()?)
    }

    /// Width of one observation (for a policy on images, the bytes of one stack).
    #[getter]
    fn obs_dim(&self) -> usize {
        self.obs_dim
    }

    /// `(c, h, w)` of the uint8 frame stacks a policy on images reads (an Atari run:
    /// `(4, 84, 84)`); `None` for a policy of vectors.
    #[getter]
    fn frame_stack(&self) -> Option<(usize, usize, usize)> {
        self.images.map(|[c, h, w]| (c, h, w))
    }

    /// The action space, as a dict (see `emberlab/gym.py`).
    #[getter]
    fn action_space<'py>(&self, py: Python<'py>) -> PyResult<Bound<'py, PyDict>> {
        space_dict(py, self.lock().action_space())
    }

    /// The environment id the run trained on.
    #[getter]
    fn env_id(&self) -> String {
        self.lock().env_id().to_string()
    }

    /// The algorithm that trained it.
    #[getter]
    fn algo(&self) -> String {
        self.lock().algo().to_string()
    }

    /// The run folder.
    #[getter]
    fn run(&self) -> PathBuf {
        self.run.clone()
    }

    fn __repr__(&self) -> String {
        let p = self.lock();
        format!(
            "Policy(run={:?}, algo={:?}, env_id={:?})",
            self.run.display().to_string(),
            p.algo(),
            p.env_id()
        )
    }
}
