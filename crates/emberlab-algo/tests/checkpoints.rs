//! Checkpoints: a round trip restores every network (SAC with its temperature, DQN, A2C),
//! bad folders are errors naming the file, and a run whose loss turns NaN stops with an
//! error naming the loss and the step while its last good checkpoint stays intact.

mod common;

use burn::tensor::{Tensor, TensorData};
use emberlab_algo::{
    A2cConfig, Agent, CheckpointConfig, CheckpointInfo, Dqn, DqnConfig, OffPolicyConfig,
    PolicyGradient, Sac, SacConfig, load_checkpoint, save_checkpoint,
};
use emberlab_core::{Error, Result, Space};
use emberlab_env::{SyncVecEnv, VecActions, VecEnv, VecStep};
use std::path::{Path, PathBuf};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ember-ckpt-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

fn flex() -> burn::tensor::Device {
    emberlab_backend::DeviceSpec::Flex.device().unwrap()
}

fn env(id: &str) -> SyncVecEnv {
    SyncVecEnv::from_id(id, 1).unwrap()
}

/// Deterministic actions on a few fixed observations.
fn probe(agent: &mut dyn Agent, obs_dim: usize) -> Vec<String> {
    let obs: Vec<f32> = (0..4 * obs_dim).map(|i| (i as f32 * 0.37).sin()).collect();
    let mut out = emberlab_algo::ActionBuf::Continuous(Vec::new());
    let mut d = emberlab_algo::ActionBuf::Discrete(Vec::new());
    if agent.act(&obs, false, &mut out).is_ok() {
        return vec![format!("{out:?}")];
    }
    agent.act(&obs, false, &mut d).unwrap();
    vec![format!("{d:?}")]
}

#[test]
fn round_trip_restores_sac_dqn_and_a2c() {
    let _serial = common::serial();
    let device = flex();
    let info = CheckpointInfo {
        env_steps: 1234,
        updates: 56,
    };

    let e = env("Pendulum-v1");
    let (obs, act) = (e.single_observation_space(), e.single_action_space());
    let sac = |seed| {
        let c = SacConfig {
            seed,
            init_alpha: 0.3 + seed as f64 * 0.1,
            ..SacConfig::default()
        };
        c.build(obs, act, &common::same(&device)).unwrap()
    };
    let (mut a, mut b) = (sac(1), sac(2));
    let dir = temp_dir("sac");
    save_checkpoint(&mut a, &dir, &info, None).unwrap();
    let mut a2 = sac(1);
    assert_ne!(probe(&mut a2, 3), probe(&mut b, 3));
    assert_eq!(load_checkpoint(&mut b, &dir).unwrap(), info);
    assert_eq!(probe(&mut a2, 3), probe(&mut b, 3));
    assert!(
        (a.alpha() - b.alpha()).abs() < 1e-6,
        "{} vs {}",
        a.alpha(),
        b.alpha()
    );
    let q = |s: &Sac| {
        let x = Tensor::<2>::from_data(TensorData::new(vec![0.1f32; 4], [1, 4]), &device);
        let t = s.target_critic().forward_input(x.clone()).into_data();
        let c = s.critic().forward_input(x).into_data();
        (format!("{t:?}"), format!("{c:?}"))
    };
    assert_eq!(q(&a), q(&b));

    let e = env("CartPole-v1");
    let (obs, act) = (e.single_observation_space(), e.single_action_space());
    let (mut a, mut b) = (seeded_dqn(1, &device), seeded_dqn(2, &device));
    let dir = temp_dir("dqn");
    save_checkpoint(&mut a, &dir, &info, None).unwrap();
    load_checkpoint(&mut b, &dir).unwrap();
    let x = Tensor::<2>::from_data(TensorData::new(vec![0.2f32; 8], [2, 4]), &device);
    assert_eq!(
        a.q().forward(x.clone()).into_data(),
        b.q().forward(x).into_data()
    );

    let pg = |seed| {
        let c = A2cConfig {
            seed,
            ..A2cConfig::default()
        };
        c.build(obs, act, &common::same(&device)).unwrap()
    };
    let (mut a, mut b): (PolicyGradient, PolicyGradient) = (pg(1), pg(2));
    let dir = temp_dir("a2c");
    save_checkpoint(&mut a, &dir, &info, None).unwrap();
    load_checkpoint(&mut b, &dir).unwrap();
    assert_eq!(probe(&mut a, 4), probe(&mut b, 4));
    for name in ["sac", "dqn", "a2c"] {
        std::fs::remove_dir_all(temp_dir(name)).ok();
    }
}

