//! The acting copy of a learner's policy: an inference copy (no autodiff) on the acting
//! device, refreshed from the learner every N updates (problem 3: learn on a GPU, act on
//! CPU; weights travel through host memory) — and, when it acts on a host CPU, the same
//! weights frozen for the host fast path ([`Frozen`]: plain loops over the weights, several
//! times faster than the tensor path at a few rows), kept in step with every refresh,
//! restore and load. Every learner that acts through an `ActingCopy<M, F>` with a frozen
//! form `F` gets the fast path: SAC, TD3, DQN, the REDQ and CrossQ examples.

use burn::module::Module;
use burn::tensor::Device;
use emberlab_backend::inference_copy;
use emberlab_core::{EmberRng, Result};
use emberlab_nn::{
    DiscreteQ, FROZEN_MAX_ROWS, FrozenGaussianTanhPolicy, FrozenMlp, GaussianTanhPolicy, Mlp,
};

/// A host form of a module for acting fast on a few rows, refreshed from it.
pub trait Frozen<M>: Sized + Send {
    /// The frozen form of `module`, or `None` where there is none (a network the fast path
    /// does not cover).
    fn freeze(module: &M) -> Option<Self>;

    /// Copies `module`'s current weights in.
    ///
    /// # Errors
    /// A module of other shapes (then the acting copy drops its frozen form and acts
    /// through tensors).
    fn refresh(&mut self, module: &M) -> Result<()>;
}

/// No frozen form: the acting copy acts through tensors only.
#[derive(Clone, Copy, Debug, Default)]
pub struct Unfrozen;

impl<M> Frozen<M> for Unfrozen {
    fn freeze(_: &M) -> Option<Self> {
        None
    }

    fn refresh(&mut self, _: &M) -> Result<()> {
        Ok(())
    }
}

impl Frozen<Mlp> for FrozenMlp {
    fn freeze(module: &Mlp) -> Option<Self> {
        FrozenMlp::new(module).ok()
    }

    fn refresh(&mut self, module: &Mlp) -> Result<()> {
        FrozenMlp::refresh(self, module)
    }
}

impl Frozen<GaussianTanhPolicy> for FrozenGaussianTanhPolicy {
    fn freeze(module: &GaussianTanhPolicy) -> Option<Self> {
        FrozenGaussianTanhPolicy::new(module).ok()
    }

    fn refresh(&mut self, module: &GaussianTanhPolicy) -> Result<()> {
        FrozenGaussianTanhPolicy::refresh(self, module)
    }
}

impl Frozen<DiscreteQ> for FrozenMlp {
    /// `None` for a Q-network on pixels (its encoder has no frozen form yet).
    fn freeze(module: &DiscreteQ) -> Option<Self> {
        match module.encoder {
            None => FrozenMlp::new(&module.net).ok(),
            Some(_) => None,
        }
    }

    fn refresh(&mut self, module: &DiscreteQ) -> Result<()> {
        FrozenMlp::refresh(self, &module.net)
    }
}

/// An acting copy as it was before an update's part refreshed it early
/// ([`ActingCopy::after_update_early`]): the module (its tensors shared, not copied) and the
/// update count.
#[derive(Debug)]
pub struct ActingBefore<M> {
    module: M,
    since: u64,
}

/// The acting copy of a tanh-Gaussian policy with its host fast path (SAC, REDQ, CrossQ).
pub type GaussianActing = ActingCopy<GaussianTanhPolicy, FrozenGaussianTanhPolicy>;

/// An inference copy of a module on the acting device, with its frozen form `F` when it
/// acts on a host CPU.
#[derive(Debug)]
pub struct ActingCopy<M: Module, F: Frozen<M> = Unfrozen> {
    device: Device,
    module: M,
    every: u64,
    since: u64,
    frozen: Option<F>,
}

impl<M: Module, F: Frozen<M>> ActingCopy<M, F> {
    /// Copies `online` to `device` (and freezes it there when `device` is a host CPU);
    /// [`ActingCopy::after_update`] refreshes it every `every` updates (0 is treated as 1).
    pub fn new(online: &M, device: &Device, every: u64) -> Self {
        let module = inference_copy(online, device);
        let host = emberlab_backend::is_host_cpu(device);
        ActingCopy {
            device: device.clone(),
            frozen: host.then(|| F::freeze(&module)).flatten(),
            module,
            every: every.max(1),
            since: 0,
        }
    }

    /// The frozen form, for a batch of `rows` observations small enough for the fast path
    /// (`None`: act through [`ActingCopy::module`]).
    pub fn frozen(&mut self, rows: usize) -> Option<&mut F> {
        self.frozen.as_mut().filter(|_| rows < FROZEN_MAX_ROWS)
    }

