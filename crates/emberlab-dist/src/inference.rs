//! [`InferenceServer`]: many actors, one forward pass per batch (problem 4; SEED RL's central
//! inference with TorchRL's flush rule).
//!
//! Actors hold an [`InferenceClient`] and ask for actions for their observation rows; one
//! server thread owns the agent, gathers requests until it has `max_batch` rows or the
//! oldest has waited `max_wait`, runs one `act` over all of them and answers each request
//! with its rows' actions and the policy version that chose them. [`InferenceServer::update`]
//! changes the agent (new weights) between two batches: every answer comes from exactly
//! one version. The request queue is bounded, so actors that outrun the server wait
//! (back-pressure) instead of growing memory.

use emberlab_algo::{ActionBuf, Agent};
use emberlab_core::{Error, Result};
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::mpsc::{self, Receiver, RecvTimeoutError, SyncSender};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};

/// How an [`InferenceServer`] batches.
#[derive(Clone, Debug, PartialEq)]
pub struct InferenceConfig {
    /// Run a forward pass as soon as this many observation rows are waiting.
    pub max_batch: usize,
    /// Or once the oldest waiting request has waited this long.
    pub max_wait: Duration,
    /// Requests that may wait in the queue; further actors block until there is room.
    pub queue: usize,
}

impl Default for InferenceConfig {
    fn default() -> Self {
        InferenceConfig {
            max_batch: 64,
            max_wait: Duration::from_micros(500),
            queue: 1024,
        }
    }
}

impl InferenceConfig {
    /// Checks the values.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] naming the first bad field.
    pub fn validate(&self) -> Result<()> {
        if self.max_batch == 0 {
            return Err(Error::invalid("max_batch", 0, ">= 1"));
        }
        if self.queue == 0 {
            return Err(Error::invalid("queue", 0, ">= 1"));
        }
        Ok(())
    }
}

/// Counters of a running server.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct InferenceStats {
    /// Requests answered.
    pub requests: u64,
    /// Observation rows answered.
    pub rows: u64,
    /// Forward passes run.
    pub batches: u64,
    /// The policy version now.
    pub version: u64,
}

impl InferenceStats {
    /// Mean rows per forward pass.
    pub fn mean_batch(&self) -> f64 {
        self.rows as f64 / self.batches.max(1) as f64
    }
}

#[derive(Default)]
struct Counters {
    requests: AtomicU64,
    rows: AtomicU64,
    batches: AtomicU64,
    version: AtomicU64,
}

/// A request's buffers travel to the server and back, so an actor allocates nothing per
/// call once warm.
struct Buffers {
    obs: Vec<f32>,
    actions: ActionBuf,
}

impl Buffers {
    fn empty() -> Self {
        Buffers {
            obs: Vec::new(),
            actions: ActionBuf::Discrete(Vec::new()),
        }
    }
}

type Answer = (Buffers, Result<u64>);

/// Where a request's answer goes: a blocked thread ([`InferenceClient::act`]) or a task
/// awaiting it ([`InferenceClient::act_async`], no thread held while it waits).
enum Reply {
    Blocking(SyncSender<Answer>),
    #[cfg(feature = "grpc")]
    Task(tokio::sync::oneshot::Sender<Answer>),
}

impl Reply {
    /// Delivers `answer`; an actor that went away does not stop the others.
    fn send(self, answer: Answer) {
        match self {
            Reply::Blocking(tx) => {
                let _ = tx.send(answer);
            }
            #[cfg(feature = "grpc")]
            Reply::Task(tx) => {
                let _ = tx.send(answer);
            }
        }
    }
}

/// A change to the agent; `Ok(true)` when it changed the policy (a new version).
type Update<A> = Box<dyn FnOnce(&mut A) -> Result<bool> + Send>;

enum Msg<A> {
    Act {
        bufs: Buffers,
        rows: usize,
        explore: bool,
        reply: Reply,
    },
    Update(Update<A>, SyncSender<Result<u64>>),
    Stop,
}

/// The server: a thread that owns the agent. Dropping it stops the thread; requests still
/// queued are answered with an error.
pub struct InferenceServer<A: Agent + Send + 'static> {
    tx: SyncSender<Msg<A>>,
    thread: Option<JoinHandle<()>>,
    counters: Arc<Counters>,
    obs_dim: usize,
}

