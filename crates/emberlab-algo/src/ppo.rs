//! PPO (Schulman et al. 2017) as Stable-Baselines3 implements it: GAE(λ) advantages from
//! the values recorded while acting, `n_epochs` passes over each rollout in shuffled
//! minibatches, the clipped surrogate with per-minibatch advantage normalisation, optional
//! value clipping, an entropy bonus, gradient-norm clipping, an optional target-KL early
//! stop and linear learning-rate / clip-range decay; discrete (categorical) and continuous
//! (Gaussian, optionally tanh-squashed) actions. Observation normalisation comes from the
//! environment wrappers (`emberlab_env::NormalizeObservation`), not from the learner.

use crate::config::{Validate, check_hidden, check_open_closed, check_positive, check_range};
use crate::devices::Devices;
use crate::learner::AdvantageMode;
use crate::on_policy::OnPolicyConfig;
use crate::optimizer::OptimizerKind;
use crate::parts::UpdateSchedule;
use crate::policy_gradient::{PgSettings, PolicyGradient, PpoSettings};
use emberlab_core::{Error, Result, Space};
use emberlab_env::NormalizeConfig;
use emberlab_nn::{Activation, PixelEncoderKind};
use serde::{Deserialize, Serialize};

/// PPO hyper-parameters (SB3 / rl-baselines3-zoo names and defaults). The rollout length
/// `n_steps` is the trainer's ([`OnPolicyConfig::n_steps`]).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct PpoConfig {
    /// Hidden widths of the policy and value networks (or of the shared trunk).
    pub hidden: Vec<usize>,
    /// Hidden nonlinearity.
    pub activation: Activation,
    /// One trunk with two heads instead of two networks.
    pub shared_trunk: bool,
    /// SB3's `ortho_init` (gains √2, 0.01 on the policy output, 1 on the value output).
    pub orthogonal_init: bool,
    /// Initial `log σ` of the Gaussian policy (continuous action spaces).
    pub log_std_init: f64,
    /// A tanh-squashed Gaussian whose actions stay inside the box, instead of a plain
    /// Gaussian whose samples are clipped to it (SB3's `squash_output`).
    pub squash_output: bool,
    /// Explore with gSDE on continuous actions (generalised state-dependent exploration,
    /// Raffin et al. 2021, as zoo uses it): noise that is a smooth function of the state;
    /// `log_std_init` is then the exploration weights' initial `log σ`.
    pub use_sde: bool,
    /// gSDE: draw new exploration weights every this many steps of a rollout (0, SB3's −1:
    /// once per rollout).
    pub sde_sample_freq: u64,
    /// Learning rate (Adam).
    pub learning_rate: f64,
    /// Decay the learning rate linearly to 0 over the run (zoo's `lin_…`).
    pub learning_rate_linear: bool,
    /// Minibatch size.
    pub batch_size: usize,
    /// Passes over each rollout.
    pub n_epochs: usize,
    /// Discount γ in `[0, 1]`.
    pub gamma: f64,
    /// GAE λ in `[0, 1]`.
    pub gae_lambda: f64,
    /// Clip range ε of the probability ratio.
    pub clip_range: f64,
    /// Decay the clip range linearly to 0 over the run (zoo's `lin_0.2`).
    pub clip_range_linear: bool,
    /// Clip the value prediction to within this of the value recorded while acting
    /// (`None`: no value clipping).
    pub clip_range_vf: Option<f64>,
    /// Standardise advantages per minibatch.
    pub normalize_advantage: bool,
    /// Entropy bonus coefficient (≥ 0).
    pub ent_coef: f64,
    /// Value loss coefficient (≥ 0).
    pub vf_coef: f64,
    /// Clip the gradient's global norm to this (0: no clipping).
    pub max_grad_norm: f64,
    /// Stop a rollout's epochs once the approximate KL divergence exceeds 1.5 × this
    /// (`None`: never).
    pub target_kl: Option<f64>,
    /// Refresh the acting copy every this many updates (rollouts).
    pub sync_every: u64,
    /// Parallel (each half of a step's rows on a core of its own, their gradients summed
    /// for one step) or sequential update, or `auto` (the default): whichever runs faster
    /// here; the same results every way.
    pub update_schedule: UpdateSchedule,
    /// Seed of the weights, the action sampling and the minibatch shuffles.
    pub seed: u64,
    /// On images ([`PpoConfig::build_pixels`]): the encoder both heads share.
    pub encoder: PixelEncoderKind,
    /// On images: hidden widths of the policy and value networks after the encoder (SB3's
    /// `CnnPolicy`: none, linear heads on the features).
    pub pixel_hidden: Vec<usize>,
}

