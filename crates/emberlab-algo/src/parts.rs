//! The independent parts of an update on separate cores, for any learner: Ember's
//! [`emberlab_kernels::parts`] (the guarantees are there) and the [`UpdateSchedule`] that a
//! learner's config chooses it with. SAC, TD3, DQN and the REDQ example run their parts
//! through it; a learner keeps one [`Parts`] for its lifetime, so its helper threads start
//! once.
//!
//! An update with one large network step and little beside it can still use both cores
//! by its rows: each part differentiates the loss over its share of the batch's rows
//! ([`row_shares`], run as parts by [`run_by_rows`]) through its own copy of the network
//! ([`own_leaves`]), scaling its loss by its share of the rows, and [`sum_gradients`] adds
//! the parts' gradients, in order, before one optimizer step. TD3 and DQN run every update so.
//!
//! ```
//! use emberlab_algo::parts::{UpdateSchedule, part};
//!
//! # fn main() -> emberlab_core::Result<()> {
//! // Two "networks", each with its own loss and step, as a learner's critic and actor.
//! let (critic, actor) = (vec![1.0f32; 8], vec![-1.0f32; 8]);
//! let mut parts = UpdateSchedule::Parallel.parts("my-learner");
//! let critic_part = part(|| {
//!     let loss = critic.iter().map(|w| w * w).sum::<f32>();
//!     emberlab_core::Error::check_finite(|| "critic loss".into(), loss as f64)?;
//!     // The step, only if every part's loss is finite: it gives the part's result.
//!     Ok(move || (critic.iter().map(|w| w * 0.9).collect::<Vec<f32>>(), loss))
//! });
//! let actor_part = part(|| {
//!     let loss = actor.iter().sum::<f32>();
//!     Ok(move || (actor.iter().map(|w| w + 0.1).collect::<Vec<f32>>(), loss))
//! });
//! let ((critic, critic_loss), (actor, _)) = parts.run("update 0", (critic_part, actor_part))?;
//! assert_eq!((critic_loss, critic[0], actor[0]), (8.0, 0.9, -0.9));
//! # Ok(())
//! # }
//! ```

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::Tensor;
pub use emberlab_kernels::parts::{Commit, Group, Part, Parts, Setting, Tuning, part, tunings};
use serde::{Deserialize, Serialize};
use std::ops::Range;

/// How the parts of one update are scheduled (same results either way).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum UpdateSchedule {
    /// Parallel or sequential, with spinning or blocking waits: whichever the learner's own
    /// first updates run fastest on this machine, timed again when the load changes
    /// ([`Parts::auto`]; `ember train --json` reports the choice).
    #[default]
    Auto,
    /// The update's independent parts on two threads (the caller and a helper; whichever
    /// finishes its parts first takes blocks of the other's large matrix products while it
    /// waits).
    Parallel,
    /// Everything on the calling thread, one part after the other.
    Sequential,
}

impl UpdateSchedule {
    /// The most threads an update's parts are dealt to: 1 for sequential, else 2. (A
    /// learner asks its [`Parts::threads`] for the next update's.)
    pub fn threads(self) -> usize {
        match self {
            UpdateSchedule::Auto | UpdateSchedule::Parallel => 2,
            UpdateSchedule::Sequential => 1,
        }
    }

    /// A [`Parts`] for this schedule, its helpers named `name-1`, ... (and its choice
    /// reported under `name`).
    pub fn parts(self, name: &str) -> Parts {
        match self {
            UpdateSchedule::Auto => Parts::auto(self.threads()),
            _ => Parts::parallel(self.threads()),
        }
        .named(name)
    }
}

/// `n` rows dealt into `shares` contiguous, nearly equal ranges (the first ones take the
/// remainder), in order; empty ranges are left out, so fewer come back when `n < shares`.
pub fn row_shares(n: usize, shares: usize) -> Vec<Range<usize>> {
    let shares = shares.max(1);
    let (base, extra) = (n / shares, n % shares);
    let mut start = 0;
    (0..shares)
        .map(|k| {
            let len = base + usize::from(k < extra);
            let rows = start..start + len;
            start += len;
            rows
        })
        .filter(|r| !r.is_empty())
        .collect()
}

/// One part for each of [`row_shares`]`(rows, shares)`: `compute(range, share)` with
/// `share` the range's fraction of the rows (scale a loss by it, so the shares' gradients
/// add up to the whole batch's). Give them to [`Parts::run`] beside other parts, or run
/// them alone with [`run_by_rows`]; their results come back in row order. `shares` must
/// not depend on the schedule, so that both give the same bits.
pub fn row_parts<'a, T: Send + 'static>(
    (rows, shares): (usize, usize),
    compute: &'a (impl Fn(Range<usize>, f64) -> emberlab_core::Result<T> + Sync),
) -> Vec<Part<'a, T>> {
    row_shares(rows, shares)
        .into_iter()
        .map(|r| {
            part(move || {
                let share = r.len() as f64 / rows as f64;
                let done = compute(r, share)?;
                Ok(move || done)
            })
        })
        .collect()
}

