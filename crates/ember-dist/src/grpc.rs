//! The gRPC services (tonic + prost, `proto/ember.proto`): a learner serving central
//! inference to actors over bidirectional streams, and the parameter server; with
//! synchronous clients ([`RemoteActor`], [`RemoteTrainer`]) that reconnect with backoff and
//! jitter when the server restarts.
//!
//! Limits are explicit: a message over [`GrpcLimits::max_message_bytes`] or a request of
//! more than [`GrpcLimits::max_rows`] rows gets a gRPC status, and so does a request of the
//! wrong width or with a NaN; only that actor's stream ends, every other stream goes on.
//! A learner holds at most [`GrpcLimits::max_streams`] actor streams at once and reads each
//! at most [`GrpcLimits::max_stream_rate`] messages per second, so that one flooding peer
//! cannot starve the others or grow memory.
//!
//! Security ([`security`]): the `*_secured` constructors take a token that every call and
//! stream must carry and TLS (rustls, optionally mutual); the plain constructors serve and
//! dial plain text without a token, for tests and loopback.

mod ingest;
mod limits;
mod listener;
mod policy;
pub mod security;
mod service;

pub use ingest::{BatchRules, TransitionIngest};
pub use limits::{GrpcLimits, PeerStats, Refusals, ServerStats};
pub use policy::{PolicyBoard, PolicyClient, PublishedPolicy};
pub use security::{ClientSecurity, ClientTls, SelfSigned, ServerSecurity, ServerTls, Token};

use crate::inference::InferenceHandle;
use crate::parameter_server::{ParameterServer, TrainerHandle, Weights};
use ember_algo::{ActionBuf, Agent};
use ember_core::{EmberRng, Error, Result};
use limits::{Peers, descriptor_limit};
use security::{TokenAuth, TokenCheck};
use service::LearnerImpl;
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;
use std::time::{Duration, Instant};
use tokio::sync::{mpsc, oneshot};
use tokio_stream::wrappers::ReceiverStream;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint};
use tonic::{Request, Response, Status, Streaming};

/// The generated protobuf messages and service stubs (`proto/ember.proto`).
#[allow(missing_docs, clippy::all)]
pub mod proto {
    tonic::include_proto!("ember.v1");
}

use proto::learner_server::LearnerServer;
use proto::parameter_server_server::{
    ParameterServer as PsService, ParameterServerServer as PsServer,
};

/// The kind of actions a learner answers with.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum ActionKind {
    /// One index per row.
    Discrete,
    /// A vector per row.
    Continuous,
}

impl ActionKind {
    pub(crate) fn name(self) -> &'static str {
        match self {
            ActionKind::Discrete => "discrete",
            ActionKind::Continuous => "continuous",
        }
    }
}

fn io_unavailable(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Unavailable {
        what: what.into(),
        hint: e.to_string(),
    }
}

/// How long a stopping server lets open streams finish before dropping them.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(200);

/// A gRPC server running on its own threads (a tokio runtime); stops when dropped (open
/// streams get 200 ms to finish, then their actors see the connection close).
pub struct GrpcServer {
    addr: SocketAddr,
    refused: Arc<AtomicU64>,
    peers: Peers,
    shutdown: Option<oneshot::Sender<()>>,
    thread: Option<JoinHandle<()>>,
}

impl GrpcServer {
    /// Serves central inference from `inference` (a running [`crate::InferenceServer`]'s
    /// handle) at `addr` (`"127.0.0.1:0"` picks a free port: see
    /// [`GrpcServer::local_addr`]).
    ///
    /// # Errors
    /// The address cannot be bound; the runtime cannot start.
    pub fn learner(
        addr: &str,
        inference: InferenceHandle,
        kind: ActionKind,
        limits: GrpcLimits,
    ) -> Result<Self> {
        Self::learner_with_transitions(addr, inference, kind, None, limits)
    }

    /// [`GrpcServer::learner`] that also takes transitions from actors into `ingest`.
    ///
    /// # Errors
    /// The address cannot be bound; the runtime cannot start.
    pub fn learner_with_transitions(
        addr: &str,
        inference: InferenceHandle,
        kind: ActionKind,
        ingest: Option<TransitionIngest>,
        limits: GrpcLimits,
    ) -> Result<Self> {
        let services = LearnerServices {
            inference,
            kind,
            ingest,
            policy: None,
        };
        Self::learner_services(addr, services, limits)
    }