#[test]
fn bad_checkpoint_folders_are_errors_that_change_nothing() {
    let _serial = common::serial();
    let device = flex();
    let e = env("CartPole-v1");
    let (obs, act) = (e.single_observation_space(), e.single_action_space());
    let mut dqn = DqnConfig::default()
        .build(obs, act, &common::same(&device))
        .unwrap();
    let before = probe(&mut dqn, 4);

    let missing = temp_dir("missing");
    let err = load_checkpoint(&mut dqn, &missing).unwrap_err();
    assert!(matches!(err, Error::Io { .. }), "{err}");
    assert!(err.to_string().contains("checkpoint.toml"), "{err}");

    // A folder of another learner: the info loads, the network file is missing.
    let dir = temp_dir("wrong-kind");
    let pendulum = env("Pendulum-v1");
    let mut sac = SacConfig::default()
        .build(
            pendulum.single_observation_space(),
            pendulum.single_action_space(),
            &common::same(&device),
        )
        .unwrap();
    let info = CheckpointInfo {
        env_steps: 1,
        updates: 1,
    };
    save_checkpoint(&mut sac, &dir, &info, None).unwrap();
    let err = load_checkpoint(&mut dqn, &dir).unwrap_err();
    assert!(err.to_string().contains("q.safetensors"), "{err}");

    // A truncated network file.
    let file = dir.join("q.safetensors");
    std::fs::write(&file, b"not a safetensors file").unwrap();
    let err = load_checkpoint(&mut dqn, &dir).unwrap_err();
    assert!(err.to_string().contains("q.safetensors"), "{err}");
    std::fs::write(dir.join("checkpoint.toml"), "env_step = 3\n").unwrap();
    let err = load_checkpoint(&mut dqn, &dir).unwrap_err();
    assert!(matches!(err, Error::Corrupt { .. }), "{err}");
    assert_eq!(probe(&mut dqn, 4), before);

    let bad = OffPolicyConfig {
        checkpoint: CheckpointConfig {
            dir: None,
            every: 100,
        },
        ..OffPolicyConfig::default()
    };
    let err = common::train_off(&mut dqn, &mut env("CartPole-v1"), "CartPole-v1", &bad)
        .unwrap_err()
        .to_string();
    assert!(err.contains("checkpoint.dir"), "{err}");
    std::fs::remove_dir_all(&dir).ok();
}

/// CartPole whose rewards become 3e38 after `after` env steps: finite, so the replay buffer
/// (which refuses NaN and infinite values) stores them, but a batch loss over them
/// overflows to infinity.
struct PoisonedRewards {
    inner: SyncVecEnv,
    after: u64,
    steps: u64,
    rewards: Vec<f64>,
}

