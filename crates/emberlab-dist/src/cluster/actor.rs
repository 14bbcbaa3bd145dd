//! The actor process: steps a vector of environments, acts through the learner's central
//! inference and streams its transitions back.

use super::latency::Latencies;
use super::rows::TransitionRows;
use crate::grpc::{
    ActionKind, Backoff, ClientSecurity, PolicyClient, PublishedPolicy, RemoteActor,
    TransitionSender,
};
use emberlab_algo::{ActionBuf, Agent, EpisodeTracker, stored_action_dim};
use emberlab_core::{Error, Result, Space, Transition};
use emberlab_env::{SyncVecEnv, VecEnv};
use std::time::{Duration, Instant};

/// What an actor process runs.
#[derive(Clone, Debug)]
pub struct ActorOptions {
    /// The learner's address (`host:port`).
    pub addr: String,
    /// Registered environment id.
    pub env_id: String,
    /// Sub-environments stepped together (one inference request per step of all).
    pub envs: usize,
    /// This actor's id (unique among the learner's actors: resends are recognised by it).
    pub actor: u64,
    /// Seed of the environments (each reconnect resets them with the next seed).
    pub seed: u64,
    /// Send the transitions every this many vector steps (0: act only, send nothing).
    pub send_every: usize,
    /// Stop after this many env steps (otherwise when the learner says it has finished).
    pub max_steps: Option<u64>,
    /// Stop after this long.
    pub max_time: Option<Duration>,
    /// Reconnection policy.
    pub backoff: Backoff,
    /// The token and TLS settings every connection to the learner uses.
    pub security: ClientSecurity,
}

impl ActorOptions {
    /// Actor `actor` of `envs` copies of `env_id` against `addr`, sending every 8 vector
    /// steps, until the learner finishes.
    pub fn new(addr: &str, env_id: &str, envs: usize, actor: u64) -> Self {
        ActorOptions {
            addr: addr.into(),
            env_id: env_id.into(),
            envs,
            actor,
            seed: actor,
            send_every: 8,
            max_steps: None,
            max_time: None,
            backoff: Backoff::default(),
            security: ClientSecurity::insecure(),
        }
    }
}

/// An agent an actor acts with on its own CPU, loading the weights the learner publishes.
pub trait LocalPolicy: Send {
    /// The agent that chooses the actions.
    fn agent(&mut self) -> &mut dyn Agent;

    /// Loads a published policy (its `env_steps` drive exploration schedules).
    ///
    /// # Errors
    /// Weights that do not fit the agent.
    fn load(&mut self, policy: &PublishedPolicy) -> Result<()>;
}

/// Builds a [`LocalPolicy`] from the config the learner publishes.
pub type LocalPolicyFactory = Box<dyn FnOnce(&str) -> Result<Box<dyn LocalPolicy>>>;

/// Where an actor's actions come from.
pub enum ActingMode {
    /// The learner's central inference: the actor holds no model.
    Central,
    /// A local copy of the policy, refreshed from the learner's publication every
    /// `sync_every` vector steps.
    Local {
        /// Builds the copy from the learner's config.
        build: LocalPolicyFactory,
        /// Vector steps between two polls of the learner's policy.
        sync_every: usize,
    },
}

/// The acting side of a running actor.
enum Acting {
    Central(RemoteActor),
    Local {
        policy: Box<dyn LocalPolicy>,
        client: PolicyClient,
        sync_every: u64,
        held: u64,
        lags: Vec<u64>,
    },
}

impl Acting {
    fn connect(opts: &ActorOptions, mode: ActingMode) -> Result<Self> {
        match mode {
            ActingMode::Central => Ok(Acting::Central(RemoteActor::connect_secured(
                &opts.addr,
                opts.backoff,
                opts.security.clone(),
            )?)),
            ActingMode::Local { build, sync_every } => {
                let mut client =
                    PolicyClient::connect_secured(&opts.addr, opts.backoff, opts.security.clone())?;
                let (_, first) = client.fetch()?;
                let first = first.ok_or_else(|| Error::Unavailable {
                    what: "the learner's first policy".into(),
                    hint: "the learner answered without weights".into(),
                })?;
                let mut policy = build(&first.config)?;
                policy.load(&first)?;
                Ok(Acting::Local {
                    policy,
                    client,
                    sync_every: sync_every.max(1) as u64,
                    held: first.version,
                    lags: Vec::new(),
                })
            }
        }
    }

