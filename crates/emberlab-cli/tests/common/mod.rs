//! What the command-line tests share: stopping a training run at random instants and
//! resuming it until it is done, and comparing what two runs learned.

#![allow(dead_code)] // each test binary uses its own part

use emberlab_algo::ActionBuf;
use emberlab_run::RunPolicy;
use std::path::{Path, PathBuf};
use std::process::Command;

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

pub use emberlab_cli::checks::Ember;

/// The value, or the test fails with the error and its causes.
pub fn ok<T>(r: anyhow::Result<T>) -> T {
    r.unwrap_or_else(|e| panic!("{e:#}"))
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
    let obs_file = dir.join("obs.bin");
    f32_file(&obs_file, &obs);
    onnx_check(python, &model, &obs_file, &ours, d, kind, None)
}

/// Deterministic uint8 frame stacks: `rows` of `len` bytes, each a texture spread over
/// 0..=255 under a ramp whose brightness and slope vary by row, so that even an untrained
/// network tells the rows apart (a fixed, simple generator: no dependency).
pub fn frame_stacks(rows: usize, len: usize) -> Vec<u8> {
    (0..rows * len)
        .map(|i| {
            let (r, j) = (i / len, i % len);
            let texture = (i as f32 * 0.618_034).fract();
            let ramp = ((j * (1 + r % 5)) % len) as f32 / len as f32;
            let brightness = (r * 37 % 11) as f32 / 10.0;
            ((texture * 0.3 + ramp * 0.7) * brightness * 255.0) as u8
        })
        .collect()
}

/// Writes uint8 frame `stacks` of `shape` beside `model` and runs [`onnx_check`] with
/// Ember's `ours` of `kind` (`discrete` actions as `f32`, or DQN's `q_values`).
pub fn onnx_frames_check(
    python: &str,
    model: &Path,
    stacks: &[u8],
    shape: [usize; 3],
    (ours, kind): (&[f32], &str),
) -> (String, f64) {
    let obs_file = model.with_extension("frames");
    std::fs::write(&obs_file, stacks).unwrap();
    let d = shape.iter().product();
    onnx_check(python, model, &obs_file, ours, d, kind, Some(shape))
}

/// Runs `tests/onnx_check.py` under `python` on `model` with the observations in
/// `obs_file` (float32 rows of `obs_dim`, or uint8 stacks of `pixels`) and Ember's actions
/// `ours`; returns the checker's figure and value.
pub fn onnx_check(
    python: &str,
    model: &Path,
    obs_file: &Path,
    ours: &[f32],
    obs_dim: usize,
    kind: &str,
    pixels: Option<[usize; 3]>,
) -> (String, f64) {
    let act_file = model.with_extension("actions");
    f32_file(&act_file, ours);
    let script = Path::new(env!("CARGO_MANIFEST_DIR")).join("tests/onnx_check.py");
    let mut command = Command::new(python);
    command
        .args([script.as_path(), model, obs_file, &act_file])
        .arg(obs_dim.to_string())
        .arg(kind);
    if let Some([c, h, w]) = pixels {
        command.arg(format!("{c},{h},{w}"));
    }
    let out = command
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
