//! A categorical policy and an optional state-value head in one module: separate MLPs or
//! two heads on a shared trunk (A2C, REINFORCE, PPO).

use crate::mlp::{Activation, Mlp, MlpConfig};
use burn::module::Module;
use burn::tensor::{Device, Tensor};
use ember_core::{Error, Result};

/// How to build an [`ActorCriticNet`].
#[derive(Clone, Debug, PartialEq)]
pub struct ActorCriticNetConfig {
    /// Observation width.
    pub obs_dim: usize,
    /// Number of discrete actions (logits).
    pub actions: usize,
    /// Hidden widths (of each network, or of the shared trunk).
    pub hidden: Vec<usize>,
    /// Hidden nonlinearity.
    pub activation: Activation,
    /// One trunk with two heads instead of two networks.
    pub shared_trunk: bool,
    /// Build a value head.
    pub value: bool,
}

impl ActorCriticNetConfig {
    /// Builds the network on `device`.
    ///
    /// # Errors
    /// No hidden layer, or a zero width.
    pub fn init(&self, device: &Device) -> Result<ActorCriticNet> {
        let Some(&last) = self.hidden.last() else {
            return Err(Error::invalid("hidden", "[]", "one or more widths >= 1"));
        };
        let mlp = |sizes: Vec<usize>| {
            MlpConfig::new(sizes)
                .with_activation(self.activation)
                .init(device)
        };
        let (o, h, k) = (self.obs_dim, &self.hidden, self.actions);
        let value = |input: Vec<usize>| -> Result<Option<Mlp>> {
            if self.value {
                Ok(Some(mlp(input)?))
            } else {
                Ok(None)
            }
        };
        Ok(if self.shared_trunk {
            ActorCriticNet {
                trunk: Some(mlp([&[o][..], h].concat())?),
                policy: mlp(vec![last, k])?,
                value: value(vec![last, 1])?,
                activation: self.activation,
            }
        } else {
            ActorCriticNet {
                trunk: None,
                policy: mlp([&[o][..], h, &[k]].concat())?,
                value: value([&[o][..], h, &[1]].concat())?,
                activation: self.activation,
            }
        })
    }
}

/// Logits and (optionally) state values from one network: separate MLPs, or heads on a
/// shared trunk.
#[derive(Module, Debug)]
pub struct ActorCriticNet {
    /// Shared hidden layers (`None` when policy and value are separate networks).
    pub trunk: Option<Mlp>,
    /// Logit head (the whole policy network when there is no trunk).
    pub policy: Mlp,
    /// Value head (the whole value network when there is no trunk); `None` without critic.
    pub value: Option<Mlp>,
    /// Nonlinearity applied after the trunk.
    #[module(skip)]
    pub activation: Activation,
}

impl ActorCriticNet {
    fn features(&self, obs: Tensor<2>) -> Tensor<2> {
        match &self.trunk {
            Some(t) => self.activation.apply(t.forward(obs)),
            None => obs,
        }
    }

    /// Logits `[batch, actions]` and values `[batch, 1]`.
    pub fn forward(&self, obs: Tensor<2>) -> (Tensor<2>, Option<Tensor<2>>) {
        let features = self.features(obs);
        let values = self.value.as_ref().map(|v| v.forward(features.clone()));
        (self.policy.forward(features), values)
    }

    /// Values `[batch, 1]` alone (`None` without a value head).
    pub fn values(&self, obs: Tensor<2>) -> Option<Tensor<2>> {
        let value = self.value.as_ref()?;
        Some(value.forward(self.features(obs)))
    }

    /// Number of discrete actions.
    pub fn actions(&self) -> usize {
        self.policy.output_dim()
    }
}
