//! Trains every algorithm on its classic-control tasks with the rl-baselines3-zoo presets,
//! over several seeds, and prints the markdown table of `docs/results.md`: per algorithm ×
//! env × backend the final evaluation's mean ± std and IQM with a 95% bootstrap interval
//! over seeds (Agarwal et al. 2021), the mean best evaluation, env steps and wall time per
//! run, beside zoo's published score. With `--plot DIR` it also draws, per environment, the
//! evaluation curves (mean over seeds and its 95% bootstrap band) of every algorithm.
//!
//! `cargo run --release --example results_table -- [backends…] [--only ALGO[:ENV]] [--seeds N]
//! [--jobs J] [--plot DIR]` (backends: `flex` (default), `ndarray`, `tch:cpu` with
//! `--features tch`; seeds `0..N`, default 5; J runs at once, each its own process,
//! default 1). `--cache DIR` keeps each run's report there and reuses it on the next
//! call (an interrupted table picks up where it stopped).

#[path = "common/zoo.rs"]
mod zoo;

use emberlab::backend::DeviceSpec;
use emberlab::core::{Error, Result};
use emberlab_cli::plot::{Band, plot_bands};
use emberlab_cli::stats::{bootstrap_ci, iqm, mean_std};
use std::collections::VecDeque;
use std::process::{Child, Command, Stdio};

// The allocator: emberlab-cli's (mimalloc), linked through its plots and statistics.

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

/// One training run as the child process reports it.
#[derive(Clone, Debug)]
struct Run {
    env_steps: u64,
    wall_secs: f64,
    evals: Vec<(f64, f64)>,
}

/// The child: trains `algo` on `env` with `seed` and prints its report as one JSON line.
fn child(algo: &str, env: &str, spec: DeviceSpec, seed: u64) -> Result<()> {
    let options = zoo::RunOptions {
        evaluate: true,
        seed,
        ..zoo::RunOptions::default()
    };
    let r = zoo::run(algo, env, &spec.device()?, &options)?;
    let evals: Vec<[f64; 2]> = r
        .evals
        .iter()
        .map(|e| [e.env_steps as f64, e.mean_return])
        .collect();
    let line = serde_json::json!({
        "env_steps": r.env_steps, "wall_secs": r.wall_secs, "evals": evals,
    });
    println!("{line}");
    Ok(())
}

fn parse_run(out: &[u8]) -> Result<Run> {
    let text = String::from_utf8_lossy(out);
    let line = text.lines().last().unwrap_or("");
    let v: serde_json::Value = serde_json::from_str(line)
        .map_err(|e| Error::invalid("child report", line, format!("one JSON line ({e})")))?;
    let evals = v["evals"]
        .as_array()
        .map(|a| {
            a.iter()
                .filter_map(|p| Some((p[0].as_f64()?, p[1].as_f64()?)))
                .collect()
        })
        .unwrap_or_default();
    Ok(Run {
        env_steps: v["env_steps"].as_u64().unwrap_or(0),
        wall_secs: v["wall_secs"].as_f64().unwrap_or(f64::NAN),
        evals,
    })
}

/// Where `--cache` keeps the report of one run.
fn cache_file(dir: &str, (t, spec, seed): (usize, DeviceSpec, u64)) -> std::path::PathBuf {
    let task = &TASKS[t];
    let name = format!("{}-{}-{spec}-s{seed}.json", task.algo, task.env).replace(':', "_");
    std::path::Path::new(dir).join(name)
}

