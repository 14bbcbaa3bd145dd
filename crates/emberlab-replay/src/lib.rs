//! # emberlab-replay
//!
//! Replay buffers that never dominate training time. No deep-learning dependency.
//!
//! - [`RingStorage`]: preallocated struct-of-arrays columns, O(1) push overwriting the
//!   oldest transition, gathers into caller-owned [`Batch`] buffers.
//! - Samplers ([`Sampler`]): [`Uniform`] (with or without replacement), [`Prioritized`]
//!   (sum + min trees, α, β, importance weights) and [`ReturnWeighted`]: `k` distinct
//!   transitions drawn one after another proportionally to their shifted returns, exactly,
//!   in microseconds from a million transitions.
//! - [`ReplayBuffer`] couples storage, sampler and a seeded generator, and saves/loads all
//!   three as one checksummed file; [`SharedReplay`] lets several threads write.
//! - [`AnySampler`] picks one of the three at run time (e.g. from a config).
//! - [`NStep`] turns one-step transitions into n-step ones across episode boundaries;
//!   [`EpisodeWriter`] feeds a buffer from a vector env's sub-environments with n-step
//!   returns and episode-return scores.
//! - [`FrameStorage`]: image observations stored one frame per slot, gathered as stacks of
//!   `k` frames with n-step returns (each frame stored once, not `k` times);
//!   [`FrameReplay`] couples it with any sampler, which then draws only complete, intact
//!   rows ([`Sampler::remove`] leaves the others out).
//!
//! ```
//! use emberlab_core::{Batch, Transition};
//! use emberlab_replay::{ReplayBuffer, ReturnWeighted, RingStorage};
//!
//! let storage = RingStorage::new(1000, 3, 1)?;
//! let mut buffer = ReplayBuffer::new(storage, ReturnWeighted::new(1000), 7)?;
//! for i in 0..100 {
//!     let obs = [i as f32, 0.0, 1.0];
//!     let t = Transition {
//!         obs: &obs, action: &[0.5], reward: 1.0, next_obs: &obs,
//!         terminated: false, truncated: false,
//!     };
//!     // The score is the transition's return: transitions are drawn in proportion to it,
//!     // shifted so the lowest return weighs zero.
//!     buffer.push_scored(&t, (i as f64) - 50.0, &[])?;
//! }
//! let mut batch = Batch::default();
//! buffer.sample(32, &mut batch)?;
//! assert_eq!(batch.len, 32);
//! assert_eq!(batch.obs.len(), 32 * 3);
//! let mut slots = batch.indices.clone();
//! slots.sort();
//! slots.dedup();
//! assert_eq!(slots.len(), 32); // without replacement
//! # Ok::<(), emberlab_core::Error>(())
//! ```

#![warn(missing_docs)]

mod any;
mod buffer;
pub mod codec;
mod episodes;
mod frame_replay;
mod frames;
mod huge_pages;
mod layout;
mod min_tree;
pub mod naive;
mod nstep;
mod prioritized;
mod return_weighted;
mod ring;
mod sampler;
mod seen_set;
mod shared;
mod slot_values;
mod stream;
mod sum_tree;
mod uniform;

pub use any::AnySampler;
pub use buffer::ReplayBuffer;
pub use emberlab_core::{Batch, EmberRng, Error, Result, Transition};
pub use episodes::{DISCOUNT_COLUMN, EpisodeWriter};
pub use frame_replay::FrameReplay;
pub use frames::{FrameBatch, FrameChanges, FrameStorage};
pub use min_tree::MinTree;
pub use nstep::NStep;
pub use prioritized::Prioritized;
pub use return_weighted::ReturnWeighted;
pub use ring::{ColumnSpec, RingStorage};
pub use sampler::Sampler;
pub use shared::{ReplayWriter, SharedReplay};
pub use sum_tree::{FAILED, SumTree};
pub use uniform::Uniform;
