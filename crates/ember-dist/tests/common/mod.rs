//! What the gRPC tests share.

use ember_algo::{ActionBuf, Agent};
use ember_core::Result;

/// Action `obs[0] as usize` per row of 2 values.
pub struct Echo;

impl Agent for Echo {
    fn obs_dim(&self) -> usize {
        2
    }

    fn act(&mut self, obs: &[f32], _explore: bool, out: &mut ActionBuf) -> Result<()> {
        let out = out.discrete_mut("Echo")?;
        out.clear();
        out.extend(obs.chunks(2).map(|r| r[0] as usize));
        Ok(())
    }
}
