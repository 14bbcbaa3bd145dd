//! # emberlab-env
//!
//! Environments for Ember, reproducing Gymnasium 1.4:
//!
//! - **Classic control** ([`CartPole`], [`Pendulum`], [`MountainCar`],
//!   [`MountainCarContinuous`], [`Acrobot`]) with Gymnasium's constants, order of
//!   operations, `f32`/`f64` precision, reset ranges, rewards and termination, checked
//!   against golden traces recorded from Gymnasium (`crates/emberlab-env/tools/gen_env_traces.py`). Each
//!   exposes its physical state through [`ClassicEnv`]. Seeded resets draw from NumPy's
//!   generator as Gymnasium seeds it ([`NumpyRng`]), so `reset(Some(s))` starts where
//!   Gymnasium's `reset(seed=s)` does.
//! - **MuJoCo** (cargo feature `mujoco`; `scripts/setup-mujoco.sh` installs the library):
//!   Gymnasium 1.4's v5 locomotion and control tasks (`HalfCheetah-v5`, `Hopper-v5`,
//!   `Walker2d-v5`, `Ant-v5`, `Humanoid-v5`, `Swimmer-v5`, `InvertedPendulum-v5`,
//!   `InvertedDoublePendulum-v5`, `Reacher-v5`) as [`MujocoEnv`]s on the MuJoCo library
//!   itself, checked against traces recorded from Gymnasium (`crates/emberlab-env/tools/gen_mujoco_traces.py`).
//! - **A Gymnasium bridge** (cargo feature `gym`): `make("gym:LunarLander-v3")` steps any
//!   installed Gymnasium environment with Box or Discrete spaces in a Python worker process
//!   of its own ([`GymEnv`]), so that vector environments step in parallel; Atari games
//!   through SB3's `AtariWrapper` in the same way ([`AtariEnv`]: ale-py, GPL-2, stays in
//!   the worker; several games share a worker, one worker per core by default), checked
//!   against traces recorded from SB3
//!   (`crates/emberlab-env/tools/gen_atari_traces.py`).
//! - **Image environments** ([`FrameEnv`], `u8` frames): [`FrameVecEnv`] steps several and
//!   stacks their last `k` frames as SB3's `VecFrameStack` does ([`FrameStack`] for one);
//!   [`Catch`] is a small image task; Atari games (`AtariEnv`, feature `gym`) are others.
//! - **A registry**: [`make`]`("Pendulum-v1")` builds an environment wrapped in its
//!   registered [`TimeLimit`]; [`register`] adds a user's environment under an id of its
//!   own, and an [`EnvFactory`] (any closure returning a fresh `Box<dyn Env>`) is how
//!   trainers get evaluation environments.
//! - **Wrappers**: [`TimeLimit`], [`RecordEpisodeStatistics`], [`NormalizeObservation`],
//!   [`ClipAction`].
//! - **Vector environments** with Gymnasium's next-step autoreset: [`SyncVecEnv`] and the
//!   threaded batcher [`ThreadedVecEnv`] (`W` workers × `N` environments, one contiguous
//!   observation buffer, no allocation per step), both behind [`VecEnv`].
//! - **Tensor-native batched environments** (`TensorCartPole`, `TensorPendulum`, cargo
//!   feature `tensor`) stepping `B` copies at once as tensor operations on any burn
//!   `Device` the caller passes in (this crate names no backend; `emberlab-backend` makes
//!   devices), autoreset included.
//!
//! An action outside the action space is an [`Error`](emberlab_core::Error) naming the action
//! and the space; continuous actions are clipped only where Gymnasium clips them.
//!
//! ```
//! use emberlab_core::{Action, Env};
//! use emberlab_env::{ThreadedVecEnv, VecActions, VecEnv};
//!
//! // One environment, by id, with its time limit.
//! let mut env = emberlab_env::make("CartPole-v1")?;
//! let obs = env.reset(Some(42))?;
//! assert_eq!(obs.len(), 4);
//! let step = env.step(Action::Discrete(1))?;
//! assert_eq!(step.reward, 1.0);
//! assert!(env.step(Action::Discrete(7)).is_err());
//!
//! // 2 workers × 8 environments stepping in parallel.
//! let mut envs = ThreadedVecEnv::from_id("CartPole-v1", 2, 8)?;
//! envs.reset(Some(0))?;
//! let actions = [1usize; 16];
//! let step = envs.step(VecActions::Discrete(&actions))?;
//! assert_eq!(step.obs.len(), 16 * 4);
//! # Ok::<(), emberlab_core::Error>(())
//! ```

#![warn(missing_docs)]

mod checks;
mod classic;
#[cfg(feature = "gym")]
mod gym_bridge;
#[cfg(feature = "mujoco")]
mod mujoco;
mod numpy_random;
mod pixels;
mod registry;
#[cfg(feature = "tensor")]
mod tensor;
mod vector;
mod wrappers;

pub use classic::{
    Acrobot, CartPole, ClassicEnv, DEFAULT_SEED, MountainCar, MountainCarContinuous, Pendulum,
};
#[cfg(feature = "gym")]
pub use gym_bridge::{
    AtariConfig, AtariEnv, AtariStep, GymEnv, PYTHON_VAR, default_python, default_workers,
};
#[cfg(feature = "mujoco-render")]
pub use mujoco::MujocoRenderer;
#[cfg(feature = "mujoco")]
pub use mujoco::{ASSETS_VAR, MujocoEnv, default_xml_path};
pub use numpy_random::NumpyRng;
pub use pixels::{
    Catch, FrameEnv, FrameEnvFactory, FrameStack, FrameStep, FrameVecEnv, FrameVecStep, is_atari_id,
};
pub use registry::{EnvFactory, MUJOCO_IDS, factory, ids, make, register};
#[cfg(feature = "tensor")]
pub use tensor::{TensorCartPole, TensorPendulum, TensorStep};
pub use vector::{
    BatchMeanVar, NormalizeConfig, NormalizedFactory, OBS_NORMALIZER_FILE, ObsNormalizer,
    SyncVecEnv, ThreadedVecEnv, VecActions, VecEnv, VecNormalize, VecStep,
};
pub use wrappers::{
    ClipAction, EpisodeStatistics, NormalizeObservation, RecordEpisodeStatistics, RunningMeanStd,
    TimeLimit,
};
