//! A multi-layer perceptron with a choice of activation and optional layer norm.

use crate::orthogonal::orthogonal_param;
use burn::module::{Module, Param};
use burn::nn::{LayerNorm, LayerNormConfig, Linear, LinearConfig};
use burn::tensor::{Device, Tensor};
use emberlab_core::{Error, Result};

/// The hidden-layer nonlinearity; in configs `"relu"` or `"tanh"`.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum Activation {
    /// `max(x, 0)` (the SAC / DQN default).
    #[default]
    Relu,
    /// `tanh(x)` (the A2C / PPO default).
    Tanh,
}

impl Activation {
    /// Applies the nonlinearity. `tanh` is [`emberlab_kernels::tanh`]: a vectorised host kernel
    /// with its own backward pass on flex (burn's calls the C library's scalar `tanhf` per
    /// element and recomputes it in the backward pass: 68% of a whole PPO CartPole run under
    /// `perf record`).
    pub fn apply<const D: usize>(self, x: Tensor<D>) -> Tensor<D> {
        match self {
            Activation::Relu => emberlab_kernels::relu(x),
            Activation::Tanh => emberlab_kernels::tanh(x),
        }
    }
}

/// How to build an [`Mlp`].
#[derive(Clone, Debug, PartialEq)]
pub struct MlpConfig {
    /// Layer widths from input to output, at least two (`[17, 256, 256, 6]`).
    pub sizes: Vec<usize>,
    /// Hidden nonlinearity (none after the last layer).
    pub activation: Activation,
    /// Layer norm after every hidden linear layer, before the activation.
    pub layer_norm: bool,
    /// Orthogonal weights with these gains `(hidden layers, output layer)` and zero biases
    /// (SB3's `ortho_init` for A2C / PPO: `(√2, 0.01)` for a policy, `(√2, 1)` for a value
    /// network); `None`: burn's default (Kaiming-uniform, like PyTorch's `Linear`).
    pub orthogonal: Option<(f64, f64)>,
}

impl MlpConfig {
    /// ReLU, no layer norm.
    pub fn new(sizes: impl Into<Vec<usize>>) -> Self {
        MlpConfig {
            sizes: sizes.into(),
            activation: Activation::Relu,
            layer_norm: false,
            orthogonal: None,
        }
    }

    /// Orthogonal weights with gains `(hidden, output)` and zero biases (see the field).
    pub fn with_orthogonal(mut self, gains: Option<(f64, f64)>) -> Self {
        self.orthogonal = gains;
        self
    }

    /// Sets the activation.
    pub fn with_activation(mut self, activation: Activation) -> Self {
        self.activation = activation;
        self
    }

    /// Enables or disables layer norm.
    pub fn with_layer_norm(mut self, layer_norm: bool) -> Self {
        self.layer_norm = layer_norm;
        self
    }

    /// Checks the sizes (at least two, none zero).
    pub fn validate(&self) -> Result<()> {
        if self.sizes.len() < 2 {
            return Err(Error::invalid(
                "mlp sizes",
                format!("{:?}", self.sizes),
                "at least [input, output]",
            ));
        }
        if let Some(i) = self.sizes.iter().position(|&s| s == 0) {
            return Err(Error::invalid(format!("mlp sizes[{i}]"), 0, ">= 1"));
        }
        Ok(())
    }

    /// Builds the network on `device` with every parameter materialised (burn initialises
    /// lazily otherwise, and clones made before first use would share pending state).
    pub fn init(&self, device: &Device) -> Result<Mlp> {
        self.validate()?;
        let last = self.sizes.len() - 2;
        let layers: Vec<Linear> = self
            .sizes
            .windows(2)
            .enumerate()
            .map(|(i, w)| match self.orthogonal {
                None => LinearConfig::new(w[0], w[1]).init(device),
                Some((hidden, output)) => {
                    let gain = if i == last { output } else { hidden };
                    let mut layer = LinearConfig::new(w[0], w[1]).with_bias(false).init(device);
                    layer.weight = orthogonal_param([w[0], w[1]], gain, device);
                    layer.bias = Some(Param::from_tensor(Tensor::zeros([w[1]], device)));
                    layer
                }
            })
            .collect();
        let norms = if self.layer_norm {
            self.sizes[1..self.sizes.len() - 1]
                .iter()
                .map(|&d| LayerNormConfig::new(d).init(device))
                .collect()
        } else {
            Vec::new()
        };
        Ok(Mlp {
            layers,
            norms,
            activation: self.activation,
        }
        .materialize())
    }
}

/// `x · W + b` for one layer, as burn's `Linear::forward` computes it, with the product
/// through [`emberlab_kernels::matmul`] (no zeroing and copying of the output on flex).
pub(crate) fn linear(layer: &Linear, x: Tensor<2>) -> Tensor<2> {
    let y = emberlab_kernels::matmul(x, layer.weight.val());
    match &layer.bias {
        Some(b) => y + b.val().unsqueeze::<2>(),
        None => y,
    }
}

/// A hidden layer: `activation(norm(x · W + b))`, the bias and a ReLU in one pass over the
/// product when there is no norm ([`emberlab_kernels::bias_relu`]).
fn hidden(
    layer: &Linear,
    x: Tensor<2>,
    norm: Option<&LayerNorm>,
    activation: Activation,
) -> Tensor<2> {
    match (&layer.bias, norm, activation) {
        (Some(b), None, Activation::Relu) => emberlab_kernels::bias_relu(
            emberlab_kernels::matmul(x, layer.weight.val()),
            b.val().unsqueeze::<2>(),
        ),
        _ => {
            let x = linear(layer, x);
            activation.apply(match norm {
                Some(norm) => norm.forward(x),
                None => x,
            })
        }
    }
}

/// Linear layers with a nonlinearity between them (none after the last).
#[derive(Module, Debug)]
pub struct Mlp {
    /// The linear layers, input first.
    pub layers: Vec<Linear>,
    /// Layer norms after each hidden layer (empty when disabled).
    pub norms: Vec<LayerNorm>,
    /// Hidden nonlinearity.
    #[module(skip)]
    pub activation: Activation,
}

impl Mlp {
    /// Input width.
    pub fn input_dim(&self) -> usize {
        self.layers[0].weight.shape().dims::<2>()[0]
    }

    /// Output width.
    pub fn output_dim(&self) -> usize {
        self.layers[self.layers.len() - 1]
            .weight
            .shape()
            .dims::<2>()[1]
    }

    /// The last hidden layer's features (after its activation) and the output, for
    /// `[batch, input]`: `([batch, last hidden], [batch, output])`. A network without a
    /// hidden layer gives its input as the features.
    pub fn forward_latent(&self, x: Tensor<2>) -> (Tensor<2>, Tensor<2>) {
        let last = self.layers.len() - 1;
        let mut x = x;
        for (i, layer) in self.layers[..last].iter().enumerate() {
            x = hidden(layer, x, self.norms.get(i), self.activation);
        }
        let out = linear(&self.layers[last], x.clone());
        (x, out)
    }

    /// Applies the network to `[batch, input]`, giving `[batch, output]`.
    pub fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        let last = self.layers.len() - 1;
        let mut x = x;
        for (i, layer) in self.layers[..last].iter().enumerate() {
            x = hidden(layer, x, self.norms.get(i), self.activation);
        }
        linear(&self.layers[last], x)
    }
}
