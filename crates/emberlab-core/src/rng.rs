//! Seedable, serialisable random numbers.
//!
//! [`EmberRng`] is xoshiro256++ (Blackman & Vigna), seeded through SplitMix64. It is small,
//! fast, and its whole state can be saved and restored, which Ember needs to resume a run
//! (a replay buffer's sampler saves it with the buffer). It implements `rand_core`'s traits,
//! so `rand`/`rand_distr` distributions work with it.

use std::convert::Infallible;

/// xoshiro256++ generator: every random thing in Ember takes one of these, seeded.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct EmberRng {
    s: [u64; 4],
}

/// One step of SplitMix64, used to expand a `u64` seed into a full state.
fn splitmix64(x: &mut u64) -> u64 {
    *x = x.wrapping_add(0x9E37_79B9_7F4A_7C15);
    let mut z = *x;
    z = (z ^ (z >> 30)).wrapping_mul(0xBF58_476D_1CE4_E5B9);
    z = (z ^ (z >> 27)).wrapping_mul(0x94D0_49BB_1331_11EB);
    z ^ (z >> 31)
}

impl EmberRng {
    /// A generator whose whole stream is fixed by `seed`.
    pub fn seed_from(seed: u64) -> Self {
        let mut x = seed;
        let s = [
            splitmix64(&mut x),
            splitmix64(&mut x),
            splitmix64(&mut x),
            splitmix64(&mut x),
        ];
        EmberRng { s }
    }

    /// Restores a generator from [`EmberRng::state`]. An all-zero state (the one state
    /// xoshiro cannot leave) is replaced by the seed-0 state.
    pub fn from_state(s: [u64; 4]) -> Self {
        if s == [0; 4] {
            Self::seed_from(0)
        } else {
            EmberRng { s }
        }
    }

    /// The full internal state, for saving.
    pub fn state(&self) -> [u64; 4] {
        self.s
    }

    /// A generator for a sub-task (e.g. one environment of many), independent of `self`'s
    /// future stream: seeded from `self`'s next output mixed with `stream`.
    pub fn fork(&mut self, stream: u64) -> Self {
        let base = self.next_u64();
        Self::seed_from(base ^ stream.wrapping_mul(0xD605_BBB5_8C8A_BBAB))
    }

    /// The next 64 random bits.
    #[inline]
    pub fn next_u64(&mut self) -> u64 {
        let s = &mut self.s;
        let result = s[0].wrapping_add(s[3]).rotate_left(23).wrapping_add(s[0]);
        let t = s[1] << 17;
        s[2] ^= s[0];
        s[3] ^= s[1];
        s[1] ^= s[2];
        s[0] ^= s[3];
        s[2] ^= t;
        s[3] = s[3].rotate_left(45);
        result
    }

    /// A uniform `f64` in `[0, 1)` with 53 random bits.
    #[inline]
    pub fn next_f64(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / (1u64 << 53) as f64)
    }

    /// A uniform integer in `[0, n)` (Lemire's nearly-divisionless method, unbiased).
    /// `n` must be positive.
    #[inline]
    pub fn below(&mut self, n: u64) -> u64 {
        debug_assert!(n > 0);
        let mut m = (self.next_u64() as u128) * (n as u128);
        if (m as u64) < n {
            let threshold = n.wrapping_neg() % n;
            while (m as u64) < threshold {
                m = (self.next_u64() as u128) * (n as u128);
            }
        }
        (m >> 64) as u64
    }
}

impl rand_core::TryRng for EmberRng {
    type Error = Infallible;

    fn try_next_u32(&mut self) -> Result<u32, Infallible> {
        Ok((self.next_u64() >> 32) as u32)
    }

    fn try_next_u64(&mut self) -> Result<u64, Infallible> {
        Ok(self.next_u64())
    }

    fn try_fill_bytes(&mut self, dst: &mut [u8]) -> Result<(), Infallible> {
        for chunk in dst.chunks_mut(8) {
            let bytes = self.next_u64().to_le_bytes();
            chunk.copy_from_slice(&bytes[..chunk.len()]);
        }
        Ok(())
    }
}

impl rand_core::SeedableRng for EmberRng {
    type Seed = [u8; 32];

    fn from_seed(seed: [u8; 32]) -> Self {
        let mut s = [0u64; 4];
        for (i, w) in s.iter_mut().enumerate() {
            let mut b = [0u8; 8];
            b.copy_from_slice(&seed[i * 8..i * 8 + 8]);
            *w = u64::from_le_bytes(b);
        }
        Self::from_state(s)
    }

    fn seed_from_u64(seed: u64) -> Self {
        Self::seed_from(seed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn same_seed_same_stream_and_state_round_trips() {
        let mut a = EmberRng::seed_from(7);
        let mut b = EmberRng::seed_from(7);
        for _ in 0..10 {
            assert_eq!(a.next_u64(), b.next_u64());
        }
        let mut c = EmberRng::from_state(a.state());
        assert_eq!(a.next_u64(), c.next_u64());
        assert_ne!(
            EmberRng::seed_from(8).next_u64(),
            EmberRng::seed_from(7).next_u64()
        );
    }

    #[test]
    fn floats_in_unit_interval_with_right_mean() {
        let mut r = EmberRng::seed_from(1);
        let n = 200_000;
        let mut sum = 0.0;
        for _ in 0..n {
            let x = r.next_f64();
            assert!((0.0..1.0).contains(&x));
            sum += x;
        }
        // Standard error of the mean is 1/sqrt(12 n) ~ 6.5e-4.
        assert!((sum / n as f64 - 0.5).abs() < 4e-3);
    }

    #[test]
    fn below_is_uniform() {
        let mut r = EmberRng::seed_from(3);
        let mut counts = [0u32; 7];
        let n = 70_000;
        for _ in 0..n {
            counts[r.below(7) as usize] += 1;
        }
        let e = n as f64 / 7.0;
        let chi2: f64 = counts.iter().map(|&c| (c as f64 - e).powi(2) / e).sum();
        // 6 degrees of freedom: P(chi2 > 27.9) = 1e-4.
        assert!(chi2 < 27.9, "chi2 = {chi2}, counts = {counts:?}");
    }
}
