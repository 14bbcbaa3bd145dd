//! The trait through which a [`crate::ReplayBuffer`] drives its sampling strategy.

use crate::codec::{Decoder, Encoder};
use emberlab_core::{EmberRng, Error, Result};

/// A sampling strategy over the occupied slots `0..len` of a ring storage.
///
/// The buffer calls [`Sampler::on_push`] for every stored transition (including the one
/// that overwrites an evicted slot) and [`Sampler::sample`] to draw a batch. Frame replay
/// ([`crate::FrameReplay`]) also calls [`Sampler::remove`]: there a stored slot may not be
/// drawable (an episode's final frame, a window not yet complete, a stack that lost a
/// frame), and the sampler draws only slots pushed and not removed since.
pub trait Sampler: Send + Sized {
    /// Tag identifying the sampler in saved files.
    const KIND: &'static str;

    /// Number of slots the sampler tracks (equal to the storage capacity).
    fn capacity(&self) -> usize;

    /// Slot `slot` now holds a new transition; `score` is its return (or its reward when
    /// the caller gave none). Samplers that ignore scores ignore it.
    fn on_push(&mut self, slot: usize, score: f64) -> Result<()>;

    /// Slot `slot` may no longer be drawn, until its next [`Sampler::on_push`]. A
    /// [`crate::ReplayBuffer`] never calls it; [`crate::FrameReplay`] does. Removing a slot
    /// that holds nothing changes nothing. Default: an [`Error::Unavailable`] naming the
    /// sampler (a sampler of one's own needs this method to serve frame replay).
    ///
    /// # Errors
    /// A slot out of range, or a sampler that cannot leave slots out.
    fn remove(&mut self, slot: usize) -> Result<()> {
        let _ = slot;
        Err(Error::Unavailable {
            what: format!("leaving slots out of a `{}` sampler", Self::KIND),
            hint: "implement Sampler::remove for it to serve frame replay".into(),
        })
    }

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

    /// Whether the sampler wants per-row TD errors back after an update (through
    /// [`Sampler::update_priorities`]). Default: no.
    fn uses_priorities(&self) -> bool {
        false
    }

    /// New priorities (e.g. `|TD error|`) for the slots of the last batch. Default:
    /// ignored.
    ///
    /// # Errors
    /// A length mismatch, a slot not holding a transition, a negative or non-finite value.
    fn update_priorities(&mut self, _slots: &[usize], _priorities: &[f32]) -> Result<()> {
        Ok(())
    }

    /// Whether the sampler weighs transitions by a score that can change after the push
    /// (an episode's return, known when it ends), set through [`Sampler::set_score`].
    /// Default: no.
    fn uses_scores(&self) -> bool {
        false
    }

    /// Replaces the score of the transition in `slot`. Default: ignored.
    ///
    /// # Errors
    /// A slot out of range or a non-finite score.
    fn set_score(&mut self, _slot: usize, _score: f64) -> Result<()> {
        Ok(())
    }

    /// Tells the sampler how far training has come (`progress` in `[0, 1]`), e.g. to
    /// anneal prioritized replay's β towards 1. Default: nothing.
    ///
    /// # Errors
    /// A `progress` outside `[0, 1]`.
    fn anneal(&mut self, _progress: f64) -> Result<()> {
        Ok(())
    }

    /// Writes the sampler's state (parameters and per-slot values).
    fn encode(&self, enc: &mut Encoder);

    /// Reads a state written by [`Sampler::encode`] for a storage of `capacity` slots.
    fn decode(dec: &mut Decoder<'_>, capacity: usize) -> Result<Self>;
}

/// An error unless `slot < capacity`, naming both: the slot check every sampler makes.
pub(crate) fn check_slot(slot: usize, capacity: usize) -> Result<()> {
    if slot >= capacity {
        return Err(Error::invalid(
            "slot",
            slot,
            format!("< capacity {capacity}"),
        ));
    }
    Ok(())
}
