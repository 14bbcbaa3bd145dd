//! What the gRPC tests share.

use emberlab_algo::{ActionBuf, Agent};
use emberlab_core::Result;
use emberlab_dist::{InferenceConfig, InferenceServer};
use std::time::Duration;

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

/// Central inference of [`Echo`]: batches of up to 16 rows, 1 ms to gather them.
pub fn echo_inference() -> InferenceServer<Echo> {
    InferenceServer::spawn(
        Echo,
        ActionBuf::Discrete(vec![]),
        InferenceConfig {
            max_batch: 16,
            max_wait: Duration::from_millis(1),
            queue: 64,
        },
    )
    .unwrap()
}
