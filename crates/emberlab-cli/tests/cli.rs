//! The `ember` binary as a user runs it: mistakes get one line naming the problem and exit
//! code 2; a run killed with SIGKILL at random instants and resumed until done equals one
//! that never stopped; a checkpoint write that fails for lack of space leaves the previous
//! one loadable.

use std::path::{Path, PathBuf};
use std::process::{Command, Output};

mod common;

use common::{listing, ok};
use emberlab_cli::checks::{Signal, Stops, learning_columns, same_learning, stop_and_resume};

const EMBER: &str = env!("CARGO_BIN_EXE_ember");

fn temp(name: &str) -> PathBuf {
    let dir = std::env::temp_dir().join(format!("emberlab-cli-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    dir
}

/// The `ember` binary with `args`.
fn binary(args: &[&str]) -> Command {
    let mut c = Command::new(EMBER);
    c.args(args);
    c
}

fn ember(args: &[&str], cwd: &Path) -> Output {
    Command::new(EMBER)
        .args(args)
        .current_dir(cwd)
        .output()
        .unwrap()
}

/// Small and fast settings for a run of `algo` (tiny networks and batches).
fn small(algo: &str) -> Vec<&'static str> {
    let mut args = match algo {
        "sac" => vec![
            "train",
            "sac",
            "--env",
            "Pendulum-v1",
            "--set",
            "sac.hidden=[32, 32]",
        ],
        // A MuJoCo task with early termination (autoresets inside the run).
        "sac-hopper" => vec![
            "train",
            "sac",
            "--env",
            "Hopper-v5",
            "--set",
            "sac.hidden=[32, 32]",
        ],
        _ => vec![
            "train",
            "dqn",
            "--env",
            "CartPole-v1",
            "--set",
            "dqn.hidden=[32]",
            "--set",
            "dqn.target_update_interval=100",
            "--set",
            "off_policy.replay.kind=\"prioritized\"",
        ],
    };
    args.extend([
        "--steps",
        if algo.starts_with("sac") {
            "1200"
        } else {
            "4000"
        },
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
    ]);
    args
}

fn one_line_error(out: &Output, expected: &[&str], what: &str) {
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(2), "{what}: {stderr}");
    let lines: Vec<&str> = stderr.lines().filter(|l| !l.trim().is_empty()).collect();
    assert_eq!(lines.len(), 1, "{what}: one line, got {stderr}");
    assert!(lines[0].starts_with("error: "), "{what}: {stderr}");
    for e in expected {
        assert!(lines[0].contains(e), "{what}: `{e}` missing from {stderr}");
    }
}

