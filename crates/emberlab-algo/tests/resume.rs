//! Exact resume: a run stopped at an arbitrary step, saved with
//! `OffPolicyTrainer::save_state`, and continued by a fresh process-like set-up (new
//! learner, environments and replay built from the same config, then `load_state`) produces
//! the same metrics, evaluations and weights, bit for bit, as a run that never stopped.

mod common;

use emberlab_algo::checkpoint::write_dir_atomically;
use emberlab_algo::{
    Devices, DqnConfig, Metrics, OffPolicyConfig, OffPolicyLearner, OffPolicyTrainer, ReplayConfig,
    ReplayKind, SacConfig, Td3Config, TrainReport,
};
use emberlab_core::Space;
use emberlab_env::{EnvFactory, SyncVecEnv, ThreadedVecEnv, VecEnv};
use emberlab_replay::{AnySampler, ReplayBuffer};
use std::path::{Path, PathBuf};

fn temp_dir(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ember-resume-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    dir
}

/// What a run is: how to build its parts from scratch.
struct Recipe<L> {
    id: &'static str,
    envs: fn(&'static str) -> Box<dyn VecEnv>,
    learner: fn(&Space, &Space) -> L,
    config: OffPolicyConfig,
    bits: fn(&L) -> Vec<u32>,
}

/// Everything observable a step leaves: env steps, updates, episodes and the last update's
/// metrics (as bits).
type Trace = (u64, u64, u64, String);

/// The [`Trace`] of a report.
fn trace(report: &TrainReport) -> Trace {
    let Metrics(m) = &report.last_metrics;
    let m: Vec<String> = m
        .iter()
        .map(|(n, v)| format!("{n}={:x}", v.to_bits()))
        .collect();
    (
        report.env_steps,
        report.updates,
        report.episodes,
        m.join(","),
    )
}

struct Parts<L> {
    env: Box<dyn VecEnv>,
    learner: L,
    replay: ReplayBuffer<AnySampler>,
    eval: std::sync::Arc<dyn EnvFactory>,
}

impl<L: OffPolicyLearner> Recipe<L> {
    fn parts(&self) -> Parts<L> {
        let env = (self.envs)(self.id);
        let learner = (self.learner)(env.single_observation_space(), env.single_action_space());
        let replay = self.config.build_replay(env.as_ref()).unwrap();
        Parts {
            env,
            learner,
            replay,
            eval: emberlab_env::factory(self.id).unwrap(),
        }
    }

    /// Steps to the end, recording every step's trace; stops early (returning `None`) once
    /// `stop_at` env steps are reached, after saving the run into `save_to`.
    fn run(
        &self,
        parts: &mut Parts<L>,
        resume_from: Option<&Path>,
        stop_at: Option<(u64, &Path)>,
    ) -> (Vec<Trace>, Option<TrainReport>) {
        let Parts {
            env,
            learner,
            replay,
            eval,
        } = parts;
        let mut trainer =
            OffPolicyTrainer::new(learner, env.as_mut(), replay, eval.as_ref(), &self.config)
                .unwrap();
        if let Some(dir) = resume_from {
            trainer.load_state(dir).unwrap();
        }
        let mut steps = Vec::new();
        while !trainer.is_done() {
            trainer.step().unwrap();
            steps.push(trace(trainer.report()));
            if let Some((at, dir)) = stop_at
                && trainer.report().env_steps >= at
            {
                write_dir_atomically(dir, |tmp| trainer.save_state(tmp)).unwrap();
                return (steps, None);
            }
        }
        (steps, Some(trainer.finish().unwrap()))
    }

