//! SAC's actor side, for SAC and for any learner of its family (REDQ, CrossQ: the
//! examples): [`ActorStep`] takes the actor's and the temperature's gradients against any
//! critic, [`ActorGrads::sum`] adds the shares of several parts, and [`SacActor`] holds the
//! policy, the temperature and their optimizers as one value that steps on a clone.

use crate::agent::OnnxOutput;
use crate::optimizer::{OptimizerKind, stepped};
use crate::parts::{own_leaves, sum_gradients};
use crate::persist::Visitor;
use burn::optim::{GradientsParams, ModuleOptimizer};
use burn::tensor::{Device, Tensor};
use emberlab_core::{BoxSpace, Result};
use emberlab_loss::{checked_loss, sac_actor_loss, sac_temperature_loss};
use emberlab_nn::{GaussianTanhPolicy, GaussianTanhPolicyConfig, Temperature};

/// SAC's actor and temperature step against any critic: the actor minimises
/// `α log π(a|s) − Q(s, a)` for actions sampled from it, and the temperature (when it is
/// learnt) moves `log π` towards the target entropy. SAC takes `Q` as the minimum of its
/// twin critics; REDQ takes the mean of its ensemble, CrossQ its batch-normalised critic
/// (the examples). Several [`ActorStep::grads`] over shares of the rows may run at once
/// (each differentiates copies of its own), and [`ActorGrads::sum`] adds them for one step.
#[derive(Clone, Copy, Debug)]
pub struct ActorStep<'a> {
    /// The actor.
    pub actor: &'a GaussianTanhPolicy,
    /// The temperature, when it is learnt.
    pub temperature: Option<&'a Temperature>,
    /// α in the actor loss (the temperature's value before this update).
    pub alpha: f64,
    /// The entropy the temperature steers to (usually `−act_dim`).
    pub target_entropy: f64,
    /// The update's number, for the losses' errors.
    pub update: u64,
}

/// The gradients and losses of one [`ActorStep`] (or the sum of several shares').
pub struct ActorGrads {
    /// The actor's gradients.
    pub actor: GradientsParams,
    /// The temperature's, when it is learnt.
    pub temperature: Option<GradientsParams>,
    /// The actor loss.
    pub actor_loss: f64,
    /// The temperature loss, when it is learnt.
    pub temperature_loss: Option<f64>,
}

impl ActorStep<'_> {
    /// The gradients over the rows `obs` (actions from the standard normal `eps`: one row
    /// per row, or the policy's gSDE noise shape), through `q(obs, actions)` — whose own
    /// weights should be frozen — with both losses scaled by `share` (the rows' fraction of
    /// the batch; 1 for the whole batch). Both losses are checked.
    ///
    /// # Errors
    /// [`emberlab_core::Error::Diverged`] naming the loss that is not finite.
    pub fn grads(
        &self,
        (obs, eps): (Tensor<2>, Tensor<2>),
        share: f64,
        q: impl FnOnce(Tensor<2>, Tensor<2>) -> Tensor<2>,
    ) -> Result<ActorGrads> {
        let scaled = |t: Tensor<1>| if share == 1.0 { t } else { t.mul_scalar(share) };
        let actor = own_leaves(self.actor);
        let temperature = self.temperature.map(own_leaves);
        let (action, log_prob) = actor.sample(obs.clone(), eps);
        let actor_loss = scaled(sac_actor_loss(log_prob.clone(), q(obs, action), self.alpha));
        let actor_value = checked_loss("actor loss", &actor_loss, self.update)?;
        let (total, alpha_value) = match &temperature {
            Some(t) => {
                let target = self.target_entropy;
                let l = scaled(sac_temperature_loss(t.log_alpha.val(), log_prob, target));
                let v = checked_loss("temperature loss", &l, self.update)?;
                (actor_loss + l, Some(v))
            }
            None => (actor_loss, None),
        };
        let mut grads = total.backward();
        Ok(ActorGrads {
            actor: GradientsParams::from_module(&mut grads, &actor),
            temperature: temperature.map(|t| GradientsParams::from_module(&mut grads, &t)),
            actor_loss: actor_value,
            temperature_loss: alpha_value,
        })
    }
}

impl ActorGrads {
    /// The shares' gradients and losses added in the order given ([`sum_gradients`]), for
    /// `actor` and `temperature`.
    pub fn sum(
        shares: Vec<ActorGrads>,
        actor: &GaussianTanhPolicy,
        temperature: Option<&Temperature>,
    ) -> ActorGrads {
        let actor_loss = shares.iter().map(|s| s.actor_loss).sum();
        let temperature_loss = shares.iter().map(|s| s.temperature_loss).sum();
        let (a, t): (Vec<_>, Vec<_>) = shares.into_iter().map(|s| (s.actor, s.temperature)).unzip();
        ActorGrads {
            actor: sum_gradients(actor, a),
            temperature: temperature.map(|m| sum_gradients(m, t.into_iter().flatten().collect())),
            actor_loss,
            temperature_loss,
        }
    }
}

