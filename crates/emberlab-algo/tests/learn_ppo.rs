//! PPO and continuous A2C learn, with zoo's presets and fixed seeds, on flex: PPO reaches
//! 475 on CartPole-v1 within zoo's 100k env steps, and −200 on Pendulum-v1 (with gSDE, as
//! zoo); A2C reaches the Pendulum-v1 bar stated in `docs/results.md` beside zoo's score
//! (zoo normalises observations and rewards there, this preset does not). Training stops
//! at the first evaluation that reaches the bar.

mod common;

use emberlab_algo::{A2cConfig, OnPolicyConfig, OnPolicyLearner, PpoConfig, TrainReport};
use emberlab_env::{SyncVecEnv, VecEnv};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn run<L: OnPolicyLearner>(
    build: impl FnOnce(&emberlab_core::Space, &emberlab_core::Space) -> L,
    env_id: &str,
    envs: usize,
    trainer: OnPolicyConfig,
) -> TrainReport {
    let mut env = SyncVecEnv::from_id(env_id, envs).unwrap();
    let mut learner = build(env.single_observation_space(), env.single_action_space());
    common::train_on(&mut learner, &mut env, env_id, &trainer).unwrap()
}

fn flex() -> emberlab_algo::Devices {
    emberlab_algo::Devices::same(&emberlab_backend::DeviceSpec::Flex.device().unwrap())
}

#[test]
fn ppo_cartpole_reaches_475_within_100k() {
    let _serial = common::serial();
    let (config, trainer, envs) = PpoConfig::zoo("CartPole-v1").unwrap();
    let trainer = OnPolicyConfig {
        eval_every: 10_000,
        target_return: Some(475.0),
        seed: 1,
        ..trainer
    };
    assert_eq!(trainer.total_steps, 100_000);
    let config = PpoConfig { seed: 1, ..config };
    let report = run(
        |o, a| config.build(o, a, &flex()).unwrap(),
        "CartPole-v1",
        envs,
        trainer,
    );
    let best = common::best_eval("PPO CartPole-v1", &report);
    assert!(best >= 475.0, "PPO: best evaluation {best} < 475");
}

#[test]
fn ppo_pendulum_reaches_the_bar() {
    let _serial = common::serial();
    let (config, trainer, envs) = PpoConfig::zoo("Pendulum-v1").unwrap();
    let trainer = OnPolicyConfig {
        eval_every: 10_000,
        target_return: Some(PPO_PENDULUM_BAR),
        seed: 1,
        ..trainer
    };
    let config = PpoConfig { seed: 1, ..config };
    let report = run(
        |o, a| config.build(o, a, &flex()).unwrap(),
        "Pendulum-v1",
        envs,
        trainer,
    );
    let best = common::best_eval("PPO Pendulum-v1", &report);
    assert!(
        best >= PPO_PENDULUM_BAR,
        "PPO Pendulum: best evaluation {best}"
    );
}

#[test]
fn a2c_pendulum_reaches_the_bar() {
    let _serial = common::serial();
    let (config, trainer, envs) = A2cConfig::zoo("Pendulum-v1").unwrap();
    let trainer = OnPolicyConfig {
        total_steps: A2C_PENDULUM_STEPS,
        eval_every: 20_000,
        target_return: Some(A2C_PENDULUM_BAR),
        seed: 1,
        ..trainer
    };
    let config = A2cConfig { seed: 1, ..config };
    let report = run(
        |o, a| config.build(o, a, &flex()).unwrap(),
        "Pendulum-v1",
        envs,
        trainer,
    );
    let best = common::best_eval("A2C Pendulum-v1", &report);
    assert!(
        best >= A2C_PENDULUM_BAR,
        "A2C Pendulum: best evaluation {best}"
    );
}

/// PPO Pendulum-v1 bar within zoo's 100k steps (zoo, with gSDE as this preset: −172; seed
/// 1 measured −190 at 20k, then −190 … −230 to 100k; without gSDE −230 at 61k, −191 at 100k).
const PPO_PENDULUM_BAR: f64 = -200.0;
/// A2C Pendulum-v1 bar within zoo's 1M steps (zoo: −163 with gSDE on observations and
/// rewards normalised by VecNormalize, as this preset; seed 1 measured −189 at 420k; without
/// the normalisation gSDE stalled at −884, a plain Gaussian reached −507 at 900k).
const A2C_PENDULUM_BAR: f64 = -200.0;
const A2C_PENDULUM_STEPS: u64 = 1_000_000;
