//! Return-weighted sampling without replacement (DESIGN.md, problem 2).
//!
//! Each occupied slot `i` has a score `r_i` (its return). Its weight is
//! `w_i = r_i + |min(min_j r_j, 0)|`: scores shifted so that the lowest is zero when any is
//! negative. A batch is `k` distinct slots drawn one after another, each proportionally to
//! the weights of the slots not yet drawn (NumPy's `choice(replace=False, p=w/sum(w))`).
//!
//! **Every weight zero.** When all scores are equal (a run's first episode has just ended,
//! or one episode is all there is), every weight is zero and NumPy refuses; here the draw
//! is uniform over the slots — the limit of weights `w_i + ε` for `ε → 0` — so a training
//! loop is never stopped by it. When only some weights are zero, they are never drawn: a
//! draw of more slots than weigh more than zero is [`Error::NotEnough`] (it names how many
//! do), as before.
//!
//! ## How it stays exact and fast
//! - The sum tree stores raw scores *and* occupancy counts, so the shift `c` enters as
//!   `sum + count · c` at sampling time: a new minimum costs nothing to apply. The minimum
//!   itself comes from a min tree, exact even when the ring evicts the current minimum.
//! - Successive draws without replacement equal i.i.d. draws with replacement from which
//!   repeats are discarded (the first new item after any prefix is distributed as the
//!   weights of the items not yet drawn). So a batch is drawn in rounds: `need + margin`
//!   independent descents run together (their cache misses overlap); first occurrences
//!   are accepted in draw order until `k` are found. If a round falls short, the accepted
//!   slots are removed from the tree and the next round draws from the rest, which keeps
//!   it fast when a few slots hold most of the weight. The tree is restored afterwards,
//!   bit-identical (parents are recomputed, not patched).

use crate::codec::{Decoder, Encoder};
use crate::min_tree::MinTree;
use crate::sampler::Sampler;
use crate::seen_set::SeenSet;
use crate::slot_values;
use crate::sum_tree::{FAILED, SumTree};
use emberlab_core::{EmberRng, Error, Result};

/// Return-weighted sampler without replacement; see the module docs.
#[derive(Clone, Debug)]
pub struct ReturnWeighted {
    sum: SumTree,
    min: MinTree,
    seen: SeenSet,
    us: Vec<f64>,
    leaves: Vec<usize>,
    removed: Vec<(usize, f64)>,
}

impl ReturnWeighted {
    /// A sampler for `capacity` slots, all empty.
    pub fn new(capacity: usize) -> Self {
        ReturnWeighted {
            sum: SumTree::new(capacity),
            min: MinTree::new(capacity),
            seen: SeenSet::new(capacity),
            us: Vec::new(),
            leaves: Vec::new(),
            removed: Vec::new(),
        }
    }

    /// Sets the score (return) of `slot`, which becomes part of the sampled population.
    pub fn set_score(&mut self, slot: usize, score: f64) -> Result<()> {
        self.check_slot(slot)?;
        Error::check_finite(|| format!("score of slot {slot}"), score)?;
        self.sum.set(slot, score);
        self.min.set(slot, score);
        Ok(())
    }

    /// Removes `slot` from the sampled population.
    pub fn remove(&mut self, slot: usize) -> Result<()> {
        self.check_slot(slot)?;
        self.sum.clear(slot);
        self.min.set(slot, f64::INFINITY);
        Ok(())
    }

    fn check_slot(&self, slot: usize) -> Result<()> {
        crate::sampler::check_slot(slot, self.sum.capacity())
    }

    /// The score of `slot`, if it holds one.
    pub fn score(&self, slot: usize) -> Option<f64> {
        (slot < self.sum.capacity())
            .then(|| self.sum.get(slot))
            .flatten()
    }

    /// Number of slots with a score.
    pub fn len(&self) -> usize {
        self.sum.count() as usize
    }