    /// The uninterrupted run against one stopped at `stop` and resumed by fresh parts.
    fn check(&self, name: &str, stop: u64) {
        let _serial = common::serial();
        let mut whole = self.parts();
        let (all, report) = self.run(&mut whole, None, None);
        let report = report.unwrap();

        let dir = temp_dir(name);
        let mut first = self.parts();
        let (head, none) = self.run(&mut first, None, Some((stop, &dir)));
        assert!(none.is_none(), "{name}: the first part stopped early");
        drop(first);
        // A new set of parts: nothing carries over but the folder.
        let mut second = self.parts();
        let (tail, resumed) = self.run(&mut second, Some(&dir), None);
        let resumed = resumed.unwrap();

        let joined: Vec<_> = head.into_iter().chain(tail).collect();
        assert_eq!(joined.len(), all.len(), "{name}: steps");
        for (i, (a, b)) in all.iter().zip(&joined).enumerate() {
            assert_eq!(a, b, "{name}: step {i} differs after resuming at {stop}");
        }
        assert_eq!(report.evals, resumed.evals, "{name}: evaluations");
        assert_eq!(report.progress, resumed.progress, "{name}: progress");
        assert!(!report.evals.is_empty() && report.updates > 0, "{name}");
        assert_eq!(
            (self.bits)(&whole.learner),
            (self.bits)(&second.learner),
            "{name}: final weights"
        );
        assert_eq!(whole.replay.len(), second.replay.len(), "{name}: replay");
        std::fs::remove_dir_all(&dir).unwrap();
    }
}

fn flex() -> Devices {
    common::same(&emberlab_backend::DeviceSpec::Flex.device().unwrap())
}

#[test]
fn sac_resumes_bit_for_bit() {
    let recipe = Recipe {
        id: "Pendulum-v1",
        envs: |id| Box::new(SyncVecEnv::from_id(id, 2).unwrap()),
        learner: |obs, act| {
            let config = SacConfig {
                hidden: vec![32, 32],
                seed: 4,
                ..SacConfig::default()
            };
            config.build(obs, act, &flex()).unwrap()
        },
        config: OffPolicyConfig {
            total_steps: 700,
            learning_starts: 120,
            batch_size: 32,
            eval_every: 300,
            eval_episodes: 1,
            seed: 9,
            replay: ReplayConfig {
                capacity: 500,
                kind: ReplayKind::ReturnWeighted,
                ..ReplayConfig::default()
            },
            ..OffPolicyConfig::default()
        },
        bits: |sac| {
            let mut b = common::bits(sac.actor());
            b.extend(common::bits(sac.critic()));
            b.extend(common::bits(sac.target_critic()));
            b.push(sac.alpha().to_bits() as u32);
            b
        },
    };
    // Mid-warm-up, and after evictions from the 500-slot buffer with updates running.
    recipe.check("sac-early", 60);
    recipe.check("sac-late", 530);
}

#[test]
fn dqn_with_prioritized_n_step_replay_resumes_bit_for_bit() {
    let recipe = Recipe {
        id: "CartPole-v1",
        envs: |id| Box::new(ThreadedVecEnv::from_id(id, 2, 2).unwrap()),
        learner: |obs, act| {
            let config = DqnConfig {
                hidden: vec![32],
                seed: 2,
                target_update_interval: 50,
                ..DqnConfig::default()
            };
            config.build(obs, act, &flex()).unwrap()
        },
        config: OffPolicyConfig {
            total_steps: 1_200,
            learning_starts: 200,
            batch_size: 32,
            eval_every: 400,
            eval_episodes: 2,
            seed: 5,
            replay: ReplayConfig {
                capacity: 800,
                kind: ReplayKind::Prioritized,
                n_step: 3,
                ..ReplayConfig::default()
            },
            ..OffPolicyConfig::default()
        },
        bits: |dqn| common::bits(dqn.q()),
    };
    recipe.check("dqn", 652);
}

#[test]
fn a_damaged_or_foreign_state_is_refused_and_changes_nothing() {
    let _serial = common::serial();
    let config = OffPolicyConfig {
        total_steps: 300,
        learning_starts: 50,
        batch_size: 16,
        eval_episodes: 0,
        replay: ReplayConfig {
            capacity: 400,
            ..ReplayConfig::default()
        },
        ..OffPolicyConfig::default()
    };
    let build = |obs: &Space, act: &Space| {
        SacConfig {
            hidden: vec![16],
            ..SacConfig::default()
        }
        .build(obs, act, &flex())
        .unwrap()
    };
    let mut env = SyncVecEnv::from_id("Pendulum-v1", 1).unwrap();
    let mut sac = build(env.single_observation_space(), env.single_action_space());
    let mut replay = config.build_replay(&env).unwrap();
    let eval = emberlab_env::factory("Pendulum-v1").unwrap();
    let dir = temp_dir("damaged");
    let mut t =
        OffPolicyTrainer::new(&mut sac, &mut env, &mut replay, eval.as_ref(), &config).unwrap();
    for _ in 0..100 {
        t.step().unwrap();
    }
    write_dir_atomically(&dir, |tmp| t.save_state(tmp)).unwrap();
    let before = trace(t.report());

    // A flipped byte in the trainer's own state.
    let path = dir.join("trainer.state");
    let good = std::fs::read(&path).unwrap();
    let mut bad = good.clone();
    bad[40] ^= 0x10;
    std::fs::write(&path, &bad).unwrap();
    let e = t.load_state(&dir).unwrap_err().to_string();
    assert!(e.contains("trainer.state") && e.contains("checksum"), "{e}");
    std::fs::write(&path, &good).unwrap();

    // A truncated replay file.
    let path = dir.join("replay.bin");
    let good = std::fs::read(&path).unwrap();
    std::fs::write(&path, &good[..good.len() / 2]).unwrap();
    let e = t.load_state(&dir).unwrap_err().to_string();
    assert!(e.contains("replay.bin"), "{e}");
    std::fs::write(&path, &good).unwrap();

    // A learner file missing.
    let path = dir.join("learner").join("critic_optim.bpk");
    let good = std::fs::read(&path).unwrap();
    std::fs::remove_file(&path).unwrap();
    let e = t.load_state(&dir).unwrap_err().to_string();
    assert!(e.contains("critic_optim.bpk"), "{e}");
    std::fs::write(&path, &good).unwrap();
    assert_eq!(trace(t.report()), before, "failed loads changed nothing");

    // The state of a run with another config.
    drop(t);
    let other = OffPolicyConfig {
        seed: 1,
        ..config.clone()
    };
    let mut t =
        OffPolicyTrainer::new(&mut sac, &mut env, &mut replay, eval.as_ref(), &other).unwrap();
    let e = t.load_state(&dir).unwrap_err().to_string();
    assert!(e.contains("seed"), "{e}");
    // The intact folder loads.
    drop(t);
    let mut t =
        OffPolicyTrainer::new(&mut sac, &mut env, &mut replay, eval.as_ref(), &config).unwrap();
    t.load_state(&dir).unwrap();
    assert_eq!(trace(t.report()), before);
    std::fs::remove_dir_all(&dir).unwrap();
}

/// Runs an on-policy learner through once, and again stopped after `stop_at` env steps,
/// saved and resumed into fresh objects: every step's trace, the evaluations and the final
/// weights must be equal.
fn on_policy_resumes(
    name: &str,
    id: &str,
    config: emberlab_algo::OnPolicyConfig,
    stop_at: u64,
    build: impl Fn(&dyn VecEnv) -> emberlab_algo::PolicyGradient,
) {
    let eval = emberlab_env::factory(id).unwrap();
    let envs = || SyncVecEnv::from_id(id, 4).unwrap();
    let run = |stop: Option<(u64, &Path)>, resume: Option<&Path>| {
        let mut env = envs();
        let mut a2c = build(&env);
        let mut t = emberlab_algo::OnPolicyTrainer::new(&mut a2c, &mut env, eval.as_ref(), &config)
            .unwrap();
        if let Some(dir) = resume {
            t.load_state(dir).unwrap();
        }
        let mut steps = Vec::new();
        while !t.is_done() {
            t.step().unwrap();
            steps.push(trace(t.report()));
            if let Some((at, dir)) = stop
                && t.report().env_steps >= at
            {
                write_dir_atomically(dir, |tmp| t.save_state(tmp)).unwrap();
                let stats = dir.join(emberlab_env::OBS_NORMALIZER_FILE);
                assert_eq!(stats.exists(), config.normalize.is_some());
                return (steps, None, Vec::new());
            }
        }
        let report = t.finish().unwrap();
        (steps, Some(report), common::bits(a2c.net()))
    };
    let (all, report, weights) = run(None, None);
    let dir = temp_dir(name);
    let (head, _, _) = run(Some((stop_at, &dir)), None);
    let (tail, resumed, resumed_weights) = run(None, Some(&dir));
    let joined: Vec<_> = head.into_iter().chain(tail).collect();
    assert_eq!(joined, all);
    let (report, resumed) = (report.unwrap(), resumed.unwrap());
    assert_eq!(report.evals, resumed.evals);
    assert!(report.evals.len() >= 2 && report.updates > 5);
    assert_eq!(weights, resumed_weights);
    std::fs::remove_dir_all(&dir).unwrap();
}

#[test]
fn a2c_resumes_bit_for_bit() {
    let _serial = common::serial();
    let config = emberlab_algo::OnPolicyConfig {
        total_steps: 2_000,
        n_steps: 5,
        eval_every: 700,
        eval_episodes: 2,
        seed: 3,
        ..emberlab_algo::OnPolicyConfig::default()
    };
    on_policy_resumes("a2c", "CartPole-v1", config, 1_020, |env| {
        emberlab_algo::A2cConfig {
            hidden: vec![32],
            seed: 6,
            ..emberlab_algo::A2cConfig::default()
        }
        .build(
            env.single_observation_space(),
            env.single_action_space(),
            &flex(),
        )
        .unwrap()
    });
}

/// PPO with gSDE on a continuous task, through `VecNormalize`: minibatch shuffles, the
/// recorded log-probabilities and unclipped actions, the kept exploration weights, the
/// linear learning-rate and clip-range decay, and the observation and return statistics
/// (evaluations see observations through them) all resume.
#[test]
fn ppo_resumes_bit_for_bit() {
    let _serial = common::serial();
    let config = emberlab_algo::OnPolicyConfig {
        total_steps: 2_400,
        n_steps: 100,
        eval_every: 800,
        eval_episodes: 1,
        seed: 8,
        normalize: Some(emberlab_env::NormalizeConfig::default()),
        ..emberlab_algo::OnPolicyConfig::default()
    };
    on_policy_resumes("ppo", "Pendulum-v1", config, 1_200, |env| {
        emberlab_algo::PpoConfig {
            hidden: vec![16],
            batch_size: 50,
            n_epochs: 3,
            learning_rate_linear: true,
            clip_range_linear: true,
            clip_range_vf: Some(0.5),
            use_sde: true,
            sde_sample_freq: 3,
            seed: 7,
            ..emberlab_algo::PpoConfig::default()
        }
        .build(
            env.single_observation_space(),
            env.single_action_space(),
            &flex(),
        )
        .unwrap()
    });
}

#[test]
fn td3_resumes_bit_for_bit() {
    let recipe = Recipe {
        id: "Pendulum-v1",
        envs: |id| Box::new(SyncVecEnv::from_id(id, 2).unwrap()),
        learner: |obs, act| {
            let config = Td3Config {
                hidden: vec![32, 32],
                seed: 3,
                ..Td3Config::default()
            };
            config.build(obs, act, &flex()).unwrap()
        },
        config: OffPolicyConfig {
            total_steps: 600,
            learning_starts: 100,
            batch_size: 32,
            eval_every: 300,
            eval_episodes: 1,
            seed: 4,
            ..OffPolicyConfig::default()
        },
        bits: |td3| common::bits(td3.actor()),
    };
    recipe.check("td3", 333);
}