    fn obs_dim(&mut self) -> usize {
        match self {
            Acting::Central(r) => r.obs_dim(),
            Acting::Local { policy, .. } => policy.agent().obs_dim(),
        }
    }

    /// Actions for `obs` at vector step `step`; the policy version that chose them.
    fn act(&mut self, obs: &[f32], step: u64, out: &mut ActionBuf) -> Result<u64> {
        match self {
            Acting::Central(r) => r.act_remote(obs, true, out),
            Acting::Local {
                policy,
                client,
                sync_every,
                held,
                lags,
            } => {
                if step > 0 && step.is_multiple_of(*sync_every) {
                    let (latest, fresh) = client.fetch()?;
                    lags.push(latest.saturating_sub(*held));
                    if let Some(p) = fresh {
                        policy.load(&p)?;
                        *held = p.version;
                    }
                }
                policy.agent().act(obs, true, out)?;
                Ok(*held)
            }
        }
    }

    fn reconnects(&self) -> u64 {
        match self {
            Acting::Central(r) => r.reconnects(),
            Acting::Local { client, .. } => client.reconnects(),
        }
    }

    /// Mean and largest policy lag (learner's version minus the acting one, in the
    /// learner's updates) seen at the polls.
    fn lag(&self) -> (f64, u64) {
        match self {
            Acting::Central(_) => (0.0, 0),
            Acting::Local { lags, .. } => (
                lags.iter().sum::<u64>() as f64 / lags.len().max(1) as f64,
                lags.iter().copied().max().unwrap_or(0),
            ),
        }
    }
}

/// What an actor process did.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ActorReport {
    /// Env steps taken (all sub-environments).
    pub env_steps: u64,
    /// Episodes completed.
    pub episodes: u64,
    /// Mean return of the last (up to) 20 completed episodes.
    pub recent_return: f64,
    /// Transition batches acknowledged by the learner.
    pub acked_batches: u64,
    /// Transitions acknowledged by the learner (durable in its log).
    pub acked_rows: u64,
    /// Transitions of partial episodes dropped because the learner restarted before they
    /// were sent.
    pub dropped_rows: u64,
    /// Reconnections to the learner (inference and transition streams).
    pub reconnects: u64,
    /// The learner said it has finished training.
    pub learner_finished: bool,
    /// The newest policy version that chose an action.
    pub version: u64,
    /// Mean policy lag at the polls of a local actor: the learner's version minus the one
    /// acting, in updates (0 with central inference: every answer comes from the newest).
    pub policy_lag_mean: f64,
    /// The largest policy lag seen.
    pub policy_lag_max: u64,
    /// Median round-trip of one inference request, microseconds.
    pub act_p50_us: f64,
    /// 99th percentile of the round-trip, microseconds.
    pub act_p99_us: f64,
    /// Wall time, seconds.
    pub secs: f64,
}

