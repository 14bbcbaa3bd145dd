//! What the command-line tests share: stopping a training run at random instants and
//! resuming it until it is done, and comparing what two runs learned.

#![allow(dead_code)] // each test binary uses its own part

use emberlab_algo::ActionBuf;
use emberlab_run::RunPolicy;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::Duration;

/// Every file under `dir` with its bytes, sorted by path.
pub fn listing(dir: &Path) -> Vec<(PathBuf, Vec<u8>)> {
    let mut out = Vec::new();
    let mut stack = vec![dir.to_path_buf()];
    while let Some(d) = stack.pop() {
        for e in std::fs::read_dir(&d).unwrap() {
            let p = e.unwrap().path();
            if p.is_dir() {
                stack.push(p);
            } else {
                out.push((p.clone(), std::fs::read(&p).unwrap()));
            }
        }
    }
    out.sort();
    out
}

/// The columns of a metrics or evaluations file that do not depend on timing.
pub fn learning_columns(path: &Path) -> Vec<String> {
    let text = std::fs::read_to_string(path).unwrap();
    let mut lines = text.lines();
    let header: Vec<&str> = lines.next().unwrap().split(',').collect();
    let keep: Vec<usize> = (0..header.len())
        .filter(|&i| {
            !matches!(
                header[i],
                "wall_secs" | "env_steps_per_sec" | "updates_per_sec"
            )
        })
        .collect();
    lines
        .map(|l| {
            let f: Vec<&str> = l.split(',').collect();
            keep.iter().map(|&i| f[i]).collect::<Vec<_>>().join(",")
        })
        .collect()
}

/// The tensor data of a safetensors file (after its JSON header, whose metadata keys come
/// in no fixed order).
pub fn tensor_bytes(file: &[u8]) -> &[u8] {
    let n = u64::from_le_bytes(file[..8].try_into().unwrap()) as usize;
    &file[8 + n..]
}

/// A tiny generator for kill delays.
fn next(state: &mut u64) -> u64 {
    *state = state
        .wrapping_mul(6364136223846793005)
        .wrapping_add(1442695040888963407);
    *state >> 33
}

/// How a run was stopped on its way.
pub struct Stops {
    /// Times it was stopped before it finished.
    pub kills: u32,
    /// Of those, the Ctrl-C's it handled (checkpoint written, exit code 130).
    pub interrupted: u32,
}

/// The `ember` command with these arguments (the binary, or a program of a user's own).
pub type Ember<'a> = &'a dyn Fn(&[&str]) -> Command;

/// Starts `first` (a `train` command writing to `cwd/run`) with `ember`, stops it at random
/// instants — SIGKILL, or SIGINT (Ctrl-C) — and resumes it (`train --resume run`) until it
/// finishes.
pub fn stop_and_resume(
    ember: Ember<'_>,
    cwd: &Path,
    first: &[&str],
    run: &str,
    signal: &str,
    seed: u64,
) -> Stops {
    let mut rng = seed;
    let (mut kills, mut interrupted) = (0, 0);
    let mut start = true;
    // Lives in a row that kept no new metrics row: each lengthens the next life by 20 ms,
    // so that a loaded machine (slower start-ups) still finishes, while every life may
    // still be cut at any instant, start-up included.
    let (mut stalled, mut kept) = (0u64, 0usize);
    loop {
        let mut cmd = if start {
            ember(first)
        } else {
            ember(&["train", "--resume", run, "--quiet"])
        };
        let mut child = cmd
            .current_dir(cwd)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        start = false;
        // Runs take a fraction of a second: kill early and often.
        let delay = Duration::from_millis(15 + next(&mut rng) % 150 + 20 * stalled);
        std::thread::sleep(delay);
        match child.try_wait().unwrap() {
            Some(status) => {
                let out = child.wait_with_output().unwrap();
                assert!(status.success(), "{}", String::from_utf8_lossy(&out.stderr));
                break;
            }
            None if signal == "KILL" => {
                child.kill().unwrap();
                child.wait().unwrap();
                kills += 1;
                assert!(kills < 400, "never finished");
            }
            None => {
                let pid = child.id().to_string();
                let sent = Command::new("kill").args(["-INT", &pid]).status().unwrap();
                assert!(sent.success());
                let out = child.wait_with_output().unwrap();
                let stderr = String::from_utf8_lossy(&out.stderr);
                if out.status.success() {
                    break; // it finished first
                }
                // Before the handler is installed (the first milliseconds) SIGINT simply
                // ends the process; after, the run checkpoints and exits with 130.
                if let Some(code) = out.status.code() {
                    assert_eq!(code, 130, "{stderr}");
                    assert!(
                        stderr.contains("interrupted at") && stderr.contains("--resume"),
                        "{stderr}"
                    );
                    interrupted += 1;
                }
                kills += 1;
                assert!(kills < 400, "never finished");
            }
        }
        let rows = std::fs::read_to_string(cwd.join(run).join("metrics.csv"))
            .map_or(0, |t| t.lines().count());
        (stalled, kept) = if rows > kept {
            (0, rows)
        } else {
            (stalled + 1, kept)
        };
    }
    Stops { kills, interrupted }
}

