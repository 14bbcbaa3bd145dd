//! `emberlab.ReplayBuffer`: Ember's replay buffers from Python.
//!
//! Transitions go in as NumPy arrays, one or a batch at a time, through an
//! [`EpisodeWriter`] (n-step returns per sub-environment, episode-return scores for
//! return-weighted sampling); samples come out as NumPy arrays owned by Python. Every
//! argument is checked before anything is written, and the GIL is released while the
//! buffer works.

use crate::arrays::{
    Values, check_finite, check_indices, floats, ints, shape_arg, shape_str, to_numpy,
};
use crate::errors::IntoPy;
use emberlab_core::state::{StateReader, StateWriter, load_words, save_words};
use emberlab_core::{Batch, Transition};
use emberlab_replay::{AnySampler, EpisodeWriter, ReplayBuffer, RingStorage, Sampler};
use pyo3::exceptions::PyValueError;
use pyo3::prelude::*;
use pyo3::types::PyDict;
use std::path::{Path, PathBuf};
use std::sync::{Mutex, MutexGuard};

/// The kind tag of the file beside a saved buffer that holds what Python adds to it.
const SIDECAR_KIND: &str = "emberlab-py replay";
const SIDECAR_VERSION: u64 = 1;

/// A replay buffer for Python: storage, sampler and generator (Ember's
/// [`ReplayBuffer`]) fed by an [`EpisodeWriter`]. See `emberlab/_emberlab.pyi` for the Python
/// signatures.
#[pyclass(module = "emberlab._emberlab", name = "ReplayBuffer")]
pub struct PyReplay {
    inner: Mutex<Inner>,
    obs_shape: Vec<usize>,
    action_shape: Vec<usize>,
    n_step: usize,
    gamma: f64,
}

struct Inner {
    buffer: ReplayBuffer<AnySampler>,
    writer: EpisodeWriter,
}

/// The rows of one `add` call, checked; the float columns read in place.
struct Rows<'py> {
    n: usize,
    obs: Values<'py, f32>,
    next_obs: Values<'py, f32>,
    action: Values<'py, f32>,
    reward: Values<'py, f32>,
    terminated: Vec<bool>,
    truncated: Vec<bool>,
}

fn product(shape: &[usize]) -> usize {
    shape.iter().product()
}

/// [`AnySampler::named`], with Python's wording of an unknown name.
fn sampler_for(
    kind: &str,
    capacity: usize,
    alpha: f64,
    beta: f64,
    eps: f64,
) -> PyResult<AnySampler> {
    AnySampler::named(kind, capacity, alpha, beta, eps).map_err(|e| match e {
        emberlab_core::Error::InvalidArgument { name, .. } if name == "sampler" => {
            PyValueError::new_err(format!(
                "sampler must be \"uniform\", \"prioritized\" or \"return_weighted\", got {kind:?}"
            ))
        }
        e => crate::errors::to_py(e),
    })
}

fn sidecar(path: &Path) -> PathBuf {
    let mut s = path.as_os_str().to_owned();
    s.push(".episodes");
    PathBuf::from(s)
}

impl PyReplay {
    fn lock(&self) -> MutexGuard<'_, Inner> {
        // A panic inside the buffer cannot leave it half-written (every write is checked
        // first), so a poisoned lock still guards a consistent buffer.
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    fn obs_dim(&self) -> usize {
        product(&self.obs_shape)
    }

    /// Values per action (1 for a scalar action: the product of no dimensions).
    fn act_dim(&self) -> usize {
        product(&self.action_shape)
    }

    /// The number of rows `obs` holds: 1 for one observation of `obs_shape`, `B` for
    /// `(B, *obs_shape)`.
    fn rows_of(&self, obs: &Values<'_, f32>, name: &str) -> PyResult<(usize, bool)> {
        if obs.shape == self.obs_shape {
            Ok((1, false))
        } else if obs.shape.len() == self.obs_shape.len() + 1
            && obs.shape[1..] == self.obs_shape[..]
        {
            Ok((obs.shape[0], true))
        } else {
            Err(PyValueError::new_err(format!(
                "{name} has shape {}, expected obs_shape {} or (batch, {})",
                shape_str(&obs.shape),
                shape_str(&self.obs_shape),
                shape_str(&self.obs_shape)
                    .trim_start_matches('(')
                    .trim_end_matches(')')
                    .trim_end_matches(','),
            )))
        }
    }

