//! What acts: the [`Agent`] trait and the action buffer it fills.

use emberlab_core::{Error, Result, Space};
use emberlab_env::VecActions;

/// Actions for a batch of observations, reused between calls.
#[derive(Clone, Debug, PartialEq)]
pub enum ActionBuf {
    /// One index per observation (a `Discrete` action space).
    Discrete(Vec<usize>),
    /// `batch × act_dim` values, row-major (a `Box` action space).
    Continuous(Vec<f32>),
}

impl ActionBuf {
    /// An empty buffer of the kind `space` needs.
    pub fn for_space(space: &Space) -> Self {
        match space {
            Space::Discrete(_) => ActionBuf::Discrete(Vec::new()),
            Space::Box(_) => ActionBuf::Continuous(Vec::new()),
        }
    }

    /// The actions as a vector environment takes them.
    pub fn as_vec_actions(&self) -> VecActions<'_> {
        match self {
            ActionBuf::Discrete(a) => VecActions::Discrete(a),
            ActionBuf::Continuous(a) => VecActions::Continuous(a),
        }
    }

    /// Row `i` as it is stored in a replay buffer (a discrete index becomes one `f32`).
    pub fn write_row(&self, i: usize, act_dim: usize, out: &mut Vec<f32>) {
        out.clear();
        match self {
            ActionBuf::Discrete(a) => out.push(a[i] as f32),
            ActionBuf::Continuous(a) => out.extend_from_slice(&a[i * act_dim..(i + 1) * act_dim]),
        }
    }

    /// The continuous values, or an error naming `who` if the buffer is discrete.
    pub fn continuous_mut(&mut self, who: &str) -> Result<&mut Vec<f32>> {
        match self {
            ActionBuf::Continuous(v) => Ok(v),
            ActionBuf::Discrete(_) => Err(Error::invalid(
                format!("{who} action buffer"),
                "Discrete",
                "a Box (continuous) action space",
            )),
        }
    }

    /// The discrete indices, or an error naming `who` if the buffer is continuous.
    pub fn discrete_mut(&mut self, who: &str) -> Result<&mut Vec<usize>> {
        match self {
            ActionBuf::Discrete(v) => Ok(v),
            ActionBuf::Continuous(_) => Err(Error::invalid(
                format!("{who} action buffer"),
                "Box",
                "a Discrete action space",
            )),
        }
    }
}

/// Width of one stored action: 1 for a discrete space, the box dimension otherwise.
pub fn stored_action_dim(space: &Space) -> usize {
    match space {
        Space::Discrete(_) => 1,
        Space::Box(b) => b.dim(),
    }
}

/// Something that acts: maps a batch of observations to actions.
pub trait Agent {
    /// Width of one observation.
    fn obs_dim(&self) -> usize;

    /// Fills `out` with one action per observation row of `obs` (`batch × obs_dim`,
    /// row-major). `explore` selects the behaviour policy (stochastic, ε-greedy); otherwise
    /// the agent acts deterministically (evaluation).
    fn act(&mut self, obs: &[f32], explore: bool, out: &mut ActionBuf) -> Result<()>;

    /// As [`Agent::act`], for image observations: `obs` is `batch` stacks of `u8` frames,
    /// each `[k · c, h, w]` row-major, oldest frame first (as `emberlab_env::FrameVecEnv`
    /// stacks them), and the agent divides by 255 itself.
    ///
    /// # Errors
    /// Default: [`Error::Unavailable`], an agent of vector observations only.
    fn act_pixels(&mut self, obs: &[u8], explore: bool, out: &mut ActionBuf) -> Result<()> {
        let _ = (obs, explore, out);
        Err(pixels_unavailable("acting on images"))
    }
}

/// The error of a learner or agent asked for images it was not built for.
pub(crate) fn pixels_unavailable(what: &str) -> Error {
    Error::Unavailable {
        what: format!("{what} with this learner"),
        hint: "build it for images (e.g. `DqnConfig::build_pixels`)".into(),
    }
}

