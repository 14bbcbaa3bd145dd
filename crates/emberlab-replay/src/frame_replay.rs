//! [`FrameReplay`]: a [`FrameStorage`] and a [`Sampler`] kept in step, with the sampler's
//! seeded generator — the frame counterpart of [`crate::ReplayBuffer`].
//!
//! After every [`FrameReplay::begin`], [`FrameReplay::push`] and [`FrameReplay::cut`] the
//! sampler is told what
//! changed: each newly stored slot is left out ([`Sampler::remove`]) until its n-step
//! window completes, slots that stopped being drawable are left out, and slots that became
//! drawable are pushed ([`Sampler::on_push`]). So every sampler of the crate draws exactly
//! the storage's drawable slots.
//!
//! **Scores of return-weighted replay** follow [`crate::EpisodeWriter`]'s rule: a slot is
//! scored by its episode's undiscounted return so far when it becomes drawable, and every
//! slot of the episode still drawable gets the episode's final return when it ends.
//!
//! ```
//! use emberlab_replay::{FrameBatch, FrameReplay, FrameStorage, Uniform};
//!
//! // 2×2 gray frames, stacks of 4, actions of 1 value, 2 environments, 3-step returns.
//! let storage = FrameStorage::new(64, 4, 4, 1, 2, 3, 0.99)?;
//! let mut replay = FrameReplay::new(storage, Uniform::new(64, true), 7)?;
//! for env in 0..2 {
//!     replay.begin(env, &[0; 4])?;
//! }
//! for t in 1..=10u8 {
//!     for env in 0..2 {
//!         replay.push(env, &[0.5], 1.0, false, t == 10, &[t; 4])?;
//!     }
//! }
//! let mut batch = FrameBatch::default();
//! replay.sample(8, &mut batch)?;
//! assert_eq!(batch.len, 8);
//! assert_eq!(batch.obs.len(), 8 * 16); // stacks of 4 frames of 4 bytes
//! # Ok::<(), emberlab_core::Error>(())
//! ```

use crate::codec::{Decoder, Encoder};
use crate::frames::{FrameBatch, FrameChanges, FrameStorage};
use crate::sampler::Sampler;
use crate::stream::{StreamReader, StreamWriter};
use emberlab_core::{EmberRng, Error, Result};
use std::collections::VecDeque;
use std::path::Path;

const MAGIC: &[u8; 8] = b"EMBERFR\0";
const VERSION: u64 = 1;
const KIND: &str = "frame replay";
/// The most bytes a saved sampler state may take (its trees: tens of bytes per slot).
const MAX_SAMPLER_BYTES: u64 = 1 << 36;

/// Frame storage plus a sampler plus its generator (module docs).
#[derive(Clone, Debug)]
pub struct FrameReplay<S> {
    storage: FrameStorage,
    sampler: S,
    rng: EmberRng,
    changes: FrameChanges,
    /// The sampler's draw and weights, reused between calls.
    slots: Vec<usize>,
    weights: Vec<f32>,
    /// Per environment, when the sampler uses scores: the running episode's return and its
    /// drawable slots with their write numbers.
    episodes: Vec<Episode>,
    /// Scratch for [`FrameReplay::update_priorities`].
    kept: (Vec<usize>, Vec<f32>),
}

#[derive(Clone, Debug, Default)]
struct Episode {
    ret: f64,
    /// The episode's drawable slots and their write numbers, in the order they became
    /// drawable (oldest first, but newest first among those one step made ready); those
    /// overwritten since are dropped from the front as the ring moves on, so it holds at
    /// most `capacity + n` entries.
    slots: VecDeque<(usize, u64)>,
}

impl<S: Sampler> FrameReplay<S> {
    /// Couples an empty `storage` and a `sampler` of the same capacity holding nothing yet
    /// with a generator seeded by `seed`.
    ///
    /// # Errors
    /// Capacities that differ, a storage that already holds frames (the sampler would not
    /// know its drawable slots), or a sampler that cannot leave slots out
    /// ([`Sampler::remove`]'s error).
    pub fn new(storage: FrameStorage, mut sampler: S, seed: u64) -> Result<Self> {
        if storage.capacity() != sampler.capacity() {
            return Err(Error::invalid(
                "sampler capacity",
                sampler.capacity(),
                format!("the frame storage's capacity {}", storage.capacity()),
            ));
        }
        if !storage.is_empty() {
            return Err(Error::invalid(
                "frame storage",
                format!("{} frames stored", storage.len()),
                "an empty storage (couple it before the first begin)",
            ));
        }
        // Slot 0 is the first written, and left out until it is drawable anyway.
        sampler.remove(0)?;
        let episodes = if sampler.uses_scores() {
            vec![Episode::default(); storage.num_envs()]
        } else {
            Vec::new()
        };
        Ok(FrameReplay {
            storage,
            sampler,
            rng: EmberRng::seed_from(seed),
            changes: FrameChanges::default(),
            slots: Vec::new(),
            weights: Vec::new(),
            episodes,
            kept: (Vec::new(), Vec::new()),
        })
    }

