//! A [`FrameStorage`] written to and read from a [`crate::stream`] file: its shape and
//! cursor in a small block with a checksum of its own (checked before the columns are
//! allocated), then the stored slots' columns, streamed.

use super::{DRAWABLE, FrameStorage, TERMINATED, TRUNCATED};
use crate::codec::{Decoder, Encoder};
use crate::stream::{StreamReader, StreamWriter};
use emberlab_core::Result;

/// The most environments a saved storage may name (a bound on the shape block).
const MAX_ENVS: u64 = 1 << 20;
/// More frames than any run writes (a million years at a million frames a second), far
/// from the counter's overflow.
const MAX_WRITTEN: u64 = 1 << 62;

impl FrameStorage {
    /// Writes the storage to `w`.
    pub(crate) fn write_to(&self, w: &mut StreamWriter) -> Result<()> {
        let mut shape = Encoder::new();
        for v in [
            self.capacity,
            self.frame,
            self.stack,
            self.act_dim,
            self.pending.len(),
            self.n,
        ] {
            shape.u64(v as u64);
        }
        shape.f64(self.gamma);
        shape.u64(self.written);
        shape.u64(self.drawable as u64);
        for p in &self.pending {
            shape.u64(p.map_or(u64::MAX, |seq| seq));
        }
        let shape = shape.into_bytes();
        w.block(&shape)?;
        w.u64(crc32fast::hash(&shape) as u64)?;
        let n = self.len();
        w.bytes(&self.frames[..n * self.frame])?;
        w.f32s(&self.action[..n * self.act_dim])?;
        w.f32s(&self.reward[..n])?;
        w.bytes(&self.flags[..n])?;
        w.u32s(&self.prev[..n])?;
        w.u32s(&self.next[..n])
    }

    /// Reads a storage written by [`FrameStorage::write_to`].
    pub(crate) fn read_from(r: &mut StreamReader) -> Result<Self> {
        let shape = r.block("storage shape", 8 * (10 + MAX_ENVS))?;
        if crc32fast::hash(&shape) as u64 != r.u64("storage shape checksum")? {
            return Err(r.corrupt("checksum mismatch in the storage's shape"));
        }
        let mut d = Decoder::new(&shape, r.path(), r.kind());
        let mut dims = [0usize; 6];
        for (v, what) in dims
            .iter_mut()
            .zip(["capacity", "frame", "stack", "act_dim", "num_envs", "n"])
        {
            *v = d.len(what, u32::MAX as usize)?;
        }
        let [capacity, frame, stack, act_dim, num_envs, n] = dims;
        if num_envs as u64 > MAX_ENVS {
            return Err(d.corrupt(format!("num_envs = {num_envs}")));
        }
        let gamma = d.f64("gamma")?;
        let written = d.u64("frames written")?;
        if written >= MAX_WRITTEN {
            return Err(d.corrupt(format!("{written} frames written")));
        }
        let len = written.min(capacity as u64) as usize;
        // The stored slots' columns must be in the file before anything is allocated for
        // them: a shape naming more than the file holds is a truncated or forged file.
        let per_slot = (frame as u64)
            .saturating_add(4 * act_dim as u64)
            .saturating_add(4 + 1 + 4 + 4);
        if (len as u64).saturating_mul(per_slot) > r.left() {
            return Err(r.corrupt(format!(
                "truncated: {len} stored slots of {per_slot} bytes, {} bytes left",
                r.left()
            )));
        }
        let mut s = FrameStorage::new(capacity, frame, stack, act_dim, num_envs, n, gamma)
            .map_err(|e| d.corrupt(e.to_string()))?;
        s.written = written;
        s.drawable = d.len("drawable slots", len)?;
        for (env, p) in s.pending.iter_mut().enumerate() {
            let seq = d.u64("waiting frame")?;
            if seq != u64::MAX && seq >= s.written {
                return Err(d.corrupt(format!(
                    "env {env} waits on frame {seq} of {} written",
                    s.written
                )));
            }
            *p = (seq != u64::MAX).then_some(seq);
        }
        let mut waiting: Vec<u64> = s.pending.iter().flatten().copied().collect();
        waiting.sort_unstable();
        if waiting.windows(2).any(|w| w[0] == w[1]) {
            return Err(d.corrupt("two environments wait on the same frame"));
        }
        if !d.is_done() {
            return Err(d.corrupt("trailing bytes in the storage's shape"));
        }
        r.bytes_into("frames", &mut s.frames[..len * frame])?;
        r.f32s_into("actions", &mut s.action[..len * act_dim])?;
        r.f32s_into("rewards", &mut s.reward[..len])?;
        r.bytes_into("flags", &mut s.flags[..len])?;
        r.u32s_into("previous links", &mut s.prev[..len])?;
        r.u32s_into("next links", &mut s.next[..len])?;
        let known = TERMINATED | TRUNCATED | DRAWABLE;
        if let Some(slot) = s.flags[..len].iter().position(|f| f & !known != 0) {
            return Err(r.corrupt(format!("slot {slot} has flags {}", s.flags[slot])));
        }
        let marked = s.flags[..len]
            .iter()
            .filter(|&&f| f & DRAWABLE != 0)
            .count();
        if marked != s.drawable {
            return Err(r.corrupt(format!(
                "{marked} slots marked drawable, the shape says {}",
                s.drawable
            )));
        }
        let far = |d: &u32| *d as usize >= capacity;
        if let Some(slot) = s.prev[..len].iter().chain(&s.next[..len]).position(far) {
            return Err(r.corrupt(format!("a link beyond the ring (entry {slot})")));
        }
        Ok(s)
    }
}
