//! End-to-end training speed: trains ALGO on ENV for STEPS env steps with the zoo preset
//! and no evaluation, and prints one line ending in `env_steps_per_s=<x>`.
//!
//! `cargo run --release --example train_speed -- ALGO ENV STEPS [--replay uniform|prioritized|return_weighted] [--prefill N] [--device SPEC]`
//!
//! `--prefill N` pushes N synthetic transitions into the replay buffer first (not timed),
//! so that sampling runs on a buffer of that size from the first update: seed problem 2
//! (return-weighted sampling from 1M transitions) measured inside a whole training run.

#[path = "common/zoo.rs"]
mod zoo;

use ember::algo::ReplayKind;
use ember::backend::DeviceSpec;
use ember::core::{Error, Result};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}

fn usage(what: &str) -> Error {
    Error::invalid(
        what,
        "missing or malformed",
        "train_speed ALGO ENV STEPS [--replay uniform|prioritized|return_weighted] [--prefill N] [--device SPEC]",
    )
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let (algo, env) = match (args.first(), args.get(1)) {
        (Some(a), Some(e)) => (a.as_str(), e.as_str()),
        _ => return Err(usage("ALGO ENV")),
    };
    let steps: u64 = args
        .get(2)
        .and_then(|s| s.parse().ok())
        .ok_or_else(|| usage("STEPS"))?;
    let replay = match flag(&args, "--replay") {
        None => None,
        Some(k) => Some(k.parse::<ReplayKind>()?),
    };
    let prefill = match flag(&args, "--prefill") {
        None => 0,
        Some(n) => n
            .parse()
            .map_err(|_| Error::invalid("--prefill", n, "a number of transitions"))?,
    };
    let spec: DeviceSpec = flag(&args, "--device").unwrap_or("flex").parse()?;
    let options = zoo::RunOptions {
        steps: Some(steps),
        evaluate: false,
        replay,
        prefill,
        seed: 0,
    };
    let report = zoo::run(algo, env, &spec.device()?, &options)?;
    let kind = replay.map_or("preset", ReplayKind::as_str);
    println!(
        "algo={algo} env={env} device={spec} replay={kind} prefill={prefill} env_steps={} updates={} wall_s={:.2} env_steps_per_s={:.1}",
        report.env_steps,
        report.updates,
        report.wall_secs,
        report.env_steps as f64 / report.wall_secs
    );
    Ok(())
}
