//! A2C (Mnih et al. 2016, synchronous): GAE(λ) advantages, value loss, entropy bonus,
//! separate or shared trunks; discrete (categorical) and continuous (Gaussian) actions;
//! SB3's defaults (RMSprop, `n_steps = 5`, orthogonal initialisation).

use crate::config::{Validate, check_hidden, check_open_closed, check_range};
use crate::devices::Devices;
use crate::learner::AdvantageMode;
use crate::on_policy::OnPolicyConfig;
use crate::optimizer::OptimizerKind;
use crate::parts::UpdateSchedule;
use crate::policy_gradient::{PgSettings, PolicyGradient};
use emberlab_core::{Error, Result, Space};
use emberlab_env::NormalizeConfig;
use emberlab_nn::{Activation, PixelEncoderKind};
use serde::{Deserialize, Serialize};

/// A2C hyper-parameters (SB3 / rl-baselines3-zoo names and defaults).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct A2cConfig {
    /// Hidden widths of the policy and value networks (or of the shared trunk).
    pub hidden: Vec<usize>,
    /// Hidden nonlinearity.
    pub activation: Activation,
    /// One trunk with two heads instead of two networks.
    pub shared_trunk: bool,
    /// Learning rate.
    pub learning_rate: f64,
    /// Optimizer: `rmsprop` (PyTorch's, as SB3 by default), `rmsprop_tf_like` (SB3's
    /// `RMSpropTFLike`, zoo's choice on Atari) or `adam`.
    pub optimizer: OptimizerKind,
    /// Discount γ in `[0, 1]`.
    pub gamma: f64,
    /// GAE λ in `[0, 1]`.
    pub gae_lambda: f64,
    /// Entropy bonus coefficient (≥ 0).
    pub ent_coef: f64,
    /// Value loss coefficient (≥ 0).
    pub vf_coef: f64,
    /// Clip the gradient's global norm to this (0: no clipping).
    pub max_grad_norm: f64,
    /// Standardise advantages per rollout.
    pub normalize_advantage: bool,
    /// Refresh the acting copy every this many updates.
    pub sync_every: u64,
    /// SB3's `ortho_init`: orthogonal weights (gains √2, 0.01 for the policy output, 1 for
    /// the value output), zero biases.
    pub orthogonal_init: bool,
    /// Initial `log σ` of the Gaussian policy (continuous action spaces).
    pub log_std_init: f64,
    /// Explore with gSDE on continuous actions (generalised state-dependent exploration,
    /// Raffin et al. 2021, as zoo uses it): noise that is a smooth function of the state;
    /// `log_std_init` is then the exploration weights' initial `log σ`.
    pub use_sde: bool,
    /// gSDE: draw new exploration weights every this many steps of a rollout (0, SB3's −1:
    /// once per rollout).
    pub sde_sample_freq: u64,
    /// Decay the learning rate linearly to 0 over the run's planned env steps (zoo's
    /// `lin_7e-4`).
    pub learning_rate_linear: bool,
    /// Parallel (each half of a step's rows on a core of its own, their gradients summed
    /// for one step) or sequential update, or `auto` (the default): whichever runs faster
    /// here; the same results every way.
    pub update_schedule: UpdateSchedule,
    /// Seed of the weights and of the action sampling.
    pub seed: u64,
    /// On images ([`A2cConfig::build_pixels`]): the encoder both heads share.
    pub encoder: PixelEncoderKind,
    /// On images: hidden widths of the policy and value networks after the encoder (SB3's
    /// `CnnPolicy`: none, linear heads on the features).
    pub pixel_hidden: Vec<usize>,
}

impl Default for A2cConfig {
    fn default() -> Self {
        A2cConfig {
            hidden: vec![64, 64],
            activation: Activation::Tanh,
            shared_trunk: false,
            learning_rate: 7e-4,
            optimizer: OptimizerKind::RmsProp,
            gamma: 0.99,
            gae_lambda: 1.0,
            ent_coef: 0.0,
            vf_coef: 0.5,
            max_grad_norm: 0.5,
            normalize_advantage: false,
            sync_every: 1,
            update_schedule: UpdateSchedule::Auto,
            orthogonal_init: true,
            log_std_init: 0.0,
            use_sde: false,
            sde_sample_freq: 0,
            learning_rate_linear: false,
            seed: 0,
            encoder: PixelEncoderKind::Nature,
            pixel_hidden: Vec::new(),
        }
    }
}

impl Validate for A2cConfig {
    fn validate(&self) -> Result<()> {
        check_hidden("hidden", &self.hidden)?;
        check_open_closed("learning_rate", self.learning_rate, 0.0, 1.0)?;
        check_range("gamma", self.gamma, 0.0, 1.0)?;
        check_range("gae_lambda", self.gae_lambda, 0.0, 1.0)?;
        check_range("ent_coef", self.ent_coef, 0.0, 1e6)?;
        check_range("vf_coef", self.vf_coef, 0.0, 1e6)?;
        check_range("log_std_init", self.log_std_init, -20.0, 5.0)?;
        check_range("max_grad_norm", self.max_grad_norm, 0.0, 1e9)?;
        crate::config::check_widths("pixel_hidden", &self.pixel_hidden)
    }
}

