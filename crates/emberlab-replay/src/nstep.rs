//! n-step returns that respect episode boundaries and tell `terminated` from `truncated`.
//!
//! Feed one-step transitions of one environment in order; [`NStep`] emits, for each step
//! `t`, the transition `(s_t, a_t, R, s_{t+m}, terminated, truncated)` with
//! `R = Σ_{i<m} γ^i r_{t+i}` and the bootstrap discount `γ^m`, where `m = n` unless the
//! episode ends first. At an episode end every pending step is emitted with a window cut at
//! that end: after `terminated` the target must not bootstrap (the emitted transition is
//! terminated); after `truncated` it bootstraps from the last observation with `γ^m` (the
//! emitted transition is truncated, not terminated). Windows never cross episodes.

use emberlab_core::{Error, Result, Transition};

/// The n-step accumulator of one environment; see the module docs.
#[derive(Clone, Debug)]
pub struct NStep {
    n: usize,
    gamma: f64,
    obs_dim: usize,
    act_dim: usize,
    obs: Vec<f32>,
    action: Vec<f32>,
    reward: Vec<f32>,
    start: usize,
    len: usize,
}

impl NStep {
    /// An accumulator for `n`-step returns with discount `gamma` in `[0, 1]`.
    pub fn new(n: usize, gamma: f64, obs_dim: usize, act_dim: usize) -> Result<Self> {
        if n == 0 {
            return Err(Error::invalid("n", n, ">= 1"));
        }
        if !(0.0..=1.0).contains(&gamma) {
            return Err(Error::invalid("gamma", gamma, "a number in [0, 1]"));
        }
        Ok(NStep {
            n,
            gamma,
            obs_dim,
            act_dim,
            obs: vec![0.0; n * obs_dim],
            action: vec![0.0; n * act_dim],
            reward: vec![0.0; n],
            start: 0,
            len: 0,
        })
    }

    /// Appends the pending steps to a snapshot (see [`emberlab_core::state`]).
    pub fn save_state(&self, out: &mut emberlab_core::state::StateWriter) {
        out.usize(self.start).usize(self.len);
        out.f32s(&self.obs).f32s(&self.action).f32s(&self.reward);
    }

    /// Restores what [`NStep::save_state`] wrote for an accumulator of the same shape.
    ///
    /// # Errors
    /// A snapshot of another shape, or a short one.
    pub fn load_state(&mut self, src: &mut emberlab_core::state::StateReader<'_>) -> Result<()> {
        let (start, len) = (src.usize()?, src.usize()?);
        if start >= self.n || len > self.n {
            return Err(Error::invalid(
                "n-step snapshot",
                format!("start {start}, {len} pending"),
                format!("both below n = {}", self.n),
            ));
        }
        let obs = src.f32s(Some(self.obs.len()))?;
        let action = src.f32s(Some(self.action.len()))?;
        let reward = src.f32s(Some(self.reward.len()))?;
        (self.start, self.len) = (start, len);
        (self.obs, self.action, self.reward) = (obs, action, reward);
        Ok(())
    }

    /// Number of steps waiting for their window to complete.
    pub fn pending(&self) -> usize {
        self.len
    }

    /// Drops pending steps (call when an episode is abandoned without a terminal step).
    pub fn reset(&mut self) {
        self.len = 0;
        self.start = 0;
    }