    /// The learner service with every part `services` names.
    ///
    /// # Errors
    /// The address cannot be bound; the runtime cannot start.
    pub fn learner_services(
        addr: &str,
        services: LearnerServices,
        limits: GrpcLimits,
    ) -> Result<Self> {
        Self::learner_services_secured(addr, services, limits, &ServerSecurity::insecure())
    }

    /// [`GrpcServer::learner_services`] demanding `security`'s token and TLS.
    ///
    /// # Errors
    /// The address cannot be bound; the runtime cannot start; the TLS certificate or key
    /// is unusable.
    pub fn learner_services_secured(
        addr: &str,
        services: LearnerServices,
        limits: GrpcLimits,
        security: &ServerSecurity,
    ) -> Result<Self> {
        let peers = Peers::new(limits, limits.connections_within(descriptor_limit()));
        let service = LearnerImpl {
            inference: services.inference,
            kind: services.kind,
            limits,
            ingest: services.ingest,
            policy: services.policy,
            peers: peers.clone(),
        };
        let svc = LearnerServer::new(service)
            .max_decoding_message_size(limits.max_message_bytes)
            .max_encoding_message_size(limits.max_message_bytes);
        Self::start(addr, security, limits, peers, move |b, check| {
            b.add_service(InterceptedService::new(svc, check))
        })
    }

    /// Serves `ps` (trainers `0..trainers` submit over gRPC) at `addr`.
    ///
    /// # Errors
    /// The address cannot be bound; the runtime cannot start.
    pub fn parameter_server(addr: &str, ps: &ParameterServer, limits: GrpcLimits) -> Result<Self> {
        Self::parameter_server_secured(addr, ps, limits, &ServerSecurity::insecure())
    }

    /// [`GrpcServer::parameter_server`] demanding `security`'s token and TLS.
    ///
    /// # Errors
    /// The address cannot be bound; the runtime cannot start; the TLS certificate or key
    /// is unusable.
    pub fn parameter_server_secured(
        addr: &str,
        ps: &ParameterServer,
        limits: GrpcLimits,
        security: &ServerSecurity,
    ) -> Result<Self> {
        let trainers = (0..ps.trainers())
            .map(|id| ps.trainer(id))
            .collect::<Result<Vec<_>>>()?;
        let svc = PsServer::new(PsImpl {
            trainers: Arc::new(trainers),
        })
        .max_decoding_message_size(limits.max_message_bytes)
        .max_encoding_message_size(limits.max_message_bytes);
        let peers = Peers::new(limits, limits.connections_within(descriptor_limit()));
        Self::start(addr, security, limits, peers, move |b, check| {
            b.add_service(InterceptedService::new(svc, check))
        })
    }

    /// Calls refused for a missing or wrong token since the server started.
    pub fn refused(&self) -> u64 {
        self.refused.load(Ordering::Relaxed)
    }

    /// Open connections and streams, each peer's share, and refusals by reason.
    pub fn stats(&self) -> ServerStats {
        let mut stats = self.peers.stats();
        stats.refused.token = self.refused();
        stats
    }

