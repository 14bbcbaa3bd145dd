//! The replay side of the off-policy trainer: a serde `[replay]` section that builds any of
//! the library's samplers (n-step transitions with their discount column included).
//!
//! The writer and the scores of return-weighted replay are
//! [`emberlab_replay::EpisodeWriter`]'s.

use crate::config::{Validate, check_positive, check_range};
use emberlab_core::{Error, Result};
use emberlab_replay::{AnySampler, FrameReplay, FrameStorage, ReplayBuffer, RingStorage};
use serde::{Deserialize, Serialize};

pub use emberlab_replay::DISCOUNT_COLUMN;

/// Which sampler a [`ReplayConfig`] builds.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum ReplayKind {
    /// Uniform, with replacement (SB3's buffer).
    #[default]
    Uniform,
    /// Proportional prioritized replay (α, β annealed to 1, ε), priorities `|TD error|`.
    Prioritized,
    /// Return-weighted without replacement (scores: [`emberlab_replay::EpisodeWriter`]).
    ReturnWeighted,
}

impl ReplayKind {
    /// The name a config file uses (`uniform`, `prioritized`, `return_weighted`).
    pub fn as_str(self) -> &'static str {
        match self {
            ReplayKind::Uniform => "uniform",
            ReplayKind::Prioritized => "prioritized",
            ReplayKind::ReturnWeighted => "return_weighted",
        }
    }
}

impl std::str::FromStr for ReplayKind {
    type Err = Error;

    /// `uniform`, `prioritized` or `return_weighted` (as in a config file).
    fn from_str(s: &str) -> Result<Self> {
        match s {
            "uniform" => Ok(ReplayKind::Uniform),
            "prioritized" => Ok(ReplayKind::Prioritized),
            "return_weighted" => Ok(ReplayKind::ReturnWeighted),
            other => Err(Error::invalid(
                "replay kind",
                other,
                "uniform, prioritized or return_weighted",
            )),
        }
    }
}

/// The `[replay]` section of an off-policy config.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
pub struct ReplayConfig {
    /// Sampler: `uniform`, `prioritized` or `return_weighted`.
    pub kind: ReplayKind,
    /// Capacity in transitions.
    pub capacity: usize,
    /// Steps per stored transition (1: one-step transitions).
    pub n_step: usize,
    /// Discount of n-step returns; `None` takes the learner's γ (an explicit value must
    /// equal it).
    pub gamma: Option<f64>,
    /// Prioritized: how much priorities matter (`>= 0`).
    pub alpha: f64,
    /// Prioritized: the importance-weight exponent at the start, annealed to 1 over the
    /// training call.
    pub beta: f64,
    /// Prioritized: added to every priority (`> 0` keeps every transition drawable).
    pub eps: f64,
}

impl Default for ReplayConfig {
    fn default() -> Self {
        ReplayConfig {
            kind: ReplayKind::Uniform,
            capacity: 1_000_000,
            n_step: 1,
            gamma: None,
            alpha: 0.6,
            beta: 0.4,
            eps: 1e-6,
        }
    }
}

impl Validate for ReplayConfig {
    fn validate(&self) -> Result<()> {
        check_positive("replay.capacity", self.capacity)?;
        check_positive("replay.n_step", self.n_step)?;
        if let Some(g) = self.gamma {
            check_range("replay.gamma", g, 0.0, 1.0)?;
        }
        check_range("replay.alpha", self.alpha, 0.0, 1e3)?;
        check_range("replay.beta", self.beta, 0.0, 1.0)?;
        check_range("replay.eps", self.eps, 0.0, 1e3)
    }
}

impl ReplayConfig {
    /// A buffer for transitions of the given widths (with the n-step discount column when
    /// `n_step > 1`), its generator seeded with `seed`.
    ///
    /// # Errors
    /// A config value out of range, or a buffer too large to allocate.
    pub fn build(
        &self,
        obs_dim: usize,
        act_dim: usize,
        seed: u64,
    ) -> Result<ReplayBuffer<AnySampler>> {
        self.validate()?;
        let storage = RingStorage::for_n_step(self.capacity, obs_dim, act_dim, self.n_step)?;
        let sampler = self.sampler()?;
        ReplayBuffer::new(storage, sampler, seed)
    }

    /// The sampler this config names, of its capacity.
    fn sampler(&self) -> Result<AnySampler> {
        AnySampler::named(
            self.kind.as_str(),
            self.capacity,
            self.alpha,
            self.beta,
            self.eps,
        )
    }

