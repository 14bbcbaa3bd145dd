//! Prioritized experience replay (Schaul et al. 2016, proportional variant).
//!
//! Slot `i` is drawn with probability `P(i) = p_i^α / Σ_j p_j^α`, with replacement, by
//! stratified sampling (one draw in each of `k` equal slices of the total mass). The
//! importance weights `(N · P(i))^-β` are normalised by their largest possible value,
//! which the min tree provides exactly: `w_i = (p_i^α / min_j p_j^α)^-β`. New transitions
//! get the largest priority seen so far.

use crate::codec::{Decoder, Encoder};
use crate::min_tree::MinTree;
use crate::sampler::Sampler;
use crate::slot_values;
use crate::sum_tree::{FAILED, SumTree};
use emberlab_core::{EmberRng, Error, Result};

/// Proportional prioritized sampler; see the module docs.
#[derive(Clone, Debug)]
pub struct Prioritized {
    sum: SumTree,
    min: MinTree,
    alpha: f64,
    beta: f64,
    /// β at the start of training, annealed to 1 by [`Sampler::anneal`].
    beta_start: f64,
    eps: f64,
    max_priority: f64,
    us: Vec<f64>,
    scratch: Vec<usize>,
}

impl Prioritized {
    /// A sampler for `capacity` slots with exponents `alpha` (how much priorities matter,
    /// `>= 0`) and `beta` (importance-weight correction, in `[0, 1]`). Priorities given to
    /// [`Prioritized::update_priorities`] get `eps = 1e-6` added before the exponent.
    pub fn new(capacity: usize, alpha: f64, beta: f64) -> Result<Self> {
        if !(alpha >= 0.0 && alpha.is_finite()) {
            return Err(Error::invalid("alpha", alpha, "a finite number >= 0"));
        }
        let mut s = Prioritized {
            sum: SumTree::new(capacity),
            min: MinTree::new(capacity),
            alpha,
            beta: 0.0,
            beta_start: 0.0,
            eps: 1e-6,
            max_priority: 1.0,
            us: Vec::new(),
            scratch: Vec::new(),
        };
        s.set_beta(beta)?;
        Ok(s)
    }

    /// Sets β, and the β from which [`Sampler::anneal`] moves it linearly to 1.
    pub fn set_beta(&mut self, beta: f64) -> Result<()> {
        if !(0.0..=1.0).contains(&beta) {
            return Err(Error::invalid("beta", beta, "a number in [0, 1]"));
        }
        self.beta = beta;
        self.beta_start = beta;
        Ok(())
    }

    /// Sets the constant added to every priority (`> 0` keeps every slot drawable).
    pub fn set_eps(&mut self, eps: f64) -> Result<()> {
        if !(eps >= 0.0 && eps.is_finite()) {
            return Err(Error::invalid("eps", eps, "a finite number >= 0"));
        }
        self.eps = eps;
        Ok(())
    }

    /// α.
    pub fn alpha(&self) -> f64 {
        self.alpha
    }

    /// β.
    pub fn beta(&self) -> f64 {
        self.beta
    }

    /// The largest priority seen so far (given to new transitions).
    pub fn max_priority(&self) -> f64 {
        self.max_priority
    }

    /// The stored `p_i^α` of `slot`, if occupied.
    pub fn stored(&self, slot: usize) -> Option<f64> {
        (slot < self.sum.capacity())
            .then(|| self.sum.get(slot))
            .flatten()
    }

    fn check_slot(&self, slot: usize) -> Result<()> {
        crate::sampler::check_slot(slot, self.sum.capacity())
    }