impl Default for PpoConfig {
    fn default() -> Self {
        PpoConfig {
            hidden: vec![64, 64],
            activation: Activation::Tanh,
            shared_trunk: false,
            orthogonal_init: true,
            log_std_init: 0.0,
            squash_output: false,
            use_sde: false,
            sde_sample_freq: 0,
            learning_rate: 3e-4,
            learning_rate_linear: false,
            batch_size: 64,
            n_epochs: 10,
            gamma: 0.99,
            gae_lambda: 0.95,
            clip_range: 0.2,
            clip_range_linear: false,
            clip_range_vf: None,
            normalize_advantage: true,
            ent_coef: 0.0,
            vf_coef: 0.5,
            max_grad_norm: 0.5,
            target_kl: None,
            sync_every: 1,
            update_schedule: UpdateSchedule::Auto,
            seed: 0,
            encoder: PixelEncoderKind::Nature,
            pixel_hidden: Vec::new(),
        }
    }
}

impl Validate for PpoConfig {
    fn validate(&self) -> Result<()> {
        check_hidden("hidden", &self.hidden)?;
        check_range("log_std_init", self.log_std_init, -20.0, 5.0)?;
        check_open_closed("learning_rate", self.learning_rate, 0.0, 1.0)?;
        check_positive("batch_size", self.batch_size)?;
        check_positive("n_epochs", self.n_epochs)?;
        check_range("gamma", self.gamma, 0.0, 1.0)?;
        check_range("gae_lambda", self.gae_lambda, 0.0, 1.0)?;
        check_open_closed("clip_range", self.clip_range, 0.0, 10.0)?;
        if let Some(c) = self.clip_range_vf {
            check_open_closed("clip_range_vf", c, 0.0, 1e9)?;
        }
        if let Some(t) = self.target_kl {
            check_open_closed("target_kl", t, 0.0, 1e9)?;
        }
        check_range("ent_coef", self.ent_coef, 0.0, 1e6)?;
        check_range("vf_coef", self.vf_coef, 0.0, 1e6)?;
        check_range("max_grad_norm", self.max_grad_norm, 0.0, 1e9)?;
        crate::config::check_widths("pixel_hidden", &self.pixel_hidden)
    }
}