impl<A: Agent + Send + 'static> InferenceServer<A> {
    /// Starts a server thread owning `agent`; `actions` is an empty buffer of the kind the
    /// agent fills (`ActionBuf::for_space(action_space)`).
    ///
    /// # Errors
    /// An invalid config; the thread could not be started.
    pub fn spawn(agent: A, actions: ActionBuf, config: InferenceConfig) -> Result<Self> {
        config.validate()?;
        let obs_dim = agent.obs_dim();
        if obs_dim == 0 {
            return Err(Error::invalid("agent observation width", 0, ">= 1"));
        }
        let (tx, rx) = mpsc::sync_channel(config.queue);
        let counters = Arc::new(Counters::default());
        let worker = Worker {
            agent,
            rx,
            config,
            obs: Vec::new(),
            actions,
            pending: Vec::new(),
            counters: counters.clone(),
            version: 0,
        };
        let thread = std::thread::Builder::new()
            .name("ember-inference".into())
            .spawn(move || worker.run())
            .map_err(|e| Error::Unavailable {
                what: "an inference server thread".into(),
                hint: e.to_string(),
            })?;
        Ok(InferenceServer {
            tx,
            thread: Some(thread),
            counters,
            obs_dim,
        })
    }

    /// A handle for one actor (cheap; any number, from any thread).
    pub fn client(&self) -> InferenceClient {
        self.handle().client()
    }

    /// A handle that makes clients and reads the counters without naming the agent's
    /// type (what the gRPC service holds).
    pub fn handle(&self) -> InferenceHandle {
        InferenceHandle {
            send: Box::new(ActSender(self.tx.clone())),
            counters: self.counters.clone(),
            obs_dim: self.obs_dim,
        }
    }

    /// Applies `change` to the agent between two forward passes (new weights, a new
    /// exploration setting) and returns the new policy version; answers to requests that
    /// reach the server after it carry that version. If `change` fails (or panics) the
    /// version stays and the error is returned; the agent must then be as it was.
    ///
    /// # Errors
    /// The error of `change`, or the server has stopped.
    pub fn update(
        &self,
        change: impl FnOnce(&mut A) -> Result<()> + Send + 'static,
    ) -> Result<u64> {
        self.send_update(Box::new(move |agent| change(agent).map(|()| true)))
    }

    /// Runs `read` on the agent between two forward passes without changing the policy
    /// version (a checkpoint, an evaluation on the side); returns the current version.
    ///
    /// # Errors
    /// The error of `read`, or the server has stopped.
    pub fn with_agent(
        &self,
        read: impl FnOnce(&mut A) -> Result<()> + Send + 'static,
    ) -> Result<u64> {
        self.send_update(Box::new(move |agent| read(agent).map(|()| false)))
    }

    fn send_update(&self, change: Update<A>) -> Result<u64> {
        let (reply_tx, reply_rx) = mpsc::sync_channel(1);
        self.tx
            .send(Msg::Update(change, reply_tx))
            .map_err(|_| stopped())?;
        reply_rx.recv().map_err(|_| stopped())?
    }

    /// The counters so far.
    pub fn stats(&self) -> InferenceStats {
        self.counters.stats()
    }
}

impl Counters {
    fn stats(&self) -> InferenceStats {
        InferenceStats {
            requests: self.requests.load(Ordering::Relaxed),
            rows: self.rows.load(Ordering::Relaxed),
            batches: self.batches.load(Ordering::Relaxed),
            version: self.version.load(Ordering::Relaxed),
        }
    }
}

/// Makes [`InferenceClient`]s of a server and reads its counters, whatever its agent type.
/// It does not keep the server running: once the server is dropped, clients get errors.
pub struct InferenceHandle {
    send: Box<dyn SendRequest>,
    counters: Arc<Counters>,
    obs_dim: usize,
}

impl Clone for InferenceHandle {
    fn clone(&self) -> Self {
        InferenceHandle {
            send: self.send.clone_box(),
            counters: self.counters.clone(),
            obs_dim: self.obs_dim,
        }
    }
}

impl InferenceHandle {
    /// A handle for one actor.
    pub fn client(&self) -> InferenceClient {
        InferenceClient::new(self.send.clone_box(), self.obs_dim)
    }

    /// The server's counters so far.
    pub fn stats(&self) -> InferenceStats {
        self.counters.stats()
    }

    /// The observation width the server's agent takes.
    pub fn obs_dim(&self) -> usize {
        self.obs_dim
    }
}

