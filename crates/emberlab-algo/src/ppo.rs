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
use crate::policy_gradient::{PgSettings, PolicyGradient, PpoSettings};
use emberlab_core::{Error, Result, Space};
use emberlab_env::NormalizeConfig;
use emberlab_nn::Activation;
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
    /// Seed of the weights, the action sampling and the minibatch shuffles.
    pub seed: u64,
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
            seed: 0,
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
        check_range("max_grad_norm", self.max_grad_norm, 0.0, 1e9)
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
            other => Err(Error::invalid(
                "PPO zoo env id",
                other,
                "CartPole-v1, Pendulum-v1 or a MuJoCo locomotion task (HalfCheetah-v5, Ant-v5, \
                 Hopper-v5, Walker2d-v5, Humanoid-v5, Swimmer-v5)",
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
        let settings = PgSettings {
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
            ppo: Some(PpoSettings {
                n_epochs: self.n_epochs,
                batch_size: self.batch_size,
                clip_range: self.clip_range,
                clip_range_linear: self.clip_range_linear,
                clip_range_vf: self.clip_range_vf,
                target_kl: self.target_kl,
            }),
        };
        PolicyGradient::new(settings, obs_space, action_space, devices)
    }
}
