//! Tensor-native batched environments on any burn `Device` (CPU or GPU): the whole batch
//! steps as a few tensor operations, so observations never leave the device.

mod cartpole;
mod episode_clock;
mod pendulum;
mod tensor_step;
mod uniform_column;

pub use cartpole::TensorCartPole;
pub use pendulum::TensorPendulum;
pub use tensor_step::TensorStep;
