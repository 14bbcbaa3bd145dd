//! End-to-end training speed: trains ALGO on ENV for STEPS env steps with the zoo preset
//! and no evaluation, and prints one line ending in `env_steps_per_s=<x>`.
//!
//! `cargo run --release --example train_speed -- ALGO ENV STEPS [--replay uniform|prioritized|return_weighted] [--prefill N] [--device SPEC] [--schedule auto|parallel|sequential] [--gemm-stats]`
//!
//! `--schedule` sets SAC's, TD3's and DQN's update schedule (the preset's, `auto`, by
//! default); the line then names what an auto schedule chose (`schedule=`).
//!
//! `--prefill N` pushes N synthetic transitions into the replay buffer first (not timed),
//! so that sampling runs on a buffer of that size from the first update: seed problem 2
//! (return-weighted sampling from 1M transitions) measured inside a whole training run.
//!
//! `--gemm-stats` also prints how much of the run flex's GEMM library took
//! ([`emberlab::kernels::gemm_stats`]): products and multiply-adds per update, seconds in
//! them (summed over threads) against the process's CPU seconds, and their rate per
//! thread, e.g. `gemm products_per_update=30.4 mfma_per_update=252.8 gemm_s=17.30
//! cpu_s=23.41 gemm_share=0.739 gflops_per_thread=80.2`.

#[path = "common/zoo.rs"]
mod zoo;

use emberlab::algo::ReplayKind;
use emberlab::backend::DeviceSpec;
use emberlab::core::{Error, Result};

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
        "train_speed ALGO ENV STEPS [--replay uniform|prioritized|return_weighted] [--prefill N] [--device SPEC] [--schedule auto|parallel|sequential] [--gemm-stats]",
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
    let schedule = match flag(&args, "--schedule") {
        None => None,
        Some(s) => Some(
            serde_json::from_value(serde_json::Value::String(s.into()))
                .map_err(|_| Error::invalid("--schedule", s, "auto, parallel or sequential"))?,
        ),
    };
    let options = zoo::RunOptions {
        steps: Some(steps),
        evaluate: false,
        replay,
        prefill,
        seed: 0,
        schedule,
    };
    let gemm_stats = args.iter().any(|a| a == "--gemm-stats");
    if gemm_stats {
        emberlab::kernels::gemm_stats::enable();
    }
    let (gemm_before, cpu_before) = (emberlab::kernels::gemm_stats::snapshot(), cpu_seconds());
    let report = zoo::run(algo, env, &spec.device()?, &options)?;
    let kind = replay.map_or("preset", ReplayKind::as_str);
    println!(
        "algo={algo} env={env} device={spec} replay={kind} prefill={prefill} env_steps={} updates={} wall_s={:.2} env_steps_per_s={:.1}",
        report.env_steps,
        report.updates,
        report.wall_secs,
        report.env_steps as f64 / report.wall_secs
    );
    for (name, tuning) in emberlab::algo::parts::tunings() {
        println!("schedule {name}={tuning}");
    }
    if gemm_stats {
        let g = emberlab::kernels::gemm_stats::snapshot().since(&gemm_before);
        let per_update = |x: u64| x as f64 / report.updates.max(1) as f64;
        let cpu = cpu_seconds()
            .zip(cpu_before)
            .map(|(after, before)| after - before);
        println!(
            "gemm products_per_update={:.1} mfma_per_update={:.1} gemm_s={:.2} cpu_s={} gemm_share={} gflops_per_thread={:.1}",
            per_update(g.products),
            per_update(g.multiply_adds) / 1e6,
            g.seconds,
            cpu.map_or("?".into(), |c| format!("{c:.2}")),
            cpu.map_or("?".into(), |c| format!("{:.3}", g.seconds / c)),
            g.flops() / 1e9
        );
    }
    Ok(())
}

/// The process's CPU seconds so far (user + system, all threads), from `/proc/self/stat`
/// (Linux, assuming the usual 100 clock ticks per second); `None` elsewhere.
fn cpu_seconds() -> Option<f64> {
    let stat = std::fs::read_to_string("/proc/self/stat").ok()?;
    // Fields after the command name (which may hold spaces): state is field 3, utime 14,
    // stime 15.
    let rest = stat.rsplit_once(')')?.1;
    let fields: Vec<&str> = rest.split_whitespace().collect();
    let ticks = |i: usize| fields.get(i)?.parse::<u64>().ok();
    Some((ticks(11)? + ticks(12)?) as f64 / 100.0)
}
