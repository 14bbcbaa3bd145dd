//! # emberlab-labs
//!
//! Performance labs, each a program of its own (`cargo run --release -p emberlab-labs --bin
//! NAME`), that the benchmarks compare Ember against: not part of the library, not
//! published.
//!
//! | program | measures |
//! |---|---|
//! | `gemm_rate` | the GEMM library's rate on hot operands, one and two threads |
//! | `fma_peak` | the CPU's fused multiply-add peak per core |
//! | `sac_update_floor` | a SAC update hand-fused on host buffers: the floor for the library's |
//! | `frozen_speed` | frozen (host, no-autodiff) inference of a policy against burn's |
