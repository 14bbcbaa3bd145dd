//! `ember serve`, `ember actor` and `ember launch`: a learner and its actors as processes
//! (emberlab-dist's cluster).

use super::cluster_limits::ServeLimits;
use super::cluster_security::{ActorSecurity, ServeSecurity};
use anyhow::{Context, Result, anyhow, bail};
use clap::Args;
use emberlab_dist::PublishedPolicy;
use emberlab_dist::cluster::{
    ActingMode, ActorOptions, ActorReport, LearnerOptions, LearnerReport, LocalPolicy, run_actor,
    run_learner,
};
use emberlab_dist::{Backoff, InferenceConfig};
use emberlab_run::{Flags, RunConfig, RunLearner, Trainee, devices};
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::time::Duration;

/// The config a learner folder was started with.
const SERVE_CONFIG: &str = "serve.toml";
/// The learner's last report, written when training finished.
pub const RESULT_FILE: &str = "result.json";

#[derive(Args, Debug, Clone)]
pub struct ServeCmd {
    /// Off-policy algorithm: dqn, sac or td3.
    pub algo: String,
    /// Environment id the actors run.
    #[arg(long)]
    pub env: String,
    /// The learner's folder: write-ahead log, checkpoint, result (an existing one resumes).
    #[arg(long, value_name = "DIR")]
    pub dir: PathBuf,
    /// Address to serve on.
    #[arg(long, default_value = "127.0.0.1:50051")]
    pub addr: String,
    /// A config file (TOML, as `ember zoo` prints) instead of the preset.
    #[arg(long, value_name = "FILE")]
    pub config: Option<PathBuf>,
    /// Override a config field, e.g. --set dqn.learning_rate=1e-3 (repeatable).
    #[arg(long = "set", value_name = "KEY=VALUE")]
    pub sets: Vec<String>,
    /// Transitions to train on.
    #[arg(long)]
    pub steps: Option<u64>,
    /// Seed of the networks and of replay sampling.
    #[arg(long)]
    pub seed: Option<u64>,
    /// Device: flex (default), ndarray, tch:cpu, tch:cuda:N (as compiled in).
    #[arg(long)]
    pub device: Option<String>,
    /// Serve inference and store transitions without training (benchmarks).
    #[arg(long)]
    pub no_train: bool,
    /// Seconds between checkpoints.
    #[arg(long, default_value_t = 5.0)]
    pub checkpoint_secs: f64,
    /// Evaluate the greedy policy every this many transitions (and at the end).
    #[arg(long, value_name = "TRANSITIONS")]
    pub eval_every: Option<u64>,
    /// Stop training once an evaluation's mean return reaches this.
    #[arg(long, value_name = "RETURN", allow_negative_numbers = true)]
    pub stop_reward: Option<f64>,
    /// Rows of one batched forward pass.
    #[arg(long, default_value_t = 64)]
    pub max_batch: usize,
    /// Microseconds a request waits for others to share its forward pass.
    #[arg(long, default_value_t = 500)]
    pub max_wait_us: u64,
    /// Seconds to keep serving after training finished (actors learn it and stop).
    #[arg(long, default_value_t = 2.0)]
    pub linger_secs: f64,
    /// Print the result as one JSON line.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub security: ServeSecurity,
    #[command(flatten)]
    pub limits: ServeLimits,
}

