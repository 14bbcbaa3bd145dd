//! # emberlab-nn
//!
//! burn modules for reinforcement learning, written once for every backend: they take a
//! `burn::tensor::Device` and never name a backend.
//!
//! - [`Mlp`] (sizes, activation, optional layer norm).
//! - [`GaussianTanhPolicy`] (SAC's actor: reparameterised samples, log-probabilities with
//!   the tanh correction, deterministic mode) and [`CategoricalPolicy`].
//! - [`DiscreteQ`], [`ContinuousQ`], [`ValueNet`]; [`ActorCriticNet`] (a categorical,
//!   Gaussian or tanh-Gaussian policy and a value head, separate or on a shared trunk, with
//!   log-probabilities and entropies of given actions); SAC's learnable [`Temperature`].
//! - [`distributions`]: the log-probability and entropy formulas, on tensors and on the host.
//! - [`CriticEnsemble`]: E critics as one batched matmul per layer.
//! - [`hard_target`] and [`polyak_update`] for target networks.
//! - Encoders for image observations ([`PixelEncoder`]): [`NatureCnn`] (SB3's `NatureCNN`)
//!   and [`ImpalaCnn`], and [`pixels_to_unit`] for the `u8` frames they read.
//! - [`noise`]: host-side noise so the same seed acts the same on every backend.
//!
//! ```
//! use emberlab_core::EmberRng;
//! use emberlab_nn::{noise, GaussianTanhPolicyConfig};
//!
//! let device = emberlab_backend::DeviceSpec::Flex.device()?;
//! let policy = GaussianTanhPolicyConfig::new(3, 1)
//!     .with_bounds(vec![-2.0], vec![2.0])
//!     .init(&device)?;
//! let mut rng = EmberRng::seed_from(0);
//! let obs = noise::standard_normal(4, 3, &mut rng, &device);
//! let eps = noise::standard_normal(4, 1, &mut rng, &device);
//! let (action, log_prob) = policy.sample(obs, eps);
//! assert_eq!(action.dims(), [4, 1]);
//! assert_eq!(log_prob.dims(), [4, 1]);
//! let a: Vec<f32> = action.into_data().try_into_vec_as::<f32>().unwrap();
//! assert!(a.iter().all(|x| x.abs() <= 2.0));
//! # Ok::<(), emberlab_core::Error>(())
//! ```

#![warn(missing_docs)]

mod actor_critic;
mod batch_norm;
mod categorical_policy;
pub mod distributions;
mod ensemble;
mod flat;
mod frozen;
mod gaussian_policy;
mod mlp;
pub mod noise;
pub mod onnx;
mod orthogonal;
mod pixels;
mod pixels_onnx;
mod target;
mod temperature;
mod value;

pub use actor_critic::{ActorCriticNet, ActorCriticNetConfig, HostActions, PolicyEval, PolicyHead};
pub use batch_norm::{BatchNorm, BatchNormCritic, BatchNormQ, BatchStats, CriticStats};
pub use categorical_policy::{CategoricalPolicy, evaluate_logits};
pub use ensemble::{CriticEnsemble, CriticEnsembleConfig};
pub use flat::{flat_params, load_flat_params, num_flat_params};
pub use frozen::{FROZEN_MAX_ROWS, FrozenGaussianTanhPolicy, FrozenMlp};
pub use gaussian_policy::{GaussianTanhPolicy, GaussianTanhPolicyConfig, MIN_ROWS_PER_THREAD};
pub use mlp::{Activation, Mlp, MlpConfig};
pub use onnx::OnnxGraph;
pub use orthogonal::{orthogonal, orthogonal_param};
pub use pixels::{
    ImpalaCnn, ImpalaCnnConfig, ImpalaStage, NatureCnn, NatureCnnConfig, PixelEncoder,
    PixelEncoderKind, ResidualBlock, pixels_to_unit,
};
pub use pixels_onnx::image_rows_onnx;
pub use target::{hard_target, polyak_update};
pub use temperature::Temperature;
pub use value::{ContinuousQ, DiscreteQ, ValueNet};