impl<A: Agent + Send + 'static> Drop for InferenceServer<A> {
    fn drop(&mut self) {
        let _ = self.tx.send(Msg::Stop);
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

fn stopped() -> Error {
    Error::Unavailable {
        what: "the inference server".into(),
        hint: "it has stopped (dropped, or its thread ended)".into(),
    }
}

/// Sends requests to a server of any agent type (clients are not generic).
trait SendRequest: Send + Sync {
    /// Queues a request, waiting while the queue is full; `false`: the server stopped.
    fn send(&self, bufs: Buffers, rows: usize, explore: bool, reply: Reply) -> bool;
    /// Queues a request if there is room: `Err(Some(back))` when the queue is full (the
    /// request handed back), `Err(None)` when the server stopped.
    fn try_send(&self, request: Request) -> std::result::Result<(), Option<Request>>;
    fn clone_box(&self) -> Box<dyn SendRequest>;
}

/// A request on its way into the queue (what [`SendRequest::try_send`] hands back).
struct Request {
    bufs: Buffers,
    rows: usize,
    explore: bool,
    reply: Reply,
}

struct ActSender<A>(SyncSender<Msg<A>>);

impl<A: Agent + Send + 'static> SendRequest for ActSender<A> {
    fn send(&self, bufs: Buffers, rows: usize, explore: bool, reply: Reply) -> bool {
        self.0
            .send(Msg::Act {
                bufs,
                rows,
                explore,
                reply,
            })
            .is_ok()
    }

    fn try_send(&self, r: Request) -> std::result::Result<(), Option<Request>> {
        let msg = Msg::Act {
            bufs: r.bufs,
            rows: r.rows,
            explore: r.explore,
            reply: r.reply,
        };
        match self.0.try_send(msg) {
            Ok(()) => Ok(()),
            Err(mpsc::TrySendError::Full(Msg::Act {
                bufs,
                rows,
                explore,
                reply,
            })) => Err(Some(Request {
                bufs,
                rows,
                explore,
                reply,
            })),
            Err(_) => Err(None),
        }
    }

    fn clone_box(&self) -> Box<dyn SendRequest> {
        Box::new(ActSender(self.0.clone()))
    }
}

/// One actor's handle on an [`InferenceServer`].
pub struct InferenceClient {
    send: Box<dyn SendRequest>,
    reply_tx: SyncSender<Answer>,
    reply_rx: Receiver<Answer>,
    bufs: Option<Buffers>,
    obs_dim: usize,
}

impl Clone for InferenceClient {
    fn clone(&self) -> Self {
        InferenceClient::new(self.send.clone_box(), self.obs_dim)
    }
}

impl InferenceClient {
    fn new(send: Box<dyn SendRequest>, obs_dim: usize) -> Self {
        let (reply_tx, reply_rx) = mpsc::sync_channel(1);
        InferenceClient {
            send,
            reply_tx,
            reply_rx,
            bufs: Some(Buffers::empty()),
            obs_dim,
        }
    }

    /// Actions for the rows of `obs` (`rows × obs_dim`, finite) into `out`, and the policy
    /// version that chose them. Blocks while the queue is full and until the batch holding
    /// these rows has run.
    ///
    /// # Errors
    /// A width that is not a whole number of rows, a NaN or infinity (named by row), the
    /// agent's error on the batch, or a stopped server.
    pub fn act(&mut self, obs: &[f32], explore: bool, out: &mut ActionBuf) -> Result<u64> {
        let (bufs, rows) = self.fill(obs, out)?;
        if !self
            .send
            .send(bufs, rows, explore, Reply::Blocking(self.reply_tx.clone()))
        {
            // The buffers went down with the message; start afresh.
            self.bufs = Some(Buffers::empty());
            return Err(stopped());
        }
        let answer = self.reply_rx.recv().ok();
        self.settle(answer, out)
    }

    /// [`InferenceClient::act`] for async code: while the request waits for room in the
    /// queue or for its batch, the task yields and holds no thread (a gRPC server serves
    /// any number of idle actor streams from its few runtime threads).
    ///
    /// # Errors
    /// As [`InferenceClient::act`].
    #[cfg(feature = "grpc")]
    pub async fn act_async(
        &mut self,
        obs: &[f32],
        explore: bool,
        out: &mut ActionBuf,
    ) -> Result<u64> {
        let (bufs, rows) = self.fill(obs, out)?;
        let (tx, rx) = tokio::sync::oneshot::channel();
        let mut request = Request {
            bufs,
            rows,
            explore,
            reply: Reply::Task(tx),
        };
        // A full queue is the server's back-pressure: wait a little and offer again.
        let mut wait = Duration::from_micros(50);
        loop {
            match self.send.try_send(request) {
                Ok(()) => break,
                Err(Some(back)) => {
                    request = back;
                    tokio::time::sleep(wait).await;
                    wait = (wait * 2).min(Duration::from_millis(5));
                }
                Err(None) => {
                    self.bufs = Some(Buffers::empty());
                    return Err(stopped());
                }
            }
        }
        let answer = rx.await.ok();
        self.settle(answer, out)
    }