/// Runs `compute` once for each of [`row_shares`]`(rows, shares)`, each share a part of its
/// own ([`row_parts`], [`Parts::run`]: side by side on the parallel schedule, all or
/// nothing), and returns the results in row order.
///
/// # Errors
/// [`Parts::run`]'s: the error of the lowest-numbered share that failed.
pub fn run_by_rows<T: Send + 'static>(
    parts: &mut Parts,
    what: &str,
    rows: (usize, usize),
    compute: impl Fn(Range<usize>) -> emberlab_core::Result<T> + Sync,
) -> emberlab_core::Result<Vec<T>> {
    let compute = |r, _share| compute(r);
    parts.run(what, row_parts(rows, &compute))
}

/// A copy of `module` (the same values and parameter ids) whose trainable parameters are
/// fresh leaves of their own autodiff graph; frozen ones stay as they are. Parts that
/// differentiate one network at the same time each take one, so their graphs share no
/// node, and [`GradientsParams::from_grads`] of the copy names the original's parameters.
pub fn own_leaves<M: Module>(module: &M) -> M {
    struct Leaves;
    impl ModuleMapper for Leaves {
        fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
            param.map(|t| match t.is_require_grad() {
                true => t.detach().require_grad(),
                false => t,
            })
        }
    }
    module.clone().map(&mut Leaves)
}

/// The parameter-by-parameter sum of several gradients of `module` (one per part that
/// differentiated it over its own rows), added in the order given, so the result does not
/// depend on which thread computed which. On flex the sums are
/// [`emberlab_kernels::add`]'s: a thread still waiting after the parallel run may take
/// blocks of a large network's sum.
pub fn sum_gradients<M: Module>(module: &M, grads: Vec<GradientsParams>) -> GradientsParams {
    struct Sum {
        parts: Vec<GradientsParams>,
        out: GradientsParams,
    }
    impl ModuleVisitor for Sum {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            let total = self
                .parts
                .iter_mut()
                .filter_map(|g| g.remove::<D>(param.id))
                .reduce(emberlab_kernels::add);
            if let Some(total) = total {
                self.out.register(param.id, total);
            }
        }
    }
    let _help = emberlab_kernels::helping::hold();
    let mut sum = Sum {
        parts: grads,
        out: GradientsParams::new(),
    };
    module.visit(&mut sum);
    sum.out
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::{Device, TensorData};
    use emberlab_nn::{Mlp, MlpConfig};

    #[test]
    fn row_shares_cover_the_rows_in_order() {
        assert_eq!(row_shares(256, 2), vec![0..128, 128..256]);
        assert_eq!(row_shares(7, 3), vec![0..3, 3..5, 5..7]);
        assert_eq!(row_shares(1, 2), vec![0..1]);
        assert_eq!(row_shares(0, 2), Vec::<Range<usize>>::new());
        assert_eq!(row_shares(5, 0), vec![0..5]);
    }

    /// A loss that is a mean over rows, differentiated over shares of the rows (each
    /// scaled by its fraction) through copies of their own, sums to the whole batch's
    /// gradient; the copies leave the network's own graph alone.
    #[test]
    fn shares_of_the_rows_sum_to_the_batch_gradient() {
        let device = Device::flex().autodiff();
        let net: Mlp = MlpConfig::new(vec![3, 8, 2]).init(&device).unwrap();
        let (n, x): (usize, Vec<f32>) = (7, (0..21).map(|i| (i as f32 * 0.37).sin()).collect());
        let rows = |r: &Range<usize>| {
            let t = TensorData::new(x[r.start * 3..r.end * 3].to_vec(), [r.len(), 3]);
            Tensor::<2>::from_data(t, &device)
        };
        let loss = |net: &Mlp, r: &Range<usize>| net.forward(rows(r)).powi_scalar(2).mean();
        let whole = GradientsParams::from_grads(loss(&net, &(0..n)).backward(), &net);
        let parts = row_shares(n, 2)
            .iter()
            .map(|r| {
                let copy = own_leaves(&net);
                let share = r.len() as f64 / n as f64;
                GradientsParams::from_grads(loss(&copy, r).mul_scalar(share).backward(), &copy)
            })
            .collect();
        let summed = sum_gradients(&net, parts);
        assert_eq!(summed.len(), whole.len());
        for layer in &net.layers {
            let (a, b) = (
                summed.get::<2>(layer.weight.id).unwrap().into_data(),
                whole.get::<2>(layer.weight.id).unwrap().into_data(),
            );
            a.assert_approx_eq::<f32>(&b, burn::tensor::Tolerance::absolute(1e-6));
        }
    }
}
