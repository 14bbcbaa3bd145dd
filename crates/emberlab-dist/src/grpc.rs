//! The gRPC services (tonic + prost, `proto/ember.proto`): a learner serving central
//! inference to actors over bidirectional streams, and the parameter server; with
//! synchronous clients ([`RemoteActor`], [`RemoteTrainer`]) that reconnect with backoff and
//! jitter when the server restarts.
//!
//! No peer can stop, stall or exhaust a server: a message over
//! [`GrpcLimits::max_message_bytes`], a request of more than [`GrpcLimits::max_rows`] rows,
//! of the wrong width or with a NaN, and a transition batch that breaks the learner's
//! [`BatchRules`] get a gRPC status and end only that stream (nothing of a refused batch is
//! stored). Connections are capped in all and per peer (the client's address) and must
//! start talking within a deadline; streams are capped in all, per peer and per
//! connection, end when idle, and hold no thread while they wait; each peer's rows, bytes
//! and unary calls are paced over all its streams ([`GrpcLimits`], `limits`). What a server
//! holds and has refused: [`GrpcServer::stats`].
//!
//! Jobs: `server` ([`GrpcServer`]), `listener` (the accept loop), `service` (the learner's
//! service), `ingest` ([`TransitionIngest`]), `policy` ([`PolicyBoard`], [`PolicyClient`]),
//! `client` (the other clients), `limits`, [`security`].
//!
//! Security ([`security`]): the `*_secured` constructors take a token that every call and
//! stream must carry and TLS (rustls, optionally mutual); the plain constructors serve and
//! dial plain text without a token, for tests and loopback.

mod client;
mod ingest;
mod limits;
mod listener;
mod policy;
pub mod security;
mod server;
mod service;

pub use client::{Backoff, REPLY_TIMEOUT, RemoteActor, RemoteTrainer, TransitionSender};
pub use ingest::{BatchRules, TransitionIngest};
pub use limits::{GrpcLimits, PeerId, PeerStats, Refusals, ServerStats};
pub use policy::{PolicyBoard, PolicyClient, PublishedPolicy};
pub use security::{ClientSecurity, ClientTls, SelfSigned, ServerSecurity, ServerTls, Token};
pub use server::{GrpcServer, LearnerServices};

use client::{
    Dialled, client_runtime, dial, is_transport, jitter_rng, open_with_backoff, refusal_hint,
};
use emberlab_core::Error;

/// The generated protobuf messages and service stubs (`proto/ember.proto`).
#[allow(missing_docs, clippy::all)]
pub mod proto {
    tonic::include_proto!("ember.v1");
}

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

pub(crate) fn io_unavailable(what: &str, e: impl std::fmt::Display) -> Error {
    Error::Unavailable {
        what: what.into(),
        hint: e.to_string(),
    }
}

/// An error and its sources, on one line.
pub(crate) fn error_chain(e: &(dyn std::error::Error + 'static)) -> String {
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
