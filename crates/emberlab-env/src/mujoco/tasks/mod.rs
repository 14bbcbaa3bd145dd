//! The nine Gymnasium v5 tasks, one file each.

mod ant;
mod forward;
mod half_cheetah;
mod hopper;
mod humanoid;
mod inverted_double_pendulum;
mod inverted_pendulum;
mod reacher;
mod swimmer;
mod walker2d;

use super::task::Task;

/// The MuJoCo ids, in the order `emberlab_env::ids()` lists them.
pub(crate) use crate::registry::MUJOCO_IDS as IDS;

/// The task registered as `id`, or `None`.
pub(crate) fn task(id: &str) -> Option<Box<dyn Task>> {
    Some(match id {
        "HalfCheetah-v5" => Box::new(half_cheetah::half_cheetah()),
        "Hopper-v5" => Box::new(hopper::hopper()),
        "Walker2d-v5" => Box::new(walker2d::walker2d()),
        "Ant-v5" => Box::new(ant::Ant::default()),
        "Humanoid-v5" => Box::new(humanoid::Humanoid::default()),
        "Swimmer-v5" => Box::new(swimmer::swimmer()),
        "InvertedPendulum-v5" => Box::new(inverted_pendulum::InvertedPendulum),
        "InvertedDoublePendulum-v5" => Box::new(inverted_double_pendulum::InvertedDoublePendulum),
        "Reacher-v5" => Box::new(reacher::Reacher::default()),
        _ => return None,
    })
}
