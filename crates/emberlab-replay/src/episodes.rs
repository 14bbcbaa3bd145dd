//! [`EpisodeWriter`]: feeds a replay buffer from the sub-environments of a vector env, with
//! n-step returns per sub-environment and episode-return scores.
//!
//! ## Scores of return-weighted replay
//! A transition's score is the **undiscounted return of its episode**: when the transition
//! is stored, the return so far (the rewards of its episode up to and including the newest
//! step stored); when the episode ends (terminated or truncated), every transition of it
//! still in the buffer gets the episode's final return. The sampler weighs slot `i` by
//! `r_i + |min(min_j r_j, 0)|`, the minimum taken exactly over the transitions in the buffer
//! (a min tree, right under eviction). A partial episode cut off by the end of a training
//! call keeps its return-so-far scores.

use crate::{ColumnSpec, NStep, ReplayBuffer, RingStorage, Sampler};
use emberlab_core::{Error, Result, Transition};

/// The extra column holding n-step transitions' bootstrap discount `γ^m`.
pub const DISCOUNT_COLUMN: &str = "discount";

impl RingStorage {
    /// Storage for `n_step`-step transitions: with the [`DISCOUNT_COLUMN`] when
    /// `n_step > 1`, without extra columns otherwise.
    ///
    /// # Errors
    /// A zero size, or a buffer too large to allocate.
    pub fn for_n_step(
        capacity: usize,
        obs_dim: usize,
        act_dim: usize,
        n_step: usize,
    ) -> Result<Self> {
        let columns = if n_step > 1 {
            vec![ColumnSpec {
                name: DISCOUNT_COLUMN.into(),
                width: 1,
            }]
        } else {
            Vec::new()
        };
        RingStorage::with_columns(capacity, obs_dim, act_dim, columns)
    }
}

/// Feeds a replay buffer from the sub-environments of a vector env: n-step accumulation
/// per sub-environment, and episode-return scores (module docs).
#[derive(Clone, Debug)]
pub struct EpisodeWriter {
    nstep: Vec<NStep>,
    /// Whether the sampler's scores are kept up to date (return-weighted replay).
    scores: bool,
    running: Vec<f64>,
    /// Per sub-environment, the `(slot, push number)` of the current episode's transitions.
    episode: Vec<Vec<(usize, u64)>>,
    pushes: u64,
    capacity: u64,
}

impl EpisodeWriter {
    /// A writer for `envs` sub-environments into `replay`, with `n_step`-step returns
    /// discounted by `gamma`. The buffer must have the discount column exactly when
    /// `n_step > 1`, and no other extra column.
    ///
    /// # Errors
    /// Other extra columns than that, `n_step = 0`, or `gamma` outside `[0, 1]`.
    pub fn new<S: Sampler>(
        replay: &ReplayBuffer<S>,
        envs: usize,
        n_step: usize,
        gamma: f64,
    ) -> Result<Self> {
        let storage = replay.storage();
        let columns: Vec<&ColumnSpec> = storage.columns().collect();
        let wanted = if n_step > 1 { 1 } else { 0 };
        if columns.len() != wanted
            || columns
                .first()
                .is_some_and(|c| c.name != DISCOUNT_COLUMN || c.width != 1)
        {
            let names: Vec<String> = columns
                .iter()
                .map(|c| format!("{}×{}", c.name, c.width))
                .collect();
            return Err(Error::invalid(
                "replay buffer extra columns",
                format!("[{}]", names.join(", ")),
                if n_step > 1 {
                    format!(
                        "exactly one column `{DISCOUNT_COLUMN}` of width 1 for n_step = {n_step} (ReplayConfig::build adds it)"
                    )
                } else {
                    "no extra columns for one-step transitions".into()
                },
            ));
        }
        let nstep = if n_step > 1 {
            (0..envs)
                .map(|_| NStep::new(n_step, gamma, storage.obs_dim(), storage.act_dim()))
                .collect::<Result<_>>()?
        } else {
            Vec::new()
        };
        let scores = replay.sampler().uses_scores();
        Ok(EpisodeWriter {
            nstep,
            scores,
            running: vec![0.0; envs],
            episode: vec![Vec::new(); if scores { envs } else { 0 }],
            pushes: 0,
            capacity: storage.capacity() as u64,
        })
    }

