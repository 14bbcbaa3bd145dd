//! The REDQ example (`examples/custom_redq.rs`: an algorithm outside the library, assembled
//! from its public parts) learns Pendulum-v1: its first evaluation ≥ −200 comes in fewer
//! env steps than the library's SAC with the same seed and trainer settings (both
//! evaluated every 250 steps, 10 deterministic episodes, on flex); run by the `ember`
//! command (registered as `redq`) and killed at random instants, it resumes exactly.

#[path = "../examples/custom_redq.rs"]
mod redq;

use emberlab::algo::{Devices, OffPolicyConfig, SacConfig, TrainReport, train_off_policy};
use emberlab::env::{SyncVecEnv, VecEnv};
use std::process::Command;

const SEED: u64 = 1;
const EVAL_EVERY: u64 = 250;

/// Held by each test for its whole run. A learner seeds the backend's global generator and
/// then draws its initial weights from it; a learner built at the same moment in another
/// test thread would draw in between, and the two runs would start from other weights.
static ONE_AT_A_TIME: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn one_at_a_time() -> std::sync::MutexGuard<'static, ()> {
    ONE_AT_A_TIME.lock().unwrap_or_else(|e| e.into_inner())
}

fn first_at_goal(report: &TrainReport) -> Option<u64> {
    report
        .evals
        .iter()
        .find(|e| e.mean_return >= -200.0)
        .map(|e| e.env_steps)
}

fn sac() -> TrainReport {
    let device = emberlab::backend::DeviceSpec::Flex.device().unwrap();
    let mut env = SyncVecEnv::from_id("Pendulum-v1", 1).unwrap();
    let (config, trainer) = SacConfig::zoo("Pendulum-v1").unwrap();
    let mut sac = SacConfig {
        seed: SEED,
        ..config
    }
    .build(
        env.single_observation_space(),
        env.single_action_space(),
        &Devices::same(&device),
    )
    .unwrap();
    let trainer = OffPolicyConfig {
        eval_every: EVAL_EVERY,
        target_return: Some(-200.0),
        seed: SEED,
        ..trainer
    };
    let mut replay = trainer.build_replay(&env).unwrap();
    let eval = emberlab::env::factory("Pendulum-v1").unwrap();
    train_off_policy(&mut sac, &mut env, &mut replay, eval.as_ref(), &trainer).unwrap()
}

#[test]
fn redq_reaches_minus_200_in_fewer_env_steps_than_sac() {
    let _one = one_at_a_time();
    let redq = redq::run_redq(SEED, EVAL_EVERY).unwrap();
    let sac = sac();
    let curve = |r: &TrainReport| -> String {
        r.evals
            .iter()
            .map(|e| format!("{}:{:.0}", e.env_steps, e.mean_return))
            .collect::<Vec<_>>()
            .join(" ")
    };
    println!("REDQ {}\nSAC  {}", curve(&redq), curve(&sac));
    let (r, s) = (first_at_goal(&redq), first_at_goal(&sac));
    let r = r.expect("REDQ never reached -200");
    let s = s.expect("SAC never reached -200");
    assert!(r < s, "REDQ reached -200 at {r} env steps, SAC at {s}");
    // Many critic updates per env step (UPDATES_PER_STEP after the random warm-up).
    let per_step = redq.updates as f64 / redq.env_steps as f64;
    assert!(per_step > redq::UPDATES_PER_STEP as f64 / 2.0, "{per_step}");
}

/// Set in the child processes of [`redq_killed_and_resumed_by_the_command_equals_uninterrupted`]:
/// the arguments of the `ember` command (joined by `\x1f`) the child runs with REDQ
/// registered, as `custom_redq COMMAND ...` does.
const CHILD: &str = "EMBER_REDQ_COMMAND";

/// The child: REDQ registered, then the command.
#[test]
fn redq_command() {
    let Ok(args) = std::env::var(CHILD) else {
        return;
    };
    redq::register().unwrap();
    let args = std::iter::once("ember").chain(args.split('\x1f'));
    let code = emberlab_cli::app::main_with_args(args);
    std::process::exit(i32::from(code != std::process::ExitCode::SUCCESS));
}

