//! The synchronous clients of the services — [`RemoteActor`], [`TransitionSender`],
//! [`RemoteTrainer`] — and how every client dials, waits and reconnects ([`Backoff`]).

use super::security::{self, ClientSecurity, TokenAuth};
use super::{ActionKind, GrpcLimits, error_chain, io_unavailable, proto};
use crate::parameter_server::Weights;
use emberlab_algo::{ActionBuf, Agent};
use emberlab_core::{EmberRng, Error, Result};
use std::sync::Arc;
use std::time::{Duration, Instant};
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::service::interceptor::InterceptedService;
use tonic::transport::{Channel, Endpoint};
use tonic::{Status, Streaming};

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
pub(super) type Dialled = InterceptedService<Channel, TokenAuth>;

/// Connects to `addr` (`https://` when `security` has TLS) and adds its token to every
/// call. A TLS failure (an untrusted certificate, a plain-text server) is
/// `UNAUTHENTICATED`, not worth a retry; an unreachable server is `UNAVAILABLE`.
pub(super) async fn dial(
    addr: &str,
    security: &ClientSecurity,
) -> std::result::Result<Dialled, Status> {
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

pub(super) fn client_runtime() -> Result<tokio::runtime::Runtime> {
    tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .map_err(|e| io_unavailable("a tokio runtime", e))
}

pub(super) fn jitter_rng() -> EmberRng {
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
pub(super) fn open_with_backoff(
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
pub(super) fn refusal_hint(status: &Status, plain: bool) -> String {
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
pub(super) fn is_transport(status: &Status) -> bool {
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
