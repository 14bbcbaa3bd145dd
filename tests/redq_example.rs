//! The REDQ example (`examples/custom_redq.rs`: an algorithm outside the library, assembled
//! from its public parts) learns Pendulum-v1: its first evaluation ≥ −200 comes in fewer
//! env steps than the library's SAC with the same seed and trainer settings (both
//! evaluated every 250 steps, 10 deterministic episodes, on flex).

#[path = "../examples/custom_redq.rs"]
mod redq;

use ember::algo::{Devices, OffPolicyConfig, SacConfig, TrainReport, train_off_policy};
use ember::env::{SyncVecEnv, VecEnv};

const SEED: u64 = 1;
const EVAL_EVERY: u64 = 250;

fn first_at_goal(report: &TrainReport) -> Option<u64> {
    report
        .evals
        .iter()
        .find(|e| e.mean_return >= -200.0)
        .map(|e| e.env_steps)
}

fn sac() -> TrainReport {
    let device = ember::backend::DeviceSpec::Flex.device().unwrap();
    let mut env = SyncVecEnv::from_id("Pendulum-v1", 1).unwrap();
    let (config, trainer) = SacConfig::zoo("Pendulum-v1").unwrap();
    let mut sac = SacConfig {
        seed: SEED,
        ..config
    }
    .build(
        env.single_observation_space(),
        env.single_action_space(),
        &Devices::same(&device),
    )
    .unwrap();
    let trainer = OffPolicyConfig {
        eval_every: EVAL_EVERY,
        target_return: Some(-200.0),
        seed: SEED,
        ..trainer
    };
    let mut replay = trainer.build_replay(&env).unwrap();
    let eval = ember::env::factory("Pendulum-v1").unwrap();
    train_off_policy(&mut sac, &mut env, &mut replay, eval.as_ref(), &trainer).unwrap()
}

#[test]
fn redq_reaches_minus_200_in_fewer_env_steps_than_sac() {
    let redq = redq::run_redq(SEED, EVAL_EVERY).unwrap();
    let sac = sac();
    let curve = |r: &TrainReport| -> String {
        r.evals
            .iter()
            .map(|e| format!("{}:{:.0}", e.env_steps, e.mean_return))
            .collect::<Vec<_>>()
            .join(" ")
    };
    println!("REDQ {}\nSAC  {}", curve(&redq), curve(&sac));
    let (r, s) = (first_at_goal(&redq), first_at_goal(&sac));
    let r = r.expect("REDQ never reached -200");
    let s = s.expect("SAC never reached -200");
    assert!(r < s, "REDQ reached -200 at {r} env steps, SAC at {s}");
    // Many critic updates per env step (UPDATES_PER_STEP after the random warm-up).
    let per_step = redq.updates as f64 / redq.env_steps as f64;
    assert!(per_step > redq::UPDATES_PER_STEP as f64 / 2.0, "{per_step}");
}
