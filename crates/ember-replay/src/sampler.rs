//! The trait through which a [`crate::ReplayBuffer`] drives its sampling strategy.

use crate::codec::{Decoder, Encoder};
use ember_core::{EmberRng, Result};

/// A sampling strategy over the occupied slots `0..len` of a ring storage.
///
/// The buffer calls [`Sampler::on_push`] for every stored transition (including the one
/// that overwrites an evicted slot) and [`Sampler::sample`] to draw a batch.
pub trait Sampler: Send + Sized {
    /// Tag identifying the sampler in saved files.
    const KIND: &'static str;

    /// Number of slots the sampler tracks (equal to the storage capacity).
    fn capacity(&self) -> usize;

    /// Slot `slot` now holds a new transition; `score` is its return (or its reward when
    /// the caller gave none). Samplers that ignore scores ignore it.
    fn on_push(&mut self, slot: usize, score: f64) -> Result<()>;

    /// Draws `k` slots out of `0..len` into `indices` and their importance weights into
    /// `weights` (all `1.0` for unweighted samplers). Both vectors are cleared first.
    fn sample(
        &mut self,
        len: usize,
        k: usize,
        rng: &mut EmberRng,
        indices: &mut Vec<usize>,
        weights: &mut Vec<f32>,
    ) -> Result<()>;

    /// Writes the sampler's state (parameters and per-slot values).
    fn encode(&self, enc: &mut Encoder);

    /// Reads a state written by [`Sampler::encode`] for a storage of `capacity` slots.
    fn decode(dec: &mut Decoder<'_>, capacity: usize) -> Result<Self>;
}
