//! `ember export RUN --onnx FILE`: every algorithm's exported policy (SAC's and TD3's
//! actors, DQN's Q-network, PPO's categorical head, A2C's gSDE head behind its observation
//! statistics) gives Ember's own greedy actions in onnxruntime (tests/onnx_check.py) on
//! 1,000 observations.
//!
//! The interpreter is `$EMBER_PY_PYTHON` with `onnxruntime` (scripts/setup-python.sh makes
//! one). Without it the test fails under CI (`$CI` set) and is skipped with a note
//! otherwise.

use emberlab_algo::ActionBuf;
use emberlab_run::RunPolicy;
use std::path::{Path, PathBuf};
use std::process::Command;

const EMBER: &str = env!("CARGO_BIN_EXE_ember");
const ROWS: usize = 1000;

/// The python with onnxruntime that reads the exported files back: the test fails without
/// it (scripts/test.sh sets it; scripts/setup-python.sh makes one).
fn python() -> String {
    match std::env::var("EMBER_PY_PYTHON") {
        Ok(p) if !p.is_empty() => p,
        _ => panic!(
            "EMBER_PY_PYTHON is unset: set it to a python with onnxruntime \
             (scripts/setup-python.sh prints it; scripts/test.sh runs it)"
        ),
    }
}

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("ember-onnx-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

fn ember(args: &[&str], cwd: &Path) -> std::process::Output {
    Command::new(EMBER)
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

/// A short run of `algo` with small networks, trained into `dir/run`.
fn train(algo: &str, env: &str, hidden: &str, dir: &Path) -> PathBuf {
    let hidden = format!("{algo}.hidden={hidden}");
    let mut args = vec!["train", algo, "--env", env, "--set", &hidden, "--seed", "3"];
    if ["ppo", "a2c"].contains(&algo) {
        args.extend(["--steps", "2048", "--set", "on_policy.eval_episodes=1"]);
    } else {
        args.extend(["--steps", "600", "--set", "off_policy.batch_size=32"]);
        args.extend(["--set", "off_policy.learning_starts=200"]);
        args.extend(["--set", "off_policy.eval_episodes=1"]);
    }
    args.extend(["--eval-every", "600", "--quiet", "--out", "run"]);
    let out = ember(&args, dir);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    dir.join("run")
}

fn f32_file(path: &Path, values: &[f32]) {
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(path, bytes).unwrap();
}

/// Exports `run` with the command, acts on `ROWS` observations with Ember and with
/// onnxruntime; returns the checker's figure.
fn compare(python: &str, run: &Path, dir: &Path, scale: f32) -> (String, f64) {
    let model = dir.join("policy.onnx");
    let out = ember(
        &[
            "export",
            run.to_str().unwrap(),
            "--onnx",
            model.to_str().unwrap(),
        ],
        dir,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("wrote"));
    let mut policy = RunPolicy::load(run, false).unwrap();
    let d = policy.obs_dim();
    // Observations spread over ±scale (a fixed, simple generator: no dependency).
    let obs: Vec<f32> = (0..ROWS * d)
        .map(|i| ((i as f32 * 0.754_877_7).fract() * 2.0 - 1.0) * scale)
        .collect();
    let (ours, kind) = match policy.act(&obs).unwrap() {
        ActionBuf::Continuous(a) => (a, "continuous"),
        ActionBuf::Discrete(a) => (a.iter().map(|&i| i as f32).collect(), "discrete"),
    };
    let (obs_file, act_file) = (dir.join("obs.bin"), dir.join("actions.bin"));
    f32_file(&obs_file, &obs);
    f32_file(&act_file, &ours);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/onnx_check.py");
    let out = Command::new(python)
        .args([&script, &model, &obs_file, &act_file])
        .arg(d.to_string())
        .arg(kind)
        .output()
        .unwrap_or_else(|e| panic!("cannot run {python}: {e}"));
    assert!(
        out.status.success(),
        "{} failed:\n{}",
        script.display(),
        String::from_utf8_lossy(&out.stderr)
    );
    let line = String::from_utf8(out.stdout).unwrap();
    let (name, value) = line.trim().split_once(' ').unwrap();
    (name.to_string(), value.parse().unwrap())
}

#[test]
fn exported_policies_act_as_ember_does_in_onnxruntime() {
    let python = python();
    for (algo, env, hidden, scale) in [
        ("sac", "Pendulum-v1", "[32, 32]", 3.0),
        ("td3", "Pendulum-v1", "[32, 32]", 3.0),
        ("dqn", "CartPole-v1", "[32]", 2.0),
        ("ppo", "CartPole-v1", "[16, 16]", 2.0),
        // zoo's A2C Pendulum preset: gSDE and VecNormalize (the statistics go first).
        ("a2c", "Pendulum-v1", "[16, 16]", 3.0),
    ] {
        let dir = temp(algo);
        let run = train(algo, env, hidden, &dir);
        let (figure, value) = compare(&python, &run, &dir, scale);
        eprintln!("{algo} {env}: {figure} {value} over {ROWS} observations");
        match figure.as_str() {
            "max_abs_diff" => assert!(value <= 1e-4, "{algo}: actions differ by {value}"),
            _ => assert_eq!(value, 0.0, "{algo}: {value} greedy actions differ"),
        }
    }
}

#[test]
fn a_missing_run_is_refused_and_writes_nothing() {
    let dir = temp("refused");
    let out = ember(&["export", "nothing-here", "--onnx", "p.onnx"], &dir);
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(
        !out.status.success() && err.contains("nothing-here"),
        "{err}"
    );
    assert!(!dir.join("p.onnx").exists());
}
