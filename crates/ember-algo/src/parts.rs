//! The independent parts of an update on separate cores, for any learner: Ember's
//! [`ember_kernels::parts`] (the guarantees are there) and the [`UpdateSchedule`] that a
//! learner's config chooses it with. SAC, TD3 and the REDQ example run their parts through
//! it; a learner keeps one [`Parts`] for its lifetime, so its helper threads start once.
//!
//! ```
//! use ember_algo::parts::{UpdateSchedule, part};
//!
//! # fn main() -> ember_core::Result<()> {
//! // Two "networks", each with its own loss and step, as a learner's critic and actor.
//! let (mut critic, mut actor) = (vec![1.0f32; 8], vec![-1.0f32; 8]);
//! let mut parts = UpdateSchedule::Parallel.parts("my-learner");
//! let (mut critic_loss, mut actor_loss) = (0.0, 0.0);
//! let (c, a, c_loss, a_loss) = (&mut critic, &mut actor, &mut critic_loss, &mut actor_loss);
//! parts.run("update 0", vec![
//!     part(move || {
//!         *c_loss = c.iter().map(|w| w * w).sum::<f32>();
//!         ember_core::Error::check_finite(|| "critic loss".into(), *c_loss as f64)?;
//!         Ok(move || c.iter_mut().for_each(|w| *w *= 0.9)) // the step, only if all are finite
//!     }),
//!     part(move || {
//!         *a_loss = a.iter().sum::<f32>();
//!         Ok(move || a.iter_mut().for_each(|w| *w += 0.1))
//!     }),
//! ])?;
//! assert_eq!((critic_loss, critic[0]), (8.0, 0.9));
//! # Ok(())
//! # }
//! ```

pub use ember_kernels::parts::{Commit, Part, Parts, part};
use serde::{Deserialize, Serialize};

/// How the parts of one update are scheduled (same results either way).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UpdateSchedule {
    /// The update's independent parts on two threads (the caller and a helper; whichever
    /// finishes its parts first takes blocks of the other's large matrix products while it
    /// waits).
    #[default]
    Parallel,
    /// Everything on the calling thread, one part after the other.
    Sequential,
}

impl UpdateSchedule {
    /// The threads an update's parts are dealt to: 2 in parallel, else 1.
    pub fn threads(self) -> usize {
        match self {
            UpdateSchedule::Parallel => 2,
            UpdateSchedule::Sequential => 1,
        }
    }

    /// A [`Parts`] on [`UpdateSchedule::threads`] threads, its helpers named `name-1`, ...
    pub fn parts(self, name: &str) -> Parts {
        Parts::parallel(self.threads()).named(name)
    }
}
