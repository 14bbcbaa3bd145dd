//! The acting copy of a learner's policy: an inference copy (no autodiff) on the acting
//! device, refreshed from the learner every N updates (problem 3: learn on a GPU, act on
//! CPU; weights travel through host memory).

use burn::module::Module;
use burn::tensor::Device;
use emberlab_backend::inference_copy;

/// An inference copy of a module on the acting device.
#[derive(Debug)]
pub struct ActingCopy<M: Module> {
    device: Device,
    module: M,
    every: u64,
    since: u64,
}

impl<M: Module> ActingCopy<M> {
    /// Copies `online` to `device`; [`ActingCopy::after_update`] refreshes it every `every`
    /// updates (0 is treated as 1).
    pub fn new(online: &M, device: &Device, every: u64) -> Self {
        ActingCopy {
            device: device.clone(),
            module: inference_copy(online, device),
            every: every.max(1),
            since: 0,
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
    }

    /// Copies `online` now.
    pub fn refresh(&mut self, online: &M) {
        self.module = inference_copy(online, &self.device);
        self.since = 0;
    }

    /// `online` with its parameters loaded from flat `weights` ([`emberlab_nn::flat_params`]
    /// of a module of the same architecture), and this copy refreshed from it.
    ///
    /// # Errors
    /// Weights of another length, or not finite (nothing changes then).
    pub fn load_flat(&mut self, online: M, weights: &[f32]) -> emberlab_core::Result<M> {
        let online = emberlab_nn::load_flat_params(online, weights)?;
        self.refresh(&online);
        Ok(online)
    }
}
