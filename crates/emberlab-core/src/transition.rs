//! One transition, and a batch of them laid out as contiguous columns.

use crate::error::{Error, Result};

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
    /// `[len]` bootstrap discounts `γ^m` of n-step transitions, or empty when every row
    /// bootstraps with the learner's own `γ` (one-step transitions).
    pub discount: Vec<f32>,
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
            discount: Vec::new(),
        }
    }

    /// Checks that this batch fits a learner of the given widths: every column holds `len`
    /// rows of its width, masks are `0.0`/`1.0`, weights (if any) are finite and `>= 0`,
    /// discounts (if any) lie in `[0, 1]`, and observations, actions and rewards are
    /// finite. The error names the offending field (and row).
    ///
    /// # Errors
    /// [`Error::Shape`] for a width or length mismatch, [`Error::NonFinite`] for a NaN or
    /// infinity, [`Error::InvalidArgument`] for a value out of range.
    pub fn check(&self, obs_dim: usize, act_dim: usize) -> Result<()> {
        if self.len == 0 {
            return Err(Error::invalid("batch.len", 0, ">= 1"));
        }
        Error::check_len("batch.obs_dim", obs_dim, self.obs_dim)?;
        Error::check_len("batch.act_dim", act_dim, self.act_dim)?;
        let n = self.len;
        Error::check_len("batch.obs (len × obs_dim)", n * obs_dim, self.obs.len())?;
        Error::check_len(
            "batch.next_obs (len × obs_dim)",
            n * obs_dim,
            self.next_obs.len(),
        )?;
        Error::check_len(
            "batch.action (len × act_dim)",
            n * act_dim,
            self.action.len(),
        )?;
        Error::check_len("batch.reward", n, self.reward.len())?;
        Error::check_len("batch.terminated", n, self.terminated.len())?;
        if !self.truncated.is_empty() {
            Error::check_len("batch.truncated", n, self.truncated.len())?;
        }
        if !self.weights.is_empty() {
            Error::check_len("batch.weights", n, self.weights.len())?;
        }
        if !self.discount.is_empty() {
            Error::check_len("batch.discount", n, self.discount.len())?;
        }
        Error::check_finite_rows("batch.obs", &self.obs, obs_dim)?;
        Error::check_finite_rows("batch.next_obs", &self.next_obs, obs_dim)?;
        Error::check_finite_rows("batch.action", &self.action, act_dim)?;
        Error::check_finite_rows("batch.reward", &self.reward, 1)?;
        for (name, col) in [
            ("batch.terminated", &self.terminated),
            ("batch.truncated", &self.truncated),
        ] {
            if let Some(i) = col.iter().position(|&m| m != 0.0 && m != 1.0) {
                return Err(Error::invalid(format!("{name}[{i}]"), col[i], "0 or 1"));
            }
        }
        if let Some(i) = self
            .weights
            .iter()
            .position(|&w| !(w >= 0.0 && w.is_finite()))
        {
            return Err(Error::invalid(
                format!("batch.weights[{i}]"),
                self.weights[i],
                "a finite number >= 0",
            ));
        }
        if let Some(i) = self
            .discount
            .iter()
            .position(|&d| !(0.0..=1.0).contains(&d))
        {
            return Err(Error::invalid(
                format!("batch.discount[{i}]"),
                self.discount[i],
                "a number in [0, 1]",
            ));
        }
        Ok(())
    }

    /// Whether every importance weight is `1.0` (or there are none): the losses need no
    /// weighting.
    pub fn unweighted(&self) -> bool {
        self.weights.iter().all(|&w| w == 1.0)
    }

    /// Each row's bootstrap discount: `gamma`, or the row's own `γ^m` when the batch
    /// carries discounts (n-step transitions).
    pub fn discounts(&self, gamma: f64) -> std::borrow::Cow<'_, [f32]> {
        match self.discount.is_empty() {
            true => vec![gamma as f32; self.len].into(),
            false => self.discount.as_slice().into(),
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

#[cfg(test)]
mod tests {
    use super::*;

    fn batch() -> Batch {
        Batch {
            len: 2,
            obs_dim: 2,
            act_dim: 1,
            obs: vec![0.0; 4],
            action: vec![1.0, 0.0],
            reward: vec![1.0, 2.0],
            next_obs: vec![0.0; 4],
            terminated: vec![0.0, 1.0],
            truncated: vec![0.0, 0.0],
            weights: vec![1.0, 0.5],
            ..Batch::default()
        }
    }

    #[test]
    fn check_names_the_offending_field() {
        assert!(batch().check(2, 1).is_ok());
        type Spoil = fn(&mut Batch);
        let cases: [(Spoil, &str); 7] = [
            (|b| b.obs.pop().map(drop).unwrap_or(()), "batch.obs"),
            (|b| b.reward.push(0.0), "batch.reward"),
            (|b| b.next_obs[3] = f32::NAN, "batch.next_obs[row 1]"),
            (|b| b.terminated[0] = 0.5, "batch.terminated[0]"),
            (|b| b.weights[1] = -1.0, "batch.weights[1]"),
            (|b| b.discount = vec![0.9, 1.5], "batch.discount[1]"),
            (|b| b.len = 0, "batch.len"),
        ];
        for (spoil, field) in cases {
            let mut b = batch();
            spoil(&mut b);
            let e = b.check(2, 1).unwrap_err().to_string();
            assert!(e.contains(field), "{field}: {e}");
        }
        let e = batch().check(3, 1).unwrap_err().to_string();
        assert!(e.contains("batch.obs_dim"), "{e}");
        assert!(!batch().unweighted());
        assert!(Batch::default().unweighted());
    }
}
