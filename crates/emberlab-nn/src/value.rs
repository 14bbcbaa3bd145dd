//! Q networks and state-value networks.

use crate::mlp::Mlp;
use crate::pixels::PixelEncoder;
use burn::module::Module;
use burn::tensor::Tensor;

/// `Q(s, ·)` for discrete actions: `[batch, obs] → [batch, actions]` (DQN), or for images
/// `[batch, c, h, w] → [batch, actions]` through a [`PixelEncoder`] in front of the network.
#[derive(Module, Debug)]
pub struct DiscreteQ {
    /// The network (for images: from the encoder's features).
    pub net: Mlp,
    /// The image encoder in front of `net`, for Q-networks on pixels.
    pub encoder: Option<PixelEncoder>,
}

impl DiscreteQ {
    /// Wraps a network whose output width is the number of actions.
    pub fn new(net: Mlp) -> Self {
        DiscreteQ { net, encoder: None }
    }

    /// `net` reading the features of `encoder` (SB3's `QNetwork` over `NatureCNN`):
    /// `net`'s input width must be `encoder.features()`.
    pub fn with_encoder(encoder: PixelEncoder, net: Mlp) -> Self {
        DiscreteQ {
            net,
            encoder: Some(encoder),
        }
    }

    /// Action values `[batch, actions]` of vector observations (`net` alone).
    pub fn forward(&self, obs: Tensor<2>) -> Tensor<2> {
        self.net.forward(obs)
    }

    /// Action values `[batch, actions]` of images `[batch, c, h, w]` with values in
    /// `[0, 1]` ([`crate::pixels_to_unit`]), through the encoder; a Q-network without one
    /// reads them flattened.
    pub fn forward_pixels(&self, images: Tensor<4>) -> Tensor<2> {
        match &self.encoder {
            Some(e) => self.net.forward(e.forward(images)),
            None => self.net.forward(images.flatten(1, 3)),
        }
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
