//! The learner's gRPC service (`ember.v1.Learner`): central inference and the transition
//! stream, each stream an async task that holds no thread while it waits, takes a slot of
//! its peer's and is paced by its peer's rows and bytes; `Info` and `Policy` paced per
//! peer too.

use super::ingest::TransitionIngest;
use super::limits::{Counters, GrpcLimits, Pace, PeerId, Peers};
use super::proto::{self, learner_server::Learner};
use super::{ActionKind, PolicyBoard};
use crate::inference::InferenceHandle;
use crate::wal::{Appended, Record};
use emberlab_algo::ActionBuf;
use emberlab_core::Error;
use tokio::sync::mpsc;
use tokio_stream::wrappers::ReceiverStream;
use tonic::{Request, Response, Status, Streaming};

pub(super) struct LearnerImpl {
    pub(super) inference: InferenceHandle,
    pub(super) kind: ActionKind,
    pub(super) limits: GrpcLimits,
    pub(super) ingest: Option<TransitionIngest>,
    pub(super) policy: Option<PolicyBoard>,
    pub(super) peers: Peers,
}

/// A stream's reads: paced per stream and per peer, ended after the idle timeout.
struct Reader<T> {
    inbound: Streaming<T>,
    pace: Pace,
    peers: Peers,
    peer: PeerId,
    limits: GrpcLimits,
}

impl<T> Reader<T> {
    fn new(inbound: Streaming<T>, peers: &Peers, peer: PeerId, limits: GrpcLimits) -> Self {
        Reader {
            inbound,
            pace: Pace::new(limits.max_stream_rate),
            peers: peers.clone(),
            peer,
            limits,
        }
    }

    /// The next message (`Ok(None)`: the peer closed the stream), or the status that ends
    /// the stream: a malformed or oversized frame, or nothing for the idle timeout.
    async fn next(&mut self) -> Result<Option<T>, Status> {
        self.pace.next().await;
        let idle = self.limits.stream_idle_timeout;
        match tokio::time::timeout(idle, self.inbound.message()).await {
            Ok(m) => m,
            Err(_) => {
                Counters::bump(&self.peers.counters.idle_streams);
                Err(Status::deadline_exceeded(format!(
                    "nothing sent for {} s: the stream is closed, reconnect to go on",
                    idle.as_secs_f64()
                )))
            }
        }
    }

    /// Waits until the peer may send `rows` more rows of `bytes` bytes.
    async fn charge(&self, rows: usize, bytes: usize) {
        self.peers.pace(self.peer, rows, bytes).await;
    }
}

/// Why an act request is refused before it reaches the agent, if it is.
fn act_refusal(req: &proto::ActRequest, obs_dim: usize, max_rows: usize) -> Option<Status> {
    let rows = req.obs.len() / obs_dim.max(1);
    if req.obs.is_empty() || !req.obs.len().is_multiple_of(obs_dim) {
        Some(Status::invalid_argument(format!(
            "observations: {} values, expected a positive multiple of obs_dim = {obs_dim}",
            req.obs.len()
        )))
    } else if rows > max_rows {
        Some(Status::resource_exhausted(format!(
            "{rows} observation rows in one request, at most {max_rows}"
        )))
    } else {
        None
    }
}

/// Why a transition batch is refused before anything of it is stored, if it is.
fn batch_refusal(
    batch: &proto::TransitionBatch,
    ingest: &TransitionIngest,
    max_rows: usize,
) -> Option<Status> {
    let width = ingest.width;
    let rows = batch.values.len() / width.max(1) as usize;
    if batch.width != width
        || batch.values.is_empty()
        || !batch.values.len().is_multiple_of(width as usize)
    {
        Some(Status::invalid_argument(format!(
            "transition batch {}: width {} with {} values, the learner takes whole rows of {width}",
            batch.seq,
            batch.width,
            batch.values.len()
        )))
    } else if rows > max_rows {
        Some(Status::resource_exhausted(format!(
            "{rows} transitions in one batch, at most {max_rows}"
        )))
    } else {
        ingest
            .check(&batch.values)
            .err()
            .map(|e| Status::invalid_argument(format!("transition batch {}: {e}", batch.seq)))
    }
}

#[tonic::async_trait]
impl Learner for LearnerImpl {
    type ActStream = ReceiverStream<std::result::Result<proto::ActResponse, Status>>;

