//! Image observations stored one frame per slot: every transition sees a stack of `k`
//! frames, yet each frame is written once (the pixels plan, `docs/plans/pixels.md` §2).
//!
//! A slot holds the newest frame of an observation and, once the environment has stepped
//! from it, the step's action, reward and end flags. Links to the same environment's
//! previous and next slot (as distances in the ring) chain an episode's frames, so a stack
//! is a slot and up to `k − 1` hops back, **zero-filled where the episode starts** (as
//! Stable-Baselines3's `VecFrameStack`, whose stacks start as zeros at every reset).
//! n-step returns are computed when a row is gathered, by walking up to `n` hops forward,
//! with the window cut at an episode end exactly as [`crate::NStep`] cuts it.
//!
//! A slot becomes drawable when its n-step window is complete ([`FrameChanges::ready`]),
//! and stops being drawable when its slot or any frame of its stack is overwritten
//! ([`FrameChanges::removed`]); a sampler over the slots follows these two lists. The final
//! frame of an episode gets a slot of its own that is never drawn (it has no step).
//!
//! ```
//! use emberlab_replay::{FrameBatch, FrameChanges, FrameStorage};
//!
//! // 2×2 gray frames, stacks of 2, one env, 1-step returns.
//! let mut s = FrameStorage::new(16, 4, 2, 1, 1, 1, 0.99)?;
//! let mut changes = FrameChanges::default();
//! s.begin(0, &[1; 4], &mut changes)?;
//! let first = s.push(0, &[0.5], 1.0, false, false, &[2; 4], &mut changes)?;
//! assert_eq!(changes.ready, vec![(first, 1.0)]);
//! let mut batch = FrameBatch::default();
//! s.gather(&[first], &mut batch)?;
//! assert_eq!(batch.obs, [0, 0, 0, 0, 1, 1, 1, 1]); // zero-filled, then the first frame
//! assert_eq!(batch.next_obs, [1, 1, 1, 1, 2, 2, 2, 2]);
//! # Ok::<(), emberlab_core::Error>(())
//! ```

use emberlab_core::{Error, Result};

mod file;

/// The step ended the episode by termination.
const TERMINATED: u8 = 2;
/// The step ended the episode by truncation.
const TRUNCATED: u8 = 4;
/// The slot's n-step window is complete and its stack intact: it may be drawn.
const DRAWABLE: u8 = 8;

/// What a [`FrameStorage::begin`], [`FrameStorage::push`] or [`FrameStorage::cut`] changed
/// for a sampler: slots
/// that can no longer be drawn (first), then slots that now can, with their n-step return
/// as a score. Both are cleared by each call.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FrameChanges {
    /// Slots that stopped being drawable (overwritten, or a frame of their stack was).
    pub removed: Vec<usize>,
    /// Slots that became drawable, with their n-step return.
    pub ready: Vec<(usize, f64)>,
}

impl FrameChanges {
    fn clear(&mut self) {
        self.removed.clear();
        self.ready.clear();
    }
}

/// Rows gathered from a [`FrameStorage`]: byte stacks `[len, k · frame]`, oldest frame
/// first, and the n-step columns, named as [`emberlab_core::Batch`]'s.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct FrameBatch {
    /// Number of rows.
    pub len: usize,
    /// `[len, k · frame]` observation stacks.
    pub obs: Vec<u8>,
    /// `[len, act_dim]` actions.
    pub action: Vec<f32>,
    /// `[len]` n-step returns `Σ γ^i r_i`.
    pub reward: Vec<f32>,
    /// `[len, k · frame]` stacks `m` steps later (the window's end).
    pub next_obs: Vec<u8>,
    /// `[len]` 1.0 where the window ends in a termination.
    pub terminated: Vec<f32>,
    /// `[len]` 1.0 where it ends in a truncation (and not a termination).
    pub truncated: Vec<f32>,
    /// `[len]` bootstrap discounts `γ^m`.
    pub discount: Vec<f32>,
    /// `[len]` the slots the rows came from.
    pub indices: Vec<usize>,
    /// `[len]` importance weights: 1.0 from [`FrameStorage::gather`], the sampler's from
    /// [`crate::FrameReplay::sample`].
    pub weights: Vec<f32>,
}