/// Runs every (task, backend, seed) as a child process of this example, `jobs` at once,
/// reusing the reports cached in `cache`.
fn run_all(
    jobs: &[(usize, DeviceSpec, u64)],
    parallel: usize,
    cache: Option<&str>,
) -> Result<Vec<Run>> {
    let exe = std::env::current_exe().map_err(|e| Error::invalid("current exe", e, "readable"))?;
    let mut done: Vec<Option<Run>> = vec![None; jobs.len()];
    if let Some(dir) = cache {
        std::fs::create_dir_all(dir).map_err(|e| Error::invalid("--cache", dir, e.to_string()))?;
        for (i, &job) in jobs.iter().enumerate() {
            if let Ok(bytes) = std::fs::read(cache_file(dir, job)) {
                done[i] = parse_run(&bytes).ok();
            }
        }
    }
    let mut queue: VecDeque<usize> = (0..jobs.len()).filter(|&i| done[i].is_none()).collect();
    let mut running: Vec<(usize, Child)> = Vec::new();
    while !queue.is_empty() || !running.is_empty() {
        while running.len() < parallel.max(1)
            && let Some(i) = queue.pop_front()
        {
            let (t, spec, seed) = jobs[i];
            let task = &TASKS[t];
            let args = [task.algo, task.env, &spec.to_string(), &seed.to_string()];
            let child = Command::new(&exe)
                .arg("--child")
                .args(args)
                .stdout(Stdio::piped())
                .spawn()
                .map_err(|e| Error::invalid("child process", e, "started"))?;
            running.push((i, child));
        }
        let (i, child) = running.remove(0);
        let out = child
            .wait_with_output()
            .map_err(|e| Error::invalid("child process", e, "finished"))?;
        let (t, spec, seed) = jobs[i];
        if !out.status.success() {
            return Err(Error::invalid(
                format!("run {} {} {spec} seed {seed}", TASKS[t].algo, TASKS[t].env),
                out.status,
                "success",
            ));
        }
        eprintln!(
            "done: {} {} {spec} seed {seed}",
            TASKS[t].algo, TASKS[t].env
        );
        done[i] = Some(parse_run(&out.stdout)?);
        if let Some(dir) = cache {
            let path = cache_file(dir, jobs[i]);
            std::fs::write(&path, &out.stdout)
                .map_err(|e| Error::invalid("--cache", path.display(), e.to_string()))?;
        }
    }
    Ok(done
        .into_iter()
        .map(|r| r.expect("every run finished"))
        .collect())
}

fn flag<'a>(args: &'a [String], name: &str) -> Option<&'a str> {
    args.iter()
        .position(|a| a == name)
        .and_then(|i| args.get(i + 1))
        .map(String::as_str)
}

fn number(args: &[String], name: &str, default: usize) -> Result<usize> {
    flag(args, name).map_or(Ok(default), |v| {
        v.parse()
            .map_err(|_| Error::invalid(name, v, "a whole number"))
    })
}

