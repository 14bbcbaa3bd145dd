//! The `ember` command as a library: [`main`] is the binary's whole body, and a program of
//! your own can register its environments with `emberlab_env::register` and then hand its
//! arguments to [`main_with_args`] — `ember train sac --env MyEnv-v0` then trains on them.
//!
//! Errors a user can make print one line naming the problem and the fix, and exit with
//! code 2; a failure during training exits with 1; Ctrl-C (or `SIGTERM`, `SIGHUP`) writes a
//! checkpoint and exits with 130.

mod bench;
mod bench_grpc;
mod cluster_cmd;
mod cluster_limits;
mod cluster_security;
mod eval;
pub mod export;
mod figure;
mod plot_cmd;
mod progress;
mod run_dir;
mod train;

use anyhow::{Context, Result, anyhow, bail};
use clap::{Args, Parser, Subcommand};
use emberlab_run::config::PresetSource;
use emberlab_run::kinds::LearnerKind;
use emberlab_run::{Flags, RunConfig};
use std::ffi::OsString;
use std::path::PathBuf;
use std::process::ExitCode;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};

/// Ember: reinforcement learning in Rust. Train an agent with one command, resume it
/// exactly, evaluate and plot it.
#[derive(Parser, Debug)]
#[command(name = "ember", version)]
struct Cli {
    #[command(subcommand)]
    command: Command,
}

#[derive(Subcommand, Debug)]
enum Command {
    /// Train an algorithm on an environment (rl-baselines3-zoo's preset unless told
    /// otherwise) into a new run folder, or continue one with --resume.
    Train(TrainArgs),
    /// Evaluate a run's policy on fresh episodes (and render one to a GIF).
    Eval(EvalCmd),
    /// Write a run's greedy policy as an ONNX model (SAC and TD3: the actor; DQN: the
    /// Q-network and its argmax; PPO, A2C, REINFORCE: the policy head, with the run's
    /// observation statistics when it normalised observations).
    Export(ExportCmd),
    /// Draw the learning curves of runs into one PNG; runs of one config over several seeds
    /// become a mean with a 95% interval, with a summary over the seeds.
    Plot(PlotCmd),
    /// Print the preset config of an algorithm (on an environment) as TOML.
    Zoo(ZooCmd),
    /// Measure this machine: replay sampling, batched inference, one SAC update,
    /// environment stepping, end-to-end training, central inference over gRPC.
    Bench(BenchCmd),
    /// Run a learner that serves actors over gRPC (central inference, transition stream)
    /// and trains from their transitions; survives kill -9 (write-ahead log, checkpoints).
    Serve(cluster_cmd::ServeCmd),
    /// Run an actor: environments stepped here, actions from a learner (`ember serve`),
    /// transitions streamed back.
    Actor(cluster_cmd::ActorCmd),
    /// Start a learner and K actor processes on this machine and wait for the run.
    Launch(cluster_cmd::LaunchCmd),
    /// Make a cluster's token and a self-signed TLS certificate and key (the files of a
    /// Kubernetes Secret: token, tls.crt, tls.key, ca.crt).
    Keygen(cluster_security::KeygenCmd),
}

