//! REINFORCE (Williams 1992): Monte-Carlo returns of complete episodes, optionally minus a
//! learnt value baseline, with standardised advantages and an entropy bonus.

use crate::config::{Validate, check_hidden, check_open_closed, check_range};
use crate::devices::Devices;
use crate::learner::AdvantageMode;
use crate::optimizer::OptimizerKind;
use crate::parts::UpdateSchedule;
use crate::policy_gradient::{PgSettings, PolicyGradient};
use emberlab_core::{Result, Space};
use emberlab_nn::Activation;
use serde::{Deserialize, Serialize};

/// REINFORCE hyper-parameters.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReinforceConfig {
    /// Hidden widths of the policy (and baseline) networks.
    pub hidden: Vec<usize>,
    /// Hidden nonlinearity.
    pub activation: Activation,
    /// Learn a value baseline and subtract it from the returns.
    pub baseline: bool,
    /// Learning rate.
    pub learning_rate: f64,
    /// Optimizer.
    pub optimizer: OptimizerKind,
    /// Discount γ in `[0, 1]`.
    pub gamma: f64,
    /// Entropy bonus coefficient (≥ 0).
    pub ent_coef: f64,
    /// Baseline loss coefficient (≥ 0).
    pub vf_coef: f64,
    /// Clip the gradient's global norm to this (0: no clipping).
    pub max_grad_norm: f64,
    /// Standardise advantages per rollout.
    pub normalize_advantage: bool,
    /// Refresh the acting copy every this many updates.
    pub sync_every: u64,
    /// Parallel (each half of a step's rows on a core of its own, their gradients summed
    /// for one step) or sequential update, or `auto` (the default): whichever runs faster
    /// here; the same results every way.
    pub update_schedule: UpdateSchedule,
    /// Seed of the weights and of the action sampling.
    pub seed: u64,
}

impl Default for ReinforceConfig {
    fn default() -> Self {
        ReinforceConfig {
            hidden: vec![64, 64],
            activation: Activation::Tanh,
            baseline: true,
            learning_rate: 3e-3,
            optimizer: OptimizerKind::Adam,
            gamma: 0.99,
            ent_coef: 0.0,
            vf_coef: 0.5,
            max_grad_norm: 0.5,
            normalize_advantage: true,
            sync_every: 1,
            update_schedule: UpdateSchedule::Auto,
            seed: 0,
        }
    }
}

impl Validate for ReinforceConfig {
    fn validate(&self) -> Result<()> {
        check_hidden("hidden", &self.hidden)?;
        check_open_closed("learning_rate", self.learning_rate, 0.0, 1.0)?;
        check_range("gamma", self.gamma, 0.0, 1.0)?;
        check_range("ent_coef", self.ent_coef, 0.0, 1e6)?;
        check_range("vf_coef", self.vf_coef, 0.0, 1e6)?;
        check_range("max_grad_norm", self.max_grad_norm, 0.0, 1e9)
    }
}

impl ReinforceConfig {
    /// The learner for `obs_space` → `action_space` (`Discrete` or `Box`, a Gaussian policy), learning on `devices.learn`,
    /// acting on `devices.act`.
    ///
    /// # Errors
    /// A config value out of range. Train it with rollouts long enough to contain whole episodes
    /// (`n_steps` ≥ the episode limit): steps whose episode does not end inside a rollout
    /// are dropped.
    pub fn build(
        &self,
        obs_space: &Space,
        action_space: &Space,
        devices: &Devices,
    ) -> Result<PolicyGradient> {
        self.validate()?;
        let settings = PgSettings {
            name: "REINFORCE",
            hidden: self.hidden.clone(),
            activation: self.activation,
            shared_trunk: false,
            value: self.baseline,
            learning_rate: self.learning_rate,
            optimizer: self.optimizer,
            max_grad_norm: self.max_grad_norm,
            ent_coef: self.ent_coef,
            vf_coef: self.vf_coef,
            normalize_advantage: self.normalize_advantage,
            mode: AdvantageMode::MonteCarlo {
                gamma: self.gamma as f32,
                baseline: self.baseline,
            },
            sync_every: self.sync_every,
            seed: self.seed,
            update_schedule: self.update_schedule,
            orthogonal_init: false,
            log_std_init: 0.0,
            squash: false,
            use_sde: false,
            sde_sample_freq: 0,
            learning_rate_linear: false,
            ppo: None,
        };
        PolicyGradient::new(settings, obs_space, action_space, devices)
    }
}
