//! The two halves of one SAC update (module docs of [`crate::sac`]), which the learner runs
//! as two parts ([`crate::parts`]: both losses are known to be finite before either half
//! steps). Each half works on shared handles (clones) of the learner's networks and hands
//! back stepped ones: nothing is taken out of the learner, so an error or a panic in either
//! half leaves it as it was.

use super::actor::{ActorGrads, ActorStep};
use crate::optimizer::step_in_place;
use burn::optim::{GradientsParams, ModuleOptimizer};
use burn::tensor::Tensor;
use emberlab_core::Result;
use emberlab_loss::{
    checked_loss, ensemble_td_errors, sac_critic_loss, sac_critic_loss_weighted, sac_target,
    sac_target_discounted,
};
use emberlab_nn::{CriticEnsemble, GaussianTanhPolicy, Temperature, polyak_update};
use std::sync::{Arc, Mutex};

/// One update's inputs, on the devices where they are used.
#[derive(Clone)]
pub(super) struct Inputs {
    pub obs: Tensor<2>,
    pub action: Tensor<2>,
    pub next_obs: Tensor<2>,
    pub reward: Tensor<2>,
    pub terminated: Tensor<2>,
    /// Per-row bootstrap discounts (n-step), or `None` for the config's γ.
    pub discount: Option<Tensor<2>>,
    /// Importance weights, or `None` when all are 1.
    pub weights: Option<Tensor<2>>,
    pub noise_next: Tensor<2>,
    pub noise_pi: Tensor<2>,
}

/// `(min Q̄(s', a'), log π(a'|s'))` over the next observations, with `a'` sampled by
/// `actor` (the actor from before this update, without autodiff).
fn next_values(
    actor: &GaussianTanhPolicy,
    target: &CriticEnsemble,
    x: &Inputs,
) -> (Tensor<2>, Tensor<2>) {
    let (action, log_prob) = actor.sample(x.next_obs.clone(), x.noise_next.clone());
    (target.min_q(x.next_obs.clone(), action), log_prob)
}

/// The critic half of an update, owning what it reads so that it can run on another
/// thread: soft target, critic loss and gradients, critic step, Polyak targets.
pub(super) struct CriticJob {
    pub critic: CriticEnsemble,
    pub target: CriticEnsemble,
    pub optim: Arc<Mutex<ModuleOptimizer>>,
    /// The actor from before this update, without autodiff (the next actions).
    pub next_actor: GaussianTanhPolicy,
    pub x: Inputs,
    pub lr: f64,
    pub alpha: f64,
    pub gamma: f64,
    pub tau: f64,
    pub step: u64,
}

/// What the critic half hands back: the stepped critic and targets, its loss and the
/// per-row TD errors.
pub(super) struct CriticDone {
    pub critic: CriticEnsemble,
    pub target: CriticEnsemble,
    pub loss: f64,
    pub td_errors: Vec<f32>,
}

impl CriticJob {
    /// The critic's forward pass, the soft TD target (no graph is built), the critic
    /// loss, its gradients and the TD errors.
    pub(super) fn grads(&self) -> (Result<f64>, GradientsParams, Vec<f32>) {
        let x = &self.x;
        let q = self.critic.forward(x.obs.clone(), x.action.clone());
        let (next_q, next_log_prob) = next_values(&self.next_actor, &self.target, x);
        let (r, d) = (x.reward.clone(), x.terminated.clone());
        let y = match &x.discount {
            None => sac_target(r, d, next_q, next_log_prob, self.alpha, self.gamma),
            Some(disc) => {
                sac_target_discounted(r, d, next_q, next_log_prob, self.alpha, disc.clone())
            }
        };
        let y = Tensor::from_inner(y);
        let td_errors = crate::tensors::host(ensemble_td_errors(q.clone(), y.clone()));
        let loss = match &x.weights {
            None => sac_critic_loss(q, y),
            Some(w) => sac_critic_loss_weighted(q, y, w.clone()),
        };
        let value = checked_loss("critic loss", &loss, self.step);
        let grads = GradientsParams::from_grads(loss.backward(), &self.critic);
        (value, grads, td_errors)
    }

    /// Steps the critic and moves the targets (both halves' losses are finite).
    pub(super) fn finish(self, loss: f64, grads: GradientsParams, td: Vec<f32>) -> CriticDone {
        let CriticJob {
            mut critic,
            target,
            optim,
            lr,
            tau,
            ..
        } = self;
        let mut optim = optim.lock().unwrap_or_else(|e| e.into_inner());
        crate::faults::site("sac.critic_step");
        step_in_place(&mut optim, lr, &mut critic, grads);
        let target = polyak_update(target, &critic, tau);
        CriticDone {
            critic,
            target,
            loss,
            td_errors: td,
        }
    }
}

/// The actor + temperature half's inputs.
pub(super) struct ActorJob<'a> {
    pub step: ActorStep<'a>,
    /// The critic from before this update, its weights frozen (gradients flow through
    /// the action only).
    pub frozen_critic: &'a CriticEnsemble,
    pub x: &'a Inputs,
}

/// What the actor half hands back: the stepped actor and temperature (when it is learnt)
/// and the losses.
pub(super) struct ActorDone {
    pub actor: GaussianTanhPolicy,
    pub temperature: Option<Temperature>,
    pub actor_loss: f64,
    pub alpha_loss: Option<f64>,
}

impl ActorJob<'_> {
    /// The losses (checked) and gradients against the minimum of the frozen critics.
    pub(super) fn losses_and_grads(&self) -> Result<ActorGrads> {
        let (x, critic) = (self.x, self.frozen_critic);
        let rows = (x.obs.clone(), x.noise_pi.clone());
        self.step
            .grads(rows, 1.0, |obs, act| critic.min_q(obs, act))
    }
}
