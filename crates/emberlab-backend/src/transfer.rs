//! Moving modules between devices and backends (learner on libtorch or a GPU, actors on
//! flex): weights travel through host memory, parameter ids are kept.

use burn::module::Module;
use burn::tensor::Device;

/// A copy of `module` on `device`, without autodiff tracking: what an actor needs.
/// The original is left untouched, so a learner can keep training it.
pub fn inference_copy<M: Module>(module: &M, device: &Device) -> M {
    module.valid().to_device(&device.clone().without_autodiff())
}

/// Moves `module` to `device` to keep training it there (the device may have autodiff, for
/// a learner): parameters become trainable leaves on the destination (burn's `fork`), not
/// the output of a differentiable copy, which an optimizer could not step.
pub fn move_to<M: Module>(module: M, device: &Device) -> M {
    module.fork(device)
}