#[derive(Args, Debug, Clone)]
pub struct ActorCmd {
    /// The learner's address (host:port).
    #[arg(long, value_name = "ADDR")]
    pub connect: String,
    /// Environment id.
    #[arg(long)]
    pub env: String,
    /// Sub-environments stepped together.
    #[arg(long, default_value_t = 16)]
    pub envs: usize,
    /// This actor's id, unique among the learner's actors: a number, or `auto` for one
    /// derived from the host name (a pod's name in Kubernetes).
    #[arg(long, default_value = "0")]
    pub id: String,
    /// Act through the learner's central inference: the actor holds no model (default).
    #[arg(long, conflicts_with = "local")]
    pub central: bool,
    /// Act with a local copy of the policy, built from the learner's config and refreshed
    /// from its versioned publication every --sync-every vector steps.
    #[arg(long)]
    pub local: bool,
    /// Vector steps between two polls of the learner's policy (--local).
    #[arg(long, default_value_t = 8)]
    pub sync_every: usize,
    /// Device of a local policy copy (default: the learner's config's).
    #[arg(long)]
    pub device: Option<String>,
    /// Seed of the environments (default: the id).
    #[arg(long)]
    pub seed: Option<u64>,
    /// Send transitions every this many vector steps (0: act only).
    #[arg(long, default_value_t = 8)]
    pub send_every: usize,
    /// Stop after this many env steps (default: when the learner finishes).
    #[arg(long)]
    pub steps: Option<u64>,
    /// Stop after this many seconds.
    #[arg(long)]
    pub secs: Option<f64>,
    /// Give up after the learner has been unreachable this many seconds.
    #[arg(long, default_value_t = 60.0)]
    pub give_up_secs: f64,
    /// Print the report as one JSON line.
    #[arg(long)]
    pub json: bool,
    #[command(flatten)]
    pub security: ActorSecurity,
}

#[derive(Args, Debug, Clone)]
pub struct LaunchCmd {
    /// Actor processes.
    #[arg(long, default_value_t = 4)]
    pub actors: usize,
    /// Sub-environments per actor.
    #[arg(long, default_value_t = 16)]
    pub envs: usize,
    /// Send transitions every this many vector steps.
    #[arg(long, default_value_t = 8)]
    pub send_every: usize,
    /// Actors act with local copies of the policy (see `ember actor --local`).
    #[arg(long)]
    pub local: bool,
    #[command(flatten)]
    pub serve: ServeCmd,
}

fn seconds(what: &str, secs: f64) -> Result<Duration> {
    Duration::try_from_secs_f64(secs).map_err(|_| {
        anyhow!("invalid {what}: got {secs}, expected a non-negative number of seconds")
    })
}

/// Runs a learner until it has trained on `--steps` transitions.
///
/// # Errors
/// A bad config or flag, a folder started with another config, an algorithm that is not
/// off-policy, a learner error.
pub fn serve(cmd: &ServeCmd) -> Result<LearnerReport> {
    let security = cmd.security.resolve(&cmd.addr)?;
    let (limits, max_abs) = cmd.limits.resolve()?;
    let config = super::resolve_config(
        Some(&cmd.algo),
        Some(&cmd.env),
        cmd.config.as_deref(),
        &Flags {
            steps: cmd.steps,
            seed: cmd.seed,
            device: cmd.device.clone(),
            sets: cmd.sets.clone(),
            eval_every: cmd.eval_every,
            stop_reward: cmd.stop_reward,
            ..Flags::default()
        },
    )?;
    let schedule = config.off_policy.clone().ok_or_else(|| {
        anyhow!(
            "`ember serve` trains off-policy algorithms (dqn, sac, td3), not {}",
            config.algo
        )
    })?;
    check_folder(&cmd.dir, &config)?;
    let devices = devices(&config.device)?;
    let env = emberlab_env::make(&config.env)?;
    let (obs, act) = (env.observation_space().clone(), env.action_space().clone());
    let mut opts = LearnerOptions::new(&cmd.addr, &cmd.dir, &config.env, schedule);
    opts.train = !cmd.no_train;
    opts.checkpoint_every = seconds("--checkpoint-secs", cmd.checkpoint_secs)?;
    opts.linger = seconds("--linger-secs", cmd.linger_secs)?;
    opts.policy_config = config.to_toml();
    opts.security = security;
    opts.limits = limits;
    opts.max_abs = max_abs;
    opts.log_budget = cmd.limits.log_budget()?;
    opts.inference = InferenceConfig {
        max_batch: cmd.max_batch,
        max_wait: Duration::from_micros(cmd.max_wait_us),
        ..InferenceConfig::default()
    };
    let served = config
        .build_learner(&obs, &act, &devices)?
        .into_served()
        .map_err(|_| {
            anyhow!(
                "`ember serve` trains off-policy learners, not {}",
                config.algo
            )
        })?;
    let report =
        run_learner(served, &opts).with_context(|| format!("learner in {}", cmd.dir.display()))?;
    let json = report_json(&report);
    let path = cmd.dir.join(RESULT_FILE);
    std::fs::write(&path, format!("{json}\n"))
        .with_context(|| format!("cannot write {}", path.display()))?;
    Ok(report)
}