/// The runs `a` and `b` learned the same: metrics and evaluations (timing aside) and the
/// best weights, tensor for tensor. Returns the number of networks compared.
pub fn assert_same_learning(a: &Path, b: &Path, what: &str) -> usize {
    for file in ["metrics.csv", "evaluations.csv"] {
        assert_eq!(
            learning_columns(&a.join(file)),
            learning_columns(&b.join(file)),
            "{what}: {file}"
        );
    }
    let mut networks = 0;
    for (path, bytes) in listing(&a.join("best")) {
        if path.extension().is_some_and(|e| e == "safetensors") {
            let other = std::fs::read(b.join("best").join(path.file_name().unwrap()));
            assert!(
                tensor_bytes(&bytes) == tensor_bytes(&other.unwrap()),
                "{what}: {}",
                path.display()
            );
            networks += 1;
        }
    }
    assert!(networks >= 1, "{what}: best weights written");
    networks
}

/// Observations the ONNX check acts on.
pub const ONNX_ROWS: usize = 1000;

fn f32_file(path: &Path, values: &[f32]) {
    let bytes: Vec<u8> = values.iter().flat_map(|v| v.to_le_bytes()).collect();
    std::fs::write(path, bytes).unwrap();
}

/// Exports `run` with the command, acts on [`ONNX_ROWS`] observations spread over ±`scale`
/// with Ember (the run's policy loaded in this process) and with onnxruntime
/// (`tests/onnx_check.py` under `python`); returns the checker's figure: `max_abs_diff` of
/// continuous actions, or the number of greedy discrete actions that differ.
pub fn onnx_acts_as_ember(
    ember: Ember<'_>,
    python: &str,
    run: &Path,
    dir: &Path,
    scale: f32,
) -> (String, f64) {
    let model = dir.join("policy.onnx");
    let out = ember(&[
        "export",
        run.to_str().unwrap(),
        "--onnx",
        model.to_str().unwrap(),
    ])
    .current_dir(dir)
    .output()
    .unwrap();
    assert!(
        out.status.success(),
        "{}",
        String::from_utf8_lossy(&out.stderr)
    );
    assert!(String::from_utf8_lossy(&out.stdout).contains("wrote"));
    let mut policy = RunPolicy::load(run, false).unwrap();
    let d = policy.obs_dim();
    // Observations spread over ±scale (a fixed, simple generator: no dependency).
    let obs: Vec<f32> = (0..ONNX_ROWS * d)
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

/// The python with onnxruntime that reads exported files back: the test fails without it
/// (scripts/test.sh sets it; scripts/setup-python.sh makes one).
pub fn onnx_python() -> String {
    match std::env::var("EMBER_PY_PYTHON") {
        Ok(p) if !p.is_empty() => p,
        _ => panic!(
            "EMBER_PY_PYTHON is unset: set it to a python with onnxruntime \
             (scripts/setup-python.sh prints it; scripts/test.sh runs it)"
        ),
    }
}