impl A2cConfig {
    /// rl-baselines3-zoo's hyper-parameters for `env_id`, with the trainer settings and
    /// the number of sub-environments. Known: `CartPole-v1` (8 envs, 500k steps),
    /// `Pendulum-v1` (8 envs, 1M steps, gSDE, `VecNormalize`).
    pub fn zoo(env_id: &str) -> Result<(A2cConfig, OnPolicyConfig, usize)> {
        match env_id {
            "CartPole-v1" => Ok((
                A2cConfig::default(),
                OnPolicyConfig {
                    total_steps: 500_000,
                    n_steps: 5,
                    ..OnPolicyConfig::default()
                },
                8,
            )),
            // zoo's: gSDE on observations and rewards normalised by VecNormalize (with the
            // algorithm's γ), no orthogonal init.
            "Pendulum-v1" => Ok((
                A2cConfig {
                    gamma: 0.9,
                    gae_lambda: 0.9,
                    vf_coef: 0.4,
                    learning_rate_linear: true,
                    use_sde: true,
                    log_std_init: -2.0,
                    orthogonal_init: false,
                    ..A2cConfig::default()
                },
                OnPolicyConfig {
                    total_steps: 1_000_000,
                    n_steps: 8,
                    normalize: Some(NormalizeConfig {
                        gamma: 0.9,
                        ..NormalizeConfig::default()
                    }),
                    ..OnPolicyConfig::default()
                },
                8,
            )),
            // zoo's `atari` entry (CnnPolicy on stacks of 4 frames, 16 envs, SB3's
            // `RMSpropTFLike` with ε = 1e-5). Evaluation every 250k steps on 5 games is ours.
            id if emberlab_env::is_atari_id(id) => Ok((
                A2cConfig {
                    ent_coef: 0.01,
                    vf_coef: 0.25,
                    optimizer: OptimizerKind::RmsPropTfLike,
                    ..A2cConfig::default()
                },
                OnPolicyConfig {
                    total_steps: 10_000_000,
                    n_steps: 5,
                    eval_every: 250_000,
                    eval_episodes: 5,
                    ..OnPolicyConfig::default()
                },
                16,
            )),
            other => Err(Error::invalid(
                "A2C zoo env id",
                other,
                "CartPole-v1, Pendulum-v1 or an Atari id",
            )),
        }
    }

    /// The learner for `obs_space` → `action_space` (`Discrete` or `Box`), learning on `devices.learn`,
    /// acting on `devices.act`.
    ///
    /// # Errors
    /// A config value out of range.
    pub fn build(
        &self,
        obs_space: &Space,
        action_space: &Space,
        devices: &Devices,
    ) -> Result<PolicyGradient> {
        self.validate()?;
        PolicyGradient::new(self.settings(), obs_space, action_space, devices)
    }

    /// The learner of `actions` discrete actions on `u8` frame stacks `obs = [c, h, w]`
    /// (SB3's `A2C("CnnPolicy")`): `encoder` in front of linear heads, or of
    /// `pixel_hidden` layers. It acts through [`crate::Agent::act_pixels`] and learns
    /// through [`crate::OnPolicyLearner::update_frames`]. `hidden` and `shared_trunk` are
    /// the vector networks' and not read (the encoder is the shared trunk here);
    /// `activation` follows each `pixel_hidden` layer.
    ///
    /// # Errors
    /// A config value out of range, no actions, frames too small for the encoder.
    pub fn build_pixels(
        &self,
        obs: [usize; 3],
        actions: usize,
        devices: &Devices,
    ) -> Result<PolicyGradient> {
        self.validate()?;
        let net = (self.encoder, &self.pixel_hidden[..]);
        PolicyGradient::new_pixels(self.settings(), net, obs, actions, devices)
    }

    fn settings(&self) -> PgSettings {
        PgSettings {
            name: "A2C",
            hidden: self.hidden.clone(),
            activation: self.activation,
            shared_trunk: self.shared_trunk,
            value: true,
            learning_rate: self.learning_rate,
            optimizer: self.optimizer,
            max_grad_norm: self.max_grad_norm,
            ent_coef: self.ent_coef,
            vf_coef: self.vf_coef,
            normalize_advantage: self.normalize_advantage,
            mode: AdvantageMode::Gae {
                gamma: self.gamma as f32,
                lambda: self.gae_lambda as f32,
            },
            sync_every: self.sync_every,
            seed: self.seed,
            update_schedule: self.update_schedule,
            orthogonal_init: self.orthogonal_init,
            log_std_init: self.log_std_init,
            squash: false,
            use_sde: self.use_sde,
            sde_sample_freq: self.sde_sample_freq,
            learning_rate_linear: self.learning_rate_linear,
            ppo: None,
        }
    }
}
