//! A replay buffer shared by several writer threads and one sampling thread.
//!
//! Writers stage transitions in their own [`ReplayWriter`] and commit them under the lock a
//! chunk at a time, so the lock is taken once per chunk rather than once per step and the
//! sampler is rarely kept waiting.

use crate::buffer::ReplayBuffer;
use crate::sampler::Sampler;
use emberlab_core::{Batch, Result, Transition};
use std::sync::{Arc, Mutex, MutexGuard};

/// A cloneable handle to a buffer behind a mutex.
#[derive(Debug)]
pub struct SharedReplay<S> {
    inner: Arc<Mutex<ReplayBuffer<S>>>,
}

impl<S> Clone for SharedReplay<S> {
    fn clone(&self) -> Self {
        SharedReplay {
            inner: Arc::clone(&self.inner),
        }
    }
}

impl<S: Sampler> SharedReplay<S> {
    /// Shares `buffer`.
    pub fn new(buffer: ReplayBuffer<S>) -> Self {
        SharedReplay {
            inner: Arc::new(Mutex::new(buffer)),
        }
    }

    /// Locks the buffer (a writer that panicked mid-push cannot leave it half-written:
    /// pushes validate before writing, so a poisoned lock is recovered).
    pub fn lock(&self) -> MutexGuard<'_, ReplayBuffer<S>> {
        self.inner.lock().unwrap_or_else(|p| p.into_inner())
    }

    /// A writer that commits every `chunk` transitions (at least 1).
    pub fn writer(&self, chunk: usize) -> ReplayWriter<S> {
        let (o, a) = {
            let b = self.lock();
            (b.storage().obs_dim(), b.storage().act_dim())
        };
        ReplayWriter {
            shared: self.clone(),
            chunk: chunk.max(1),
            obs_dim: o,
            act_dim: a,
            obs: Vec::new(),
            next_obs: Vec::new(),
            action: Vec::new(),
            scalars: Vec::new(),
        }
    }

    /// Draws `k` transitions into `batch` under the lock.
    pub fn sample(&self, k: usize, batch: &mut Batch) -> Result<()> {
        self.lock().sample(k, batch)
    }

    /// Number of committed transitions.
    pub fn len(&self) -> usize {
        self.lock().len()
    }

    /// Whether nothing has been committed.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }
}

/// Stages one thread's transitions and commits them in chunks; see the module docs.
/// Dropping a writer commits what it holds.
#[derive(Debug)]
pub struct ReplayWriter<S: Sampler> {
    shared: SharedReplay<S>,
    chunk: usize,
    obs_dim: usize,
    act_dim: usize,
    obs: Vec<f32>,
    next_obs: Vec<f32>,
    action: Vec<f32>,
    /// reward, score, terminated, truncated
    scalars: Vec<(f32, f64, bool, bool)>,
}

impl<S: Sampler> ReplayWriter<S> {
    /// Stages `t` scored by its reward; commits when the chunk is full.
    pub fn push(&mut self, t: &Transition<'_>) -> Result<()> {
        self.push_scored(t, t.reward as f64)
    }

    /// Stages `t` with `score`; commits when the chunk is full. Lengths are checked here,
    /// so that a bad transition fails in the thread that made it.
    pub fn push_scored(&mut self, t: &Transition<'_>, score: f64) -> Result<()> {
        emberlab_core::Error::check_len("obs", self.obs_dim, t.obs.len())?;
        emberlab_core::Error::check_len("next_obs", self.obs_dim, t.next_obs.len())?;
        emberlab_core::Error::check_len("action", self.act_dim, t.action.len())?;
        self.obs.extend_from_slice(t.obs);
        self.next_obs.extend_from_slice(t.next_obs);
        self.action.extend_from_slice(t.action);
        self.scalars
            .push((t.reward, score, t.terminated, t.truncated));
        if self.scalars.len() >= self.chunk {
            self.flush()?;
        }
        Ok(())
    }

    /// Commits every staged transition. On error the rest of the chunk is kept staged.
    pub fn flush(&mut self) -> Result<()> {
        if self.scalars.is_empty() {
            return Ok(());
        }
        let (o, a) = (self.obs_dim, self.act_dim);
        let mut done = 0;
        let result = {
            let mut buf = self.shared.lock();
            self.scalars.iter().enumerate().try_for_each(
                |(i, &(reward, score, terminated, truncated))| {
                    let t = Transition {
                        obs: &self.obs[i * o..(i + 1) * o],
                        action: &self.action[i * a..(i + 1) * a],
                        reward,
                        next_obs: &self.next_obs[i * o..(i + 1) * o],
                        terminated,
                        truncated,
                    };
                    buf.push_scored(&t, score, &[])?;
                    done += 1;
                    Ok(())
                },
            )
        };
        self.obs.drain(..done * o);
        self.next_obs.drain(..done * o);
        self.action.drain(..done * a);
        self.scalars.drain(..done);
        result
    }
}

impl<S: Sampler> Drop for ReplayWriter<S> {
    fn drop(&mut self) {
        // Errors here were already reported by earlier pushes' validation; a transition
        // that fails now (NaN) is dropped rather than panicking in a destructor.
        let _ = self.flush();
    }
}