    fn start(
        addr: &str,
        security: &ServerSecurity,
        limits: GrpcLimits,
        peers: Peers,
        add: impl FnOnce(&mut tonic::transport::Server, TokenCheck) -> tonic::transport::server::Router
        + Send
        + 'static,
    ) -> Result<Self> {
        let refused = Arc::new(AtomicU64::new(0));
        let check = TokenCheck {
            token: security.token.clone(),
            refused: refused.clone(),
        };
        // HTTP/2 keepalive frees the slots of a dead peer; the stream cap per connection
        // bounds what one connection can hold (tonic's own default is no limit).
        let mut server = tonic::transport::Server::builder()
            .max_concurrent_streams(Some(limits.max_streams_per_connection))
            .http2_keepalive_interval(Some(limits.keepalive))
            .http2_keepalive_timeout(Some(limits.keepalive));
        if let Some(tls) = &security.tls {
            let tls = tls.config().timeout(limits.handshake_timeout);
            server = server.tls_config(tls).map_err(|e| {
                Error::invalid("TLS certificate and key", "the server's", error_chain(&e))
            })?;
        }
        let listener = std::net::TcpListener::bind(addr)
            .map_err(|e| io_unavailable(&format!("listening on {addr}"), e))?;
        listener
            .set_nonblocking(true)
            .map_err(|e| io_unavailable("a non-blocking listener", e))?;
        let local = listener
            .local_addr()
            .map_err(|e| io_unavailable("the bound address", e))?;
        let runtime = tokio::runtime::Builder::new_multi_thread()
            .worker_threads(2)
            .thread_name("ember-grpc")
            .enable_all()
            .build()
            .map_err(|e| io_unavailable("a tokio runtime", e))?;
        let (tx, rx) = oneshot::channel::<()>();
        let accept_peers = peers.clone();
        let thread = std::thread::Builder::new()
            .name("ember-grpc-server".into())
            .spawn(move || {
                runtime.block_on(async move {
                    let listener = match tokio::net::TcpListener::from_std(listener) {
                        Ok(l) => l,
                        Err(e) => {
                            eprintln!("ember gRPC server at {local}: {e}");
                            return;
                        }
                    };
                    let router = add(&mut server, check);
                    let incoming =
                        listener::incoming(listener, accept_peers, limits.handshake_timeout);
                    // Stop: refuse new connections at once, give open streams a moment to
                    // finish, then drop them (an idle actor stream would otherwise hold a
                    // graceful shutdown forever).
                    let (stop_tx, mut stop_rx) = tokio::sync::watch::channel(false);
                    let mut graceful = stop_rx.clone();
                    let serve = router.serve_with_incoming_shutdown(incoming, async move {
                        let _ = graceful.changed().await;
                    });
                    let hard = async move {
                        let _ = rx.await;
                        let _ = stop_tx.send(true);
                        let _ = stop_rx.changed().await;
                        tokio::time::sleep(SHUTDOWN_GRACE).await;
                    };
                    tokio::select! {
                        r = serve => if let Err(e) = r {
                            eprintln!("ember gRPC server at {local}: {e}");
                        },
                        () = hard => {}
                    }
                });
                runtime.shutdown_timeout(SHUTDOWN_GRACE);
            })
            .map_err(|e| io_unavailable("a gRPC server thread", e))?;
        Ok(GrpcServer {
            addr: local,
            refused,
            peers,
            shutdown: Some(tx),
            thread: Some(thread),
        })
    }

    /// The address the server listens on.
    pub fn local_addr(&self) -> SocketAddr {
        self.addr
    }
}

impl Drop for GrpcServer {
    fn drop(&mut self) {
        if let Some(tx) = self.shutdown.take() {
            let _ = tx.send(());
        }
        if let Some(t) = self.thread.take() {
            let _ = t.join();
        }
    }
}

/// What a learner serves: central inference always; the transition stream and policy
/// publication when given.
pub struct LearnerServices {
    /// Central inference (`Learner.Act`).
    pub inference: InferenceHandle,
    /// The kind of actions it answers with.
    pub kind: ActionKind,
    /// The transition stream's ingest (`Learner.Transitions`; `None`: refused).
    pub ingest: Option<TransitionIngest>,
    /// Policy publication for actors that act locally (`Learner.Policy`; `None`: refused).
    pub policy: Option<PolicyBoard>,
}

struct PsImpl {
    trainers: Arc<Vec<TrainerHandle>>,
}

fn weights_message(w: Weights) -> proto::Weights {
    proto::Weights {
        version: w.version,
        params: w.params.as_ref().clone(),
    }
}

fn status_of(e: Error) -> Status {
    match e {
        Error::Unavailable { .. } => Status::unavailable(e.to_string()),
        _ => Status::invalid_argument(e.to_string()),
    }
}

#[tonic::async_trait]
impl PsService for PsImpl {
    async fn submit(
        &self,
        request: Request<proto::Gradient>,
    ) -> std::result::Result<Response<proto::Weights>, Status> {
        let g = request.into_inner();
        let trainer = self
            .trainers
            .get(g.trainer as usize)
            .cloned()
            .ok_or_else(|| {
                Status::invalid_argument(format!(
                    "trainer id {}, expected one in 0..{}",
                    g.trainer,
                    self.trainers.len()
                ))
            })?;
        let w = tokio::task::spawn_blocking(move || trainer.submit(g.version, g.values))
            .await
            .map_err(|e| Status::internal(e.to_string()))?
            .map_err(status_of)?;
        Ok(Response::new(weights_message(w)))
    }

    async fn current(
        &self,
        _request: Request<proto::CurrentRequest>,
    ) -> std::result::Result<Response<proto::Weights>, Status> {
        Ok(Response::new(weights_message(self.trainers[0].weights())))
    }
}