/// The first start writes the config into the folder; a restart must bring the same one.
fn check_folder(dir: &Path, config: &RunConfig) -> Result<()> {
    let path = dir.join(SERVE_CONFIG);
    let text = config.to_toml();
    match std::fs::read_to_string(&path) {
        Ok(old) if old == text => Ok(()),
        Ok(_) => bail!(
            "{} was started with another config ({}): restart with the same arguments, or \
             use a new --dir",
            dir.display(),
            path.display()
        ),
        Err(e) if e.kind() == std::io::ErrorKind::NotFound => {
            std::fs::create_dir_all(dir)
                .with_context(|| format!("cannot create {}", dir.display()))?;
            std::fs::write(&path, text).with_context(|| format!("cannot write {}", path.display()))
        }
        Err(e) => Err(e).with_context(|| format!("cannot read {}", path.display())),
    }
}

/// The learner's report as JSON.
pub fn report_json(r: &LearnerReport) -> serde_json::Value {
    serde_json::json!({
        "resumed": r.resumed,
        "env_steps": r.env_steps,
        "updates": r.updates,
        "version": r.version,
        "log_records": r.log_records,
        "log_rows": r.log_rows,
        "replayed_rows": r.replayed_rows,
        "eval_mean": r.eval.as_ref().map(|e| e.mean_return()),
        "eval_std": r.eval.as_ref().map(|e| e.std_return()),
        "evals": r.evals,
        "best_eval": r.best_eval,
        "quarantined": r.quarantined,
        "checkpoint_failures": r.checkpoint_failures,
        "failed_rounds": r.failed_rounds,
        "server": {
            "connections": r.server.connections,
            "streams": r.server.streams,
            "refused": {
                "token": r.server.refused.token,
                "invalid": r.server.refused.invalid,
                "streams": r.server.refused.streams,
                "connections": r.server.refused.connections,
                "unary_rate": r.server.refused.unary_rate,
                "handshakes": r.server.refused.handshakes,
                "idle_streams": r.server.refused.idle_streams,
                "accept_backoffs": r.server.refused.accept_backoffs,
            },
        },
        "secs": r.secs,
    })
}

/// Runs one actor.
///
/// # Errors
/// Bad flags, the learner unreachable for longer than `--give-up-secs`, an env error.
pub fn actor(cmd: &ActorCmd) -> Result<ActorReport> {
    let id = actor_id(&cmd.id)?;
    let mut opts = ActorOptions::new(&cmd.connect, &cmd.env, cmd.envs, id);
    opts.security = cmd.security.resolve()?;
    opts.seed = cmd.seed.unwrap_or(id);
    opts.send_every = cmd.send_every;
    opts.max_steps = cmd.steps;
    opts.max_time = cmd.secs.map(|s| seconds("--secs", s)).transpose()?;
    opts.backoff = Backoff {
        give_up_after: seconds("--give-up-secs", cmd.give_up_secs)?,
        ..Backoff::default()
    };
    let mode = if cmd.local {
        let device = cmd.device.clone();
        ActingMode::Local {
            build: Box::new(move |text: &str| local_policy(text, device.as_deref())),
            sync_every: cmd.sync_every,
        }
    } else {
        ActingMode::Central
    };
    run_actor(&opts, mode).with_context(|| format!("actor {id} of {}", cmd.connect))
}

