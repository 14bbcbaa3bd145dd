//! `ember export`: a run's greedy policy out of Ember, as an ONNX model (SAC's and TD3's
//! actor, DQN's Q-network with its argmax).

use super::eval::load_weights;
use super::learners::{AnyLearner, devices};
use super::run_dir::load_config;
use anyhow::{Context, Result, bail};
use ember_algo::ActionBuf;
use ember_core::Space;
use std::path::Path;

/// A run's policy, loaded as `ember eval` loads it.
pub struct RunPolicy {
    learner: AnyLearner,
    obs_dim: usize,
    action_space: Space,
}

impl RunPolicy {
    /// The policy of the run folder `run`: its last checkpoint, or its best evaluation's
    /// weights (`best`).
    ///
    /// # Errors
    /// A folder without a config or weights, or weights of another architecture.
    pub fn load(run: &Path, best: bool) -> Result<Self> {
        let config = load_config(run)?;
        if config
            .on_policy
            .as_ref()
            .and_then(|c| c.normalize.as_ref())
            .is_some_and(|n| n.observations)
        {
            bail!(
                "{} learned on normalised observations: exporting its observation statistics \
                 is not supported yet",
                run.display()
            );
        }
        let env = ember_env::make(&config.env)?;
        let mut learner = AnyLearner::build(
            &config,
            env.observation_space(),
            env.action_space(),
            &devices(&config.device)?,
        )?;
        load_weights(&mut learner, run, best)?;
        Ok(RunPolicy {
            learner,
            obs_dim: env.observation_space().flat_dim(),
            action_space: env.action_space().clone(),
        })
    }

    /// Width of one observation.
    pub fn obs_dim(&self) -> usize {
        self.obs_dim
    }

    /// The greedy actions for `rows × obs_dim` observations (what `ember eval` acts with).
    ///
    /// # Errors
    /// Observations of the wrong width.
    pub fn act(&mut self, obs: &[f32]) -> Result<ActionBuf> {
        let mut out = ActionBuf::for_space(&self.action_space);
        self.learner.agent().act(obs, false, &mut out)?;
        Ok(out)
    }

    /// The policy as an encoded ONNX model (input `obs`; output `action`, and `q_values`
    /// for DQN).
    ///
    /// # Errors
    /// An algorithm the export does not cover (PPO, A2C, REINFORCE), or non-finite weights.
    pub fn onnx(&self) -> Result<Vec<u8>> {
        Ok(self.learner.onnx_policy()?)
    }
}

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