/// How clients retry: exponential backoff with jitter, for at most `give_up_after`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Backoff {
    /// The first wait.
    pub initial: Duration,
    /// The longest wait.
    pub max: Duration,
    /// Retry for at most this long, then return the error.
    pub give_up_after: Duration,
}

impl Default for Backoff {
    fn default() -> Self {
        Backoff {
            initial: Duration::from_millis(20),
            max: Duration::from_secs(1),
            give_up_after: Duration::from_secs(30),
        }
    }
}

impl Backoff {
    /// Wait number `attempt` (0-based): `initial · 2^attempt`, capped at `max`, times a
    /// uniform factor in `[0.5, 1.5)` so that restarted actors do not reconnect in step.
    pub fn wait(&self, attempt: u32, rng: &mut EmberRng) -> Duration {
        let base = self
            .initial
            .saturating_mul(1u32 << attempt.min(16))
            .min(self.max);
        base.mul_f64(0.5 + rng.next_f64())
    }
}

/// `addr` as a URI (`http://` added to a bare `host:port`).
fn http_addr(addr: &str) -> String {
    if addr.contains("://") {
        addr.to_string()
    } else {
        format!("http://{addr}")
    }
}

/// A connection with the token added to every call.
type Dialled = InterceptedService<Channel, TokenAuth>;

/// Connects to `addr` (`https://` when `security` has TLS) and adds its token to every
/// call. A TLS failure (an untrusted certificate, a plain-text server) is
/// `UNAUTHENTICATED`, not worth a retry; an unreachable server is `UNAVAILABLE`.
async fn dial(addr: &str, security: &ClientSecurity) -> std::result::Result<Dialled, Status> {
    let bare = addr.split_once("://").map_or(addr, |(_, rest)| rest);
    let uri = if security.tls.is_some() {
        format!("https://{bare}")
    } else {
        http_addr(addr)
    };
    let mut endpoint = Endpoint::from_shared(uri.clone())
        .map_err(|e| Status::invalid_argument(format!("the address {addr}: {e}")))?;
    if let Some(tls) = &security.tls {
        let host = endpoint
            .uri()
            .host()
            .unwrap_or("localhost")
            .trim_start_matches('[')
            .trim_end_matches(']')
            .to_string();
        endpoint = endpoint
            .tls_config(tls.config(&host))
            .map_err(|e| Status::invalid_argument(format!("TLS settings: {}", error_chain(&e))))?;
    }
    let channel = endpoint
        .connect()
        .await
        .map_err(|e| match security::tls_failure(&e) {
            Some(why) => Status::unauthenticated(format!("TLS with {uri}: {why}")),
            None => Status::unavailable(error_chain(&e)),
        })?;
    Ok(InterceptedService::new(
        channel,
        TokenAuth::new(security.token.as_ref()),
    ))
}

/// An error and its sources, on one line.
fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
    let mut text = e.to_string();
    let mut cur = e.source();
    while let Some(s) = cur {
        let part = s.to_string();
        if !text.contains(&part) {
            text.push_str(": ");
            text.push_str(&part);
        }
        cur = s.source();
    }
    text
}

fn client_runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| io_unavailable("a tokio runtime", e))
}

fn jitter_rng() -> EmberRng {
    let nanos = std::time::SystemTime::now()
        .duration_since(std::time::UNIX_EPOCH)
        .map(|d| d.as_nanos() as u64)
        .unwrap_or(0);
    EmberRng::seed_from(nanos ^ u64::from(std::process::id()).rotate_left(32))
}

/// Calls `open` until it succeeds, sleeping `backoff` (with jitter) after each transport
/// failure, until `give_up_after` has passed since `start`; then, or on a refusal, the
/// error names `what` (and, for a client that dials `plain` text, that a TLS server would
/// look like this).
fn open_with_backoff(
    backoff: &Backoff,
    rng: &mut EmberRng,
    start: Instant,
    plain: bool,
    what: impl FnOnce() -> String,
    mut open: impl FnMut() -> std::result::Result<(), Status>,
) -> Result<()> {
    let mut attempt = 0;
    loop {
        match open() {
            Ok(()) => return Ok(()),
            Err(status) if is_transport(&status) && start.elapsed() < backoff.give_up_after => {
                std::thread::sleep(backoff.wait(attempt, rng));
                attempt += 1;
            }
            Err(status) => {
                return Err(Error::Unavailable {
                    what: what(),
                    hint: refusal_hint(&status, plain),
                });
            }
        }
    }
}