/// A learner whose acting policy travels as flat weights
/// ([`emberlab_nn::flat_params`]): a learner publishes them, and a copy built from the same
/// config on another machine loads them and acts locally.
pub trait PolicyWeights {
    /// The acting policy's parameters (DQN's Q network, SAC's and TD3's actor).
    fn policy_weights(&mut self) -> Vec<f32>;

    /// Loads parameters [`PolicyWeights::policy_weights`] of a learner of the same config
    /// wrote; the next action comes from them.
    ///
    /// # Errors
    /// Weights of another length (another architecture), or not finite; the learner is
    /// then unchanged.
    fn load_policy_weights(&mut self, weights: &[f32]) -> Result<()>;
}

/// One output of an exported policy: the graph value, its output name, and its width
/// (`None`: int64 `[batch]`, e.g. discrete actions).
#[derive(Clone, Debug, PartialEq)]
pub struct OnnxOutput {
    /// The value in the graph.
    pub value: String,
    /// The output's name (`action`, `q_values`).
    pub name: &'static str,
    /// float32 `[batch, width]`, or int64 `[batch]` when `None`.
    pub width: Option<usize>,
}

/// A learner whose greedy policy leaves Ember as an ONNX model ([`emberlab_nn::OnnxGraph`]):
/// input `obs`, float32 `[batch, obs_dim]` (a learner on images: uint8 frame stacks
/// `[batch, c, h, w]`, [`OnnxPolicy::onnx_images`]); output `action`, float32
/// `[batch, act_dim]` (a `Box` action space) or int64 `[batch]` (a `Discrete` one). DQN adds
/// `q_values`.
pub trait OnnxPolicy: Agent {
    /// Appends the deterministic policy ([`Agent::act`] or [`Agent::act_pixels`] without
    /// exploration, to float tolerance) applied to the observations `obs` to `g`; returns
    /// the outputs.
    ///
    /// # Errors
    /// Non-finite weights.
    fn onnx_outputs(&self, g: &mut emberlab_nn::OnnxGraph, obs: &str) -> Result<Vec<OnnxOutput>>;

    /// `[c, h, w]` of the uint8 frame stacks a learner on images reads; `None` (the
    /// default) for float32 vectors of [`Agent::obs_dim`].
    fn onnx_images(&self) -> Option<[usize; 3]> {
        None
    }

    /// The encoded model: input `obs`, then [`OnnxPolicy::onnx_outputs`].
    ///
    /// # Errors
    /// Non-finite weights.
    fn onnx_policy(&self) -> Result<Vec<u8>> {
        self.onnx_policy_after(&mut |_, obs| Ok(obs.to_string()))
    }

    /// The encoded model with `prelude` between the input `obs` and the policy (e.g. a
    /// run's observation statistics): `prelude` appends its nodes and returns the value the
    /// policy reads (for images, uint8 stacks as the input).
    ///
    /// # Errors
    /// What `prelude` returns, or non-finite weights.
    fn onnx_policy_after(
        &self,
        prelude: &mut dyn FnMut(&mut emberlab_nn::OnnxGraph, &str) -> Result<String>,
    ) -> Result<Vec<u8>> {
        let mut g = emberlab_nn::OnnxGraph::new("ember_policy");
        let obs = match self.onnx_images() {
            Some(shape) => g.input_images("obs", shape),
            None => g.input("obs", self.obs_dim()),
        };
        let x = prelude(&mut g, &obs)?;
        for o in self.onnx_outputs(&mut g, &x)? {
            g.output(&o.value, o.name, o.width);
        }
        Ok(g.to_bytes("ember"))
    }
}

/// A borrowed agent acts as the agent (so `&mut dyn Agent` goes where an `Agent` is asked).
impl<T: Agent + ?Sized> Agent for &mut T {
    fn obs_dim(&self) -> usize {
        (**self).obs_dim()
    }

    fn act(&mut self, obs: &[f32], explore: bool, out: &mut ActionBuf) -> Result<()> {
        (**self).act(obs, explore, out)
    }

    fn act_pixels(&mut self, obs: &[u8], explore: bool, out: &mut ActionBuf) -> Result<()> {
        (**self).act_pixels(obs, explore, out)
    }
}