#[test]
fn mistakes_are_one_line_with_exit_code_2() {
    let cwd = temp("errors");
    let cases: Vec<(Vec<&str>, Vec<&str>)> = vec![
        (
            vec!["train", "ppo2", "--env", "CartPole-v1"],
            vec![
                "unknown algorithm `ppo2`",
                "sac, td3, dqn, ppo, a2c, reinforce",
            ],
        ),
        (
            vec!["train", "sac", "--env", "Pendulum-v9"],
            vec!["unknown environment `Pendulum-v9`", "Pendulum-v1"],
        ),
        (
            vec![
                "train",
                "sac",
                "--env",
                "Pendulum-v1",
                "--set",
                "sac.learning_rat=1",
            ],
            vec!["learning_rat"],
        ),
        (
            vec!["train", "sac", "--env", "Pendulum-v1", "--set", "bogus.x=1"],
            vec!["unknown config key `bogus`", "off_policy"],
        ),
        (
            vec![
                "train",
                "sac",
                "--env",
                "Pendulum-v1",
                "--set",
                "sac.gamma=1.5",
            ],
            vec!["gamma", "1.5"],
        ),
        (
            vec!["train", "sac", "--env", "Pendulum-v1", "--set", "noequals"],
            vec!["KEY=VALUE"],
        ),
        (
            vec![
                "train",
                "sac",
                "--env",
                "Pendulum-v1",
                "--device",
                "tch:cpu",
            ],
            vec!["tch:cpu", "--features tch"],
        ),
        (
            vec!["train", "sac", "--env", "Pendulum-v1", "--device", "tpu"],
            vec!["device"],
        ),
        (
            vec!["train", "sac", "--env", "Pendulum-v1", "--seeds", "5..2"],
            vec!["--seeds", "A..B"],
        ),
        (
            vec!["train", "--resume", "no-such-run"],
            vec!["not a run folder"],
        ),
        (vec!["eval", "no-such-run"], vec!["not a run folder"]),
        (vec!["zoo", "ppo2"], vec!["unknown algorithm"]),
        (
            vec!["bench", "gpu"],
            vec!["unknown bench `gpu`", "replay, inference"],
        ),
        (vec!["bench", "envs", "--secs", "0"], vec!["--secs"]),
    ];
    for (args, expected) in &cases {
        one_line_error(&ember(args, &cwd), expected, &args.join(" "));
    }
    // TOML syntax: line and column.
    let bad = cwd.join("bad.toml");
    std::fs::write(
        &bad,
        "algo = \"sac\"\nenv = \"Pendulum-v1\"\ndevice = flex\n",
    )
    .unwrap();
    let out = ember(
        &[
            "train",
            "sac",
            "--env",
            "Pendulum-v1",
            "--config",
            "bad.toml",
        ],
        &cwd,
    );
    one_line_error(&out, &["bad.toml", "line 3, column"], "syntax");
    // An unknown key in a file.
    let preset = ember(&["zoo", "sac", "Pendulum-v1"], &cwd);
    assert!(preset.status.success());
    let text = String::from_utf8(preset.stdout).unwrap();
    std::fs::write(
        cwd.join("typo.toml"),
        text.replace("batch_size", "batch_sise"),
    )
    .unwrap();
    let out = ember(
        &[
            "train",
            "sac",
            "--env",
            "Pendulum-v1",
            "--config",
            "typo.toml",
        ],
        &cwd,
    );
    one_line_error(&out, &["typo.toml", "batch_sise"], "typo");
    // The preset as printed is a valid config file.
    std::fs::write(cwd.join("preset.toml"), &text).unwrap();
    let out = ember(
        &[
            "train",
            "sac",
            "--env",
            "Pendulum-v1",
            "--config",
            "preset.toml",
            "--steps",
            "50",
            "--set",
            "off_policy.eval_episodes=1",
            "--set",
            "log_every=10",
            "--out",
            "tiny",
            "--quiet",
        ],
        &cwd,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // --out onto an existing run.
    let out = ember(
        &[
            "train",
            "sac",
            "--env",
            "Pendulum-v1",
            "--out",
            "tiny",
            "--steps",
            "50",
        ],
        &cwd,
    );
    one_line_error(&out, &["already holds a run", "--resume"], "existing run");
    // A damaged checkpoint is refused and the run folder left as it was.
    let state = cwd.join("tiny/checkpoint/trainer.state");
    let mut bytes = std::fs::read(&state).unwrap();
    let at = bytes.len() / 2;
    bytes[at] ^= 0x40;
    std::fs::write(&state, &bytes).unwrap();
    let before = listing(&cwd.join("tiny"));
    let out = ember(&["train", "--resume", "tiny"], &cwd);
    one_line_error(
        &out,
        &["cannot resume", "checksum", "left untouched"],
        "damaged",
    );
    assert_eq!(listing(&cwd.join("tiny")), before, "the run folder changed");
    // A network file damaged on disk (its format has no checksum): the manifest names it.
    bytes[at] ^= 0x40;
    std::fs::write(&state, &bytes).unwrap();
    let net = std::fs::read_dir(cwd.join("tiny/checkpoint/learner"))
        .unwrap()
        .map(|e| e.unwrap().path())
        .find(|p| p.extension().is_some_and(|x| x == "bpk"))
        .expect("a network file in the checkpoint");
    let good = std::fs::read(&net).unwrap();
    let mut damaged = good.clone();
    let middle = damaged.len() / 2;
    damaged[middle] ^= 0x04;
    std::fs::write(&net, &damaged).unwrap();
    let before = listing(&cwd.join("tiny"));
    let name = net.file_name().unwrap().to_str().unwrap();
    let out = ember(&["train", "--resume", "tiny"], &cwd);
    one_line_error(&out, &["cannot resume", name, "damaged"], "damaged weights");
    let out = ember(&["eval", "tiny", "--episodes", "1"], &cwd);
    one_line_error(&out, &[name, "damaged"], "damaged weights, eval");
    assert_eq!(listing(&cwd.join("tiny")), before);
    std::fs::write(&net, &good).unwrap();
    // A truncated replay file likewise.
    let replay = cwd.join("tiny/checkpoint/replay.bin");
    let full = std::fs::read(&replay).unwrap();
    std::fs::write(&replay, &full[..full.len() - 9]).unwrap();
    let before = listing(&cwd.join("tiny"));
    let out = ember(&["train", "--resume", "tiny"], &cwd);
    one_line_error(&out, &["cannot resume", "replay.bin"], "truncated");
    assert_eq!(listing(&cwd.join("tiny")), before);
    // A deleted checkpoint of a run that made progress.
    std::fs::remove_dir_all(cwd.join("tiny/checkpoint")).unwrap();
    let out = ember(&["train", "--resume", "tiny"], &cwd);
    one_line_error(&out, &["no checkpoint"], "missing");
    let out = ember(&["eval", "tiny", "--episodes", "0"], &cwd);
    one_line_error(&out, &["--episodes"], "zero episodes");
    std::fs::remove_dir_all(&cwd).unwrap();
}

/// Stops the run `kills` times — SIGKILL, or SIGINT (Ctrl-C: the run writes a checkpoint
/// and exits with 130) — and resumes it each time.
fn killed_and_resumed_equals_uninterrupted(algo: &str, seed: u64, signal: Signal) {
    let cwd = temp(&format!("kill-{algo}-{signal:?}"));
    let mut args = small(algo);
    args.extend(["--out", "whole"]);
    let out = ember(&args, &cwd);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );

    let mut args = small(algo);
    args.extend(["--out", "killed"]);
    let Stops { kills, interrupted } = ok(stop_and_resume(
        &binary, &cwd, &args, "killed", signal, seed,
    ));
    println!("{algo}: finished after {kills} stops ({interrupted} by Ctrl-C)");
    assert!(
        signal == Signal::Kill || interrupted >= 1,
        "no Ctrl-C was handled"
    );
    assert!(kills >= 2, "{algo}: killed only {kills} times");
    ok(same_learning(&cwd.join("whole"), &cwd.join("killed")));
    let rows = ok(learning_columns(&cwd.join("whole/metrics.csv")));
    let want = if algo.starts_with("sac") { 12 } else { 40 };
    assert_eq!(rows.len(), want, "{algo}: a row every 100 env steps");
    if algo == "sac" && signal == Signal::Kill {
        tensorboard_has_the_run(&cwd.join("whole"));
    }
    let eval = |run: &str| {
        let out = ember(&["eval", run, "--episodes", "2"], &cwd);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        text.split_once(':').unwrap().1.to_string()
    };
    assert_eq!(eval("whole"), eval("killed"));
    std::fs::remove_dir_all(&cwd).unwrap();
}