#[derive(Args, Debug)]
struct BenchCmd {
    /// What to measure: replay, inference, sac-update, envs, mujoco-envs (a build with the
    /// `mujoco` feature), gym-bridge (the `gym` feature), train or grpc.
    target: String,
    /// Seconds spent on each figure.
    #[arg(long, default_value_t = 2.0)]
    secs: f64,
    /// One JSON object per figure on stdout instead of a table.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug, Clone)]
struct TrainArgs {
    /// Algorithm: sac, td3, dqn, ppo, a2c, reinforce, or one a program registered
    /// (`emberlab_run::register`); not needed with --resume.
    algo: Option<String>,
    /// Environment id, e.g. Pendulum-v1 (any registered id).
    #[arg(long)]
    env: Option<String>,
    /// A config file (TOML; `ember zoo ALGO ENV` prints one to start from) instead of the
    /// preset.
    #[arg(long, value_name = "FILE")]
    config: Option<PathBuf>,
    /// Override a config field by its dotted path, e.g. --set sac.learning_rate=3e-4
    /// (repeatable; unknown keys are refused).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    sets: Vec<String>,
    /// Device: flex (default), ndarray, tch:cpu, tch:cuda:N (as compiled in).
    #[arg(long)]
    device: Option<String>,
    /// Env steps to train for.
    #[arg(long)]
    steps: Option<u64>,
    /// Seed of the run (environments, networks, sampling).
    #[arg(long)]
    seed: Option<u64>,
    /// Evaluate every this many env steps.
    #[arg(long, value_name = "ENV_STEPS")]
    eval_every: Option<u64>,
    /// Write a checkpoint every this many env steps.
    #[arg(long, value_name = "ENV_STEPS")]
    save_every: Option<u64>,
    /// Stop once an evaluation's mean return reaches this.
    #[arg(long, value_name = "RETURN", allow_negative_numbers = true)]
    stop_reward: Option<f64>,
    /// The run folder (default: runs/<algo>-<env>-s<seed>, numbered if taken).
    #[arg(long, value_name = "DIR")]
    out: Option<PathBuf>,
    /// Continue the run in this folder from its last checkpoint, exactly.
    #[arg(long, value_name = "RUN", conflicts_with_all = ["algo", "env", "config", "sets", "steps", "seed", "eval_every", "save_every", "stop_reward", "out", "device"])]
    resume: Option<PathBuf>,
    /// Train one run per seed of this range, e.g. 0..5 (runs named ...-s0, ...-s1, ...).
    #[arg(long, value_name = "A..B", conflicts_with = "seed")]
    seeds: Option<String>,
    /// Runs of --seeds trained at once.
    #[arg(long, default_value_t = 1)]
    jobs: usize,
    /// Print nothing while training.
    #[arg(long)]
    quiet: bool,
    /// Print progress and the result as JSON lines on stdout.
    #[arg(long)]
    json: bool,
}

#[derive(Args, Debug)]
struct EvalCmd {
    /// The run folder.
    run: PathBuf,
    /// Episodes to evaluate.
    #[arg(long, default_value_t = 10)]
    episodes: usize,
    /// Use the weights of the best evaluation during training instead of the last
    /// checkpoint's.
    #[arg(long)]
    best: bool,
    /// Act with the exploring policy (sampled actions, ε-greedy) instead of the greedy one.
    #[arg(long)]
    stochastic: bool,
    /// Device to evaluate on (default: the run's).
    #[arg(long)]
    device: Option<String>,
    /// Seed of the first episode (episode i is seeded with seed + i).
    #[arg(long, default_value_t = 1_000_000)]
    seed: u64,
    /// Render the first episode as an animated GIF (classic-control tasks; MuJoCo tasks in a
    /// build with `--features mujoco`; Atari games as the emulator draws them).
    #[arg(long, value_name = "FILE")]
    gif: Option<PathBuf>,
}

#[derive(Args, Debug)]
struct ExportCmd {
    /// The run folder.
    run: PathBuf,
    /// The ONNX file to write (input `obs`: float32 [batch, obs_dim], or uint8 frame stacks
    /// [batch, 4, 84, 84] for Atari runs; output `action`).
    #[arg(long, value_name = "FILE")]
    onnx: PathBuf,
    /// Export the weights of the best evaluation during training instead of the last
    /// checkpoint's.
    #[arg(long)]
    best: bool,
}

#[derive(Args, Debug)]
struct PlotCmd {
    /// Run folders.
    #[arg(required = true)]
    runs: Vec<PathBuf>,
    /// The PNG to write.
    #[arg(short, long, default_value = "curves.png")]
    output: PathBuf,
}

#[derive(Args, Debug)]
struct ZooCmd {
    /// Algorithm: sac, td3, dqn, ppo, a2c, reinforce, or one a program registered.
    algo: String,
    /// Environment id (default: the first environment zoo tunes the algorithm for).
    env: Option<String>,
}

/// Set by Ctrl-C, `SIGTERM` or `SIGHUP`; a training run checkpoints and stops when it sees
/// it.
static STOP: AtomicBool = AtomicBool::new(false);

/// The `ember` command on this process's arguments.
pub fn main() -> ExitCode {
    main_with_args(std::env::args_os())
}

/// The `ember` command with `learners` added to its registry first: the `main` of a
/// program that brings learners of its own (`emberlab_run::kinds`), e.g.
/// `main_with([Kind::<MyConfig>::named("mine")])`; then `my-program train mine --env ...`.
/// A name that is taken or malformed is an error (exit code 2) before anything runs.
pub fn main_with(learners: impl IntoIterator<Item = Arc<dyn LearnerKind>>) -> ExitCode {
    for kind in learners {
        if let Err(e) = emberlab_run::register(kind) {
            eprintln!("error: {e}");
            return ExitCode::from(2);
        }
    }
    main()
}

/// The `ember` command on `args` (the first is the program name), e.g. from a program that
/// registered its own environments first.
pub fn main_with_args<I, T>(args: I) -> ExitCode
where
    I: IntoIterator<Item = T>,
    T: Into<OsString> + Clone,
{
    let args: Vec<OsString> = args.into_iter().map(Into::into).collect();
    let cli = match Cli::try_parse_from(&args) {
        Ok(cli) => cli,
        Err(e) => {
            let _ = e.print();
            return ExitCode::from(u8::try_from(e.exit_code()).unwrap_or(2));
        }
    };
    let raw: Vec<String> = args
        .iter()
        .map(|a| a.to_string_lossy().into_owned())
        .collect();
    match run(cli, &raw) {
        Ok(()) => ExitCode::SUCCESS,
        Err(e) => {
            if let Some(i) = e.downcast_ref::<train::Interrupted>() {
                eprintln!("ember: {i}; continue with `ember train --resume RUN`");
                return ExitCode::from(130);
            }
            if let Some(s) = e.downcast_ref::<SeedsStopped>() {
                eprintln!("ember: {s}; continue each with `ember train --resume RUN`");
                return ExitCode::from(130);
            }
            let runtime = e.downcast_ref::<train::Runtime>().is_some();
            eprintln!("error: {}", format!("{e:#}").replace('\n', " "));
            ExitCode::from(if runtime { 1 } else { 2 })
        }
    }
}

fn run(cli: Cli, raw: &[String]) -> Result<()> {
    match cli.command {
        Command::Train(args) => train_cmd(args, raw),
        Command::Eval(args) => {
            let args = eval::EvalArgs {
                run: args.run,
                episodes: args.episodes,
                best: args.best,
                stochastic: args.stochastic,
                device: args.device,
                seed: args.seed,
                gif: args.gif,
            };
            let played = eval::eval(&args)?;
            let (m, s) = crate::stats::mean_std(&played.returns);
            println!(
                "{}: mean return {m:.2} ± {s:.2} over {} episodes of {:.1} steps on average, \
                 {} cut short ({}{})",
                args.run.display(),
                played.returns.len(),
                played.mean_length(),
                played.truncated_count(),
                if args.best {
                    "best weights"
                } else {
                    "last checkpoint"
                },
                if args.stochastic { ", stochastic" } else { "" }
            );
            if let Some(gif) = &args.gif {
                println!("first episode rendered to {}", gif.display());
            }
            Ok(())
        }
        Command::Export(args) => {
            let bytes = export::export_onnx(&args.run, args.best, &args.onnx)?;
            println!(
                "wrote {} ({bytes} bytes): the {} policy of {}",
                args.onnx.display(),
                if args.best { "best" } else { "last" },
                args.run.display()
            );
            Ok(())
        }
        Command::Plot(args) => {
            for line in plot_cmd::plot(&args.runs, &args.output)? {
                println!("{line}");
            }
            println!("wrote {}", args.output.display());
            Ok(())
        }
        Command::Bench(args) => {
            if !(args.secs.is_finite() && args.secs > 0.0) {
                bail!(
                    "invalid --secs: got {}, expected a positive number",
                    args.secs
                );
            }
            let figures = bench::bench(&args.target, args.secs)?;
            if !args.json {
                println!(
                    "# {} on {}; flex's GEMM kernels: {}",
                    args.target,
                    emberlab_core::machine::cpu_model(),
                    emberlab_backend::gemm_kernels()
                );
            }
            for f in figures {
                if args.json {
                    println!(
                        "{}",
                        serde_json::json!({"name": f.name, "value": f.value, "unit": f.unit, "cpu": emberlab_core::machine::cpu_model(), "gemm_kernels": emberlab_backend::gemm_kernels()})
                    );
                } else {
                    println!("{:<44} {:>14.2} {}", f.name, f.value, f.unit);
                }
            }
            // What the auto schedules chose (`…/auto_…` figures).
            if args.json {
                if let serde_json::Value::Object(all) = schedules_json() {
                    for (name, choice) in all {
                        println!(
                            "{}",
                            serde_json::json!({"schedule": name, "choice": choice})
                        );
                    }
                }
            } else {
                for (name, t) in emberlab_algo::parts::tunings() {
                    println!("# {name}: {t}");
                }
            }
            Ok(())
        }
        Command::Keygen(args) => {
            let files = cluster_security::keygen(&args)?;
            println!(
                "wrote {}, {}, {} and {}: the learner takes --token-file {} --tls-cert {} \
                 --tls-key {}; actors --token-file {} --tls-ca {}",
                files.token.display(),
                files.cert.display(),
                files.key.display(),
                files.ca.display(),
                files.token.display(),
                files.cert.display(),
                files.key.display(),
                files.token.display(),
                files.ca.display()
            );
            Ok(())
        }
        Command::Serve(args) => {
            let report = cluster_cmd::serve(&args)?;
            if args.json {
                println!("{}", cluster_cmd::report_json(&report));
            } else {
                print_learner(&report);
            }
            Ok(())
        }
        Command::Actor(args) => {
            let report = cluster_cmd::actor(&args)?;
            let id = cluster_cmd::actor_id(&args.id)?;
            if args.json {
                println!("{}", cluster_cmd::actor_json(id, &report));
            } else {
                println!(
                    "actor {}: {} env steps in {:.1} s ({:.0}/s), {} episodes (recent return {:.1}), \
                     {} transitions acknowledged, {} reconnects, act p50 {:.0} µs p99 {:.0} µs",
                    id,
                    report.env_steps,
                    report.secs,
                    report.env_steps as f64 / report.secs.max(1e-9),
                    report.episodes,
                    report.recent_return,
                    report.acked_rows,
                    report.reconnects,
                    report.act_p50_us,
                    report.act_p99_us
                );
            }
            Ok(())
        }
        Command::Launch(args) => {
            let (learner, actors) = cluster_cmd::launch(&args)?;
            if args.serve.json {
                println!(
                    "{}",
                    serde_json::json!({"learner": learner, "actors": actors})
                );
            } else {
                for a in &actors {
                    println!("{a}");
                }
                println!("learner: {learner}");
            }
            Ok(())
        }
        Command::Zoo(args) => {
            let env = match args.env {
                Some(e) => e,
                None => default_env(&args.algo)?.to_string(),
            };
            let (config, source) = RunConfig::preset(&args.algo, &env)?;
            let origin = match source {
                PresetSource::Zoo => "rl-baselines3-zoo's tuned hyper-parameters",
                PresetSource::Defaults => "defaults (zoo has no preset for this environment)",
            };
            println!("# {} on {env}: {origin}", args.algo);
            println!("# train with: ember train --config FILE (or --set KEY=VALUE on the preset)");
            print!("{}", config.to_toml());
            Ok(())
        }
    }
}

fn print_learner(r: &emberlab_dist::cluster::LearnerReport) {
    let eval = r.eval.as_ref().map_or("no evaluation".to_string(), |e| {
        format!(
            "greedy return {:.2} ± {:.2} over {} episodes",
            e.mean_return(),
            e.std_return(),
            e.returns.len()
        )
    });
    println!(
        "learner{}: {} transitions, {} updates in {:.1} s; {eval}; log holds {} transitions \
         in {} batches",
        if r.resumed { " (resumed)" } else { "" },
        r.env_steps,
        r.updates,
        r.secs,
        r.log_rows,
        r.log_records
    );
}

/// The environment `ember zoo ALGO` shows when none is given.
fn default_env(algo: &str) -> Result<&'static str> {
    Ok(match algo {
        "sac" | "td3" => "Pendulum-v1",
        "dqn" | "ppo" | "a2c" | "reinforce" => "CartPole-v1",
        other => {
            emberlab_run::registry::find(other)?;
            bail!("`ember zoo {other} ENV`: name an environment for {other}")
        }
    })
}

