//! Replays the golden traces recorded from Gymnasium 1.4 by `crates/emberlab-env/tools/gen_env_traces.py`:
//! every episode starts from the recorded state and follows the recorded actions; states
//! must agree to 1e-6 (f64 state) or 1e-5 (f32 state), observations to 1e-5, rewards to
//! 1e-6, termination exactly.

use emberlab_core::{Action, BoxSpace, Env, Result, Space, StepInfo};
use emberlab_env::{
    Acrobot, CartPole, ClassicEnv, MountainCar, MountainCarContinuous, NormalizeObservation,
    Pendulum,
};
use serde_json::Value;

fn load(name: &str) -> Value {
    let path = format!("{}/tests/data/{name}.json", env!("CARGO_MANIFEST_DIR"));
    let text = std::fs::read_to_string(&path).unwrap_or_else(|e| panic!("{path}: {e}"));
    serde_json::from_str(&text).unwrap()
}

fn floats(v: &Value) -> Vec<f64> {
    v.as_array()
        .unwrap()
        .iter()
        .map(|x| x.as_f64().unwrap())
        .collect()
}

/// Values the script wrote from `f32`s (shortest `f32` repr), back as the exact `f32`s.
fn f32_values(v: &Value) -> Vec<f64> {
    floats(v).iter().map(|&x| f64::from(x as f32)).collect()
}

/// Asserts `|got - want| <= tol * max(1, |want|)` element-wise; returns the largest
/// scaled difference.
fn assert_close(what: &str, got: &[f64], want: &[f64], tol: f64) -> f64 {
    assert_eq!(got.len(), want.len(), "{what}: lengths");
    let mut worst = 0.0f64;
    for (i, (g, w)) in got.iter().zip(want).enumerate() {
        let diff = (g - w).abs() / w.abs().max(1.0);
        assert!(
            diff <= tol,
            "{what}[{i}]: got {g}, Gymnasium {w} (scaled diff {diff:e})"
        );
        worst = worst.max(diff);
    }
    worst
}

/// Replays `name.json` on `E`, returning the number of steps checked.
fn replay<E: ClassicEnv>(name: &str) -> usize {
    let trace = load(name);
    assert_eq!(trace["env"], E::ID);
    let (state_tol, state_values): (f64, fn(&Value) -> Vec<f64>) =
        match trace["state_precision"].as_str().unwrap() {
            "f64" => (1e-6, floats),
            _ => (1e-5, f32_values),
        };
    let mut checked = 0;
    let mut terminations = 0;
    let mut worst = [0.0f64; 3];
    for (k, episode) in trace["episodes"].as_array().unwrap().iter().enumerate() {
        let mut env = E::default();
        let mut obs = vec![0.0f32; env.observation_space().flat_dim()];
        for (t, step) in episode.as_array().unwrap().iter().enumerate() {
            let at = format!("{name} episode {k} step {t}");
            let state = state_values(&step[0]);
            if t == 0 {
                env.set_state(&state).unwrap();
            } else {
                assert_close(
                    &format!("{at} state"),
                    &env.state().unwrap(),
                    &state,
                    state_tol,
                );
            }
            let continuous: Vec<f32>;
            let action = match &step[1] {
                Value::Array(_) => {
                    continuous = floats(&step[1]).iter().map(|&x| x as f32).collect();
                    Action::Continuous(&continuous)
                }
                n => Action::Discrete(n.as_u64().unwrap() as usize),
            };
            let info = env.step_into(action, &mut obs).unwrap();
            let next = state_values(&step[2]);
            let got = env.state().unwrap();
            let d = assert_close(&format!("{at} next_state"), &got, &next, state_tol);
            worst[0] = worst[0].max(d);
            let obs64: Vec<f64> = obs.iter().map(|&x| f64::from(x)).collect();
            let d = assert_close(&format!("{at} obs"), &obs64, &f32_values(&step[3]), 1e-5);
            worst[1] = worst[1].max(d);
            let reward = step[4].as_f64().unwrap();
            let d = assert_close(&format!("{at} reward"), &[info.reward], &[reward], 1e-6);
            worst[2] = worst[2].max(d);
            assert_eq!(
                info.terminated,
                step[5].as_bool().unwrap(),
                "{at} terminated"
            );
            assert!(!info.truncated, "{at}");
            terminations += usize::from(info.terminated);
            checked += 1;
        }
    }
    assert!(checked >= 40, "{name}: only {checked} steps");
    eprintln!(
        "{name}: {checked} steps; largest scaled diffs: state {:e}, obs {:e}, reward {:e}",
        worst[0], worst[1], worst[2]
    );
    if E::ID != "Pendulum-v1" {
        assert!(terminations > 0, "{name}: no episode reaches termination");
    }
    checked
}

#[test]
fn cartpole_matches_gymnasium() {
    replay::<CartPole>("cartpole");
}

#[test]
fn pendulum_matches_gymnasium() {
    replay::<Pendulum>("pendulum");
}

#[test]
fn mountain_car_matches_gymnasium() {
    replay::<MountainCar>("mountain_car");
}

#[test]
fn mountain_car_continuous_matches_gymnasium() {
    replay::<MountainCarContinuous>("mountain_car_continuous");
}

#[test]
fn acrobot_matches_gymnasium() {
    replay::<Acrobot>("acrobot");
}

/// Plays back recorded raw observations, whatever the action.
struct Playback {
    rows: Vec<Vec<f32>>,
    next: usize,
    space: Space,
}

impl Env for Playback {
    fn observation_space(&self) -> &Space {
        &self.space
    }
    fn action_space(&self) -> &Space {
        &self.space
    }
    fn reset_into(&mut self, _seed: Option<u64>, obs: &mut [f32]) -> Result<()> {
        obs.copy_from_slice(&self.rows[0]);
        self.next = 1;
        Ok(())
    }
    fn step_into(&mut self, _action: Action<'_>, obs: &mut [f32]) -> Result<StepInfo> {
        obs.copy_from_slice(&self.rows[self.next]);
        self.next += 1;
        Ok(StepInfo {
            reward: 0.0,
            terminated: false,
            truncated: false,
        })
    }
}

#[test]
fn normalize_observation_matches_gymnasium() {
    let trace = load("normalize_observation");
    let rows = trace["rows"].as_array().unwrap();
    let f32s = |v: &Value| floats(v).iter().map(|&x| x as f32).collect::<Vec<f32>>();
    let playback = Playback {
        rows: rows.iter().map(|r| f32s(&r[0])).collect(),
        next: 0,
        space: Space::Box(BoxSpace::uniform(4, -10.0, 10.0).unwrap()),
    };
    let mut env = NormalizeObservation::new(playback).unwrap();
    let to64 = |x: &[f32]| x.iter().map(|&v| f64::from(v)).collect::<Vec<f64>>();
    let mut obs = env.reset(None).unwrap();
    for (t, row) in rows.iter().enumerate() {
        if t > 0 {
            env.set_update_running_mean(row[2].as_bool().unwrap());
            obs = env.step(Action::Continuous(&[0.0; 4])).unwrap().obs;
        }
        assert_close(
            &format!("normalized obs {t}"),
            &to64(&obs),
            &f32_values(&row[1]),
            1e-5,
        );
    }
    let rms = env.running_mean_std();
    assert_close(
        "mean",
        &to64(rms.mean()),
        &f32_values(&trace["final_mean"]),
        1e-5,
    );
    assert_close(
        "var",
        &to64(rms.var()),
        &f32_values(&trace["final_var"]),
        1e-5,
    );
    assert!(rows.len() > 21, "the trace must cover frozen steps");
}