/// The command with REDQ registered, in a process of its own.
fn command(args: &[&str]) -> Command {
    let mut c = Command::new(std::env::current_exe().unwrap());
    c.args(["--exact", "redq_command", "--test-threads=1"])
        .env(CHILD, args.join("\x1f"));
    c
}

/// REDQ through the `ember` command (registered as `redq`, its section `[redq]`): a run
/// killed at random instants and resumed with `train --resume` until done equals one that
/// never stopped — metrics, evaluations and best weights — and both evaluate alike; its
/// policy exports as ONNX.
#[test]
fn redq_killed_and_resumed_by_the_command_equals_uninterrupted() {
    use emberlab_cli::checks::{Signal, same_learning, stop_and_resume};
    let _one = one_at_a_time();
    let cwd = std::env::temp_dir().join(format!("ember-redq-cmd-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&cwd);
    std::fs::create_dir_all(&cwd).unwrap();
    let args = |out: &'static str| {
        let mut a = vec!["train", "redq", "--env", "Pendulum-v1", "--seed", "1"];
        a.extend(["--steps", "300", "--set", "redq.width=32"]);
        a.extend(["--set", "off_policy.learning_starts=150"]);
        a.extend(["--set", "off_policy.batch_size=64"]);
        a.extend(["--set", "off_policy.eval_episodes=1", "--eval-every", "150"]);
        a.extend([
            "--set",
            "log_every=25",
            "--save-every",
            "25",
            "--quiet",
            "--out",
            out,
        ]);
        a
    };
    // The command in `cwd`, which must succeed: its standard output.
    let run_ok = |args: &[&str]| {
        let out = command(args).current_dir(&cwd).output().unwrap();
        let err = String::from_utf8_lossy(&out.stderr);
        assert!(out.status.success(), "{args:?}: {err}");
        String::from_utf8(out.stdout).unwrap()
    };
    run_ok(&args("whole"));
    let config = std::fs::read_to_string(cwd.join("whole/config.toml")).unwrap();
    assert!(
        config.contains("[redq]") && config.contains("width = 32"),
        "{config}"
    );
    let stops = stop_and_resume(&command, &cwd, &args("killed"), "killed", Signal::Kill, 5)
        .unwrap_or_else(|e| panic!("{e:#}"));
    println!(
        "REDQ through the command: finished after {} kills",
        stops.kills
    );
    assert!(stops.kills >= 2, "killed only {} times", stops.kills);
    same_learning(&cwd.join("whole"), &cwd.join("killed")).unwrap_or_else(|e| panic!("{e:#}"));
    let eval = |run: &str| {
        let text = run_ok(&["eval", run, "--episodes", "2"]);
        text.lines()
            .find(|l| l.contains("return"))
            .unwrap_or_default()
            .to_string()
    };
    assert_eq!(eval("whole"), eval("killed"));
    run_ok(&["export", "whole", "--onnx", "redq.onnx"]);
    let onnx = std::fs::read(cwd.join("redq.onnx")).unwrap();
    assert!(onnx.len() > 32 * 32 * 4, "{} bytes", onnx.len());
    std::fs::remove_dir_all(&cwd).unwrap();
}

/// `custom_redq --steps N`'s flags: the shapes they set, and an error naming the flag for
/// every bad one (no run starts).
#[test]
fn redq_flags_set_shapes_and_name_bad_ones() {
    use emberlab::algo::UpdateSchedule;
    let parse = |flags: &[&str]| {
        let flags: Vec<String> = flags.iter().map(|f| f.to_string()).collect();
        redq::parse_flags(&flags).map_err(|e| e.to_string())
    };
    let shapes = parse(&["--width", "2", "--batch", "3", "--sequential"]).unwrap();
    assert_eq!(
        shapes,
        redq::Shapes {
            width: Some(2),
            batch: Some(3),
            schedule: UpdateSchedule::Sequential
        }
    );
    assert_eq!(parse(&[]).unwrap(), redq::Shapes::default());
    for (flags, named) in [
        (&["--width", "0"][..], "--width"),
        (&["--batch", "x"][..], "--batch"),
        (&["--batch"][..], "--batch"),
        (&["--state", "runs/a"][..], "--state"),
        (&["--widht", "2"][..], "--widht"),
    ] {
        let err = parse(flags).expect_err(&format!("{flags:?} must be refused"));
        assert!(err.contains(named), "{flags:?}: {err}");
    }
}