fn train_cmd(args: TrainArgs, raw: &[String]) -> Result<()> {
    if let Some(range) = &args.seeds {
        return seeds_cmd(&args, range, raw);
    }
    let command = raw.join(" ");
    let (dir, config, resume) = match &args.resume {
        Some(dir) => (dir.clone(), emberlab_run::load_config(dir)?, true),
        None => {
            let config = resolve_config(
                args.algo.as_deref(),
                args.env.as_deref(),
                args.config.as_deref(),
                &Flags {
                    steps: args.steps,
                    seed: args.seed,
                    eval_every: args.eval_every,
                    save_every: args.save_every,
                    stop_reward: args.stop_reward,
                    device: args.device.clone(),
                    sets: args.sets.clone(),
                },
            )?;
            // Check the device before making a folder.
            emberlab_run::devices(&config.device)?;
            let dir = args
                .out
                .clone()
                .unwrap_or_else(|| run_dir::auto_name(&PathBuf::from("runs"), &config));
            run_dir::create(&dir, &config, &command)?;
            (dir, config, false)
        }
    };
    install_ctrl_c()?;
    STOP.store(false, Ordering::SeqCst);
    let out = progress::Output {
        quiet: args.quiet,
        json: args.json,
    };
    let report = train::train(&dir, &config, resume, out, &STOP)?;
    let last = report.final_eval();
    if args.json {
        println!(
            "{}",
            serde_json::json!({
                "event": "done",
                "run": dir.display().to_string(),
                "env_steps": report.progress.env_steps,
                "updates": report.progress.updates,
                "final_eval": last,
                "wall_secs": report.wall_secs,
                "schedules": schedules_json(),
            })
        );
    } else if !args.quiet {
        println!(
            "done: {} env steps, {} updates, final evaluation {}, {:.0} s; run folder {}",
            report.progress.env_steps,
            report.progress.updates,
            last.map_or("–".into(), |r| format!("{r:.1}")),
            report.wall_secs,
            dir.display()
        );
    }
    Ok(())
}

