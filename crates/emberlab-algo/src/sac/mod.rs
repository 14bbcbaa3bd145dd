//! Soft actor-critic (Haarnoja et al. 2018) with twin critics as one fused ensemble,
//! automatic temperature and Polyak targets.
//!
//! Files by job: `config` (hyper-parameters, zoo presets, [`SacConfig::build`]), `update`
//! (the two halves of one update, run as two parts of `crate::parts`), `actor` (the actor
//! and temperature side any SAC-like learner shares), `learner` (the [`Sac`] learner: state,
//! acting, checkpoints, the trait glue). The maths lives in `emberlab-nn` (the networks, the
//! tanh-Gaussian sample) and `emberlab-loss` (the losses and targets); its fused operations
//! (`emberlab_kernels`) serve every algorithm built on those modules.
//!
//! ## Update semantics
//! One update uses the parameters from *before* the update everywhere — the original SAC's
//! simultaneous update (TensorFlow ran all steps in one `session.run`):
//! - the soft target `y = r + γ(1 − d)(min Q̄(s', a') − α log π(a'|s'))` uses the actor and
//!   the temperature from before this update;
//! - the critic step regresses `Q(s, a)` on `y`;
//! - the actor step minimises `α log π(a|s) − min Q(s, a)` through the critic from before
//!   this update's critic step (its weights get no gradient), and the temperature step
//!   uses the same `log π(a|s)`;
//! - then the targets move: `Q̄ ← (1 − τ) Q̄ + τ Q`.
//!
//! These parts are independent, so [`UpdateSchedule::Parallel`] runs the target + critic
//! step on one thread and the actor + temperature step on another. The critic half holds
//! more of the work (9 of the update's 16 large products against 7); the half that reaches
//! the gate first helps with the other's large products (`emberlab_kernels::parts`), the
//! same help every learner's parts get. The noise of both is drawn on the host before either
//! starts, so the parallel schedule computes exactly what [`UpdateSchedule::Sequential`]
//! computes (bit-identical, tested), and [`UpdateSchedule::Auto`] (the default) may move
//! between them from one update to the next, whichever times faster on the machine. Both
//! losses are checked before any parameter changes: a NaN or infinite loss returns
//! [`emberlab_core::Error::Diverged`] and leaves the learner as it was.

mod actor;
mod config;
mod learner;
mod update;

/// Held while a test builds networks: weight initialisation draws from the backend's global
/// generator, which a learner seeds just before (tests that compare two learners built
/// from one seed need no other test drawing in between).
#[cfg(test)]
fn building_networks() -> std::sync::MutexGuard<'static, ()> {
    static BUILD: std::sync::Mutex<()> = std::sync::Mutex::new(());
    BUILD.lock().unwrap_or_else(|e| e.into_inner())
}

pub use crate::parts::UpdateSchedule;
pub use actor::{ActorGrads, ActorStep, SacActor};
pub use config::SacConfig;
pub use learner::Sac;
