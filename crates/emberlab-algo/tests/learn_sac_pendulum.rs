//! SAC learns Pendulum-v1 with both update schedules, and with return-weighted replay: mean evaluation return ≥ −200
//! (10 deterministic episodes) at an evaluation within 20k env steps, with
//! rl-baselines3-zoo's hyper-parameters, on flex. Training stops at the first evaluation
//! that reaches the goal (`target_return`); the full-budget curve is in `docs/results.md`.

mod common;

use emberlab_algo::{OffPolicyConfig, ReplayKind, SacConfig, UpdateSchedule};
use emberlab_env::{SyncVecEnv, VecEnv};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn run(schedule: UpdateSchedule, kind: ReplayKind) {
    let device = emberlab_backend::DeviceSpec::Flex.device().unwrap();
    let (config, trainer) = SacConfig::zoo("Pendulum-v1").unwrap();
    let config = SacConfig {
        update_schedule: schedule,
        seed: 1,
        ..config
    };
    let mut trainer = OffPolicyConfig {
        eval_every: 2_000,
        target_return: Some(-200.0),
        seed: 1,
        ..trainer
    };
    trainer.replay.kind = kind;
    let mut env = SyncVecEnv::from_id("Pendulum-v1", 1).unwrap();
    let mut sac = config
        .build(
            env.single_observation_space(),
            env.single_action_space(),
            &emberlab_algo::Devices::same(&device),
        )
        .unwrap();
    let report = common::train_off(&mut sac, &mut env, "Pendulum-v1", &trainer).unwrap();
    assert!(report.env_steps <= 20_000);
    let best = common::best_eval(&format!("SAC Pendulum-v1 {schedule:?} {kind:?}"), &report);
    assert!(
        best >= -200.0,
        "{schedule:?} {kind:?}: best evaluation {best} < -200"
    );
}

#[test]
fn sac_pendulum_learns_with_the_parallel_schedule() {
    let _serial = common::serial();
    run(UpdateSchedule::Parallel, ReplayKind::Uniform);
}

#[test]
fn sac_pendulum_learns_with_the_sequential_schedule() {
    let _serial = common::serial();
    run(UpdateSchedule::Sequential, ReplayKind::Uniform);
}

/// Seed problem 2: SAC trained with return-weighted sampling without replacement.
#[test]
fn sac_pendulum_learns_with_return_weighted_replay() {
    let _serial = common::serial();
    run(UpdateSchedule::Parallel, ReplayKind::ReturnWeighted);
}
