//! [`ReplayBuffer`]: ring storage plus a sampler plus its generator, saved and loaded as
//! one file.

use crate::codec::{Decoder, Encoder};
use crate::ring::{ColumnSpec, RingStorage};
use crate::sampler::Sampler;
use emberlab_core::{Batch, EmberRng, Error, Result, Transition};
use std::io::Write;
use std::path::Path;

const MAGIC: &[u8; 8] = b"EMBERRB\0";
/// 2: prioritized samplers also store the β that annealing starts from.
const VERSION: u64 = 3;
/// The oldest format this build reads (version 2 stored every column at full capacity).
const OLDEST: u64 = 2;
const KIND: &str = "replay buffer";
/// magic, version, payload length, CRC-32 of the payload.
const HEADER: usize = 8 + 8 + 8 + 8;

/// A replay buffer: transitions in a [`RingStorage`], drawn by a [`Sampler`] with its own
/// seeded generator, so that the same seed gives the same batches.
#[derive(Clone, Debug)]
pub struct ReplayBuffer<S> {
    storage: RingStorage,
    sampler: S,
    rng: EmberRng,
    /// The sampler's draw, reused between calls (gathered into `batch.indices`).
    slots: Vec<usize>,
}

impl<S: Sampler> ReplayBuffer<S> {
    /// Couples `storage` and `sampler` (same capacity) with a generator seeded by `seed`.
    pub fn new(storage: RingStorage, sampler: S, seed: u64) -> Result<Self> {
        if storage.capacity() != sampler.capacity() {
            return Err(Error::invalid(
                "sampler capacity",
                sampler.capacity(),
                format!("the storage capacity {}", storage.capacity()),
            ));
        }
        Ok(ReplayBuffer {
            storage,
            sampler,
            rng: EmberRng::seed_from(seed),
            slots: Vec::new(),
        })
    }

    /// Stores `t`, scoring it by its reward (see [`ReplayBuffer::push_scored`]).
    pub fn push(&mut self, t: &Transition<'_>) -> Result<usize> {
        self.push_scored(t, t.reward as f64, &[])
    }

    /// Stores `t` with the extra-column values `extras` and the score (return) `score` used
    /// by score-based samplers. Returns the slot written. On error nothing is stored.
    pub fn push_scored(
        &mut self,
        t: &Transition<'_>,
        score: f64,
        extras: &[&[f32]],
    ) -> Result<usize> {
        Error::check_finite(|| "score".into(), score)?;
        let slot = self.storage.push_with(t, extras)?;
        self.sampler.on_push(slot, score)?;
        Ok(slot)
    }

    /// Draws `k` transitions into `batch` (rows, slots in `batch.indices`, importance
    /// weights in `batch.weights`). Reuses `batch`'s allocations.
    pub fn sample(&mut self, k: usize, batch: &mut Batch) -> Result<()> {
        let r = self.sampler.sample(
            self.storage.len(),
            k,
            &mut self.rng,
            &mut self.slots,
            &mut batch.weights,
        );
        let r = r.and_then(|_| self.storage.gather(&self.slots, batch));
        if r.is_err() {
            batch.indices.clear();
            batch.len = 0;
        }
        r
    }

    /// Hands the sampler new priorities for the slots of the last batch (`batch.indices`),
    /// e.g. `|TD error|` per row; samplers without priorities ignore them.
    ///
    /// # Errors
    /// See [`Sampler::update_priorities`]; on error nothing changes.
    pub fn update_priorities(&mut self, slots: &[usize], priorities: &[f32]) -> Result<()> {
        self.sampler.update_priorities(slots, priorities)
    }

    /// The stored transitions.
    pub fn storage(&self) -> &RingStorage {
        &self.storage
    }

    /// The sampler.
    pub fn sampler(&self) -> &S {
        &self.sampler
    }

    /// The sampler, e.g. to update priorities or scores.
    pub fn sampler_mut(&mut self) -> &mut S {
        &mut self.sampler
    }

    /// The sampling generator.
    pub fn rng_mut(&mut self) -> &mut EmberRng {
        &mut self.rng
    }

    /// Number of stored transitions.
    pub fn len(&self) -> usize {
        self.storage.len()
    }

    /// Whether no transition is stored.
    pub fn is_empty(&self) -> bool {
        self.storage.is_empty()
    }