/// Mean over runs and a 95% bootstrap interval of the mean at each evaluation point
/// (all runs of one task evaluate at the same env steps).
fn band(label: &str, runs: &[&Run]) -> Result<Band> {
    let x: Vec<f64> = runs[0].evals.iter().map(|e| e.0).collect();
    let (mut mean, mut lo, mut hi) = (Vec::new(), Vec::new(), Vec::new());
    for (k, _) in x.iter().enumerate() {
        let ys: Vec<f64> = runs
            .iter()
            .filter_map(|r| r.evals.get(k).map(|e| e.1))
            .collect();
        let (l, h) = bootstrap_ci(&ys, |v| mean_std(v).0, 2000, 0.95, k as u64)
            .map_err(|e| Error::invalid("bootstrap", e, "an interval"))?;
        mean.push(mean_std(&ys).0);
        lo.push(l);
        hi.push(h);
    }
    Ok(Band {
        label: label.to_string(),
        x,
        mean,
        lo,
        hi,
    })
}

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().skip(1).collect();
    if args.first().map(String::as_str) == Some("--child") {
        let a = |i: usize| args.get(i).map(String::as_str).unwrap_or("");
        let seed = a(4)
            .parse()
            .map_err(|_| Error::invalid("seed", a(4), "a number"))?;
        return child(a(1), a(2), a(3).parse()?, seed);
    }
    // `--only PPO` or `--only SAC:Pendulum-v1`.
    let only = flag(&args, "--only").map(|o| match o.split_once(':') {
        Some((a, e)) => (a.to_ascii_uppercase(), Some(e.to_string())),
        None => (o.to_ascii_uppercase(), None),
    });
    let seeds = number(&args, "--seeds", 5)? as u64;
    let parallel = number(&args, "--jobs", 1)?;
    let plot_dir = flag(&args, "--plot");
    let cache = flag(&args, "--cache");
    let values: Vec<&str> = ["--only", "--seeds", "--jobs", "--plot", "--cache"]
        .iter()
        .filter_map(|f| flag(&args, f))
        .collect();
    let mut specs = Vec::new();
    for a in args
        .iter()
        .filter(|a| !a.starts_with("--") && !values.contains(&a.as_str()))
    {
        specs.push(a.parse::<DeviceSpec>()?);
    }
    if specs.is_empty() {
        specs.push(DeviceSpec::Flex);
    }
    let tasks: Vec<usize> = (0..TASKS.len())
        .filter(|&t| {
            only.as_ref().is_none_or(|(a, e)| {
                *a == TASKS[t].algo && e.as_ref().is_none_or(|e| e == TASKS[t].env)
            })
        })
        .collect();
    let mut jobs = Vec::new();
    for &t in &tasks {
        for &spec in &specs {
            for seed in 0..seeds {
                jobs.push((t, spec, seed));
            }
        }
    }
    let runs = run_all(&jobs, parallel, cache)?;
    println!(
        "| algorithm | env | backend | seeds | final eval mean ± std | final eval IQM [95% CI] | best eval (mean) | env steps | wall time per run | zoo |"
    );
    println!("|---|---|---|---|---|---|---|---|---|---|");
    let mut bands: Vec<(&str, Band)> = Vec::new();
    for &t in &tasks {
        for &spec in &specs {
            let rows: Vec<&Run> = jobs
                .iter()
                .zip(&runs)
                .filter(|((jt, js, _), _)| *jt == t && *js == spec)
                .map(|(_, r)| r)
                .collect();
            let finals: Vec<f64> = rows
                .iter()
                .map(|r| r.evals.last().map_or(f64::NAN, |e| e.1))
                .collect();
            let bests: Vec<f64> = rows
                .iter()
                .map(|r| {
                    r.evals
                        .iter()
                        .map(|e| e.1)
                        .fold(f64::NEG_INFINITY, f64::max)
                })
                .collect();
            let (m, sd) = mean_std(&finals);
            let (lo, hi) = bootstrap_ci(&finals, iqm, 2000, 0.95, 7)
                .map_err(|e| Error::invalid("bootstrap", e, "an interval"))?;
            let wall = rows.iter().map(|r| r.wall_secs).sum::<f64>() / rows.len() as f64;
            let task = &TASKS[t];
            println!(
                "| {} | {} | {spec} | {} | {m:.1} ± {sd:.1} | {:.1} [{lo:.1}, {hi:.1}] | {:.1} | {} | {wall:.0} s | {} |",
                task.algo,
                task.env,
                rows.len(),
                iqm(&finals),
                mean_std(&bests).0,
                rows[0].env_steps,
                task.zoo.unwrap_or("—")
            );
            if spec == specs[0] {
                bands.push((task.env, band(task.algo, &rows)?));
            }
        }
    }
    if let Some(dir) = plot_dir {
        let mut envs: Vec<&str> = bands.iter().map(|(e, _)| *e).collect();
        envs.dedup();
        for env in envs {
            let mine: Vec<Band> = bands
                .iter()
                .filter(|(e, _)| *e == env)
                .map(|(_, b)| b.clone())
                .collect();
            let path = std::path::Path::new(dir).join(format!("results-{env}.png"));
            let title = format!("{env}: mean evaluation return over {seeds} seeds (95% CI)");
            plot_bands(&path, &title, &mine).map_err(|e| Error::invalid("plot", e, "written"))?;
            eprintln!("wrote {}", path.display());
        }
    }
    Ok(())
}
