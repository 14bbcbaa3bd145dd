//! The policy-gradient learner's variants train end to end: A2C with a shared trunk, and
//! REINFORCE without a baseline; a continuous action space is refused with a clear error.

mod common;

use ember_algo::{A2cConfig, OnPolicyConfig, ReinforceConfig};
use ember_env::{SyncVecEnv, VecEnv};

fn trainer() -> OnPolicyConfig {
    OnPolicyConfig {
        total_steps: 2_000,
        n_steps: 250,
        eval_episodes: 1,
        ..OnPolicyConfig::default()
    }
}

#[test]
fn a2c_with_a_shared_trunk_and_reinforce_without_baseline_train() {
    let device = ember_backend::DeviceSpec::Flex.device().unwrap();
    let mut env = SyncVecEnv::from_id("CartPole-v1", 4).unwrap();
    let (o, a) = (
        env.single_observation_space().clone(),
        env.single_action_space().clone(),
    );
    let shared = A2cConfig {
        shared_trunk: true,
        ..A2cConfig::default()
    };
    let mut learner = shared
        .build(&o, &a, &ember_algo::Devices::same(&device))
        .unwrap();
    assert!(learner.net().trunk.is_some());
    let report = common::train_on(&mut learner, &mut env, "CartPole-v1", &trainer()).unwrap();
    assert_eq!(report.updates, 2);
    assert!(report.last_metrics.get("value_loss").unwrap().is_finite());

    let plain = ReinforceConfig {
        baseline: false,
        ..ReinforceConfig::default()
    };
    let mut learner = plain
        .build(&o, &a, &ember_algo::Devices::same(&device))
        .unwrap();
    assert!(learner.net().value.is_none());
    let report = common::train_on(&mut learner, &mut env, "CartPole-v1", &trainer()).unwrap();
    assert!(report.updates >= 1);
    assert!(report.last_metrics.get("value_loss").is_none());
    assert!(report.last_metrics.get("policy_loss").unwrap().is_finite());
}

#[test]
fn continuous_actions_are_refused_by_name() {
    let device = ember_backend::DeviceSpec::Flex.device().unwrap();
    let env = SyncVecEnv::from_id("Pendulum-v1", 1).unwrap();
    let e = A2cConfig::default()
        .build(
            env.single_observation_space(),
            env.single_action_space(),
            &ember_algo::Devices::same(&device),
        )
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("A2C action space") && e.contains("Discrete"),
        "{e}"
    );
}