    /// Sets the priorities (e.g. `|TD error|`) of the given slots, which must hold
    /// transitions. Every priority must be finite and `>= 0`; on error nothing changes.
    pub fn update_priorities(&mut self, slots: &[usize], priorities: &[f32]) -> Result<()> {
        Error::check_len("priorities", slots.len(), priorities.len())?;
        for (j, (&s, &p)) in slots.iter().zip(priorities).enumerate() {
            if self.stored(s).is_none() {
                return Err(Error::invalid(
                    format!("slots[{j}]"),
                    s,
                    "a slot holding a transition",
                ));
            }
            if !(p >= 0.0 && p.is_finite()) {
                return Err(Error::invalid(
                    format!("priorities[{j}]"),
                    p,
                    "a finite number >= 0",
                ));
            }
        }
        let (alpha, eps) = (self.alpha, self.eps);
        let mut max = self.max_priority;
        let values = slots.iter().zip(priorities).map(|(&s, &p)| {
            let p = p as f64 + eps;
            max = max.max(p);
            (s, Some(p.powf(alpha)))
        });
        self.sum.set_many(values);
        self.max_priority = max;
        let sum = &self.sum;
        let stored = slots
            .iter()
            .map(|&s| (s, sum.get(s).expect("checked above")));
        self.min.set_many(stored, &mut self.scratch);
        Ok(())
    }
}

impl Sampler for Prioritized {
    const KIND: &'static str = "prioritized";

    /// Empties `slot`'s leaf: it weighs nothing and no longer counts towards the minimum
    /// that normalises the importance weights.
    fn remove(&mut self, slot: usize) -> Result<()> {
        self.check_slot(slot)?;
        self.sum.clear(slot);
        self.min.set(slot, f64::INFINITY);
        Ok(())
    }

    fn uses_priorities(&self) -> bool {
        true
    }

    fn update_priorities(&mut self, slots: &[usize], priorities: &[f32]) -> Result<()> {
        Prioritized::update_priorities(self, slots, priorities)
    }

    /// `β = β_start + (1 − β_start) · progress`.
    fn anneal(&mut self, progress: f64) -> Result<()> {
        if !(0.0..=1.0).contains(&progress) {
            return Err(Error::invalid("progress", progress, "a number in [0, 1]"));
        }
        self.beta = self.beta_start + (1.0 - self.beta_start) * progress;
        Ok(())
    }

    fn capacity(&self) -> usize {
        self.sum.capacity()
    }

    fn on_push(&mut self, slot: usize, _score: f64) -> Result<()> {
        self.check_slot(slot)?;
        let p = self.max_priority.powf(self.alpha);
        self.sum.set(slot, p);
        self.min.set(slot, p);
        Ok(())
    }

    fn sample(
        &mut self,
        _len: usize,
        k: usize,
        rng: &mut EmberRng,
        indices: &mut Vec<usize>,
        weights: &mut Vec<f32>,
    ) -> Result<()> {
        indices.clear();
        weights.clear();
        if k == 0 {
            return Ok(());
        }
        let total = self.sum.total(0.0);
        if self.sum.count() == 0 || total.partial_cmp(&0.0) != Some(std::cmp::Ordering::Greater) {
            return Err(Error::ZeroWeight {
                context: format!(
                    "prioritized draw of {k} from {} transitions",
                    self.sum.count()
                ),
            });
        }
        let seg = total / k as f64;
        self.us.clear();
        self.us
            .extend((0..k).map(|j| ((j as f64 + rng.next_f64()) * seg).min(total)));
        indices.resize(k, 0);
        self.sum.find_many(0.0, &mut self.us, indices);
        // Descents that met a zero-mass block through rounding are redrawn unstratified.
        for i in 0..k {
            let mut tries = 0;
            while indices[i] == FAILED {
                tries += 1;
                if tries > 64 {
                    indices.clear();
                    return Err(Error::ZeroWeight {
                        context: "prioritized draw: remaining mass is rounding residue".into(),
                    });
                }
                indices[i] = self.sum.find(rng.next_f64() * total, 0.0);
                if indices[i] != FAILED {
                    self.us[i] = self.sum.get(indices[i]).expect("drawn slot is occupied");
                }
            }
        }
        // `us` now holds each drawn slot's stored p^α (no second trip to the leaves).
        let min = self.min.min();
        let neg_beta = -self.beta;
        weights.extend(self.us.iter().map(|&p| {
            if neg_beta == 0.0 {
                1.0
            } else {
                (p / min).powf(neg_beta) as f32
            }
        }));
        Ok(())
    }

