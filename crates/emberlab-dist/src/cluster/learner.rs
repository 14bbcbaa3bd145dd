//! The learner process: serves central inference and the transition stream over gRPC, and
//! trains an off-policy learner from the transitions the actors stream in.

use super::rows::{DEFAULT_MAX_ABS, RowRules, TransitionRows};
use crate::grpc::{
    ActionKind, BatchRules, GrpcLimits, GrpcServer, LearnerServices, PolicyBoard, ServerSecurity,
    ServerStats, TransitionIngest,
};
use crate::inference::{InferenceConfig, InferenceServer};
use crate::wal::{DEFAULT_SEGMENT_BYTES, Record, TransitionLog};
use emberlab_algo::checkpoint::{existing_dir, write_dir_atomically};
use emberlab_algo::{
    ActionBuf, EvalResult, OffPolicyConfig, OffPolicyLearner, PolicyWeights, ReplayKind, evaluate,
    stored_action_dim,
};
use emberlab_core::state::{StateReader, StateWriter, load_words, save_words};
use emberlab_core::{Batch, Error, Result, Space};
use std::path::{Path, PathBuf};
use std::sync::mpsc::RecvTimeoutError;
use std::time::{Duration, Instant};

/// The file of the write-ahead log inside a learner's folder.
pub const LOG_FILE: &str = "transitions.wal";
/// The folder of the learner's last checkpoint inside its folder.
pub const STATE_DIR: &str = "state";
/// The log of records the learner could not use, inside its folder (same format as the
/// write-ahead log; each is also named in an error line with its actor).
pub const QUARANTINE_FILE: &str = "quarantine.wal";
/// The write-ahead log's disk budget by default: 8 GiB.
pub const DEFAULT_LOG_BUDGET: u64 = 8 << 30;

/// What a learner process serves and how it trains.
#[derive(Clone, Debug)]
pub struct LearnerOptions {
    /// Address to serve on, e.g. `0.0.0.0:50051` (port 0: any free port).
    pub addr: String,
    /// The learner's folder: write-ahead log and checkpoint (created if missing; a folder
    /// holding both resumes where the last checkpoint left off and replays the log).
    pub dir: PathBuf,
    /// Registered environment id the actors run (for the spaces and the final evaluation).
    pub env_id: String,
    /// The training schedule, counted in transitions received: `total_steps`,
    /// `learning_starts`, `batch_size`, `gradient_steps` updates every `train_freq`
    /// transitions, the replay (uniform, one-step); a greedy evaluation of
    /// `eval_episodes` every `eval_every` transitions (0: only at the end), training
    /// stopping at the first that reaches `target_return`.
    pub schedule: OffPolicyConfig,
    /// Train (false: serve inference and store transitions only, e.g. for benchmarks).
    pub train: bool,
    /// Write a checkpoint this often (and at the end).
    pub checkpoint_every: Duration,
    /// Keep serving this long after training finished, so that actors learn it from their
    /// acknowledgements and stop.
    pub linger: Duration,
    /// Message limits of the gRPC services.
    pub limits: GrpcLimits,
    /// Batching of central inference.
    pub inference: InferenceConfig,
    /// Transition batches queued between the log and the learner (back-pressure beyond).
    pub queue: usize,
    /// What actors that act locally build their copy of the learner from (published with
    /// the weights; the `ember` command sends its config).
    pub policy_config: String,
    /// The token and TLS the learner demands of its actors (none by default: see
    /// [`ServerSecurity::insecure`]).
    pub security: ServerSecurity,
    /// The largest magnitude of an observation, continuous action or reward a transition
    /// may carry ([`RowRules`]; a batch beyond it is refused).
    pub max_abs: f32,
    /// The disk budget of the write-ahead log, bytes: past it, acknowledgements wait (the
    /// actors are slowed down) until a checkpoint lets the oldest segments go.
    pub log_budget: u64,
    /// The size of one segment of the log, bytes.
    pub log_segment_bytes: u64,
    /// Print a line of the server's counts (connections, streams, refusals, quarantined
    /// records) this often when they changed (zero: never).
    pub status_every: Duration,
}

