//! The built-in algorithms as registry entries: the same door a learner of your own goes
//! through ([`crate::kinds::LearnerConfig`]), with rl-baselines3-zoo's presets.

use crate::kinds::{
    Kind, LearnerConfig, LearnerKind, Preset, PresetSource, TrainerConfig, TrainerKind,
};
use crate::learners::{OffPolicy, OnPolicy, RunLearner};
use emberlab_algo::{
    A2cConfig, Devices, DqnConfig, OffPolicyConfig, OnPolicyConfig, PpoConfig, ReinforceConfig,
    SacConfig, Td3Config,
};
use emberlab_core::{Result, Space};
use std::sync::Arc;

/// The built-in entries, in the order `ember` lists them.
pub(crate) fn kinds() -> Vec<Arc<dyn LearnerKind>> {
    vec![
        Kind::<SacConfig>::named("sac"),
        Kind::<Td3Config>::named("td3"),
        Kind::<DqnConfig>::named("dqn"),
        Kind::<PpoConfig>::named("ppo"),
        Kind::<A2cConfig>::named("a2c"),
        Kind::<ReinforceConfig>::named("reinforce"),
    ]
}

/// An off-policy preset: zoo's for `env` if it has one, the defaults otherwise.
fn off_policy<C: Default>(zoo: Result<(C, OffPolicyConfig)>) -> Preset<C> {
    let (learner, trainer, source) = match zoo {
        Ok((a, t)) => (a, t, PresetSource::Zoo),
        Err(_) => (
            C::default(),
            OffPolicyConfig::default(),
            PresetSource::Defaults,
        ),
    };
    Preset {
        learner,
        trainer: TrainerConfig::OffPolicy(trainer),
        num_envs: 1,
        source,
    }
}

/// An on-policy preset: zoo's for `env` if it has one, else the defaults with `trainer`
/// and `num_envs` sub-environments.
fn on_policy<C: Default>(
    zoo: Result<(C, OnPolicyConfig, usize)>,
    trainer: OnPolicyConfig,
    num_envs: usize,
) -> Preset<C> {
    let (learner, trainer, num_envs, source) = match zoo {
        Ok((a, t, n)) => (a, t, n, PresetSource::Zoo),
        Err(_) => (C::default(), trainer, num_envs, PresetSource::Defaults),
    };
    Preset {
        learner,
        trainer: TrainerConfig::OnPolicy(trainer),
        num_envs,
        source,
    }
}

impl LearnerConfig for SacConfig {
    const TRAINER: TrainerKind = TrainerKind::OffPolicy;
    const METRICS: &'static [&'static str] = &["critic_loss", "actor_loss", "alpha_loss", "alpha"];

    fn build_learner(&self, obs: &Space, act: &Space, d: &Devices) -> Result<Box<dyn RunLearner>> {
        Ok(Box::new(OffPolicy(self.build(obs, act, d)?)))
    }

    fn preset(env: &str) -> Preset<Self> {
        off_policy(SacConfig::zoo(env))
    }
}

impl LearnerConfig for Td3Config {
    const TRAINER: TrainerKind = TrainerKind::OffPolicy;
    const METRICS: &'static [&'static str] = &["critic_loss", "actor_loss"];

    fn build_learner(&self, obs: &Space, act: &Space, d: &Devices) -> Result<Box<dyn RunLearner>> {
        Ok(Box::new(OffPolicy(self.build(obs, act, d)?)))
    }

    fn preset(env: &str) -> Preset<Self> {
        off_policy(Td3Config::zoo(env))
    }
}

impl LearnerConfig for DqnConfig {
    const TRAINER: TrainerKind = TrainerKind::OffPolicy;
    const METRICS: &'static [&'static str] = &["loss", "epsilon"];

    fn build_learner(&self, obs: &Space, act: &Space, d: &Devices) -> Result<Box<dyn RunLearner>> {
        Ok(Box::new(OffPolicy(self.build(obs, act, d)?)))
    }

    fn build_pixel_learner(
        &self,
        obs: [usize; 3],
        actions: usize,
        d: &Devices,
    ) -> Result<Box<dyn RunLearner>> {
        Ok(Box::new(OffPolicy(self.build_pixels(obs, actions, d)?)))
    }

    fn preset(env: &str) -> Preset<Self> {
        off_policy(DqnConfig::zoo(env))
    }
}

impl LearnerConfig for PpoConfig {
    const TRAINER: TrainerKind = TrainerKind::OnPolicy;
    const METRICS: &'static [&'static str] = &[
        "policy_loss",
        "value_loss",
        "entropy",
        "approx_kl",
        "clip_fraction",
    ];

    fn build_learner(&self, obs: &Space, act: &Space, d: &Devices) -> Result<Box<dyn RunLearner>> {
        Ok(Box::new(OnPolicy(self.build(obs, act, d)?)))
    }

    fn build_pixel_learner(
        &self,
        obs: [usize; 3],
        actions: usize,
        d: &Devices,
    ) -> Result<Box<dyn RunLearner>> {
        Ok(Box::new(OnPolicy(self.build_pixels(obs, actions, d)?)))
    }

    fn preset(env: &str) -> Preset<Self> {
        let trainer = OnPolicyConfig {
            n_steps: 2048,
            ..OnPolicyConfig::default()
        };
        on_policy(PpoConfig::zoo(env), trainer, 1)
    }
}

impl LearnerConfig for A2cConfig {
    const TRAINER: TrainerKind = TrainerKind::OnPolicy;
    const METRICS: &'static [&'static str] = &["policy_loss", "value_loss", "entropy"];

    fn build_learner(&self, obs: &Space, act: &Space, d: &Devices) -> Result<Box<dyn RunLearner>> {
        Ok(Box::new(OnPolicy(self.build(obs, act, d)?)))
    }

    fn build_pixel_learner(
        &self,
        obs: [usize; 3],
        actions: usize,
        d: &Devices,
    ) -> Result<Box<dyn RunLearner>> {
        Ok(Box::new(OnPolicy(self.build_pixels(obs, actions, d)?)))
    }

    fn preset(env: &str) -> Preset<Self> {
        on_policy(A2cConfig::zoo(env), OnPolicyConfig::default(), 8)
    }
}

impl LearnerConfig for ReinforceConfig {
    const TRAINER: TrainerKind = TrainerKind::OnPolicy;
    const METRICS: &'static [&'static str] = &["policy_loss", "value_loss", "entropy"];

    fn build_learner(&self, obs: &Space, act: &Space, d: &Devices) -> Result<Box<dyn RunLearner>> {
        Ok(Box::new(OnPolicy(self.build(obs, act, d)?)))
    }

    fn preset(_env: &str) -> Preset<Self> {
        let trainer = OnPolicyConfig {
            total_steps: 400_000,
            n_steps: 1000,
            ..OnPolicyConfig::default()
        };
        Preset {
            learner: ReinforceConfig::default(),
            trainer: TrainerConfig::OnPolicy(trainer),
            num_envs: 8,
            source: PresetSource::Defaults,
        }
    }
}
