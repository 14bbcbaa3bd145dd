//! Evaluation: deterministic episodes on a fresh environment.

use crate::agent::{ActionBuf, Agent};
use ember_core::{Error, Result};

/// Returns of evaluation episodes.
#[derive(Clone, Debug, PartialEq)]
pub struct EvalResult {
    /// One undiscounted return per episode.
    pub returns: Vec<f64>,
    /// One length per episode.
    pub lengths: Vec<usize>,
}

impl EvalResult {
    /// Mean return.
    pub fn mean_return(&self) -> f64 {
        self.returns.iter().sum::<f64>() / self.returns.len().max(1) as f64
    }
}

/// Runs `episodes` deterministic episodes of `env_id` (made by [`ember_env::make`], time
/// limit included); episode `i` is reset with seed `seed + i`.
pub fn evaluate(
    agent: &mut dyn Agent,
    env_id: &str,
    episodes: usize,
    seed: u64,
) -> Result<EvalResult> {
    if episodes == 0 {
        return Err(Error::invalid("evaluation episodes", 0, ">= 1"));
    }
    let mut env = ember_env::make(env_id)?;
    let mut actions = ActionBuf::for_space(env.action_space());
    let act_dim = env.action_space().flat_dim();
    let mut obs = vec![0.0; env.observation_space().flat_dim()];
    Error::check_len("agent observation width", obs.len(), agent.obs_dim())?;
    let mut result = EvalResult {
        returns: Vec::with_capacity(episodes),
        lengths: Vec::with_capacity(episodes),
    };
    for i in 0..episodes {
        env.reset_into(Some(seed + i as u64), &mut obs)?;
        let (mut ret, mut len) = (0.0, 0usize);
        loop {
            agent.act(&obs, false, &mut actions)?;
            let action = actions.as_vec_actions().get(0, act_dim);
            let info = env.step_into(action, &mut obs)?;
            ret += info.reward;
            len += 1;
            if info.terminated || info.truncated {
                break;
            }
        }
        result.returns.push(ret);
        result.lengths.push(len);
    }
    Ok(result)
}