    /// Adds the next one-step transition and calls `emit(transition, bootstrap_discount)`
    /// for each n-step transition completed by it (oldest first).
    pub fn push(
        &mut self,
        t: &Transition<'_>,
        mut emit: impl FnMut(Transition<'_>, f32) -> Result<()>,
    ) -> Result<()> {
        Error::check_len("obs", self.obs_dim, t.obs.len())?;
        Error::check_len("next_obs", self.obs_dim, t.next_obs.len())?;
        Error::check_len("action", self.act_dim, t.action.len())?;
        let slot = (self.start + self.len) % self.n;
        let (o, a) = (self.obs_dim, self.act_dim);
        self.obs[slot * o..(slot + 1) * o].copy_from_slice(t.obs);
        self.action[slot * a..(slot + 1) * a].copy_from_slice(t.action);
        self.reward[slot] = t.reward;
        self.len += 1;
        if t.terminated || t.truncated {
            while self.len > 0 {
                self.emit_oldest(t, true, &mut emit)?;
            }
            self.start = 0;
        } else if self.len == self.n {
            self.emit_oldest(t, false, &mut emit)?;
        }
        Ok(())
    }

    fn emit_oldest(
        &mut self,
        last: &Transition<'_>,
        episode_end: bool,
        emit: &mut impl FnMut(Transition<'_>, f32) -> Result<()>,
    ) -> Result<()> {
        let mut ret = 0.0f64;
        let mut disc = 1.0f64;
        for i in 0..self.len {
            ret += disc * self.reward[(self.start + i) % self.n] as f64;
            disc *= self.gamma;
        }
        let s = self.start;
        let (o, a) = (self.obs_dim, self.act_dim);
        let out = Transition {
            obs: &self.obs[s * o..(s + 1) * o],
            action: &self.action[s * a..(s + 1) * a],
            reward: ret as f32,
            next_obs: last.next_obs,
            terminated: episode_end && last.terminated,
            truncated: episode_end && last.truncated && !last.terminated,
        };
        emit(out, disc as f32)?;
        self.start = (self.start + 1) % self.n;
        self.len -= 1;
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    type Out = (f32, f32, f32, bool, bool, f32);

    fn run(n: usize, rewards: &[f32], end: (bool, bool)) -> Vec<Out> {
        let mut acc = NStep::new(n, 0.5, 1, 1).unwrap();
        let mut got: Vec<Out> = Vec::new();
        for (i, &r) in rewards.iter().enumerate() {
            let last = i + 1 == rewards.len();
            let (obs, next) = ([i as f32], [i as f32 + 1.0]);
            let t = Transition {
                obs: &obs,
                action: &[0.0],
                reward: r,
                next_obs: &next,
                terminated: last && end.0,
                truncated: last && end.1,
            };
            acc.push(&t, |o, d| {
                got.push((
                    o.obs[0],
                    o.reward,
                    o.next_obs[0],
                    o.terminated,
                    o.truncated,
                    d,
                ));
                Ok(())
            })
            .unwrap();
        }
        assert_eq!(
            acc.pending(),
            if end.0 || end.1 {
                0
            } else {
                (n - 1).min(rewards.len())
            }
        );
        got
    }

    #[test]
    fn terminated_episode_by_hand() {
        // n = 3, gamma = 0.5, rewards 1 2 3 4, terminated after the 4th step (s4 terminal).
        let got = run(3, &[1.0, 2.0, 3.0, 4.0], (true, false));
        assert_eq!(
            got,
            vec![
                (0.0, 1.0 + 1.0 + 0.75, 3.0, false, false, 0.125),
                (1.0, 2.0 + 1.5 + 1.0, 4.0, true, false, 0.125),
                (2.0, 3.0 + 2.0, 4.0, true, false, 0.25),
                (3.0, 4.0, 4.0, true, false, 0.5),
            ]
        );
    }

    #[test]
    fn truncated_episode_bootstraps() {
        let got = run(2, &[1.0, 1.0, 1.0], (false, true));
        assert_eq!(
            got,
            vec![
                (0.0, 1.5, 2.0, false, false, 0.25),
                (1.0, 1.5, 3.0, false, true, 0.25),
                (2.0, 1.0, 3.0, false, true, 0.5),
            ]
        );
    }

    #[test]
    fn short_episode_and_boundary() {
        // An episode shorter than n emits only at its end; the next episode starts clean.
        let got = run(5, &[2.0, 2.0], (true, false));
        assert_eq!(
            got,
            vec![
                (0.0, 3.0, 2.0, true, false, 0.25),
                (1.0, 2.0, 2.0, true, false, 0.5)
            ]
        );
        let mid = run(3, &[1.0; 5], (false, false));
        assert_eq!(mid.len(), 3);
        assert!(
            mid.iter()
                .all(|o| o.1 == 1.75 && o.5 == 0.125 && !o.3 && !o.4)
        );
        assert!(NStep::new(0, 0.9, 1, 1).is_err());
        assert!(NStep::new(3, 1.5, 1, 1).is_err());
    }
}
