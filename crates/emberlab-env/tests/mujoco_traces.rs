//! Replays traces recorded from Gymnasium 1.4 + MuJoCo 3.17.0 by `crates/emberlab-env/tools/gen_mujoco_traces.py`
//! (run here with `EMBER_MUJOCO_PYTHON`, the venv of `scripts/setup-mujoco.sh`, into a
//! temporary folder; or read from `EMBER_MUJOCO_TRACES` if set).
//!
//! What must agree:
//! - NumPy's generator: raw words, `random()`, `uniform()` and `standard_normal()` (NumPy's
//!   ziggurat, linked from its wheel, its slow paths included) bit for bit.
//! - Seeded resets of every task (uniform and normal reset noise): qpos and qvel bit for bit.
//! - Every step: observations bit for bit (Gymnasium's float64 rounded to f32), terminated
//!   and truncated exactly, rewards and their terms to 1e-12 (scaled; NumPy's `einsum` and
//!   `linalg.norm` may add in another order).

#![cfg(feature = "mujoco")]

use emberlab_core::{Action, Env};
use emberlab_env::{MujocoEnv, NumpyRng};
use serde_json::Value;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

/// The folder of traces: `EMBER_MUJOCO_TRACES`, or generated once per test process.
fn traces() -> &'static Path {
    static DIR: OnceLock<PathBuf> = OnceLock::new();
    DIR.get_or_init(|| {
        if let Some(dir) = std::env::var_os("EMBER_MUJOCO_TRACES") {
            return PathBuf::from(dir);
        }
        let python = std::env::var_os("EMBER_MUJOCO_PYTHON").unwrap_or_else(|| {
            panic!(
                "EMBER_MUJOCO_PYTHON is not set: run `scripts/setup-mujoco.sh > /tmp/mujoco.env \
                 && . /tmp/mujoco.env` first (the traces are recorded from Gymnasium by \
                 crates/emberlab-env/tools/gen_mujoco_traces.py)"
            )
        });
        let dir = std::env::temp_dir().join(format!("ember-mujoco-traces-{}", std::process::id()));
        let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tools/gen_mujoco_traces.py");
        let status = std::process::Command::new(python)
            .arg(&script)
            .arg(&dir)
            .stderr(std::process::Stdio::null())
            .status()
            .expect("running the trace generator");
        assert!(status.success(), "{} failed: {status}", script.display());
        dir
    })
}

