//! Discounted returns and generalised advantage estimation on host slices, for rollouts
//! laid out time-major: index `t * envs + e` is step `t` of environment `e`.
//!
//! Episode ends follow Gymnasium: after `terminated` the value of the next state is 0;
//! after `truncated` (time limit) the next state's value must still be bootstrapped, so the
//! caller passes `V(final obs)` for that step in `next_values`.

use emberlab_core::{Error, Result};

/// The inputs of a rollout of `steps × envs` transitions.
#[derive(Clone, Copy, Debug)]
pub struct Rollout<'a> {
    /// Number of parallel environments.
    pub envs: usize,
    /// `[steps * envs]` rewards.
    pub rewards: &'a [f32],
    /// `[steps * envs]` 1.0 where the step terminated the episode.
    pub terminated: &'a [f32],
    /// `[steps * envs]` 1.0 where the step truncated the episode.
    pub truncated: &'a [f32],
    /// `[steps * envs]` `V(s_{t+1})` for every step (for a truncated step: the value of its
    /// final observation; for the last step: the bootstrap value).
    pub next_values: &'a [f32],
}

impl Rollout<'_> {
    fn check(&self) -> Result<usize> {
        if self.envs == 0 {
            return Err(Error::invalid("envs", 0, ">= 1"));
        }
        let n = self.rewards.len();
        if !n.is_multiple_of(self.envs) {
            return Err(Error::invalid(
                "rollout length",
                n,
                format!("a multiple of envs = {}", self.envs),
            ));
        }
        Error::check_len("terminated", n, self.terminated.len())?;
        Error::check_len("truncated", n, self.truncated.len())?;
        Error::check_len("next_values", n, self.next_values.len())?;
        Ok(n / self.envs)
    }
}

/// Discounted returns `G_t = r_t + γ (1 − term_t) [trunc_t V(s_{t+1}) + (1 − trunc_t) G_{t+1}]`,
/// with `G_T` bootstrapped from `next_values` of the last step.
pub fn discounted_returns(r: &Rollout<'_>, gamma: f32) -> Result<Vec<f32>> {
    let steps = r.check()?;
    let e = r.envs;
    let mut out = vec![0.0; steps * e];
    for env in 0..e {
        let mut next_return = 0.0;
        for t in (0..steps).rev() {
            let i = t * e + env;
            let cont = 1.0 - r.terminated[i];
            let boot = if t + 1 == steps || r.truncated[i] > 0.0 {
                r.next_values[i]
            } else {
                next_return
            };
            out[i] = r.rewards[i] + gamma * cont * boot;
            next_return = out[i];
        }
    }
    Ok(out)
}

/// GAE(λ): `δ_t = r_t + γ (1 − term_t) V(s_{t+1}) − V(s_t)`,
/// `Â_t = δ_t + γ λ (1 − term_t)(1 − trunc_t) Â_{t+1}`; returns `(advantages, returns)` with
/// `returns = Â + V(s_t)`. `values` is `[steps * envs]` `V(s_t)`.
pub fn gae(
    r: &Rollout<'_>,
    values: &[f32],
    gamma: f32,
    lambda: f32,
) -> Result<(Vec<f32>, Vec<f32>)> {
    let steps = r.check()?;
    Error::check_len("values", r.rewards.len(), values.len())?;
    let e = r.envs;
    let mut adv = vec![0.0; steps * e];
    for env in 0..e {
        let mut next_adv = 0.0;
        for t in (0..steps).rev() {
            let i = t * e + env;
            let cont = 1.0 - r.terminated[i];
            let delta = r.rewards[i] + gamma * cont * r.next_values[i] - values[i];
            let carry = if t + 1 == steps {
                0.0
            } else {
                cont * (1.0 - r.truncated[i]) * next_adv
            };
            adv[i] = delta + gamma * lambda * carry;
            next_adv = adv[i];
        }
    }
    let returns = adv.iter().zip(values).map(|(a, v)| a + v).collect();
    Ok((adv, returns))
}
