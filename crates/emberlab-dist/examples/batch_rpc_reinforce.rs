//! PyTorch's "batch RPC" tutorial, first program, on emberlab-dist: an agent trains
//! REINFORCE on CartPole-v1 from N observer **processes**; each observer asks the agent
//! for one action per step over gRPC, and sends its episode back when it ends. With
//! `--mode batched` the agent answers the observers' requests with one forward pass per
//! batch (up to N rows); with `--mode single` every request gets its own forward pass.
//!
//! ```text
//! cargo run --release -p emberlab-dist --example batch_rpc_reinforce -- --observers 8 --mode batched
//! cargo run --release -p emberlab-dist --example batch_rpc_reinforce -- --observers 8 --mode single
//! ```
//!
//! `--hidden 1024,1024` gives the policy two wide layers (a model whose forward pass costs
//! more than the request around it). Prints the running reward per round of N episodes (as the tutorial does), then one
//! summary line: rounds, seconds, env steps per second, mean forward-pass batch.

use emberlab_algo::{ActionBuf, Agent, Devices, OnPolicyLearner, ReinforceConfig, RolloutBatch};
use emberlab_core::Env;
use emberlab_core::{Error, Result, Transition};
use emberlab_dist::cluster::TransitionRows;
use emberlab_dist::{
    ActionKind, Backoff, GrpcLimits, GrpcServer, InferenceConfig, InferenceServer, RemoteActor,
    TransitionIngest, TransitionLog, TransitionSender,
};
use std::process::{Child, Command, Stdio};
use std::time::{Duration, Instant};

const ENV: &str = "CartPole-v1";
const GAMMA: f32 = 0.99;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    if args.get(1).map(String::as_str) == Some("observer") {
        return observer(&args[2], args[3].parse().unwrap_or(0));
    }
    let flag = |name: &str, default: &str| -> String {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1).cloned())
            .unwrap_or_else(|| default.to_string())
    };
    let observers: usize = flag("--observers", "8").parse().unwrap_or(8);
    let rounds: usize = flag("--rounds", "300").parse().unwrap_or(300);
    let hidden: Vec<usize> = flag("--hidden", "128")
        .split(',')
        .map(|h| h.trim().parse())
        .collect::<std::result::Result<_, _>>()
        .map_err(|_| {
            Error::invalid(
                "--hidden",
                flag("--hidden", ""),
                "widths like 128 or 512,512",
            )
        })?;
    let batched = match flag("--mode", "batched").as_str() {
        "batched" => true,
        "single" => false,
        other => return Err(Error::invalid("--mode", other, "batched or single")),
    };
    agent(observers, rounds, batched, hidden)
}

/// The layout of CartPole transitions on the wire.
fn layout() -> TransitionRows {
    TransitionRows {
        obs_dim: 4,
        act_dim: 1,
    }
}

