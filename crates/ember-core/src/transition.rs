//! One transition, and a batch of them laid out as contiguous columns.

/// One environment transition, borrowed from the caller (nothing is copied until it is
/// stored). Discrete actions are stored as one `f32` (exact below 2^24).
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Transition<'a> {
    /// Observation before the step.
    pub obs: &'a [f32],
    /// Action taken.
    pub action: &'a [f32],
    /// Reward received.
    pub reward: f32,
    /// Observation after the step (the final observation if the episode ended).
    pub next_obs: &'a [f32],
    /// The step reached a terminal MDP state.
    pub terminated: bool,
    /// The episode was cut short after this step.
    pub truncated: bool,
}

/// A batch of `len` transitions as row-major columns, ready to become tensors:
/// `obs` is `[len, obs_dim]`, `action` `[len, act_dim]`, masks are `0.0`/`1.0`.
/// Samplers fill it in place and reuse its allocations.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct Batch {
    /// Number of rows.
    pub len: usize,
    /// Observation width.
    pub obs_dim: usize,
    /// Action width.
    pub act_dim: usize,
    /// `[len, obs_dim]` observations.
    pub obs: Vec<f32>,
    /// `[len, act_dim]` actions.
    pub action: Vec<f32>,
    /// `[len]` rewards.
    pub reward: Vec<f32>,
    /// `[len, obs_dim]` next observations.
    pub next_obs: Vec<f32>,
    /// `[len]` terminated masks (1.0 = terminal).
    pub terminated: Vec<f32>,
    /// `[len]` truncated masks (1.0 = cut short).
    pub truncated: Vec<f32>,
    /// Extra user columns, each `[len, width]`, in the storage's column order.
    pub extras: Vec<Vec<f32>>,
    /// `[len]` storage slots the rows came from (for priority updates).
    pub indices: Vec<usize>,
    /// `[len]` importance-sampling weights (1.0 when the sampler is unbiased).
    pub weights: Vec<f32>,
}

impl Batch {
    /// An empty batch with room for `capacity` rows of the given widths.
    pub fn with_capacity(obs_dim: usize, act_dim: usize, capacity: usize) -> Self {
        Batch {
            len: 0,
            obs_dim,
            act_dim,
            obs: Vec::with_capacity(capacity * obs_dim),
            action: Vec::with_capacity(capacity * act_dim),
            reward: Vec::with_capacity(capacity),
            next_obs: Vec::with_capacity(capacity * obs_dim),
            terminated: Vec::with_capacity(capacity),
            truncated: Vec::with_capacity(capacity),
            extras: Vec::new(),
            indices: Vec::with_capacity(capacity),
            weights: Vec::with_capacity(capacity),
        }
    }

    /// Row `i` of the observations.
    pub fn obs_row(&self, i: usize) -> &[f32] {
        &self.obs[i * self.obs_dim..(i + 1) * self.obs_dim]
    }

    /// Row `i` of the next observations.
    pub fn next_obs_row(&self, i: usize) -> &[f32] {
        &self.next_obs[i * self.obs_dim..(i + 1) * self.obs_dim]
    }

    /// Row `i` of the actions.
    pub fn action_row(&self, i: usize) -> &[f32] {
        &self.action[i * self.act_dim..(i + 1) * self.act_dim]
    }
}
