//! `ember export`: a run's greedy policy out of Ember, as an ONNX model: SAC's and TD3's
//! actor, DQN's Q-network with its argmax, PPO's, A2C's and REINFORCE's policy head (with
//! the run's observation statistics first when it normalised observations); for runs on
//! Atari, the image encoder first, reading uint8 frame stacks.

use anyhow::{Context, Result};
use emberlab_run::{FrameSpaces, RunPolicy, load_config};
use std::path::Path;

/// Writes the ONNX model of `run`'s policy to `out` (whole or not at all); returns its size
/// in bytes.
///
/// # Errors
/// What [`load_policy`] and [`RunPolicy::onnx`] return, or a file that cannot be written.
pub fn export_onnx(run: &Path, best: bool, out: &Path) -> Result<usize> {
    let bytes = load_policy(run, best)?.onnx()?;
    let tmp = out.with_extension("onnx.tmp");
    std::fs::write(&tmp, &bytes).with_context(|| format!("cannot write {}", tmp.display()))?;
    std::fs::rename(&tmp, out).with_context(|| format!("cannot write {}", out.display()))?;
    Ok(bytes.len())
}

/// The policy of the run folder `run` ([`RunPolicy::load`], which reads a run on images'
/// `frames.toml`; for an Atari run without one, [`RunPolicy::load_frames`] with the frame
/// stacks and actions of one of its games).
///
/// # Errors
/// What those return; for an Atari run, a game that cannot start or a build without the
/// `gym` feature.
pub fn load_policy(run: &Path, best: bool) -> Result<RunPolicy> {
    let config = load_config(run)?;
    if !emberlab_env::is_atari_id(&config.env) || FrameSpaces::load(run)?.is_some() {
        return Ok(RunPolicy::load(run, best)?);
    }
    // A run started before `frames.toml` was written: one game says the shapes.
    #[cfg(feature = "gym")]
    {
        let game = super::train::one_atari_game(&config.env)?;
        Ok(RunPolicy::load_frames(
            run,
            best,
            game.obs_shape(),
            game.actions(),
        )?)
    }
    #[cfg(not(feature = "gym"))]
    Err(super::train::atari_needs_gym(&config.env))
}