#[test]
fn sac_killed_at_random_instants_resumes_exactly() {
    killed_and_resumed_equals_uninterrupted("sac", 11, Signal::Kill);
}

#[test]
fn sac_stopped_with_ctrl_c_checkpoints_and_resumes_exactly() {
    killed_and_resumed_equals_uninterrupted("sac", 3, Signal::Interrupt);
}

#[test]
fn dqn_killed_at_random_instants_resumes_exactly() {
    killed_and_resumed_equals_uninterrupted("dqn", 5, Signal::Kill);
}

/// `SIGTERM` (what `kill`, a job scheduler or a machine going down sends) checkpoints as
/// Ctrl-C does.
#[test]
fn dqn_stopped_with_sigterm_checkpoints_and_resumes_exactly() {
    killed_and_resumed_equals_uninterrupted("dqn", 9, Signal::Terminate);
}

/// Rows in a run's `metrics.csv` (0 while it has none).
fn rows(run: &Path) -> usize {
    std::fs::read_to_string(run.join("metrics.csv")).map_or(0, |t| t.lines().count())
}

/// Waits until every run in `runs` has more than `after` metrics rows.
fn wait_for_rows(runs: &[PathBuf], after: usize) {
    let start = std::time::Instant::now();
    while runs.iter().any(|r| rows(r) <= after) {
        assert!(
            start.elapsed() < std::time::Duration::from_secs(120),
            "no progress in {runs:?}"
        );
        std::thread::sleep(std::time::Duration::from_millis(50));
    }
}

/// Sends `SIGTERM` to `child` alone.
fn terminate(child: &std::process::Child) {
    ok(emberlab_cli::checks::send(child, Signal::Terminate));
}

/// The env steps in `interrupted at N env steps` lines of `stderr`, in order.
fn interrupted_at(stderr: &str) -> Vec<u64> {
    stderr
        .lines()
        .filter_map(|l| {
            l.split_once("interrupted at ")?
                .1
                .split(' ')
                .next()?
                .parse()
                .ok()
        })
        .collect()
}