/// Number types whose all-zero bytes are the value zero.
trait Zeroable: Copy {}
impl Zeroable for u8 {}
impl Zeroable for u32 {}
impl Zeroable for f32 {}

/// `n` zeros from the allocator's zeroed memory (pages the OS hands out as they are first
/// written, so an unfilled ring costs no resident memory), or an error naming `what` where
/// the allocator refuses — a capacity too large for the machine is an error, not an abort.
fn zeroed<T: Zeroable>(what: &str, n: usize) -> Result<Vec<T>> {
    if n == 0 || std::mem::size_of::<T>() == 0 {
        return Ok(Vec::new());
    }
    let refused = || {
        Error::invalid(
            format!("frame storage {what}"),
            n,
            "a size the allocator grants",
        )
    };
    let layout = std::alloc::Layout::array::<T>(n).map_err(|_| refused())?;
    // SAFETY: `layout` has a non-zero size. The block comes from the global allocator with
    // `T`'s layout for `n` values, all bytes zero, which is the value 0 of every `Zeroable`
    // type; so it may back a `Vec<T>` of length and capacity `n`, which frees it with the
    // same layout.
    unsafe {
        let p = std::alloc::alloc_zeroed(layout).cast::<T>();
        if p.is_null() {
            return Err(refused());
        }
        Ok(Vec::from_raw_parts(p, n, n))
    }
}

/// An n-step window ([`FrameStorage::window`]).
struct Window {
    /// `Σ γ^i r_i` over its steps.
    ret: f64,
    /// `γ^m` for its `m` steps.
    disc: f64,
    /// Its last step's slot.
    last: usize,
    /// The slot of the frame after its last step (the next observation's newest frame).
    end: usize,
}

/// Frames stored once, linked per environment into stacks and n-step windows (module
/// docs).
#[derive(Clone, Debug)]
pub struct FrameStorage {
    capacity: usize,
    frame: usize,
    stack: usize,
    act_dim: usize,
    n: usize,
    gamma: f64,
    frames: Vec<u8>,
    action: Vec<f32>,
    reward: Vec<f32>,
    flags: Vec<u8>,
    /// Ring distance back to the same episode's previous slot; 0 at the episode's start.
    prev: Vec<u32>,
    /// Ring distance forward to the same episode's next slot; 0 while there is none.
    next: Vec<u32>,
    /// Slots written so far (the next one is `written % capacity`).
    written: u64,
    /// Per environment, the write number (slot = number % capacity) of the frame that
    /// waits for the environment's step.
    pending: Vec<Option<u64>>,
    drawable: usize,
}

impl FrameStorage {
    /// Room for `capacity` frames of `frame` bytes, stacks of `stack` frames, actions of
    /// `act_dim` values, `num_envs` environments and `n`-step returns with discount
    /// `gamma`.
    ///
    /// # Errors
    /// A zero size, a `gamma` outside `[0, 1]`, a `capacity` below
    /// `num_envs · (stack + n + 1)` (each environment's stack and window must fit beside the
    /// others'), or one that does not fit in memory's addressing or that the allocator
    /// refuses.
    pub fn new(
        capacity: usize,
        frame: usize,
        stack: usize,
        act_dim: usize,
        num_envs: usize,
        n: usize,
        gamma: f64,
    ) -> Result<Self> {
        for (what, v) in [
            ("frame", frame),
            ("stack", stack),
            ("num_envs", num_envs),
            ("n", n),
        ] {
            if v == 0 {
                return Err(Error::invalid(what, v, ">= 1"));
            }
        }
        if !(0.0..=1.0).contains(&gamma) {
            return Err(Error::invalid("gamma", gamma, "a number in [0, 1]"));
        }
        let least = num_envs.saturating_mul(stack.saturating_add(n).saturating_add(1));
        if capacity < least || capacity > u32::MAX as usize {
            return Err(Error::invalid(
                "capacity",
                capacity,
                format!("between num_envs · (stack + n + 1) = {least} and 2^32 − 1"),
            ));
        }
        // Elements of a column of `per` values of `elem` bytes each, if it fits in memory.
        let size = |what: &str, per: usize, elem: usize| {
            capacity
                .checked_mul(per)
                .filter(|n| {
                    n.checked_mul(elem)
                        .is_some_and(|b| b <= isize::MAX as usize)
                })
                .ok_or_else(|| Error::invalid(what, capacity, "a size in memory"))
        };
        let (bytes, actions) = (
            size("capacity × frame", frame, 1)?,
            size("capacity × act_dim", act_dim, 4)?,
        );
        Ok(FrameStorage {
            capacity,
            frame,
            stack,
            act_dim,
            n,
            gamma,
            frames: zeroed("frames", bytes)?,
            action: zeroed("actions", actions)?,
            reward: zeroed("rewards", capacity)?,
            flags: zeroed("flags", capacity)?,
            prev: zeroed("links", capacity)?,
            next: zeroed("links", capacity)?,
            written: 0,
            pending: vec![None; num_envs],
            drawable: 0,
        })
    }

