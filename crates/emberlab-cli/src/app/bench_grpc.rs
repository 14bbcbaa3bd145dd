//! `ember bench grpc`: env steps per second through a learner's central inference over
//! loopback gRPC, for 1, 4 and 16 actor processes of 16 CartPole-v1 environments each,
//! with the round trip's p50 / p99; and transitions acknowledged per second with the
//! write-ahead log on (fsync per batch). The 4- and 16-actor runs and the ingest run are
//! repeated with TLS and the token on (`_tls`), as a cluster started by `ember launch`.

use super::figure::Figure;
use anyhow::{Context, Result, bail};
use emberlab_algo::{ActionBuf, Devices, DqnConfig};
use emberlab_backend::DeviceSpec;
use emberlab_dist::cluster::TransitionRows;
use emberlab_dist::{
    ActionKind, GrpcLimits, GrpcServer, InferenceConfig, InferenceServer, LearnerServices,
    SelfSigned, ServerSecurity, ServerTls, Token, TransitionIngest, TransitionLog,
};
use std::process::{Command, Stdio};
use std::time::Duration;

const ENV: &str = "CartPole-v1";
const ENVS: usize = 16;

/// The figures, each from actors running about `secs` seconds.
///
/// # Errors
/// The learner cannot be served, an actor process fails.
pub fn grpc(secs: f64) -> Result<Vec<Figure>> {
    let figure = |name: String, value: f64, unit: &'static str| Figure { name, value, unit };
    let mut figures = Vec::new();
    for (actors, tls) in [(1, false), (4, false), (4, true), (16, false), (16, true)] {
        let run = Cluster::start(actors * ENVS, tls)?.run(actors, secs, 0)?;
        let id = format!("grpc/central_{actors}x{ENVS}{}", suffix(tls));
        figures.extend([
            figure(id.clone(), run.env_steps_per_sec, "env steps/s"),
            figure(format!("{id}_p50"), run.p50_us, "µs"),
            figure(format!("{id}_p99"), run.p99_us, "µs"),
        ]);
    }
    for tls in [false, true] {
        let run = Cluster::start(4 * ENVS, tls)?.run(4, secs, 1)?;
        let id = format!("grpc/ingest_4x{ENVS}_wal{}", suffix(tls));
        figures.extend([
            figure(id.clone(), run.acked_per_sec, "transitions/s"),
            figure(
                format!("{id}_env_steps"),
                run.env_steps_per_sec,
                "env steps/s",
            ),
        ]);
    }
    Ok(figures)
}

fn suffix(tls: bool) -> &'static str {
    if tls { "_tls" } else { "" }
}

/// A learner in this process: CartPole's zoo DQN network behind central inference and
/// the transition stream into a log in a temporary folder.
struct Cluster {
    _grpc: GrpcServer,
    _inference: InferenceServer<emberlab_algo::Dqn>,
    addr: String,
    dir: std::path::PathBuf,
    /// The actors' security flags.
    actor_flags: Vec<String>,
}

struct Run {
    env_steps_per_sec: f64,
    acked_per_sec: f64,
    p50_us: f64,
    p99_us: f64,
}

impl Cluster {
    /// With `tls`, a self-signed pair and a token in its folder, as `ember launch` makes.
    fn start(max_batch: usize, tls: bool) -> Result<Self> {
        let env = emberlab_env::make(ENV)?;
        let (obs, act) = (env.observation_space(), env.action_space());
        let (config, _) = DqnConfig::zoo(ENV)?;
        let dqn = config.build(obs, act, &Devices::same(&DeviceSpec::Flex.device()?))?;
        let inference = InferenceServer::spawn(
            dqn,
            ActionBuf::for_space(act),
            InferenceConfig {
                max_batch,
                max_wait: Duration::from_millis(2),
                ..InferenceConfig::default()
            },
        )?;
        let dir = std::env::temp_dir().join(format!("ember-bench-grpc-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&dir);
        std::fs::create_dir_all(&dir)
            .with_context(|| format!("cannot create {}", dir.display()))?;
        let (log, _) = TransitionLog::open(&dir.join("transitions.wal"))?;
        let rows = TransitionRows {
            obs_dim: obs.flat_dim(),
            act_dim: 1,
        };
        let (ingest, rx) = TransitionIngest::new(log, rows.width() as u32, 64);
        std::thread::spawn(move || for _ in rx {});
        let (security, actor_flags) = if tls {
            let (pair, token) = (
                SelfSigned::generate(&["localhost", "127.0.0.1"])?,
                Token::generate()?,
            );
            let files = pair.write(&dir.join("security"), &token)?;
            let security = ServerSecurity {
                token: Some(token),
                tls: Some(ServerTls::from_pem(pair.cert_pem, pair.key_pem)),
            };
            let flags = ["--token-file", "--tls-ca"]
                .iter()
                .zip([&files.token, &files.ca])
                .flat_map(|(f, p)| [f.to_string(), p.display().to_string()])
                .collect();
            (security, flags)
        } else {
            (ServerSecurity::insecure(), vec!["--insecure".to_string()])
        };
        let services = LearnerServices {
            inference: inference.handle(),
            kind: ActionKind::Discrete,
            ingest: Some(ingest),
            policy: None,
        };
        let grpc = GrpcServer::learner_services_secured(
            "127.0.0.1:0",
            services,
            GrpcLimits::default(),
            &security,
        )?;
        Ok(Cluster {
            addr: grpc.local_addr().to_string(),
            _grpc: grpc,
            _inference: inference,
            dir,
            actor_flags,
        })
    }

    /// `actors` actor processes of this program for `secs` seconds, sending transitions
    /// every `send_every` vector steps (0: none).
    fn run(&self, actors: usize, secs: f64, send_every: usize) -> Result<Run> {
        let exe = std::env::current_exe().context("cannot find the ember executable")?;
        let children = (0..actors)
            .map(|id| {
                Command::new(&exe)
                    .args(["actor", "--connect", &self.addr, "--env", ENV])
                    .args(["--envs", &ENVS.to_string(), "--id", &id.to_string()])
                    .args(["--send-every", &send_every.to_string()])
                    .args(["--secs", &secs.to_string(), "--json"])
                    .args(&self.actor_flags)
                    .stdout(Stdio::piped())
                    .stderr(Stdio::piped())
                    .spawn()
                    .context("cannot start an actor process")
            })
            .collect::<Result<Vec<_>>>()?;
        let mut run = Run {
            env_steps_per_sec: 0.0,
            acked_per_sec: 0.0,
            p50_us: 0.0,
            p99_us: 0.0,
        };
        let mut p50s = Vec::new();
        for child in children {
            let out = child.wait_with_output()?;
            if !out.status.success() {
                bail!(
                    "an actor failed: {}",
                    String::from_utf8_lossy(&out.stderr).trim()
                );
            }
            let text = String::from_utf8_lossy(&out.stdout);
            let r: serde_json::Value = serde_json::from_str(text.lines().last().unwrap_or(""))
                .with_context(|| format!("actor printed `{text}`"))?;
            let field = |k: &str| r[k].as_f64().unwrap_or(0.0);
            let secs = field("secs").max(1e-9);
            run.env_steps_per_sec += field("env_steps") / secs;
            run.acked_per_sec += field("acked_rows") / secs;
            run.p99_us = run.p99_us.max(field("act_p99_us"));
            p50s.push(field("act_p50_us"));
        }
        p50s.sort_by(f64::total_cmp);
        run.p50_us = p50s[p50s.len() / 2];
        Ok(run)
    }
}

impl Drop for Cluster {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.dir);
    }
}
