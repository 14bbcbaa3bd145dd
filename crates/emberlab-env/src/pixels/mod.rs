//! Image environments: [`FrameEnv`] (one environment whose observations are `u8` frames),
//! [`FrameVecEnv`] (several of them stepped together, their frames stacked as
//! Stable-Baselines3's `VecFrameStack` stacks them), [`FrameStack`] and [`Catch`], a small
//! image task that trains in seconds.
//!
//! Image observations travel as bytes: an environment hands out its newest frame only, the
//! stack is built once beside it, and frame replay stores each frame once
//! (`emberlab_replay::FrameReplay`). Vector observations keep [`crate::VecEnv`]'s `f32` path
//! untouched.

mod catch;
mod frame_stack;
mod frame_vec;

pub use catch::Catch;
pub use frame_stack::FrameStack;
pub use frame_vec::{FrameVecEnv, FrameVecStep};

use emberlab_core::Result;

/// What a step of a [`FrameEnv`] returned (the new frame is [`FrameEnv::frame`]).
/// [`FrameStep::new`] fills the fields a plain environment needs.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct FrameStep {
    /// The reward to learn from (Atari: clipped to its sign).
    pub reward: f32,
    /// What the game's score counts of the step: training returns and evaluations sum it
    /// (Atari: the unclipped reward; otherwise the reward).
    pub score: f32,
    /// The episode ended in a terminal state (for Atari with life loss: a life was lost).
    pub terminated: bool,
    /// The episode was cut short (a time or frame budget).
    pub truncated: bool,
    /// The episode ended with a lost life only: the game goes on after the reset, and its
    /// score keeps counting (Atari's episodic life). False for environments without lives.
    pub life_lost: bool,
}

impl FrameStep {
    /// A step of an environment without lives: the score is the reward.
    pub fn new(reward: f32, terminated: bool, truncated: bool) -> Self {
        FrameStep {
            reward,
            score: reward,
            terminated,
            truncated,
            life_lost: false,
        }
    }

    /// Whether the game is over: the episode ended, and not by a lost life only.
    pub fn game_over(&self) -> bool {
        (self.terminated || self.truncated) && !self.life_lost
    }
}

/// One environment whose observations are `u8` frames `[channels, height, width]`
/// (row-major, channels first) and whose actions are indices `0..actions()`.
///
/// After an episode's end ([`FrameStep::terminated`] or [`FrameStep::truncated`]) the next
/// call must be a reset.
pub trait FrameEnv: Send {
    /// `[channels, height, width]` of a frame.
    fn frame_shape(&self) -> [usize; 3];

    /// Number of actions.
    fn actions(&self) -> usize;

    /// Starts an episode (seeding the environment when `seed` is given); returns the first
    /// frame. After a lost life ([`FrameStep::life_lost`]) an environment with lives goes on
    /// with the same game, and may ignore `seed` then (`AtariEnv` does, as SB3's wrappers).
    ///
    /// # Errors
    /// The environment's own (a dead worker process, for example).
    fn reset(&mut self, seed: Option<u64>) -> Result<&[u8]>;

    /// Steps with `action`; the new frame is [`FrameEnv::frame`].
    ///
    /// # Errors
    /// An action outside `0..actions()`, a step without a reset, or the environment's own.
    fn step(&mut self, action: usize) -> Result<FrameStep>;

    /// The newest frame.
    fn frame(&self) -> &[u8];

    /// Sends a step with `action` to where the environment runs (a worker process) without
    /// waiting for it, and returns `true`; [`FrameEnv::receive_step`] then gives its result.
    /// A [`FrameVecEnv`] sends every environment's step before it receives any, so that
    /// environments stepping elsewhere step side by side. `false` (the default): nothing
    /// was sent, and the environment steps in [`FrameEnv::step`].
    ///
    /// # Errors
    /// As [`FrameEnv::step`].
    fn send_step(&mut self, action: usize) -> Result<bool> {
        let _ = action;
        Ok(false)
    }

    /// The result of the step [`FrameEnv::send_step`] sent; the new frame is
    /// [`FrameEnv::frame`].
    ///
    /// # Errors
    /// No step sent (the default, for environments that step in [`FrameEnv::step`]), or as
    /// [`FrameEnv::step`].
    fn receive_step(&mut self) -> Result<FrameStep> {
        Err(emberlab_core::Error::invalid(
            "frame env receive_step",
            "no step sent",
            "a send_step that returned true first",
        ))
    }

    /// What the environment shows a person now, when it draws more than its frames (Atari:
    /// the emulator's RGB screen): RGB bytes, row-major, and `[height, width]`. `None`
    /// (the default): its frames are the picture.
    ///
    /// # Errors
    /// The environment's own (a dead worker process, for example).
    fn screen(&mut self) -> Result<Option<(Vec<u8>, [usize; 2])>> {
        Ok(None)
    }
}

/// Makes a fresh [`FrameEnv`] on each call (the trainers' evaluation environments). Any
/// `Fn() -> Result<Box<dyn FrameEnv>> + Send + Sync` closure is one.
pub trait FrameEnvFactory: Send + Sync {
    /// A new environment, not yet reset.
    ///
    /// # Errors
    /// Whatever building the environment can fail with.
    fn make(&self) -> Result<Box<dyn FrameEnv>>;
}

impl<F: Fn() -> Result<Box<dyn FrameEnv>> + Send + Sync> FrameEnvFactory for F {
    fn make(&self) -> Result<Box<dyn FrameEnv>> {
        self()
    }
}

/// Whether `id` names an Atari game as Gymnasium does (`ALE/Pong-v5`,
/// `PongNoFrameskip-v4`): the ids [`crate::FrameVecEnv`] trainers run through `AtariEnv`
/// (cargo feature `gym`).
pub fn is_atari_id(id: &str) -> bool {
    let game = |name: &str| !name.is_empty() && name.chars().all(|c| c.is_ascii_alphanumeric());
    match id.strip_prefix("ALE/") {
        Some(rest) => rest.rsplit_once("-v").is_some_and(|(name, v)| {
            game(name) && !v.is_empty() && v.chars().all(|c| c.is_ascii_digit())
        }),
        None => id.strip_suffix("NoFrameskip-v4").is_some_and(game),
    }
}

/// The number of bytes of a frame of `shape`.
pub(crate) fn frame_len(shape: [usize; 3]) -> usize {
    shape.iter().product()
}

#[cfg(test)]
mod tests {
    #[test]
    fn atari_ids_are_recognised() {
        for id in [
            "ALE/Pong-v5",
            "ALE/Breakout-v5",
            "PongNoFrameskip-v4",
            "ALE/MsPacman-v5",
        ] {
            assert!(super::is_atari_id(id), "{id}");
        }
        for id in [
            "CartPole-v1",
            "ALE/-v5",
            "NoFrameskip-v4",
            "gym:ALE/Pong-v5",
            "ALE/Pong",
            "ALE/Pong-v",
            "ALE/Pong-vX",
        ] {
            assert!(!super::is_atari_id(id), "{id}");
        }
    }
}
