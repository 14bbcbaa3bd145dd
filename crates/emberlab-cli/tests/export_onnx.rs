//! `ember export RUN --onnx FILE`: every algorithm's exported policy (SAC's and TD3's
//! actors, DQN's Q-network, PPO's categorical head, A2C's gSDE head behind its observation
//! statistics) gives Ember's own greedy actions in onnxruntime (tests/onnx_check.py) on
//! 1,000 observations.
//!
//! The interpreter is `$EMBER_PY_PYTHON` with `onnxruntime` (scripts/setup-python.sh makes
//! one; scripts/test.sh sets it). Without it the test fails.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

use common::{ONNX_ROWS, onnx_acts_as_ember, onnx_python};

const EMBER: &str = env!("CARGO_BIN_EXE_ember");

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

#[test]
fn exported_policies_act_as_ember_does_in_onnxruntime() {
    let python = onnx_python();
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
        let ember = |args: &[&str]| {
            let mut c = Command::new(EMBER);
            c.args(args);
            c
        };
        let (figure, value) = onnx_acts_as_ember(&ember, &python, &run, &dir, scale);
        eprintln!("{algo} {env}: {figure} {value} over {ONNX_ROWS} observations");
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
