//! SAC learns InvertedPendulum-v5 (MuJoCo): a deterministic evaluation of 10 episodes
//! reaches the maximum return, 1,000, within 30,000 env steps (here at 15,000, 36 s in a
//! test build), on flex with SB3's SAC defaults (256×256 networks, lr 3e-4, batch 256) after
//! 1,000 random steps. Training stops at the first evaluation that reaches it. Needs
//! `EMBER_GYMNASIUM_ASSETS` (scripts/setup-mujoco.sh).

mod common;

use emberlab_algo::{OffPolicyConfig, SacConfig};
use emberlab_env::{SyncVecEnv, VecEnv};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

#[test]
fn sac_balances_the_inverted_pendulum() {
    let _serial = common::serial();
    let id = "InvertedPendulum-v5";
    let device = emberlab_backend::DeviceSpec::Flex.device().unwrap();
    let config = SacConfig {
        seed: 3,
        ..SacConfig::default()
    };
    let trainer = OffPolicyConfig {
        total_steps: 30_000,
        learning_starts: 1_000,
        eval_every: 1_000,
        eval_episodes: 10,
        target_return: Some(1_000.0),
        seed: 3,
        ..OffPolicyConfig::default()
    };
    let mut env = SyncVecEnv::from_id(id, 1).unwrap();
    let mut sac = config
        .build(
            env.single_observation_space(),
            env.single_action_space(),
            &emberlab_algo::Devices::same(&device),
        )
        .unwrap();
    let report = common::train_off(&mut sac, &mut env, id, &trainer).unwrap();
    let best = common::best_eval("SAC InvertedPendulum-v5", &report);
    assert!(best >= 1_000.0, "best evaluation {best} < 1000");
}