impl VecEnv for PoisonedRewards {
    fn num_envs(&self) -> usize {
        self.inner.num_envs()
    }
    fn single_observation_space(&self) -> &Space {
        self.inner.single_observation_space()
    }
    fn single_action_space(&self) -> &Space {
        self.inner.single_action_space()
    }
    fn reset(&mut self, seed: Option<u64>) -> Result<&[f32]> {
        self.inner.reset(seed)
    }
    fn step(&mut self, actions: VecActions<'_>) -> Result<VecStep<'_>> {
        self.steps += 1;
        let s = self.inner.step(actions)?;
        self.rewards.clear();
        let poisoned = self.steps > self.after;
        self.rewards
            .extend(s.rewards.iter().map(|&r| if poisoned { 3.0e38 } else { r }));
        Ok(VecStep {
            obs: s.obs,
            rewards: &self.rewards,
            terminated: s.terminated,
            truncated: s.truncated,
            raw_rewards: s.raw_rewards,
        })
    }
}

/// A network file damaged on disk after the write: a flipped byte in the weights, which
/// the file's own format does not notice, is refused by the folder's manifest, naming the
/// file; the learner is left as it was.
#[test]
fn a_damaged_network_file_is_refused_by_the_manifest() {
    let _serial = common::serial();
    let device = flex();
    let (mut saved, mut other) = (seeded_dqn(1, &device), seeded_dqn(2, &device));
    let dir = temp_dir("damaged-weights");
    let info = CheckpointInfo {
        env_steps: 7,
        updates: 3,
    };
    save_checkpoint(&mut saved, &dir, &info, None).unwrap();
    assert!(dir.join(emberlab_algo::manifest::MANIFEST).is_file());
    let before = probe(&mut other, 4);
    let file = dir.join("q.safetensors");
    let mut bytes = std::fs::read(&file).unwrap();
    let at = bytes.len() - 64; // inside the last tensor's values
    bytes[at] ^= 0x01;
    std::fs::write(&file, &bytes).unwrap();
    let err = load_checkpoint(&mut other, &dir).unwrap_err();
    assert!(matches!(err, Error::Corrupt { .. }), "{err}");
    let text = err.to_string();
    assert!(
        text.contains("q.safetensors") && text.contains("damaged"),
        "{text}"
    );
    assert_eq!(probe(&mut other, 4), before, "the learner changed");
    // Undamaged again, it loads: the weights are the saved learner's.
    bytes[at] ^= 0x01;
    std::fs::write(&file, &bytes).unwrap();
    assert_eq!(load_checkpoint(&mut other, &dir).unwrap(), info);
    assert_eq!(probe(&mut other, 4), probe(&mut saved, 4));
    std::fs::remove_dir_all(&dir).unwrap();
}

/// DQN with its defaults on CartPole-v1's spaces, seeded with `seed`.
fn seeded_dqn(seed: u64, device: &burn::tensor::Device) -> Dqn {
    let e = env("CartPole-v1");
    let (obs, act) = (e.single_observation_space(), e.single_action_space());
    let c = DqnConfig {
        seed,
        ..DqnConfig::default()
    };
    c.build(obs, act, &common::same(device)).unwrap()
}

fn default_dqn(env: &dyn VecEnv, device: &burn::tensor::Device) -> Dqn {
    let (obs, act) = (env.single_observation_space(), env.single_action_space());
    DqnConfig::default()
        .build(obs, act, &common::same(device))
        .unwrap()
}

fn assert_finite_q(dqn: &Dqn, device: &burn::tensor::Device) {
    let x = Tensor::<2>::from_data(TensorData::new(vec![0.05f32; 16], [4, 4]), device);
    let q: Vec<f32> = dqn.q().forward(x).into_data().try_to_vec::<f32>().unwrap();
    assert!(q.iter().all(|v| v.is_finite()), "{q:?}");
}

fn read_info(dir: &Path) -> CheckpointInfo {
    toml::from_str(&std::fs::read_to_string(dir.join("checkpoint.toml")).unwrap()).unwrap()
}

#[test]
fn a_diverged_loss_stops_training_and_keeps_the_last_good_checkpoint() {
    let _serial = common::serial();
    let device = flex();
    let dir = temp_dir("nan");
    let mut env = PoisonedRewards {
        inner: env("CartPole-v1"),
        after: 1_200,
        steps: 0,
        rewards: Vec::new(),
    };
    let mut dqn = default_dqn(&env, &device);
    let trainer = OffPolicyConfig {
        total_steps: 5_000,
        replay: emberlab_algo::ReplayConfig {
            capacity: 5_000,
            ..Default::default()
        },
        learning_starts: 200,
        batch_size: 32,
        checkpoint: CheckpointConfig {
            dir: Some(dir.clone()),
            every: 500,
        },
        ..OffPolicyConfig::default()
    };
    let err = common::train_off(&mut dqn, &mut env, "CartPole-v1", &trainer).unwrap_err();
    let Error::Diverged { name, step, .. } = &err else {
        panic!("expected a diverged loss, got {err}");
    };
    assert!(name.contains("loss"), "{err}");
    assert!(*step > 0, "{err}");
    // The huge rewards enter the buffer after env step 1200; the checkpoint written last
    // is one of the 500-step ones from before the loss overflowed, complete and loadable.
    let info = read_info(&dir);
    assert!(
        info.env_steps >= 1_000 && info.env_steps.is_multiple_of(500),
        "{info:?}"
    );
    assert!(
        !dir.with_file_name(format!("{}.partial", dir.file_name().unwrap().display()))
            .exists()
    );
    let mut fresh = default_dqn(&env, &device);
    load_checkpoint(&mut fresh, &dir).unwrap();
    assert_finite_q(&fresh, &device);
    // The learner itself is as it was before the failed update: still finite.
    assert_finite_q(&dqn, &device);
    std::fs::remove_dir_all(&dir).ok();
}