    /// Checks that `v` has the shape `per_row` for each of `n` rows (`batched`) or for
    /// one row.
    fn check_shape(
        v: &Values<'_, impl numpy::Element>,
        n: usize,
        batched: bool,
        per_row: &[usize],
        name: &str,
    ) -> PyResult<()> {
        let mut want: Vec<usize> = if batched { vec![n] } else { Vec::new() };
        want.extend_from_slice(per_row);
        // A scalar per row may also come as a column of width 1: (n, 1).
        let column = per_row.is_empty() && batched && v.shape == [n, 1];
        if v.shape == want || column {
            Ok(())
        } else {
            Err(PyValueError::new_err(format!(
                "{name} has shape {}, expected {} for {n} transition{}",
                shape_str(&v.shape),
                shape_str(&want),
                if n == 1 { "" } else { "s" }
            )))
        }
    }

    fn flags(
        obj: Option<&Bound<'_, PyAny>>,
        n: usize,
        batched: bool,
        name: &str,
    ) -> PyResult<Vec<bool>> {
        let Some(obj) = obj else {
            return Ok(vec![false; n]);
        };
        // Boolean arrays are read as they are; numbers must be 0 or 1.
        if let Ok(b) = obj.cast::<numpy::PyArrayDyn<bool>>() {
            let v = crate::arrays::contiguous::<bool>(b.as_any(), "bool")?;
            Self::check_shape(&v, n, batched, &[], name)?;
            return Ok(v.data().to_vec());
        }
        let v = floats(obj, name)?;
        Self::check_shape(&v, n, batched, &[], name)?;
        v.data()
            .iter()
            .map(|&x| match x {
                0.0 => Ok(false),
                1.0 => Ok(true),
                _ => Err(PyValueError::new_err(format!(
                    "{name} must hold booleans (or 0/1), got {x}"
                ))),
            })
            .collect()
    }

    #[allow(clippy::too_many_arguments)]
    fn rows<'py>(
        &self,
        obs: &Bound<'py, PyAny>,
        action: &Bound<'py, PyAny>,
        reward: &Bound<'py, PyAny>,
        next_obs: &Bound<'py, PyAny>,
        terminated: &Bound<'py, PyAny>,
        truncated: Option<&Bound<'py, PyAny>>,
        envs: usize,
    ) -> PyResult<Rows<'py>> {
        let o = floats(obs, "obs")?;
        let (n, batched) = self.rows_of(&o, "obs")?;
        let no = floats(next_obs, "next_obs")?;
        Self::check_shape(&no, n, batched, &self.obs_shape, "next_obs")?;
        let a = floats(action, "action")?;
        Self::check_shape(&a, n, batched, &self.action_shape, "action")?;
        let r = floats(reward, "reward")?;
        Self::check_shape(&r, n, batched, &[], "reward")?;
        let terminated = Self::flags(Some(terminated), n, batched, "terminated")?;
        let truncated = Self::flags(truncated, n, batched, "truncated")?;
        if !n.is_multiple_of(envs) {
            return Err(PyValueError::new_err(format!(
                "{n} transitions do not make whole steps of num_envs = {envs}: rows are \
                 taken as consecutive steps of the {envs} sub-environments"
            )));
        }
        for (values, name) in [
            (&o, "obs"),
            (&no, "next_obs"),
            (&a, "action"),
            (&r, "reward"),
        ] {
            check_finite(values.data(), name)?;
        }
        Ok(Rows {
            n,
            obs: o,
            next_obs: no,
            action: a,
            reward: r,
            terminated,
            truncated,
        })
    }
}

