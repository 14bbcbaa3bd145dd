//! TD3 learns Pendulum-v1 with rl-baselines3-zoo's hyper-parameters (zoo: −152 at 20k):
//! mean evaluation return ≥ −200 (10 deterministic episodes) at an evaluation within 20k
//! env steps, on flex, seed 1. Training stops at the first evaluation that reaches it.

mod common;

use emberlab_algo::{OffPolicyConfig, Td3Config};
use emberlab_env::{SyncVecEnv, VecEnv};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[test]
fn td3_pendulum_reaches_minus_200_within_20k() {
    let _serial = common::serial();
    let device = emberlab_backend::DeviceSpec::Flex.device().unwrap();
    let (config, trainer) = Td3Config::zoo("Pendulum-v1").unwrap();
    let config = Td3Config { seed: 1, ..config };
    let trainer = OffPolicyConfig {
        eval_every: 1_000,
        target_return: Some(-200.0),
        seed: 1,
        ..trainer
    };
    assert_eq!(trainer.total_steps, 20_000);
    let mut env = SyncVecEnv::from_id("Pendulum-v1", 1).unwrap();
    let mut td3 = config
        .build(
            env.single_observation_space(),
            env.single_action_space(),
            &emberlab_algo::Devices::same(&device),
        )
        .unwrap();
    let report = common::train_off(&mut td3, &mut env, "Pendulum-v1", &trainer).unwrap();
    let best = common::best_eval("TD3 Pendulum-v1", &report);
    assert!(best >= -200.0, "TD3: best evaluation {best} < -200");
}
