//! What the examples' tests share: the `ember` command with an example's learner
//! registered, run in a child process of the test binary (as the example's own `main`
//! runs it), and the checks every learner the command runs must pass.

use emberlab_cli::checks::{Signal, same_learning, stop_and_resume};
use std::path::{Path, PathBuf};
use std::process::Command;

/// Set in the child processes: the arguments of the `ember` command (joined by `\x1f`).
const CHILD: &str = "EMBER_EXAMPLE_COMMAND";

/// The child's body, in a test named `command_child`: registers the learner, runs the
/// command with the arguments it was given and exits with its status. Does nothing in the
/// parent test run.
pub fn child(kind: impl FnOnce() -> std::sync::Arc<dyn emberlab::run::kinds::LearnerKind>) {
    let Ok(args) = std::env::var(CHILD) else {
        return;
    };
    emberlab::run::register(kind()).unwrap();
    let args = std::iter::once("ember").chain(args.split('\x1f'));
    let code = emberlab_cli::app::main_with_args(args);
    std::process::exit(i32::from(code != std::process::ExitCode::SUCCESS));
}

/// The command with the learner registered, in a process of its own.
pub fn command(args: &[&str]) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args([
        "--exact",
        "command_child",
        "--test-threads=1",
        "--nocapture",
    ])
    .env(CHILD, args.join("\x1f"));
    c
}

/// The command in `cwd`, which must succeed: its standard output.
pub fn run_ok(cwd: &Path, args: &[&str]) -> String {
    let out = command(args).current_dir(cwd).output().unwrap();
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(out.status.success(), "{args:?}: {err}");
    String::from_utf8(out.stdout).unwrap()
}

/// A fresh folder for one test's runs.
pub fn scratch(name: &str) -> PathBuf {
    let cwd = std::env::temp_dir().join(format!("ember-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&cwd);
    std::fs::create_dir_all(&cwd).unwrap();
    cwd
}

/// `train ALGO` on Pendulum-v1 (`extra` settings added), killed at random instants and
/// resumed with `train --resume` until done, equals the run that never stopped — metrics,
/// evaluations and best weights — both evaluate alike, and the policy exports as ONNX.
/// The written config holds `section`.
pub fn killed_and_resumed_equals_uninterrupted(algo: &str, section: &str, extra: &[&str]) {
    let cwd = scratch(&format!("{algo}-kill"));
    let args = |out: &'static str| {
        let mut a = vec!["train", algo, "--env", "Pendulum-v1", "--seed", "1"];
        a.extend(["--steps", "300", "--set", "off_policy.learning_starts=150"]);
        a.extend(["--set", "off_policy.batch_size=64"]);
        a.extend(["--set", "off_policy.eval_episodes=1", "--eval-every", "150"]);
        a.extend(["--set", "log_every=25", "--save-every", "25", "--quiet"]);
        a.extend(extra);
        a.extend(["--out", out]);
        a
    };
    run_ok(&cwd, &args("whole"));
    let config = std::fs::read_to_string(cwd.join("whole/config.toml")).unwrap();
    assert!(config.contains(section), "{config}");
    let stops = stop_and_resume(&command, &cwd, &args("killed"), "killed", Signal::Kill, 5)
        .unwrap_or_else(|e| panic!("{e:#}"));
    println!(
        "{algo} through the command: finished after {} kills",
        stops.kills
    );
    assert!(stops.kills >= 2, "killed only {} times", stops.kills);
    same_learning(&cwd.join("whole"), &cwd.join("killed")).unwrap_or_else(|e| panic!("{e:#}"));
    // "RUN: mean return M ± S over 2 episodes (...)": the same figures for both runs.
    let eval = |run: &str| {
        let text = run_ok(&cwd, &["eval", run, "--episodes", "2"]);
        let figures = text.lines().find_map(|l| l.split_once("mean return"));
        figures
            .unwrap_or_else(|| panic!("no evaluation in {text:?}"))
            .1
            .to_string()
    };
    assert_eq!(eval("whole"), eval("killed"));
    run_ok(&cwd, &["export", "whole", "--onnx", "policy.onnx"]);
    let onnx = std::fs::read(cwd.join("policy.onnx")).unwrap();
    assert!(onnx.len() > 32 * 32 * 4, "{} bytes", onnx.len());
    std::fs::remove_dir_all(&cwd).unwrap();
}

/// A learning run on Pendulum-v1 through the command: seed 1, the learner's preset, an
/// evaluation (10 deterministic episodes) every 250 env steps, stopping at the first
/// ≥ −200.
pub struct Learning {
    /// `(env steps, mean return)` of each evaluation.
    pub evals: Vec<(u64, f64)>,
    /// Env steps of the whole run.
    pub env_steps: u64,
    /// Updates of the whole run.
    pub updates: u64,
}

impl Learning {
    /// Trains `algo` in `cwd`.
    pub fn run(cwd: &Path, algo: &str) -> Learning {
        let mut args = vec!["train", algo, "--env", "Pendulum-v1", "--seed", "1"];
        args.extend(["--eval-every", "250", "--stop-reward", "-200", "--json"]);
        args.extend(["--set", "off_policy.eval_episodes=10", "--out", algo]);
        let out = run_ok(cwd, &args);
        let done = out.lines().rev().find(|l| l.contains("\"done\"")).unwrap();
        let done: serde_json::Value = serde_json::from_str(done).unwrap();
        let evals = cwd.join(algo).join("evaluations.csv");
        Learning {
            evals: emberlab_cli::read_evaluations_csv(&evals).unwrap(),
            env_steps: done["env_steps"].as_u64().unwrap(),
            updates: done["updates"].as_u64().unwrap(),
        }
    }

    /// The env steps of the first evaluation ≥ −200.
    pub fn first_at_goal(&self) -> Option<u64> {
        self.evals.iter().find(|e| e.1 >= -200.0).map(|e| e.0)
    }

    /// The evaluations, `steps:return` each.
    pub fn curve(&self) -> String {
        let points: Vec<String> = self
            .evals
            .iter()
            .map(|(s, r)| format!("{s}:{r:.0}"))
            .collect();
        points.join(" ")
    }
}
