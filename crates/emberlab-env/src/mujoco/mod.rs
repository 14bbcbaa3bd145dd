//! Native MuJoCo tasks (cargo feature `mujoco`): Gymnasium 1.4's v5 HalfCheetah, Hopper,
//! Walker2d, Ant, Humanoid, Swimmer, InvertedPendulum, InvertedDoublePendulum and Reacher,
//! on the MuJoCo 3.17.0 library of PyPI's `mujoco` wheel, loading the task XML files from
//! the installed `gymnasium` package.

mod env;
mod numpy_sum;
#[cfg(feature = "mujoco-render")]
mod render;
mod sim;
mod task;
mod tasks;

pub use env::MujocoEnv;
#[cfg(feature = "mujoco-render")]
pub use render::MujocoRenderer;
pub use sim::{ASSETS_VAR, default_xml_path};