#[pymethods]
impl PyReplay {
    /// `ReplayBuffer(capacity, obs_shape, action_shape=(), *, sampler="uniform", n_step=1,
    /// gamma=0.99, alpha=0.6, beta=0.4, eps=1e-6, num_envs=1, seed=0)`.
    #[new]
    #[pyo3(signature = (capacity, obs_shape, action_shape=None, *, sampler="uniform", n_step=1, gamma=0.99, alpha=0.6, beta=0.4, eps=1e-6, num_envs=1, seed=0))]
    #[allow(clippy::too_many_arguments)]
    fn new(
        capacity: usize,
        obs_shape: &Bound<'_, PyAny>,
        action_shape: Option<&Bound<'_, PyAny>>,
        sampler: &str,
        n_step: usize,
        gamma: f64,
        alpha: f64,
        beta: f64,
        eps: f64,
        num_envs: usize,
        seed: u64,
    ) -> PyResult<Self> {
        if capacity == 0 {
            return Err(PyValueError::new_err("capacity must be at least 1"));
        }
        if num_envs == 0 {
            return Err(PyValueError::new_err("num_envs must be at least 1"));
        }
        let obs_shape = shape_arg(obs_shape, "obs_shape")?;
        // `()` (or no shape): one number per action, e.g. a discrete index.
        let action_shape = match action_shape {
            None => Vec::new(),
            Some(s) => shape_arg(s, "action_shape")?,
        };
        let storage = RingStorage::for_n_step(
            capacity,
            product(&obs_shape),
            product(&action_shape),
            n_step,
        )
        .py()?;
        let buffer = ReplayBuffer::new(
            storage,
            sampler_for(sampler, capacity, alpha, beta, eps)?,
            seed,
        )
        .py()?;
        let writer = EpisodeWriter::new(&buffer, num_envs, n_step, gamma).py()?;
        Ok(PyReplay {
            inner: Mutex::new(Inner { buffer, writer }),
            obs_shape,
            action_shape,
            n_step,
            gamma,
        })
    }