/// `SIGTERM` to `train --seeds` (to that process alone, as `kill PID` sends it) reaches
/// every seed's process: each writes a checkpoint, the command exits with 130, and a seed
/// resumes from where it stopped.
#[cfg(unix)]
#[test]
fn seeds_stopped_with_sigterm_checkpoint_every_seed() {
    let cwd = temp("seeds-term");
    let mut args = small("dqn");
    let steps = args.iter().position(|a| *a == "--steps").unwrap();
    args[steps + 1] = "10000000"; // it never finishes on its own
    args.extend(["--seeds", "0..2", "--jobs", "2", "--out", "runs"]);
    let child = Command::new(EMBER)
        .args(&args)
        .current_dir(&cwd)
        .stdout(std::process::Stdio::null())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    let runs = [cwd.join("runs/s0"), cwd.join("runs/s1")];
    wait_for_rows(&runs, 2);
    terminate(&child);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    assert_eq!(
        stderr.matches("stopped (checkpoint written)").count(),
        2,
        "{stderr}"
    );
    let at = interrupted_at(&stderr);
    assert_eq!(at.len(), 2, "{stderr}");
    for run in &runs {
        assert!(
            run.join("checkpoint/MANIFEST").is_file(),
            "{}",
            run.display()
        );
    }
    // Seed 0 goes on from its checkpoint: stopped again, it is further along.
    let before = rows(&runs[0]);
    let child = Command::new(EMBER)
        .args(["train", "--resume", "runs/s0", "--quiet"])
        .current_dir(&cwd)
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    wait_for_rows(&runs[..1], before + 1);
    terminate(&child);
    let out = child.wait_with_output().unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(130), "{stderr}");
    let again = interrupted_at(&stderr);
    assert_eq!(again.len(), 1, "{stderr}");
    assert!(
        again[0] > at.iter().copied().min().unwrap(),
        "{again:?} after {at:?}"
    );
    std::fs::remove_dir_all(&cwd).unwrap();
}

/// The same on a MuJoCo task: the environments' snapshots (MuJoCo's integration state,
/// NumPy's generator, the time limit) make the resumed run exact.
#[cfg(feature = "mujoco")]
#[test]
fn sac_on_hopper_killed_and_resumed_equals_uninterrupted() {
    killed_and_resumed_equals_uninterrupted("sac-hopper", 7, Signal::Kill);
}

