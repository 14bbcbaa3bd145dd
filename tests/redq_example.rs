//! The REDQ example (`examples/custom_redq.rs`: an algorithm outside the library, assembled
//! from its public parts) learns Pendulum-v1: its first evaluation ≥ −200 comes in fewer
//! env steps than the library's SAC with the same seed and trainer settings (both
//! evaluated every 250 steps, 10 deterministic episodes, on flex); killed at random
//! instants, it resumes exactly.

#[path = "../examples/custom_redq.rs"]
mod redq;

use emberlab::algo::{Devices, OffPolicyConfig, SacConfig, TrainReport, train_off_policy};
use emberlab::env::{SyncVecEnv, VecEnv};
use std::path::Path;
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

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

/// Set in the child processes of [`redq_killed_at_random_instants_resumes_exactly`]: the
/// folder the child keeps its run in.
const CHILD: &str = "EMBER_REDQ_CHILD_RUN";

/// A run's counters, last metrics and actor weights, as text that is equal only when they
/// are equal bit for bit (the weights as an FNV-1a hash of their bits, and their count).
fn outcome(report: &TrainReport, weights: &[f32]) -> String {
    let hash = weights.iter().fold(0xcbf2_9ce4_8422_2325_u64, |h, w| {
        (h ^ u64::from(w.to_bits())).wrapping_mul(0x0100_0000_01b3)
    });
    let metrics: Vec<String> = report
        .last_metrics
        .0
        .iter()
        .map(|(n, v)| format!("{n}={:x}", v.to_bits()))
        .collect();
    format!(
        "env_steps={} updates={} episodes={} metrics={} weights={}:{hash:016x}",
        report.env_steps,
        report.updates,
        report.episodes,
        metrics.join(","),
        weights.len()
    )
}

/// REDQ keeps its run every 20 env steps ([`redq::train_resumable`], the learner's state
/// through its `Persist` list); a child process running it is killed at random instants and
/// started again until one finishes. Its counters, last metrics and actor equal those of
/// an uninterrupted run.
#[test]
fn redq_killed_at_random_instants_resumes_exactly() {
    const STEPS: u64 = 300;
    const EVERY: u64 = 20;
    if let Ok(dir) = std::env::var(CHILD) {
        // A child started below: train (or go on), then write the outcome atomically.
        let (report, weights) = redq::train_resumable(SEED, STEPS, dir.as_ref(), EVERY).unwrap();
        let out = Path::new(&dir).with_extension("out");
        std::fs::write(out.with_extension("tmp"), outcome(&report, &weights)).unwrap();
        std::fs::rename(out.with_extension("tmp"), out).unwrap();
        return;
    }
    let _one = one_at_a_time();
    let base = std::env::temp_dir().join(format!("ember-redq-kill-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&base);
    std::fs::create_dir_all(&base).unwrap();
    let started = Instant::now();
    let (report, weights) = redq::train_resumable(SEED, STEPS, &base.join("whole"), EVERY).unwrap();
    let whole_ms = started.elapsed().as_millis() as u64;
    assert!(report.updates > 0, "the run made no updates");
    let expected = outcome(&report, &weights);

    let killed = base.join("killed");
    let mut rng = emberlab::core::EmberRng::seed_from(5);
    let mut kills = 0;
    loop {
        let mut child = Command::new(std::env::current_exe().unwrap())
            .args([
                "redq_killed_at_random_instants_resumes_exactly",
                "--exact",
                "--test-threads=1",
            ])
            .env(CHILD, &killed)
            .stdout(Stdio::null())
            .stderr(Stdio::piped())
            .spawn()
            .unwrap();
        // Up to the whole run's duration: most children are killed part-way.
        let delay = (rng.next_f64() * whole_ms as f64) as u64;
        std::thread::sleep(Duration::from_millis(delay));
        match child.try_wait().unwrap() {
            Some(status) => {
                let out = child.wait_with_output().unwrap();
                assert!(status.success(), "{}", String::from_utf8_lossy(&out.stderr));
                break;
            }
            None => {
                child.kill().unwrap();
                child.wait().unwrap();
                kills += 1;
                assert!(kills < 100, "the killed run never finished");
            }
        }
    }
    println!("REDQ: finished after {kills} kills (whole run {whole_ms} ms)");
    assert!(kills >= 2, "killed only {kills} times");
    let got = std::fs::read_to_string(killed.with_extension("out")).unwrap();
    assert_eq!(got, expected);
    std::fs::remove_dir_all(&base).unwrap();
}

/// `custom_redq --steps N`'s flags: the shapes they set, and an error naming the flag for
/// every bad one (no run starts).
#[test]
fn redq_flags_set_shapes_and_name_bad_ones() {
    use emberlab::algo::UpdateSchedule;
    let parse = |flags: &[&str]| {
        let flags: Vec<String> = flags.iter().map(|f| f.to_string()).collect();
        redq::parse_flags(&flags)
            .map(|(state, shapes)| (state.map(str::to_string), shapes))
            .map_err(|e| e.to_string())
    };
    let (state, shapes) = parse(&["--width", "2", "--batch", "3", "--sequential"]).unwrap();
    assert_eq!(state, None);
    assert_eq!(
        shapes,
        redq::Shapes {
            width: Some(2),
            batch: Some(3),
            schedule: UpdateSchedule::Sequential
        }
    );
    let (state, shapes) = parse(&["--state", "runs/a"]).unwrap();
    assert_eq!(state.as_deref(), Some("runs/a"));
    assert_eq!(shapes, redq::Shapes::default());
    for (flags, named) in [
        (&["--width", "0"][..], "--width"),
        (&["--batch", "x"][..], "--batch"),
        (&["--batch"][..], "--batch"),
        (&["--state"][..], "--state"),
        (&["--widht", "2"][..], "--widht"),
        (&["--state", "runs/a", "--sequential"][..], "--state"),
    ] {
        let err = parse(flags).expect_err(&format!("{flags:?} must be refused"));
        assert!(err.contains(named), "{flags:?}: {err}");
    }
}
