//! The Gymnasium bridge (cargo feature `gym`): `gym:ID` ids step any installed Gymnasium
//! environment with Box or Discrete spaces in Python worker processes, one per environment
//! (`bridge.py`, run by the interpreter in `EMBER_PYTHON`, else `python3`); [`AtariEnv`]
//! steps Atari games the same way, through SB3's `AtariWrapper` (`atari.py`).

mod atari;
mod env;
mod worker;

pub use atari::{AtariConfig, AtariEnv, AtariStep, default_workers};
pub use env::GymEnv;
pub use worker::{PYTHON_VAR, default_python};
