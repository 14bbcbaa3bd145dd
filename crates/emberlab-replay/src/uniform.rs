//! Uniform sampling, with or without replacement.

use crate::codec::{Decoder, Encoder};
use crate::sampler::Sampler;
use crate::seen_set::SeenSet;
use emberlab_core::{EmberRng, Error, Result};

/// Draws slots uniformly. Without replacement it uses Floyd's algorithm (O(k) whatever
/// `len`) followed by a shuffle, so the batch is a uniformly random ordered sample.
#[derive(Clone, Debug)]
pub struct Uniform {
    capacity: usize,
    replacement: bool,
    seen: SeenSet,
}

impl Uniform {
    /// A uniform sampler for `capacity` slots.
    pub fn new(capacity: usize, replacement: bool) -> Self {
        Uniform {
            capacity,
            replacement,
            seen: SeenSet::new(capacity),
        }
    }

    /// Whether draws are with replacement.
    pub fn replacement(&self) -> bool {
        self.replacement
    }

    /// Draws `k` slots out of `0..len` into `out`.
    pub fn draw(
        &mut self,
        len: usize,
        k: usize,
        rng: &mut EmberRng,
        out: &mut Vec<usize>,
    ) -> Result<()> {
        out.clear();
        if len > self.capacity {
            return Err(Error::invalid(
                "len",
                len,
                format!("<= capacity {}", self.capacity),
            ));
        }
        if k == 0 {
            return Ok(());
        }
        if len == 0 {
            return Err(Error::NotEnough {
                what: "transitions".into(),
                requested: k,
                available: 0,
            });
        }
        if self.replacement {
            out.extend((0..k).map(|_| rng.below(len as u64) as usize));
            return Ok(());
        }
        if k > len {
            return Err(Error::NotEnough {
                what: "distinct transitions".into(),
                requested: k,
                available: len,
            });
        }
        // Floyd: for j in len-k..len, pick t in 0..=j; take t unless taken, else j.
        for j in len - k..len {
            let t = rng.below(j as u64 + 1) as usize;
            let pick = if self.seen.insert(t) { t } else { j };
            if pick == j {
                self.seen.insert(j);
            }
            out.push(pick);
        }
        self.seen.clear_items(out);
        // Floyd's output order is not exchangeable; shuffle it (Fisher-Yates).
        for i in (1..out.len()).rev() {
            let j = rng.below(i as u64 + 1) as usize;
            out.swap(i, j);
        }
        Ok(())
    }
}

impl Sampler for Uniform {
    const KIND: &'static str = "uniform";

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn on_push(&mut self, _slot: usize, _score: f64) -> Result<()> {
        Ok(())
    }

    fn sample(
        &mut self,
        len: usize,
        k: usize,
        rng: &mut EmberRng,
        indices: &mut Vec<usize>,
        weights: &mut Vec<f32>,
    ) -> Result<()> {
        self.draw(len, k, rng, indices)?;
        weights.clear();
        weights.resize(indices.len(), 1.0);
        Ok(())
    }

    fn encode(&self, enc: &mut Encoder) {
        enc.u8(self.replacement as u8);
    }

    fn decode(dec: &mut Decoder<'_>, capacity: usize) -> Result<Self> {
        let r = dec.u8("uniform replacement flag")?;
        if r > 1 {
            return Err(dec.corrupt(format!("uniform replacement flag = {r}")));
        }
        Ok(Uniform::new(capacity, r == 1))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn without_replacement_is_distinct_and_errors_past_len() {
        let mut u = Uniform::new(100, false);
        let mut rng = EmberRng::seed_from(0);
        let mut out = Vec::new();
        for k in [0, 1, 10, 50, 100] {
            u.draw(100, k, &mut rng, &mut out).unwrap();
            let mut s = out.clone();
            s.sort();
            s.dedup();
            assert_eq!(s.len(), k);
            assert!(s.iter().all(|&i| i < 100));
            assert!(u.seen.is_empty());
        }
        assert!(u.draw(10, 11, &mut rng, &mut out).is_err());
        assert!(u.draw(0, 1, &mut rng, &mut out).is_err());
        let mut w = Uniform::new(100, true);
        w.draw(10, 50, &mut rng, &mut out).unwrap();
        assert_eq!(out.len(), 50);
        assert!(out.iter().all(|&i| i < 10));
    }
}