    /// Slots in the ring.
    pub fn capacity(&self) -> usize {
        self.capacity
    }

    /// Slots holding a frame (drawable or not).
    pub fn len(&self) -> usize {
        self.written.min(self.capacity as u64) as usize
    }

    /// Whether no frame was stored yet.
    pub fn is_empty(&self) -> bool {
        self.written == 0
    }

    /// Slots that may be drawn now.
    pub fn drawable(&self) -> usize {
        self.drawable
    }

    /// Whether `slot` may be drawn now.
    pub fn is_drawable(&self, slot: usize) -> bool {
        self.flags.get(slot).is_some_and(|f| f & DRAWABLE != 0)
    }

    /// Frames written so far: the next one gets this write number.
    pub fn written(&self) -> u64 {
        self.written
    }

    /// How many frames were written before `slot`'s (its write number), if it holds one:
    /// tells a slot's frame from a later one written over it.
    pub fn write_number(&self, slot: usize) -> Option<u64> {
        (slot < self.len()).then(|| self.written - 1 - self.age(slot) as u64)
    }

    /// Number of environments.
    pub fn num_envs(&self) -> usize {
        self.pending.len()
    }

    /// Bytes of one stacked observation (`stack · frame`).
    pub fn obs_len(&self) -> usize {
        self.stack * self.frame
    }

    /// Bytes of one frame.
    pub fn frame_len(&self) -> usize {
        self.frame
    }

    /// Frames per stacked observation.
    pub fn stack(&self) -> usize {
        self.stack
    }

    /// Values per action.
    pub fn act_dim(&self) -> usize {
        self.act_dim
    }

    /// Steps of a return window (`n`-step returns).
    pub fn n_step(&self) -> usize {
        self.n
    }

    /// The discount of the returns.
    pub fn gamma(&self) -> f64 {
        self.gamma
    }

    /// Starts an episode of environment `env` with its first frame `frame` (after a reset).
    ///
    /// # Errors
    /// An `env` out of range, a frame of the wrong size, or an episode of `env` still
    /// running (its last frame waits for a [`FrameStorage::push`]).
    pub fn begin(&mut self, env: usize, frame: &[u8], changes: &mut FrameChanges) -> Result<usize> {
        changes.clear();
        self.check_env(env)?;
        Error::check_len("frame", self.frame, frame.len())?;
        if self.pending[env].is_some() {
            return Err(Error::invalid(
                "begin",
                format!("env {env}, whose last frame waits for its step"),
                "an environment between episodes (push its step first)",
            ));
        }
        let slot = self.write(frame, changes);
        self.pending[env] = Some(self.written - 1);
        Ok(slot)
    }

