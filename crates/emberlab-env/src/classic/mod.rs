//! Gymnasium's classic-control environments, reproduced to the last bits that matter:
//! constants, order of operations, `f32`/`f64` precision, reset ranges, rewards and
//! termination.

mod acrobot;
pub(crate) mod cartpole;
mod classic_env;
mod mountain_car;
mod mountain_car_continuous;
pub(crate) mod pendulum;
mod rk4;
mod seeding;

pub use acrobot::Acrobot;
pub use cartpole::CartPole;
pub use classic_env::ClassicEnv;
pub use mountain_car::MountainCar;
pub use mountain_car_continuous::MountainCarContinuous;
pub use pendulum::Pendulum;
pub use seeding::DEFAULT_SEED;
