//! NumPy's default generator as Gymnasium seeds it: `np.random.Generator(PCG64(
//! SeedSequence(seed)))`, so that an environment reset with seed `s` (classic control, the
//! MuJoCo tasks) draws the same uniform reset noise as Gymnasium's `env.reset(seed=s)`.
//!
//! Written from the published algorithms: SeedSequence's entropy pool (4 words of 32 bits,
//! its hash and mix functions), PCG64 (128-bit LCG, XSL-RR output) and
//! `random() = (next_u64 >> 11) * 2^-53`. Checked bit for bit against NumPy in the trace
//! tests (`crates/emberlab-env/tools/gen_mujoco_traces.py` records NumPy's draws) and by the classic-control
//! environments' seeded resets matching Gymnasium's.
//!
//! Normal draws (feature `mujoco`, whose tasks add normal reset noise) are NumPy's own:
//! [`NumpyRng::standard_normal`] calls `random_standard_normal`, NumPy's ziggurat, from the
//! `libnpyrandom.a` that NumPy's wheel ships for C and Cython users (scripts/setup-mujoco.sh
//! links it beside the MuJoCo library), fed by this generator. Its tables are NumPy's data
//! and are not recomputed here: recomputing them in double precision from Marsaglia and
//! Tsang's recurrence gets 70 of the 256 layer bounds wrong.

use emberlab_core::state::{StateReader, StateWriter};
use emberlab_core::{Error, Result};

const MULT_A: u32 = 0x931e_8875;
const INIT_A: u32 = 0x43b0_d7e5;
const MULT_B: u32 = 0x58f3_8ded;
const INIT_B: u32 = 0x8b51_f9dd;
const MIX_MULT_L: u32 = 0xca01_f9dd;
const MIX_MULT_R: u32 = 0x4973_f715;
const POOL: usize = 4;
const PCG_MULT: u128 = 0x2360_ed05_1fc6_5da4_4385_df64_9fcc_f645;

/// SeedSequence's pool for an integer `seed` (no spawn key), then `n` words of 64 bits of
/// its `generate_state(n, uint64)`.
fn seed_sequence_state<const N: usize>(seed: u64) -> [u64; N] {
    let entropy: Vec<u32> = if seed >> 32 == 0 {
        vec![seed as u32]
    } else {
        vec![seed as u32, (seed >> 32) as u32]
    };
    let mut hash_const = INIT_A;
    let mut hashmix = |value: u32| {
        let mut v = value ^ hash_const;
        hash_const = hash_const.wrapping_mul(MULT_A);
        v = v.wrapping_mul(hash_const);
        v ^ (v >> 16)
    };
    let mix = |x: u32, y: u32| {
        let r = MIX_MULT_L
            .wrapping_mul(x)
            .wrapping_sub(MIX_MULT_R.wrapping_mul(y));
        r ^ (r >> 16)
    };
    let mut pool = [0u32; POOL];
    for (i, p) in pool.iter_mut().enumerate() {
        *p = hashmix(entropy.get(i).copied().unwrap_or(0));
    }
    for src in 0..POOL {
        for dst in 0..POOL {
            if src != dst {
                let v = hashmix(pool[src]);
                pool[dst] = mix(pool[dst], v);
            }
        }
    }
    // An entropy of at most two words never exceeds the pool: nothing more to mix in.
    let mut hash_const = INIT_B;
    let mut words = [0u64; N];
    for (i, w) in words.iter_mut().enumerate() {
        let mut half = [0u32; 2];
        for (j, h) in half.iter_mut().enumerate() {
            let mut v = pool[(2 * i + j) % POOL] ^ hash_const;
            hash_const = hash_const.wrapping_mul(MULT_B);
            v = v.wrapping_mul(hash_const);
            *h = v ^ (v >> 16);
        }
        *w = u64::from(half[0]) | (u64::from(half[1]) << 32);
    }
    words
}

/// NumPy's `np.random.default_rng(seed)` (PCG64 seeded through SeedSequence), the generator
/// Gymnasium gives every environment as `np_random`.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct NumpyRng {
    state: u128,
    inc: u128,
}

impl NumpyRng {
    /// `np.random.default_rng(seed)`.
    pub fn seed_from(seed: u64) -> Self {
        let [s0, s1, s2, s3] = seed_sequence_state::<4>(seed);
        let init_state = (u128::from(s0) << 64) | u128::from(s1);
        let init_seq = (u128::from(s2) << 64) | u128::from(s3);
        let mut rng = NumpyRng {
            state: 0,
            inc: (init_seq << 1) | 1,
        };
        rng.advance();
        rng.state = rng.state.wrapping_add(init_state);
        rng.advance();
        rng
    }

    fn advance(&mut self) {
        self.state = self.state.wrapping_mul(PCG_MULT).wrapping_add(self.inc);
    }

    /// The next 64 random bits (`bit_generator.random_raw()`).
    pub fn next_u64(&mut self) -> u64 {
        self.advance();
        let x = ((self.state >> 64) as u64) ^ (self.state as u64);
        x.rotate_right((self.state >> 122) as u32)
    }

    /// A uniform draw from `[0, 1)` (`Generator.random()`).
    pub fn random(&mut self) -> f64 {
        (self.next_u64() >> 11) as f64 * (1.0 / 9_007_199_254_740_992.0)
    }

    /// `Generator.uniform(low, high)`: `low + (high - low) * random()`.
    pub fn uniform(&mut self, low: f64, high: f64) -> f64 {
        low + (high - low) * self.random()
    }

    /// `Generator.standard_normal()`: NumPy's own ziggurat (linked from its wheel, see the
    /// module's documentation) drawing from this generator, so the same values as NumPy.
    #[cfg(feature = "mujoco")]
    pub fn standard_normal(&mut self) -> f64 {
        numpy_ffi::standard_normal(self)
    }