    /// Takes the buffers of `answer` back (fresh ones when the server dropped the request
    /// unanswered: it stopped), the actions into `out`, and returns the answer's result.
    fn settle(&mut self, answer: Option<Answer>, out: &mut ActionBuf) -> Result<u64> {
        match answer {
            Some((mut bufs, result)) => {
                std::mem::swap(&mut bufs.actions, out);
                self.bufs = Some(bufs);
                result
            }
            None => {
                self.bufs = Some(Buffers::empty());
                Err(stopped())
            }
        }
    }

    /// Checks `obs` and moves it and `out` into this client's buffers: the request's
    /// buffers and its rows.
    fn fill(&mut self, obs: &[f32], out: &mut ActionBuf) -> Result<(Buffers, usize)> {
        if obs.is_empty() || !obs.len().is_multiple_of(self.obs_dim) {
            return Err(Error::Shape {
                what: "observations for the inference server".into(),
                expected: format!("a positive multiple of obs_dim = {}", self.obs_dim),
                got: format!("{} values", obs.len()),
            });
        }
        Error::check_finite_rows("observation", obs, self.obs_dim)?;
        let mut bufs = self.bufs.take().unwrap_or_else(Buffers::empty);
        bufs.obs.clear();
        bufs.obs.extend_from_slice(obs);
        std::mem::swap(&mut bufs.actions, out);
        Ok((bufs, obs.len() / self.obs_dim))
    }

    /// The observation width the server's agent takes.
    pub fn obs_dim(&self) -> usize {
        self.obs_dim
    }
}

struct Pending {
    bufs: Buffers,
    rows: usize,
    explore: bool,
    /// Taken when the answer goes out.
    reply: Option<Reply>,
    /// Set once its forward pass has run.
    answer: Option<Result<u64>>,
}

struct Worker<A> {
    agent: A,
    rx: Receiver<Msg<A>>,
    config: InferenceConfig,
    obs: Vec<f32>,
    actions: ActionBuf,
    pending: Vec<Pending>,
    counters: Arc<Counters>,
    version: u64,
}

/// A control message met while gathering a batch: handled after that batch.
enum Control<A> {
    Update(Update<A>, SyncSender<Result<u64>>),
    Stop,
}

impl<A: Agent> Worker<A> {
    fn run(mut self) {
        let _flush = emberlab_core::denormals::flush_denormals_here();
        while let Ok(msg) = self.rx.recv() {
            let next = match msg {
                Msg::Stop => break,
                Msg::Update(change, reply) => {
                    self.apply(change, reply);
                    continue;
                }
                Msg::Act {
                    bufs,
                    rows,
                    explore,
                    reply,
                } => {
                    self.pending.push(Pending {
                        bufs,
                        rows,
                        explore,
                        reply: Some(reply),
                        answer: None,
                    });
                    self.gather()
                }
            };
            self.flush();
            match next {
                Some(Control::Update(change, reply)) => self.apply(change, reply),
                Some(Control::Stop) => break,
                None => {}
            }
        }
        // Requests still queued are dropped with the receiver: their actors get an error.
    }

    /// Gathers requests until `max_batch` rows or `max_wait`; a control message ends the
    /// gathering and is handled after this batch.
    fn gather(&mut self) -> Option<Control<A>> {
        let deadline = Instant::now() + self.config.max_wait;
        let mut rows: usize = self.pending.iter().map(|p| p.rows).sum();
        while rows < self.config.max_batch {
            let wait = deadline.saturating_duration_since(Instant::now());
            match self.rx.recv_timeout(wait) {
                Ok(Msg::Act {
                    bufs,
                    rows: r,
                    explore,
                    reply,
                }) => {
                    rows += r;
                    self.pending.push(Pending {
                        bufs,
                        rows: r,
                        explore,
                        reply: Some(reply),
                        answer: None,
                    });
                }
                Ok(Msg::Update(change, reply)) => return Some(Control::Update(change, reply)),
                Ok(Msg::Stop) => return Some(Control::Stop),
                Err(RecvTimeoutError::Timeout | RecvTimeoutError::Disconnected) => break,
            }
        }
        None
    }