/// What each auto-scheduled update chose on this machine (`UpdateSchedule::Auto`): by
/// name, the setting in use and every setting's measured milliseconds per update.
fn schedules_json() -> serde_json::Value {
    let all = emberlab_algo::parts::tunings()
        .into_iter()
        .map(|(name, t)| {
            let tried: serde_json::Map<String, serde_json::Value> = t
                .tried
                .iter()
                .map(|(s, secs)| (s.to_string(), serde_json::json!(secs * 1e3)))
                .collect();
            let v = serde_json::json!({"chosen": t.chosen.to_string(), "ms": tried, "trials": t.trials, "drift": t.drift});
            (name, v)
        })
        .collect::<serde_json::Map<_, _>>();
    serde_json::Value::Object(all)
}

/// `--seeds A..B --jobs J`: one child `ember train` per seed, J at a time.
/// The config of `ALGO --env ENV [--config FILE]` with the flags applied: the preset, or
/// the file (which must be for the same algorithm and environment).
///
/// # Errors
/// No algorithm or environment named, an unknown environment, a bad file or flag.
fn resolve_config(
    algo: Option<&str>,
    env: Option<&str>,
    file: Option<&std::path::Path>,
    flags: &Flags,
) -> Result<RunConfig> {
    let algo = algo.ok_or_else(|| {
        anyhow!(
            "name an algorithm ({}), or --resume RUN",
            emberlab_run::registry::names().join(", ")
        )
    })?;
    let env = env.ok_or_else(|| {
        anyhow!(
            "name an environment with --env ID (known: {})",
            emberlab_env::ids().join(", ")
        )
    })?;
    match emberlab_env::factory(env) {
        Ok(_) => {}
        // Atari games are image environments, outside the registry of vector ones.
        Err(_) if emberlab_env::is_atari_id(env) => {}
        // Known but not built in (a MuJoCo or gym: id): say how to get it.
        Err(e @ emberlab_core::Error::Unavailable { .. }) => bail!("{e}"),
        Err(_) => bail!(
            "unknown environment `{env}`: known are {}, and Atari ids (ALE/Pong-v5, \
             PongNoFrameskip-v4)",
            emberlab_env::ids().join(", ")
        ),
    }
    let mut config = match file {
        Some(path) => {
            let c = emberlab_run::config::load_file(path)?;
            if c.algo != algo || c.env != env {
                bail!(
                    "config {} is for {} on {}, not {algo} on {env}",
                    path.display(),
                    c.algo,
                    c.env
                );
            }
            c
        }
        None => RunConfig::preset(algo, env)?.0,
    };
    config.apply_flags(flags)?;
    Ok(config)
}

