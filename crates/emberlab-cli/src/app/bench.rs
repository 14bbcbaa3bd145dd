//! `ember bench`: whole-program figures of `docs/benchmarks.md` measured on this machine
//! — replay sampling from a 1M buffer, environment stepping, one SAC update, batched
//! inference of the SAC actor per backend and batch size, and end-to-end training — as a
//! table or JSON lines. Criterion benches (`cargo bench`) give the same quantities with
//! confidence intervals; this is the quick look.

use super::figure::Figure;
use anyhow::{Result, bail};
use emberlab_algo::{Devices, OffPolicyLearner, SacConfig, UpdateSchedule};
use emberlab_backend::DeviceSpec;
use emberlab_core::{Action, Batch, BoxSpace, EmberRng, Env, Space, Transition};
use emberlab_env::{SyncVecEnv, ThreadedVecEnv, VecActions, VecEnv};
use emberlab_replay::{Prioritized, ReplayBuffer, ReturnWeighted, RingStorage, Sampler, Uniform};
use emberlab_run::RunConfig;
use std::time::{Duration, Instant};

/// What `ember bench` measures.
pub const TARGETS: [&str; 8] = [
    "replay",
    "inference",
    "sac-update",
    "envs",
    "mujoco-envs",
    "gym-bridge",
    "train",
    "grpc",
];

/// Calls `f` repeatedly for about `secs` seconds (after a short warm-up); the mean seconds
/// per call.
fn time(secs: f64, mut f: impl FnMut() -> Result<()>) -> Result<f64> {
    let warm = Instant::now();
    while warm.elapsed() < Duration::from_secs_f64(secs / 5.0) {
        f()?;
    }
    let (start, mut n) = (Instant::now(), 0u64);
    while start.elapsed() < Duration::from_secs_f64(secs) || n < 3 {
        f()?;
        n += 1;
    }
    Ok(start.elapsed().as_secs_f64() / n as f64)
}

/// Runs `target` for about `secs` seconds per figure.
///
/// # Errors
/// An unknown target; an error of the measured code.
pub fn bench(target: &str, secs: f64) -> Result<Vec<Figure>> {
    match target {
        "replay" => replay(secs),
        "inference" => inference(secs),
        "sac-update" => sac_update(secs),
        "envs" => envs(secs),
        "mujoco-envs" => mujoco_envs(secs),
        "gym-bridge" => gym_bridge(secs),
        "train" => train(),
        "grpc" => super::bench_grpc::grpc(secs),
        other => bail!("unknown bench `{other}`: known are {}", TARGETS.join(", ")),
    }
}

const CAPACITY: usize = 1 << 20;

fn filled<S: Sampler>(sampler: S) -> Result<ReplayBuffer<S>> {
    let mut buf = ReplayBuffer::new(RingStorage::new(CAPACITY, 17, 6)?, sampler, 0)?;
    let mut rng = EmberRng::seed_from(1);
    let (obs, act) = ([0.1f32; 17], [0.2f32; 6]);
    for i in 0..CAPACITY {
        let t = Transition {
            obs: &obs,
            action: &act,
            reward: rng.next_f64() as f32,
            next_obs: &obs,
            terminated: false,
            truncated: false,
        };
        buf.push_scored(&t, (i % 1000) as f64 - 500.0, &[])?;
    }
    Ok(buf)
}

fn replay(secs: f64) -> Result<Vec<Figure>> {
    let mut out = Vec::new();
    let mut batch = Batch::default();
    let mut one = |name: &str, t: f64| {
        out.push(Figure {
            name: format!("replay/{name}_k256"),
            value: t * 1e6,
            unit: "µs per batch",
        })
    };
    let mut u = filled(Uniform::new(CAPACITY, false))?;
    one("uniform", time(secs, || Ok(u.sample(256, &mut batch)?))?);
    drop(u);
    let mut p = filled(Prioritized::new(CAPACITY, 0.6, 0.4)?)?;
    one(
        "prioritized",
        time(secs, || Ok(p.sample(256, &mut batch)?))?,
    );
    drop(p);
    let mut r = filled(ReturnWeighted::new(CAPACITY))?;
    one(
        "return_weighted",
        time(secs, || Ok(r.sample(256, &mut batch)?))?,
    );
    Ok(out)
}

