//! # ember
//!
//! The front crate of the Ember workspace: re-exports the component crates so that one
//! dependency brings them all. Each crate can also be used on its own.
//!
//! ```
//! use emberlab::replay::{ReplayBuffer, RingStorage, Uniform};
//!
//! let buffer = ReplayBuffer::new(RingStorage::new(16, 4, 1)?, Uniform::new(16, true), 0)?;
//! assert!(buffer.is_empty());
//! # Ok::<(), emberlab::core::Error>(())
//! ```

#![warn(missing_docs)]

pub use emberlab_algo as algo;
pub use emberlab_backend as backend;
pub use emberlab_core as core;
pub use emberlab_dist as dist;
pub use emberlab_env as env;
pub use emberlab_kernels as kernels;
pub use emberlab_loss as loss;
pub use emberlab_nn as nn;
pub use emberlab_replay as replay;
pub use emberlab_run as run;

/// What a learner of your own usually needs, in one `use emberlab::prelude::*;`: burn's
/// tensor, module and optimizer types; the learner traits and their parts (schedules, acting,
/// checkpoints, optimizers, batch tensors); the command's door (`emberlab::run`). The
/// examples `custom_redq` and `custom_crossq` start from it.
pub mod prelude {
    pub use burn::module::Module;
    pub use burn::optim::{GradientsParams, ModuleOptimizer};
    pub use burn::tensor::{Device, Tensor};
    pub use emberlab_algo::parts::{Parts, UpdateSchedule, part, row_parts, run_by_rows};
    pub use emberlab_algo::tensors::{column, learner_devices, matrix, rows_of};
    pub use emberlab_algo::{
        ActionBuf, Agent, Devices, GaussianActing, OffPolicyConfig, OffPolicyLearner, OnnxOutput,
        OnnxPolicy, OptimizerKind, Persist, Progress, Update, Validate, Visitor, stepped,
    };
    pub use emberlab_core::{Batch, EmberRng, Result, Space};
    pub use emberlab_loss::checked_loss;
    pub use emberlab_nn::{OnnxGraph, noise};
    pub use emberlab_run::kinds::{Kind, LearnerConfig, Preset, TrainerKind};
    pub use emberlab_run::{OffPolicy, RunLearner};
}
