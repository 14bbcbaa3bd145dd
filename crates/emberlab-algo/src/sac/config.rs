//! SAC's hyper-parameters, rl-baselines3-zoo presets, and the learner they build.

use super::Sac;
use crate::config::{Validate, check_hidden, check_open_closed, check_range};
use crate::devices::Devices;
use crate::off_policy::{MUJOCO_ZOO, OffPolicyConfig, zoo_mujoco};
use crate::parts::UpdateSchedule;
use crate::replay::ReplayConfig;
use emberlab_core::{Error, Result, Space};
use serde::{Deserialize, Serialize};

/// SAC hyper-parameters (SB3 / rl-baselines3-zoo names and defaults).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct SacConfig {
    /// Hidden widths of the actor and of each critic.
    pub hidden: Vec<usize>,
    /// Adam learning rate of actor, critics and temperature.
    pub learning_rate: f64,
    /// Discount γ in `[0, 1]`.
    pub gamma: f64,
    /// Polyak coefficient τ in `(0, 1]`.
    pub tau: f64,
    /// Initial temperature α (> 0).
    pub init_alpha: f64,
    /// Learn α to reach the target entropy; otherwise α stays at `init_alpha`.
    pub auto_alpha: bool,
    /// Target entropy; `None` means `−act_dim`.
    pub target_entropy: Option<f64>,
    /// Parallel or sequential update, or `auto` (the default): whichever runs faster here.
    pub update_schedule: UpdateSchedule,
    /// Refresh the acting copy every this many updates.
    pub sync_every: u64,
    /// Explore with gSDE (generalised state-dependent exploration, Raffin et al. 2021, as
    /// zoo uses it on MountainCarContinuous): noise that is a smooth function of the state,
    /// from exploration weights kept for many steps (see `emberlab_nn::GaussianTanhPolicy`).
    pub use_sde: bool,
    /// gSDE's initial `log σ` of the exploration weights (SB3's `log_std_init`, −3).
    pub sde_log_std_init: f64,
    /// Draw new exploration weights every this many exploring acts (vector steps); 0 (SB3's
    /// −1): at the first act after each round of updates, i.e. every `train_freq` steps.
    pub sde_sample_freq: u64,
    /// Seed of the initial weights and of all noise.
    pub seed: u64,
}

impl Default for SacConfig {
    fn default() -> Self {
        SacConfig {
            hidden: vec![256, 256],
            learning_rate: 3e-4,
            gamma: 0.99,
            tau: 0.005,
            init_alpha: 1.0,
            auto_alpha: true,
            target_entropy: None,
            update_schedule: UpdateSchedule::Auto,
            sync_every: 1,
            use_sde: false,
            sde_log_std_init: -3.0,
            sde_sample_freq: 0,
            seed: 0,
        }
    }
}

impl Validate for SacConfig {
    fn validate(&self) -> Result<()> {
        check_hidden("hidden", &self.hidden)?;
        check_open_closed("learning_rate", self.learning_rate, 0.0, 1.0)?;
        check_range("gamma", self.gamma, 0.0, 1.0)?;
        check_open_closed("tau", self.tau, 0.0, 1.0)?;
        check_open_closed("init_alpha", self.init_alpha, 0.0, 1e6)?;
        check_range("sde_log_std_init", self.sde_log_std_init, -20.0, 5.0)?;
        if let Some(h) = self.target_entropy {
            check_range("target_entropy", h, -1e6, 1e6)?;
        }
        Ok(())
    }
}

impl SacConfig {
    /// The SAC learner for `obs_space` → `action_space` (a `Box`), learning on
    /// `devices.learn` and acting on `devices.act`; weights are seeded from `self.seed`
    /// through the backend's generator (`Device::seed`).
    ///
    /// # Errors
    /// A config value out of range, or an action space that is not a `Box`.
    pub fn build(&self, obs_space: &Space, action_space: &Space, devices: &Devices) -> Result<Sac> {
        Sac::new(self, obs_space, action_space, devices)
    }

    /// rl-baselines3-zoo's hyper-parameters for `env_id` (the trainer settings too).
    /// Known: `Pendulum-v1`, `MountainCarContinuous-v0` (with gSDE, as zoo), and zoo's MuJoCo
    /// preset for `HalfCheetah-v5`, `Ant-v5`, `Hopper-v5`, `Walker2d-v5`, `Humanoid-v5` (2M
    /// steps) and `Swimmer-v5` (γ = 0.9999).
    pub fn zoo(env_id: &str) -> Result<(SacConfig, OffPolicyConfig)> {
        match env_id {
            "Pendulum-v1" => Ok((
                SacConfig {
                    learning_rate: 1e-3,
                    ..SacConfig::default()
                },
                OffPolicyConfig {
                    total_steps: 20_000,
                    ..OffPolicyConfig::default()
                },
            )),
            "MountainCarContinuous-v0" => Ok((
                SacConfig {
                    hidden: vec![64, 64],
                    learning_rate: 3e-4,
                    gamma: 0.9999,
                    tau: 0.01,
                    init_alpha: 0.1,
                    auto_alpha: false,
                    use_sde: true,
                    sde_log_std_init: -3.67,
                    ..SacConfig::default()
                },
                OffPolicyConfig {
                    total_steps: 50_000,
                    replay: ReplayConfig {
                        capacity: 50_000,
                        ..ReplayConfig::default()
                    },
                    batch_size: 512,
                    learning_starts: 0,
                    train_freq: 32,
                    gradient_steps: 32,
                    ..OffPolicyConfig::default()
                },
            )),
            other if zoo_mujoco(other).is_some() => {
                let (gamma, trainer) = zoo_mujoco(other).expect("checked");
                Ok((
                    SacConfig {
                        gamma,
                        ..SacConfig::default()
                    },
                    trainer,
                ))
            }
            other => Err(Error::invalid(
                "SAC zoo env id",
                other,
                format!(
                    "one of Pendulum-v1, MountainCarContinuous-v0, {}",
                    MUJOCO_ZOO.join(", ")
                ),
            )),
        }
    }
}