/// A local copy of the learner a published config describes.
fn local_policy(config: &str, device: Option<&str>) -> emberlab_core::Result<Box<dyn LocalPolicy>> {
    let build = || -> Result<LocalLearner> {
        let mut config = RunConfig::parse(config).context("the learner's published config")?;
        if let Some(d) = device {
            config.device = d.to_string();
        }
        let env = emberlab_env::make(&config.env)?;
        let (obs, act) = (env.observation_space(), env.action_space());
        let learner = config.build_learner(obs, act, &devices(&config.device)?)?;
        Ok(LocalLearner {
            learner,
            total: config.total_steps(),
        })
    };
    build()
        .map(|l| Box::new(l) as Box<dyn LocalPolicy>)
        .map_err(|e| emberlab_core::Error::Unavailable {
            what: "a local copy of the learner's policy".into(),
            hint: format!("{e:#}"),
        })
}

/// An off-policy learner used only to act, loading the learner's published weights.
struct LocalLearner {
    learner: Box<dyn RunLearner>,
    total: u64,
}

impl LocalPolicy for LocalLearner {
    fn agent(&mut self) -> &mut dyn emberlab_algo::Agent {
        self.learner.agent()
    }

    fn load(&mut self, p: &PublishedPolicy) -> emberlab_core::Result<()> {
        let weights = self.learner.policy_weights().ok_or_else(|| {
            emberlab_core::Error::invalid(
                "published policy",
                "an on-policy learner",
                "an off-policy learner (dqn, sac, td3, ...)",
            )
        })?;
        weights.load_policy_weights(&p.params)?;
        if let Trainee::OffPolicy(l) = self.learner.trainee() {
            l.on_env_steps(p.env_steps, self.total);
        }
        Ok(())
    }
}

/// `--id`: a number, or `auto` (FNV-1a of the host name, below 2^53 so JSON keeps it).
///
/// # Errors
/// Neither a number nor `auto`; `auto` without a host name.
pub fn actor_id(id: &str) -> Result<u64> {
    if id != "auto" {
        return id
            .parse()
            .map_err(|_| anyhow!("invalid --id `{id}`: expected a number or `auto`"));
    }
    let host = std::env::var("HOSTNAME")
        .ok()
        .filter(|h| !h.is_empty())
        .or_else(|| std::fs::read_to_string("/proc/sys/kernel/hostname").ok())
        .map(|h| h.trim().to_string())
        .filter(|h| !h.is_empty())
        .ok_or_else(|| anyhow!("--id auto: this machine has no host name; pass a number"))?;
    let hash = host.bytes().fold(0xcbf2_9ce4_8422_2325u64, |h, b| {
        (h ^ u64::from(b)).wrapping_mul(0x0000_0100_0000_01b3)
    });
    Ok(hash >> 11)
}

/// An actor's report as JSON.
pub fn actor_json(id: u64, r: &ActorReport) -> serde_json::Value {
    serde_json::json!({
        "actor": id,
        "env_steps": r.env_steps,
        "episodes": r.episodes,
        "recent_return": r.recent_return,
        "acked_batches": r.acked_batches,
        "acked_rows": r.acked_rows,
        "dropped_rows": r.dropped_rows,
        "reconnects": r.reconnects,
        "learner_finished": r.learner_finished,
        "version": r.version,
        "policy_lag_mean": r.policy_lag_mean,
        "policy_lag_max": r.policy_lag_max,
        "act_p50_us": r.act_p50_us,
        "act_p99_us": r.act_p99_us,
        "secs": r.secs,
        "env_steps_per_sec": r.env_steps as f64 / r.secs.max(1e-9),
    })
}

