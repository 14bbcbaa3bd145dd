//! # emberlab-dist
//!
//! Many actors, one model (problem 4 of the design): in-process building blocks that the
//! gRPC services are built on.
//!
//! - [`InferenceServer`]: actors send observation rows through [`InferenceClient`]s; one
//!   thread runs one forward pass per batch (`max_batch` rows or `max_wait`, whichever comes
//!   first) with any [`emberlab_algo::Agent`], answers each actor with its actions and the
//!   policy version, and swaps weights between batches ([`InferenceServer::update`]).
//! - [`ParameterServer`]: K trainers submit gradients tagged with the weight version they
//!   were computed against; one optimizer step per round of all K (or a quorum after a
//!   deadline), new weights to everyone waiting; duplicates and stale gradients dropped.
//! - [`TransitionLog`]: the write-ahead log that makes an acknowledged transition durable
//!   (checksummed records, one `fsync` per appended group, torn tails cut on recovery,
//!   resends recognised by actor, run id and sequence number).
//! - [`grpc`] (feature `grpc`, default): both over gRPC (tonic + prost, `proto/ember.proto`
//!   compiled by protox: no `protoc`): [`GrpcServer`], and the synchronous clients
//!   [`RemoteActor`] (an [`emberlab_algo::Agent`] acting through a learner's central
//!   inference, reconnecting with backoff and jitter) and [`RemoteTrainer`].
//! - [`cluster`] (feature `grpc`): the learner and actor processes behind `ember serve`,
//!   `ember actor` and `ember launch` — training from streamed transitions, surviving a
//!   `kill -9` of the learner.
//!
//! ```
//! use emberlab_algo::{ActionBuf, Agent};
//! use emberlab_dist::{InferenceConfig, InferenceServer, ParameterServer, ParameterServerConfig, Sgd};
//!
//! // Any agent: here one that picks action 1 when the first observation value is positive.
//! struct Sign;
//! impl Agent for Sign {
//!     fn obs_dim(&self) -> usize { 2 }
//!     fn act(&mut self, obs: &[f32], _explore: bool, out: &mut ActionBuf) -> emberlab_core::Result<()> {
//!         let out = out.discrete_mut("Sign")?;
//!         out.clear();
//!         out.extend(obs.chunks(2).map(|r| (r[0] > 0.0) as usize));
//!         Ok(())
//!     }
//! }
//! let server = InferenceServer::spawn(Sign, ActionBuf::Discrete(vec![]), InferenceConfig::default())?;
//! let mut actor = server.client();
//! let mut actions = ActionBuf::Discrete(vec![]);
//! let version = actor.act(&[0.5, 0.0, -1.0, 3.0], true, &mut actions)?;
//! assert_eq!((version, actions), (0, ActionBuf::Discrete(vec![1, 0])));
//!
//! // Two trainers, one step per round of both: p ← p − 0.5 · mean(g).
//! let ps = ParameterServer::spawn(vec![1.0, 2.0], Sgd { lr: 0.5 }, ParameterServerConfig::new(2))?;
//! let (a, b) = (ps.trainer(0)?, ps.trainer(1)?);
//! let other = std::thread::spawn(move || b.submit(0, vec![2.0, 0.0]));
//! let w = a.submit(0, vec![0.0, 2.0])?;
//! assert_eq!((w.version, w.params.as_slice()), (1, &[0.5, 1.5][..]));
//! assert_eq!(other.join().unwrap()?, w);
//! # Ok::<(), emberlab_core::Error>(())
//! ```

#![warn(missing_docs)]

#[cfg(feature = "grpc")]
pub mod cluster;
#[cfg(feature = "grpc")]
pub mod grpc;
mod inference;
mod parameter_server;
mod wal;

#[cfg(feature = "grpc")]
pub use grpc::{
    ActionKind, Backoff, BatchRules, ClientSecurity, ClientTls, GrpcLimits, GrpcServer,
    LearnerServices, PeerId, PeerStats, PolicyBoard, PolicyClient, PublishedPolicy, Refusals,
    RemoteActor, RemoteTrainer, SelfSigned, ServerSecurity, ServerStats, ServerTls, Token,
    TransitionIngest, TransitionSender,
};

pub use inference::{
    InferenceClient, InferenceConfig, InferenceHandle, InferenceServer, InferenceStats,
};
pub use parameter_server::{
    Adam, FlatOptimizer, ParameterServer, ParameterServerConfig, ParameterServerStats, Sgd,
    TrainerHandle, Weights,
};
pub use wal::{
    Appended, DEFAULT_SEGMENT_BYTES, LogReader, Record, Released, Salvaged, TransitionLog,
};