fn seeds_cmd(args: &TrainArgs, range: &str, raw: &[String]) -> Result<()> {
    let (a, b) = range
        .split_once("..")
        .and_then(|(a, b)| Some((a.trim().parse::<u64>().ok()?, b.trim().parse::<u64>().ok()?)))
        .filter(|(a, b)| a < b)
        .ok_or_else(|| anyhow!("invalid --seeds `{range}`: expected A..B with A < B, e.g. 0..5"))?;
    if args.jobs == 0 {
        bail!("invalid --jobs: got 0, expected >= 1");
    }
    let exe = std::env::current_exe().context("cannot find the ember executable")?;
    let mut base: Vec<String> = raw.iter().skip(1).cloned().collect();
    // Drop --seeds, --jobs, --out and --seed (with their values) and --quiet from the
    // child's command line: each child gets its own --seed, --out and --quiet.
    let mut i = 0;
    while i < base.len() {
        let arg = base[i].clone();
        if ["--seeds", "--jobs", "--out", "--seed"].contains(&arg.as_str()) {
            base.drain(i..(i + 2).min(base.len()));
        } else if arg == "--quiet"
            || ["--seeds=", "--jobs=", "--out=", "--seed="]
                .iter()
                .any(|p| arg.starts_with(p))
        {
            base.remove(i);
        } else {
            i += 1;
        }
    }
    install_ctrl_c()?;
    STOP.store(false, Ordering::SeqCst);
    let mut pending: Vec<u64> = (a..b).rev().collect();
    let mut running: Vec<(u64, std::process::Child)> = Vec::new();
    let (mut failed, mut stopping) = (Vec::new(), false);
    while !pending.is_empty() || !running.is_empty() {
        if !stopping && STOP.load(Ordering::SeqCst) {
            stopping = true;
            pending.clear();
            eprintln!("stopping: every running seed writes a checkpoint");
            for (seed, child) in &running {
                if let Err(e) = pass_stop(child) {
                    eprintln!("seed {seed}: {e:#}");
                }
            }
        }
        while running.len() < args.jobs
            && let Some(seed) = pending.pop()
        {
            let mut cmd = std::process::Command::new(&exe);
            cmd.args(&base)
                .args(["--seed", &seed.to_string(), "--quiet"]);
            // A group of its own: a terminal's Ctrl-C reaches this process alone, which
            // passes it on once (a second would make a child leave without a checkpoint).
            #[cfg(unix)]
            std::os::unix::process::CommandExt::process_group(&mut cmd, 0);
            if let Some(out) = &args.out {
                cmd.args([
                    "--out".into(),
                    out.join(format!("s{seed}")).display().to_string(),
                ]);
            }
            eprintln!("seed {seed}: started");
            running.push((
                seed,
                cmd.spawn().context("cannot start a training process")?,
            ));
        }
        std::thread::sleep(std::time::Duration::from_millis(200));
        let mut still = Vec::new();
        for (seed, mut child) in running {
            match child.try_wait()? {
                Some(status) => {
                    let interrupted = stopping && status.code() == Some(130);
                    eprintln!(
                        "seed {seed}: {}",
                        if status.success() {
                            "done".into()
                        } else if interrupted {
                            "stopped (checkpoint written)".into()
                        } else {
                            format!("failed ({status})")
                        }
                    );
                    if !status.success() && !interrupted {
                        failed.push(seed);
                    }
                }
                None => still.push((seed, child)),
            }
        }
        running = still;
    }
    if !failed.is_empty() {
        return Err(anyhow::Error::new(train::Runtime(anyhow!(
            "seeds {failed:?} failed"
        ))));
    }
    if stopping {
        return Err(anyhow::Error::new(SeedsStopped));
    }
    println!("trained seeds {a}..{b}; compare them with `ember plot RUN...`");
    Ok(())
}