impl LearnerOptions {
    /// Options for serving on `addr` from `dir` with `schedule`, training, checkpoints
    /// every 5 s, 2 s of linger and default limits.
    pub fn new(addr: &str, dir: &Path, env_id: &str, schedule: OffPolicyConfig) -> Self {
        LearnerOptions {
            addr: addr.into(),
            dir: dir.into(),
            env_id: env_id.into(),
            schedule,
            train: true,
            checkpoint_every: Duration::from_secs(5),
            linger: Duration::from_secs(2),
            limits: GrpcLimits::default(),
            inference: InferenceConfig::default(),
            queue: 64,
            policy_config: String::new(),
            security: ServerSecurity::insecure(),
            max_abs: DEFAULT_MAX_ABS,
            log_budget: DEFAULT_LOG_BUDGET,
            log_segment_bytes: DEFAULT_SEGMENT_BYTES,
            status_every: Duration::from_secs(10),
        }
    }
}

/// What a learner process did.
#[derive(Clone, Debug, PartialEq)]
pub struct LearnerReport {
    /// Started from a checkpoint in its folder.
    pub resumed: bool,
    /// Transitions the learner took in (its env steps), over every start.
    pub env_steps: u64,
    /// Gradient updates, over every start.
    pub updates: u64,
    /// The last policy version served (one per round of updates since this start).
    pub version: u64,
    /// Transition batches in the log.
    pub log_records: u64,
    /// Transitions in the log: every acknowledged one (some may have come after training
    /// finished and were stored but not trained on).
    pub log_rows: u64,
    /// Transitions replayed from the log at start (not covered by the checkpoint).
    pub replayed_rows: u64,
    /// The greedy evaluation at the end.
    pub eval: Option<EvalResult>,
    /// `(transitions, mean return)` of the evaluations during training, this start.
    pub evals: Vec<(u64, f64)>,
    /// The best mean return of an evaluation, over every start.
    pub best_eval: Option<f64>,
    /// Log records this start moved to [`QUARANTINE_FILE`] instead of training on them.
    pub quarantined: u64,
    /// Checkpoints that failed and were retried, this start.
    pub checkpoint_failures: u64,
    /// Rounds of updates that failed and were skipped, this start.
    pub failed_rounds: u64,
    /// The gRPC server's counts when training ended (connections, streams, refusals).
    pub server: ServerStats,
    /// Seconds since this start.
    pub secs: f64,
}

/// The loop's own counters, saved beside the learner's state.
#[derive(Clone, Copy, Debug, PartialEq)]
struct Position {
    /// Log records taken into replay.
    records: u64,
    /// Transitions taken into replay.
    rows: u64,
    /// Rounds of `train_freq` transitions passed.
    rounds: u64,
    /// Evaluations made.
    evals: u64,
    /// Their best mean return (−∞ before the first).
    best_eval: f64,
    finished: bool,
}

impl Default for Position {
    fn default() -> Self {
        Position {
            records: 0,
            rows: 0,
            rounds: 0,
            evals: 0,
            best_eval: f64::NEG_INFINITY,
            finished: false,
        }
    }
}

const POSITION_KIND: &str = "distributed learner position";

impl Position {
    fn save(&self, dir: &Path) -> Result<()> {
        let mut w = StateWriter::new();
        w.u64(self.records)
            .u64(self.rows)
            .u64(self.rounds)
            .u64(self.evals)
            .f64(self.best_eval)
            .bool(self.finished);
        save_words(&dir.join("position.state"), POSITION_KIND, w.words())
    }

    fn load(dir: &Path) -> Result<Self> {
        let words = load_words(&dir.join("position.state"), POSITION_KIND)?;
        let mut r = StateReader::new(&words, POSITION_KIND);
        let p = Position {
            records: r.u64()?,
            rows: r.u64()?,
            rounds: r.u64()?,
            evals: r.u64()?,
            best_eval: r.f64()?,
            finished: r.bool()?,
        };
        r.finish()?;
        Ok(p)
    }
}

