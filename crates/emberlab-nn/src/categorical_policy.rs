//! A categorical policy over discrete actions (A2C, REINFORCE).

use crate::mlp::Mlp;
use burn::module::Module;
use burn::tensor::activation::{log_softmax, softmax};
use burn::tensor::{Int, Tensor};

/// `π(a|s) = softmax(f(s))_a` for an [`Mlp`] `f` whose output width is the number of actions.
#[derive(Module, Debug)]
pub struct CategoricalPolicy {
    /// Logit network.
    pub net: Mlp,
}

impl CategoricalPolicy {
    /// Wraps a logit network.
    pub fn new(net: Mlp) -> Self {
        CategoricalPolicy { net }
    }

    /// Logits `[batch, actions]`.
    pub fn logits(&self, obs: Tensor<2>) -> Tensor<2> {
        self.net.forward(obs)
    }

    /// Log-probabilities of every action `[batch, actions]`.
    pub fn log_probs(&self, obs: Tensor<2>) -> Tensor<2> {
        log_softmax(self.logits(obs), 1)
    }

    /// Samples actions `[batch]` by the Gumbel-max trick from `uniform` noise in `(0, 1)`
    /// `[batch, actions]` (see [`crate::noise::uniform_open`]).
    pub fn sample(&self, obs: Tensor<2>, uniform: Tensor<2>) -> Tensor<1, Int> {
        let gumbel = uniform.log().neg().log().neg();
        let [b, _] = gumbel.dims();
        (self.logits(obs) + gumbel).argmax(1).reshape([b])
    }

    /// The most likely actions `[batch]`.
    pub fn greedy(&self, obs: Tensor<2>) -> Tensor<1, Int> {
        let logits = self.logits(obs);
        let [b, _] = logits.dims();
        logits.argmax(1).reshape([b])
    }

    /// Log-probabilities `[batch, 1]` of the given `actions` `[batch]`, and the entropies
    /// `[batch, 1]` of the distributions.
    pub fn evaluate(&self, obs: Tensor<2>, actions: Tensor<1, Int>) -> (Tensor<2>, Tensor<2>) {
        evaluate_logits(self.logits(obs), actions)
    }
}

/// Log-probabilities `[batch, 1]` of `actions` `[batch]` under the categorical
/// distributions with `logits` `[batch, actions]`, and their entropies `[batch, 1]` (for
/// policies whose logits come from elsewhere, e.g. a shared actor-critic trunk).
pub fn evaluate_logits(logits: Tensor<2>, actions: Tensor<1, Int>) -> (Tensor<2>, Tensor<2>) {
    let logp = log_softmax(logits, 1);
    let [b] = actions.dims();
    let chosen = logp.clone().gather(1, actions.reshape([b, 1]));
    let entropy = (softmax(logp.clone(), 1) * logp).sum_dim(1).neg();
    (chosen, entropy)
}
