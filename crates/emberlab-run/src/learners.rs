//! The learners a run config names, behind one type.

use crate::config::RunConfig;
use crate::error::{Context, Result, RunError};
use emberlab_algo::{Agent, Checkpoint, Devices, Dqn, PolicyGradient, Sac, Td3, TrainingState};
use emberlab_backend::DeviceSpec;
use emberlab_core::Space;

/// A learner of any algorithm `ember train` runs.
pub enum AnyLearner {
    /// SAC.
    Sac(Box<Sac>),
    /// TD3.
    Td3(Box<Td3>),
    /// DQN.
    Dqn(Box<Dqn>),
    /// PPO, A2C or REINFORCE.
    PolicyGradient(Box<PolicyGradient>),
}

/// The learn/act devices a config names; a backend that is not compiled in names the
/// cargo feature that adds it.
///
/// # Errors
/// A malformed device or one not compiled into this binary.
pub fn devices(device: &str) -> Result<Devices> {
    let spec: DeviceSpec = device.parse()?;
    let d = spec.device().map_err(|e| {
        RunError::Device(format!(
            "device `{device}` is not available in this `ember` ({e}); build `ember` with \
             `cargo build --release -p emberlab-cli --features {}` (libtorch devices: \
             scripts/setup-libtorch.sh first)",
            spec.backend().feature()
        ))
    })?;
    Ok(Devices::same(&d))
}

impl AnyLearner {
    /// The learner `config` describes for these spaces on `devices`.
    ///
    /// # Errors
    /// An action space the algorithm cannot handle, an invalid config.
    pub fn build(config: &RunConfig, obs: &Space, act: &Space, devices: &Devices) -> Result<Self> {
        let what = || format!("cannot build {} for {}", config.algo, config.env);
        let missing = || RunError::Config(format!("config has no [{}] section", config.algo));
        Ok(match config.algo.as_str() {
            "sac" => AnyLearner::Sac(Box::new(
                config
                    .sac
                    .as_ref()
                    .ok_or_else(missing)?
                    .build(obs, act, devices)
                    .context_with(what)?,
            )),
            "td3" => AnyLearner::Td3(Box::new(
                config
                    .td3
                    .as_ref()
                    .ok_or_else(missing)?
                    .build(obs, act, devices)
                    .context_with(what)?,
            )),
            "dqn" => AnyLearner::Dqn(Box::new(
                config
                    .dqn
                    .as_ref()
                    .ok_or_else(missing)?
                    .build(obs, act, devices)
                    .context_with(what)?,
            )),
            "ppo" => AnyLearner::PolicyGradient(Box::new(
                config
                    .ppo
                    .as_ref()
                    .ok_or_else(missing)?
                    .build(obs, act, devices)
                    .context_with(what)?,
            )),
            "a2c" => AnyLearner::PolicyGradient(Box::new(
                config
                    .a2c
                    .as_ref()
                    .ok_or_else(missing)?
                    .build(obs, act, devices)
                    .context_with(what)?,
            )),
            "reinforce" => AnyLearner::PolicyGradient(Box::new(
                config
                    .reinforce
                    .as_ref()
                    .ok_or_else(missing)?
                    .build(obs, act, devices)
                    .context_with(what)?,
            )),
            other => return Err(RunError::Config(format!("unknown algorithm `{other}`"))),
        })
    }

    /// The learner as an agent.
    pub fn agent(&mut self) -> &mut dyn Agent {
        match self {
            AnyLearner::Sac(l) => l.as_mut(),
            AnyLearner::Td3(l) => l.as_mut(),
            AnyLearner::Dqn(l) => l.as_mut(),
            AnyLearner::PolicyGradient(l) => l.as_mut(),
        }
    }

    /// Its greedy policy, for export as ONNX.
    pub fn onnx(&self) -> &dyn emberlab_algo::OnnxPolicy {
        match self {
            AnyLearner::Sac(l) => l.as_ref(),
            AnyLearner::Td3(l) => l.as_ref(),
            AnyLearner::Dqn(l) => l.as_ref(),
            AnyLearner::PolicyGradient(l) => l.as_ref(),
        }
    }

    /// Its weight checkpoints.
    pub fn checkpoint(&mut self) -> &mut dyn Checkpoint {
        match self {
            AnyLearner::Sac(l) => l.as_mut(),
            AnyLearner::Td3(l) => l.as_mut(),
            AnyLearner::Dqn(l) => l.as_mut(),
            AnyLearner::PolicyGradient(l) => l.as_mut(),
        }
    }

    /// Its whole training state.
    pub fn training_state(&mut self) -> &mut dyn TrainingState {
        match self {
            AnyLearner::Sac(l) => l.as_mut(),
            AnyLearner::Td3(l) => l.as_mut(),
            AnyLearner::Dqn(l) => l.as_mut(),
            AnyLearner::PolicyGradient(l) => l.as_mut(),
        }
    }
}

/// The algorithm's own metric columns in `metrics.csv` (a fixed schema per algorithm).
pub fn metric_names(algo: &str) -> &'static [&'static str] {
    match algo {
        "sac" => &["critic_loss", "actor_loss", "alpha_loss", "alpha"],
        "td3" => &["critic_loss", "actor_loss"],
        "dqn" => &["loss", "epsilon"],
        "ppo" => &[
            "policy_loss",
            "value_loss",
            "entropy",
            "approx_kl",
            "clip_fraction",
        ],
        _ => &["policy_loss", "value_loss", "entropy"],
    }
}
