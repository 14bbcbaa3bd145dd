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