/// The actor side of a SAC-family learner: the tanh-Gaussian policy, the learnt
/// temperature (α = 1 at first, target entropy `−act_dim`) and their Adam optimizers, with
/// one learning rate. It steps on a clone ([`SacActor::stepped`]), so a learner moves the
/// result in only when its whole update succeeded.
#[derive(Clone)]
pub struct SacActor {
    /// The policy.
    pub policy: GaussianTanhPolicy,
    /// The temperature.
    pub temperature: Temperature,
    /// The policy's and the temperature's optimizers.
    pub optims: [ModuleOptimizer; 2],
    /// Both optimizers' learning rate.
    pub lr: f64,
}

impl std::fmt::Debug for SacActor {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.debug_struct("SacActor")
            .field("act_dim", &self.policy.act_dim)
            .field("alpha", &self.temperature.alpha())
            .field("lr", &self.lr)
            .finish_non_exhaustive()
    }
}

impl SacActor {
    /// For observations of `obs_dim` values and actions in `action`, hidden layers `hidden`
    /// (`None`: SAC's 256 × 256), on the learn device `learn`.
    ///
    /// # Errors
    /// A zero width.
    pub fn new(
        obs_dim: usize,
        action: &BoxSpace,
        hidden: Option<Vec<usize>>,
        lr: f64,
        learn: &Device,
    ) -> Result<SacActor> {
        let config = GaussianTanhPolicyConfig::new(obs_dim, action.dim())
            .with_bounds(action.low().to_vec(), action.high().to_vec());
        let config = match hidden {
            Some(h) => config.with_hidden(h),
            None => config,
        };
        let adam = || OptimizerKind::Adam.build(0.0, learn);
        Ok(SacActor {
            policy: config.init(learn)?,
            temperature: Temperature::new(1.0, learn)?,
            optims: [adam(), adam()],
            lr,
        })
    }

    /// The step of update `update` (α from the temperature now).
    pub fn step(&self, update: u64) -> ActorStep<'_> {
        ActorStep {
            actor: &self.policy,
            temperature: Some(&self.temperature),
            alpha: self.temperature.alpha(),
            target_entropy: -(self.policy.act_dim as f64),
            update,
        }
    }

    /// A copy stepped by the sum of `shares` (of [`SacActor::step`]: one for the whole
    /// batch, or one per part that took a share of the rows), and the summed actor loss.
    pub fn stepped(&self, shares: Vec<ActorGrads>) -> (SacActor, f64) {
        let grads = ActorGrads::sum(shares, &self.policy, Some(&self.temperature));
        let (policy, policy_optim) = stepped(&self.policy, &self.optims[0], self.lr, grads.actor);
        let (temperature, alpha_optim) = match grads.temperature {
            Some(g) => stepped(&self.temperature, &self.optims[1], self.lr, g),
            None => (self.temperature.clone(), self.optims[1].clone()),
        };
        let next = SacActor {
            policy,
            temperature,
            optims: [policy_optim, alpha_optim],
            lr: self.lr,
        };
        (next, grads.actor_loss)
    }

    /// Visits the policy (`actor`), the temperature and both optimizers (`actor_optim`,
    /// `alpha_optim`), for the learner's [`crate::Persist`] list.
    ///
    /// # Errors
    /// As the visitor's.
    pub fn persist<V: Visitor>(&mut self, v: &mut V) -> Result<()> {
        v.net("actor", &mut self.policy)?;
        v.net("temperature", &mut self.temperature)?;
        v.optim("actor_optim", &mut self.optims[0])?;
        v.optim("alpha_optim", &mut self.optims[1])
    }

    /// The greedy policy `action = scale · tanh(μ(obs)) + bias` as the ONNX output
    /// `action`, for the learner's [`crate::OnnxPolicy`].
    ///
    /// # Errors
    /// As [`GaussianTanhPolicy::deterministic_onnx`].
    pub fn onnx_outputs(
        &self,
        g: &mut emberlab_nn::OnnxGraph,
        obs: &str,
    ) -> Result<Vec<OnnxOutput>> {
        let value = self.policy.deterministic_onnx(g, obs)?;
        let width = Some(self.policy.act_dim);
        Ok(vec![OnnxOutput {
            value,
            name: "action",
            width,
        }])
    }
}
