//! `ember export RUN --onnx FILE`: every algorithm's exported policy (SAC's and TD3's
//! actors, DQN's Q-network, PPO's categorical head, A2C's gSDE head behind its observation
//! statistics) gives Ember's own greedy actions in onnxruntime (tests/onnx_check.py) on
//! 1,000 observations. Policies on images (DQN and PPO, Nature and IMPALA encoders) read
//! uint8 frame stacks and give Ember's greedy actions on 200 of them.
//!
//! The interpreter is `$EMBER_PY_PYTHON` with `onnxruntime` (scripts/setup-python.sh makes
//! one; scripts/test.sh sets it). Without it the test fails.

use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

use burn::tensor::Device;
use common::{ONNX_ROWS, frame_stacks, onnx_acts_as_ember, onnx_frames_check, onnx_python};
use emberlab_algo::{ActionBuf, DqnConfig, OnnxPolicy, PolicyWeights, PpoConfig};
use emberlab_nn::{PixelEncoderKind, pixels_to_unit};

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

#[test]
fn image_policies_act_as_ember_does_in_onnxruntime() {
    let python = onnx_python();
    let devices = emberlab_run::devices("flex").unwrap();
    let shape = [4, 44, 44];
    let rows = 200;
    let stacks = frame_stacks(rows, shape.iter().product());
    let images = pixels_to_unit(&stacks, [rows, 4, 44, 44], &Device::flex()).unwrap();
    for encoder in [PixelEncoderKind::Nature, PixelEncoderKind::Impala] {
        let dir = temp(&format!("frames-{encoder:?}"));
        let model = dir.join("policy.onnx");
        // DQN: its action values, to float tolerance, and its greedy actions.
        let dqn = DqnConfig {
            encoder,
            pixel_hidden: vec![32],
            ..DqnConfig::default()
        };
        let mut dqn = dqn.build_pixels(shape, 5, &devices).unwrap();
        std::fs::write(&model, dqn.onnx_policy().unwrap()).unwrap();
        let q = dqn.q().forward_pixels(images.clone()).into_data();
        let q = q.try_into_vec::<f32>().unwrap();
        let (figure, diff) = onnx_frames_check(&python, &model, &stacks, shape, (&q, "q_values"));
        assert!(
            figure == "max_abs_diff" && diff.is_finite(),
            "{figure} {diff}"
        );
        let spread = q.iter().fold(0f32, |m, v| m.max(v.abs()));
        eprintln!("dqn {encoder:?}: q_values differ by {diff} (largest |q| {spread})");
        assert!(
            diff <= 1e-5 * f64::from(spread.max(1.0)),
            "{encoder:?}: {diff}"
        );
        let actions = greedy(&mut dqn, &stacks);
        let (figure, wrong) =
            onnx_frames_check(&python, &model, &stacks, shape, (&actions, "discrete"));
        assert_eq!(figure, "mismatches");
        assert_eq!(wrong, 0.0, "dqn {encoder:?}: {wrong} greedy actions differ");
        // Rows are told apart (the comparison can fail).
        assert!(q[..5] != q[5..10], "{q:?}");
        // PPO: its greedy actions, not all alike.
        let ppo = PpoConfig {
            encoder,
            ..PpoConfig::default()
        };
        let mut ppo = ppo.build_pixels(shape, 5, &devices).unwrap();
        // A fresh head can favour one action everywhere: jitter the weights (a fixed
        // pattern) so that the rows' greedy actions differ, as a trained policy's do.
        let jittered: Vec<f32> = (ppo.policy_weights().iter().enumerate())
            .map(|(i, &w)| w + 0.05 * ((i as f32 * 0.754_877_7).fract() - 0.5))
            .collect();
        ppo.load_policy_weights(&jittered).unwrap();
        std::fs::write(&model, ppo.onnx_policy().unwrap()).unwrap();
        let actions = greedy(&mut ppo, &stacks);
        let (_, wrong) = onnx_frames_check(&python, &model, &stacks, shape, (&actions, "discrete"));
        eprintln!("ppo {encoder:?}: {wrong} of {rows} greedy actions differ");
        assert_eq!(wrong, 0.0, "ppo {encoder:?}: {wrong} greedy actions differ");
        assert!(actions.iter().any(|&a| a != actions[0]), "{actions:?}");
    }
}

/// The greedy actions of `policy` on `stacks`, as `f32`.
fn greedy(policy: &mut dyn OnnxPolicy, stacks: &[u8]) -> Vec<f32> {
    let mut out = ActionBuf::Discrete(Vec::new());
    policy.act_pixels(stacks, false, &mut out).unwrap();
    let ActionBuf::Discrete(a) = out else {
        unreachable!("discrete actions")
    };
    a.iter().map(|&i| i as f32).collect()
}