/// Serves `learner` to actors and trains it from their transitions (see the module docs of
/// [`crate::cluster`]) until `schedule.total_steps` transitions have come in; then
/// checkpoints, evaluates, tells the actors through their acknowledgements and returns
/// after `linger`. A learner killed at any point and started again on the same folder
/// loads its checkpoint, takes the logged transitions the checkpoint does not cover, and
/// goes on; actors reconnect and resend what was not acknowledged.
///
/// # Errors
/// A schedule the distributed learner cannot run (not uniform one-step replay), a learner
/// without a training state (no checkpoints), spaces that do not fit the learner, a
/// damaged log or checkpoint, an address that cannot be bound, an error of the learner.
pub fn run_learner<L>(mut learner: L, opts: &LearnerOptions) -> Result<LearnerReport>
where
    L: OffPolicyLearner + PolicyWeights + Send + 'static,
{
    let start = Instant::now();
    let factory = emberlab_env::factory(&opts.env_id)?;
    let (obs_space, action_space) = {
        let env = factory.make()?;
        (env.observation_space().clone(), env.action_space().clone())
    };
    let layout = TransitionRows {
        obs_dim: obs_space.flat_dim(),
        act_dim: stored_action_dim(&action_space),
    };
    let rules = RowRules::new(layout, &action_space, opts.max_abs)?;
    check_schedule(&opts.schedule)?;
    Error::check_len(
        "learner observation width",
        learner.obs_dim(),
        layout.obs_dim,
    )?;
    if learner.training_state().is_none() {
        return Err(Error::Unavailable {
            what: "a training state of this learner".into(),
            hint: "the distributed learner checkpoints it to survive a restart".into(),
        });
    }
    std::fs::create_dir_all(&opts.dir).map_err(Error::io_at(&opts.dir))?;
    let mut position = Position::default();
    let resumed = match existing_dir(&opts.dir.join(STATE_DIR)) {
        Some(dir) => {
            emberlab_algo::manifest::verify_dir(&dir)?;
            if let Some(state) = learner.training_state() {
                state.load_state(&dir.join("learner"))?;
            }
            position = Position::load(&dir)?;
            true
        }
        None => false,
    };
    let log_path = opts.dir.join(LOG_FILE);
    let (mut log, mut pending, salvaged) = TransitionLog::open_stream_salvaging(&log_path)?;
    log.set_segment_bytes(opts.log_segment_bytes);
    log.set_budget(opts.log_budget);
    for aside in &salvaged.asides {
        eprintln!(
            "learner: {} was damaged ({}): {} bytes set aside in {}, going on with its \
             readable batches",
            log_path.display(),
            salvaged.reason,
            salvaged.bytes,
            aside.display()
        );
    }
    let (first, total) = (log.first_index(), log.records());
    if position.records > total || position.records < first {
        // The log lost records the checkpoint took in (replaced or cut by hand), or the
        // checkpoint is older than the log's oldest segment: train on from the checkpoint
        // with what the log holds, rather than never start.
        eprintln!(
            "learner: the checkpoint covers {} batches but {} holds batches {first}..{total}; \
             going on from the checkpoint",
            position.records,
            log_path.display()
        );
        position.records = position.records.clamp(first, total);
    }
    let mut quarantine = Quarantine::new(&opts.dir.join(QUARANTINE_FILE), rules);
    let sched = &opts.schedule;
    let mut replay = sched
        .replay
        .build(layout.obs_dim, layout.act_dim, sched.seed)?;
    // The log's records the checkpoint covers rebuild replay; the rest are trained on as
    // if they had just arrived. Both are read from disk one at a time.
    for _ in first..position.records {
        let r = pending.next().ok_or_else(|| Error::Corrupt {
            path: log_path.clone(),
            kind: "transition log".into(),
            reason: "fewer records than its segments counted".into(),
        })??;
        if quarantine.admits(&r) {
            for t in layout.rows(&r.values)? {
                replay.push(&t)?;
            }
        }
    }
    let mut replayed_rows = 0;

    let (ingest, rx) = TransitionIngest::new(log, layout.width() as u32, opts.queue);
    let ingest = ingest.with_rules(std::sync::Arc::new(rules));
    let kind = match action_space {
        Space::Discrete(_) => ActionKind::Discrete,
        Space::Box(_) => ActionKind::Continuous,
    };
    let server = InferenceServer::spawn(
        learner,
        ActionBuf::for_space(&action_space),
        opts.inference.clone(),
    )?;
    let board = PolicyBoard::new(&opts.policy_config);
    let services = LearnerServices {
        inference: server.handle(),
        kind,
        ingest: Some(ingest.clone()),
        policy: Some(board.clone()),
    };
    let grpc =
        GrpcServer::learner_services_secured(&opts.addr, services, opts.limits, &opts.security)?;
    let mut trainer = Rounds {
        server: &server,
        schedule: sched,
        batches: Vec::new(),
        board,
    };
    trainer.publish(position.rows)?;
    let mut next_checkpoint = Instant::now() + opts.checkpoint_every;
    let mut last_checkpoint = Instant::now();
    let mut checkpoint_failures = 0;
    let (mut failing_rounds, mut failed_rounds) = (0, 0);
    let mut status = StatusLine::new(opts.status_every);
    let mut evals = Vec::new();
    while !position.finished {
        let record = match pending.next().transpose()? {
            Some(r) => {
                replayed_rows += r.rows() as u64;
                Some(r)
            }
            None => match rx.recv_timeout(Duration::from_millis(100)) {
                Ok(r) => Some(r),
                Err(RecvTimeoutError::Timeout) => None,
                Err(RecvTimeoutError::Disconnected) => break,
            },
        };
        // A record the learner cannot use is counted as taken in and quarantined.
        let record = record.filter(|r| {
            position.records += 1;
            quarantine.admits(r)
        });
        if let Some(record) = record {
            for t in layout.rows(&record.values)? {
                replay.push(&t)?;
            }
            position.rows += record.rows() as u64;
            while position.rounds < position.rows / sched.train_freq {
                position.rounds += 1;
                match trainer.round(&mut replay, position.rows, opts.train) {
                    Ok(()) => failing_rounds = 0,
                    // A round the learner cannot make (a loss gone NaN on the batches it
                    // drew) leaves it as it was: skip the round rather than exit and, on
                    // restart, draw from the same replay again. Only a learner that fails
                    // round after round stops.
                    Err(e) if failing_rounds + 1 < MAX_FAILING_ROUNDS => {
                        failing_rounds += 1;
                        failed_rounds += 1;
                        eprintln!("learner: a round of updates failed and was skipped: {e}");
                    }
                    Err(e) => return Err(e),
                }
            }
            position.finished = position.rows >= sched.total_steps;
            if sched.eval_every > 0 && position.rows / sched.eval_every > position.evals {
                position.evals = position.rows / sched.eval_every;
                let e = evaluation(&server, &factory, sched.eval_episodes)?.mean_return();
                evals.push((position.rows, e));
                position.best_eval = position.best_eval.max(e);
                position.finished |= sched.target_return.is_some_and(|t| e >= t);
            }
        }
        // A log at its disk budget makes the actors wait: a checkpoint lets it release.
        let room = ingest.wants_room() && Instant::now() >= last_checkpoint + ROOM_CHECKPOINT;
        if position.finished || room || Instant::now() >= next_checkpoint {
            match checkpoint(&server, &opts.dir, position) {
                Ok(()) => {
                    last_checkpoint = Instant::now();
                    next_checkpoint = last_checkpoint + opts.checkpoint_every;
                    release(&ingest, position.records, sched.replay.capacity as u64);
                }
                // A full disk or no descriptors left: say so and try again in a second;
                // the log keeps every acknowledged batch meanwhile.
                Err(e) if !position.finished => {
                    checkpoint_failures += 1;
                    eprintln!("learner: checkpoint failed, retrying in 1 s: {e}");
                    next_checkpoint = Instant::now() + Duration::from_secs(1);
                }
                Err(e) => final_checkpoint(&server, &opts.dir, position, e)?,
            }
        }
        status.report(&grpc, &quarantine);
    }
    // Batches that still arrive are stored and acknowledged with "finished".
    ingest.finish();
    std::thread::spawn(move || for _ in rx {});
    let eval = evaluation(&server, &factory, sched.eval_episodes)?;
    let best_eval = position.best_eval.max(eval.mean_return());
    let updates = {
        let (tx, got) = std::sync::mpsc::channel();
        server.with_agent(move |agent| {
            let _ = tx.send(agent.progress().updates);
            Ok(())
        })?;
        got.recv().unwrap_or(0)
    };
    std::thread::sleep(opts.linger);
    let (log_records, log_rows) = ingest.stored();
    let version = server.stats().version;
    let server_stats = grpc.stats();
    drop(grpc);
    Ok(LearnerReport {
        resumed,
        env_steps: position.rows,
        updates,
        version,
        log_records,
        log_rows,
        replayed_rows,
        eval: Some(eval),
        evals,
        best_eval: Some(best_eval),
        quarantined: quarantine.count,
        checkpoint_failures,
        failed_rounds,
        server: server_stats,
        secs: start.elapsed().as_secs_f64(),
    })
}

