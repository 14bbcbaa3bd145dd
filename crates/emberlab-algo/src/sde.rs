//! When gSDE's acting exploration weights are drawn again, shared by the learners that
//! explore with gSDE (SAC, PPO, A2C): every `every` exploring acts, or (`every = 0`, SB3's
//! `sde_sample_freq = −1`) at the first exploring act after each round of updates.

use crate::persist::Value;
use emberlab_core::Result;
use emberlab_core::state::{StateReader, StateWriter};

/// The exploration weights acting uses now and when to draw new ones.
#[derive(Clone, Debug)]
pub(crate) struct SdeSchedule {
    every: u64,
    weights: Vec<f32>,
    acts: u64,
    stale: bool,
}

impl SdeSchedule {
    /// Draws every `every` exploring acts (0: once per round of updates).
    pub fn new(every: u64) -> Self {
        SdeSchedule {
            every,
            weights: Vec::new(),
            acts: 0,
            stale: true,
        }
    }

    /// The weights for this exploring act, drawn anew with `draw` when due.
    pub fn weights(&mut self, draw: impl FnOnce() -> Vec<f32>) -> &[f32] {
        let due = match self.every {
            0 => self.stale,
            n => self.acts.is_multiple_of(n),
        };
        if due || self.weights.is_empty() {
            self.weights = draw();
            (self.acts, self.stale) = (0, false);
        }
        self.acts += 1;
        &self.weights
    }

    /// Counts a round of updates (with `every = 0`, the next act draws new weights).
    pub fn updated(&mut self) {
        self.stale = true;
    }
}

impl Value for SdeSchedule {
    /// The weights, the act counter and whether they are stale.
    fn write(&self, w: &mut StateWriter) {
        w.f32s(&self.weights).u64(self.acts).bool(self.stale);
    }

    /// A snapshot written before gSDE existed ends before the schedule, and gives a fresh
    /// one.
    fn read(&self, r: &mut StateReader<'_>) -> Result<Self> {
        if r.at_end() {
            return Ok(SdeSchedule::new(self.every));
        }
        Ok(SdeSchedule {
            every: self.every,
            weights: r.f32s(None)?,
            acts: r.u64()?,
            stale: r.bool()?,
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_when_due_and_round_trips() {
        let mut draws = 0;
        let mut every3 = SdeSchedule::new(3);
        for _ in 0..7 {
            every3.weights(|| {
                draws += 1;
                vec![draws as f32]
            });
        }
        assert_eq!(draws, 3); // acts 0, 3, 6
        let mut per_round = SdeSchedule::new(0);
        let mut n = 0;
        for round in 0..3 {
            for _ in 0..5 {
                per_round.weights(|| {
                    n += 1;
                    vec![round as f32]
                });
            }
            per_round.updated();
        }
        assert_eq!(n, 3);
        let mut w = StateWriter::new();
        every3.write(&mut w);
        let words = w.into_words();
        let back = every3.read(&mut StateReader::new(&words, "sde")).unwrap();
        assert_eq!((back.weights, back.acts, back.stale), (vec![3.0], 1, false));
        let fresh = every3.read(&mut StateReader::new(&[], "old")).unwrap();
        assert!(fresh.weights.is_empty() && fresh.stale);
    }
}