    /// Whether no slot has a score.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The shift `c = |min(min_j r_j, 0)|` currently applied to every score.
    pub fn shift(&self) -> f64 {
        let m = self.min.min();
        if m < 0.0 { -m } else { 0.0 }
    }

    /// The weight `r_i + c` of `slot`, if it holds a score.
    pub fn weight(&self, slot: usize) -> Option<f64> {
        self.score(slot).map(|r| r + self.shift())
    }

    /// Sum of all weights.
    pub fn total_weight(&self) -> f64 {
        self.sum.total(self.shift())
    }

    /// Whether the slots in the tree weigh more than the rounding of their total under
    /// `shift` (the raw scores' sum and the shift's share are each summed in floating
    /// point: weights that are all zero may add up to a speck either side of it).
    fn drawable(&self, total: f64, shift: f64) -> bool {
        let scale = self.sum.sum().abs() + self.sum.count() as f64 * shift.abs();
        total > 0.0 && total > scale * 1e-12
    }

    /// Draws `k` distinct slots into `out`, in draw order; uniformly when every weight is
    /// zero (see the module docs).
    ///
    /// # Errors
    /// `k` exceeds the number of slots, or the number of slots of non-zero weight when
    /// some weigh more than zero (`out` is left empty).
    pub fn draw(&mut self, k: usize, rng: &mut EmberRng, out: &mut Vec<usize>) -> Result<()> {
        out.clear();
        let n = self.len();
        if k > n {
            return Err(Error::NotEnough {
                what: "distinct transitions".into(),
                requested: k,
                available: n,
            });
        }
        if k == 0 {
            return Ok(());
        }
        let mut shift = self.shift();
        let mut total = self.sum.total(shift);
        if !self.drawable(total, shift) {
            // Every weight is zero, so every slot holds the lowest score `-shift` (or 0): one
            // more unit of shift gives each of them weight exactly 1, a uniform draw.
            shift += 1.0;
            total = self.sum.total(shift);
        }
        self.removed.clear();
        let result = loop {
            let need = k - out.len();
            let m = need + need / 16 + 4;
            self.us.clear();
            self.us.extend((0..m).map(|_| rng.next_f64() * total));
            self.leaves.resize(m, 0);
            self.sum.find_many(shift, &mut self.us, &mut self.leaves);
            let mut progressed = false;
            for &leaf in &self.leaves {
                if leaf != FAILED && self.seen.insert(leaf) {
                    out.push(leaf);
                    progressed = true;
                    if out.len() == k {
                        break;
                    }
                }
            }
            if out.len() == k {
                break Ok(());
            }
            // Exclude everything accepted so far, then draw the rest from what remains.
            let fresh = &out[self.removed.len()..];
            self.removed.extend(
                fresh
                    .iter()
                    .map(|&i| (i, self.sum.get(i).expect("accepted slot is occupied"))),
            );
            self.sum.set_many(fresh.iter().map(|&i| (i, None)));
            total = self.sum.total(shift);
            if !progressed || !self.drawable(total, shift) {
                break Err(Error::NotEnough {
                    what: "distinct transitions with non-zero weight".into(),
                    requested: k,
                    available: out.len(),
                });
            }
        };
        if !self.removed.is_empty() {
            self.sum
                .set_many(self.removed.iter().map(|&(i, v)| (i, Some(v))));
        }
        self.seen.clear_items(out);
        if result.is_err() {
            out.clear();
        }
        result
    }
}

impl Sampler for ReturnWeighted {
    const KIND: &'static str = "return_weighted";

    fn capacity(&self) -> usize {
        self.sum.capacity()
    }

    fn on_push(&mut self, slot: usize, score: f64) -> Result<()> {
        self.set_score(slot, score)
    }

    fn uses_scores(&self) -> bool {
        true
    }

    fn remove(&mut self, slot: usize) -> Result<()> {
        ReturnWeighted::remove(self, slot)
    }