/// A status as one line, with what to check when the server refused who we are. A client
/// that dials `plain` text and fails at the transport may be talking to a TLS server: its
/// handshake failure reaches the client as an h2 error or, depending on timing, as a
/// dropped connection.
fn refusal_hint(status: &Status, plain: bool) -> String {
    let advice = match status.code() {
        tonic::Code::Unauthenticated => "; check the token and the TLS settings",
        tonic::Code::Internal if status.message().contains("h2 protocol error") => {
            "; is this a TLS server dialled in plain text? give the client its CA"
        }
        _ if plain && is_transport(status) => {
            "; if it serves TLS, it was dialled in plain text: give the client its CA"
        }
        _ => "",
    };
    format!("{} ({:?}){advice}", status.message(), status.code())
}

/// Whether a status means the connection or the server went away (worth a reconnect),
/// rather than a refusal of this request.
fn is_transport(status: &Status) -> bool {
    matches!(
        status.code(),
        tonic::Code::Unavailable
            | tonic::Code::Unknown
            | tonic::Code::Cancelled
            | tonic::Code::Aborted
            // The learner closed a stream that stayed idle past its timeout.
            | tonic::Code::DeadlineExceeded
    )
}

/// How long a client waits for one answer (an action, an acknowledgement) before it
/// counts the connection as lost and reconnects: a learner that holds a stream open and
/// never answers cannot hang an actor.
pub const REPLY_TIMEOUT: Duration = Duration::from_secs(60);

/// `answer`, or `UNAVAILABLE` once [`REPLY_TIMEOUT`] has passed.
async fn answer_within<T>(
    answer: impl std::future::Future<Output = std::result::Result<T, Status>>,
) -> std::result::Result<T, Status> {
    tokio::time::timeout(REPLY_TIMEOUT, answer)
        .await
        .unwrap_or_else(|_| {
            Err(Status::unavailable(format!(
                "no answer from the learner in {} s",
                REPLY_TIMEOUT.as_secs()
            )))
        })
}

struct ActStream {
    tx: mpsc::Sender<proto::ActRequest>,
    rx: Streaming<proto::ActResponse>,
}

/// An actor's synchronous connection to a learner's central inference: holds one
/// bidirectional stream, and when the learner goes away reconnects with [`Backoff`] and
/// resends the request (inference has no side effects). Implements [`Agent`], so an env
/// loop acts through it as through a local policy.
pub struct RemoteActor {
    runtime: tokio::runtime::Runtime,
    addr: String,
    security: ClientSecurity,
    limits: usize,
    backoff: Backoff,
    rng: EmberRng,
    stream: Option<ActStream>,
    obs_dim: usize,
    kind: ActionKind,
    seq: u64,
    version: u64,
    reconnects: u64,
}

impl RemoteActor {
    /// Connects to the learner at `addr` (`"http://127.0.0.1:50051"` or `"127.0.0.1:50051"`),
    /// retrying with `backoff` while it is not up yet.
    ///
    /// # Errors
    /// The learner cannot be reached within `backoff.give_up_after`, or it answers with an
    /// unknown action kind.
    pub fn connect(addr: &str, backoff: Backoff) -> Result<Self> {
        Self::connect_secured(addr, backoff, ClientSecurity::insecure())
    }

    /// [`RemoteActor::connect`] with `security`'s token and TLS.
    ///
    /// # Errors
    /// As [`RemoteActor::connect`]; a refused token or TLS handshake fails at once.
    pub fn connect_secured(addr: &str, backoff: Backoff, security: ClientSecurity) -> Result<Self> {
        let mut actor = RemoteActor {
            runtime: client_runtime()?,
            addr: addr.to_string(),
            security,
            limits: GrpcLimits::default().max_message_bytes,
            backoff,
            rng: jitter_rng(),
            stream: None,
            obs_dim: 0,
            kind: ActionKind::Discrete,
            seq: 0,
            version: 0,
            reconnects: 0,
        };
        actor.reconnect()?;
        actor.reconnects = 0;
        Ok(actor)
    }

