//! The learners a run config can name: an open registry. Each entry ([`LearnerKind`]) reads
//! its own section of `config.toml` (`[sac]`, `[redq]`, …), gives the preset for an
//! environment, and builds the learner. The built-in algorithms are entries like any other;
//! a program of your own adds its learner with [`crate::register`] (usually through
//! [`Kind`]) and then runs the `ember` command, which trains, resumes, evaluates and exports
//! it unchanged.
//!
//! ```
//! use emberlab_run::kinds::{Kind, LearnerConfig, TrainerKind};
//! use emberlab_run::{OffPolicy, RunConfig, RunLearner};
//! use emberlab_algo::{Devices, SacConfig, Validate};
//! use emberlab_core::Space;
//! use serde::{Deserialize, Serialize};
//!
//! /// "SAC with a fixed temperature": a config of its own, built from SAC's parts.
//! #[derive(Clone, Default, Serialize, Deserialize)]
//! #[serde(deny_unknown_fields)]
//! struct FixedAlpha {
//!     alpha: f64,
//!     seed: u64,
//! }
//!
//! impl Validate for FixedAlpha {
//!     fn validate(&self) -> emberlab_core::Result<()> {
//!         emberlab_algo::check_range("alpha", self.alpha, 0.0, 10.0)
//!     }
//! }
//!
//! impl LearnerConfig for FixedAlpha {
//!     const TRAINER: TrainerKind = TrainerKind::OffPolicy;
//!     const METRICS: &'static [&'static str] = &["critic_loss", "actor_loss", "alpha_loss", "alpha"];
//!     fn build_learner(&self, obs: &Space, act: &Space, devices: &Devices)
//!         -> emberlab_core::Result<Box<dyn RunLearner>> {
//!         let sac = SacConfig { init_alpha: self.alpha, auto_alpha: false, seed: self.seed,
//!             ..SacConfig::default() };
//!         Ok(Box::new(OffPolicy(sac.build(obs, act, devices)?)))
//!     }
//! }
//!
//! emberlab_run::register(Kind::<FixedAlpha>::named("fixed-alpha"))?;
//! let (config, _) = RunConfig::preset("fixed-alpha", "Pendulum-v1")?;
//! let config = config.with_set("fixed-alpha.alpha", "0.2")?;
//! assert!(config.to_toml().contains("[fixed-alpha]"));
//! # Ok::<(), emberlab_run::RunError>(())
//! ```

use crate::error::{Result, RunError};
use crate::learners::RunLearner;
use emberlab_algo::{Devices, OffPolicyConfig, OnPolicyConfig, Validate};
use emberlab_core::Space;
use serde::Serialize;
use serde::de::DeserializeOwned;
use std::marker::PhantomData;
use std::sync::Arc;

/// Where a preset came from.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum PresetSource {
    /// rl-baselines3-zoo's hyper-parameters for the pair.
    Zoo,
    /// The algorithm's defaults (zoo has no preset for this environment).
    Defaults,
}

/// Which trainer drives a learner.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrainerKind {
    /// The off-policy trainer (replay): config section `[off_policy]`.
    OffPolicy,
    /// The on-policy trainer (rollouts): config section `[on_policy]`.
    OnPolicy,
}

/// The trainer's settings of a preset.
#[derive(Clone, Debug, PartialEq)]
pub enum TrainerConfig {
    /// `[off_policy]`.
    OffPolicy(OffPolicyConfig),
    /// `[on_policy]`.
    OnPolicy(OnPolicyConfig),
}

impl TrainerKind {
    /// The trainer's defaults.
    pub fn defaults(self) -> TrainerConfig {
        match self {
            TrainerKind::OffPolicy => TrainerConfig::OffPolicy(OffPolicyConfig::default()),
            TrainerKind::OnPolicy => TrainerConfig::OnPolicy(OnPolicyConfig::default()),
        }
    }
}

/// A preset: the learner's section, the trainer's, and the number of sub-environments.
#[derive(Clone, Debug)]
pub struct Preset<C> {
    /// The learner's own settings.
    pub learner: C,
    /// The trainer's settings.
    pub trainer: TrainerConfig,
    /// Sub-environments stepped together.
    pub num_envs: usize,
    /// Tuned for the environment, or defaults.
    pub source: PresetSource,
}

impl<C> Preset<C> {
    /// `learner` with the off-policy trainer of SAC's zoo preset for `env` (the trainer's
    /// defaults where zoo has none), changed by `adjust`, on one sub-environment: a start
    /// for a continuous-control learner of one's own.
    pub fn sac_trainer(env: &str, learner: C, adjust: impl FnOnce(&mut OffPolicyConfig)) -> Self {
        let (mut trainer, source) = match emberlab_algo::SacConfig::zoo(env) {
            Ok((_, trainer)) => (trainer, PresetSource::Zoo),
            Err(_) => (OffPolicyConfig::default(), PresetSource::Defaults),
        };
        adjust(&mut trainer);
        Preset {
            learner,
            trainer: TrainerConfig::OffPolicy(trainer),
            num_envs: 1,
            source,
        }
    }
}

