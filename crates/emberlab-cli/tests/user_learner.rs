//! A program of a user's own registers its learner and runs the `ember` command
//! (`emberlab_cli::app::main_with_args`): the learner has a config section of its own,
//! trains, survives SIGKILL at random instants with `--resume` giving the same run bit for
//! bit, evaluates, and exports an ONNX policy that acts as it does — through the door the
//! built-in algorithms use.
//!
//! The user's program is this test binary started again with `EMBER_USER_PROGRAM` set: its
//! `users_program` test then registers the learner and runs the command with those
//! arguments (so the command runs in a process of its own that can be killed).

use emberlab_algo::{Devices, SacConfig, Validate};
use emberlab_core::Space;
use emberlab_run::{Kind, LearnerConfig, OffPolicy, RunLearner, TrainerKind};
use serde::{Deserialize, Serialize};
use std::path::PathBuf;
use std::process::{Command, ExitCode};

mod common;

use common::{ok, onnx_acts_as_ember, onnx_python};
use emberlab_cli::checks::{Signal, Stops, same_learning, stop_and_resume};

/// The arguments of the user's program, joined by `\x1f`.
const PROGRAM: &str = "EMBER_USER_PROGRAM";

/// SAC with a fixed temperature, as a user writes a learner of their own: a section of its
/// own (`[tempered]`), checked, building its learner from the public parts.
#[derive(Clone, Serialize, Deserialize)]
#[serde(deny_unknown_fields, default)]
struct Tempered {
    hidden: Vec<usize>,
    alpha: f64,
    learning_rate: f64,
    seed: u64,
}

impl Default for Tempered {
    fn default() -> Self {
        Tempered {
            hidden: vec![64, 64],
            alpha: 0.1,
            learning_rate: 1e-3,
            seed: 0,
        }
    }
}

impl Validate for Tempered {
    fn validate(&self) -> emberlab_core::Result<()> {
        emberlab_algo::check_range("alpha", self.alpha, 0.0, 10.0)?;
        emberlab_algo::check_range("learning_rate", self.learning_rate, 1e-8, 1.0)
    }
}

impl LearnerConfig for Tempered {
    const TRAINER: TrainerKind = TrainerKind::OffPolicy;
    const METRICS: &'static [&'static str] = &["critic_loss", "actor_loss", "alpha_loss", "alpha"];

    fn build_learner(
        &self,
        obs: &Space,
        act: &Space,
        devices: &Devices,
    ) -> emberlab_core::Result<Box<dyn RunLearner>> {
        let sac = SacConfig {
            hidden: self.hidden.clone(),
            init_alpha: self.alpha,
            auto_alpha: false,
            learning_rate: self.learning_rate,
            seed: self.seed,
            ..SacConfig::default()
        };
        Ok(Box::new(OffPolicy(sac.build(obs, act, devices)?)))
    }
}

fn register() {
    emberlab_run::register(Kind::<Tempered>::named("tempered")).unwrap();
}

/// The user's program: registers its learner, then runs `ember` with the arguments it was
/// given.
#[test]
fn users_program() {
    let Ok(args) = std::env::var(PROGRAM) else {
        return;
    };
    register();
    let args = std::iter::once("ember").chain(args.split('\x1f'));
    let code = emberlab_cli::app::main_with_args(args);
    let code = [0, 1, 2, 130]
        .into_iter()
        .find(|&c| code == ExitCode::from(c))
        .unwrap_or(101);
    std::process::exit(i32::from(code));
}

/// The user's program with `args`.
fn program(args: &[&str]) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args([
        "--exact",
        "users_program",
        "--nocapture",
        "--test-threads=1",
    ])
    .env(PROGRAM, args.join("\x1f"));
    c
}

fn temp(name: &str) -> PathBuf {
    let dir =
        std::env::temp_dir().join(format!("ember-user-learner-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// Output and stderr of the program with `args` in `cwd`.
fn run(args: &[&str], cwd: &std::path::Path) -> (Option<i32>, String, String) {
    let out = program(args).current_dir(cwd).output().unwrap();
    (
        out.status.code(),
        String::from_utf8_lossy(&out.stdout).into_owned(),
        String::from_utf8_lossy(&out.stderr).into_owned(),
    )
}

#[test]
fn a_users_learner_trains_resumes_evaluates_and_exports_through_the_command() {
    register();
    let cwd = temp("tempered");
    let args = |out: &'static str| {
        vec![
            "train",
            "tempered",
            "--env",
            "Pendulum-v1",
            "--set",
            "tempered.hidden=[32, 32]",
            "--set",
            "tempered.alpha=0.05",
            "--seed",
            "4",
            "--steps",
            "1200",
            "--set",
            "off_policy.batch_size=32",
            "--set",
            "off_policy.learning_starts=200",
            "--set",
            "off_policy.eval_episodes=2",
            "--set",
            "log_every=100",
            "--eval-every",
            "400",
            "--save-every",
            "100",
            "--quiet",
            "--out",
            out,
        ]
    };
    let (code, _, err) = run(&args("whole"), &cwd);
    assert_eq!(code, Some(0), "{err}");
    let config = std::fs::read_to_string(cwd.join("whole/config.toml")).unwrap();
    assert!(
        config.contains("algo = \"tempered\"") && config.contains("[tempered]"),
        "{config}"
    );
    assert!(
        config.contains("alpha = 0.05") && config.contains("seed = 4"),
        "{config}"
    );
    let header = std::fs::read_to_string(cwd.join("whole/metrics.csv")).unwrap();
    assert!(
        header
            .lines()
            .next()
            .unwrap()
            .ends_with("critic_loss,actor_loss,alpha_loss,alpha")
    );

    // Killed at random instants and resumed until done: the same run, bit for bit.
    let Stops { kills, .. } = ok(stop_and_resume(
        &program,
        &cwd,
        &args("killed"),
        "killed",
        Signal::Kill,
        17,
    ));
    assert!(kills >= 2, "killed only {kills} times");
    ok(same_learning(&cwd.join("whole"), &cwd.join("killed")));
    let eval = |name: &str| {
        let (code, out, err) = run(&["eval", name, "--episodes", "2"], &cwd);
        assert_eq!(code, Some(0), "{err}");
        out.split_once(':').unwrap().1.to_string()
    };
    assert_eq!(eval("whole"), eval("killed"));

    // Its ONNX policy acts as the run does.
    let (figure, value) =
        onnx_acts_as_ember(&program, &onnx_python(), &cwd.join("whole"), &cwd, 3.0);
    assert_eq!(figure, "max_abs_diff");
    assert!(value <= 1e-4, "actions differ by {value}");

    // Its preset, and a misspelt name that lists it among the known ones.
    let (code, out, _) = run(&["zoo", "tempered", "Pendulum-v1"], &cwd);
    assert_eq!(code, Some(0));
    assert!(out.contains("[tempered]\nhidden = [64, 64]"), "{out}");
    let (code, _, err) = run(&["train", "tempred", "--env", "Pendulum-v1"], &cwd);
    assert_eq!(code, Some(2));
    assert!(
        err.contains("unknown algorithm `tempred`") && err.contains("tempered"),
        "{err}"
    );
    std::fs::remove_dir_all(&cwd).unwrap();
}