    async fn act(
        &self,
        request: Request<Streaming<proto::ActRequest>>,
    ) -> std::result::Result<Response<Self::ActStream>, Status> {
        let peer = Peers::of(&request);
        let slot = self.peers.open_stream(peer)?;
        let mut reader = Reader::new(request.into_inner(), &self.peers, peer, self.limits);
        let (out_tx, out_rx) = mpsc::channel(4);
        let mut client = self.inference.client();
        let (obs_dim, max_rows) = (self.inference.obs_dim(), self.limits.max_rows);
        let counters = self.peers.counters.clone();
        // One task per stream: it holds no thread while it waits for the peer, for room in
        // the inference queue or for its batch.
        tokio::spawn(async move {
            let _slot = slot;
            let mut actions = ActionBuf::Discrete(Vec::new());
            loop {
                let req = match reader.next().await {
                    Ok(Some(req)) => req,
                    Ok(None) => return,
                    Err(status) => {
                        let _ = out_tx.send(Err(status)).await;
                        return;
                    }
                };
                if let Some(status) = act_refusal(&req, obs_dim, max_rows) {
                    Counters::bump(&counters.invalid);
                    let _ = out_tx.send(Err(status)).await;
                    return;
                }
                reader
                    .charge(req.obs.len() / obs_dim, req.obs.len() * 4)
                    .await;
                let answer = match client.act_async(&req.obs, req.explore, &mut actions).await {
                    Ok(version) => Ok(response(req.seq, version, &actions)),
                    // The actor's own fault: a status, and its stream ends.
                    Err(e @ (Error::NonFinite { .. } | Error::Shape { .. })) => {
                        Counters::bump(&counters.invalid);
                        let _ = out_tx
                            .send(Err(Status::invalid_argument(e.to_string())))
                            .await;
                        return;
                    }
                    // The agent failed on these rows: an answer with the error, the stream
                    // goes on.
                    Err(e) => Ok(proto::ActResponse {
                        seq: req.seq,
                        error: e.to_string(),
                        ..Default::default()
                    }),
                };
                if out_tx.send(answer).await.is_err() {
                    return;
                }
            }
        });
        Ok(Response::new(ReceiverStream::new(out_rx)))
    }

    async fn info(
        &self,
        request: Request<proto::InfoRequest>,
    ) -> std::result::Result<Response<proto::InfoResponse>, Status> {
        self.peers.unary(Peers::of(&request)).await?;
        Ok(Response::new(proto::InfoResponse {
            obs_dim: self.inference.obs_dim() as u32,
            action_kind: self.kind.name().into(),
            version: self.inference.stats().version,
            max_message_bytes: self.limits.max_message_bytes as u64,
            max_rows: self.limits.max_rows as u32,
            transition_width: self.ingest.as_ref().map_or(0, |i| i.width),
        }))
    }

    async fn policy(
        &self,
        request: Request<proto::PolicyRequest>,
    ) -> std::result::Result<Response<proto::PolicyWeights>, Status> {
        self.peers.unary(Peers::of(&request)).await?;
        let board = self.policy.as_ref().ok_or_else(|| {
            Status::unimplemented("this learner publishes no policy: act through central inference")
        })?;
        board
            .answer(request.into_inner().have_version)
            .map(Response::new)
    }

    type TransitionsStream = ReceiverStream<std::result::Result<proto::Ack, Status>>;

    async fn transitions(
        &self,
        request: Request<Streaming<proto::TransitionBatch>>,
    ) -> std::result::Result<Response<Self::TransitionsStream>, Status> {
        let ingest = self
            .ingest
            .clone()
            .ok_or_else(|| Status::unimplemented("this learner takes no transitions"))?;
        let peer = Peers::of(&request);
        let slot = self.peers.open_stream(peer)?;
        let mut reader = Reader::new(request.into_inner(), &self.peers, peer, self.limits);
        let max_rows = self.limits.max_rows;
        let (out_tx, out_rx) = mpsc::channel(4);
        let counters = self.peers.counters.clone();
        tokio::spawn(async move {
            let _slot = slot;
            loop {
                let batch = match reader.next().await {
                    Ok(Some(b)) => b,
                    Ok(None) => return,
                    Err(status) => {
                        let _ = out_tx.send(Err(status)).await;
                        return;
                    }
                };
                if let Some(status) = batch_refusal(&batch, &ingest, max_rows) {
                    Counters::bump(&counters.invalid);
                    let _ = out_tx.send(Err(status)).await;
                    return;
                }
                let rows = batch.values.len() / ingest.width as usize;
                reader.charge(rows, batch.values.len() * 4).await;
                let seq = batch.seq;
                let record = Record {
                    actor: batch.actor,
                    run: batch.run,
                    seq,
                    width: ingest.width,
                    values: batch.values,
                };
                let ingest = ingest.clone();
                // The log's append syncs the file: a blocking call, but a short one (not a
                // thread held for the stream's life).
                let answer = match tokio::task::spawn_blocking(move || {
                    let appended = ingest.ingest(record)?;
                    Ok::<_, Error>((appended, ingest.is_finished()))
                })
                .await
                {
                    Ok(Ok((appended, finished))) => Ok(proto::Ack {
                        seq,
                        duplicate: appended == Appended::Duplicate,
                        finished,
                    }),
                    Ok(Err(e)) => Err(Status::unavailable(e.to_string())),
                    Err(e) => Err(Status::internal(e.to_string())),
                };
                let end = answer.is_err();
                if out_tx.send(answer).await.is_err() || end {
                    return;
                }
            }
        });
        Ok(Response::new(ReceiverStream::new(out_rx)))
    }
}

fn response(seq: u64, version: u64, actions: &ActionBuf) -> proto::ActResponse {
    let mut r = proto::ActResponse {
        seq,
        version,
        ..Default::default()
    };
    match actions {
        ActionBuf::Discrete(a) => r.discrete = a.iter().map(|&x| x as u64).collect(),
        ActionBuf::Continuous(a) => r.continuous = a.clone(),
    }
    r
}
