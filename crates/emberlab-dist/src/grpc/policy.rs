//! Versioned policy publication (`Learner.Policy`): the learner posts its acting policy's
//! flat weights on a [`PolicyBoard`]; actors that act locally poll it with a
//! [`PolicyClient`] and receive weights only when they are newer than theirs.

use super::{
    Backoff, ClientSecurity, Dialled, client_runtime, dial, is_transport, jitter_rng,
    open_with_backoff, proto, refusal_hint,
};
use emberlab_core::{EmberRng, Error, Result};
use std::sync::{Arc, RwLock};
use std::time::Instant;
use tonic::Status;

/// One published policy.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct PublishedPolicy {
    /// Its version (the learner's policy version; increasing).
    pub version: u64,
    /// Transitions the learner had taken in when it published it.
    pub env_steps: u64,
    /// The flat parameters ([`emberlab_algo::PolicyWeights`]).
    pub params: Arc<Vec<f32>>,
    /// What the learner was built from (opaque here: the `ember` command sends its config).
    pub config: Arc<str>,
}

/// Where a learner publishes its policy for the `Learner.Policy` service (cheap to clone;
/// all clones share one board). The weights are encoded once per version; every answer
/// shares those bytes, so answers that wait unread cost no copy of the weights each.
#[derive(Clone, Debug)]
pub struct PolicyBoard {
    current: Arc<RwLock<(PublishedPolicy, bytes::Bytes)>>,
}

/// `params` as little-endian bytes (the wire form of a packed `repeated float`).
fn encode_params(params: &[f32]) -> bytes::Bytes {
    let mut out = Vec::with_capacity(params.len() * 4);
    for p in params {
        out.extend_from_slice(&p.to_le_bytes());
    }
    out.into()
}

/// The floats of little-endian `bytes`.
///
/// # Errors
/// A length that is not a whole number of floats.
fn decode_params(bytes: &[u8]) -> std::result::Result<Vec<f32>, Status> {
    if !bytes.len().is_multiple_of(4) {
        return Err(Status::data_loss(format!(
            "policy weights of {} bytes, not a whole number of f32s",
            bytes.len()
        )));
    }
    Ok(bytes
        .chunks_exact(4)
        .map(|c| f32::from_le_bytes([c[0], c[1], c[2], c[3]]))
        .collect())
}

impl PolicyBoard {
    /// An empty board (nothing published) for a learner built from `config`.
    pub fn new(config: &str) -> Self {
        PolicyBoard {
            current: Arc::new(RwLock::new((
                PublishedPolicy {
                    config: config.into(),
                    ..PublishedPolicy::default()
                },
                bytes::Bytes::new(),
            ))),
        }
    }

    /// Posts `params` as `version` (ignored unless newer than the posted one, or the
    /// first).
    pub fn publish(&self, version: u64, env_steps: u64, params: Vec<f32>) {
        let mut cur = self.current.write().unwrap_or_else(|e| e.into_inner());
        if version > cur.0.version || cur.0.params.is_empty() {
            cur.1 = encode_params(&params);
            cur.0.version = version;
            cur.0.env_steps = env_steps;
            cur.0.params = Arc::new(params);
        }
    }

    /// The posted version.
    pub fn version(&self) -> u64 {
        self.current
            .read()
            .unwrap_or_else(|e| e.into_inner())
            .0
            .version
    }

    /// The answer to an actor holding version `have` (`None`: it holds none).
    pub(super) fn answer(
        &self,
        have: Option<u64>,
    ) -> std::result::Result<proto::PolicyWeights, Status> {
        let (cur, encoded) = {
            let guard = self.current.read().unwrap_or_else(|e| e.into_inner());
            (
                PublishedPolicy {
                    params: Arc::default(),
                    ..guard.0.clone()
                },
                guard.1.clone(),
            )
        };
        if encoded.is_empty() {
            return Err(Status::unavailable(
                "the learner has published no policy yet",
            ));
        }
        let newer = have.is_none_or(|h| h < cur.version);
        Ok(proto::PolicyWeights {
            version: cur.version,
            env_steps: cur.env_steps,
            params: if newer { encoded } else { bytes::Bytes::new() },
            config: if newer {
                cur.config.to_string()
            } else {
                String::new()
            },
        })
    }
}