    /// Brings the frozen form up to the module (dropping it if it no longer fits).
    fn refreeze(&mut self) {
        if let Some(f) = &mut self.frozen
            && f.refresh(&self.module).is_err()
        {
            self.frozen = None;
        }
    }

    /// The acting module.
    pub fn module(&self) -> &M {
        &self.module
    }

    /// The acting device.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Counts one update of `online` and refreshes the copy when due; returns whether it
    /// did.
    pub fn after_update(&mut self, online: &M) -> bool {
        self.since += 1;
        if self.since >= self.every {
            self.refresh(online);
            return true;
        }
        false
    }

    /// [`ActingCopy::after_update`] from inside an update's part, before the update has
    /// committed: the refresh then runs while the update's other parts still step. The
    /// returned [`ActingBefore`] goes to [`ActingCopy::failed`] if the update fails, and to
    /// [`ActingCopy::committed`] when it commits.
    pub fn after_update_early(&mut self, online: &M) -> ActingBefore<M> {
        let before = ActingBefore {
            module: self.module.clone(),
            since: self.since,
        };
        self.after_update(online);
        before
    }

    /// An update of `online` committed: counts it through [`ActingCopy::after_update`]
    /// unless a part already did so early (`early` is what
    /// [`ActingCopy::after_update_early`] returned, if it ran).
    pub fn committed(&mut self, online: &M, early: Option<ActingBefore<M>>) {
        if early.is_none() {
            self.after_update(online);
        }
    }

    /// An update failed: puts the copy back as it was before
    /// [`ActingCopy::after_update_early`] if a part refreshed it early (`early` as in
    /// [`ActingCopy::committed`]).
    pub fn failed(&mut self, early: Option<ActingBefore<M>>) {
        if let Some(before) = early {
            self.restore(before.module, before.since);
        }
    }

    /// Updates counted since the last refresh.
    pub fn since(&self) -> u64 {
        self.since
    }

    /// Writes the acting module (values and parameter ids) as `<dir>/acting.bpk`; save
    /// [`ActingCopy::since`] with the learner's scalars.
    ///
    /// # Errors
    /// An I/O error.
    pub fn save_state(&self, dir: &std::path::Path) -> emberlab_core::Result<()> {
        crate::training_state::save_net(&self.module, dir, "acting")
    }

    /// The acting module of `<dir>/acting.bpk` (the copy itself is unchanged: see
    /// [`ActingCopy::restore`]).
    ///
    /// # Errors
    /// A missing, unreadable or mismatched file.
    pub fn load_module(&self, dir: &std::path::Path) -> emberlab_core::Result<M> {
        crate::training_state::load_net(self.module.clone(), dir, "acting")
    }

    /// Puts back a saved acting module and update counter.
    pub fn restore(&mut self, module: M, since: u64) {
        self.module = module;
        self.since = since;
        self.refreeze();
    }

    /// Copies `online` now.
    pub fn refresh(&mut self, online: &M) {
        self.module = inference_copy(online, &self.device);
        self.since = 0;
        self.refreeze();
    }

    /// `online` with its parameters loaded from flat `weights` ([`emberlab_nn::flat_params`]
    /// of a module of the same architecture), and this copy refreshed from it.
    ///
    /// # Errors
    /// Weights of another length, or not finite (nothing changes then).
    pub fn load_flat(&mut self, online: M, weights: &[f32]) -> Result<M> {
        let online = emberlab_nn::load_flat_params(online, weights)?;
        self.refresh(&online);
        Ok(online)
    }
}

impl GaussianActing {
    /// Actions for the rows of `obs` into `out`: sampled with noise from `rng` when
    /// `explore`, else deterministic; through the frozen form for a few rows on a host CPU,
    /// else through the module (the same draws from `rng` either way).
    ///
    /// # Errors
    /// Observations whose length is not a multiple of `obs_dim`.
    pub fn act(
        &mut self,
        obs: &[f32],
        obs_dim: usize,
        explore: bool,
        rng: &mut EmberRng,
        out: &mut Vec<f32>,
    ) -> Result<()> {
        let rows = obs.len() / obs_dim.max(1);
        emberlab_core::Error::check_len(
            "observations (batch × obs_dim)",
            rows * obs_dim,
            obs.len(),
        )?;
        if let Some(frozen) = self.frozen(rows) {
            return match explore {
                true => frozen.act(obs, rng, out),
                false => frozen.deterministic(obs, out),
            };
        }
        let (x, _) = crate::tensors::obs_batch(obs, obs_dim, &self.device)?;
        match explore {
            true => self.module.act_host(x, rng, out),
            false => *out = crate::tensors::host(self.module.deterministic(x)),
        }
        Ok(())
    }
}
