//! Env steps per second of Atari games through [`AtariEnv`] (SB3's `AtariWrapper` in one
//! worker process per game) with random actions, each frame pushed into a [`FrameStack`] of
//! 4 as SB3's `VecFrameStack` stacks them: `--envs N` games stepped side by side, one thread
//! each, for `--secs S` seconds. Compare with SB3's own stack in one process
//! (`DummyVecEnv`), e.g. docs/plans/atari.md's 2,125 steps/s for 8 Pong games here.
//!
//! ```text
//! EMBER_PYTHON=.venv-torch/bin/python cargo run --release -p emberlab-env --features gym \
//!     --example atari_speed -- [--id PongNoFrameskip-v4] [--envs 8] [--secs 5]
//! ```

use emberlab_env::{AtariConfig, AtariEnv, FrameStack};
use std::time::{Duration, Instant};

fn main() -> emberlab_core::Result<()> {
    let mut args = std::env::args().skip(1);
    let (mut id, mut envs, mut secs) = ("PongNoFrameskip-v4".to_string(), 8usize, 5.0f64);
    while let Some(flag) = args.next() {
        let value = args.next().unwrap_or_default();
        match flag.as_str() {
            "--id" => id = value,
            "--envs" => envs = value.parse().unwrap_or(envs),
            "--secs" => secs = value.parse().unwrap_or(secs),
            other => {
                return Err(emberlab_core::Error::invalid(
                    "flag",
                    other,
                    "--id, --envs or --secs",
                ));
            }
        }
    }
    let games = (0..envs)
        .map(|_| AtariEnv::new(&id, &AtariConfig::default()))
        .collect::<emberlab_core::Result<Vec<_>>>()?;
    let until = Duration::from_secs_f64(secs);
    let start = Instant::now();
    let steps: Vec<emberlab_core::Result<u64>> = std::thread::scope(|s| {
        let handles: Vec<_> = games
            .into_iter()
            .enumerate()
            .map(|(i, mut env)| {
                s.spawn(move || {
                    let mut rng = emberlab_core::EmberRng::seed_from(i as u64);
                    let [h, w] = env.frame_shape();
                    let mut stack = FrameStack::new(4, h * w)?;
                    stack.reset(env.reset(Some(i as u64))?)?;
                    let mut n = 0u64;
                    while start.elapsed() < until {
                        let step = env.step(rng.below(env.actions() as u64) as usize)?;
                        if step.terminated || step.truncated {
                            stack.reset(env.reset(None)?)?;
                        } else {
                            stack.push(env.frame())?;
                        }
                        n += 1;
                    }
                    Ok(n)
                })
            })
            .collect();
        handles
            .into_iter()
            .map(|h| h.join().expect("a game thread"))
            .collect()
    });
    let total: u64 = steps.into_iter().sum::<emberlab_core::Result<u64>>()?;
    let elapsed = start.elapsed().as_secs_f64();
    println!(
        "atari_speed id={id} envs={envs} steps={total} secs={elapsed:.1} steps_per_s={:.0}",
        total as f64 / elapsed
    );
    Ok(())
}
