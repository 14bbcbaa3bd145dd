//! PPO and A2C learn Catch from pixels (`emberlab_env::Catch`: 20×20 frames, stacks of 2)
//! with the IMPALA CNN shared by the policy and value heads, rollouts kept as bytes and the
//! image on-policy loop: a mean evaluation return ≥ 0.8 over 100 games (a random policy
//! scores about −0.6, a perfect one 1.0) within the budget, on flex, with a fixed seed; A2C
//! with zoo's Atari preset (SB3's `RMSpropTFLike`).
//! Training stops at the first evaluation that reaches it. (IMPALA rather than the Nature
//! CNN for the reason `learn_dqn_pixels.rs` gives.)

mod common;

use emberlab_algo::{
    A2cConfig, ActionBuf, Agent, FrameOnPolicyTrainer, FrameRolloutBatch, OnPolicyConfig,
    OnPolicyLearner, OptimizerKind, PolicyGradient, PpoConfig, train_on_policy_frames,
};
use emberlab_env::{Catch, FrameEnv, FrameVecEnv};
use emberlab_nn::PixelEncoderKind;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn catch() -> emberlab_core::Result<Box<dyn FrameEnv>> {
    Ok(Box::new(Catch::new(10, 5, [2, 4])?))
}

fn devices() -> emberlab_algo::Devices {
    let device = emberlab_backend::DeviceSpec::Flex.device().unwrap();
    emberlab_algo::Devices::same(&device)
}

fn ppo(env: &FrameVecEnv, seed: u64) -> PolicyGradient {
    let config = PpoConfig {
        learning_rate: 1e-3,
        batch_size: 64,
        n_epochs: 4,
        ent_coef: 0.01,
        encoder: PixelEncoderKind::Impala,
        seed,
        ..PpoConfig::default()
    };
    config
        .build_pixels(env.obs_shape(), env.actions(), &devices())
        .unwrap()
}

fn learns(
    name: &str,
    learner: &mut PolicyGradient,
    env: &mut FrameVecEnv,
    config: &OnPolicyConfig,
) {
    let report = train_on_policy_frames(learner, env, &catch, config).unwrap();
    let best = common::best_eval(&format!("{name} Catch pixels"), &report);
    assert!(best >= 0.8, "{name}: best evaluation {best} < 0.8");
    assert!(report.env_steps <= config.total_steps);
    assert_eq!(learner.progress().env_steps, report.env_steps);
}

#[test]
fn ppo_learns_catch_from_pixels() {
    let _serial = common::serial();
    let mut env = FrameVecEnv::from_factory(&catch, 8, 2).unwrap();
    let mut ppo = ppo(&env, 3);
    let config = OnPolicyConfig {
        total_steps: 40_000,
        n_steps: 32,
        eval_every: 2_048,
        eval_episodes: 100,
        target_return: Some(0.8),
        seed: 3,
        ..OnPolicyConfig::default()
    };
    learns("PPO", &mut ppo, &mut env, &config);
}

#[test]
fn a2c_learns_catch_from_pixels() {
    let _serial = common::serial();
    let mut env = FrameVecEnv::from_factory(&catch, 8, 2).unwrap();
    // zoo's Atari preset (SB3's `RMSpropTFLike`, ε = 1e-5, ent 0.01, vf 0.25) as
    // `ember train a2c --env PongNoFrameskip-v4` uses it; the IMPALA CNN as above.
    let (zoo, _, _) = A2cConfig::zoo("PongNoFrameskip-v4").unwrap();
    assert_eq!(zoo.optimizer, OptimizerKind::RmsPropTfLike);
    let config = A2cConfig {
        encoder: PixelEncoderKind::Impala,
        seed: 5,
        ..zoo
    };
    let mut a2c = config
        .build_pixels(env.obs_shape(), env.actions(), &devices())
        .unwrap();
    let trainer = OnPolicyConfig {
        total_steps: 200_000,
        n_steps: 5,
        eval_every: 4_000,
        eval_episodes: 100,
        target_return: Some(0.8),
        seed: 5,
        ..OnPolicyConfig::default()
    };
    learns("A2C", &mut a2c, &mut env, &trainer);
}