    /// Records environment `env`'s step from its waiting frame: the `action`, the `reward`,
    /// how the step ended, and the frame it led to (after a `terminated` or `truncated`
    /// step, the episode's final frame: start the next with [`FrameStorage::begin`]).
    /// Returns the slot the step was recorded in.
    ///
    /// # Errors
    /// An `env` out of range or without a waiting frame, an action or frame of the wrong
    /// size, a non-finite action or reward, or a waiting frame that is the oldest stored (the
    /// capacity is too small for how unevenly the environments step: the episode is dropped,
    /// and `env` may [`FrameStorage::begin`] a new one).
    #[allow(clippy::too_many_arguments)]
    pub fn push(
        &mut self,
        env: usize,
        action: &[f32],
        reward: f32,
        terminated: bool,
        truncated: bool,
        next_frame: &[u8],
        changes: &mut FrameChanges,
    ) -> Result<usize> {
        changes.clear();
        self.check_env(env)?;
        Error::check_len("action", self.act_dim, action.len())?;
        Error::check_len("next_frame", self.frame, next_frame.len())?;
        Error::check_finite_rows("action", action, action.len())?;
        Error::check_finite(|| "reward".into(), reward as f64)?;
        let Some(seq) = self.pending[env] else {
            return Err(Error::invalid(
                "push",
                format!("env {env} without a started episode"),
                "an environment started with begin",
            ));
        };
        let slot = (seq % self.capacity as u64) as usize;
        // The next frame's write must not evict the waiting one. If it would, the episode
        // is lost: the environment is free to begin a new one.
        if self.written - seq >= self.capacity as u64 {
            self.pending[env] = None;
            return Err(Error::invalid(
                "push",
                format!("env {env}, whose waiting frame (slot {slot}) is the oldest stored"),
                format!(
                    "a capacity ({}) that holds every environment's stack between its steps",
                    self.capacity
                ),
            ));
        }
        let a = self.act_dim;
        self.action[slot * a..(slot + 1) * a].copy_from_slice(action);
        self.reward[slot] = reward;
        let mut flags = 0;
        if terminated {
            flags |= TERMINATED;
        }
        if truncated {
            flags |= TRUNCATED;
        }
        self.flags[slot] |= flags;
        let next = self.write(next_frame, changes);
        self.link(slot, next);
        let ended = terminated || truncated;
        self.pending[env] = (!ended).then_some(self.written - 1);
        // The windows this step completes: the slot n − 1 hops back, or, at an episode's
        // end, every slot whose window reaches it.
        let mut s = slot;
        for hops in 0..self.n {
            if ended || hops + 1 == self.n {
                self.make_ready(s, changes);
            }
            match self.back(s) {
                Some(p) => s = p,
                None => break,
            }
        }
        Ok(slot)
    }

    /// Ends environment `env`'s running episode where it stands, as a truncation: its last
    /// recorded step is marked truncated, so the windows reaching it complete and bootstrap
    /// from the waiting frame, which becomes the episode's final frame. For a run resumed
    /// with fresh environments (whose running episodes cannot be continued); `env` may then
    /// [`FrameStorage::begin`] a new episode. Returns whether an episode was running.
    ///
    /// # Errors
    /// An `env` out of range.
    pub fn cut(&mut self, env: usize, changes: &mut FrameChanges) -> Result<bool> {
        changes.clear();
        self.check_env(env)?;
        let Some(seq) = self.pending[env].take() else {
            return Ok(false);
        };
        if self.written - seq > self.capacity as u64 {
            // The waiting frame itself is gone: nothing of the episode reaches it.
            return Ok(true);
        }
        let Some(last) = self.back((seq % self.capacity as u64) as usize) else {
            // A begun episode without steps: its frame stays, never drawable.
            return Ok(true);
        };
        if self.flags[last] & TERMINATED == 0 {
            self.flags[last] |= TRUNCATED;
        }
        let mut s = last;
        for _ in 0..self.n {
            self.make_ready(s, changes);
            match self.back(s) {
                Some(p) => s = p,
                None => break,
            }
        }
        Ok(true)
    }

