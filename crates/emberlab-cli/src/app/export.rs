//! `ember export`: a run's greedy policy out of Ember, as an ONNX model: SAC's and TD3's
//! actor, DQN's Q-network with its argmax, PPO's, A2C's and REINFORCE's policy head (with
//! the run's observation statistics first when it normalised observations).

use anyhow::{Context, Result};
use emberlab_run::RunPolicy;
use std::path::Path;

/// Writes the ONNX model of `run`'s policy to `out` (whole or not at all); returns its size
/// in bytes.
///
/// # Errors
/// What [`RunPolicy::load`] and [`RunPolicy::onnx`] return, or a file that cannot be written.
pub fn export_onnx(run: &Path, best: bool, out: &Path) -> Result<usize> {
    let bytes = RunPolicy::load(run, best)?.onnx()?;
    let tmp = out.with_extension("onnx.tmp");
    std::fs::write(&tmp, &bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, out).with_context(|| format!("cannot write {}", out.display()))?;
    Ok(bytes.len())
}
