//! # emberlab-py
//!
//! Ember from Python: the `emberlab._emberlab` extension module of the `emberlab` wheel (built
//! with maturin from `crates/emberlab-py/pyproject.toml`; see `docs/python.md`).
//!
//! - [`replay::PyReplay`] (`emberlab.ReplayBuffer`): uniform, prioritized and return-weighted
//!   replay with n-step returns, filled and sampled with NumPy arrays, the GIL released
//!   while it works.
//! - [`envs::PyVecEnv`] and [`envs::PyEnv`] (`emberlab.VecEnv`, `emberlab.Env`): Ember's
//!   environments, which the Python package wraps as Gymnasium environments.
//! - [`policy::load_policy`] (`emberlab.load_policy`): a trained run's policy acting on NumPy
//!   observations, loaded as `ember eval` loads it.
//!
//! Errors reach Python as exceptions naming the argument: `ValueError` for a wrong shape,
//! a NaN or an index out of range, `TypeError` for a wrong dtype, `OSError` for files.

#![warn(missing_docs)]

pub mod arrays;
pub mod envs;
pub mod errors;
pub mod policy;
pub mod replay;

use pyo3::prelude::*;

/// The `emberlab._emberlab` module.
#[pymodule]
fn _emberlab(m: &Bound<'_, PyModule>) -> PyResult<()> {
    m.add_class::<replay::PyReplay>()?;
    m.add_class::<envs::PyVecEnv>()?;
    m.add_class::<envs::PyEnv>()?;
    m.add_function(wrap_pyfunction!(envs::env_ids, m)?)?;
    m.add_class::<policy::PyPolicy>()?;
    m.add_function(wrap_pyfunction!(policy::load_policy, m)?)?;
    m.add("__version__", env!("CARGO_PKG_VERSION"))?;
    Ok(())
}