impl PpoConfig {
    /// rl-baselines3-zoo's hyper-parameters for `env_id`, with the trainer settings and
    /// the number of sub-environments. Known: `CartPole-v1` (8 envs, 100k steps),
    /// `Pendulum-v1` (4 envs, 100k steps, gSDE), `HalfCheetah-v5` (zoo's tuned v3/v4 preset,
    /// normalised) and the other MuJoCo locomotion tasks (SB3's defaults, normalised).
    ///
    /// # Errors
    /// An env id without a preset.
    pub fn zoo(env_id: &str) -> Result<(PpoConfig, OnPolicyConfig, usize)> {
        match env_id {
            "CartPole-v1" => Ok((
                PpoConfig {
                    learning_rate: 1e-3,
                    learning_rate_linear: true,
                    batch_size: 256,
                    n_epochs: 20,
                    gamma: 0.98,
                    gae_lambda: 0.8,
                    clip_range: 0.2,
                    clip_range_linear: true,
                    ..PpoConfig::default()
                },
                OnPolicyConfig {
                    total_steps: 100_000,
                    n_steps: 32,
                    ..OnPolicyConfig::default()
                },
                8,
            )),
            "Pendulum-v1" => Ok((
                PpoConfig {
                    learning_rate: 1e-3,
                    n_epochs: 10,
                    gamma: 0.9,
                    gae_lambda: 0.95,
                    clip_range: 0.2,
                    use_sde: true,
                    sde_sample_freq: 4,
                    ..PpoConfig::default()
                },
                OnPolicyConfig {
                    total_steps: 100_000,
                    n_steps: 1024,
                    ..OnPolicyConfig::default()
                },
                4,
            )),
            // zoo's tuned HalfCheetah (v3/v4): one env, observations and rewards normalised.
            "HalfCheetah-v5" => Ok((
                PpoConfig {
                    hidden: vec![256, 256],
                    activation: Activation::Relu,
                    orthogonal_init: false,
                    log_std_init: -2.0,
                    learning_rate: 2.0633e-5,
                    batch_size: 64,
                    n_epochs: 20,
                    gamma: 0.98,
                    gae_lambda: 0.92,
                    clip_range: 0.1,
                    ent_coef: 0.000401762,
                    vf_coef: 0.58096,
                    max_grad_norm: 0.8,
                    ..PpoConfig::default()
                },
                OnPolicyConfig {
                    total_steps: 1_000_000,
                    n_steps: 512,
                    normalize: Some(NormalizeConfig {
                        gamma: 0.98,
                        ..NormalizeConfig::default()
                    }),
                    ..OnPolicyConfig::default()
                },
                1,
            )),
            // zoo's `mujoco-defaults` for PPO: SB3's defaults with `normalize: true`.
            "Ant-v5" | "Hopper-v5" | "Walker2d-v5" | "Humanoid-v5" | "Swimmer-v5" => Ok((
                PpoConfig::default(),
                OnPolicyConfig {
                    total_steps: 1_000_000,
                    n_steps: 2048,
                    normalize: Some(NormalizeConfig::default()),
                    ..OnPolicyConfig::default()
                },
                1,
            )),
            // zoo's `atari` entry (CnnPolicy on stacks of 4 frames); evaluation every 250k
            // steps on 5 games is ours.
            id if emberlab_env::is_atari_id(id) => Ok((
                PpoConfig {
                    learning_rate: 2.5e-4,
                    learning_rate_linear: true,
                    batch_size: 256,
                    n_epochs: 4,
                    clip_range: 0.1,
                    clip_range_linear: true,
                    ent_coef: 0.01,
                    vf_coef: 0.5,
                    ..PpoConfig::default()
                },
                OnPolicyConfig {
                    total_steps: 10_000_000,
                    n_steps: 128,
                    eval_every: 250_000,
                    eval_episodes: 5,
                    ..OnPolicyConfig::default()
                },
                8,
            )),
            other => Err(Error::invalid(
                "PPO zoo env id",
                other,
                "CartPole-v1, Pendulum-v1, a MuJoCo locomotion task (HalfCheetah-v5, Ant-v5, \
                 Hopper-v5, Walker2d-v5, Humanoid-v5, Swimmer-v5) or an Atari id",
            )),
        }
    }

    /// The learner for `obs_space` → `action_space` (`Discrete` or `Box`), learning on
    /// `devices.learn`, acting on `devices.act`.
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
    /// (SB3's `PPO("CnnPolicy")`): `encoder` in front of linear heads, or of
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
            name: "PPO",
            hidden: self.hidden.clone(),
            activation: self.activation,
            shared_trunk: self.shared_trunk,
            value: true,
            orthogonal_init: self.orthogonal_init,
            log_std_init: self.log_std_init,
            squash: self.squash_output,
            use_sde: self.use_sde,
            sde_sample_freq: self.sde_sample_freq,
            learning_rate: self.learning_rate,
            learning_rate_linear: self.learning_rate_linear,
            optimizer: OptimizerKind::Adam,
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
            ppo: Some(PpoSettings {
                n_epochs: self.n_epochs,
                batch_size: self.batch_size,
                clip_range: self.clip_range,
                clip_range_linear: self.clip_range_linear,
                clip_range_vf: self.clip_range_vf,
                target_kl: self.target_kl,
            }),
        }
    }
}
