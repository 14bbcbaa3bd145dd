//! A trained run's policy, loaded from its folder as `ember eval` loads it: the same learner,
//! weights and observation statistics; greedy or exploring actions, and the policy as ONNX.

use crate::error::Result;
use crate::error::RunError;
use crate::folder::{FRAMES, FrameSpaces, load_config, load_weights, obs_normalizer};
use crate::learners::{RunLearner, devices};
use emberlab_algo::ActionBuf;
use emberlab_core::Space;
use emberlab_env::ObsNormalizer;
use emberlab_nn::OnnxGraph;
use std::path::Path;

/// A run's policy, loaded as `ember eval` loads it (`ember export` writes it as ONNX; the
/// Python wheel's `emberlab.load_policy` acts with it).
pub struct RunPolicy {
    learner: Box<dyn RunLearner>,
    env_id: String,
    algo: String,
    obs_dim: usize,
    action_space: Space,
    normalizer: Option<ObsNormalizer>,
    images: Option<[usize; 3]>,
}

impl RunPolicy {
    /// The policy of the run folder `run`: its last checkpoint, or its best evaluation's
    /// weights (`best`). A run on images ([`FrameSpaces`] in its folder) loads as
    /// [`RunPolicy::load_frames`] does.
    ///
    /// # Errors
    /// A folder without a config or weights, or weights of another architecture.
    pub fn load(run: &Path, best: bool) -> Result<Self> {
        let config = load_config(run)?;
        if let Some(spaces) = FrameSpaces::load(run)? {
            return Self::load_frames(run, best, spaces.stack, spaces.actions);
        }
        if emberlab_env::is_atari_id(&config.env) {
            return Err(RunError::Folder(format!(
                "{} is a run on images without {FRAMES} (written by `ember train` since \
                 2026-11-30, also on `--resume`): load it with `RunPolicy::load_frames` and \
                 the game's stack shape and actions, as `ember export` does",
                run.display()
            )));
        }
        let env = emberlab_env::make(&config.env)?;
        let mut learner = config.build_learner(
            env.observation_space(),
            env.action_space(),
            &devices(&config.device)?,
        )?;
        let from = load_weights(learner.as_mut(), run, best)?;
        let obs_dim = env.observation_space().flat_dim();
        let normalizer = obs_normalizer(&config, &from, obs_dim)?;
        Ok(RunPolicy {
            learner,
            env_id: config.env.clone(),
            algo: config.algo.clone(),
            obs_dim,
            action_space: env.action_space().clone(),
            normalizer,
            images: None,
        })
    }

    /// The policy of a run on images (`ember train` on an Atari id): stacks of
    /// `obs = [c, h, w]` frames (the environment's `FrameVecEnv::obs_shape`) and `actions`
    /// discrete actions, as the run's games give them; its last checkpoint, or its best
    /// evaluation's weights (`best`).
    ///
    /// # Errors
    /// A folder without a config or weights, an algorithm without images, or weights of
    /// another architecture (another game's number of actions among them).
    pub fn load_frames(run: &Path, best: bool, obs: [usize; 3], actions: usize) -> Result<Self> {
        let config = load_config(run)?;
        let mut learner = config.build_pixel_learner(obs, actions, &devices(&config.device)?)?;
        load_weights(learner.as_mut(), run, best)?;
        Ok(RunPolicy {
            learner,
            env_id: config.env.clone(),
            algo: config.algo.clone(),
            obs_dim: obs.iter().product(),
            action_space: Space::Discrete(emberlab_core::Discrete::new(actions)?),
            normalizer: None,
            images: Some(obs),
        })
    }

    /// `[c, h, w]` of the frame stacks a policy on images reads; `None` for vectors.
    pub fn images(&self) -> Option<[usize; 3]> {
        self.images
    }

    /// Width of one observation.
    pub fn obs_dim(&self) -> usize {
        self.obs_dim
    }

    /// The environment id the run trained on.
    pub fn env_id(&self) -> &str {
        &self.env_id
    }

    /// The algorithm that trained it (`sac`, `dqn`, ...).
    pub fn algo(&self) -> &str {
        &self.algo
    }

    /// The action space the policy acts in.
    pub fn action_space(&self) -> &Space {
        &self.action_space
    }

    /// The greedy actions for `rows × obs_dim` observations (what `ember eval` acts with).
    ///
    /// # Errors
    /// Observations of the wrong width.
    pub fn act(&mut self, obs: &[f32]) -> Result<ActionBuf> {
        self.act_with(obs, false)
    }

    /// The actions for uint8 frame stacks (`rows × c × h × w` bytes, oldest frame first)
    /// of a policy on images ([`RunPolicy::load_frames`]): greedy, or with `explore` the
    /// behaviour policy the run trained with.
    ///
    /// # Errors
    /// Stacks of the wrong length, or a policy of vectors.
    pub fn act_frames(&mut self, stacks: &[u8], explore: bool) -> Result<ActionBuf> {
        let mut out = ActionBuf::for_space(&self.action_space);
        self.learner.agent().act_pixels(stacks, explore, &mut out)?;
        Ok(out)
    }

    /// The actions for `rows × obs_dim` observations: greedy, or with `explore` the
    /// behaviour policy the run trained with (sampled actions, ε-greedy), drawn from the
    /// learner's generator as the checkpoint left it.
    ///
    /// # Errors
    /// Observations of the wrong width.
    pub fn act_with(&mut self, obs: &[f32], explore: bool) -> Result<ActionBuf> {
        let mut out = ActionBuf::for_space(&self.action_space);
        let mut obs = obs.to_vec();
        if let Some(n) = &self.normalizer {
            n.normalize(&mut obs);
        }
        self.learner.agent().act(&obs, explore, &mut out)?;
        Ok(out)
    }

    /// The policy as an encoded ONNX model (input `obs`: float32 rows, or for a policy on
    /// images uint8 stacks `[batch, c, h, w]`; output `action`, and `q_values` for DQN).
    ///
    /// # Errors
    /// Non-finite weights or statistics.
    pub fn onnx(&self) -> Result<Vec<u8>> {
        let policy = self.learner.onnx();
        let Some(n) = &self.normalizer else {
            return Ok(policy.onnx_policy()?);
        };
        let stats = n.statistics();
        let mean: Vec<f32> = stats.mean().iter().map(|&m| m as f32).collect();
        let inv_std: Vec<f32> = stats
            .var()
            .iter()
            .map(|&v| (1.0 / (v + n.epsilon()).sqrt()) as f32)
            .collect();
        Ok(
            policy.onnx_policy_after(&mut |g: &mut OnnxGraph, obs: &str| {
                g.normalize(obs, &mean, &inv_std, n.clip() as f32)
            })?,
        )
    }
}