fn load(name: &str) -> Value {
    let path = traces().join(format!("{name}.json"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{}: {e}", path.display()));
    serde_json::from_str(&text).unwrap()
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

fn close(what: &str, got: f64, want: f64) -> f64 {
    let diff = (got - want).abs() / want.abs().max(1.0);
    assert!(
        diff <= 1e-12,
        "{what}: got {got}, Gymnasium {want} (scaled diff {diff:e})"
    );
    diff
}

/// What a replay checked.
struct Replayed {
    steps: usize,
    terminated: usize,
    truncated: usize,
}

/// Replays every episode of one task.
fn replay(id: &str) -> Replayed {
    let trace = load(id);
    assert_eq!(trace["env"], id);
    let mut env = emberlab_env::make(id).unwrap();
    let mut raw = MujocoEnv::new(id).unwrap();
    assert_eq!(
        raw.max_episode_steps() as u64,
        trace["max_episode_steps"].as_u64().unwrap()
    );
    let low: Vec<f32> = floats(&trace["action_low"])
        .iter()
        .map(|&x| x as f32)
        .collect();
    match env.action_space() {
        emberlab_core::Space::Box(b) => assert_eq!(b.low(), &low[..], "{id}: action space"),
        s => panic!("{id}: action space {s}"),
    }
    let mut checked = 0;
    let (mut ends, mut cuts) = (0, 0);
    let mut worst = 0.0f64;
    for (k, ep) in trace["episodes"].as_array().unwrap().iter().enumerate() {
        let what = |t: usize| format!("{id} episode {k} step {t}");
        let seeded = ep["kind"] == "seed";
        // Seeded episodes go through the registry's time limit; set states through the task.
        let obs0 = if seeded {
            let obs = env.reset(Some(ep["seed"].as_u64().unwrap())).unwrap();
            raw.reset(Some(ep["seed"].as_u64().unwrap())).unwrap();
            assert_eq!(
                raw.qpos(),
                &floats(&ep["reset_qpos"])[..],
                "{id} seed reset qpos"
            );
            assert_eq!(
                raw.qvel(),
                &floats(&ep["reset_qvel"])[..],
                "{id} seed reset qvel"
            );
            obs
        } else {
            raw.reset(Some(0)).unwrap();
            raw.set_state(&floats(&ep["qpos"]), &floats(&ep["qvel"]))
                .unwrap();
            let mut o = vec![0.0; raw.qpos().len() + 400];
            o.truncate(match raw.observation_space() {
                emberlab_core::Space::Box(b) => b.dim(),
                _ => unreachable!(),
            });
            raw.observe_into(&mut o).unwrap();
            o
        };
        let want0: Vec<f32> = floats(&ep["reset_obs"]).iter().map(|&x| x as f32).collect();
        assert_eq!(obs0, want0, "{id} episode {k}: reset observation");
        for (t, step) in ep["steps"].as_array().unwrap().iter().enumerate() {
            let action: Vec<f32> = floats(&step["action"]).iter().map(|&x| x as f32).collect();
            let (obs, reward, terminated, truncated) = if seeded {
                let s = env.step(Action::Continuous(&action)).unwrap();
                (s.obs, s.reward, s.terminated, s.truncated)
            } else {
                let s = raw.step(Action::Continuous(&action)).unwrap();
                (s.obs, s.reward, s.terminated, false)
            };
            let want: Vec<f32> = floats(&step["obs"]).iter().map(|&x| x as f32).collect();
            assert_eq!(obs, want, "{}: observation", what(t));
            assert_eq!(
                terminated,
                step["terminated"].as_bool().unwrap(),
                "{}: terminated",
                what(t)
            );
            assert_eq!(
                truncated,
                step["truncated"].as_bool().unwrap(),
                "{}: truncated",
                what(t)
            );
            worst = worst.max(close(
                &format!("{}: reward", what(t)),
                reward,
                step["reward"].as_f64().unwrap(),
            ));
            if !seeded {
                for ((name, got), want) in raw.reward_terms().iter().zip(floats(&step["terms"])) {
                    worst = worst.max(close(&format!("{}: {name}", what(t)), *got, want));
                }
            }
            checked += 1;
            ends += usize::from(terminated);
            cuts += usize::from(truncated);
        }
    }
    eprintln!(
        "{id}: {checked} steps match ({ends} terminated, {cuts} truncated; worst reward \
         difference {worst:e})"
    );
    Replayed {
        steps: checked,
        terminated: ends,
        truncated: cuts,
    }
}

#[test]
fn numpy_generator_matches_numpy() {
    for case in load("numpy_random").as_array().unwrap() {
        let seed: u64 = case["seed"].as_str().unwrap().parse().unwrap();
        let mut rng = NumpyRng::seed_from(seed);
        for raw in case["raw"].as_array().unwrap() {
            assert_eq!(
                rng.next_u64(),
                raw.as_str().unwrap().parse::<u64>().unwrap(),
                "seed {seed}"
            );
        }
        let mut rng = NumpyRng::seed_from(seed);
        for want in floats(&case["random"]) {
            assert_eq!(rng.random(), want, "seed {seed}");
        }
        for want in floats(&case["uniform"]) {
            assert_eq!(rng.uniform(-0.1, 0.1), want, "seed {seed}");
        }
        let normal = floats(&case["normal"]);
        assert!(
            normal.len() >= 20_000,
            "seed {seed}: {} normal draws",
            normal.len()
        );
        for (i, want) in normal.into_iter().enumerate() {
            assert_eq!(rng.standard_normal(), want, "seed {seed}: normal draw {i}");
        }
    }
}

/// `ends`: the task terminates (the traces must hit it); otherwise seeded episodes run into
/// the time limit (HalfCheetah, Reacher) or stop at the script's step count (Swimmer).
macro_rules! trace_tests {
    ($($name:ident => $id:literal, ends: $ends:literal, truncates: $cuts:literal;)*) => {$(
        #[test]
        fn $name() {
            let r = replay($id);
            assert!(r.steps >= 25, "{}: only {} steps", $id, r.steps);
            assert_eq!(r.terminated > 0, $ends, "{}: terminations", $id);
            assert_eq!(r.truncated > 0, $cuts, "{}: truncations", $id);
        }
    )*};
}

trace_tests! {
    half_cheetah_matches_gymnasium => "HalfCheetah-v5", ends: false, truncates: true;
    hopper_matches_gymnasium => "Hopper-v5", ends: true, truncates: false;
    walker2d_matches_gymnasium => "Walker2d-v5", ends: true, truncates: false;
    ant_matches_gymnasium => "Ant-v5", ends: true, truncates: false;
    humanoid_matches_gymnasium => "Humanoid-v5", ends: true, truncates: false;
    swimmer_matches_gymnasium => "Swimmer-v5", ends: false, truncates: false;
    inverted_pendulum_matches_gymnasium => "InvertedPendulum-v5", ends: true, truncates: false;
    inverted_double_pendulum_matches_gymnasium =>
        "InvertedDoublePendulum-v5", ends: true, truncates: false;
    reacher_matches_gymnasium => "Reacher-v5", ends: false, truncates: true;
}
