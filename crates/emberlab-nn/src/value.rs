//! Q networks and state-value networks.

use crate::mlp::Mlp;
use burn::module::Module;
use burn::tensor::Tensor;

/// `Q(s, ·)` for discrete actions: `[batch, obs] → [batch, actions]` (DQN).
#[derive(Module, Debug)]
pub struct DiscreteQ {
    /// The network.
    pub net: Mlp,
}

impl DiscreteQ {
    /// Wraps a network whose output width is the number of actions.
    pub fn new(net: Mlp) -> Self {
        DiscreteQ { net }
    }

    /// Action values `[batch, actions]`.
    pub fn forward(&self, obs: Tensor<2>) -> Tensor<2> {
        self.net.forward(obs)
    }
}

/// `Q(s, a)` for continuous actions: `[batch, obs] × [batch, act] → [batch, 1]`.
#[derive(Module, Debug)]
pub struct ContinuousQ {
    /// The network, input width `obs + act`, output width 1.
    pub net: Mlp,
}

impl ContinuousQ {
    /// Wraps a network taking the concatenated `[obs, act]`.
    pub fn new(net: Mlp) -> Self {
        ContinuousQ { net }
    }

    /// The value `[batch, 1]`.
    pub fn forward(&self, obs: Tensor<2>, act: Tensor<2>) -> Tensor<2> {
        self.net.forward(Tensor::cat(vec![obs, act], 1))
    }
}

/// `V(s)`: `[batch, obs] → [batch, 1]` (A2C baselines).
#[derive(Module, Debug)]
pub struct ValueNet {
    /// The network, output width 1.
    pub net: Mlp,
}

impl ValueNet {
    /// Wraps a network with output width 1.
    pub fn new(net: Mlp) -> Self {
        ValueNet { net }
    }

    /// The value `[batch, 1]`.
    pub fn forward(&self, obs: Tensor<2>) -> Tensor<2> {
        self.net.forward(obs)
    }
}
