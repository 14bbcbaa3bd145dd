//! [`GrpcServer`]: the learner's and the parameter server's services on a runtime of their
//! own, behind the accept loop's caps (`listener`) and the token check.

use super::limits::{GrpcLimits, Peers, ServerStats, descriptor_limit};
use super::proto::learner_server::LearnerServer;
use super::proto::parameter_server_server::{
    ParameterServer as PsService, ParameterServerServer as PsServer,
};
use super::security::{ServerSecurity, TokenCheck};
use super::service::LearnerImpl;
use super::{
    ActionKind, PolicyBoard, TransitionIngest, error_chain, io_unavailable, listener, proto,
};
use crate::inference::InferenceHandle;
use crate::parameter_server::{ParameterServer, TrainerHandle, Weights};
use emberlab_core::{Error, Result};
use std::net::SocketAddr;
use std::sync::Arc;
use std::sync::atomic::Ordering;
use std::thread::JoinHandle;
use std::time::Duration;
use tokio::sync::oneshot;
use tonic::service::interceptor::InterceptedService;
use tonic::{Request, Response, Status};

/// How long a stopping server lets open streams finish before dropping them.
const SHUTDOWN_GRACE: Duration = Duration::from_millis(200);

/// A gRPC server running on its own threads (a tokio runtime); stops when dropped (open
/// streams get 200 ms to finish, then their actors see the connection close).
pub struct GrpcServer {
    addr: SocketAddr,
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
        self.peers.counters.token.load(Ordering::Relaxed)
    }

    /// Open connections and streams, each peer's share, and refusals by reason.
    pub fn stats(&self) -> ServerStats {
        self.peers.stats()
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
        let check = TokenCheck {
            token: security.token.clone(),
            refused: peers.counters.token.clone(),
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