/// `episodes` greedy episodes of the served policy on fresh environments (seeds from
/// 1,000,000), between two forward passes.
fn evaluation<L: OffPolicyLearner + Send + 'static>(
    server: &InferenceServer<L>,
    factory: &std::sync::Arc<dyn emberlab_env::EnvFactory>,
    episodes: usize,
) -> Result<EvalResult> {
    let (tx, result) = std::sync::mpsc::channel();
    let factory = factory.clone();
    server.with_agent(move |agent| {
        let _ = tx.send(evaluate(agent, &*factory, episodes, 1_000_000)?);
        Ok(())
    })?;
    result.recv().map_err(|_| Error::Unavailable {
        what: "the evaluation's result".into(),
        hint: "the inference server stopped".into(),
    })
}

fn check_schedule(s: &OffPolicyConfig) -> Result<()> {
    emberlab_algo::Validate::validate(s)?;
    if s.replay.kind != ReplayKind::Uniform || s.replay.n_step != 1 {
        return Err(Error::invalid(
            "distributed learner replay",
            format!("{} with n_step {}", s.replay.kind.as_str(), s.replay.n_step),
            "uniform one-step replay",
        ));
    }
    Ok(())
}

/// Rounds of updates, run on the inference server's thread between two forward passes
/// (the batches are drawn here, on the learner's thread).
struct Rounds<'a, L: OffPolicyLearner + PolicyWeights + Send + 'static> {
    server: &'a InferenceServer<L>,
    schedule: &'a OffPolicyConfig,
    batches: Vec<Batch>,
    board: PolicyBoard,
}

