//! Trains every algorithm on its classic-control tasks with the rl-baselines3-zoo presets
//! and prints the markdown table of `docs/results.md` (algorithm × env × backend: best and
//! final evaluation, env steps, wall time), beside zoo's published scores.
//!
//! `cargo run --release --example results_table -- [backends…] [--only NAME]`
//! (backends: `flex` (default), `ndarray`, `tch:cpu` with `--features tch`).

#[path = "common/zoo.rs"]
mod zoo;

use ember::algo::TrainReport;
use ember::backend::DeviceSpec;
use ember::core::Result;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// One row: what to train and zoo's published score (`None`: zoo has no entry).
struct Task {
    algo: &'static str,
    env: &'static str,
    zoo: Option<&'static str>,
}

const TASKS: &[Task] = &[
    Task {
        algo: "SAC",
        env: "Pendulum-v1",
        zoo: Some("−157 @20k"),
    },
    Task {
        algo: "SAC",
        env: "MountainCarContinuous-v0",
        zoo: Some("94.7 @50k (gSDE)"),
    },
    Task {
        algo: "TD3",
        env: "Pendulum-v1",
        zoo: Some("−152 @20k"),
    },
    Task {
        algo: "DQN",
        env: "CartPole-v1",
        zoo: Some("500 @50k"),
    },
    Task {
        algo: "DQN",
        env: "Acrobot-v1",
        zoo: Some("−76.6 @100k"),
    },
    Task {
        algo: "PPO",
        env: "CartPole-v1",
        zoo: Some("500 @100k"),
    },
    Task {
        algo: "PPO",
        env: "Pendulum-v1",
        zoo: Some("−172 @100k (gSDE)"),
    },
    Task {
        algo: "A2C",
        env: "CartPole-v1",
        zoo: Some("500 @500k"),
    },
    Task {
        algo: "A2C",
        env: "Pendulum-v1",
        zoo: Some("−163 @1M (gSDE, normalized obs)"),
    },
    Task {
        algo: "REINFORCE",
        env: "CartPole-v1",
        zoo: None,
    },
];

fn run(task: &Task, spec: DeviceSpec) -> Result<TrainReport> {
    let options = zoo::RunOptions {
        evaluate: true,
        ..zoo::RunOptions::default()
    };
    zoo::run(task.algo, task.env, &spec.device()?, &options)
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    let only = args
        .iter()
        .position(|a| a == "--only")
        .and_then(|i| args.get(i + 1).cloned());
    let mut specs = Vec::new();
    for a in args
        .iter()
        .filter(|a| !a.starts_with("--") && Some(*a) != only.as_ref())
    {
        specs.push(a.parse::<DeviceSpec>()?);
    }
    if specs.is_empty() {
        specs.push(DeviceSpec::Flex);
    }
    println!(
        "| algorithm | env | backend | best eval | final eval | env steps | wall time | zoo |"
    );
    println!("|---|---|---|---|---|---|---|---|");
    for task in TASKS {
        if only.as_deref().is_some_and(|o| o != task.algo) {
            continue;
        }
        for &spec in &specs {
            let r = run(task, spec)?;
            let best = r
                .evals
                .iter()
                .map(|e| e.mean_return)
                .fold(f64::NEG_INFINITY, f64::max);
            println!(
                "| {} | {} | {spec} | {best:.1} | {:.1} | {} | {:.0} s | {} |",
                task.algo,
                task.env,
                r.final_eval().unwrap_or(f64::NAN),
                r.env_steps,
                r.wall_secs,
                task.zoo.unwrap_or("—")
            );
        }
    }
    Ok(())
}