    fn encode(&self, enc: &mut Encoder) {
        enc.f64(self.alpha);
        enc.f64(self.beta);
        enc.f64(self.beta_start);
        enc.f64(self.eps);
        enc.f64(self.max_priority);
        slot_values::encode(&self.sum, enc);
    }

    fn decode(dec: &mut Decoder<'_>, capacity: usize) -> Result<Self> {
        let alpha = dec.f64("alpha")?;
        let beta = dec.f64("beta")?;
        let beta_start = dec.f64("beta start")?;
        let eps = dec.f64("eps")?;
        let max_priority = dec.f64("max priority")?;
        let mut s = Prioritized::new(capacity, alpha, beta_start)
            .map_err(|e| dec.corrupt(e.to_string()))?;
        if !(beta_start..=1.0).contains(&beta) {
            return Err(dec.corrupt(format!("beta {beta} outside [beta start {beta_start}, 1]")));
        }
        s.beta = beta;
        s.set_eps(eps).map_err(|e| dec.corrupt(e.to_string()))?;
        if !(max_priority > 0.0 && max_priority.is_finite()) {
            return Err(dec.corrupt(format!("max priority = {max_priority}")));
        }
        s.max_priority = max_priority;
        let valid = |p: f64| p >= 0.0 && p.is_finite();
        slot_values::decode(dec, capacity, "priorities", valid, &mut s.sum, &mut s.min)?;
        Ok(s)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn priorities_and_weights() {
        let mut p = Prioritized::new(4, 1.0, 1.0).unwrap();
        p.set_eps(0.0).unwrap();
        for i in 0..4 {
            p.on_push(i, 0.0).unwrap();
        }
        p.update_priorities(&[0, 1, 2, 3], &[1.0, 2.0, 3.0, 4.0])
            .unwrap();
        assert_eq!(p.max_priority(), 4.0);
        let mut rng = EmberRng::seed_from(0);
        let (mut idx, mut w) = (Vec::new(), Vec::new());
        p.sample(4, 1000, &mut rng, &mut idx, &mut w).unwrap();
        for (&i, &wi) in idx.iter().zip(&w) {
            // w = (p_i / p_min)^-1 = 1 / p_i here.
            assert!((wi - 1.0 / (i as f32 + 1.0)).abs() < 1e-6);
        }
        // Stratified: exactly 100, 200, 300, 400 up to one per slice boundary.
        let mut counts = [0usize; 4];
        for &i in &idx {
            counts[i] += 1;
        }
        for (i, &c) in counts.iter().enumerate() {
            assert!((c as i64 - 100 * (i as i64 + 1)).abs() <= 1, "{counts:?}");
        }
    }

    #[test]
    fn bad_updates_rejected_atomically() {
        let mut p = Prioritized::new(4, 0.6, 0.4).unwrap();
        p.on_push(0, 0.0).unwrap();
        p.on_push(1, 0.0).unwrap();
        let before = p.sum.clone();
        assert!(p.update_priorities(&[0, 1], &[1.0, f32::NAN]).is_err());
        assert!(p.update_priorities(&[0, 2], &[1.0, 1.0]).is_err());
        assert!(p.update_priorities(&[0], &[1.0, 1.0]).is_err());
        assert!(p.update_priorities(&[0], &[-1.0]).is_err());
        assert_eq!(p.sum, before);
        assert!(Prioritized::new(4, -1.0, 0.4).is_err());
        assert!(Prioritized::new(4, 0.6, 1.5).is_err());
    }

    #[test]
    fn beta_anneals_linearly_to_one() {
        let mut p = Prioritized::new(4, 0.6, 0.4).unwrap();
        assert!(p.uses_priorities());
        p.anneal(0.5).unwrap();
        assert!((p.beta() - 0.7).abs() < 1e-12);
        p.anneal(1.0).unwrap();
        assert_eq!(p.beta(), 1.0);
        assert!(p.anneal(1.5).is_err());
        assert_eq!(p.beta(), 1.0);
    }
}