/// An actor's synchronous connection to a learner's policy publication; reconnects with
/// [`Backoff`] when the learner goes away.
pub struct PolicyClient {
    runtime: tokio::runtime::Runtime,
    addr: String,
    security: ClientSecurity,
    backoff: Backoff,
    rng: EmberRng,
    client: Option<proto::learner_client::LearnerClient<Dialled>>,
    held: Option<u64>,
    reconnects: u64,
}

impl PolicyClient {
    /// Connects to the learner at `addr`, waiting with `backoff` while it is not up.
    ///
    /// # Errors
    /// The learner cannot be reached within `backoff.give_up_after`.
    pub fn connect(addr: &str, backoff: Backoff) -> Result<Self> {
        Self::connect_secured(addr, backoff, ClientSecurity::insecure())
    }

    /// [`PolicyClient::connect`] with `security`'s token and TLS.
    ///
    /// # Errors
    /// As [`PolicyClient::connect`]; a refused TLS handshake fails at once.
    pub fn connect_secured(addr: &str, backoff: Backoff, security: ClientSecurity) -> Result<Self> {
        let mut c = PolicyClient {
            runtime: client_runtime()?,
            addr: addr.to_string(),
            security,
            backoff,
            rng: jitter_rng(),
            client: None,
            held: None,
            reconnects: 0,
        };
        c.reopen(Instant::now())?;
        c.reconnects = 0;
        Ok(c)
    }

    fn reopen(&mut self, start: Instant) -> Result<()> {
        let (backoff, mut rng, addr) = (self.backoff, self.rng.clone(), self.addr.clone());
        let what = format!("the learner's policy at {addr}");
        let (runtime, security) = (&self.runtime, &self.security);
        let mut opened = None;
        let plain = security.is_plain();
        let result = open_with_backoff(
            &backoff,
            &mut rng,
            start,
            plain,
            || what,
            || {
                let client = runtime
                    .block_on(dial(&addr, security))
                    .map(proto::learner_client::LearnerClient::new)?
                    .max_decoding_message_size(usize::MAX);
                opened = Some(client);
                Ok(())
            },
        );
        self.rng = rng;
        result?;
        self.client = opened;
        self.reconnects += 1;
        Ok(())
    }

    /// The learner's version, and its newest policy if that is newer than the one held
    /// (which it then is).
    ///
    /// # Errors
    /// The learner unreachable for longer than the backoff allows, or no policy published.
    pub fn fetch(&mut self) -> Result<(u64, Option<PublishedPolicy>)> {
        let start = Instant::now();
        loop {
            let request = proto::PolicyRequest {
                have_version: self.held,
            };
            let attempt = match self.client.as_mut() {
                None => Err(Status::unavailable("not connected")),
                Some(c) => self
                    .runtime
                    .block_on(c.policy(request))
                    .map(|r| r.into_inner()),
            };
            match attempt {
                Ok(w) if w.params.is_empty() => return Ok((w.version, None)),
                Ok(w) => {
                    let params = decode_params(&w.params).map_err(|s| Error::Corrupt {
                        path: self.addr.clone().into(),
                        kind: "policy weights".into(),
                        reason: s.message().to_string(),
                    })?;
                    self.held = Some(w.version);
                    let p = PublishedPolicy {
                        version: w.version,
                        env_steps: w.env_steps,
                        params: Arc::new(params),
                        config: w.config.into(),
                    };
                    return Ok((p.version, Some(p)));
                }
                Err(s) if is_transport(&s) && start.elapsed() < self.backoff.give_up_after => {
                    // A restarted learner may count versions from an earlier checkpoint:
                    // take whatever it publishes next.
                    self.client = None;
                    self.held = None;
                    self.reopen(start)?;
                }
                Err(s) => {
                    return Err(Error::Unavailable {
                        what: format!("the learner's policy at {}", self.addr),
                        hint: refusal_hint(&s, self.security.is_plain()),
                    });
                }
            }
        }
    }

    /// Reconnections since [`PolicyClient::connect`].
    pub fn reconnects(&self) -> u64 {
        self.reconnects
    }
}
