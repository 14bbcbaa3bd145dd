//! The Gymnasium bridge against Gymnasium itself and against Ember's native environments.
//! Needs `EMBER_PYTHON` (or `EMBER_MUJOCO_PYTHON`): an interpreter with gymnasium 1.4 — the
//! venv of scripts/setup-mujoco.sh. Without one the tests fail, saying so.

#![cfg(feature = "gym")]

use emberlab_core::{Action, Env, Space};
use emberlab_env::{GymEnv, SyncVecEnv, ThreadedVecEnv, VecActions, VecEnv};
use std::path::PathBuf;

fn python() -> String {
    ["EMBER_PYTHON", "EMBER_MUJOCO_PYTHON"]
        .iter()
        .find_map(|v| std::env::var(v).ok().filter(|p| !p.is_empty()))
        .unwrap_or_else(|| {
            panic!(
                "neither EMBER_PYTHON nor EMBER_MUJOCO_PYTHON is set: the bridge tests need \
                 Python with gymnasium 1.4 (scripts/setup-mujoco.sh > /tmp/mujoco.env && . \
                 /tmp/mujoco.env)"
            )
        })
}

fn gym(id: &str) -> GymEnv {
    GymEnv::with_python(id, &python()).unwrap_or_else(|e| panic!("gym:{id}: {e}"))
}

/// Deterministic actions for `space` at step `t`, continuous ones beyond the bounds at times.
fn action(space: &Space, t: usize) -> (usize, Vec<f32>) {
    match space {
        Space::Discrete(d) => ((t * 7 + t / 3) % d.n(), vec![]),
        Space::Box(b) => (
            0,
            (0..b.dim())
                .map(|j| ((t * 13 + j * 5) % 23) as f32 / 11.0 - 1.0)
                .map(|x| x * b.high()[0].abs().min(10.0) * 1.2)
                .collect(),
        ),
    }
}

/// How closely rewards must agree: `Exact` for the classic tasks, whose rewards are plain
/// scalar arithmetic; `Scaled(tol)` (`|a − b| ≤ tol · max(1, |b|)`) for MuJoCo's, which
/// Gymnasium computes with NumPy's `linalg.norm` and `einsum`: they go through BLAS, whose
/// kernels (and so the order of additions and the use of FMA) depend on the CPU. Reacher's
/// reward differed in its last bit on an Intel Xeon where it agreed on a Zen 5; the traces
/// test (`mujoco_traces.rs`) allows the same 1e-12.
#[derive(Clone, Copy)]
enum Rewards {
    Exact,
    Scaled(f64),
}

/// Steps both environments through episodes from the same seeds with the same actions;
/// observations, resets and episode ends must agree to the bit, rewards as `rewards` says.
/// Returns (steps, episode ends).
fn same_transitions(
    native: &mut dyn Env,
    bridged: &mut dyn Env,
    steps: usize,
    rewards: Rewards,
) -> (usize, usize) {
    assert_eq!(native.observation_space(), bridged.observation_space());
    assert_eq!(native.action_space(), bridged.action_space());
    let space = native.action_space().clone();
    let mut ends = 0;
    let mut seed = Some(3);
    assert_eq!(native.reset(seed).unwrap(), bridged.reset(seed).unwrap());
    for t in 0..steps {
        let (d, c) = action(&space, t);
        let a = match space {
            Space::Discrete(_) => Action::Discrete(d),
            Space::Box(_) => Action::Continuous(&c),
        };
        let (x, mut y) = (native.step(a).unwrap(), bridged.step(a).unwrap());
        if let Rewards::Scaled(tol) = rewards {
            let diff = (x.reward - y.reward).abs();
            assert!(
                diff <= tol * y.reward.abs().max(1.0),
                "step {t}: reward {} against {} (bridged)",
                x.reward,
                y.reward
            );
            y.reward = x.reward; // then everything else to the bit
        }
        assert_eq!(x, y, "step {t}");
        if x.terminated || x.truncated {
            ends += 1;
            // Alternate reseeding and continuing the generator's stream.
            seed = if ends % 2 == 0 {
                Some(100 + t as u64)
            } else {
                None
            };
            assert_eq!(
                native.reset(seed).unwrap(),
                bridged.reset(seed).unwrap(),
                "reset {ends}"
            );
        }
    }
    (steps, ends)
}

#[test]
fn cartpole_matches_the_native_one() {
    let mut native = emberlab_env::make("CartPole-v1").unwrap();
    let (_, ends) = same_transitions(
        native.as_mut(),
        &mut gym("CartPole-v1"),
        1500,
        Rewards::Exact,
    );
    assert!(ends >= 5, "{ends} episodes");
}

#[test]
fn pendulum_matches_the_native_one() {
    let mut native = emberlab_env::make("Pendulum-v1").unwrap();
    let (_, ends) = same_transitions(
        native.as_mut(),
        &mut gym("Pendulum-v1"),
        900,
        Rewards::Exact,
    );
    assert!(ends >= 4, "{ends} truncations");
}

#[test]
fn acrobot_and_mountain_car_match_the_native_ones() {
    for id in ["Acrobot-v1", "MountainCar-v0", "MountainCarContinuous-v0"] {
        let mut native = emberlab_env::make(id).unwrap();
        same_transitions(native.as_mut(), &mut gym(id), 600, Rewards::Exact);
    }
}