    /// Appends the generator's state (four words).
    pub fn save(&self, out: &mut StateWriter) {
        for v in [self.state, self.inc] {
            out.u64((v >> 64) as u64).u64(v as u64);
        }
    }

    /// Reads what [`NumpyRng::save`] wrote.
    ///
    /// # Errors
    /// A short snapshot, or an even increment (no PCG64 stream has one).
    pub fn load(src: &mut StateReader<'_>) -> Result<Self> {
        let mut word =
            || -> Result<u128> { Ok((u128::from(src.u64()?) << 64) | u128::from(src.u64()?)) };
        let state = word()?;
        let inc = word()?;
        if inc & 1 == 0 {
            return Err(Error::invalid(
                "PCG64 increment in a snapshot",
                format!("{inc:#x}"),
                "an odd number",
            ));
        }
        Ok(NumpyRng { state, inc })
    }
}

/// The call into NumPy's `libnpyrandom.a`.
#[cfg(feature = "mujoco")]
mod numpy_ffi {
    use super::NumpyRng;
    use std::ffi::c_void;

    /// NumPy's `bitgen_t` (`numpy/random/bitgen.h`): a generator's state and its draws.
    #[repr(C)]
    struct BitGen {
        state: *mut c_void,
        next_uint64: unsafe extern "C" fn(*mut c_void) -> u64,
        next_uint32: unsafe extern "C" fn(*mut c_void) -> u32,
        next_double: unsafe extern "C" fn(*mut c_void) -> f64,
        next_raw: unsafe extern "C" fn(*mut c_void) -> u64,
    }

    unsafe extern "C" {
        /// NumPy's `random_standard_normal(bitgen_t *)`.
        fn random_standard_normal(bitgen: *mut BitGen) -> f64;
    }

    /// # Safety
    /// `st` is the `&mut NumpyRng` that [`standard_normal`] put into the `BitGen`.
    unsafe fn rng<'a>(st: *mut c_void) -> &'a mut NumpyRng {
        // SAFETY: see the function's contract; NumPy passes `state` back unchanged.
        unsafe { &mut *st.cast::<NumpyRng>() }
    }

    unsafe extern "C" fn next_u64(st: *mut c_void) -> u64 {
        // SAFETY: only NumPy calls this, with the state `standard_normal` gave it.
        unsafe { rng(st) }.next_u64()
    }

    unsafe extern "C" fn next_double(st: *mut c_void) -> f64 {
        // SAFETY: as in `next_u64`.
        unsafe { rng(st) }.random()
    }

    /// PCG64's 32-bit draws keep half a word between calls, which this generator does not;
    /// NumPy's normal sampler never asks for them.
    unsafe extern "C" fn next_u32(_: *mut c_void) -> u32 {
        std::process::abort()
    }

    pub(super) fn standard_normal(rng: &mut NumpyRng) -> f64 {
        let mut bitgen = BitGen {
            state: (rng as *mut NumpyRng).cast(),
            next_uint64: next_u64,
            next_uint32: next_u32,
            next_double,
            next_raw: next_u64,
        };
        // SAFETY: `bitgen` lives across the call and its state is the exclusive `rng`;
        // `random_standard_normal` only calls the draws above through it.
        unsafe { random_standard_normal(&mut bitgen) }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn draws_are_in_range_and_repeat_per_seed() {
        let mut a = NumpyRng::seed_from(7);
        let mut b = NumpyRng::seed_from(7);
        let mut c = NumpyRng::seed_from(8);
        let xs: Vec<f64> = (0..1000).map(|_| a.random()).collect();
        assert!(xs.iter().all(|x| (0.0..1.0).contains(x)));
        assert_eq!(xs, (0..1000).map(|_| b.random()).collect::<Vec<_>>());
        assert_ne!(xs[0], c.random());
        let u = a.uniform(-0.1, 0.1);
        assert!((-0.1..0.1).contains(&u));
    }

    #[cfg(feature = "mujoco")]
    #[test]
    fn normal_draws_have_unit_moments() {
        // Against the naive reference: mean 0, variance 1, P(|z| < 1) = 0.6827.
        let mut rng = NumpyRng::seed_from(3);
        let n = 200_000;
        let zs: Vec<f64> = (0..n).map(|_| rng.standard_normal()).collect();
        let mean = zs.iter().sum::<f64>() / n as f64;
        let var = zs.iter().map(|z| (z - mean).powi(2)).sum::<f64>() / n as f64;
        let inside = zs.iter().filter(|z| z.abs() < 1.0).count() as f64 / n as f64;
        // Standard errors: 0.0022 for the mean, 0.0032 for the variance, 0.001 for P.
        assert!(mean.abs() < 0.01, "{mean}");
        assert!((var - 1.0).abs() < 0.015, "{var}");
        assert!((inside - 0.682_689).abs() < 0.005, "{inside}");
        assert!(zs.iter().all(|z| z.is_finite()));
    }

    #[test]
    fn snapshots_continue_the_stream() {
        let mut a = NumpyRng::seed_from(11);
        a.random();
        let mut out = StateWriter::new();
        a.save(&mut out);
        let words = out.into_words();
        let mut b = NumpyRng::load(&mut StateReader::new(&words, "test")).unwrap();
        assert_eq!(a.next_u64(), b.next_u64());
        let mut even = words.clone();
        even[3] &= !1;
        assert!(NumpyRng::load(&mut StateReader::new(&even, "test")).is_err());
        assert!(NumpyRng::load(&mut StateReader::new(&words[..3], "test")).is_err());
    }
}