/// Runs an actor acting as `mode` says until `max_steps`, `max_time`, or the learner's
/// "finished"; when the learner restarts, the actor reconnects (with `backoff`), drops the
/// transitions of its unsent partial episodes, resets its environments and goes on.
///
/// # Errors
/// An unknown environment, spaces other than the learner's, the learner unreachable for
/// longer than `backoff.give_up_after`, a refused batch, an environment error.
pub fn run_actor(opts: &ActorOptions, mode: ActingMode) -> Result<ActorReport> {
    let start = Instant::now();
    if opts.envs == 0 {
        return Err(Error::invalid("actor environments", 0, ">= 1"));
    }
    let mut env = SyncVecEnv::from_id(&opts.env_id, opts.envs)?;
    let space = env.single_action_space().clone();
    let layout = TransitionRows {
        obs_dim: env.single_observation_space().flat_dim(),
        act_dim: stored_action_dim(&space),
    };
    let mut acting = Acting::connect(opts, mode)?;
    let served = acting.obs_dim();
    if served != layout.obs_dim {
        return Err(Error::invalid(
            "actor environment",
            format!(
                "{} (observations of {} values)",
                opts.env_id, layout.obs_dim
            ),
            format!("an environment of the learner's observation width, {served}"),
        ));
    }
    let kind = match space {
        Space::Discrete(_) => ActionKind::Discrete,
        Space::Box(_) => ActionKind::Continuous,
    };
    if let Acting::Central(remote) = &acting
        && remote.action_kind() != kind
    {
        return Err(Error::invalid(
            "the learner's action kind",
            format!("{:?}", remote.action_kind()),
            format!("{kind:?} for {}", opts.env_id),
        ));
    }
    let mut sender = if opts.send_every > 0 {
        Some(TransitionSender::connect_secured(
            &opts.addr,
            opts.actor,
            run_id(),
            layout.width() as u32,
            opts.backoff,
            opts.security.clone(),
        )?)
    } else {
        None
    };
    let n = opts.envs;
    let mut seed = opts.seed;
    let mut obs = env.reset(Some(seed))?.to_vec();
    let mut resetting = vec![false; n];
    let mut episodes = EpisodeTracker::new(n);
    let mut actions = ActionBuf::for_space(&space);
    let (mut pending, mut row) = (Vec::new(), Vec::new());
    let mut latencies = Latencies::new();
    let mut report = ActorReport::default();
    let mut seen_reconnects = 0;
    let mut vector_steps = 0u64;
    loop {
        let out_of_steps = opts.max_steps.is_some_and(|m| report.env_steps >= m);
        let out_of_time = opts.max_time.is_some_and(|t| start.elapsed() >= t);
        if out_of_steps || out_of_time || report.learner_finished {
            break;
        }
        let asked = Instant::now();
        report.version = acting.act(&obs, vector_steps, &mut actions)?;
        latencies.record(asked.elapsed().as_micros().min(u32::MAX as u128) as u32);
        let reconnects =
            acting.reconnects() + sender.as_ref().map_or(0, TransitionSender::reconnects);
        if reconnects != seen_reconnects {
            // The learner restarted: start fresh episodes under the policy it serves now.
            seen_reconnects = reconnects;
            report.dropped_rows += (pending.len() / layout.width()) as u64;
            pending.clear();
            seed += 1_000_003;
            obs.copy_from_slice(env.reset(Some(seed))?);
            resetting.fill(false);
            episodes.drop_running();
            continue;
        }
        let step = env.step(actions.as_vec_actions())?;
        let o = layout.obs_dim;
        for i in 0..n {
            if resetting[i] {
                resetting[i] = false;
                continue;
            }
            actions.write_row(i, layout.act_dim, &mut row);
            let t = Transition {
                obs: &obs[i * o..(i + 1) * o],
                action: &row,
                reward: step.rewards[i] as f32,
                next_obs: &step.obs[i * o..(i + 1) * o],
                terminated: step.terminated[i],
                truncated: step.truncated[i],
            };
            if sender.is_some() {
                layout.push(&t, &mut pending)?;
            }
            let done = step.terminated[i] || step.truncated[i];
            episodes.record(i, step.env_rewards()[i], done);
            resetting[i] = done;
        }
        obs.copy_from_slice(step.obs);
        report.env_steps += n as u64;
        vector_steps += 1;
        if let Some(sender) = sender.as_mut()
            && vector_steps.is_multiple_of(opts.send_every as u64)
            && !pending.is_empty()
        {
            sender.send(&pending)?;
            report.acked_batches += 1;
            report.acked_rows += (pending.len() / layout.width()) as u64;
            pending.clear();
            report.learner_finished = sender.learner_finished();
        }
    }
    report.reconnects =
        acting.reconnects() + sender.as_ref().map_or(0, TransitionSender::reconnects);
    (report.policy_lag_mean, report.policy_lag_max) = acting.lag();
    report.episodes = episodes.episodes();
    let recent = episodes.recent_mean();
    report.recent_return = if recent.is_nan() { 0.0 } else { recent };
    report.act_p50_us = latencies.quantile(0.50);
    report.act_p99_us = latencies.quantile(0.99);
    report.secs = start.elapsed().as_secs_f64();
    Ok(report)
}

/// A run id new for every start of an actor process.
fn run_id() -> u64 {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map_or(0, |d| d.as_nanos() as u64);
    nanos ^ (u64::from(std::process::id()) << 40)
}
