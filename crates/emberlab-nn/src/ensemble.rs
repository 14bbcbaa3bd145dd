//! A fused ensemble of E critics `Q_e(s, a)`: each layer's weights are one `[E, in, out]`
//! parameter and the E critics are evaluated as one batched matmul per layer.

use crate::mlp::{Activation, Mlp};
use crate::value::ContinuousQ;
use burn::module::{Module, Param, ParamId};
use burn::nn::{Initializer, Linear};
use burn::tensor::{Device, Tensor};
use emberlab_core::{Error, Result};

/// How to build a [`CriticEnsemble`].
#[derive(Clone, Debug, PartialEq)]
pub struct CriticEnsembleConfig {
    /// Number of critics (2 for SAC / TD3).
    pub members: usize,
    /// Input width (`obs + act`).
    pub input_dim: usize,
    /// Hidden widths (`[256, 256]`).
    pub hidden: Vec<usize>,
    /// Hidden nonlinearity.
    pub activation: Activation,
}

impl CriticEnsembleConfig {
    /// `members` critics of `input_dim → hidden… → 1` with ReLU.
    pub fn new(members: usize, input_dim: usize, hidden: impl Into<Vec<usize>>) -> Self {
        CriticEnsembleConfig {
            members,
            input_dim,
            hidden: hidden.into(),
            activation: Activation::Relu,
        }
    }

    /// Builds the ensemble; each member is initialised as burn's `Linear` would be.
    pub fn init(&self, device: &Device) -> Result<CriticEnsemble> {
        if self.members == 0 {
            return Err(Error::invalid("ensemble members", 0, ">= 1"));
        }
        let mut sizes = vec![self.input_dim];
        sizes.extend(&self.hidden);
        sizes.push(1);
        if let Some(i) = sizes.iter().position(|&s| s == 0) {
            return Err(Error::invalid(format!("ensemble sizes[{i}]"), 0, ">= 1"));
        }
        let init = Initializer::KaimingUniform {
            gain: 1.0 / 3.0f64.sqrt(),
            fan_out_only: false,
        };
        let e = self.members;
        let (weights, biases) = sizes
            .windows(2)
            .map(|w| {
                let (i, o) = (w[0], w[1]);
                (
                    init.init_with([e, i, o], Some(i), Some(o), device),
                    init.init_with([e, 1, o], Some(i), Some(o), device),
                )
            })
            .unzip();
        Ok(CriticEnsemble {
            weights,
            biases,
            activation: self.activation,
        }
        .materialize())
    }
}

/// E critics evaluated together; see the module docs.
#[derive(Module, Debug)]
pub struct CriticEnsemble {
    /// Per layer, `[E, in, out]`.
    pub weights: Vec<Param<Tensor<3>>>,
    /// Per layer, `[E, 1, out]`.
    pub biases: Vec<Param<Tensor<3>>>,
    /// Hidden nonlinearity.
    #[module(skip)]
    pub activation: Activation,
}

impl CriticEnsemble {
    /// Number of critics.
    pub fn members(&self) -> usize {
        self.weights[0].shape().dims::<3>()[0]
    }

    /// Every critic's value `[E, batch, 1]` for the concatenated input `[batch, obs + act]`.
    pub fn forward_input(&self, x: Tensor<2>) -> Tensor<3> {
        self.layers_from(x, self.weights.len())
    }

    /// The input `[batch, obs + act]` through the first `layers` layers of every critic:
    /// `[E, batch, width]`.
    fn layers_from(&self, x: Tensor<2>, layers: usize) -> Tensor<3> {
        let e = self.members();
        let [b, d] = x.dims();
        let mut h = x.reshape([1, b, d]).expand([e, b, d]);
        let last = self.weights.len() - 1;
        let layers = self.weights.iter().zip(&self.biases).take(layers);
        for (i, (w, bias)) in layers.enumerate() {
            let product = emberlab_kernels::matmul(h, w.val());
            h = match self.activation {
                // Bias and ReLU in one pass over the product.
                Activation::Relu if i < last => emberlab_kernels::bias_relu(product, bias.val()),
                _ if i < last => self.activation.apply(product + bias.val()),
                _ => product + bias.val(),
            };
        }
        h
    }

    /// Every critic's value `[E, batch, 1]`.
    pub fn forward(&self, obs: Tensor<2>, act: Tensor<2>) -> Tensor<3> {
        self.forward_input(Tensor::cat(vec![obs, act], 1))
    }

    /// The smallest of the E values `[batch, 1]` (clipped double-Q): the last layer and the
    /// minimum as one op whose backward pass goes only through each row's smallest critic
    /// ([`emberlab_kernels::ensemble_min`]).
    pub fn min_q(&self, obs: Tensor<2>, act: Tensor<2>) -> Tensor<2> {
        let last = self.weights.len() - 1;
        let h = self.layers_from(Tensor::cat(vec![obs, act], 1), last);
        emberlab_kernels::ensemble_min(h, self.weights[last].val(), self.biases[last].val())
    }

    /// The mean of the E values `[batch, 1]` (REDQ's actor loss: the mean of its critics).
    pub fn mean_q(&self, obs: Tensor<2>, act: Tensor<2>) -> Tensor<2> {
        let q = self.forward(obs, act);
        let [_, rows, _] = q.dims();
        q.mean_dim(0).reshape([rows, 1])
    }

    /// Critics `members` (a range) as an ensemble of their own, sharing the weight values:
    /// TD3's actor loss reads only the first critic, and evaluating (and differentiating
    /// through) the others would double its work. Gradients reach these members' weights
    /// through the selection when they are tracked; `.no_grad()` freezes the selection.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the range is empty or goes past
    /// [`CriticEnsemble::members`].
    pub fn select(&self, members: std::ops::Range<usize>) -> Result<CriticEnsemble> {
        let e = self.members();
        if members.is_empty() || members.end > e {
            let expected = format!("a non-empty range within 0..{e}");
            return Err(Error::invalid(
                "critic members",
                format!("{members:?}"),
                expected,
            ));
        }
        let pick = |p: &Param<Tensor<3>>| {
            let [_, i, o] = p.shape().dims::<3>();
            // Not `Param::from_tensor`: that would make the slice a leaf of its own, cut
            // off from the fused weight (and panics on a tracked slice).
            Param::initialized(ParamId::new(), p.val().slice([members.clone(), 0..i, 0..o]))
        };
        Ok(CriticEnsemble {
            weights: self.weights.iter().map(pick).collect(),
            biases: self.biases.iter().map(pick).collect(),
            activation: self.activation,
        })
    }

    /// Critic `e` as a separate [`ContinuousQ`] with the same weight values (for checks and
    /// for users who want one member).
    pub fn member(&self, e: usize) -> ContinuousQ {
        let layers = self
            .weights
            .iter()
            .zip(&self.biases)
            .map(|(w, b)| {
                let [_, i, o] = w.shape().dims::<3>();
                Linear {
                    weight: Param::initialized(
                        ParamId::new(),
                        w.val().slice([e..e + 1, 0..i, 0..o]).reshape([i, o]),
                    ),
                    bias: Some(Param::initialized(
                        ParamId::new(),
                        b.val().slice([e..e + 1, 0..1, 0..o]).reshape([o]),
                    )),
                }
            })
            .collect();
        ContinuousQ::new(Mlp {
            layers,
            norms: Vec::new(),
            activation: self.activation,
        })
    }
}
