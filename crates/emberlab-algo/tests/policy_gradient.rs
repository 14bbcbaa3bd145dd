//! The policy-gradient learner's variants train end to end: A2C with a shared trunk,
//! REINFORCE without a baseline, continuous A2C / REINFORCE / PPO (plain and squashed
//! Gaussians); the log-probabilities recorded while acting are the acting policy's.

mod common;

use emberlab_algo::{
    A2cConfig, ActingRecord, ActionBuf, OnPolicyConfig, OnPolicyLearner, PolicyGradient, PpoConfig,
    ReinforceConfig,
};
use emberlab_env::{SyncVecEnv, VecEnv};

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
    let device = emberlab_backend::DeviceSpec::Flex.device().unwrap();
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
        .build(&o, &a, &emberlab_algo::Devices::same(&device))
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
        .build(&o, &a, &emberlab_algo::Devices::same(&device))
        .unwrap();
    assert!(learner.net().value.is_none());
    let report = common::train_on(&mut learner, &mut env, "CartPole-v1", &trainer()).unwrap();
    assert!(report.updates >= 1);
    assert!(report.last_metrics.get("value_loss").is_none());
    assert!(report.last_metrics.get("policy_loss").unwrap().is_finite());
}

#[test]
fn continuous_policies_train_and_act_inside_the_box() {
    let device = emberlab_backend::DeviceSpec::Flex.device().unwrap();
    let devices = emberlab_algo::Devices::same(&device);
    let mut env = SyncVecEnv::from_id("Pendulum-v1", 2).unwrap();
    let (o, a) = (
        env.single_observation_space().clone(),
        env.single_action_space().clone(),
    );
    let learners: Vec<(&str, PolicyGradient)> = vec![
        ("A2C", A2cConfig::default().build(&o, &a, &devices).unwrap()),
        (
            "REINFORCE",
            ReinforceConfig::default().build(&o, &a, &devices).unwrap(),
        ),
        ("PPO", PpoConfig::default().build(&o, &a, &devices).unwrap()),
        (
            "PPO gSDE",
            PpoConfig {
                use_sde: true,
                log_std_init: 2.0,
                sde_sample_freq: 5,
                ..PpoConfig::default()
            }
            .build(&o, &a, &devices)
            .unwrap(),
        ),
        (
            "PPO squashed",
            PpoConfig {
                squash_output: true,
                clip_range_vf: Some(0.2),
                target_kl: Some(0.01),
                ..PpoConfig::default()
            }
            .build(&o, &a, &devices)
            .unwrap(),
        ),
    ];
    for (name, mut learner) in learners {
        let report = common::train_on(&mut learner, &mut env, "Pendulum-v1", &trainer()).unwrap();
        assert!(report.updates >= 1, "{name}");
        assert!(
            report.last_metrics.get("policy_loss").unwrap().is_finite(),
            "{name}"
        );
        // Log σ = 0 (gSDE: 2): many raw samples fall outside [-2, 2]; the env gets them clipped.
        let obs: Vec<f32> = (0..300).map(|i| (i as f32 * 0.37).sin()).collect();
        let mut out = ActionBuf::Continuous(Vec::new());
        let mut record = ActingRecord::default();
        learner.act_rollout(&obs, &mut out, &mut record).unwrap();
        let ActionBuf::Continuous(acts) = &out else {
            unreachable!()
        };
        assert_eq!(
            (acts.len(), record.log_probs.len(), record.values.len()),
            (100, 100, 100)
        );
        assert!(acts.iter().all(|x| x.abs() <= 2.0), "{name}: {acts:?}");
        if name.ends_with("squashed") {
            assert_eq!(
                &record.stored_actions, acts,
                "{name}: squashed samples need no clip"
            );
        } else {
            assert!(
                record.stored_actions.iter().any(|x| x.abs() > 2.0),
                "{name}"
            );
        }
    }
}

#[test]
fn recorded_log_probs_belong_to_the_acting_policy_even_when_it_lags() {
    let device = emberlab_backend::DeviceSpec::Flex.device().unwrap();
    for (space, use_sde) in [
        ("CartPole-v1", false),
        ("Pendulum-v1", false),
        ("Pendulum-v1", true),
    ] {
        let mut env = SyncVecEnv::from_id(space, 2).unwrap();
        let (o, a) = (
            env.single_observation_space().clone(),
            env.single_action_space().clone(),
        );
        let mut ppo = PpoConfig {
            sync_every: 1_000,
            learning_rate: 1e-2,
            use_sde,
            ..PpoConfig::default()
        }
        .build(&o, &a, &emberlab_algo::Devices::same(&device))
        .unwrap();
        let acting = ppo.net().clone();
        let report = common::train_on(&mut ppo, &mut env, space, &trainer()).unwrap();
        assert_eq!(report.updates, 4);
        let rows = 16;
        let obs: Vec<f32> = (0..rows * o.flat_dim())
            .map(|i| (i as f32 * 0.61).cos())
            .collect();
        let mut out = ActionBuf::for_space(&a);
        let mut record = ActingRecord::default();
        ppo.act_rollout(&obs, &mut out, &mut record).unwrap();
        let w = emberlab_algo::stored_action_dim(&a);
        let stored = if record.stored_actions.is_empty() {
            let mut v = Vec::new();
            let mut row = Vec::new();
            for i in 0..rows {
                out.write_row(i, w, &mut row);
                v.extend_from_slice(&row);
            }
            v
        } else {
            record.stored_actions.clone()
        };
        let log_prob = |net: &emberlab_nn::ActorCriticNet| -> Vec<f32> {
            let x = emberlab_algo::tensors::matrix(&obs, rows, o.flat_dim(), &device);
            let acts = emberlab_algo::tensors::matrix(&stored, rows, w, &device);
            emberlab_algo::tensors::host(
                burn::module::Module::valid(net).evaluate(x, acts).log_prob,
            )
        };
        let (behaviour, learner) = (log_prob(&acting), log_prob(ppo.net()));
        for (r, (got, want)) in record.log_probs.iter().zip(&behaviour).enumerate() {
            assert!(
                (got - want).abs() < 1e-4 * (1.0 + want.abs()),
                "{space} row {r}: {got} vs {want}"
            );
        }
        assert!(
            behaviour
                .iter()
                .zip(&learner)
                .any(|(b, l)| (b - l).abs() > 1e-3),
            "{space}: the learner moved away from the acting copy"
        );
    }
}