impl<L: OffPolicyLearner + PolicyWeights + Send + 'static> Rounds<'_, L> {
    /// Posts the policy for local actors, versioned by the learner's update count.
    fn publish(&self, env_steps: u64) -> Result<()> {
        let board = self.board.clone();
        self.server.with_agent(move |agent| {
            let updates = agent.progress().updates;
            board.publish(updates, env_steps, agent.policy_weights());
            Ok(())
        })?;
        Ok(())
    }

    /// One round at `env_steps` transitions: the learner's schedules advance, and when
    /// `train` and replay is ready, `gradient_steps` updates.
    fn round<S: emberlab_replay::Sampler>(
        &mut self,
        replay: &mut emberlab_replay::ReplayBuffer<S>,
        env_steps: u64,
        train: bool,
    ) -> Result<()> {
        let s = self.schedule;
        let ready = train && env_steps >= s.learning_starts && replay.len() >= s.batch_size;
        let mut batches = std::mem::take(&mut self.batches);
        batches.resize_with(s.gradient_steps, Batch::default);
        if ready {
            for b in &mut batches {
                replay.sample(s.batch_size, b)?;
            }
        }
        let total = s.total_steps;
        let (tx, back) = std::sync::mpsc::sync_channel(1);
        let outcome = self.server.update(move |agent| {
            agent.on_env_steps(env_steps, total);
            agent.progress().env_steps = env_steps;
            let mut result = Ok(());
            if ready {
                for b in &batches {
                    let step = agent.progress().updates;
                    if let Err(e) = agent.update(b, step) {
                        result = Err(e);
                        break;
                    }
                    agent.progress().updates += 1;
                }
            }
            let _ = tx.send(batches);
            result
        });
        self.batches = back.try_recv().unwrap_or_default();
        outcome?;
        if ready {
            self.publish(env_steps)?;
        }
        Ok(())
    }
}

/// Writes the learner's state and the loop's position into `dir/state` (atomically: a
/// kill leaves the previous checkpoint or this one).
fn checkpoint<L: OffPolicyLearner + Send + 'static>(
    server: &InferenceServer<L>,
    dir: &Path,
    position: Position,
) -> Result<()> {
    let state_dir = dir.join(STATE_DIR);
    server.with_agent(move |agent| {
        write_dir_atomically(&state_dir, |d| {
            let learner = d.join("learner");
            std::fs::create_dir_all(&learner).map_err(Error::io_at(&learner))?;
            let state = agent.training_state().ok_or_else(|| Error::Unavailable {
                what: "a training state of this learner".into(),
                hint: "checked at start".into(),
            })?;
            state.save_state(&learner)?;
            position.save(d)
        })
    })?;
    Ok(())
}

/// Rounds of updates that may fail in a row before the learner gives up.
const MAX_FAILING_ROUNDS: u32 = 20;

/// The soonest a full log brings the next checkpoint after the last.
const ROOM_CHECKPOINT: Duration = Duration::from_millis(500);

/// Deletes the log's segments a checkpoint at `covered` records took in and a restart would
/// not need for the newest `keep_rows` rows of replay (or all it took in, over the disk
/// budget); says so when replay's window was cut.
fn release(ingest: &TransitionIngest, covered: u64, keep_rows: u64) {
    match ingest.release(covered, keep_rows) {
        Ok(r) if r.rows_in_window > 0 => eprintln!(
            "learner: the transition log reached its disk budget: released {} segments \
             ({} MiB) holding {} rows that a restart would have put back into replay",
            r.segments,
            r.bytes >> 20,
            r.rows_in_window
        ),
        Ok(_) => {}
        Err(e) => eprintln!("learner: the transition log kept a segment it could not delete: {e}"),
    }
}