/// The SAC actor of the inference table: 17 → 256 → 256 → 2×6.
fn sac(device: &DeviceSpec, schedule: UpdateSchedule) -> Result<emberlab_algo::Sac> {
    let obs = Space::Box(BoxSpace::uniform(17, f32::NEG_INFINITY, f32::INFINITY)?);
    let act = Space::Box(BoxSpace::uniform(6, -1.0, 1.0)?);
    let config = SacConfig {
        update_schedule: schedule,
        ..SacConfig::default()
    };
    Ok(config.build(&obs, &act, &Devices::same(&device.device()?))?)
}

/// The SAC actor per backend and batch: `eager` through burn (`act_host`), `frozen`
/// through the host fast path (`FrozenGaussianTanhPolicy`, what SAC acts with on flex and
/// ndarray), `frozen2` the same with each batch split across two threads (`set_threads`).
/// The calls cycle through 61 distinct observations, as an actor sees a new one each step.
fn inference(secs: f64) -> Result<Vec<Figure>> {
    use burn::tensor::{Tensor, TensorData};
    let mut out = Vec::new();
    for spec in DeviceSpec::compiled_cpu() {
        // The acting copy's form: an inference module on the plain device.
        let device = spec.device()?;
        let policy = emberlab_nn::GaussianTanhPolicyConfig::new(17, 6).init(&device)?;
        let mut frozen = emberlab_nn::FrozenGaussianTanhPolicy::new(&policy)?;
        let mut frozen2 = frozen.clone();
        frozen2.set_threads(2)?;
        let mut rng = EmberRng::seed_from(5);
        let label = spec.to_string().replace(':', "_");
        for batch in [1usize, 4, 16, 64, 256] {
            let observations: Vec<Vec<f32>> = (0..61)
                .map(|k| {
                    (0..batch * 17)
                        .map(|i| ((i + 17 * k) as f32 * 0.1).sin())
                        .collect()
                })
                .collect();
            let mut next = 0;
            let mut obs = || {
                next = (next + 1) % observations.len();
                &observations[next]
            };
            let mut actions = Vec::new();
            let eager = time(secs, || {
                let x = TensorData::new(obs().clone(), [batch, 17]);
                policy.act_host(Tensor::<2>::from_data(x, &device), &mut rng, &mut actions);
                Ok(())
            })?;
            let fast = time(secs, || Ok(frozen.act(obs(), &mut rng, &mut actions)?))?;
            let split = time(secs, || Ok(frozen2.act(obs(), &mut rng, &mut actions)?))?;
            for (mode, t) in [("eager", eager), ("frozen", fast), ("frozen2", split)] {
                out.push(Figure {
                    name: format!("inference/{label}_{mode}_b{batch}"),
                    value: 1.0 / t,
                    unit: "calls/s",
                });
            }
        }
    }
    Ok(out)
}

fn sac_update(secs: f64) -> Result<Vec<Figure>> {
    let mut out = Vec::new();
    let mut rng = EmberRng::seed_from(3);
    let mut u =
        |k: usize| -> Vec<f32> { (0..k).map(|_| rng.next_f64() as f32 * 2.0 - 1.0).collect() };
    let mut b = Batch::with_capacity(17, 6, 256);
    b.len = 256;
    b.obs = u(256 * 17);
    b.action = u(256 * 6);
    b.reward = u(256);
    b.next_obs = u(256 * 17);
    b.terminated = vec![0.0; 256];
    b.truncated = vec![0.0; 256];
    b.weights = vec![1.0; 256];
    for spec in DeviceSpec::compiled_cpu() {
        let schedules = [
            UpdateSchedule::Sequential,
            UpdateSchedule::Parallel,
            UpdateSchedule::Auto,
        ];
        for schedule in schedules {
            let mut learner = sac(&spec, schedule)?;
            let mut step = 0;
            let t = time(secs, || {
                learner.update(&b, step)?;
                step += 1;
                Ok(())
            })?;
            out.push(Figure {
                name: format!(
                    "sac_update/{}_{}_b256",
                    format!("{schedule:?}").to_lowercase(),
                    spec.to_string().replace(':', "_")
                ),
                value: t * 1e3,
                unit: "ms per update",
            });
        }
    }
    Ok(out)
}

