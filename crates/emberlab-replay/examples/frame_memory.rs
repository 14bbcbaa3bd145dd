//! How much memory a frame replay of Atari-sized frames takes, measured: fills a
//! [`FrameReplay`] with `--transitions` steps of 84×84 gray frames (stacks of 4, 3-step
//! returns, 8 environments, episodes of 30 to 200 steps as Atari lives are), then prints
//! the process's resident memory, the drawable rows, the time to draw batches of 32, and
//! (with `--save PATH`) the time and size of a save. `--load PATH` reads such a file in a
//! fresh process and prints the peak resident memory of loading it.
//!
//! ```text
//! cargo run --release -p emberlab-replay --example frame_memory -- --transitions 1000000 --save /tmp/r.frames
//! cargo run --release -p emberlab-replay --example frame_memory -- --load /tmp/r.frames
//! ```

use emberlab_replay::{AnySampler, EmberRng, FrameBatch, FrameReplay, FrameStorage, Result};
use std::time::Instant;

const FRAME: usize = 84 * 84;
const STACK: usize = 4;
const ENVS: usize = 8;
const N: usize = 3;

fn main() {
    if let Err(e) = run() {
        eprintln!("frame_memory: {e}");
        std::process::exit(1);
    }
}

struct Args {
    transitions: usize,
    sampler: String,
    save: Option<String>,
    load: Option<String>,
}

fn args() -> std::result::Result<Args, String> {
    let mut a = Args {
        transitions: 1_000_000,
        sampler: "prioritized".into(),
        save: None,
        load: None,
    };
    let mut it = std::env::args().skip(1);
    while let Some(flag) = it.next() {
        let mut value = || it.next().ok_or(format!("{flag} needs a value"));
        match flag.as_str() {
            "--transitions" => {
                let v = value()?;
                a.transitions = v.parse().map_err(|_| format!("--transitions {v}"))?;
            }
            "--sampler" => a.sampler = value()?,
            "--save" => a.save = Some(value()?),
            "--load" => a.load = Some(value()?),
            other => return Err(format!("unknown flag {other}")),
        }
    }
    Ok(a)
}

/// `VmRSS` and `VmHWM` (peak) of this process, in bytes.
fn memory() -> (u64, u64) {
    let status = std::fs::read_to_string("/proc/self/status").unwrap_or_default();
    let field = |name: &str| {
        status
            .lines()
            .find(|l| l.starts_with(name))
            .and_then(|l| l.split_whitespace().nth(1))
            .and_then(|v| v.parse::<u64>().ok())
            .map_or(0, |kib| kib * 1024)
    };
    (field("VmRSS:"), field("VmHWM:"))
}

fn gb(bytes: u64) -> String {
    format!("{:.3} GB", bytes as f64 / 1e9)
}

fn run() -> Result<()> {
    let a = args().map_err(|e| emberlab_replay::Error::invalid("arguments", e, "see the docs"))?;
    if let Some(path) = &a.load {
        let t = Instant::now();
        let replay = FrameReplay::<AnySampler>::load(path)?;
        let (rss, peak) = memory();
        println!(
            "loaded {path} in {:.1} s: {} slots, {} drawable; resident {}, peak {}",
            t.elapsed().as_secs_f64(),
            replay.storage().len(),
            replay.drawable(),
            gb(rss),
            gb(peak)
        );
        return Ok(());
    }
    // Room for the final frame of every episode (one in ~115 steps) and 3% to spare.
    let capacity = a.transitions + a.transitions * 3 / 100;
    let storage = FrameStorage::new(capacity, FRAME, STACK, 1, ENVS, N, 0.99)?;
    let sampler = AnySampler::named(&a.sampler, capacity, 0.6, 0.4, 1e-6)?;
    let mut replay = FrameReplay::new(storage, sampler, 0)?;
    let (rss0, _) = memory();
    let mut rng = EmberRng::seed_from(1);
    let mut frame = vec![0u8; FRAME];
    let mut left = [0usize; ENVS];
    let t = Instant::now();
    let mut steps = 0usize;
    for (env, l) in left.iter_mut().enumerate() {
        *l = 30 + rng.below(171) as usize;
        replay.begin(env, &frame)?;
    }
    while steps < a.transitions {
        for (env, l) in left.iter_mut().enumerate() {
            let shade = rng.below(256) as u8;
            for (i, px) in frame.iter_mut().enumerate() {
                *px = shade.wrapping_add(i as u8);
            }
            *l -= 1;
            let ended = *l == 0;
            let action = rng.below(4) as f32;
            replay.push(env, &[action], 1.0, ended, false, &frame)?;
            steps += 1;
            if ended {
                *l = 30 + rng.below(171) as usize;
                replay.begin(env, &frame)?;
            }
        }
    }
    let fill = t.elapsed().as_secs_f64();
    let (rss, peak) = memory();
    let drawable = replay.drawable();
    println!(
        "{} steps of {} envs, {}-byte frames, stacks of {STACK}, {N}-step, `{}` sampler",
        steps, ENVS, FRAME, a.sampler
    );
    println!(
        "capacity {capacity} slots: {drawable} drawable rows; filled in {fill:.1} s \
         ({:.0} steps/s)",
        steps as f64 / fill
    );
    println!(
        "resident {} (before filling {}), peak {}: {:.0} bytes per drawable row",
        gb(rss),
        gb(rss0),
        gb(peak),
        rss as f64 / drawable as f64
    );
    let mut batch = FrameBatch::default();
    let t = Instant::now();
    let draws = 2000;
    for _ in 0..draws {
        replay.sample(32, &mut batch)?;
    }
    println!(
        "a batch of 32 (stacks gathered, n-step returns walked): {:.1} µs",
        t.elapsed().as_secs_f64() * 1e6 / draws as f64
    );
    if let Some(path) = &a.save {
        let t = Instant::now();
        replay.save(path)?;
        let size = std::fs::metadata(path).map(|m| m.len()).unwrap_or(0);
        let (_, peak_after) = memory();
        println!(
            "saved to {path} in {:.1} s: {}; peak resident while saving {}",
            t.elapsed().as_secs_f64(),
            gb(size),
            gb(peak_after)
        );
    }
    Ok(())
}