    /// Gathers the rows of `slots` (each drawable) into `out`, replacing its contents.
    ///
    /// # Errors
    /// A slot out of range or not drawable now.
    pub fn gather(&self, slots: &[usize], out: &mut FrameBatch) -> Result<()> {
        let row = self.obs_len();
        out.len = 0;
        out.obs.resize(slots.len() * row, 0);
        out.next_obs.resize(slots.len() * row, 0);
        for v in [
            &mut out.action,
            &mut out.reward,
            &mut out.terminated,
            &mut out.truncated,
            &mut out.discount,
        ] {
            v.clear();
        }
        out.indices.clear();
        out.weights.clear();
        if let Some(&s) = slots.iter().find(|&&s| !self.is_drawable(s)) {
            return Err(Error::invalid(
                "slot",
                s,
                "a drawable slot (its n-step window complete, its stack intact)",
            ));
        }
        for (i, &s) in slots.iter().enumerate() {
            self.stack_into(s, &mut out.obs[i * row..(i + 1) * row]);
            let Window {
                ret,
                disc,
                last,
                end,
            } = self.window(s).ok_or_else(|| {
                Error::invalid("slot", s, "a window of linked slots (storage corrupted)")
            })?;
            self.stack_into(end, &mut out.next_obs[i * row..(i + 1) * row]);
            let a = self.act_dim;
            out.action
                .extend_from_slice(&self.action[s * a..(s + 1) * a]);
            out.reward.push(ret as f32);
            let term = self.flags[last] & TERMINATED != 0;
            let trunc = self.flags[last] & TRUNCATED != 0 && !term;
            out.terminated.push(if term { 1.0 } else { 0.0 });
            out.truncated.push(if trunc { 1.0 } else { 0.0 });
            out.discount.push(disc as f32);
            out.indices.push(s);
        }
        out.weights.clear();
        out.weights.resize(slots.len(), 1.0);
        out.len = slots.len();
        Ok(())
    }

    fn check_env(&self, env: usize) -> Result<()> {
        if env >= self.pending.len() {
            return Err(Error::invalid(
                "env",
                env,
                format!("< num_envs = {}", self.pending.len()),
            ));
        }
        Ok(())
    }

    /// Writes `frame` into the next slot, evicting what it held; the slot starts an episode
    /// (no links) until [`Self::link`] joins it.
    fn write(&mut self, frame: &[u8], changes: &mut FrameChanges) -> usize {
        let slot = (self.written % self.capacity as u64) as usize;
        if self.written >= self.capacity as u64 {
            self.evict(slot, changes);
        }
        self.written += 1;
        self.frames[slot * self.frame..(slot + 1) * self.frame].copy_from_slice(frame);
        self.flags[slot] = 0;
        self.prev[slot] = 0;
        self.next[slot] = 0;
        slot
    }

    /// `slot`'s frame goes: it and the drawable slots whose stacks read it stop being
    /// drawable. (Its successors in the episode are newer, so still stored; those not yet
    /// drawable never become so, as [`Self::intact`] finds.)
    fn evict(&mut self, slot: usize, changes: &mut FrameChanges) {
        self.unready(slot, changes);
        let mut s = slot;
        for _ in 1..self.stack {
            let Some(t) = self.forward(s) else { break };
            self.unready(t, changes);
            s = t;
        }
    }

    /// Writes since `slot` was written (0 for the newest).
    fn age(&self, slot: usize) -> usize {
        let newest = ((self.written - 1) % self.capacity as u64) as usize;
        (newest + self.capacity - slot) % self.capacity
    }

    /// Whether every frame of the stack ending at `slot` (stored) is still stored: a link
    /// back of `d` from a slot of age `a` reaches a frame still stored iff `a + d < len`.
    fn intact(&self, slot: usize) -> bool {
        let mut t = slot;
        for _ in 1..self.stack {
            if self.prev[t] == 0 {
                return true;
            }
            match self.back(t) {
                Some(p) => t = p,
                None => return false,
            }
        }
        true
    }

    fn unready(&mut self, slot: usize, changes: &mut FrameChanges) {
        if self.flags[slot] & DRAWABLE != 0 {
            self.flags[slot] &= !DRAWABLE;
            self.drawable -= 1;
            changes.removed.push(slot);
        }
    }

    fn make_ready(&mut self, slot: usize, changes: &mut FrameChanges) {
        if self.flags[slot] & DRAWABLE != 0 || !self.intact(slot) {
            return;
        }
        // A complete window's steps are linked to the frames after them.
        let Some(window) = self.window(slot) else {
            return;
        };
        self.flags[slot] |= DRAWABLE;
        self.drawable += 1;
        changes.ready.push((slot, window.ret));
    }