    fn open(&mut self) -> std::result::Result<(), Status> {
        let (addr, limit, security) = (&self.addr, self.limits, &self.security);
        let (stream, info) = self.runtime.block_on(async move {
            let mut client = proto::learner_client::LearnerClient::new(dial(addr, security).await?)
                .max_decoding_message_size(limit)
                .max_encoding_message_size(limit);
            let info = client.info(proto::InfoRequest {}).await?.into_inner();
            let (tx, rx) = mpsc::channel(2);
            let rx = client.act(ReceiverStream::new(rx)).await?.into_inner();
            Ok::<_, Status>((ActStream { tx, rx }, info))
        })?;
        self.kind = match info.action_kind.as_str() {
            "discrete" => ActionKind::Discrete,
            "continuous" => ActionKind::Continuous,
            other => {
                return Err(Status::failed_precondition(format!(
                    "the learner serves actions of kind `{other}`"
                )));
            }
        };
        self.obs_dim = info.obs_dim as usize;
        self.limits = self.limits.min(info.max_message_bytes as usize).max(1024);
        self.stream = Some(stream);
        Ok(())
    }

    /// (Re)opens the stream, waiting with backoff while the learner is unreachable.
    fn reconnect(&mut self) -> Result<()> {
        let (backoff, mut rng) = (self.backoff, self.rng.clone());
        let what = format!("the learner at {}", self.addr);
        let plain = self.security.is_plain();
        let result = open_with_backoff(
            &backoff,
            &mut rng,
            Instant::now(),
            plain,
            || what,
            || self.open(),
        );
        self.rng = rng;
        result?;
        self.reconnects += 1;
        Ok(())
    }

    fn exchange(
        &mut self,
        req: proto::ActRequest,
    ) -> std::result::Result<proto::ActResponse, Status> {
        let stream = self
            .stream
            .as_mut()
            .ok_or_else(|| Status::unavailable("not connected"))?;
        self.runtime.block_on(async {
            stream
                .tx
                .send(req)
                .await
                .map_err(|_| Status::unavailable("the stream to the learner closed"))?;
            match answer_within(stream.rx.message()).await? {
                Some(r) => Ok(r),
                None => Err(Status::unavailable("the learner ended the stream")),
            }
        })
    }

    /// Actions for the rows of `obs` into `out` and the policy version that chose them;
    /// reconnects (with backoff) and resends if the learner went away.
    ///
    /// # Errors
    /// A request the learner refuses (wrong width, NaN, too many rows: the status's text),
    /// the agent's failure on these rows, or the learner unreachable for longer than the
    /// backoff allows.
    pub fn act_remote(&mut self, obs: &[f32], explore: bool, out: &mut ActionBuf) -> Result<u64> {
        self.seq += 1;
        let req = proto::ActRequest {
            obs: obs.to_vec(),
            explore,
            seq: self.seq,
        };
        let start = Instant::now();
        let mut attempt = 0;
        let r = loop {
            match self.exchange(req.clone()) {
                Ok(r) => break r,
                Err(status)
                    if is_transport(&status) && start.elapsed() < self.backoff.give_up_after =>
                {
                    self.stream = None;
                    std::thread::sleep(self.backoff.wait(attempt, &mut self.rng));
                    attempt += 1;
                    // A failed reconnect within the budget: loop and try again.
                    let _ = self.open().map(|()| self.reconnects += 1);
                }
                Err(status) => {
                    self.stream = None;
                    return Err(Error::invalid(
                        "request to the learner",
                        format!("{} rows", obs.len() / self.obs_dim.max(1)),
                        format!("{} ({:?})", status.message(), status.code()),
                    ));
                }
            }
        };
        if !r.error.is_empty() {
            return Err(Error::Unavailable {
                what: "actions from the learner".into(),
                hint: r.error,
            });
        }
        if r.seq != req.seq {
            self.stream = None;
            return Err(Error::Corrupt {
                path: self.addr.clone().into(),
                kind: "action stream".into(),
                reason: format!("answer {} to request {}", r.seq, req.seq),
            });
        }
        match self.kind {
            ActionKind::Discrete => {
                let o = match out {
                    ActionBuf::Discrete(o) => o,
                    other => {
                        *other = ActionBuf::Discrete(Vec::new());
                        other.discrete_mut("remote actor")?
                    }
                };
                o.clear();
                o.extend(r.discrete.iter().map(|&a| a as usize));
            }
            ActionKind::Continuous => {
                let o = match out {
                    ActionBuf::Continuous(o) => o,
                    other => {
                        *other = ActionBuf::Continuous(Vec::new());
                        other.continuous_mut("remote actor")?
                    }
                };
                o.clear();
                o.extend_from_slice(&r.continuous);
            }
        }
        self.version = r.version;
        Ok(r.version)
    }