    fn set_score(&mut self, slot: usize, score: f64) -> Result<()> {
        ReturnWeighted::set_score(self, slot, score)
    }

    fn sample(
        &mut self,
        _len: usize,
        k: usize,
        rng: &mut EmberRng,
        indices: &mut Vec<usize>,
        weights: &mut Vec<f32>,
    ) -> Result<()> {
        self.draw(k, rng, indices)?;
        weights.clear();
        weights.resize(indices.len(), 1.0);
        Ok(())
    }

    fn encode(&self, enc: &mut Encoder) {
        slot_values::encode(&self.sum, enc);
    }

    fn decode(dec: &mut Decoder<'_>, capacity: usize) -> Result<Self> {
        let mut s = ReturnWeighted::new(capacity);
        let finite = |r: f64| r.is_finite();
        slot_values::decode(
            dec,
            capacity,
            "return-weighted scores",
            finite,
            &mut s.sum,
            &mut s.min,
        )?;
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shift_follows_the_exact_minimum() {
        let mut s = ReturnWeighted::new(4);
        s.set_score(0, -5.0).unwrap();
        s.set_score(1, 2.0).unwrap();
        assert_eq!(s.shift(), 5.0);
        assert_eq!(s.weight(1), Some(7.0));
        assert_eq!(s.total_weight(), 7.0);
        s.set_score(0, 1.0).unwrap(); // the minimum is evicted
        assert_eq!(s.shift(), 0.0);
        assert_eq!(s.total_weight(), 3.0);
        assert!(s.set_score(0, f64::NAN).is_err());
        assert!(s.set_score(4, 1.0).is_err());
    }

    #[test]
    fn all_weights_zero_draw_uniformly_and_too_many_is_an_error() {
        let mut s = ReturnWeighted::new(8);
        let mut rng = EmberRng::seed_from(1);
        let mut out = Vec::new();
        assert!(s.draw(1, &mut rng, &mut out).is_err(), "nothing stored");
        // All scores equal (every weight zero): a uniform draw, not an error.
        for i in 0..4 {
            s.set_score(i, -3.0).unwrap();
        }
        s.draw(4, &mut rng, &mut out).unwrap();
        let mut sorted = out.clone();
        sorted.sort();
        assert_eq!(sorted, vec![0, 1, 2, 3]);
        assert!(matches!(
            s.draw(5, &mut rng, &mut out).unwrap_err(),
            Error::NotEnough { .. }
        ));
        // Scores -1, 3, 0, 0: three non-zero weights (the minimum -1 weighs 0), so a
        // fourth draw is impossible.
        for (i, r) in [-1.0, 3.0, 0.0, 0.0].into_iter().enumerate() {
            s.set_score(i, r).unwrap();
        }
        let before = s.sum.clone();
        let e = s.draw(4, &mut rng, &mut out).unwrap_err();
        match e {
            Error::NotEnough { available, .. } => assert_eq!(available, 3),
            other => panic!("{other}"),
        }
        assert!(out.is_empty());
        assert_eq!(s.sum, before, "tree restored after a failed draw");
        assert!(s.seen.is_empty());
        s.draw(3, &mut rng, &mut out).unwrap();
        let mut sorted = out.clone();
        sorted.sort();
        assert_eq!(sorted, vec![1, 2, 3]);
    }

    #[test]
    fn heavy_items_do_not_stall_the_draw() {
        let n = 10_000;
        let mut s = ReturnWeighted::new(n);
        for i in 0..n {
            // Geometric weights: each slot holds half the remaining mass.
            s.set_score(i, 0.5f64.powi(i as i32)).unwrap();
        }
        let before = s.sum.clone();
        let mut rng = EmberRng::seed_from(2);
        let mut out = Vec::new();
        s.draw(256, &mut rng, &mut out).unwrap();
        let mut sorted = out.clone();
        sorted.sort();
        sorted.dedup();
        assert_eq!(sorted.len(), 256);
        assert_eq!(s.sum, before);
    }
}
