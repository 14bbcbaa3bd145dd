//! The pair of devices a learner works on.

use burn::tensor::Device;

/// Where a learner learns (its networks and optimizer, with autodiff added) and where it
/// acts (an inference copy refreshed from the learner): named, so that the two cannot be
/// swapped silently. Problem 3 of the design: learn on a GPU, act on CPU.
#[derive(Clone, Debug)]
pub struct Devices {
    /// Where the networks train.
    pub learn: Device,
    /// Where the acting copy runs.
    pub act: Device,
}

impl Devices {
    /// Learning on `learn`, acting on `act`.
    pub fn new(learn: Device, act: Device) -> Self {
        Devices { learn, act }
    }

    /// Learning and acting on one device.
    pub fn same(device: &Device) -> Self {
        Devices {
            learn: device.clone(),
            act: device.clone(),
        }
    }
}