    /// One forward pass per exploration setting over the pending requests; answers each.
    /// If a batch fails, its requests run one by one, so only the request that made the
    /// agent fail (a row it cannot take) gets the error.
    fn flush(&mut self) {
        let mut pending = std::mem::take(&mut self.pending);
        for explore in [true, false] {
            let group: Vec<usize> = (0..pending.len())
                .filter(|&i| pending[i].explore == explore)
                .collect();
            if group.is_empty() {
                continue;
            }
            if !self.run_group(&mut pending, &group, explore) {
                for &i in &group {
                    self.run_group(&mut pending, &[i], explore);
                }
            }
            self.reply_all(&mut pending, &group);
        }
        pending.clear();
        self.pending = pending;
    }

    /// Runs one forward pass over the requests `group` and sets each one's answer: its
    /// actions, or (a single request) the agent's error. `false`, with no answer set, when
    /// a pass over several requests failed: they are to run one by one.
    fn run_group(&mut self, pending: &mut [Pending], group: &[usize], explore: bool) -> bool {
        self.obs.clear();
        let mut rows = 0;
        for &i in group {
            self.obs.extend_from_slice(&pending[i].bufs.obs);
            rows += pending[i].rows;
        }
        let result = self.forward(rows, explore);
        self.counters.batches.fetch_add(1, Ordering::Relaxed);
        match result {
            Ok(width) => {
                let mut at = 0;
                for &i in group {
                    let p = &mut pending[i];
                    copy_rows(&self.actions, at, p.rows, width, &mut p.bufs.actions);
                    p.answer = Some(Ok(self.version));
                    at += p.rows;
                }
                true
            }
            Err(_) if group.len() > 1 => false,
            Err(message) => {
                pending[group[0]].answer = Some(Err(Error::Unavailable {
                    what: "actions from the inference server".into(),
                    hint: format!("its agent failed on this request's {rows} rows: {message}"),
                }));
                true
            }
        }
    }

    /// Sends the requests `group` their answers and buffers back.
    fn reply_all(&self, pending: &mut [Pending], group: &[usize]) {
        for &i in group {
            let p = &mut pending[i];
            let Some(answer) = p.answer.take() else {
                continue;
            };
            self.counters.requests.fetch_add(1, Ordering::Relaxed);
            self.counters
                .rows
                .fetch_add(p.rows as u64, Ordering::Relaxed);
            let bufs = std::mem::replace(&mut p.bufs, Buffers::empty());
            if let Some(reply) = p.reply.take() {
                reply.send((bufs, answer));
            }
        }
    }

    /// Runs the agent on the gathered rows; the action width per row, or the error text.
    fn forward(&mut self, rows: usize, explore: bool) -> std::result::Result<usize, String> {
        let (agent, obs, actions) = (&mut self.agent, &self.obs, &mut self.actions);
        Error::catch(
            || "the inference server's agent".into(),
            || agent.act(obs, explore, actions),
        )
        .map_err(|e| e.to_string())?;
        let len = match &self.actions {
            ActionBuf::Discrete(a) => a.len(),
            ActionBuf::Continuous(a) => a.len(),
        };
        if len == 0 || !len.is_multiple_of(rows) {
            return Err(format!("{len} action values for {rows} observation rows"));
        }
        Ok(len / rows)
    }

    fn apply(&mut self, change: Update<A>, reply: SyncSender<Result<u64>>) {
        let agent = &mut self.agent;
        let result = Error::catch(|| "an inference server update".into(), || change(agent));
        let answer = result.map(|changed| {
            if changed {
                self.version += 1;
                self.counters.version.store(self.version, Ordering::Relaxed);
            }
            self.version
        });
        let _ = reply.send(answer);
    }
}

/// Rows `at .. at + rows` of `all` (`width` values per row) into `out`, of `all`'s kind.
fn copy_rows(all: &ActionBuf, at: usize, rows: usize, width: usize, out: &mut ActionBuf) {
    match all {
        ActionBuf::Discrete(a) => {
            if !matches!(out, ActionBuf::Discrete(_)) {
                *out = ActionBuf::Discrete(Vec::new());
            }
            if let ActionBuf::Discrete(o) = out {
                o.clear();
                o.extend_from_slice(&a[at * width..(at + rows) * width]);
            }
        }
        ActionBuf::Continuous(a) => {
            if !matches!(out, ActionBuf::Continuous(_)) {
                *out = ActionBuf::Continuous(Vec::new());
            }
            if let ActionBuf::Continuous(o) = out {
                o.clear();
                o.extend_from_slice(&a[at * width..(at + rows) * width]);
            }
        }
    }
}
