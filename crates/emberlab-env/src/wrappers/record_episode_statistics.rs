//! [`RecordEpisodeStatistics`]: episode returns, lengths and durations.

use emberlab_core::{Action, Env, Error, Result, Space, StepInfo};
use std::collections::VecDeque;
use std::time::{Duration, Instant};

/// What one finished episode amounted to (Gymnasium's `info["episode"]`).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct EpisodeStatistics {
    /// Sum of the episode's rewards (`r`).
    pub episode_return: f64,
    /// Number of steps (`l`).
    pub length: u32,
    /// Wall-clock time from the reset to the last step (`t`).
    pub duration: Duration,
}

/// Gymnasium's `RecordEpisodeStatistics`: accumulates the return and length of the running
/// episode; when an episode ends (terminated or truncated) its statistics are reported by
/// [`RecordEpisodeStatistics::finished_episode`] until the next step or reset, and kept in a
/// queue of the last `buffer_length` episodes.
///
/// ```
/// use emberlab_core::{Action, Env};
/// use emberlab_env::{CartPole, RecordEpisodeStatistics};
///
/// let mut env = RecordEpisodeStatistics::new(CartPole::new());
/// env.reset(Some(0))?;
/// while !env.step(Action::Discrete(1))?.terminated {}
/// let ep = env.finished_episode().unwrap();
/// assert_eq!(ep.episode_return, ep.length as f64);
/// # Ok::<(), emberlab_core::Error>(())
/// ```
#[derive(Clone, Debug)]
pub struct RecordEpisodeStatistics<E> {
    env: E,
    episode_return: f64,
    episode_length: u32,
    episode_start: Instant,
    episode_count: u64,
    finished: Option<EpisodeStatistics>,
    queue: VecDeque<EpisodeStatistics>,
    buffer_length: usize,
}

impl<E: Env> RecordEpisodeStatistics<E> {
    /// Wraps `env`, keeping the last 100 episodes (Gymnasium's default).
    pub fn new(env: E) -> Self {
        Self::with_buffer_length(env, 100).expect("100 > 0")
    }

    /// Wraps `env`, keeping the last `buffer_length` (≥ 1) episodes.
    pub fn with_buffer_length(env: E, buffer_length: usize) -> Result<Self> {
        if buffer_length == 0 {
            return Err(Error::invalid("buffer_length", 0, ">= 1"));
        }
        Ok(RecordEpisodeStatistics {
            env,
            episode_return: 0.0,
            episode_length: 0,
            episode_start: Instant::now(),
            episode_count: 0,
            finished: None,
            queue: VecDeque::with_capacity(buffer_length),
            buffer_length,
        })
    }

    /// The statistics of the episode the last step ended, if it ended one.
    pub fn finished_episode(&self) -> Option<&EpisodeStatistics> {
        self.finished.as_ref()
    }

    /// The last `buffer_length` finished episodes, oldest first.
    pub fn episodes(&self) -> &VecDeque<EpisodeStatistics> {
        &self.queue
    }

    /// Number of episodes finished since the wrapper was made.
    pub fn episode_count(&self) -> u64 {
        self.episode_count
    }

    /// Return of the running episode so far.
    pub fn episode_return(&self) -> f64 {
        self.episode_return
    }

    /// Length of the running episode so far.
    pub fn episode_length(&self) -> u32 {
        self.episode_length
    }

    /// The wrapped environment.
    pub fn inner(&self) -> &E {
        &self.env
    }

    /// The wrapped environment, mutably.
    pub fn inner_mut(&mut self) -> &mut E {
        &mut self.env
    }
}

impl<E: Env> Env for RecordEpisodeStatistics<E> {
    fn save_state(&self, out: &mut emberlab_core::state::StateWriter) -> Result<()> {
        self.env.save_state(out)?;
        out.f64(self.episode_return)
            .u64(u64::from(self.episode_length))
            .u64(self.episode_count);
        Ok(())
    }

    fn load_state(&mut self, src: &mut emberlab_core::state::StateReader<'_>) -> Result<()> {
        self.env.load_state(src)?;
        self.episode_return = src.f64()?;
        let length = src.u64()?;
        self.episode_length = u32::try_from(length)
            .map_err(|_| Error::invalid("episode statistics snapshot: length", length, "a u32"))?;
        self.episode_count = src.u64()?;
        Ok(())
    }

    fn observation_space(&self) -> &Space {
        self.env.observation_space()
    }

    fn action_space(&self) -> &Space {
        self.env.action_space()
    }

    fn reset_into(&mut self, seed: Option<u64>, obs: &mut [f32]) -> Result<()> {
        self.env.reset_into(seed, obs)?;
        self.episode_start = Instant::now();
        self.episode_return = 0.0;
        self.episode_length = 0;
        self.finished = None;
        Ok(())
    }

    fn step_into(&mut self, action: Action<'_>, obs: &mut [f32]) -> Result<StepInfo> {
        let info = self.env.step_into(action, obs)?;
        self.episode_return += info.reward;
        self.episode_length += 1;
        self.finished = None;
        if info.terminated || info.truncated {
            let now = Instant::now();
            let stats = EpisodeStatistics {
                episode_return: self.episode_return,
                length: self.episode_length,
                duration: now - self.episode_start,
            };
            if self.queue.len() == self.buffer_length {
                self.queue.pop_front();
            }
            self.queue.push_back(stats);
            self.finished = Some(stats);
            self.episode_count += 1;
            self.episode_start = now;
        }
        Ok(info)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{Pendulum, TimeLimit};

    #[test]
    fn records_returns_lengths_and_keeps_a_bounded_queue() {
        assert!(RecordEpisodeStatistics::with_buffer_length(Pendulum::new(), 0).is_err());
        let env = TimeLimit::new(Pendulum::new(), 5).unwrap();
        let mut env = RecordEpisodeStatistics::with_buffer_length(env, 2).unwrap();
        for ep in 0..3 {
            env.reset(Some(ep)).unwrap();
            let mut sum = 0.0;
            for t in 0..5 {
                let s = env.step(Action::Continuous(&[0.5])).unwrap();
                sum += s.reward;
                assert_eq!(env.finished_episode().is_some(), t == 4);
            }
            let fin = *env.finished_episode().unwrap();
            assert_eq!(fin.length, 5);
            assert_eq!(fin.episode_return, sum);
            assert!(sum < 0.0);
        }
        assert_eq!(env.episode_count(), 3);
        assert_eq!(env.episodes().len(), 2);
        env.reset(None).unwrap();
        assert!(env.finished_episode().is_none());
        assert_eq!((env.episode_return(), env.episode_length()), (0.0, 0));
    }
}
