//! # ember-algo
//!
//! Reinforcement-learning algorithms assembled from Ember's parts, on one code path for
//! every burn backend (they take a `burn::tensor::Device`).
//!
//! - [`Agent`] acts; [`OffPolicyLearner`] / [`OnPolicyLearner`] learn from a replay batch /
//!   a rollout and report named [`Metrics`].
//! - Shared loops: [`train_off_policy`] (vector env → replay → updates at a ratio →
//!   evaluation) and [`train_on_policy`] (rollouts → GAE or Monte-Carlo returns → update).
//!   Nothing of them is repeated inside an algorithm.
//! - Algorithms: [`Sac`] (fused twin critics, automatic temperature, parallel or
//!   sequential update — see [`sac`] for the semantics), [`Dqn`] (double DQN), A2C and
//!   REINFORCE ([`A2cConfig`], [`ReinforceConfig`] → [`PolicyGradient`]).
//! - Configs are serde structs (`deny_unknown_fields`) with rl-baselines3-zoo presets
//!   (`…Config::zoo(env_id)`), loadable from TOML with [`from_toml`]; validation errors name
//!   the field and the allowed range.
//! - Learners act through an [`ActingCopy`] that may live on another device than the one
//!   they learn on, refreshed every `sync_every` updates.
//! - [`OptimizerKind`] builds every learner's optimizer; Adam on flex and ndarray is
//!   [`HostAdam`], burn's update in one fused pass over host memory (bit-identical).
//!
//! ```
//! use ember_algo::{Dqn, DqnConfig, OffPolicyConfig, train_off_policy};
//! use ember_env::{SyncVecEnv, VecEnv};
//!
//! let device = ember_backend::DeviceSpec::Flex.device()?;
//! let mut env = SyncVecEnv::from_id("CartPole-v1", 2)?;
//! let (config, _) = DqnConfig::zoo("CartPole-v1")?;
//! let mut dqn = Dqn::new(
//!     &config,
//!     env.single_observation_space(),
//!     env.single_action_space(),
//!     &device,
//!     &device,
//! )?;
//! let trainer = OffPolicyConfig {
//!     total_steps: 400,
//!     learning_starts: 100,
//!     batch_size: 32,
//!     eval_episodes: 1,
//!     ..OffPolicyConfig::default()
//! };
//! let report = train_off_policy(&mut dqn, &mut env, "CartPole-v1", &trainer)?;
//! assert_eq!(report.env_steps, 400);
//! assert!(report.updates > 0 && report.final_eval().unwrap() >= 1.0);
//! # Ok::<(), ember_core::Error>(())
//! ```

#![warn(missing_docs)]

mod a2c;
mod acting;
mod agent;
pub mod checkpoint;
mod config;
mod dqn;
mod evaluate;
mod learner;
mod off_policy;
mod on_policy;
mod optimizer;
mod policy_gradient;
mod reinforce;
mod report;
pub mod sac;
mod schedule;
pub mod tensors;
mod worker;

pub use a2c::A2cConfig;
pub use acting::ActingCopy;
pub use agent::{ActionBuf, Agent, stored_action_dim};
pub use checkpoint::{
    Checkpoint, CheckpointConfig, CheckpointInfo, load_checkpoint, save_checkpoint,
};
pub use config::{
    ActivationKind, Validate, check_hidden, check_open_closed, check_positive, check_range,
    from_toml,
};
pub use dqn::{Dqn, DqnConfig};
pub use evaluate::{EvalResult, evaluate};
pub use learner::{AdvantageMode, Metrics, OffPolicyLearner, OnPolicyLearner, RolloutBatch};
pub use off_policy::{OffPolicyConfig, random_actions, train_off_policy};
pub use on_policy::{OnPolicyConfig, train_on_policy};
pub use optimizer::{HostAdam, HostAdamState, OptimizerKind};
pub use policy_gradient::{ActorCriticNet, PolicyGradient};
pub use reinforce::ReinforceConfig;
pub use report::{EvalPoint, TrainReport};
pub use sac::{Sac, SacConfig, Temperature, UpdateSchedule};
pub use schedule::LinearSchedule;