    /// Stores one transition or a batch; returns the slots written (n-step transitions
    /// are written when their window closes, so there may be fewer or more slots than rows).
    #[pyo3(signature = (obs, action, reward, next_obs, terminated, truncated=None))]
    #[allow(clippy::too_many_arguments)]
    fn add<'py>(
        &self,
        py: Python<'py>,
        obs: &Bound<'py, PyAny>,
        action: &Bound<'py, PyAny>,
        reward: &Bound<'py, PyAny>,
        next_obs: &Bound<'py, PyAny>,
        terminated: &Bound<'py, PyAny>,
        truncated: Option<&Bound<'py, PyAny>>,
    ) -> PyResult<Bound<'py, numpy::PyArrayDyn<i64>>> {
        let envs = self.lock().writer.envs();
        let rows = self.rows(obs, action, reward, next_obs, terminated, truncated, envs)?;
        let (o, a) = (self.obs_dim(), self.act_dim());
        let (obs, next_obs, action, reward) = (
            rows.obs.data(),
            rows.next_obs.data(),
            rows.action.data(),
            rows.reward.data(),
        );
        let (n, terminated, truncated) = (rows.n, &rows.terminated, &rows.truncated);
        let slots = py.detach(|| -> emberlab_core::Result<Vec<i64>> {
            let mut guard = self.lock();
            let Inner { buffer, writer } = &mut *guard;
            let (head, pushes) = (buffer.storage().head(), writer.pushes());
            for r in 0..n {
                let t = Transition {
                    obs: &obs[r * o..(r + 1) * o],
                    action: &action[r * a..(r + 1) * a],
                    reward: reward[r],
                    next_obs: &next_obs[r * o..(r + 1) * o],
                    terminated: terminated[r],
                    truncated: truncated[r],
                };
                writer.push(r % envs, &t, buffer)?;
            }
            // The slots written, oldest first (only the last `capacity` of them survive).
            let cap = buffer.storage().capacity() as u64;
            let count = writer.pushes() - pushes;
            Ok((count.saturating_sub(cap)..count)
                .map(|i| ((head as u64 + i) % cap) as i64)
                .collect())
        });
        let slots = slots.py()?;
        let n = slots.len();
        to_numpy(py, slots, &[n])
    }

    /// Draws `batch_size` transitions: a dict of NumPy arrays `obs`, `action`, `reward`,
    /// `next_obs`, `terminated`, `truncated`, `indices`, `weights` (and `discount`, the
    /// bootstrap discount `γ^m`, with `n_step > 1`). Drawing without replacement
    /// (return-weighted) more than there are transitions of non-zero weight is a
    /// `ValueError`, unless `at_most`: the batch then holds every one of them. When every
    /// weight is zero (all scores equal), the draw is uniform.
    #[pyo3(signature = (batch_size, *, at_most=false))]
    fn sample<'py>(
        &self,
        py: Python<'py>,
        batch_size: usize,
        at_most: bool,
    ) -> PyResult<Bound<'py, PyDict>> {
        let batch = py
            .detach(|| {
                let mut b = Batch::default();
                let mut g = self.lock();
                let mut k = batch_size;
                loop {
                    // Asked for more than are stored, then for more than weigh more than
                    // zero: each error says how many there are, and the next try asks that.
                    match g.buffer.sample(k, &mut b) {
                        Err(emberlab_core::Error::NotEnough { available, .. })
                            if at_most && available > 0 && available < k =>
                        {
                            k = available
                        }
                        r => break r,
                    }
                }
                .map(|_| b)
            })
            .py()?;
        let k = batch.len;
        let d = PyDict::new(py);
        let with = |per_row: &[usize]| -> Vec<usize> {
            let mut s = vec![k];
            s.extend_from_slice(per_row);
            s
        };
        d.set_item("obs", to_numpy(py, batch.obs, &with(&self.obs_shape))?)?;
        d.set_item(
            "action",
            to_numpy(py, batch.action, &with(&self.action_shape))?,
        )?;
        d.set_item("reward", to_numpy(py, batch.reward, &[k])?)?;
        d.set_item(
            "next_obs",
            to_numpy(py, batch.next_obs, &with(&self.obs_shape))?,
        )?;
        let flags = |v: Vec<f32>| v.into_iter().map(|x| x != 0.0).collect::<Vec<bool>>();
        d.set_item("terminated", to_numpy(py, flags(batch.terminated), &[k])?)?;
        d.set_item("truncated", to_numpy(py, flags(batch.truncated), &[k])?)?;
        let idx: Vec<i64> = batch.indices.iter().map(|&i| i as i64).collect();
        d.set_item("indices", to_numpy(py, idx, &[k])?)?;
        d.set_item("weights", to_numpy(py, batch.weights, &[k])?)?;
        if let Some(discount) = batch.extras.into_iter().next() {
            d.set_item("discount", to_numpy(py, discount, &[k])?)?;
        }
        Ok(d)
    }

    /// Sets the priorities of sampled slots (prioritized replay; e.g. `|TD error|`).
    fn update_priorities(
        &self,
        py: Python<'_>,
        indices: &Bound<'_, PyAny>,
        priorities: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        self.needs("update_priorities", "prioritized")?;
        let (slots, values) = self.slots_and_values(indices, priorities, "priorities")?;
        py.detach(|| self.lock().buffer.update_priorities(&slots, &values).py())
    }

    /// Sets the scores (e.g. episode returns) of slots (return-weighted replay): slot `i`
    /// is then drawn in proportion to `score_i + |min(min_j score_j, 0)|`.
    fn set_scores(
        &self,
        py: Python<'_>,
        indices: &Bound<'_, PyAny>,
        scores: &Bound<'_, PyAny>,
    ) -> PyResult<()> {
        self.needs("set_scores", "return_weighted")?;
        let (slots, values) = self.slots_and_values(indices, scores, "scores")?;
        py.detach(|| {
            let mut g = self.lock();
            for (&s, &v) in slots.iter().zip(&values) {
                g.buffer.sampler_mut().set_score(s, v as f64).py()?;
            }
            Ok(())
        })
    }

    /// The scores of `indices` (return-weighted replay), as float64.
    fn scores<'py>(
        &self,
        py: Python<'py>,
        indices: &Bound<'py, PyAny>,
    ) -> PyResult<Bound<'py, numpy::PyArrayDyn<f64>>> {
        self.needs("scores", "return_weighted")?;
        let idx = ints(indices, "indices")?;
        let g = self.lock();
        let slots = check_indices(idx.data(), g.buffer.len(), "indices")?;
        let AnySampler::ReturnWeighted(s) = g.buffer.sampler() else {
            unreachable!("checked above")
        };
        let out: Vec<f64> = slots
            .iter()
            .map(|&i| s.score(i).unwrap_or(f64::NAN))
            .collect();
        drop(g);
        to_numpy(py, out, &idx.shape)
    }

    /// The importance-sampling exponent β of prioritized replay.
    #[getter]
    fn beta(&self) -> PyResult<f64> {
        match self.lock().buffer.sampler() {
            AnySampler::Prioritized(p) => Ok(p.beta()),
            other => Err(PyValueError::new_err(format!(
                "beta belongs to prioritized replay; this buffer's sampler is {:?}",
                other.kind()
            ))),
        }
    }

    #[setter]
    fn set_beta(&self, beta: f64) -> PyResult<()> {
        match self.lock().buffer.sampler_mut() {
            AnySampler::Prioritized(p) => p.set_beta(beta).py(),
            other => Err(PyValueError::new_err(format!(
                "beta belongs to prioritized replay; this buffer's sampler is {:?}",
                other.kind()
            ))),
        }
    }

    /// Transitions stored.
    fn __len__(&self) -> usize {
        self.lock().buffer.len()
    }

    /// Capacity in transitions.
    #[getter]
    fn capacity(&self) -> usize {
        self.lock().buffer.storage().capacity()
    }

    /// The shape of one observation.
    #[getter]
    fn obs_shape(&self) -> Vec<usize> {
        self.obs_shape.clone()
    }

    /// The shape of one action (`()` for a scalar, e.g. a discrete index).
    #[getter]
    fn action_shape(&self) -> Vec<usize> {
        self.action_shape.clone()
    }

    /// `"uniform"`, `"prioritized"` or `"return_weighted"`.
    #[getter]
    fn sampler(&self) -> &'static str {
        self.lock().buffer.sampler().kind()
    }

    /// Steps per stored transition.
    #[getter]
    fn n_step(&self) -> usize {
        self.n_step
    }

    /// Number of sub-environments whose steps `add` interleaves.
    #[getter]
    fn num_envs(&self) -> usize {
        self.lock().writer.envs()
    }

    fn __repr__(&self) -> String {
        let g = self.lock();
        format!(
            "ReplayBuffer(capacity={}, obs_shape={}, action_shape={}, sampler={:?}, n_step={}, num_envs={}, len={})",
            g.buffer.storage().capacity(),
            shape_str(&self.obs_shape),
            shape_str(&self.action_shape),
            g.buffer.sampler().kind(),
            self.n_step,
            g.writer.envs(),
            g.buffer.len()
        )
    }

    /// Saves the buffer (Ember's replay file: storage, sampler, generator, checksummed)
    /// to `path`, and the open episodes and n-step windows to `path + ".episodes"`.
    fn save(&self, py: Python<'_>, path: PathBuf) -> PyResult<()> {
        py.detach(|| {
            let g = self.lock();
            let mut w = StateWriter::new();
            w.u64(SIDECAR_VERSION);
            w.usize(self.obs_shape.len());
            for &d in &self.obs_shape {
                w.usize(d);
            }
            w.usize(self.action_shape.len());
            for &d in &self.action_shape {
                w.usize(d);
            }
            w.usize(self.n_step).f64(self.gamma).usize(g.writer.envs());
            w.usize(g.buffer.len()).usize(g.buffer.storage().head());
            g.writer.save_state(&mut w);
            save_words(&sidecar(&path), SIDECAR_KIND, w.words()).py()?;
            g.buffer.save(&path).py()
        })
    }

    /// Loads what [`PyReplay::save`] wrote. A buffer saved by Ember's trainers (no
    /// `.episodes` file) loads with flat shapes and `n_step`, `gamma` and `num_envs` from
    /// the arguments.
    #[staticmethod]
    #[pyo3(signature = (path, *, n_step=1, gamma=0.99, num_envs=1))]
    fn load(
        py: Python<'_>,
        path: PathBuf,
        n_step: usize,
        gamma: f64,
        num_envs: usize,
    ) -> PyResult<Self> {
        py.detach(|| {
            let buffer = ReplayBuffer::<AnySampler>::load(&path).py()?;
            let side = sidecar(&path);
            let words = match load_words(&side, SIDECAR_KIND) {
                Ok(w) => Some(w),
                Err(emberlab_core::Error::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => None,
                Err(e) => return Err(e).py(),
            };
            let Some(words) = words else {
                let obs_shape = vec![buffer.storage().obs_dim()];
                let action_shape = vec![buffer.storage().act_dim()];
                let writer = EpisodeWriter::new(&buffer, num_envs, n_step, gamma).py()?;
                return Ok(PyReplay { inner: Mutex::new(Inner { buffer, writer }), obs_shape, action_shape, n_step, gamma });
            };
            let what = format!("{}", side.display());
            let mut r = StateReader::new(&words, what.clone());
            let read = |r: &mut StateReader<'_>| -> emberlab_core::Result<_> {
                let version = r.u64()?;
                if version != SIDECAR_VERSION {
                    return Err(emberlab_core::Error::invalid("format version", version, SIDECAR_VERSION.to_string()));
                }
                let mut shape = || -> emberlab_core::Result<Vec<usize>> {
                    let n = r.usize()?;
                    (0..n.min(64)).map(|_| r.usize()).collect()
                };
                let obs_shape = shape()?;
                let action_shape = shape()?;
                let (n_step, gamma, envs) = (r.usize()?, r.f64()?, r.usize()?);
                let (len, head) = (r.usize()?, r.usize()?);
                Ok((obs_shape, action_shape, n_step, gamma, envs, len, head))
            };
            let (obs_shape, action_shape, n_step, gamma, envs, len, head) = read(&mut r).py()?;
            let s = buffer.storage();
            if product(&obs_shape) != s.obs_dim() || product(&action_shape) != s.act_dim() || len != s.len() || head != s.head() {
                return Err(PyValueError::new_err(format!(
                    "{what} does not belong to {}: they come from different saves (shapes {} and {}, {len} transitions, against {} and {} in the buffer file)",
                    path.display(), shape_str(&obs_shape), shape_str(&action_shape), s.obs_dim(), s.len()
                )));
            }
            let mut writer = EpisodeWriter::new(&buffer, envs, n_step, gamma).py()?;
            writer.load_state(&mut r).py()?;
            r.finish().py()?;
            Ok(PyReplay { inner: Mutex::new(Inner { buffer, writer }), obs_shape, action_shape, n_step, gamma })
        })
    }
}

impl PyReplay {
    /// Errors unless this buffer's sampler is `sampler` (what `method` needs).
    fn needs(&self, method: &str, sampler: &str) -> PyResult<()> {
        let have = self.lock().buffer.sampler().kind();
        if have == sampler {
            Ok(())
        } else {
            Err(PyValueError::new_err(format!(
                "{method} needs sampler=\"{sampler}\"; this buffer's is \"{have}\""
            )))
        }
    }

    fn slots_and_values(
        &self,
        indices: &Bound<'_, PyAny>,
        values: &Bound<'_, PyAny>,
        name: &str,
    ) -> PyResult<(Vec<usize>, Vec<f32>)> {
        let idx = ints(indices, "indices")?;
        let v = floats(values, name)?;
        if v.shape != idx.shape {
            return Err(PyValueError::new_err(format!(
                "{name} has shape {}, indices {}: one value per index",
                shape_str(&v.shape),
                shape_str(&idx.shape)
            )));
        }
        check_finite(v.data(), name)?;
        let len = self.lock().buffer.len();
        let slots = check_indices(idx.data(), len, "indices")?;
        Ok((slots, v.data().to_vec()))
    }
}