    /// The n-step window starting at `slot` (complete: its steps recorded): up to `n` steps
    /// along the episode's links, cut at its end as [`crate::NStep`] cuts it. `None` where
    /// a step has no link to the frame after it (never, for a window `push` completed).
    fn window(&self, slot: usize) -> Option<Window> {
        let (mut ret, mut disc, mut last, mut end) = (0.0f64, 1.0f64, slot, slot);
        for _ in 0..self.n {
            ret += disc * self.reward[end] as f64;
            disc *= self.gamma;
            last = end;
            end = self.forward(end)?;
            if self.flags[last] & (TERMINATED | TRUNCATED) != 0 {
                break;
            }
        }
        Some(Window {
            ret,
            disc,
            last,
            end,
        })
    }

    fn link(&mut self, from: usize, to: usize) {
        let d = ((to + self.capacity - from) % self.capacity) as u32;
        self.next[from] = d;
        self.prev[to] = d;
    }

    /// The same episode's previous slot, if there is one and it is still stored.
    fn back(&self, slot: usize) -> Option<usize> {
        let d = self.prev[slot] as usize;
        (d != 0 && self.age(slot) + d < self.len())
            .then(|| (slot + self.capacity - d) % self.capacity)
    }

    fn forward(&self, slot: usize) -> Option<usize> {
        let d = self.next[slot] as usize;
        (d != 0).then(|| (slot + d) % self.capacity)
    }

