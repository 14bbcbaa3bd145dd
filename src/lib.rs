//! # ember
//!
//! The front crate of the Ember workspace: re-exports the component crates so that one
//! dependency brings them all. Each crate can also be used on its own.
//!
//! ```
//! use ember::replay::{ReplayBuffer, RingStorage, Uniform};
//!
//! let buffer = ReplayBuffer::new(RingStorage::new(16, 4, 1)?, Uniform::new(16, true), 0)?;
//! assert!(buffer.is_empty());
//! # Ok::<(), ember::core::Error>(())
//! ```

#![warn(missing_docs)]

pub use ember_algo as algo;
pub use ember_backend as backend;
pub use ember_core as core;
pub use ember_dist as dist;
pub use ember_env as env;
pub use ember_kernels as kernels;
pub use ember_loss as loss;
pub use ember_nn as nn;
pub use ember_replay as replay;