/// A run saved after 512 env steps and resumed by a second trainer built the same way goes
/// on from the saved learner and counters (the environments start new episodes): the same
/// weights, greedy actions and counters, and the budget finished. A damaged state file is
/// an error that changes nothing, the learner included.
#[test]
fn a_pixel_on_policy_run_resumes_from_its_saved_state() {
    let _serial = common::serial();
    let root = std::env::temp_dir().join(format!("ember-pg-frames-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&root);
    let (dir, bad) = (root.join("run"), root.join("damaged"));
    let build = || {
        let env = FrameVecEnv::from_factory(&catch, 4, 2).unwrap();
        (ppo(&env, 7), env)
    };
    let config = OnPolicyConfig {
        total_steps: 1_024,
        n_steps: 32,
        eval_episodes: 5,
        seed: 4,
        ..OnPolicyConfig::default()
    };
    let (mut ppo_a, mut env_a) = build();
    let saved = {
        let mut t = FrameOnPolicyTrainer::new(&mut ppo_a, &mut env_a, &catch, &config).unwrap();
        while t.report().env_steps < 512 {
            t.step().unwrap();
        }
        t.save_state(&dir).unwrap();
        t.report().clone()
    };
    assert_eq!(saved.updates, 4);
    std::fs::create_dir_all(&bad).unwrap();
    let state = std::fs::read(dir.join("trainer.state")).unwrap();
    std::fs::write(bad.join("trainer.state"), &state[..state.len() - 8]).unwrap();

    let (mut ppo_b, mut env_b) = build();
    let probe = env_b.reset(Some(77)).unwrap().to_vec();
    let fresh = common::bits(ppo_b.net());
    {
        let mut t = FrameOnPolicyTrainer::new(&mut ppo_b, &mut env_b, &catch, &config).unwrap();
        let err = t.load_state(&bad).unwrap_err().to_string();
        assert!(err.contains("trainer.state"), "{err}");
        assert_eq!(t.report().env_steps, 0, "a failed load changes nothing");
        assert_eq!(common::bits(t.learner().net()), fresh, "nor the learner");
        t.load_state(&dir).unwrap();
        assert_eq!(
            common::bits(t.learner().net()),
            common::bits(ppo_a.net()),
            "the saved weights"
        );
        assert_eq!(t.report().env_steps, saved.env_steps);
        assert_eq!(t.learner().progress().updates, 4);
        let greedy = |agent: &mut dyn Agent| {
            let mut out = ActionBuf::Discrete(Vec::new());
            agent.act_pixels(&probe, false, &mut out).unwrap();
            out
        };
        assert_eq!(greedy(t.learner()), greedy(&mut ppo_a));
        while !t.is_done() {
            t.step().unwrap();
        }
        let report = t.finish().unwrap();
        assert_eq!(report.env_steps, 1_024);
        assert_eq!(report.updates, 8);
        assert_eq!(report.evals.len(), 1);
    }
    let _ = std::fs::remove_dir_all(&root);
}

/// A policy-gradient learner built for images refuses vector observations and rollouts,
/// and one built for vectors refuses images; the image loop refuses normalisation, a
/// learner of other frames and an evaluation env of other games; malformed image rollouts
/// are errors naming the problem.
#[test]
fn pixel_and_vector_policy_gradients_refuse_each_others_inputs() {
    let devices = devices();
    let mut pixel = PpoConfig::default()
        .build_pixels([2, 40, 40], 3, &devices)
        .unwrap();
    let mut out = ActionBuf::Discrete(Vec::new());
    let err = pixel.act(&[0.0; 3200], false, &mut out).unwrap_err();
    assert!(err.to_string().contains("built for images"), "{err}");
    let err = pixel.values(&[0.0; 3200]).unwrap_err();
    assert!(err.to_string().contains("built for images"), "{err}");
    assert!(pixel.act_pixels(&[], false, &mut out).is_err(), "no stack");
    assert!(
        pixel.act_pixels(&[0; 3199], false, &mut out).is_err(),
        "a partial stack"
    );
    pixel.act_pixels(&[0; 6400], true, &mut out).unwrap();
    match &out {
        ActionBuf::Discrete(a) => assert!(a.len() == 2 && a.iter().all(|&a| a < 3), "{a:?}"),
        other => panic!("{other:?}"),
    }
    let values = pixel.values_pixels(&[9; 6400]).unwrap().unwrap();
    assert!(
        values.len() == 2 && values.iter().all(|v| v.is_finite()),
        "{values:?}"
    );

    let rollout = |len: usize| FrameRolloutBatch {
        len,
        obs: vec![0; len * 3200],
        actions: vec![1.0; len],
        advantages: vec![0.5; len],
        returns: vec![0.5; len],
        log_probs: vec![-1.0; len],
        values: Vec::new(),
    };
    pixel.update_frames(&rollout(4), 0).unwrap();
    let mut short = rollout(4);
    short.obs.pop();
    let err = pixel.update_frames(&short, 1).unwrap_err().to_string();
    assert!(err.contains("rollout.obs"), "{err}");
    let mut bad_action = rollout(4);
    bad_action.actions[2] = 3.0;
    assert!(
        pixel.update_frames(&bad_action, 1).is_err(),
        "action 3 of 3"
    );
    let mut nan = rollout(4);
    nan.advantages[1] = f32::NAN;
    let err = pixel.update_frames(&nan, 1).unwrap_err().to_string();
    assert!(err.contains("rollout.advantages"), "{err}");
    let err = pixel
        .update(&emberlab_algo::RolloutBatch::default(), 1)
        .unwrap_err()
        .to_string();
    assert!(err.contains("built for images"), "{err}");

    let space = emberlab_core::Space::Box(
        emberlab_core::BoxSpace::new(vec![-1.0; 4], vec![1.0; 4]).unwrap(),
    );
    let actions = emberlab_core::Space::Discrete(emberlab_core::Discrete::new(2).unwrap());
    let mut vector = A2cConfig::default()
        .build(&space, &actions, &devices)
        .unwrap();
    for err in [
        vector.act_pixels(&[0; 16], false, &mut out).unwrap_err(),
        vector.values_pixels(&[0; 16]).unwrap_err(),
        vector.update_frames(&rollout(1), 0).unwrap_err(),
    ] {
        assert!(
            matches!(err, emberlab_core::Error::Unavailable { .. }),
            "{err}"
        );
    }
    assert!(
        PpoConfig::default()
            .build_pixels([2, 40, 40], 0, &devices)
            .is_err(),
        "no actions"
    );
    assert!(
        PpoConfig::default()
            .build_pixels([4, 20, 20], 3, &devices)
            .is_err(),
        "too small for Nature"
    );
    let zero = PpoConfig {
        pixel_hidden: vec![64, 0],
        ..PpoConfig::default()
    };
    let err = zero.build_pixels([2, 40, 40], 3, &devices).unwrap_err();
    assert!(err.to_string().contains("pixel_hidden"), "{err}");

    // The loop's own checks.
    let mut env = FrameVecEnv::from_factory(&catch, 2, 2).unwrap();
    let mut learner = ppo(&env, 1);
    let normalized = OnPolicyConfig {
        normalize: Some(emberlab_env::NormalizeConfig::default()),
        ..OnPolicyConfig::default()
    };
    let err = FrameOnPolicyTrainer::new(&mut learner, &mut env, &catch, &normalized)
        .err()
        .unwrap();
    assert!(err.to_string().contains("normalize"), "{err}");
    let plain = OnPolicyConfig::default();
    let mut other = FrameVecEnv::from_factory(&catch, 2, 3).unwrap();
    let err = FrameOnPolicyTrainer::new(&mut learner, &mut other, &catch, &plain)
        .err()
        .unwrap();
    assert!(err.to_string().contains("observation length"), "{err}");
    let wide =
        || -> emberlab_core::Result<Box<dyn FrameEnv>> { Ok(Box::new(Catch::new(10, 6, [2, 4])?)) };
    let err = FrameOnPolicyTrainer::new(&mut learner, &mut env, &wide, &plain)
        .err()
        .unwrap();
    assert!(err.to_string().contains("evaluation env"), "{err}");
}
