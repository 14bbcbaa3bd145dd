//! [`AnySampler`]: one of the library's samplers chosen at run time (from a config), so
//! that one trainer type serves every kind.

use crate::codec::{Decoder, Encoder};
use crate::sampler::Sampler;
use crate::{Prioritized, ReturnWeighted, Uniform};
use emberlab_core::{EmberRng, Error, Result};

/// A uniform, prioritized or return-weighted sampler behind one type.
#[derive(Clone, Debug)]
pub enum AnySampler {
    /// [`Uniform`].
    Uniform(Uniform),
    /// [`Prioritized`].
    Prioritized(Prioritized),
    /// [`ReturnWeighted`].
    ReturnWeighted(ReturnWeighted),
}

impl From<Uniform> for AnySampler {
    fn from(s: Uniform) -> Self {
        AnySampler::Uniform(s)
    }
}

impl From<Prioritized> for AnySampler {
    fn from(s: Prioritized) -> Self {
        AnySampler::Prioritized(s)
    }
}

impl From<ReturnWeighted> for AnySampler {
    fn from(s: ReturnWeighted) -> Self {
        AnySampler::ReturnWeighted(s)
    }
}

/// Calls `$body` with `$s` bound to the inner sampler.
macro_rules! each {
    ($self:expr, $s:ident => $body:expr) => {
        match $self {
            AnySampler::Uniform($s) => $body,
            AnySampler::Prioritized($s) => $body,
            AnySampler::ReturnWeighted($s) => $body,
        }
    };
}

impl AnySampler {
    /// The sampler a config names for `capacity` slots: `uniform` (with replacement),
    /// `prioritized` (exponents `alpha` and `beta`, `eps` added to every priority) or
    /// `return_weighted`; `alpha`, `beta` and `eps` matter to `prioritized` only.
    ///
    /// # Errors
    /// Another name ([`Error::InvalidArgument`] named `sampler`), or `alpha`, `beta` or
    /// `eps` out of range.
    pub fn named(kind: &str, capacity: usize, alpha: f64, beta: f64, eps: f64) -> Result<Self> {
        Ok(match kind {
            Uniform::KIND => Uniform::new(capacity, true).into(),
            Prioritized::KIND => {
                let mut p = Prioritized::new(capacity, alpha, beta)?;
                p.set_eps(eps)?;
                p.into()
            }
            ReturnWeighted::KIND => ReturnWeighted::new(capacity).into(),
            other => {
                return Err(Error::invalid(
                    "sampler",
                    other,
                    "uniform, prioritized or return_weighted",
                ));
            }
        })
    }

    /// The inner sampler's [`Sampler::KIND`].
    pub fn kind(&self) -> &'static str {
        match self {
            AnySampler::Uniform(_) => Uniform::KIND,
            AnySampler::Prioritized(_) => Prioritized::KIND,
            AnySampler::ReturnWeighted(_) => ReturnWeighted::KIND,
        }
    }
}

impl Sampler for AnySampler {
    const KIND: &'static str = "any";

    fn capacity(&self) -> usize {
        each!(self, s => s.capacity())
    }

    fn on_push(&mut self, slot: usize, score: f64) -> Result<()> {
        each!(self, s => s.on_push(slot, score))
    }

    fn remove(&mut self, slot: usize) -> Result<()> {
        each!(self, s => Sampler::remove(s, slot))
    }

    fn sample(
        &mut self,
        len: usize,
        k: usize,
        rng: &mut EmberRng,
        indices: &mut Vec<usize>,
        weights: &mut Vec<f32>,
    ) -> Result<()> {
        each!(self, s => s.sample(len, k, rng, indices, weights))
    }

    fn uses_priorities(&self) -> bool {
        each!(self, s => s.uses_priorities())
    }

    fn update_priorities(&mut self, slots: &[usize], priorities: &[f32]) -> Result<()> {
        each!(self, s => Sampler::update_priorities(s, slots, priorities))
    }

    fn uses_scores(&self) -> bool {
        each!(self, s => s.uses_scores())
    }

    fn set_score(&mut self, slot: usize, score: f64) -> Result<()> {
        each!(self, s => Sampler::set_score(s, slot, score))
    }

    fn anneal(&mut self, progress: f64) -> Result<()> {
        each!(self, s => s.anneal(progress))
    }

    fn encode(&self, enc: &mut Encoder) {
        enc.str(self.kind());
        each!(self, s => s.encode(enc))
    }

    fn decode(dec: &mut Decoder<'_>, capacity: usize) -> Result<Self> {
        let kind = dec.str("inner sampler kind")?;
        Ok(match kind.as_str() {
            Uniform::KIND => Uniform::decode(dec, capacity)?.into(),
            Prioritized::KIND => Prioritized::decode(dec, capacity)?.into(),
            ReturnWeighted::KIND => ReturnWeighted::decode(dec, capacity)?.into(),
            other => return Err(dec.corrupt(format!("unknown inner sampler kind `{other}`"))),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{ReplayBuffer, RingStorage};
    use emberlab_core::{Batch, Transition};

    #[test]
    fn dispatches_and_round_trips_through_a_file() {
        let dir = std::env::temp_dir().join(format!("ember-any-{}", std::process::id()));
        std::fs::create_dir_all(&dir).unwrap();
        for sampler in [
            AnySampler::from(Uniform::new(16, false)),
            Prioritized::new(16, 0.6, 0.4).unwrap().into(),
            ReturnWeighted::new(16).into(),
        ] {
            let kind = sampler.kind();
            let mut buf =
                ReplayBuffer::new(RingStorage::new(16, 1, 1).unwrap(), sampler, 3).unwrap();
            for i in 0..10 {
                let o = [i as f32];
                let t = Transition {
                    obs: &o,
                    action: &[0.0],
                    reward: i as f32,
                    next_obs: &o,
                    terminated: false,
                    truncated: false,
                };
                buf.push_scored(&t, i as f64, &[]).unwrap();
            }
            assert_eq!(buf.sampler().uses_priorities(), kind == "prioritized");
            assert_eq!(buf.sampler().uses_scores(), kind == "return_weighted");
            let path = dir.join(format!("{kind}.bin"));
            buf.save(&path).unwrap();
            let mut back = ReplayBuffer::<AnySampler>::load(&path).unwrap();
            assert_eq!(back.sampler().kind(), kind);
            let (mut a, mut b) = (Batch::default(), Batch::default());
            buf.sample(4, &mut a).unwrap();
            back.sample(4, &mut b).unwrap();
            assert_eq!(a, b, "{kind}");
        }
        std::fs::remove_dir_all(&dir).unwrap();
    }
}
