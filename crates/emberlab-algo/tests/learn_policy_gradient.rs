//! A2C and REINFORCE learn CartPole-v1: mean evaluation return ≥ 475 (10 deterministic
//! episodes) at an evaluation within the stated budgets, on flex. Training stops at the
//! first evaluation that reaches the goal (`target_return`).

mod common;

use emberlab_algo::{A2cConfig, OnPolicyConfig, ReinforceConfig};
use emberlab_env::{SyncVecEnv, VecEnv};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// A2C: zoo's settings (8 envs, n_steps 5, RMSprop 7e-4), budget 500k env steps as zoo.
fn a2c() {
    let device = emberlab_backend::DeviceSpec::Flex.device().unwrap();
    let (config, trainer, envs) = A2cConfig::zoo("CartPole-v1").unwrap();
    let config = A2cConfig { seed: 1, ..config };
    let trainer = OnPolicyConfig {
        eval_every: 25_000,
        target_return: Some(475.0),
        seed: 1,
        ..trainer
    };
    let mut env = SyncVecEnv::from_id("CartPole-v1", envs).unwrap();
    let mut learner = config
        .build(
            env.single_observation_space(),
            env.single_action_space(),
            &emberlab_algo::Devices::same(&device),
        )
        .unwrap();
    let report = common::train_on(&mut learner, &mut env, "CartPole-v1", &trainer).unwrap();
    let best = common::best_eval("A2C CartPole-v1", &report);
    assert!(best >= 475.0, "A2C: best evaluation {best} < 475");
}

/// REINFORCE with a value baseline (defaults: Adam 3e-3, standardised advantages): 8 envs,
/// rollouts of 1000 steps (whole episodes), budget 400k env steps.
fn reinforce() {
    let device = emberlab_backend::DeviceSpec::Flex.device().unwrap();
    let config = ReinforceConfig {
        seed: 1,
        ..ReinforceConfig::default()
    };
    let trainer = OnPolicyConfig {
        total_steps: 400_000,
        n_steps: 1000,
        eval_every: 24_000,
        target_return: Some(475.0),
        seed: 1,
        ..OnPolicyConfig::default()
    };
    let mut env = SyncVecEnv::from_id("CartPole-v1", 8).unwrap();
    let mut learner = config
        .build(
            env.single_observation_space(),
            env.single_action_space(),
            &emberlab_algo::Devices::same(&device),
        )
        .unwrap();
    let report = common::train_on(&mut learner, &mut env, "CartPole-v1", &trainer).unwrap();
    let best = common::best_eval("REINFORCE CartPole-v1", &report);
    assert!(best >= 475.0, "REINFORCE: best evaluation {best} < 475");
}

#[test]
fn a2c_cartpole_reaches_475() {
    let _serial = common::serial();
    a2c();
}

#[test]
fn reinforce_cartpole_reaches_475() {
    let _serial = common::serial();
    reinforce();
}