    /// The stack ending at `slot`'s frame, oldest first, zero-filled before the episode's
    /// first frame.
    fn stack_into(&self, slot: usize, out: &mut [u8]) {
        let f = self.frame;
        let mut s = Some(slot);
        for k in (0..self.stack).rev() {
            let dst = &mut out[k * f..(k + 1) * f];
            match s {
                Some(t) => {
                    dst.copy_from_slice(&self.frames[t * f..(t + 1) * f]);
                    s = self.back(t);
                }
                None => dst.fill(0),
            }
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::NStep;
    use emberlab_core::{EmberRng, Transition};
    use std::collections::{BTreeMap, BTreeSet, VecDeque};

    const FRAME: usize = 3;
    const GAMMA: f64 = 0.9;

    /// A row as the naive reference stores it: full stacks, as SB3's `VecFrameStack` and
    /// an n-step accumulator give them.
    #[derive(Debug, PartialEq)]
    struct Row {
        obs: Vec<u8>,
        action: f32,
        reward: f32,
        next_obs: Vec<u8>,
        terminated: bool,
        truncated: bool,
        discount: f32,
    }

    /// One environment of the reference: its stack (frames and their write numbers), its
    /// accumulator, and the slots of its steps waiting in the accumulator.
    struct Env {
        stack: Vec<u8>,
        seqs: VecDeque<u64>,
        nstep: NStep,
        steps: VecDeque<(usize, u64)>,
        started: bool,
    }

    fn as_f32(b: &[u8]) -> Vec<f32> {
        b.iter().map(|&x| x as f32).collect()
    }

    fn as_u8(f: &[f32]) -> Vec<u8> {
        f.iter().map(|&x| x as u8).collect()
    }

    /// Steps `envs` environments in shuffled rounds with random episode ends into a small
    /// ring, and after every round checks the storage against the reference: the same
    /// drawable slots (as its change lists say and as it counts them), every one gathered
    /// equal to the reference's row, and each ready score the row's return. Returns how
    /// many rows completed their window after a frame of their stack was overwritten (the
    /// storage must refuse those).
    fn against_reference(n: usize, k: usize, envs: usize, capacity: usize, seed: u64) -> usize {
        let mut rng = EmberRng::seed_from(seed);
        let mut s = FrameStorage::new(capacity, FRAME, k, 1, envs, n, GAMMA).unwrap();
        let mut changes = FrameChanges::default();
        let mut model: BTreeSet<usize> = BTreeSet::new();
        // slot -> (the oldest write number its rows read, the row)
        let mut expected: BTreeMap<usize, (u64, Row)> = BTreeMap::new();
        let mut ref_envs: Vec<Env> = (0..envs)
            .map(|_| Env {
                stack: vec![0; k * FRAME],
                seqs: VecDeque::new(),
                nstep: NStep::new(n, GAMMA, k * FRAME, 1).unwrap(),
                steps: VecDeque::new(),
                started: false,
            })
            .collect();
        let mut batch = FrameBatch::default();
        let mut order: Vec<usize> = (0..envs).collect();
        let mut late = 0;
        for _round in 0..400 {
            for i in (1..envs).rev() {
                order.swap(i, rng.below(i as u64 + 1) as usize);
            }
            for &e in &order {
                // An environment may idle while its waiting frame is young enough, so that
                // the frames of its stacks are overwritten before its windows complete.
                let young = s.pending[e]
                    .is_none_or(|seq| s.written - seq + 2 * envs as u64 <= capacity as u64);
                if young && rng.below(3) == 0 {
                    continue;
                }
                let frame: Vec<u8> = (0..FRAME).map(|_| 1 + rng.below(255) as u8).collect();
                let env = &mut ref_envs[e];
                let seq = s.written;
                // The stack after this frame: shifted left, the frame last.
                let mut next_stack = env.stack.clone();
                next_stack.rotate_left(FRAME);
                next_stack[(k - 1) * FRAME..].copy_from_slice(&frame);
                if !env.started {
                    s.begin(e, &frame, &mut changes).unwrap();
                    env.stack = vec![0; k * FRAME];
                    env.stack[(k - 1) * FRAME..].copy_from_slice(&frame);
                    env.seqs = VecDeque::from([seq]);
                    env.started = true;
                } else {
                    let action = rng.below(7) as f32 - 3.0;
                    let reward = (rng.below(2001) as f32 - 1000.0) / 256.0;
                    let end = rng.below(20);
                    let (term, trunc) = (end == 0 || end == 2, end == 1 || end == 2);
                    let slot = s
                        .push(e, &[action], reward, term, trunc, &frame, &mut changes)
                        .unwrap();
                    let obs_seq = *env.seqs.front().unwrap();
                    env.steps.push_back((slot, obs_seq));
                    let (obs, next) = (as_f32(&env.stack), as_f32(&next_stack));
                    let t = Transition {
                        obs: &obs,
                        action: &[action],
                        reward,
                        next_obs: &next,
                        terminated: term,
                        truncated: trunc,
                    };
                    let steps = &mut env.steps;
                    let (written, late) = (s.written, &mut late);
                    env.nstep
                        .push(&t, |t, discount| {
                            let (slot, oldest) = steps.pop_front().unwrap();
                            if written - oldest > capacity as u64 {
                                *late += 1;
                            }
                            let row = Row {
                                obs: as_u8(t.obs),
                                action: t.action[0],
                                reward: t.reward,
                                next_obs: as_u8(t.next_obs),
                                terminated: t.terminated,
                                truncated: t.truncated,
                                discount,
                            };
                            expected.insert(slot, (oldest, row));
                            Ok(())
                        })
                        .unwrap();
                    env.stack = next_stack;
                    env.seqs.push_back(seq);
                    if env.seqs.len() > k {
                        env.seqs.pop_front();
                    }
                    if term || trunc {
                        env.started = false;
                        assert!(env.steps.is_empty());
                    }
                }
                for r in &changes.removed {
                    assert!(model.remove(r), "slot {r} removed without being drawable");
                }
                for (r, score) in &changes.ready {
                    assert!(model.insert(*r), "slot {r} ready twice");
                    let oldest = expected[r].0;
                    assert!(
                        s.written - oldest <= capacity as u64,
                        "slot {r} lost a frame"
                    );
                    assert_eq!(*score as f32, expected[r].1.reward, "score of slot {r}");
                }
            }
            // Rows whose every frame is still stored are exactly the drawable ones.
            let written = s.written;
            expected.retain(|_, (oldest, _)| written - *oldest <= capacity as u64);
            let valid: BTreeSet<usize> = expected.keys().copied().collect();
            assert_eq!(model, valid);
            assert_eq!(s.drawable(), valid.len());
            let slots: Vec<usize> = valid.iter().copied().collect();
            s.gather(&slots, &mut batch).unwrap();
            let w = k * FRAME;
            for (i, slot) in slots.iter().enumerate() {
                let got = Row {
                    obs: batch.obs[i * w..(i + 1) * w].to_vec(),
                    action: batch.action[i],
                    reward: batch.reward[i],
                    next_obs: batch.next_obs[i * w..(i + 1) * w].to_vec(),
                    terminated: batch.terminated[i] == 1.0,
                    truncated: batch.truncated[i] == 1.0,
                    discount: batch.discount[i],
                };
                assert_eq!(got, expected[slot].1, "slot {slot}");
            }
            assert_eq!(batch.indices, slots);
        }
        assert!(
            s.written > 3 * capacity as u64,
            "the ring wrapped several times"
        );
        late
    }

    #[test]
    fn rows_equal_a_reference_storing_full_stacks() {
        let mut late = 0;
        for (n, k) in [(1, 1), (1, 4), (3, 1), (3, 4)] {
            for envs in [1, 3] {
                let least = envs * (k + n + 1);
                for (capacity, seed) in [(least, 1), (least + 7, 2), (4 * least + 3, 3)] {
                    late += against_reference(n, k, envs, capacity, seed);
                }
            }
        }
        // Idle environments made some windows complete after their stacks lost a frame.
        assert!(late > 0, "the late-window case was never reached");
    }

    #[test]
    fn a_stored_frame_is_stored_once() {
        // 84×84 frames, stacks of 4: the ring holds one frame per slot.
        let s = FrameStorage::new(1000, 84 * 84, 4, 1, 8, 3, 0.99).unwrap();
        assert_eq!(s.frames.len(), 1000 * 84 * 84);
        assert_eq!(s.obs_len(), 4 * 84 * 84);
    }

    #[test]
    fn misuse_is_an_error_naming_it() {
        let mut s = FrameStorage::new(12, 2, 2, 1, 2, 1, 0.9).unwrap();
        let mut c = FrameChanges::default();
        let err = |r: Result<usize>| r.unwrap_err().to_string();
        assert!(err(s.push(0, &[0.0], 1.0, false, false, &[1, 1], &mut c)).contains("begin"));
        s.begin(0, &[1, 1], &mut c).unwrap();
        assert!(err(s.begin(0, &[1, 1], &mut c)).contains("waits for its step"));
        assert!(err(s.begin(2, &[1, 1], &mut c)).contains("num_envs"));
        assert!(err(s.begin(1, &[1, 1, 1], &mut c)).contains("frame"));
        let nan = s.push(0, &[0.0], f32::NAN, false, false, &[1, 1], &mut c);
        assert!(err(nan).contains("reward"));
        // Environment 1 keeps stepping while 0 waits: 0's frame becomes the oldest.
        s.begin(1, &[2, 2], &mut c).unwrap();
        for _ in 0..10 {
            s.push(1, &[0.0], 0.0, false, false, &[2, 2], &mut c)
                .unwrap();
        }
        let late = s.push(0, &[0.0], 0.0, false, false, &[1, 1], &mut c);
        assert!(err(late).contains("capacity"));
        // Its episode is dropped; it may start another.
        s.begin(0, &[3, 3], &mut c).unwrap();
        let nan_action = s.push(0, &[f32::NAN], 0.0, false, false, &[1, 1], &mut c);
        assert!(err(nan_action).contains("action"));
        let mut batch = FrameBatch::default();
        assert!(
            s.gather(&[0], &mut batch)
                .unwrap_err()
                .to_string()
                .contains("drawable")
        );
        for bad in [
            FrameStorage::new(5, 2, 2, 1, 2, 1, 0.9),
            FrameStorage::new(12, 0, 2, 1, 2, 1, 0.9),
            FrameStorage::new(12, 2, 2, 1, 2, 1, 1.5),
        ] {
            assert!(bad.is_err());
        }
    }
}