    /// Transitions stored through this writer so far (n-step ones included).
    pub fn pushes(&self) -> u64 {
        self.pushes
    }

    /// Number of sub-environments.
    pub fn envs(&self) -> usize {
        self.running.len()
    }

    /// Appends the writer's pending state (n-step windows, running returns, the current
    /// episodes' slots) to a snapshot.
    pub fn save_state(&self, out: &mut emberlab_core::state::StateWriter) {
        out.usize(self.nstep.len());
        for acc in &self.nstep {
            acc.save_state(out);
        }
        out.f64s(&self.running)
            .u64(self.pushes)
            .usize(self.episode.len());
        for slots in &self.episode {
            out.usize(slots.len());
            for &(slot, seq) in slots {
                out.usize(slot).u64(seq);
            }
        }
    }

    /// Restores what [`EpisodeWriter::save_state`] wrote for a writer built the same way.
    ///
    /// # Errors
    /// A snapshot of a writer for another number of sub-environments or another `n_step`,
    /// or a truncated or corrupted one; the writer is then unchanged.
    pub fn load_state(&mut self, src: &mut emberlab_core::state::StateReader<'_>) -> Result<()> {
        Error::check_len(
            "n-step accumulators in the snapshot",
            self.nstep.len(),
            src.usize()?,
        )?;
        let mut nstep = self.nstep.clone();
        for acc in &mut nstep {
            acc.load_state(src)?;
        }
        let running = src.f64s(Some(self.running.len()))?;
        let pushes = src.u64()?;
        Error::check_len(
            "episode lists in the snapshot",
            self.episode.len(),
            src.usize()?,
        )?;
        let mut episode = Vec::with_capacity(self.episode.len());
        for _ in 0..self.episode.len() {
            let n = src.usize()?;
            if n as u64 > pushes {
                return Err(Error::invalid(
                    "episode length in the snapshot",
                    n,
                    format!("<= {pushes} pushes"),
                ));
            }
            let slots = (0..n)
                .map(|_| Ok((src.usize()?, src.u64()?)))
                .collect::<Result<Vec<_>>>()?;
            episode.push(slots);
        }
        (self.nstep, self.running, self.pushes, self.episode) = (nstep, running, pushes, episode);
        Ok(())
    }