/// `--seeds` stopped by Ctrl-C or `SIGTERM`: every seed that was running wrote a
/// checkpoint.
#[derive(Debug)]
struct SeedsStopped;

impl std::fmt::Display for SeedsStopped {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        f.write_str("stopped; each seed that ran wrote a checkpoint")
    }
}

impl std::error::Error for SeedsStopped {}

/// Passes a stop on to a seed's process (`SIGINT`, which it answers with a checkpoint).
#[cfg(unix)]
fn pass_stop(child: &std::process::Child) -> Result<()> {
    crate::checks::send(child, crate::checks::Signal::Interrupt)
}

/// Elsewhere the console's Ctrl-C reaches every seed's process itself.
#[cfg(not(unix))]
fn pass_stop(_child: &std::process::Child) -> Result<()> {
    Ok(())
}

/// Installs the handler of Ctrl-C, `SIGTERM` and `SIGHUP` once per process.
fn install_ctrl_c() -> Result<()> {
    static INSTALLED: std::sync::OnceLock<std::result::Result<(), String>> =
        std::sync::OnceLock::new();
    INSTALLED
        .get_or_init(|| {
            ctrlc::set_handler(|| {
                if STOP.swap(true, Ordering::SeqCst) {
                    // A second signal: leave at once (the last checkpoint stays loadable).
                    std::process::exit(130);
                }
            })
            .map_err(|e| e.to_string())
        })
        .clone()
        .map_err(|e| anyhow!("cannot install the Ctrl-C handler: {e}"))
}
