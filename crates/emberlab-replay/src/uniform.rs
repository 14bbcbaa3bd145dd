//! Uniform sampling, with or without replacement, over the slots not left out.

use crate::codec::{Decoder, Encoder};
use crate::sampler::Sampler;
use crate::seen_set::SeenSet;
use emberlab_core::{EmberRng, Error, Result};

/// Bit 0 of the saved flag byte: draws with replacement.
const REPLACEMENT: u8 = 1;
/// Bit 1: the removed slots follow as a bitmap (files written before removal existed
/// never set it).
const HOLES: u8 = 2;

/// Draws slots uniformly. Without replacement it uses Floyd's algorithm (O(k) whatever
/// `len`) followed by a shuffle, so the batch is a uniformly random ordered sample.
///
/// Slots left out by [`Sampler::remove`] (frame replay's undrawable slots) are skipped
/// until their next [`Sampler::on_push`]: draws then reject them, which stays O(k) while
/// at least a quarter of `0..len` is drawable, and otherwise draws from a list of the
/// drawable slots built for that batch (O(len)). Until the first removal the draw is the
/// plain one, so a [`crate::ReplayBuffer`] never pays for this.
#[derive(Clone, Debug)]
pub struct Uniform {
    capacity: usize,
    replacement: bool,
    seen: SeenSet,
    /// Removed slots; allocated by the first removal.
    holes: SeenSet,
    hole_count: usize,
    /// The drawable slots, when a batch draws from their list.
    live: Vec<usize>,
}

impl Uniform {
    /// A uniform sampler for `capacity` slots.
    pub fn new(capacity: usize, replacement: bool) -> Self {
        Uniform {
            capacity,
            replacement,
            seen: SeenSet::new(capacity),
            holes: SeenSet::default(),
            hole_count: 0,
            live: Vec::new(),
        }
    }

    /// Whether draws are with replacement.
    pub fn replacement(&self) -> bool {
        self.replacement
    }

    /// Number of slots removed and not pushed again since.
    pub fn removed(&self) -> usize {
        self.hole_count
    }

