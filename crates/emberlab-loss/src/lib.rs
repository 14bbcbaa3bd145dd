//! # emberlab-loss
//!
//! Pure loss and return functions for RL, on burn tensors (any backend) or host slices.
//!
//! - TD targets that mask `terminated` but not `truncated`: [`td_target`],
//!   [`td_target_discounted`], [`double_dqn_target`].
//! - [`mse`], [`huber`], and their importance-weighted forms for prioritized replay
//!   ([`mse_weighted`], [`huber_weighted`], [`sac_critic_loss_weighted`]); per-row TD
//!   errors of an ensemble ([`ensemble_td_errors`]) to hand back as priorities.
//! - SAC: [`sac_target`] (and [`sac_target_discounted`] for n-step rows), [`sac_critic_loss`], [`sac_actor_loss`], [`sac_temperature_loss`].
//! - [`policy_gradient_loss`], [`entropy_loss`].
//! - [`discounted_returns`] and [`gae`] over time-major rollouts of many environments.
//! - [`checked_loss`]: a NaN or infinite loss becomes an error naming the loss.
//!
//! ```
//! use burn::tensor::{Tensor, TensorData};
//! use emberlab_loss::td_target;
//!
//! let device = emberlab_backend::DeviceSpec::Flex.device()?;
//! let col = |v: Vec<f32>| Tensor::<2>::from_data(TensorData::new(v, [2, 1]), &device);
//! // The second transition terminated: no bootstrap.
//! let y = td_target(col(vec![1.0, 1.0]), col(vec![0.0, 1.0]), col(vec![10.0, 10.0]), 0.9);
//! assert_eq!(y.into_data().try_into_vec_as::<f32>().unwrap(), vec![10.0, 1.0]);
//! # Ok::<(), emberlab_core::Error>(())
//! ```

#![warn(missing_docs)]

mod check;
mod policy_gradient;
mod regression;
mod returns;
mod sac;
mod td;

pub use check::{checked_loss, checked_value};
pub use policy_gradient::{clipped_values, entropy_loss, policy_gradient_loss, ppo_clip_loss};
pub use regression::{huber, huber_weighted, mse, mse_weighted};
pub use returns::{Rollout, discounted_returns, gae};
pub use sac::{
    ensemble_td_errors, sac_actor_loss, sac_critic_loss, sac_critic_loss_weighted, sac_target,
    sac_target_discounted, sac_temperature_loss,
};
pub use td::{double_dqn_target, double_dqn_value, td_target, td_target_discounted};