    /// Writes the whole buffer (transitions, sampler state, generator state) to `path`.
    /// The data goes to a temporary file beside it that is renamed over `path` only once
    /// complete, so a crash never leaves a half-written buffer in place of a good one.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        let path = path.as_ref();
        let mut enc = Encoder::new();
        self.encode_body(&mut enc);
        let payload = enc.into_bytes();
        let mut file = Vec::with_capacity(HEADER + payload.len());
        file.extend_from_slice(MAGIC);
        file.extend_from_slice(&VERSION.to_le_bytes());
        file.extend_from_slice(&(payload.len() as u64).to_le_bytes());
        file.extend_from_slice(&(crc32fast::hash(&payload) as u64).to_le_bytes());
        file.extend_from_slice(&payload);
        let tmp = path.with_extension("tmp");
        let io = Error::io_at(path);
        let mut f = std::fs::File::create(&tmp).map_err(&io)?;
        f.write_all(&file).map_err(&io)?;
        f.sync_all().map_err(&io)?;
        drop(f);
        std::fs::rename(&tmp, path).map_err(&io)
    }

    fn encode_body(&self, enc: &mut Encoder) {
        let s = &self.storage;
        enc.str(S::KIND);
        enc.u64(s.capacity() as u64);
        enc.u64(s.obs_dim() as u64);
        enc.u64(s.act_dim() as u64);
        enc.u64(s.len() as u64);
        enc.u64(s.head() as u64);
        let cols = s.columns_raw();
        enc.u64(cols.extras.len() as u64);
        for (spec, _) in cols.extras {
            enc.str(&spec.name);
            enc.u64(spec.width as u64);
        }
        // Rows fill from 0: only the first `len` rows hold transitions.
        let n = s.len();
        let (o, a) = (s.obs_dim(), s.act_dim());
        enc.f32s(&cols.obs[..n * o]);
        enc.f32s(&cols.next_obs[..n * o]);
        enc.f32s(&cols.action[..n * a]);
        enc.f32s(&cols.reward[..n]);
        enc.bytes(&cols.terminated[..n]);
        enc.bytes(&cols.truncated[..n]);
        for (spec, col) in cols.extras {
            enc.f32s(&col[..n * spec.width]);
        }
        for w in self.rng.state() {
            enc.u64(w);
        }
        self.sampler.encode(enc);
    }

    /// Reads a buffer written by [`ReplayBuffer::save`]. A missing file is an
    /// [`Error::Io`]; a truncated, corrupted, foreign or other-sampler file is an
    /// [`Error::Corrupt`] that says what is wrong.
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        let path = path.as_ref();
        let data = std::fs::read(path).map_err(Error::io_at(path))?;
        let head = Decoder::new(&data, path, KIND);
        if data.len() < HEADER || &data[..8] != MAGIC {
            return Err(head.corrupt(if data.len() < 8 || &data[..8] != MAGIC {
                "missing the Ember replay-buffer signature".to_string()
            } else {
                format!("truncated header ({} bytes)", data.len())
            }));
        }
        let word = |i: usize| u64::from_le_bytes(data[8 * i..8 * i + 8].try_into().unwrap());
        let (version, len, crc) = (word(1), word(2), word(3));
        if !(OLDEST..=VERSION).contains(&version) {
            return Err(head.corrupt(format!(
                "format version {version}, this build reads {OLDEST} to {VERSION}"
            )));
        }
        let payload = &data[HEADER..];
        if payload.len() as u64 != len {
            return Err(head.corrupt(format!(
                "truncated or padded: header promises {len} bytes of data, file holds {}",
                payload.len()
            )));
        }
        if crc32fast::hash(payload) as u64 != crc {
            return Err(head.corrupt("checksum mismatch: the data is corrupted"));
        }
        let mut dec = Decoder::new(payload, path, KIND);
        let this = Self::decode_body(&mut dec, version)?;
        if !dec.is_done() {
            return Err(dec.corrupt("trailing bytes after the sampler state"));
        }
        Ok(this)
    }

    fn decode_body(dec: &mut Decoder<'_>, version: u64) -> Result<Self> {
        let kind = dec.str("sampler kind")?;
        if kind != S::KIND {
            return Err(dec.corrupt(format!(
                "it holds a `{kind}` sampler, but a `{}` buffer was asked for",
                S::KIND
            )));
        }
        let max = i32::MAX as usize;
        let capacity = dec.len("capacity", max)?;
        let obs_dim = dec.len("obs_dim", 1 << 20)?;
        let act_dim = dec.len("act_dim", 1 << 20)?;
        let len = dec.len("len", capacity)?;
        let head = dec.len("head", capacity)?;
        let n_extras = dec.len("extra column count", 1024)?;
        let mut specs = Vec::with_capacity(n_extras);
        for _ in 0..n_extras {
            let name = dec.str("column name")?;
            let width = dec.len("column width", 1 << 20)?;
            specs.push(ColumnSpec { name, width });
        }
        let mut storage = RingStorage::with_columns(capacity, obs_dim, act_dim, specs)
            .map_err(|e| dec.corrupt(e.to_string()))?;
        if (len < capacity && head != len) || head >= capacity {
            return Err(dec.corrupt(format!("inconsistent cursor: len {len}, head {head}")));
        }
        let cols = storage.restore_raw(len, head);
        // Version 2 wrote every row of the capacity, version 3 the first `len`.
        let n = if version == 2 { capacity } else { len };
        dec.f32s_into("obs", &mut cols.obs[..n * obs_dim])?;
        dec.f32s_into("next_obs", &mut cols.next_obs[..n * obs_dim])?;
        dec.f32s_into("action", &mut cols.action[..n * act_dim])?;
        dec.f32s_into("reward", &mut cols.reward[..n])?;
        dec.bytes_into("terminated", &mut cols.terminated[..n])?;
        dec.bytes_into("truncated", &mut cols.truncated[..n])?;
        for (spec, col) in cols.extras.iter_mut() {
            let w = spec.width;
            dec.f32s_into(&spec.name.clone(), &mut col[..n * w])?;
        }
        let mut state = [0u64; 4];
        for w in state.iter_mut() {
            *w = dec.u64("generator state")?;
        }
        let sampler = S::decode(dec, capacity)?;
        Ok(ReplayBuffer {
            storage,
            sampler,
            rng: EmberRng::from_state(state),
            slots: Vec::new(),
        })
    }
}