/// Starts a learner and `--actors` actor processes of this program on a free loopback
/// port, waits for the learner to finish and the actors to stop, and returns the learner's
/// report and the actors' JSON lines.
///
/// # Errors
/// A process that cannot be started, or one that fails (its exit status and last words).
pub fn launch(cmd: &LaunchCmd) -> Result<(serde_json::Value, Vec<serde_json::Value>)> {
    let exe = std::env::current_exe().context("cannot find the ember executable")?;
    let mut serve = cmd.serve.clone();
    if serve.addr.ends_with(":0") || serve.addr == "127.0.0.1:50051" {
        serve.addr = format!("127.0.0.1:{}", free_port()?);
    }
    let (security, actor_security) = serve.security.for_launch(&serve.dir)?;
    serve.security = security;
    let learner = spawn(&exe, &serve_args(&serve), "learner")?;
    let actors = (0..cmd.actors)
        .map(|id| {
            let mut args = vec![
                "actor".to_string(),
                "--connect".into(),
                serve.addr.clone(),
                "--env".into(),
                serve.env.clone(),
                "--envs".into(),
                cmd.envs.to_string(),
                "--id".into(),
                id.to_string(),
                "--send-every".into(),
                cmd.send_every.to_string(),
                "--json".into(),
            ];
            if cmd.local {
                args.push("--local".into());
            }
            args.extend(actor_security.iter().cloned());
            if let Some(seed) = serve.seed {
                args.extend(["--seed".into(), (seed * 1000 + id as u64).to_string()]);
            }
            spawn(&exe, &args, &format!("actor {id}"))
        })
        .collect::<Result<Vec<_>>>()?;
    let learner = finish(learner, "learner")?;
    let reports = actors
        .into_iter()
        .enumerate()
        .map(|(id, a)| finish(a, &format!("actor {id}")))
        .collect::<Result<Vec<_>>>()?;
    Ok((learner, reports))
}

/// `ember serve` arguments for `cmd`, with `--json`.
pub fn serve_args(cmd: &ServeCmd) -> Vec<String> {
    let mut a = vec![
        "serve".to_string(),
        cmd.algo.clone(),
        "--env".into(),
        cmd.env.clone(),
        "--dir".into(),
        cmd.dir.display().to_string(),
        "--addr".into(),
        cmd.addr.clone(),
        "--checkpoint-secs".into(),
        cmd.checkpoint_secs.to_string(),
        "--max-batch".into(),
        cmd.max_batch.to_string(),
        "--max-wait-us".into(),
        cmd.max_wait_us.to_string(),
        "--linger-secs".into(),
        cmd.linger_secs.to_string(),
        "--json".into(),
    ];
    if let Some(c) = &cmd.config {
        a.extend(["--config".into(), c.display().to_string()]);
    }
    for s in &cmd.sets {
        a.extend(["--set".into(), s.clone()]);
    }
    for (flag, v) in [
        ("--steps", cmd.steps),
        ("--seed", cmd.seed),
        ("--eval-every", cmd.eval_every),
    ] {
        if let Some(v) = v {
            a.extend([flag.into(), v.to_string()]);
        }
    }
    if let Some(r) = cmd.stop_reward {
        a.extend(["--stop-reward".into(), r.to_string()]);
    }
    if let Some(d) = &cmd.device {
        a.extend(["--device".into(), d.clone()]);
    }
    if cmd.no_train {
        a.push("--no-train".into());
    }
    a.extend(cmd.security.args());
    a
}

fn spawn(exe: &Path, args: &[String], what: &str) -> Result<Child> {
    Command::new(exe)
        .args(args)
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .with_context(|| format!("cannot start the {what} ({})", exe.display()))
}

/// Waits for a child and parses the JSON of its last stdout line.
fn finish(child: Child, what: &str) -> Result<serde_json::Value> {
    let out = child
        .wait_with_output()
        .with_context(|| format!("waiting for the {what}"))?;
    if !out.status.success() {
        let err = String::from_utf8_lossy(&out.stderr);
        bail!(
            "the {what} failed ({}): {}",
            out.status,
            err.lines().last().unwrap_or("no message")
        );
    }
    let text = String::from_utf8_lossy(&out.stdout);
    let line = text.lines().last().unwrap_or_default();
    serde_json::from_str(line).with_context(|| format!("the {what} printed `{line}`"))
}

fn free_port() -> Result<u16> {
    Ok(std::net::TcpListener::bind("127.0.0.1:0")
        .context("no free loopback port")?
        .local_addr()?
        .port())
}
