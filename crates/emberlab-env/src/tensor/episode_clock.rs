//! [`EpisodeClock`]: the time limit and Gymnasium's next-step autoreset for `B` copies of
//! an environment, kept as tensors on the device.

use burn::tensor::{Bool, Device, Tensor};

/// Per-copy episode lengths and "reset me at the next step" flags, as `[B]` tensors.
///
/// Shared by the tensor environments: each step asks [`EpisodeClock::resetting`] which
/// copies start afresh (their episode ended at the previous step), steps the dynamics,
/// then calls [`EpisodeClock::advance`] with the terminal flags to get the flags it
/// reports and to arm the next step's resets.
#[derive(Clone, Debug)]
pub(crate) struct EpisodeClock {
    max_episode_steps: u32,
    /// Steps taken in the current episode, as `f32` (exact up to 2²⁴).
    elapsed: Tensor<1>,
    /// Copies whose episode ended at the last step.
    autoreset: Tensor<1, Bool>,
    /// All false, for environments that never terminate.
    never: Tensor<1, Bool>,
}

impl EpisodeClock {
    /// `num_envs` copies at the start of an episode, truncated after `max_episode_steps`.
    pub(crate) fn new(num_envs: usize, max_episode_steps: u32, device: &Device) -> Self {
        let never = Tensor::<1>::zeros([num_envs], device).greater_elem(0.0);
        EpisodeClock {
            max_episode_steps,
            elapsed: Tensor::zeros([num_envs], device),
            autoreset: never.clone(),
            never,
        }
    }

    /// The time limit.
    pub(crate) fn max_episode_steps(&self) -> u32 {
        self.max_episode_steps
    }

    /// Changes the time limit (the caller checks it is ≥ 1).
    pub(crate) fn set_max_episode_steps(&mut self, steps: u32) {
        self.max_episode_steps = steps;
    }

    /// Puts every copy at the start of an episode.
    pub(crate) fn restart(&mut self) {
        self.elapsed = self.elapsed.zeros_like();
        self.autoreset = self.never.clone();
    }

    /// The copies that reset at this step instead of stepping `[B]`.
    pub(crate) fn resetting(&self) -> Tensor<1, Bool> {
        self.autoreset.clone()
    }

    /// Counts one step (a resetting copy starts again at 0) and returns the reported
    /// `(terminated, truncated)` flags `[B]`: `terminated` as computed by the dynamics
    /// (`None` for an environment that never terminates), `truncated` where the episode
    /// reached the time limit, both false for resetting copies. Copies with either flag
    /// reset at the next step.
    pub(crate) fn advance(
        &mut self,
        resetting: Tensor<1, Bool>,
        terminated: Option<Tensor<1, Bool>>,
    ) -> (Tensor<1, Bool>, Tensor<1, Bool>) {
        let elapsed = self
            .elapsed
            .clone()
            .add_scalar(1.0)
            .mask_fill(resetting.clone(), 0.0);
        let truncated = elapsed
            .clone()
            .greater_equal_elem(self.max_episode_steps as f32);
        // A resetting copy's count is 0 < max_episode_steps: never truncated.
        self.elapsed = elapsed;
        match terminated {
            Some(terminated) => {
                let terminated = terminated.bool_and(resetting.bool_not());
                self.autoreset = terminated.clone().bool_or(truncated.clone());
                (terminated, truncated)
            }
            None => {
                self.autoreset = truncated.clone();
                (self.never.clone(), truncated)
            }
        }
    }
}