    /// The policy version of the last answer.
    pub fn version(&self) -> u64 {
        self.version
    }

    /// Reconnections since [`RemoteActor::connect`].
    pub fn reconnects(&self) -> u64 {
        self.reconnects
    }

    /// The kind of actions the learner answers with.
    pub fn action_kind(&self) -> ActionKind {
        self.kind
    }
}

impl Agent for RemoteActor {
    fn obs_dim(&self) -> usize {
        self.obs_dim
    }

    fn act(&mut self, obs: &[f32], explore: bool, out: &mut ActionBuf) -> Result<()> {
        self.act_remote(obs, explore, out).map(|_| ())
    }
}

/// An actor's synchronous transition stream to a learner: each batch is sent with the
/// actor's id, run id and the next sequence number, and [`TransitionSender::send`] returns
/// once the learner acknowledged it (durable in its log). When the learner goes away the
/// sender reconnects with [`Backoff`] and resends the unacknowledged batch; the learner
/// recognises a batch it already stored.
pub struct TransitionSender {
    runtime: tokio::runtime::Runtime,
    addr: String,
    security: ClientSecurity,
    backoff: Backoff,
    rng: EmberRng,
    actor: u64,
    run: u64,
    seq: u64,
    width: u32,
    stream: Option<(mpsc::Sender<proto::TransitionBatch>, Streaming<proto::Ack>)>,
    reconnects: u64,
    learner_finished: bool,
}

impl TransitionSender {
    /// Connects as `actor` (run id `run`: new for every start of the actor process) to the
    /// learner at `addr`, for rows of `width` values, retrying with `backoff`.
    ///
    /// # Errors
    /// The learner cannot be reached within the backoff budget.
    pub fn connect(addr: &str, actor: u64, run: u64, width: u32, backoff: Backoff) -> Result<Self> {
        Self::connect_secured(addr, actor, run, width, backoff, ClientSecurity::insecure())
    }

    /// [`TransitionSender::connect`] with `security`'s token and TLS.
    ///
    /// # Errors
    /// As [`TransitionSender::connect`]; a refused token or TLS handshake fails at once.
    pub fn connect_secured(
        addr: &str,
        actor: u64,
        run: u64,
        width: u32,
        backoff: Backoff,
        security: ClientSecurity,
    ) -> Result<Self> {
        let mut sender = TransitionSender {
            runtime: client_runtime()?,
            addr: addr.to_string(),
            security,
            backoff,
            rng: jitter_rng(),
            actor,
            run,
            seq: 0,
            width,
            stream: None,
            reconnects: 0,
            learner_finished: false,
        };
        sender.reopen(Instant::now())?;
        sender.reconnects = 0;
        Ok(sender)
    }

    fn open(&mut self) -> std::result::Result<(), Status> {
        let (addr, security) = (&self.addr, &self.security);
        let stream = self.runtime.block_on(async move {
            let mut client = proto::learner_client::LearnerClient::new(dial(addr, security).await?);
            let (tx, rx) = mpsc::channel(2);
            let acks = client
                .transitions(ReceiverStream::new(rx))
                .await?
                .into_inner();
            Ok::<_, Status>((tx, acks))
        })?;
        self.stream = Some(stream);
        Ok(())
    }

    fn reopen(&mut self, start: Instant) -> Result<()> {
        let (backoff, mut rng) = (self.backoff, self.rng.clone());
        let what = format!("the learner's transition stream at {}", self.addr);
        let plain = self.security.is_plain();
        let result = open_with_backoff(&backoff, &mut rng, start, plain, || what, || self.open());
        self.rng = rng;
        result?;
        self.reconnects += 1;
        Ok(())
    }