/// Every native MuJoCo task matches Gymnasium's from seeds, normal reset noise (HalfCheetah,
/// Ant, InvertedDoublePendulum) included: observations and episode ends to the bit, rewards
/// to 1e-12 ([`Rewards`]).
#[cfg(feature = "mujoco")]
#[test]
fn mujoco_tasks_match_the_native_ones() {
    for id in emberlab_env::MUJOCO_IDS {
        let mut native = emberlab_env::make(id).unwrap();
        let (_, ends) =
            same_transitions(native.as_mut(), &mut gym(id), 1100, Rewards::Scaled(1e-12));
        assert!(ends >= 1, "{id}: {ends} episode ends");
    }
}

#[test]
fn bridged_vector_envs_step_in_parallel_workers() {
    let p = python();
    let mut bridged =
        ThreadedVecEnv::new(2, 2, |_| GymEnv::with_python("CartPole-v1", &p)).unwrap();
    let mut native = SyncVecEnv::from_id("CartPole-v1", 4).unwrap();
    assert_eq!(
        bridged.reset(Some(5)).unwrap(),
        native.reset(Some(5)).unwrap()
    );
    let mut ends = 0;
    for t in 0..400 {
        let actions: Vec<usize> = (0..4).map(|i| (t + i) % 2).collect();
        let a = bridged.step(VecActions::Discrete(&actions)).unwrap();
        let (obs, rewards, term) = (a.obs.to_vec(), a.rewards.to_vec(), a.terminated.to_vec());
        let b = native.step(VecActions::Discrete(&actions)).unwrap();
        assert_eq!(
            (obs, rewards),
            (b.obs.to_vec(), b.rewards.to_vec()),
            "step {t}"
        );
        ends += term.iter().filter(|&&x| x).count();
    }
    assert!(ends > 0);
}

/// A folder with a Python module registering environments that misbehave, and an
/// interpreter wrapper that puts it on `PYTHONPATH`.
fn misbehaving() -> (PathBuf, String) {
    let dir = std::env::temp_dir().join(format!("ember-gym-{}", std::process::id()));
    std::fs::create_dir_all(&dir).unwrap();
    std::fs::write(
        dir.join("ember_test_envs.py"),
        r#"
import gymnasium as gym
import numpy as np
from gymnasium import spaces

class Raises(gym.Env):
    observation_space = spaces.Box(-1.0, 1.0, (2,), np.float32)
    action_space = spaces.Discrete(2)
    def reset(self, seed=None, options=None):
        super().reset(seed=seed)
        self.t = 0
        print("chatter on stdout must not reach the protocol")
        return np.zeros(2, np.float32), {}
    def step(self, action):
        self.t += 1
        if self.t == 3:
            raise RuntimeError("boom at step 3")
        if self.t == 5:
            import os
            os._exit(7)
        return np.full(2, 0.5, np.float32), 1.0, False, False, {}

class DictObs(gym.Env):
    observation_space = spaces.Dict({"a": spaces.Discrete(3)})
    action_space = spaces.Discrete(2)

gym.register("ember_test_envs/Raises-v0", entry_point=Raises)
gym.register("ember_test_envs/DictObs-v0", entry_point=DictObs)
"#,
    )
    .unwrap();
    let wrapper = dir.join("python");
    std::fs::write(
        &wrapper,
        format!(
            "#!/bin/sh\nPYTHONPATH=\"{}\" exec \"{}\" \"$@\"\n",
            dir.display(),
            python()
        ),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&wrapper, std::fs::Permissions::from_mode(0o755)).unwrap();
    (dir, wrapper.display().to_string())
}

#[test]
fn bad_environments_are_errors_naming_the_problem() {
    let (dir, py) = misbehaving();
    // An exception in step is an error; the worker goes on, until it dies.
    let mut env = GymEnv::with_python("ember_test_envs:ember_test_envs/Raises-v0", &py).unwrap();
    assert_eq!(env.reset(Some(0)).unwrap(), vec![0.0, 0.0]);
    env.step(Action::Discrete(0)).unwrap();
    env.step(Action::Discrete(1)).unwrap();
    let e = env.step(Action::Discrete(0)).unwrap_err().to_string();
    assert!(
        e.contains("RuntimeError") && e.contains("boom at step 3"),
        "{e}"
    );
    assert_eq!(env.step(Action::Discrete(0)).unwrap().obs, vec![0.5, 0.5]);
    let e = env.step(Action::Discrete(0)).unwrap_err().to_string();
    assert!(
        e.contains("stopped answering") && e.contains("exit status: 7"),
        "{e}"
    );
    assert!(
        env.step(Action::Discrete(9)).is_err(),
        "out of the action space"
    );

    let e = GymEnv::with_python("ember_test_envs:ember_test_envs/DictObs-v0", &py)
        .unwrap_err()
        .to_string();
    assert!(e.contains("Dict") && e.contains("Box and Discrete"), "{e}");
    let e = GymEnv::with_python("NoSuchEnv-v9", &py)
        .unwrap_err()
        .to_string();
    assert!(e.contains("NoSuchEnv"), "{e}");
    let e = GymEnv::with_python("CartPole-v1", "/no/such/python")
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("/no/such/python") && e.contains("EMBER_PYTHON"),
        "{e}"
    );
    // An interpreter without site-packages: no numpy, no gymnasium.
    let bare = dir.join("bare");
    std::fs::write(
        &bare,
        format!("#!/bin/sh\nexec \"{}\" -S \"$@\"\n", python()),
    )
    .unwrap();
    use std::os::unix::fs::PermissionsExt;
    std::fs::set_permissions(&bare, std::fs::Permissions::from_mode(0o755)).unwrap();
    let e = GymEnv::with_python("CartPole-v1", bare.to_str().unwrap())
        .unwrap_err()
        .to_string();
    assert!(
        e.contains("ModuleNotFoundError") && e.contains("pip install gymnasium"),
        "{e}"
    );
    let _ = std::fs::remove_dir_all(&dir);
}