    /// The frame replay this config describes (each frame stored once, n-step returns
    /// walked at gather time) for stacks of `stack` frames of `frame_len` bytes from
    /// `num_envs` environments, discrete actions (one value each), returns discounted by
    /// `self.gamma` or else `gamma` (the learner's), the sampler seeded with `seed`.
    ///
    /// # Errors
    /// An invalid config, or [`FrameStorage::new`]'s (a capacity below
    /// `num_envs · (stack + n_step + 1)`, or one the allocator refuses).
    pub fn build_frames(
        &self,
        frame_len: usize,
        stack: usize,
        num_envs: usize,
        gamma: f64,
        seed: u64,
    ) -> Result<FrameReplay<AnySampler>> {
        self.validate()?;
        let gamma = self.gamma.unwrap_or(gamma);
        let storage = FrameStorage::new(
            self.capacity,
            frame_len,
            stack,
            1,
            num_envs,
            self.n_step,
            gamma,
        )?;
        let sampler = self.sampler()?;
        FrameReplay::new(storage, sampler, seed)
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use emberlab_core::{Batch, Transition};
    use emberlab_replay::{EpisodeWriter, Sampler};

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

    #[test]
    fn frame_replay_follows_the_config() {
        let config = ReplayConfig {
            kind: ReplayKind::Prioritized,
            capacity: 100,
            n_step: 3,
            ..ReplayConfig::default()
        };
        let replay = config.build_frames(16, 4, 2, 0.9, 1).unwrap();
        let storage = replay.storage();
        assert_eq!(
            (storage.capacity(), storage.frame_len(), storage.stack()),
            (100, 16, 4)
        );
        assert_eq!((storage.num_envs(), storage.n_step()), (2, 3));
        assert_eq!(
            storage.gamma(),
            0.9,
            "the learner's gamma where the config has none"
        );
        assert!(replay.sampler().uses_priorities());
        let own = ReplayConfig {
            gamma: Some(0.5),
            ..config.clone()
        };
        assert_eq!(
            own.build_frames(16, 4, 2, 0.9, 1)
                .unwrap()
                .storage()
                .gamma(),
            0.5
        );
        // 2 envs × (4 + 3 + 1) = 16 slots at least.
        let small = ReplayConfig {
            capacity: 15,
            ..config
        };
        assert!(small.build_frames(16, 4, 2, 0.9, 1).is_err());
    }

    #[test]
    fn n_step_transitions_carry_their_discount_with_every_sampler() {
        for kind in [
            ReplayKind::Uniform,
            ReplayKind::Prioritized,
            ReplayKind::ReturnWeighted,
        ] {
            let config = ReplayConfig {
                kind,
                capacity: 32,
                n_step: 3,
                ..ReplayConfig::default()
            };
            let mut replay = config.build(1, 1, 0).unwrap();
            let mut w = EpisodeWriter::new(&replay, 1, 3, 0.5).unwrap();
            // One episode of 4 steps with reward 1, terminated: windows of 3, 3, 2, 1.
            for i in 0..4 {
                let obs = [i as f32];
                w.push(0, &step(&obs, 1.0, (i == 3, false)), &mut replay)
                    .unwrap();
            }
            assert_eq!(replay.len(), 4, "{kind:?}");
            let mut batch = Batch::default();
            let mut seen = Vec::new();
            for _ in 0..64 {
                replay.sample(1, &mut batch).unwrap();
                seen.push((batch.obs[0], batch.reward[0], batch.extras[0][0]));
            }
            for (obs, reward, discount) in seen {
                let (r, d) = match obs as usize {
                    0 => (1.75, 0.125),
                    1 => (1.75, 0.125),
                    2 => (1.5, 0.25),
                    _ => (1.0, 0.5),
                };
                assert_eq!((reward, discount), (r, d), "{kind:?} obs {obs}");
            }
        }
    }

    #[test]
    fn buffers_without_the_discount_column_are_refused_for_n_step() {
        let one_step = ReplayConfig::default().build(1, 1, 0).unwrap();
        let e = EpisodeWriter::new(&one_step, 1, 3, 0.9)
            .err()
            .unwrap()
            .to_string();
        assert!(e.contains("discount") && e.contains("n_step = 3"), "{e}");
        assert!("prioritised".parse::<ReplayKind>().is_err());
        assert_eq!(
            "return_weighted".parse::<ReplayKind>().unwrap(),
            ReplayKind::ReturnWeighted
        );
    }
}