    /// Sends rows of `width` values as the next batch and waits for the acknowledgement;
    /// `true` if the learner had already stored it (a resend after a lost acknowledgement).
    ///
    /// # Errors
    /// A batch the learner refuses (width, NaN, size: the status's text), or the learner
    /// unreachable for longer than the backoff allows. The batch is then not acknowledged:
    /// send it again (it keeps its sequence number, so a copy the learner did store is
    /// recognised).
    pub fn send(&mut self, values: &[f32]) -> Result<bool> {
        self.seq += 1;
        let batch = proto::TransitionBatch {
            actor: self.actor,
            run: self.run,
            seq: self.seq,
            width: self.width,
            values: values.to_vec(),
        };
        let start = Instant::now();
        loop {
            let attempt = match self.stream.as_mut() {
                None => Err(Status::unavailable("not connected")),
                Some((tx, acks)) => self.runtime.block_on(async {
                    tx.send(batch.clone())
                        .await
                        .map_err(|_| Status::unavailable("the transition stream closed"))?;
                    match answer_within(acks.message()).await? {
                        Some(ack) => Ok(ack),
                        None => Err(Status::unavailable("the learner ended the stream")),
                    }
                }),
            };
            match attempt {
                Ok(ack) if ack.seq == batch.seq => {
                    self.learner_finished |= ack.finished;
                    return Ok(ack.duplicate);
                }
                Ok(ack) => {
                    self.stream = None;
                    return Err(Error::Corrupt {
                        path: self.addr.clone().into(),
                        kind: "transition stream".into(),
                        reason: format!("acknowledgement {} for batch {}", ack.seq, batch.seq),
                    });
                }
                Err(status)
                    if is_transport(&status) && start.elapsed() < self.backoff.give_up_after =>
                {
                    self.stream = None;
                    if let Err(e) = self.reopen(start) {
                        // Not acknowledged: the same batch, sent again, keeps its number
                        // (the learner may have stored it before the connection broke).
                        self.seq -= 1;
                        return Err(e);
                    }
                }
                Err(status) => {
                    self.stream = None;
                    self.seq -= 1;
                    return Err(Error::invalid(
                        "transition batch",
                        batch.seq,
                        format!("{} ({:?})", status.message(), status.code()),
                    ));
                }
            }
        }
    }

    /// Batches sent and acknowledged so far (the last sequence number).
    pub fn acknowledged(&self) -> u64 {
        self.seq
    }

    /// Reconnections since [`TransitionSender::connect`].
    pub fn reconnects(&self) -> u64 {
        self.reconnects
    }

    /// Whether an acknowledgement said the learner has finished training.
    pub fn learner_finished(&self) -> bool {
        self.learner_finished
    }
}

/// A trainer's synchronous connection to a parameter server over gRPC.
pub struct RemoteTrainer {
    runtime: tokio::runtime::Runtime,
    client: proto::parameter_server_client::ParameterServerClient<Dialled>,
    id: u32,
}

impl RemoteTrainer {
    /// Connects as trainer `id` to the parameter server at `addr`.
    ///
    /// # Errors
    /// The server cannot be reached.
    pub fn connect(addr: &str, id: u32, limits: GrpcLimits) -> Result<Self> {
        Self::connect_secured(addr, id, limits, &ClientSecurity::insecure())
    }

    /// [`RemoteTrainer::connect`] with `security`'s token and TLS.
    ///
    /// # Errors
    /// The server cannot be reached; the TLS handshake fails.
    pub fn connect_secured(
        addr: &str,
        id: u32,
        limits: GrpcLimits,
        security: &ClientSecurity,
    ) -> Result<Self> {
        let runtime = client_runtime()?;
        let client = runtime
            .block_on(dial(addr, security))
            .map(proto::parameter_server_client::ParameterServerClient::new)
            .map_err(|e| io_unavailable(&format!("the parameter server at {addr}"), e.message()))?
            .max_decoding_message_size(limits.max_message_bytes)
            .max_encoding_message_size(limits.max_message_bytes);
        Ok(RemoteTrainer {
            runtime,
            client,
            id,
        })
    }

    /// Submits `grad` (computed against `version`) and waits for the step of its round.
    ///
    /// # Errors
    /// The server's refusal (length, NaN, version, id) or a lost connection.
    pub fn submit(&mut self, version: u64, grad: Vec<f32>) -> Result<Weights> {
        let req = proto::Gradient {
            trainer: self.id,
            version,
            values: grad,
        };
        let w = self
            .runtime
            .block_on(self.client.submit(req))
            .map_err(|s| Error::invalid("gradient", format!("trainer {}", self.id), s.message()))?
            .into_inner();
        Ok(Weights {
            version: w.version,
            params: Arc::new(w.params),
        })
    }

    /// The server's current weights.
    ///
    /// # Errors
    /// A lost connection.
    pub fn current(&mut self) -> Result<Weights> {
        let w = self
            .runtime
            .block_on(self.client.current(proto::CurrentRequest {}))
            .map_err(|s| io_unavailable("the parameter server's weights", s.message()))?
            .into_inner();
        Ok(Weights {
            version: w.version,
            params: Arc::new(w.params),
        })
    }
}