/// The agent: REINFORCE behind central inference; one update per round of N episodes.
fn agent(observers: usize, rounds: usize, batched: bool, hidden: Vec<usize>) -> Result<()> {
    let env = emberlab_env::make(ENV)?;
    let device = emberlab_backend::DeviceSpec::Flex.device()?;
    let config = ReinforceConfig {
        hidden,
        baseline: false,
        learning_rate: 1e-2,
        ..ReinforceConfig::default()
    };
    let pg = config.build(
        env.observation_space(),
        env.action_space(),
        &Devices::same(&device),
    )?;
    let inference = InferenceServer::spawn(
        pg,
        ActionBuf::Discrete(vec![]),
        InferenceConfig {
            max_batch: if batched { observers } else { 1 },
            max_wait: Duration::from_millis(if batched { 2 } else { 0 }),
            ..InferenceConfig::default()
        },
    )?;
    let dir = std::env::temp_dir().join(format!("ember-batch-rpc-{}", std::process::id()));
    std::fs::create_dir_all(&dir).map_err(|e| Error::Io {
        path: dir.clone(),
        source: e,
    })?;
    let (mut log, _) = TransitionLog::open(&dir.join("episodes.wal"))?;
    log.set_sync(false); // episodes are consumed at once; nothing to recover here
    let (ingest, episodes) = TransitionIngest::new(log, layout().width() as u32, observers);
    let grpc = GrpcServer::learner_with_transitions(
        "127.0.0.1:0",
        inference.handle(),
        ActionKind::Discrete,
        Some(ingest.clone()),
        GrpcLimits::default(),
    )?;
    let addr = grpc.local_addr().to_string();
    let exe = std::env::current_exe().map_err(|e| Error::Io {
        path: "current_exe".into(),
        source: e,
    })?;
    let children: Vec<Child> = (0..observers)
        .map(|id| {
            Command::new(&exe)
                .args(["observer", &addr, &id.to_string()])
                .stdout(Stdio::null())
                .spawn()
                .map_err(|e| Error::Io {
                    path: exe.clone(),
                    source: e,
                })
        })
        .collect::<Result<_>>()?;

    let start = Instant::now();
    let (mut running, mut steps, mut done_rounds) = (10.0f64, 0usize, 0);
    let mut batch = RolloutBatch::default();
    for round in 0..rounds {
        batch = RolloutBatch {
            obs: std::mem::take(&mut batch.obs),
            actions: std::mem::take(&mut batch.actions),
            returns: std::mem::take(&mut batch.returns),
            ..RolloutBatch::default()
        };
        batch.obs.clear();
        batch.actions.clear();
        batch.returns.clear();
        let mut reward = 0.0;
        for _ in 0..observers {
            let episode = episodes
                .recv_timeout(Duration::from_secs(30))
                .map_err(|_| Error::Unavailable {
                    what: "the observers' episodes".into(),
                    hint: "none for 30 s: did the observer processes fail?".into(),
                })?;
            reward += push_episode(&episode.values, &mut batch)? / observers as f64;
        }
        steps += batch.returns.len();
        batch.len = batch.returns.len();
        batch.advantages = batch.returns.clone();
        let update = batch.clone();
        inference.update(move |pg| {
            let step = OnPolicyLearner::progress(pg).updates;
            pg.update(&update, step)?;
            OnPolicyLearner::progress(pg).updates += 1;
            Ok(())
        })?;
        running = 0.05 * reward + 0.95 * running;
        done_rounds = round + 1;
        if round % 10 == 0 {
            println!("round {round:>4}\tlast reward {reward:>6.1}\trunning reward {running:>6.1}");
        }
        if running > 475.0 {
            println!("solved: running reward {running:.1} at round {round}");
            break;
        }
    }
    let secs = start.elapsed().as_secs_f64();
    ingest.finish();
    std::thread::spawn(move || for _ in episodes {});
    for mut c in children {
        // Observers stop at their next acknowledgement ("finished").
        let _ = c.wait();
    }
    let stats = inference.stats();
    println!(
        "{} observers, {}: {done_rounds} rounds in {secs:.2} s, {:.0} env steps/s, {:.0} \
         requests/s, mean batch {:.2}, running reward {running:.1}",
        observers,
        if batched {
            "batched"
        } else {
            "one request per forward"
        },
        steps as f64 / secs,
        stats.requests as f64 / secs,
        stats.mean_batch()
    );
    drop(grpc);
    let _ = std::fs::remove_dir_all(&dir);
    Ok(())
}

/// Appends one episode's rows with their discounted returns; the episode's reward.
fn push_episode(values: &[f32], batch: &mut RolloutBatch) -> Result<f64> {
    let rows: Vec<Transition<'_>> = layout().rows(values)?.collect();
    let first = batch.returns.len();
    let mut g = 0.0f32;
    batch.returns.resize(first + rows.len(), 0.0);
    for (i, t) in rows.iter().enumerate().rev() {
        g = t.reward + GAMMA * g;
        batch.returns[first + i] = g;
    }
    for t in &rows {
        batch.obs.extend_from_slice(t.obs);
        batch.actions.extend_from_slice(t.action);
    }
    Ok(rows.iter().map(|t| f64::from(t.reward)).sum())
}

/// An observer process: plays episodes with actions from the agent, sends each episode
/// when it ends, stops when the agent says it has finished.
fn observer(addr: &str, id: u64) -> Result<()> {
    let backoff = Backoff::default();
    let mut actor = RemoteActor::connect(addr, backoff)?;
    let mut sender = TransitionSender::connect(
        addr,
        id,
        std::process::id().into(),
        layout().width() as u32,
        backoff,
    )?;
    let mut env = emberlab_env::make(ENV)?;
    let (mut obs, mut next) = (vec![0.0; 4], vec![0.0; 4]);
    let mut actions = ActionBuf::Discrete(vec![]);
    let mut episode = Vec::new();
    for i in 0u64.. {
        env.reset_into(Some(id * 1_000_000 + i), &mut obs)?;
        episode.clear();
        loop {
            actor.act(&obs, true, &mut actions)?;
            let a = actions.as_vec_actions().get(0, 1);
            let step = env.step_into(a, &mut next)?;
            let action = [actions.discrete_mut("observer")?[0] as f32];
            layout().push(
                &Transition {
                    obs: &obs,
                    action: &action,
                    reward: step.reward as f32,
                    next_obs: &next,
                    terminated: step.terminated,
                    truncated: step.truncated,
                },
                &mut episode,
            )?;
            obs.copy_from_slice(&next);
            if step.terminated || step.truncated {
                break;
            }
        }
        sender.send(&episode)?;
        if sender.learner_finished() {
            break;
        }
    }
    Ok(())
}