fn envs(secs: f64) -> Result<Vec<Figure>> {
    let mut out = Vec::new();
    for id in ["CartPole-v1", "Pendulum-v1", "MountainCar-v0", "Acrobot-v1"] {
        let mut env = emberlab_env::make(id)?;
        env.reset(Some(0))?;
        let space = env.action_space().clone();
        let mut obs = vec![0.0; env.observation_space().flat_dim()];
        let mut rng = EmberRng::seed_from(2);
        let t = time(secs, || {
            let info = match &space {
                Space::Discrete(d) => {
                    env.step_into(Action::Discrete(rng.below(d.n() as u64) as usize), &mut obs)?
                }
                Space::Box(_) => env.step_into(Action::Continuous(&[0.5]), &mut obs)?,
            };
            if info.terminated || info.truncated {
                env.reset_into(None, &mut obs)?;
            }
            Ok(())
        })?;
        out.push(Figure {
            name: format!("envs/{id}_single"),
            value: 1.0 / t,
            unit: "steps/s",
        });
    }
    let actions = vec![1usize; 64];
    let mut sync = SyncVecEnv::from_id("CartPole-v1", 64)?;
    sync.reset(Some(0))?;
    let t = time(secs, || {
        Ok(sync.step(VecActions::Discrete(&actions)).map(|_| ())?)
    })?;
    out.push(Figure {
        name: "envs/CartPole-v1_sync64".into(),
        value: 64.0 / t,
        unit: "steps/s",
    });
    let mut threaded = ThreadedVecEnv::from_id("CartPole-v1", 2, 32)?;
    threaded.reset(Some(0))?;
    let t = time(secs, || {
        Ok(threaded.step(VecActions::Discrete(&actions)).map(|_| ())?)
    })?;
    out.push(Figure {
        name: "envs/CartPole-v1_threaded2x32".into(),
        value: 64.0 / t,
        unit: "steps/s",
    });
    Ok(out)
}

/// HalfCheetah-v5 stepped with uniform random actions drawn beforehand: one environment
/// alone, then the threaded vector env at 1, 2 and 16 environments (as 1×1, 2×1 and 2×8
/// workers × envs) and the sequential one at 16. Compare with
/// `benches/reference/mujoco_envs.py` (Gymnasium's `SyncVectorEnv`, EnvPool).
fn mujoco_envs(secs: f64) -> Result<Vec<Figure>> {
    const ID: &str = "HalfCheetah-v5";
    let mut env = emberlab_env::make(ID)?;
    let dim = match env.action_space() {
        Space::Box(b) => b.dim(),
        Space::Discrete(_) => bail!("{ID} has a discrete action space"),
    };
    let mut rng = EmberRng::seed_from(7);
    let table: Vec<f32> = (0..1024 * 16 * dim)
        .map(|_| rng.next_f64() as f32 * 2.0 - 1.0)
        .collect();
    let mut out = Vec::new();
    env.reset(Some(0))?;
    let mut obs = vec![0.0; env.observation_space().flat_dim()];
    let mut k = 0;
    let t = time(secs, || {
        let a = &table[(k % 1024) * dim..][..dim];
        k += 1;
        let info = env.step_into(Action::Continuous(a), &mut obs)?;
        if info.terminated || info.truncated {
            env.reset_into(None, &mut obs)?;
        }
        Ok(())
    })?;
    out.push(Figure {
        name: format!("mujoco/{ID}_single"),
        value: 1.0 / t,
        unit: "steps/s",
    });
    let mut vector = |name: String, envs: &mut dyn VecEnv, n: usize| -> Result<()> {
        envs.reset(Some(0))?;
        let mut k = 0;
        let t = time(secs, || {
            let a = &table[(k % 1024) * 16 * dim..][..n * dim];
            k += 1;
            Ok(envs.step(VecActions::Continuous(a)).map(|_| ())?)
        })?;
        out.push(Figure {
            name,
            value: n as f64 / t,
            unit: "steps/s",
        });
        Ok(())
    };
    for (w, n) in [(1, 1), (2, 1), (2, 8)] {
        let mut envs = ThreadedVecEnv::from_id(ID, w, n)?;
        vector(format!("mujoco/{ID}_threaded{w}x{n}"), &mut envs, w * n)?;
    }
    let mut sync = SyncVecEnv::from_id(ID, 16)?;
    vector(format!("mujoco/{ID}_sync16"), &mut sync, 16)?;
    Ok(out)
}