/// A MuJoCo run evaluates; `--gif` says in one line, before evaluating, that it cannot draw
/// it.
#[cfg(feature = "mujoco")]
#[test]
fn a_mujoco_run_evaluates_and_renders_a_gif() {
    let cwd = temp("mujoco-eval");
    let mut args = small("sac-hopper");
    args.extend(["--out", "hop"]);
    let out = ember(&args, &cwd);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let out = ember(&["eval", "hop", "--episodes", "2"], &cwd);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    // MuJoCo's own renderer, offscreen through EGL: this fails (loudly, saying what to
    // install) on a machine without an EGL device.
    let out = ember(
        &["eval", "hop", "--episodes", "1", "--gif", "hop.gif"],
        &cwd,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let mut opts = gif::DecodeOptions::new();
    opts.set_color_output(gif::ColorOutput::RGBA);
    let mut decoder = opts
        .read_info(std::fs::File::open(cwd.join("hop.gif")).unwrap())
        .unwrap();
    assert_eq!((decoder.width(), decoder.height()), (320, 240));
    let mut frames = Vec::new();
    while let Some(frame) = decoder.read_next_frame().unwrap() {
        frames.push(frame.buffer.to_vec());
    }
    // One frame per observation of the episode (an untrained Hopper falls within a few
    // dozen steps); the hopper moves, and the picture is not one flat colour.
    assert!(frames.len() >= 2, "{} frames", frames.len());
    assert_ne!(frames[0], frames[frames.len() - 1]);
    let first = &frames[0];
    let distinct: std::collections::HashSet<&[u8]> = first.chunks(4).collect();
    assert!(distinct.len() > 20, "{} colours", distinct.len());
    std::fs::remove_dir_all(&cwd).unwrap();
}

/// A checkpoint that cannot be written whole (the file-size limit stands in for a full
/// disk: writes fail mid-file with an error, as they do on ENOSPC) fails the run with exit
/// code 1 and leaves the previous checkpoint, which then resumes.
#[test]
fn a_checkpoint_write_that_fails_leaves_the_previous_one() {
    let cwd = temp("full");
    let mut args: Vec<String> = small("sac").into_iter().map(String::from).collect();
    args.extend(["--out".into(), "run".into()]);
    // 30 KiB: the first checkpoints fit, the replay file outgrows it after ~880 steps.
    let script = format!(
        "ulimit -f 30; trap '' XFSZ; exec {EMBER} {}",
        args.iter()
            .map(|a| format!("'{a}'"))
            .collect::<Vec<_>>()
            .join(" ")
    );
    let out = Command::new("bash")
        .args(["-c", &script])
        .current_dir(&cwd)
        .output()
        .unwrap();
    let stderr = String::from_utf8_lossy(&out.stderr);
    assert_eq!(out.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("checkpoint.partial") && stderr.contains("replay.bin"),
        "{stderr}"
    );
    let info = std::fs::read_dir(cwd.join("run")).unwrap().count();
    assert!(info > 3);
    assert!(
        cwd.join("run/checkpoint/trainer.state").is_file(),
        "the previous checkpoint"
    );
    assert!(
        !cwd.join("run/checkpoint.partial").exists(),
        "the partial one is cleaned up"
    );
    let out = ember(&["train", "--resume", "run", "--quiet"], &cwd);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let rows = ok(learning_columns(&cwd.join("run/metrics.csv")));
    assert_eq!(rows.len(), 12);
    assert!(cwd.join("run/curve.png").is_file());
    std::fs::remove_dir_all(&cwd).unwrap();
}

#[test]
fn eval_renders_a_gif_and_plot_summarises_seeds() {
    let cwd = temp("eval-plot");
    let out = ember(
        &[
            "train",
            "dqn",
            "--env",
            "CartPole-v1",
            "--set",
            "dqn.hidden=[16]",
            "--steps",
            "400",
            "--seeds",
            "0..3",
            "--jobs",
            "2",
            "--set",
            "off_policy.learning_starts=100",
            "--set",
            "off_policy.eval_episodes=1",
            "--eval-every",
            "200",
            // Every flag combines with --seeds (--quiet was passed to the children twice).
            "--quiet",
            "--out",
            "runs",
        ],
        &cwd,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    for s in 0..3 {
        let run = cwd.join(format!("runs/s{s}"));
        assert!(run.join("curve.png").is_file(), "{}", run.display());
        let config = std::fs::read_to_string(run.join("config.toml")).unwrap();
        assert!(config.contains(&format!("seed = {s}")), "{config}");
    }
    let out = ember(
        &[
            "eval",
            "runs/s0",
            "--episodes",
            "2",
            "--gif",
            "cartpole.gif",
        ],
        &cwd,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let gif = std::fs::read(cwd.join("cartpole.gif")).unwrap();
    assert_eq!(&gif[..6], b"GIF89a");
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(
        text.contains("mean return") && text.contains("over 2 episodes"),
        "{text}"
    );
    let out = ember(
        &["plot", "runs/s0", "runs/s1", "runs/s2", "-o", "seeds.png"],
        &cwd,
    );
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    assert!(text.contains("3 seeds") && text.contains("IQM"), "{text}");
    let png = std::fs::read(cwd.join("seeds.png")).unwrap();
    assert_eq!(&png[1..4], b"PNG");
    std::fs::remove_dir_all(&cwd).unwrap();
}

/// The run's event files, read by TensorBoard itself (`$EMBER_TB_PYTHON`: the test fails
/// without it; scripts/test.sh sets it), hold the training return and losses at every metrics
/// row and every evaluation.
fn tensorboard_has_the_run(run: &Path) {
    let python = match std::env::var("EMBER_TB_PYTHON") {
        Ok(p) if !p.is_empty() => p,
        _ => panic!(
            "EMBER_TB_PYTHON is unset: set it to a python with the tensorboard package \
             (scripts/setup-tensorboard.sh prints it; scripts/test.sh runs it)"
        ),
    };
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/read_tensorboard.py");
    let out = Command::new(python).arg(script).arg(run).output().unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let text = String::from_utf8(out.stdout).unwrap();
    let steps = |tag: &str| -> Vec<u64> {
        text.lines()
            .filter_map(|l| {
                let f: Vec<&str> = l.split('\t').collect();
                (f[0] == tag).then(|| f[1].parse().unwrap())
            })
            .collect()
    };
    // The first episode (200 steps) ends at step 200: no training return before.
    let rows: Vec<u64> = (2..=12).map(|k| k * 100).collect();
    assert_eq!(steps("train/return"), rows, "{text}");
    assert_eq!(
        steps("loss/critic_loss").len(),
        11,
        "rows from the first update on"
    );
    assert_eq!(steps("eval/mean_return"), vec![400, 800, 1200], "{text}");
}

/// A run trained on normalised observations keeps the statistics beside its weights and
/// `ember eval` acts through them; without them it says which file is missing.
fn normalized_run_evaluates_through_its_statistics(cwd: &Path, run: &str) {
    let out = ember(&["eval", run, "--episodes", "1"], cwd);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let stats = cwd
        .join(run)
        .join("checkpoint")
        .join("obs_normalizer.state");
    std::fs::remove_file(&stats).unwrap();
    let out = ember(&["eval", run, "--episodes", "1"], cwd);
    assert_eq!(out.status.code(), Some(2));
    let err = String::from_utf8_lossy(&out.stderr);
    assert!(err.contains("obs_normalizer.state"), "{err}");
}

/// `configs/` holds the presets as `ember zoo` prints them (and as `ember train` uses them
/// without `--config`); each trains when given with `--config`. The MuJoCo presets
/// (`configs/mujoco/`) train in a binary built with the `mujoco` feature; without it,
/// training one must fail naming the feature.
#[test]
fn committed_presets_are_the_zoo_presets() {
    let configs = Path::new(env!("CARGO_MANIFEST_DIR")).join("configs");
    let cwd = temp("presets");
    let mut seen = 0;
    let mut paths: Vec<_> = std::fs::read_dir(&configs)
        .unwrap()
        .chain(std::fs::read_dir(configs.join("mujoco")).unwrap())
        .map(|e| e.unwrap().path())
        .filter(|p| p.extension().is_some_and(|x| x == "toml"))
        .collect();
    paths.sort();
    let mut mujoco_seen = 0;
    for path in paths {
        let name = path.file_stem().unwrap().to_str().unwrap().to_string();
        let mujoco = path.parent().unwrap().ends_with("mujoco");
        let (algo, env) = name.split_once('-').unwrap();
        let out = ember(&["zoo", algo, env], &cwd);
        assert!(out.status.success(), "{name}");
        let printed: String = String::from_utf8(out.stdout)
            .unwrap()
            .lines()
            .filter(|l| !l.starts_with('#'))
            .map(|l| format!("{l}\n"))
            .collect();
        let committed = std::fs::read_to_string(&path).unwrap();
        assert_eq!(
            committed,
            printed,
            "{} differs from `ember zoo {algo} {env}`",
            path.display()
        );
        let out = ember(
            &[
                "train",
                algo,
                "--env",
                env,
                "--config",
                path.to_str().unwrap(),
                "--steps",
                "64",
                "--set",
                &format!(
                    "{}.eval_episodes=1",
                    if committed.contains("[on_policy]") {
                        "on_policy"
                    } else {
                        "off_policy"
                    }
                ),
                "--out",
                &name,
                "--quiet",
            ],
            &cwd,
        );
        if mujoco && !cfg!(feature = "mujoco") {
            let err = String::from_utf8_lossy(&out.stderr);
            assert_eq!(out.status.code(), Some(2), "{name}: {err}");
            assert!(err.contains("`mujoco` feature"), "{name}: {err}");
            mujoco_seen += 1;
            continue;
        }
        mujoco_seen += usize::from(mujoco);
        assert!(
            out.status.success(),
            "{name}: {}",
            String::from_utf8_lossy(&out.stderr)
        );
        if committed.contains("[on_policy.normalize]") {
            normalized_run_evaluates_through_its_statistics(&cwd, &name);
        }
        seen += 1;
    }
    assert!(seen >= 6, "{seen} presets");
    assert!(mujoco_seen >= 12, "{mujoco_seen} MuJoCo presets");
    std::fs::remove_dir_all(&cwd).unwrap();
}

/// `ember bench … --json` prints one object per figure, named as in docs/benchmarks.md.
#[test]
fn bench_prints_named_figures() {
    let cwd = temp("bench");
    for (target, first) in [
        ("envs", "envs/CartPole-v1_single"),
        ("sac-update", "sac_update/sequential_flex_b256"),
    ] {
        let out = ember(&["bench", target, "--secs", "0.05", "--json"], &cwd);
        assert!(
            out.status.success(),
            "{}",
            String::from_utf8_lossy(&out.stderr)
        );
        let text = String::from_utf8(out.stdout).unwrap();
        let lines: Vec<serde_json::Value> = text
            .lines()
            .map(|l| serde_json::from_str(l).unwrap())
            .collect();
        assert!(lines.len() >= 2, "{text}");
        assert_eq!(lines[0]["name"], first, "{text}");
        for l in &lines {
            assert!(l["value"].as_f64().unwrap() > 0.0, "{l}");
            assert!(l["cpu"].is_string());
            let kernels = l["gemm_kernels"].as_str().unwrap();
            assert!(["avx512", "avx2+fma", "baseline"].contains(&kernels), "{l}");
        }
    }
    std::fs::remove_dir_all(&cwd).unwrap();
}

/// The Atari tests' runner of `ember` in `cwd`, with `EMBER_PYTHON` from `EMBER_PY_PYTHON`
/// (which must be set: scripts/setup-python.sh). Built without the `gym` feature, it checks
/// instead that `args` fail with one line naming the feature, removes `cwd` and gives
/// `None`.
fn atari_runner<'a>(cwd: &'a Path, args: &[&str]) -> Option<impl Fn(&[&str]) -> Output + 'a> {
    if !cfg!(feature = "gym") {
        let out = ember(args, cwd);
        one_line_error(&out, &["`gym` feature"], "without gym");
        std::fs::remove_dir_all(cwd).unwrap();
        return None;
    }
    let python = std::env::var("EMBER_PY_PYTHON").expect(
        "EMBER_PY_PYTHON is not set: the Atari command test needs Python with gymnasium, \
         ale-py and opencv-python-headless (scripts/setup-python.sh)",
    );
    Some(move |args: &[&str]| {
        Command::new(EMBER)
            .args(args)
            .current_dir(cwd)
            .env("EMBER_PYTHON", &python)
            .output()
            .unwrap()
    })
}

/// `ember train ppo --env PongNoFrameskip-v4` trains on pixels out of the box too (zoo's
/// Atari preset: the Nature CNN shared by both heads, rollouts of bytes, the image
/// on-policy loop), here 2 games for 2 rollouts of 64 steps: metrics, an evaluation of a
/// whole game and the run's state are written, `ember eval` plays a game with the weights
/// and draws it as a GIF, `ember export` writes a policy that onnxruntime runs on frame
/// stacks as Ember does, and a damaged state is refused on resume.
/// Needs `EMBER_PY_PYTHON` as the DQN test does.
#[test]
fn atari_ppo_trains_from_the_command() {
    let cwd = temp("atari-ppo");
    let args = [
        "train",
        "ppo",
        "--env",
        "PongNoFrameskip-v4",
        "--steps",
        "256",
        "--set",
        "num_envs=2",
        "--set",
        "on_policy.n_steps=64",
        "--set",
        "on_policy.eval_episodes=1",
        "--set",
        "log_every=128",
        "--out",
        "pong",
        "--quiet",
    ];
    let Some(run) = atari_runner(&cwd, &args) else {
        return;
    };
    let out = run(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metrics = std::fs::read_to_string(cwd.join("pong/metrics.csv")).unwrap();
    assert!(metrics.lines().count() >= 3, "{metrics}");
    assert!(
        metrics.lines().next().unwrap().contains("clip_fraction"),
        "{metrics}"
    );
    let evals = std::fs::read_to_string(cwd.join("pong/evaluations.csv")).unwrap();
    let last = evals.lines().last().unwrap();
    let fields: Vec<&str> = last.split(',').collect();
    let score: f64 = fields[1].parse().unwrap();
    assert!((-21.0..0.0).contains(&score), "{evals}");
    // Lost games are whole games of at least 21 serves, none cut at the frame budget.
    let length: f64 = fields[4].parse().unwrap();
    assert!(length > 21.0 * 20.0 && fields[5] == "0", "{evals}");
    // `ember eval` plays a whole game with the run's weights and draws it.
    let out = run(&["eval", "pong", "--episodes", "1", "--gif", "pong.gif"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let said = String::from_utf8_lossy(&out.stdout);
    let mean: f64 = said
        .split("mean return ")
        .nth(1)
        .and_then(|r| r.split_whitespace().next())
        .and_then(|m| m.parse().ok())
        .unwrap_or_else(|| panic!("no mean return in {said}"));
    assert!((-21.0..0.0).contains(&mean), "{said}");
    // The GIF shows the emulator's screen (210×160, in colour), one frame per step of a
    // whole lost game (at least 21 serves).
    let mut opts = gif::DecodeOptions::new();
    opts.set_color_output(gif::ColorOutput::RGBA);
    let mut decoder = opts
        .read_info(std::fs::File::open(cwd.join("pong.gif")).unwrap())
        .unwrap();
    assert_eq!((decoder.width(), decoder.height()), (160, 210));
    let (mut frames, mut coloured) = (0, false);
    while let Some(frame) = decoder.read_next_frame().unwrap() {
        frames += 1;
        coloured |= frame.buffer.chunks(4).any(|p| p[0] != p[1] || p[1] != p[2]);
    }
    assert!(
        frames > 21 * 20 && coloured,
        "{frames} frames, coloured: {coloured}"
    );
    // `ember export` writes the policy with its Nature CNN, reading uint8 stacks; in
    // onnxruntime it acts as the run's policy loaded here does.
    let out = run(&["export", "pong", "--onnx", "pong.onnx"]);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let shape = [4, 84, 84];
    // The run's folder says what its policy reads (`frames.toml`), so it loads without a game.
    let spaces = emberlab_run::FrameSpaces::load(&cwd.join("pong")).unwrap();
    let expected = emberlab_run::FrameSpaces {
        stack: shape,
        actions: 6,
    };
    assert_eq!(spaces, Some(expected));
    let mut policy =
        ok(emberlab_run::RunPolicy::load(&cwd.join("pong"), false).map_err(anyhow::Error::from));
    assert_eq!(policy.images(), Some(shape));
    let stacks = common::frame_stacks(50, shape.iter().product());
    let emberlab_algo::ActionBuf::Discrete(ours) = policy.act_frames(&stacks, false).unwrap()
    else {
        panic!("Pong's actions are discrete")
    };
    let ours: Vec<f32> = ours.iter().map(|&a| a as f32).collect();
    let python = common::onnx_python();
    let model = cwd.join("pong.onnx");
    let check = (&ours[..], "discrete");
    let (_, wrong) = common::onnx_frames_check(&python, &model, &stacks, shape, check);
    assert_eq!(wrong, 0.0, "{wrong} of 50 greedy actions differ");
    let state = cwd.join("pong/checkpoint/trainer.state");
    let full = std::fs::read(&state).unwrap();
    std::fs::write(&state, &full[..full.len() - 9]).unwrap();
    let out = run(&["train", "--resume", "pong"]);
    one_line_error(&out, &["cannot resume", "trainer.state"], "truncated");
    std::fs::remove_dir_all(&cwd).unwrap();
}

/// `ember train dqn --env PongNoFrameskip-v4` trains on pixels out of the box (zoo's Atari
/// preset: the Nature CNN on stacks of 4 frames, frame replay), here for 160 env steps with
/// updates from step 80: metrics, an evaluation of a whole game, and an exact checkpoint
/// with the frame replay are written, and a damaged replay file is refused on resume. Built
/// without the `gym` feature, the command names the feature. Needs `EMBER_PY_PYTHON`
/// (scripts/setup-python.sh), the interpreter the Atari workers run on.
#[test]
fn atari_dqn_trains_from_the_command() {
    let cwd = temp("atari");
    let args = [
        "train",
        "dqn",
        "--env",
        "PongNoFrameskip-v4",
        "--steps",
        "160",
        "--set",
        "off_policy.learning_starts=80",
        "--set",
        "off_policy.replay.capacity=2000",
        "--set",
        "off_policy.eval_episodes=1",
        "--set",
        "log_every=40",
        "--out",
        "pong",
        "--quiet",
    ];
    let Some(run) = atari_runner(&cwd, &args) else {
        return;
    };
    let out = run(&args);
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    let metrics = std::fs::read_to_string(cwd.join("pong/metrics.csv")).unwrap();
    assert!(metrics.lines().count() >= 4, "{metrics}");
    let evals = std::fs::read_to_string(cwd.join("pong/evaluations.csv")).unwrap();
    let last = evals.lines().last().unwrap();
    // An untrained greedy policy loses a game of Pong: at least −21 and below 0.
    let score: f64 = last.split(',').nth(1).unwrap().parse().unwrap();
    assert!((-21.0..0.0).contains(&score), "{evals}");
    let replay = cwd.join("pong/checkpoint/replay.frames");
    let full = std::fs::read(&replay).unwrap();
    assert!(full.len() > 160 * 84 * 84, "{} bytes of replay", full.len());
    std::fs::write(&replay, &full[..full.len() - 9]).unwrap();
    let out = run(&["train", "--resume", "pong"]);
    one_line_error(&out, &["cannot resume", "replay.frames"], "truncated");
    std::fs::remove_dir_all(&cwd).unwrap();
}
