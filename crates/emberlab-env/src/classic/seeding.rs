//! The seeded generator each classic-control environment draws its reset states from.

use crate::NumpyRng;
use emberlab_core::Result;
use emberlab_core::state::{StateReader, StateWriter};

/// Seed of an environment's generator until `reset_into` is given a seed (Gymnasium seeds
/// from OS entropy instead; Ember keeps every run reproducible).
pub const DEFAULT_SEED: u64 = 0;

/// An environment's own generator: Gymnasium's `np_random` (NumPy's PCG64 seeded through
/// SeedSequence), reseeded when `reset_into` is given a seed, left running otherwise.
#[derive(Clone, Debug)]
pub(crate) struct EnvRng {
    rng: NumpyRng,
}

impl Default for EnvRng {
    fn default() -> Self {
        EnvRng {
            rng: NumpyRng::seed_from(DEFAULT_SEED),
        }
    }
}

impl EnvRng {
    /// Reseeds from `seed` if one is given.
    pub(crate) fn reseed(&mut self, seed: Option<u64>) {
        if let Some(seed) = seed {
            self.rng = NumpyRng::seed_from(seed);
        }
    }

    /// A uniform draw from `[low, high)`, as NumPy's `uniform`: `low + (high - low) * u`.
    pub(crate) fn uniform(&mut self, low: f64, high: f64) -> f64 {
        self.rng.uniform(low, high)
    }
}

/// Appends a classic environment's snapshot: whether it has a state, the state, its
/// generator.
pub(crate) fn save_classic(out: &mut StateWriter, state: Option<&[f64]>, rng: &EnvRng) {
    out.bool(state.is_some());
    out.f64s(state.unwrap_or_default());
    rng.rng.save(out);
}

/// Reads what [`save_classic`] wrote for an `N`-variable state.
pub(crate) fn load_classic<const N: usize>(
    src: &mut StateReader<'_>,
) -> Result<(Option<[f64; N]>, EnvRng)> {
    let some = src.bool()?;
    let values = src.f64s(Some(if some { N } else { 0 }))?;
    let rng = EnvRng {
        rng: NumpyRng::load(src)?,
    };
    Ok((some.then(|| std::array::from_fn(|i| values[i])), rng))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn reseeding_repeats_and_none_continues() {
        let mut a = EnvRng::default();
        a.reseed(Some(5));
        let x = a.uniform(-1.0, 1.0);
        let y = a.uniform(-1.0, 1.0);
        assert_ne!(x, y);
        a.reseed(Some(5));
        assert_eq!(a.uniform(-1.0, 1.0), x);
        a.reseed(None);
        assert_eq!(a.uniform(-1.0, 1.0), y);
        assert!((-1.0..1.0).contains(&x));
    }
}