    /// Draws `k` slots out of `0..len`, less the removed ones, into `out`.
    ///
    /// # Errors
    /// `len` above the capacity; no slot to draw from; without replacement, `k` above the
    /// number of drawable slots.
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
        if self.hole_count == 0 {
            return self.draw_dense(len, k, rng, out);
        }
        // At least this many slots below `len` are drawable (every hole may lie below it).
        let least = len.saturating_sub(self.hole_count);
        let spare = if self.replacement {
            least
        } else {
            least.saturating_sub(k)
        };
        if spare.saturating_mul(4) >= len && spare > 0 {
            // Each try lands on a drawable, not yet drawn slot with probability >= 1/4.
            for _ in 0..k {
                let pick = loop {
                    let t = rng.below(len as u64) as usize;
                    if !self.holes.contains(t) && (self.replacement || self.seen.insert(t)) {
                        break t;
                    }
                };
                out.push(pick);
            }
            if !self.replacement {
                self.seen.clear_items(out);
            }
            return Ok(());
        }
        let mut live = std::mem::take(&mut self.live);
        live.clear();
        live.extend((0..len).filter(|&s| !self.holes.contains(s)));
        let r = self.draw_dense(live.len(), k, rng, out);
        for i in out.iter_mut() {
            *i = live[*i];
        }
        self.live = live;
        r
    }

    /// Draws `k` of `0..n` (`n <= capacity`, every one drawable).
    fn draw_dense(
        &mut self,
        n: usize,
        k: usize,
        rng: &mut EmberRng,
        out: &mut Vec<usize>,
    ) -> Result<()> {
        if n == 0 {
            return Err(Error::NotEnough {
                what: "transitions".into(),
                requested: k,
                available: 0,
            });
        }
        if self.replacement {
            out.extend((0..k).map(|_| rng.below(n as u64) as usize));
            return Ok(());
        }
        if k > n {
            return Err(Error::NotEnough {
                what: "distinct transitions".into(),
                requested: k,
                available: n,
            });
        }
        // Floyd: for j in n-k..n, pick t in 0..=j; take t unless taken, else j.
        for j in n - k..n {
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

    fn check_slot(&self, slot: usize) -> Result<()> {
        crate::sampler::check_slot(slot, self.capacity)
    }
}

impl Sampler for Uniform {
    const KIND: &'static str = "uniform";

    fn capacity(&self) -> usize {
        self.capacity
    }

    fn on_push(&mut self, slot: usize, _score: f64) -> Result<()> {
        if self.hole_count > 0 {
            self.check_slot(slot)?;
            if self.holes.remove(slot) {
                self.hole_count -= 1;
            }
        }
        Ok(())
    }

    fn remove(&mut self, slot: usize) -> Result<()> {
        self.check_slot(slot)?;
        if self.holes.words().is_empty() {
            self.holes = SeenSet::new(self.capacity);
        }
        if self.holes.insert(slot) {
            self.hole_count += 1;
        }
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
        let holes = if self.hole_count > 0 { HOLES } else { 0 };
        enc.u8(if self.replacement { REPLACEMENT } else { 0 } | holes);
        if holes != 0 {
            for &w in self.holes.words() {
                enc.u64(w);
            }
        }
    }

    fn decode(dec: &mut Decoder<'_>, capacity: usize) -> Result<Self> {
        let flags = dec.u8("uniform flags")?;
        if flags & !(REPLACEMENT | HOLES) != 0 {
            return Err(dec.corrupt(format!("uniform flags = {flags}")));
        }
        let mut s = Uniform::new(capacity, flags & REPLACEMENT != 0);
        if flags & HOLES != 0 {
            s.holes = SeenSet::new(capacity);
            for w in s.holes.words_mut() {
                *w = dec.u64("removed slots")?;
            }
            if !capacity.is_multiple_of(64) {
                let last = s.holes.words()[capacity / 64];
                if last >> (capacity % 64) != 0 {
                    return Err(dec.corrupt("a removed slot beyond the capacity"));
                }
            }
            s.hole_count = s
                .holes
                .words()
                .iter()
                .map(|w| w.count_ones() as usize)
                .sum();
            if s.hole_count == 0 {
                return Err(dec.corrupt("a removed-slot bitmap with no slot in it"));
            }
        }
        Ok(s)
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

    #[test]
    fn removed_slots_are_never_drawn_until_pushed_again() {
        let mut rng = EmberRng::seed_from(3);
        let mut out = Vec::new();
        for replacement in [false, true] {
            let mut u = Uniform::new(130, replacement);
            // Few holes (rejection), then most slots gone (the list of drawable ones).
            for removed in [
                vec![3, 64, 65, 99],
                (0..120).filter(|s| s % 7 != 0).collect(),
            ] {
                for &s in &removed {
                    u.remove(s).unwrap();
                }
                let drawable = 120 - removed.len();
                u.draw(120, drawable.min(20), &mut rng, &mut out).unwrap();
                assert!(
                    out.iter().all(|s| !removed.contains(s) && *s < 120),
                    "{out:?}"
                );
                if !replacement {
                    u.draw(120, drawable, &mut rng, &mut out).unwrap();
                    let mut all = out.clone();
                    all.sort();
                    all.dedup();
                    assert_eq!(all.len(), drawable);
                    assert!(u.draw(120, drawable + 1, &mut rng, &mut out).is_err());
                    assert!(u.seen.is_empty());
                }
                for &s in &removed {
                    u.on_push(s, 0.0).unwrap();
                }
                assert_eq!(u.removed(), 0);
            }
            assert!(u.remove(130).is_err());
        }
    }

    #[test]
    fn removed_slots_survive_encoding() {
        let mut u = Uniform::new(70, false);
        for s in [0, 63, 64, 69] {
            u.remove(s).unwrap();
        }
        let mut enc = Encoder::new();
        u.encode(&mut enc);
        let bytes = enc.into_bytes();
        let path = std::path::Path::new("uniform");
        let back = Uniform::decode(&mut Decoder::new(&bytes, path, "test"), 70).unwrap();
        assert_eq!(back.removed(), 4);
        assert!([0, 63, 64, 69].iter().all(|&s| back.holes.contains(s)));
        // Without removals the encoding is the one of files written before they existed.
        let mut enc = Encoder::new();
        Uniform::new(70, true).encode(&mut enc);
        assert_eq!(enc.into_bytes(), [1]);
    }
}