/// One environment stepped with pre-drawn random actions (uniform in a Box, uniform
/// indices for Discrete), resetting at episode ends: steps per second.
fn lone_env_rate(env: &mut dyn Env, secs: f64) -> Result<f64> {
    let space = env.action_space().clone();
    let mut rng = EmberRng::seed_from(7);
    let dim = space.flat_dim();
    let table: Vec<f32> = (0..1024 * dim)
        .map(|_| rng.next_f64() as f32 * 2.0 - 1.0)
        .collect();
    let picks: Vec<usize> = match &space {
        Space::Discrete(d) => (0..1024)
            .map(|_| rng.below(d.n() as u64) as usize)
            .collect(),
        Space::Box(_) => vec![],
    };
    env.reset(Some(0))?;
    let mut obs = vec![0.0; env.observation_space().flat_dim()];
    let mut k = 0;
    let t = time(secs, || {
        let a = match &space {
            Space::Discrete(_) => Action::Discrete(picks[k % 1024]),
            Space::Box(_) => Action::Continuous(&table[(k % 1024) * dim..][..dim]),
        };
        k += 1;
        let info = env.step_into(a, &mut obs)?;
        if info.terminated || info.truncated {
            env.reset_into(None, &mut obs)?;
        }
        Ok(())
    })?;
    Ok(1.0 / t)
}

/// The Gymnasium bridge's cost per step: `gym:ID` (a Python worker per environment) next to
/// the native environment, for CartPole-v1 and (with MuJoCo) HalfCheetah-v5. Compare with
/// Gymnasium alone: `benches/reference/gym_single.py ID`.
fn gym_bridge(secs: f64) -> Result<Vec<Figure>> {
    let mut out = Vec::new();
    let ids: &[&str] = if cfg!(feature = "mujoco") {
        &["CartPole-v1", "HalfCheetah-v5"]
    } else {
        &["CartPole-v1"]
    };
    for id in ids {
        for name in [format!("gym:{id}"), id.to_string()] {
            let mut env = emberlab_env::make(&name)?;
            out.push(Figure {
                name: format!("gym_bridge/{name}_single"),
                value: lone_env_rate(env.as_mut(), secs)?,
                unit: "steps/s",
            });
        }
    }
    Ok(out)
}

/// End to end: SAC on Pendulum-v1 with the zoo preset for 3,000 env steps, no evaluation,
/// in a temporary run folder (metrics and checkpoints written as by `ember train`).
fn train() -> Result<Vec<Figure>> {
    let dir = std::env::temp_dir().join(format!("ember-bench-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    let (mut config, _) = RunConfig::preset("sac", "Pendulum-v1")?;
    config = config
        .with_set("off_policy.total_steps", "3000")?
        .with_set("off_policy.eval_episodes", "0")?
        .with_set("save_every", "3000")?;
    super::run_dir::create(&dir, &config, "ember bench train")?;
    let stop = std::sync::atomic::AtomicBool::new(false);
    let out = super::progress::Output {
        quiet: true,
        json: false,
    };
    let start = Instant::now();
    let report = super::train::train(&dir, &config, false, out, &stop)?;
    let secs = start.elapsed().as_secs_f64();
    let _ = std::fs::remove_dir_all(&dir);
    Ok(vec![Figure {
        name: "train/sac_Pendulum-v1_flex_3000".into(),
        value: report.env_steps as f64 / secs,
        unit: "env steps/s",
    }])
}
