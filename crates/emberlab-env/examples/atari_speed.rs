//! Env steps per second of Atari games through [`AtariEnv`] (SB3's `AtariWrapper` in
//! Python workers) stepped together as training steps them: a [`FrameVecEnv`] of `--envs N`
//! games stacked by 4 (SB3's `VecFrameStack`), random actions, for `--secs S` seconds, the
//! games spread over `--workers W` worker processes (default: one per core,
//! [`default_workers`]; `--workers N`: a worker per game). Compare with SB3's own stack
//! (`benches/reference/sb3_atari_speed.py`).
//!
//! ```text
//! EMBER_PYTHON=.venv-torch/bin/python cargo run --release -p emberlab-env --features gym \
//!     --example atari_speed -- [--id PongNoFrameskip-v4] [--envs 8] [--workers 2] [--secs 5]
//! ```

use emberlab_env::{AtariConfig, AtariEnv, FrameEnv, FrameVecEnv, default_python, default_workers};
use std::time::{Duration, Instant};

fn main() -> emberlab_core::Result<()> {
    let mut args = std::env::args().skip(1);
    let (mut id, mut envs, mut workers, mut secs) =
        ("PongNoFrameskip-v4".to_string(), 8usize, None, 5.0f64);
    while let Some(flag) = args.next() {
        let value = args.next().unwrap_or_default();
        let number = |what: &str| {
            value
                .parse::<usize>()
                .map_err(|_| emberlab_core::Error::invalid(what, &value, "a whole number"))
        };
        match flag.as_str() {
            "--id" => id = value.clone(),
            "--envs" => envs = number("--envs")?,
            "--workers" => workers = Some(number("--workers")?),
            "--secs" => {
                secs = value.parse().map_err(|_| {
                    emberlab_core::Error::invalid("--secs", &value, "a number of seconds")
                })?
            }
            other => {
                return Err(emberlab_core::Error::invalid(
                    "flag",
                    other,
                    "--id, --envs, --workers or --secs",
                ));
            }
        }
    }
    let workers = workers.unwrap_or_else(|| default_workers(envs));
    let python = default_python();
    let games = AtariEnv::in_workers(&id, &AtariConfig::default(), &python, envs, workers)?;
    let games = games.into_iter().map(|g| Box::new(g) as Box<dyn FrameEnv>);
    let mut env = FrameVecEnv::new(games.collect(), 4)?;
    let mut rng = emberlab_core::EmberRng::seed_from(0);
    env.reset(Some(0))?;
    let mut actions = vec![0usize; envs];
    let (until, start) = (Duration::from_secs_f64(secs), Instant::now());
    let mut steps = 0u64;
    while start.elapsed() < until {
        for a in &mut actions {
            *a = rng.below(env.actions() as u64) as usize;
        }
        env.step(&actions)?;
        steps += envs as u64;
    }
    let elapsed = start.elapsed().as_secs_f64();
    println!(
        "atari_speed id={id} envs={envs} workers={workers} steps={steps} secs={elapsed:.1} \
         steps_per_s={:.0}",
        steps as f64 / elapsed
    );
    Ok(())
}