    /// Starts an episode of environment `env` with its first frame (see
    /// [`FrameStorage::begin`]). Returns the slot written.
    ///
    /// # Errors
    /// As [`FrameStorage::begin`]; nothing changes then.
    pub fn begin(&mut self, env: usize, frame: &[u8]) -> Result<usize> {
        let before = self.storage.len();
        let slot = self.storage.begin(env, frame, &mut self.changes)?;
        if let Some(e) = self.episodes.get_mut(env) {
            e.ret = 0.0;
            e.slots.clear();
        }
        self.follow(before, env, 0.0, false)?;
        Ok(slot)
    }

    /// Records environment `env`'s step (see [`FrameStorage::push`]). Returns the slot the
    /// step was recorded in.
    ///
    /// # Errors
    /// As [`FrameStorage::push`].
    #[allow(clippy::too_many_arguments)]
    pub fn push(
        &mut self,
        env: usize,
        action: &[f32],
        reward: f32,
        terminated: bool,
        truncated: bool,
        next_frame: &[u8],
    ) -> Result<usize> {
        let before = self.storage.len();
        let slot = self.storage.push(
            env,
            action,
            reward,
            terminated,
            truncated,
            next_frame,
            &mut self.changes,
        )?;
        self.follow(before, env, reward as f64, terminated || truncated)?;
        Ok(slot)
    }

    /// Ends environment `env`'s running episode where it stands, as a truncation (see
    /// [`FrameStorage::cut`]); return-weighted scores take the episode's return so far.
    /// Returns whether an episode was running.
    ///
    /// # Errors
    /// As [`FrameStorage::cut`].
    pub fn cut(&mut self, env: usize) -> Result<bool> {
        let before = self.storage.len();
        let running = self.storage.cut(env, &mut self.changes)?;
        if running {
            self.follow(before, env, 0.0, true)?;
        }
        Ok(running)
    }

    /// Hands the sampler what the last storage call changed (module docs): slots stored
    /// from `before` on are left out, then those that stopped being drawable, then those
    /// that became drawable (all `env`'s, whose step earned `reward`) are pushed.
    fn follow(&mut self, before: usize, env: usize, reward: f64, ended: bool) -> Result<()> {
        for slot in before..self.storage.len() {
            self.sampler.remove(slot)?;
        }
        for &slot in &self.changes.removed {
            self.sampler.remove(slot)?;
        }
        let Some(episode) = self.episodes.get_mut(env) else {
            for &(slot, ret) in &self.changes.ready {
                self.sampler.on_push(slot, ret)?;
            }
            return Ok(());
        };
        episode.ret += reward;
        for &(slot, _) in &self.changes.ready {
            self.sampler.on_push(slot, episode.ret)?;
            let number = self
                .storage
                .write_number(slot)
                .expect("a ready slot is stored");
            episode.slots.push_back((slot, number));
        }
        let capacity = self.storage.capacity() as u64;
        let written = self.storage.written();
        while episode
            .slots
            .front()
            .is_some_and(|&(_, number)| number + capacity < written)
        {
            episode.slots.pop_front();
        }
        if ended {
            for (slot, number) in episode.slots.drain(..) {
                if self.storage.is_drawable(slot) && self.storage.write_number(slot) == Some(number)
                {
                    self.sampler.set_score(slot, episode.ret)?;
                }
            }
            episode.ret = 0.0;
        }
        Ok(())
    }

    /// Draws `k` rows into `batch` (slots in `batch.indices`, importance weights in
    /// `batch.weights`), reusing its allocations.
    ///
    /// # Errors
    /// The sampler's (too few drawable slots, every weight zero); `batch` is left empty.
    pub fn sample(&mut self, k: usize, batch: &mut FrameBatch) -> Result<()> {
        let r = self
            .sampler
            .sample(
                self.storage.len(),
                k,
                &mut self.rng,
                &mut self.slots,
                &mut self.weights,
            )
            .and_then(|_| self.storage.gather(&self.slots, batch));
        match r {
            Ok(()) => {
                batch.weights.clear();
                batch.weights.extend_from_slice(&self.weights);
                Ok(())
            }
            Err(e) => {
                batch.len = 0;
                batch.indices.clear();
                batch.weights.clear();
                Err(e)
            }
        }
    }