/// A learner's config section as the command reads it: TOML with unknown fields refused
/// (`#[serde(deny_unknown_fields)]`), checked by [`Validate`], and able to build its learner.
pub trait LearnerConfig: Serialize + DeserializeOwned + Validate + Default + 'static {
    /// The trainer that drives the learner.
    const TRAINER: TrainerKind;

    /// The learner's own metric columns in `metrics.csv`, in the order its updates report
    /// them (a fixed schema: a metric it does not report in an update is left empty).
    const METRICS: &'static [&'static str];

    /// The learner for these spaces on `devices`, wrapped in [`crate::OffPolicy`] or
    /// [`crate::OnPolicy`].
    ///
    /// # Errors
    /// Spaces the learner cannot handle, a device it cannot use.
    fn build_learner(
        &self,
        obs: &Space,
        act: &Space,
        devices: &Devices,
    ) -> emberlab_core::Result<Box<dyn RunLearner>>;

    /// The learner for image observations `obs = [channels, height, width]` (stacks of
    /// `u8` frames) and `actions` discrete actions, wrapped as [`LearnerConfig::build_learner`]
    /// wraps it.
    ///
    /// # Errors
    /// Default: [`emberlab_core::Error::Unavailable`], a learner of vector observations
    /// only.
    fn build_pixel_learner(
        &self,
        obs: [usize; 3],
        actions: usize,
        devices: &Devices,
    ) -> emberlab_core::Result<Box<dyn RunLearner>> {
        let _ = (obs, actions, devices);
        Err(emberlab_core::Error::Unavailable {
            what: "image observations for this learner".into(),
            hint: "DQN, PPO and A2C train on images (Atari ids, `--env PongNoFrameskip-v4`)".into(),
        })
    }

    /// The preset for `env`: default settings unless the config knows better.
    fn preset(env: &str) -> Preset<Self>
    where
        Self: Sized,
    {
        let _ = env;
        Preset {
            learner: Self::default(),
            trainer: Self::TRAINER.defaults(),
            num_envs: 1,
            source: PresetSource::Defaults,
        }
    }
}

/// An entry of the registry: a learner the command can run, by name. Object-safe; [`Kind`]
/// makes one from a [`LearnerConfig`].
pub trait LearnerKind: Send + Sync {
    /// The name a config's `algo` gives, which is also its section's name.
    fn name(&self) -> &str;

    /// The trainer that drives it.
    fn trainer(&self) -> TrainerKind;

    /// Its own metric columns.
    fn metric_names(&self) -> &'static [&'static str];

    /// Its preset for `env`, its section as a TOML table.
    ///
    /// # Errors
    /// A preset that does not serialise.
    fn preset(&self, env: &str) -> Result<Preset<toml::Table>>;

    /// Checks a section: known fields only, values in range.
    ///
    /// # Errors
    /// The first problem, naming the field.
    fn check(&self, section: &toml::Table) -> Result<()>;

    /// The learner a section describes for these spaces on `devices`.
    ///
    /// # Errors
    /// As [`LearnerKind::check`], and spaces or devices the learner cannot use.
    fn build(
        &self,
        section: &toml::Table,
        obs: &Space,
        act: &Space,
        devices: &Devices,
    ) -> Result<Box<dyn RunLearner>>;

    /// The learner a section describes for image observations `obs = [c, h, w]` and
    /// `actions` discrete actions on `devices`.
    ///
    /// # Errors
    /// As [`LearnerKind::check`], and a learner without images
    /// ([`LearnerConfig::build_pixel_learner`]).
    fn build_pixels(
        &self,
        section: &toml::Table,
        obs: [usize; 3],
        actions: usize,
        devices: &Devices,
    ) -> Result<Box<dyn RunLearner>>;
}

/// The registry entry of config type `C` under a name.
pub struct Kind<C> {
    name: String,
    config: PhantomData<fn() -> C>,
}

impl<C: LearnerConfig> Kind<C> {
    /// The entry `name` (what `algo = "…"` and `ember train NAME` say).
    pub fn named(name: &str) -> Arc<dyn LearnerKind> {
        Arc::new(Kind::<C> {
            name: name.to_string(),
            config: PhantomData,
        })
    }

    fn parse(&self, section: &toml::Table) -> Result<C> {
        let config = C::deserialize(toml::Value::Table(section.clone()))
            .map_err(|e| RunError::Config(format!("[{}]: {}", self.name, e.message().trim())))?;
        config.validate()?;
        Ok(config)
    }
}

impl<C: LearnerConfig> LearnerKind for Kind<C> {
    fn name(&self) -> &str {
        &self.name
    }

    fn trainer(&self) -> TrainerKind {
        C::TRAINER
    }

    fn metric_names(&self) -> &'static [&'static str] {
        C::METRICS
    }

    fn preset(&self, env: &str) -> Result<Preset<toml::Table>> {
        let p = C::preset(env);
        let learner = toml::Table::try_from(&p.learner)
            .map_err(|e| RunError::Config(format!("[{}] preset: {e}", self.name)))?;
        Ok(Preset {
            learner,
            trainer: p.trainer,
            num_envs: p.num_envs,
            source: p.source,
        })
    }

    fn check(&self, section: &toml::Table) -> Result<()> {
        self.parse(section).map(|_| ())
    }

    fn build(
        &self,
        section: &toml::Table,
        obs: &Space,
        act: &Space,
        devices: &Devices,
    ) -> Result<Box<dyn RunLearner>> {
        Ok(self.parse(section)?.build_learner(obs, act, devices)?)
    }

    fn build_pixels(
        &self,
        section: &toml::Table,
        obs: [usize; 3],
        actions: usize,
        devices: &Devices,
    ) -> Result<Box<dyn RunLearner>> {
        Ok(self
            .parse(section)?
            .build_pixel_learner(obs, actions, devices)?)
    }
}