    /// Stores the one-step transition `t` of sub-environment `i` (through its n-step
    /// accumulator when there is one); at an episode end, rescores the episode.
    /// `i < envs` is the caller's to keep (it panics otherwise).
    ///
    /// # Errors
    /// A transition of the wrong widths or with a non-finite value (nothing is stored).
    pub fn push<S: Sampler>(
        &mut self,
        i: usize,
        t: &Transition<'_>,
        replay: &mut ReplayBuffer<S>,
    ) -> Result<()> {
        self.running[i] += t.reward as f64;
        let score = self.running[i];
        let EpisodeWriter {
            nstep,
            scores,
            episode,
            pushes,
            ..
        } = self;
        let mut store = |t: &Transition<'_>, extras: &[&[f32]]| -> Result<()> {
            let slot = replay.push_scored(t, score, extras)?;
            if *scores {
                episode[i].push((slot, *pushes));
            }
            *pushes += 1;
            Ok(())
        };
        match nstep.get_mut(i) {
            None => store(t, &[])?,
            Some(acc) => acc.push(t, |nt, discount| store(&nt, &[&[discount]]))?,
        }
        if t.terminated || t.truncated {
            self.end_episode(i, replay)?;
        }
        Ok(())
    }

    /// Gives every transition of sub-environment `i`'s episode still in the buffer the
    /// episode's return.
    fn end_episode<S: Sampler>(&mut self, i: usize, replay: &mut ReplayBuffer<S>) -> Result<()> {
        let ret = std::mem::take(&mut self.running[i]);
        if self.scores {
            for &(slot, seq) in &self.episode[i] {
                if self.pushes - seq <= self.capacity {
                    replay.sampler_mut().set_score(slot, ret)?;
                }
            }
            self.episode[i].clear();
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{AnySampler, ReturnWeighted};

    fn step<'a>(obs: &'a [f32], reward: f32, end: (bool, bool)) -> Transition<'a> {
        Transition {
            obs,
            action: &[0.0],
            reward,
            next_obs: obs,
            terminated: end.0,
            truncated: end.1,
        }
    }

    fn return_weighted(capacity: usize, n_step: usize) -> ReplayBuffer<AnySampler> {
        let storage = RingStorage::for_n_step(capacity, 1, 1, n_step).unwrap();
        ReplayBuffer::new(storage, ReturnWeighted::new(capacity).into(), 0).unwrap()
    }

    fn score(replay: &ReplayBuffer<AnySampler>, slot: usize) -> Option<f64> {
        match replay.sampler() {
            AnySampler::ReturnWeighted(s) => s.score(slot),
            _ => unreachable!(),
        }
    }

    #[test]
    fn scores_are_the_return_so_far_then_the_episode_return() {
        let mut replay = return_weighted(16, 1);
        let mut w = EpisodeWriter::new(&replay, 2, 1, 0.99).unwrap();
        // env 0: rewards 1, 2, then 3 ending the episode; env 1: 10 (still running).
        w.push(0, &step(&[0.0], 1.0, (false, false)), &mut replay)
            .unwrap(); // slot 0
        w.push(1, &step(&[1.0], 10.0, (false, false)), &mut replay)
            .unwrap(); // slot 1
        w.push(0, &step(&[2.0], 2.0, (false, false)), &mut replay)
            .unwrap(); // slot 2
        assert_eq!(
            (score(&replay, 0), score(&replay, 2)),
            (Some(1.0), Some(3.0))
        );
        w.push(0, &step(&[3.0], 3.0, (true, false)), &mut replay)
            .unwrap(); // slot 3
        for slot in [0, 2, 3] {
            assert_eq!(score(&replay, slot), Some(6.0), "slot {slot}");
        }
        assert_eq!(
            score(&replay, 1),
            Some(10.0),
            "the other env's episode is open"
        );
        // A new episode of env 0 starts from zero.
        w.push(0, &step(&[4.0], -1.0, (false, true)), &mut replay)
            .unwrap(); // slot 4
        assert_eq!(score(&replay, 4), Some(-1.0));
    }

    #[test]
    fn evicted_transitions_keep_the_newcomers_score() {
        // Capacity 3: env 1's episode overwrites a slot of env 0's still-open episode.
        let mut replay = return_weighted(3, 1);
        let mut w = EpisodeWriter::new(&replay, 2, 1, 0.99).unwrap();
        w.push(0, &step(&[0.0], 1.0, (false, false)), &mut replay)
            .unwrap(); // slot 0
        w.push(0, &step(&[1.0], 1.0, (false, false)), &mut replay)
            .unwrap(); // slot 1
        w.push(1, &step(&[2.0], -50.0, (false, false)), &mut replay)
            .unwrap(); // slot 2
        w.push(1, &step(&[3.0], -50.0, (true, false)), &mut replay)
            .unwrap(); // slot 0
        w.push(0, &step(&[4.0], 1.0, (true, false)), &mut replay)
            .unwrap(); // slot 1
        // env 0's episode (return 3) rescored only its transition still stored.
        assert_eq!(score(&replay, 0), Some(-100.0));
        assert_eq!(score(&replay, 1), Some(3.0));
        assert_eq!(score(&replay, 2), Some(-100.0));
        let AnySampler::ReturnWeighted(s) = replay.sampler() else {
            unreachable!()
        };
        assert_eq!(
            s.shift(),
            100.0,
            "shift by the exact minimum of what is stored"
        );
    }
}