    /// Hands the sampler new priorities (e.g. `|TD error|`) for slots of a batch. Slots that
    /// stopped being drawable since the batch was drawn are skipped (their frames are gone).
    /// A slot overwritten *and* drawable again before this call (at least `capacity` frames
    /// written since the draw) takes the priority meant for its old row, as in
    /// [`crate::ReplayBuffer`].
    ///
    /// # Errors
    /// A length mismatch, a slot beyond the capacity, or a priority the sampler refuses; on
    /// error nothing changes.
    pub fn update_priorities(&mut self, slots: &[usize], priorities: &[f32]) -> Result<()> {
        Error::check_len("priorities", slots.len(), priorities.len())?;
        let capacity = self.storage.capacity();
        if let Some((j, &s)) = slots.iter().enumerate().find(|(_, s)| **s >= capacity) {
            return Err(Error::invalid(
                format!("slots[{j}]"),
                s,
                format!("< capacity {capacity}"),
            ));
        }
        let (kept_slots, kept) = &mut self.kept;
        kept_slots.clear();
        kept.clear();
        for (&s, &p) in slots.iter().zip(priorities) {
            if self.storage.is_drawable(s) {
                kept_slots.push(s);
                kept.push(p);
            }
        }
        self.sampler.update_priorities(kept_slots, kept)
    }

    /// Tells the sampler how far training has come (see [`Sampler::anneal`]).
    ///
    /// # Errors
    /// A `progress` outside `[0, 1]`.
    pub fn anneal(&mut self, progress: f64) -> Result<()> {
        self.sampler.anneal(progress)
    }

    /// The frames.
    pub fn storage(&self) -> &FrameStorage {
        &self.storage
    }

    /// The sampler (read only: changing what it holds would part it from the storage).
    pub fn sampler(&self) -> &S {
        &self.sampler
    }

    /// Slots that may be drawn now.
    pub fn drawable(&self) -> usize {
        self.storage.drawable()
    }

    /// Writes everything needed to resume exactly — frames, links, the environments'
    /// waiting frames, the sampler, its generator, the running episodes' scores — to
    /// `path`, streamed (no second copy of the frames in memory), through a temporary file
    /// renamed over `path` once complete.
    ///
    /// # Errors
    /// [`Error::Io`] when the file cannot be written.
    pub fn save(&self, path: impl AsRef<Path>) -> Result<()> {
        let mut w = StreamWriter::create(path.as_ref(), MAGIC, VERSION)?;
        w.block(S::KIND.as_bytes())?;
        self.storage.write_to(&mut w)?;
        for v in self.rng.state() {
            w.u64(v)?;
        }
        w.u64(self.episodes.len() as u64)?;
        for e in &self.episodes {
            w.f64(e.ret)?;
            w.u64(e.slots.len() as u64)?;
            for &(slot, number) in &e.slots {
                w.u64(slot as u64)?;
                w.u64(number)?;
            }
        }
        let mut enc = Encoder::new();
        self.sampler.encode(&mut enc);
        w.block(&enc.into_bytes())?;
        w.finish()
    }

    /// Reads a replay written by [`FrameReplay::save`], into memory allocated once.
    ///
    /// # Errors
    /// [`Error::Io`] for a missing or unreadable file; [`Error::Corrupt`] naming the
    /// problem for a truncated, corrupted or foreign file, or one holding another sampler.
    pub fn load(path: impl AsRef<Path>) -> Result<Self> {
        let (mut r, _) = StreamReader::open(path.as_ref(), KIND, MAGIC, VERSION..=VERSION)?;
        let kind = r.block("sampler kind", 256)?;
        if kind != S::KIND.as_bytes() {
            return Err(r.corrupt(format!(
                "it holds a `{}` sampler, but a `{}` replay was asked for",
                String::from_utf8_lossy(&kind),
                S::KIND
            )));
        }
        let storage = FrameStorage::read_from(&mut r)?;
        let mut state = [0u64; 4];
        for v in state.iter_mut() {
            *v = r.u64("generator state")?;
        }
        let envs = r.len("scored environments", storage.num_envs() as u64)?;
        let mut episodes = Vec::with_capacity(envs);
        for _ in 0..envs {
            let ret = r.f64("episode return")?;
            // 16 bytes an entry: a list longer than the file is left is a forged one.
            let most = (2 * storage.capacity() as u64).min(r.left() / 16);
            let n = r.len("episode slots", most)?;
            let mut slots = VecDeque::with_capacity(n);
            for _ in 0..n {
                let slot = r.len("episode slot", storage.capacity() as u64 - 1)?;
                slots.push_back((slot, r.u64("episode slot's write number")?));
            }
            episodes.push(Episode { ret, slots });
        }
        let bytes = r.block("sampler state", MAX_SAMPLER_BYTES)?;
        let mut dec = Decoder::new(&bytes, r.path(), KIND);
        let sampler = S::decode(&mut dec, storage.capacity())?;
        if !dec.is_done() {
            return Err(dec.corrupt("trailing bytes after the sampler state"));
        }
        if envs
            != if sampler.uses_scores() {
                storage.num_envs()
            } else {
                0
            }
        {
            return Err(r.corrupt(format!(
                "{envs} scored environments for a `{}` sampler over {} environments",
                S::KIND,
                storage.num_envs()
            )));
        }
        r.finish()?;
        Ok(FrameReplay {
            storage,
            sampler,
            rng: EmberRng::from_state(state),
            changes: FrameChanges::default(),
            slots: Vec::new(),
            weights: Vec::new(),
            episodes,
            kept: (Vec::new(), Vec::new()),
        })
    }
}
