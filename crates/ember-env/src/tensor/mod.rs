//! Tensor-native batched environments on any burn `Device` (CPU or GPU): the whole batch
//! steps as a few tensor operations, so observations never leave the device.

mod cartpole;

pub use cartpole::{TensorCartPole, TensorStep};
