//! # emberlab-algo
//!
//! Reinforcement-learning algorithms assembled from Ember's parts, on one code path for
//! every burn backend (they take a `burn::tensor::Device`).
//!
//! - [`Agent`] acts; [`OffPolicyLearner`] / [`OnPolicyLearner`] learn from a replay batch /
//!   a rollout and report named [`Metrics`].
//! - Shared loops: [`train_off_policy`] (vector env → the replay buffer *you* pass, any
//!   sampler → updates at a ratio → evaluation) and [`train_on_policy`] (rollouts → GAE or
//!   Monte-Carlo returns → update). Both take the training env and an evaluation-env
//!   factory as values (your own `Env` trains as well as a registered id), continue the
//!   learner's [`Progress`] over calls, and turn panics inside a learner into errors.
//!   Nothing of them is repeated inside an algorithm.
//! - Replay is your choice: uniform, prioritized (TD errors written back as priorities,
//!   β annealed) or return-weighted (episode-return scores, [`replay`]), with n-step
//!   returns, built from a `[replay]` config section ([`ReplayConfig`]) or by hand.
//! - Algorithms: [`Sac`] (fused twin critics, automatic temperature, parallel or
//!   sequential update — see [`sac`] for the semantics), [`Td3`], [`Dqn`] (double DQN), PPO, A2C
//!   and REINFORCE ([`PpoConfig`], [`A2cConfig`], [`ReinforceConfig`] → [`PolicyGradient`],
//!   discrete or continuous actions; the behaviour policy's log-probabilities and values
//!   are recorded while acting, [`ActingRecord`]).
//! - Configs are serde structs (`deny_unknown_fields`) with rl-baselines3-zoo presets
//!   (`…Config::zoo(env_id)`), loadable from TOML with [`from_toml`]; validation errors name
//!   the field and the allowed range.
//! - Every algorithm is built the same way: `…Config::build(obs_space, action_space,
//!   &Devices)`; learners act through an [`ActingCopy`] on `Devices::act`, refreshed every
//!   `sync_every` updates. An update that fails (bad batch — checked and named —, NaN
//!   loss, panic) leaves the learner unchanged and usable.
//! - [`OptimizerKind`] builds every learner's optimizer; Adam on flex and ndarray is
//!   [`HostAdam`], burn's update in one fused pass over host memory (bit-identical).
//!
//! ```
//! use emberlab_algo::{Devices, DqnConfig, OffPolicyConfig, train_off_policy};
//! use emberlab_env::{SyncVecEnv, VecEnv};
//!
//! let device = emberlab_backend::DeviceSpec::Flex.device()?;
//! let mut env = SyncVecEnv::from_id("CartPole-v1", 2)?;
//! let (config, _) = DqnConfig::zoo("CartPole-v1")?;
//! let mut dqn = config.build(
//!     env.single_observation_space(),
//!     env.single_action_space(),
//!     &Devices::same(&device),
//! )?;
//! let mut trainer = OffPolicyConfig {
//!     total_steps: 400,
//!     learning_starts: 100,
//!     batch_size: 32,
//!     eval_episodes: 1,
//!     ..OffPolicyConfig::default()
//! };
//! trainer.replay.kind = emberlab_algo::ReplayKind::Prioritized;
//! let mut replay = trainer.build_replay(&env)?;
//! let eval = emberlab_env::factory("CartPole-v1")?;
//! let report = train_off_policy(&mut dqn, &mut env, &mut replay, eval.as_ref(), &trainer)?;
//! assert_eq!(report.env_steps, 400);
//! assert!(report.updates > 0 && report.final_eval().unwrap() >= 1.0);
//! // A second call continues the learner's counters (and ε schedule).
//! let again = train_off_policy(&mut dqn, &mut env, &mut replay, eval.as_ref(), &trainer)?;
//! assert_eq!(again.progress.env_steps, 800);
//! # Ok::<(), emberlab_core::Error>(())
//! ```
//!
//! Assembling an algorithm of your own from these parts is walked through in
//! `docs/custom-algorithm.md` (and `examples/custom_redq.rs`).

#![warn(missing_docs)]

mod a2c;
mod acting;
mod agent;
mod books;
pub mod checkpoint;
mod config;
mod devices;
mod dqn;
mod evaluate;
#[doc(hidden)]
pub mod faults;
mod frame_off_policy;
mod frame_on_policy;
mod guard;
mod host_step;
mod learner;
pub mod manifest;
mod off_policy;
mod on_policy;
mod optimizer;
pub mod parts;
pub mod persist;
mod policy_gradient;
mod ppo;
mod reinforce;
pub mod replay;
mod report;
mod rmsprop_tf;
pub mod sac;
mod schedule;
mod sde;
mod td3;
pub mod tensors;
mod trainer;
pub mod training_state;

pub use a2c::A2cConfig;
pub use acting::{ActingCopy, Frozen, GaussianActing, Unfrozen};
pub use agent::{ActionBuf, Agent, OnnxOutput, OnnxPolicy, PolicyWeights, stored_action_dim};
pub use checkpoint::{
    Checkpoint, CheckpointConfig, CheckpointInfo, load_checkpoint, save_checkpoint,
};
pub use config::{
    Validate, check_hidden, check_open_closed, check_positive, check_range, from_toml,
};
pub use devices::Devices;
pub use dqn::{Dqn, DqnConfig};
pub use emberlab_nn::Activation;
/// The batch of image observations [`OffPolicyLearner::update_frames`] takes.
pub use emberlab_replay::FrameBatch;
pub use evaluate::{
    EpisodeWatcher, EvalResult, GAME_STEP_LIMIT, GameWatcher, evaluate, evaluate_env,
    evaluate_frames, play_env, play_frames,
};
pub use frame_off_policy::{FrameOffPolicyTrainer, train_off_policy_frames};
pub use frame_on_policy::{FrameOnPolicyTrainer, train_on_policy_frames};
pub use learner::{
    ActingRecord, AdvantageMode, FrameRolloutBatch, Metrics, OffPolicyLearner, OnPolicyLearner,
    Progress, RolloutBatch, Update, check_discrete_actions, check_frame_batch,
};
pub use off_policy::{OffPolicyConfig, OffPolicyTrainer, random_actions, train_off_policy};
pub use on_policy::{OnPolicyConfig, OnPolicyTrainer, train_on_policy};
pub use optimizer::{HostAdam, HostAdamState, OptimizerKind, step_in_place, stepped};
pub use parts::UpdateSchedule;
pub use persist::{Loaded, Persist, Value, Visitor};
pub use policy_gradient::PolicyGradient;
pub use ppo::PpoConfig;
pub use reinforce::ReinforceConfig;
pub use replay::{ReplayConfig, ReplayKind};
pub use report::{EpisodeTracker, EvalPoint, TrainReport};
pub use rmsprop_tf::{RmsPropTfLike, RmsPropTfState};
pub use sac::{Sac, SacConfig};
pub use schedule::LinearSchedule;
pub use td3::{Td3, Td3Config};
pub use trainer::Trainer;
pub use training_state::TrainingState;
