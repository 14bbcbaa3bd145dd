//! The Gymnasium bridge (cargo feature `gym`): `gym:ID` ids step any installed Gymnasium
//! environment with Box or Discrete spaces in Python worker processes, one per environment
//! (`bridge.py`, run by the interpreter in `EMBER_PYTHON`, else `python3`).

mod env;
mod worker;

pub use env::GymEnv;
pub use worker::PYTHON_VAR;