/// The last checkpoint, which the learner does not go on without: retried for a while
/// with an error line each time, then the error (the log still holds every batch).
fn final_checkpoint<L: OffPolicyLearner + Send + 'static>(
    server: &InferenceServer<L>,
    dir: &Path,
    position: Position,
    mut error: Error,
) -> Result<()> {
    for _ in 0..10 {
        eprintln!("learner: the final checkpoint failed, retrying in 1 s: {error}");
        std::thread::sleep(Duration::from_secs(1));
        match checkpoint(server, dir, position) {
            Ok(()) => return Ok(()),
            Err(e) => error = e,
        }
    }
    Err(error)
}

/// Where log records the learner cannot use go: checked against the [`RowRules`] before
/// training, a record that breaks them is appended to [`QUARANTINE_FILE`] (a transition
/// log too), named in an error line with its actor, counted, and skipped.
struct Quarantine {
    path: PathBuf,
    rules: RowRules,
    log: Option<TransitionLog>,
    count: u64,
}

impl Quarantine {
    fn new(path: &Path, rules: RowRules) -> Self {
        Quarantine {
            path: path.to_path_buf(),
            rules,
            log: None,
            count: 0,
        }
    }

    /// Whether the learner may train on `r`; if not, `r` is quarantined.
    fn admits(&mut self, r: &Record) -> bool {
        let fault = if r.width as usize != self.rules.layout.width() {
            Some(format!(
                "rows of {} values, the learner takes {}",
                r.width,
                self.rules.layout.width()
            ))
        } else {
            self.rules.check(&r.values).err().map(|e| e.to_string())
        };
        let Some(fault) = fault else {
            return true;
        };
        self.count += 1;
        let kept = self.keep(r);
        eprintln!(
            "learner: quarantined batch {} of actor {} (run {}, {} rows): {fault}; {kept}",
            r.seq,
            r.actor,
            r.run,
            r.rows()
        );
        false
    }

    /// Appends `r` to the quarantine log; says where it went.
    fn keep(&mut self, r: &Record) -> String {
        if self.log.is_none() {
            match TransitionLog::open(&self.path) {
                Ok((log, _)) => self.log = Some(log),
                Err(e) => return format!("it could not be kept: {e}"),
            }
        }
        let log = self.log.as_mut().expect("opened above");
        match log.append(std::slice::from_ref(r)) {
            Ok(_) => format!("kept in {}", self.path.display()),
            Err(e) => format!("it could not be kept: {e}"),
        }
    }
}

/// A line of the server's counts, printed when they changed and `every` has passed.
struct StatusLine {
    every: Duration,
    last: Instant,
    shown: Option<(ServerStats, u64)>,
}

impl StatusLine {
    fn new(every: Duration) -> Self {
        StatusLine {
            every,
            last: Instant::now(),
            shown: None,
        }
    }

    fn report(&mut self, grpc: &GrpcServer, quarantine: &Quarantine) {
        if self.every.is_zero() || self.last.elapsed() < self.every {
            return;
        }
        self.last = Instant::now();
        let now = (grpc.stats(), quarantine.count);
        if self.shown.as_ref() == Some(&now) {
            return;
        }
        eprintln!("learner: {}", status_text(&now.0, now.1));
        self.shown = Some(now);
    }
}

/// The server's counts in one line: open connections and streams (the busiest peers),
/// refusals by reason, quarantined records.
pub fn status_text(s: &ServerStats, quarantined: u64) -> String {
    let peers: Vec<String> = s
        .peers
        .iter()
        .take(3)
        .map(|p| format!("{} {}c/{}s", p.peer, p.connections, p.streams))
        .collect();
    let r = &s.refused;
    format!(
        "{} connections, {} streams ({}); refused: token {}, invalid {}, streams {}, \
         connections {}, unary rate {}, handshakes {}, idle streams {}, accept backoffs {}; \
         quarantined {quarantined}",
        s.connections,
        s.streams,
        if peers.is_empty() {
            "no peers".into()
        } else {
            peers.join(", ")
        },
        r.token,
        r.invalid,
        r.streams,
        r.connections,
        r.unary_rate,
        r.handshakes,
        r.idle_streams,
        r.accept_backoffs
    )
}
