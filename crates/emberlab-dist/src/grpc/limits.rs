//! What one peer may take of a learner: [`GrpcLimits`] and the per-peer book that enforces
//! them — connections and streams per peer and in all, and each peer's rows, bytes and
//! unary calls paced by token buckets that all of its streams share.
//!
//! A peer ([`PeerId`]) is the client certificate a call came with (mutual TLS), else the
//! client's IP address: with one shared token, those are what tell two peers apart.
//! Connections are counted by address (they are capped before any handshake), streams and
//! rates by peer. Several actors on one machine without certificates of their own are one
//! peer; the defaults serve `ember launch`'s loopback clusters of dozens of actors.

use std::collections::HashMap;
use std::net::IpAddr;
use std::sync::atomic::{AtomicU64, Ordering};
use std::sync::{Arc, Mutex};
use std::time::Duration;
use tonic::Status;

/// Message, request, connection, stream and rate limits of a server (and the clients'
/// receive limit). Every limit has a default that serves the documented cluster sizes;
/// `ember serve` takes a flag for each.
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct GrpcLimits {
    /// The largest encoded message accepted or sent, in bytes.
    pub max_message_bytes: usize,
    /// The most observation rows in one request.
    pub max_rows: usize,
    /// The most actor streams (inference and transition streams together) a learner holds
    /// at once; a stream past it is refused with `RESOURCE_EXHAUSTED`.
    pub max_streams: usize,
    /// The most actor streams one peer holds at once (`RESOURCE_EXHAUSTED` past it).
    pub max_streams_per_peer: usize,
    /// The most messages per second read from one stream (a burst of one second's worth
    /// is allowed); a faster peer is slowed down, not dropped. `f64::INFINITY`: no limit.
    pub max_stream_rate: f64,
    /// The most transition and observation rows per second one peer sends, over all its
    /// streams (a one-second burst); a faster peer is slowed down. `f64::INFINITY`: none.
    pub peer_rows_per_sec: f64,
    /// The most request bytes per second one peer sends, over all its streams.
    pub peer_bytes_per_sec: f64,
    /// The most unary calls (`Info`, `Policy`) per second one peer makes; past it a call
    /// waits (up to a second) and is then refused with `RESOURCE_EXHAUSTED`. The default
    /// leaves room for dozens of local actors on one machine polling every 8 steps.
    pub peer_unary_per_sec: f64,
    /// The most TCP connections the server holds at once; further ones are closed at
    /// accept. Lowered at start to what the process's descriptor limit leaves (64 are kept
    /// for the log, checkpoints and libraries).
    pub max_connections: usize,
    /// The most TCP connections one peer holds at once.
    pub max_connections_per_peer: usize,
    /// The most concurrent HTTP/2 streams (calls) on one connection; our clients use one.
    pub max_streams_per_connection: u32,
    /// A new connection must complete its TLS handshake, or in plain text send the
    /// HTTP/2 preface, within this time; otherwise it is closed.
    pub handshake_timeout: Duration,
    /// A stream that sends nothing for this long is ended (`DEADLINE_EXCEEDED`) and gives
    /// its slot back; the actor's client reconnects.
    pub stream_idle_timeout: Duration,
    /// HTTP/2 keepalive: a ping this often on every connection; one unanswered for as
    /// long again closes the connection (a dead peer's slots are freed).
    pub keepalive: Duration,
}

impl Default for GrpcLimits {
    fn default() -> Self {
        GrpcLimits {
            max_message_bytes: 4 << 20,
            max_rows: 4096,
            max_streams: 1024,
            max_streams_per_peer: 256,
            max_stream_rate: 100_000.0,
            peer_rows_per_sec: 1_000_000.0,
            peer_bytes_per_sec: 256.0 * (1 << 20) as f64,
            peer_unary_per_sec: 20_000.0,
            max_connections: 512,
            max_connections_per_peer: 128,
            max_streams_per_connection: 8,
            handshake_timeout: Duration::from_secs(10),
            stream_idle_timeout: Duration::from_secs(120),
            keepalive: Duration::from_secs(20),
        }
    }
}

/// Descriptors kept free of connections for the log, checkpoints and libraries.
pub(crate) const RESERVED_DESCRIPTORS: u64 = 64;

impl GrpcLimits {
    /// [`GrpcLimits::max_connections`] lowered to what a descriptor limit of `nofile`
    /// leaves after [`RESERVED_DESCRIPTORS`] (at least 1).
    pub(crate) fn connections_within(&self, nofile: Option<u64>) -> usize {
        match nofile {
            Some(n) => self
                .max_connections
                .min(n.saturating_sub(RESERVED_DESCRIPTORS).max(1) as usize),
            None => self.max_connections,
        }
    }
}

/// The process's soft limit on open descriptors (`None`: unknown or unlimited).
pub(crate) fn descriptor_limit() -> Option<u64> {
    // SAFETY: getrlimit writes into the struct we pass and reads nothing else.
    let mut lim = libc::rlimit {
        rlim_cur: 0,
        rlim_max: 0,
    };
    let ok = unsafe { libc::getrlimit(libc::RLIMIT_NOFILE, &mut lim) } == 0;
    (ok && lim.rlim_cur != libc::RLIM_INFINITY).then_some(lim.rlim_cur)
}

/// Why the server turned a peer or a call away, counted.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq)]
pub struct Refusals {
    /// Calls without the right token.
    pub token: u64,
    /// Transition batches or act requests that broke a rule (shape, NaN, range, flag).
    pub invalid: u64,
    /// Streams past [`GrpcLimits::max_streams`] or [`GrpcLimits::max_streams_per_peer`].
    pub streams: u64,
    /// Connections past [`GrpcLimits::max_connections`] or the per-peer cap.
    pub connections: u64,
    /// Unary calls past [`GrpcLimits::peer_unary_per_sec`].
    pub unary_rate: u64,
    /// Connections closed for not finishing their handshake in time.
    pub handshakes: u64,
    /// Streams ended for sending nothing for [`GrpcLimits::stream_idle_timeout`].
    pub idle_streams: u64,
    /// Times the accept loop backed off (descriptors or memory exhausted).
    pub accept_backoffs: u64,
}

/// Who a peer is: its client certificate (mutual TLS), else its address.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, PartialOrd, Ord)]
pub enum PeerId {
    /// The client's IP address.
    Addr(IpAddr),
    /// A hash of the client's certificate (DER).
    Cert(u64),
}

impl std::fmt::Display for PeerId {
    fn fmt(&self, f: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            PeerId::Addr(a) => write!(f, "{a}"),
            PeerId::Cert(h) => write!(f, "certificate {h:016x}"),
        }
    }
}

/// One peer's share of the server now.
#[derive(Clone, Debug, PartialEq)]
pub struct PeerStats {
    /// Who it is.
    pub peer: PeerId,
    /// Its open connections.
    pub connections: usize,
    /// Its open streams.
    pub streams: usize,
}

/// What a running server holds and has refused ([`crate::GrpcServer::stats`]).
#[derive(Clone, Debug, Default, PartialEq)]
pub struct ServerStats {
    /// Open connections.
    pub connections: usize,
    /// Open actor streams.
    pub streams: usize,
    /// Refusals by reason since start.
    pub refused: Refusals,
    /// Every peer holding a connection or a stream, busiest first.
    pub peers: Vec<PeerStats>,
}

#[derive(Default)]
pub(crate) struct Counters {
    /// Shared with the token check ([`super::security::TokenCheck`]), which counts there.
    pub(crate) token: Arc<AtomicU64>,
    pub(crate) invalid: AtomicU64,
    pub(crate) streams: AtomicU64,
    pub(crate) connections: AtomicU64,
    pub(crate) unary_rate: AtomicU64,
    pub(crate) handshakes: AtomicU64,
    pub(crate) idle_streams: AtomicU64,
    pub(crate) accept_backoffs: AtomicU64,
}

impl Counters {
    pub(crate) fn bump(counter: &AtomicU64) {
        counter.fetch_add(1, Ordering::Relaxed);
    }

    fn refusals(&self) -> Refusals {
        let r = |c: &AtomicU64| c.load(Ordering::Relaxed);
        Refusals {
            token: r(&self.token),
            invalid: r(&self.invalid),
            streams: r(&self.streams),
            connections: r(&self.connections),
            unary_rate: r(&self.unary_rate),
            handshakes: r(&self.handshakes),
            idle_streams: r(&self.idle_streams),
            accept_backoffs: r(&self.accept_backoffs),
        }
    }
}

/// A token bucket in "debt" form: a cost is always taken, and the wait is how long the
/// bucket needs to climb back to zero.
struct Bucket {
    rate: f64,
    tokens: f64,
    last: tokio::time::Instant,
}

impl Bucket {
    fn new(rate: f64) -> Self {
        Bucket {
            rate,
            tokens: rate.max(1.0),
            last: tokio::time::Instant::now(),
        }
    }

    /// Takes `cost` and returns how long the caller waits before going on.
    fn take(&mut self, cost: f64, now: tokio::time::Instant) -> Duration {
        if !self.rate.is_finite() {
            return Duration::ZERO;
        }
        let burst = self.rate.max(1.0);
        let earned = now.saturating_duration_since(self.last).as_secs_f64() * self.rate;
        self.tokens = (self.tokens + earned).min(burst) - cost;
        self.last = now;
        if self.tokens >= 0.0 {
            Duration::ZERO
        } else {
            Duration::from_secs_f64(-self.tokens / self.rate)
        }
    }
}

struct Peer {
    connections: usize,
    streams: usize,
    rows: Bucket,
    bytes: Bucket,
    unary: Bucket,
}

struct Book {
    peers: HashMap<PeerId, Peer>,
    connections: usize,
    streams: usize,
}

/// The server's book of peers: who holds what, and each one's buckets.
#[derive(Clone)]
pub(crate) struct Peers {
    book: Arc<Mutex<Book>>,
    limits: GrpcLimits,
    max_connections: usize,
    pub(crate) counters: Arc<Counters>,
}

/// The peer of a call that came without an address (an in-process transport).
const UNKNOWN_PEER: PeerId = PeerId::Addr(IpAddr::V4(std::net::Ipv4Addr::UNSPECIFIED));

impl Peers {
    pub(crate) fn new(limits: GrpcLimits, max_connections: usize) -> Self {
        Peers {
            book: Arc::new(Mutex::new(Book {
                peers: HashMap::new(),
                connections: 0,
                streams: 0,
            })),
            limits,
            max_connections,
            counters: Arc::default(),
        }
    }

    fn lock(&self) -> std::sync::MutexGuard<'_, Book> {
        self.book.lock().unwrap_or_else(|e| e.into_inner())
    }

    fn peer<'a>(book: &'a mut Book, id: PeerId, limits: &GrpcLimits) -> &'a mut Peer {
        book.peers.entry(id).or_insert_with(|| Peer {
            connections: 0,
            streams: 0,
            rows: Bucket::new(limits.peer_rows_per_sec),
            bytes: Bucket::new(limits.peer_bytes_per_sec),
            unary: Bucket::new(limits.peer_unary_per_sec),
        })
    }

    /// The peer of a call: its client certificate, else its connection's address.
    pub(crate) fn of<T>(request: &tonic::Request<T>) -> PeerId {
        if let Some(cert) = request.peer_certs().as_ref().and_then(|c| c.first()) {
            use std::hash::{Hash, Hasher};
            let mut h = std::collections::hash_map::DefaultHasher::new();
            cert.as_ref().hash(&mut h);
            return PeerId::Cert(h.finish());
        }
        request
            .remote_addr()
            .map_or(UNKNOWN_PEER, |a| PeerId::Addr(a.ip()))
    }

    /// A connection's place, or why there is none.
    pub(crate) fn connect(&self, ip: IpAddr) -> std::result::Result<ConnSlot, String> {
        let addr = PeerId::Addr(ip);
        let mut book = self.lock();
        if book.connections >= self.max_connections {
            Counters::bump(&self.counters.connections);
            return Err(format!(
                "{} connections are open, the server takes at most {}",
                book.connections, self.max_connections
            ));
        }
        let max_peer = self.limits.max_connections_per_peer;
        let peer = Self::peer(&mut book, addr, &self.limits);
        if peer.connections >= max_peer {
            Counters::bump(&self.counters.connections);
            return Err(format!(
                "{addr} holds {} connections, a peer may hold {max_peer}",
                peer.connections
            ));
        }
        peer.connections += 1;
        book.connections += 1;
        Ok(ConnSlot {
            peers: self.clone(),
            addr,
        })
    }

    /// An actor stream's place, or `RESOURCE_EXHAUSTED`.
    pub(crate) fn open_stream(&self, addr: PeerId) -> std::result::Result<StreamSlot, Status> {
        let mut book = self.lock();
        let (open, max) = (book.streams, self.limits.max_streams);
        if open >= max {
            Counters::bump(&self.counters.streams);
            return Err(Status::resource_exhausted(format!(
                "{open} actor streams are open, the learner takes at most {max}"
            )));
        }
        let max_peer = self.limits.max_streams_per_peer;
        let peer = Self::peer(&mut book, addr, &self.limits);
        if peer.streams >= max_peer {
            Counters::bump(&self.counters.streams);
            return Err(Status::resource_exhausted(format!(
                "{addr} holds {} actor streams, a peer may hold {max_peer}",
                peer.streams
            )));
        }
        peer.streams += 1;
        book.streams += 1;
        Ok(StreamSlot {
            peers: self.clone(),
            addr,
        })
    }

    /// Waits until `addr` may send `rows` more rows of `bytes` bytes.
    pub(crate) async fn pace(&self, addr: PeerId, rows: usize, bytes: usize) {
        let wait = {
            let mut book = self.lock();
            let peer = Self::peer(&mut book, addr, &self.limits);
            let now = tokio::time::Instant::now();
            let a = peer.rows.take(rows as f64, now);
            let b = peer.bytes.take(bytes as f64, now);
            a.max(b)
        };
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }

    /// Lets a unary call of `addr` through, waiting up to a second for its turn;
    /// `RESOURCE_EXHAUSTED` beyond.
    pub(crate) async fn unary(&self, addr: PeerId) -> std::result::Result<(), Status> {
        let wait = {
            let mut book = self.lock();
            let peer = Self::peer(&mut book, addr, &self.limits);
            let wait = peer.unary.take(1.0, tokio::time::Instant::now());
            if wait > Duration::from_secs(1) {
                // Not served: give the token back so that waiting cannot grow without end.
                peer.unary.tokens += 1.0;
                Counters::bump(&self.counters.unary_rate);
                return Err(Status::resource_exhausted(format!(
                    "{addr} calls more than {} times per second",
                    self.limits.peer_unary_per_sec
                )));
            }
            wait
        };
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
        Ok(())
    }

    /// Open connections and streams, and every peer's share.
    pub(crate) fn stats(&self) -> ServerStats {
        let book = self.lock();
        let mut peers: Vec<PeerStats> = book
            .peers
            .iter()
            .filter(|(_, p)| p.connections > 0 || p.streams > 0)
            .map(|(&peer, p)| PeerStats {
                peer,
                connections: p.connections,
                streams: p.streams,
            })
            .collect();
        peers.sort_by(|a, b| {
            (b.streams, b.connections, a.peer).cmp(&(a.streams, a.connections, b.peer))
        });
        ServerStats {
            connections: book.connections,
            streams: book.streams,
            refused: self.counters.refusals(),
            peers,
        }
    }

    fn release(&self, addr: PeerId, connection: bool) {
        let mut book = self.lock();
        if connection {
            book.connections -= 1;
        } else {
            book.streams -= 1;
        }
        if let Some(p) = book.peers.get_mut(&addr) {
            if connection {
                p.connections -= 1;
            } else {
                p.streams -= 1;
            }
            // A peer that holds nothing is forgotten once its buckets are full again
            // (forgetting it sooner would hand a reconnecting flooder a fresh burst).
            let idle = p.connections == 0 && p.streams == 0;
            let now = tokio::time::Instant::now();
            let rested = |b: &Bucket| {
                !b.rate.is_finite()
                    || b.tokens + now.saturating_duration_since(b.last).as_secs_f64() * b.rate
                        >= b.rate.max(1.0)
            };
            if idle && rested(&p.rows) && rested(&p.bytes) && rested(&p.unary) {
                book.peers.remove(&addr);
            }
        }
    }
}

/// One open connection's place; given back when dropped.
pub(crate) struct ConnSlot {
    peers: Peers,
    addr: PeerId,
}

impl Drop for ConnSlot {
    fn drop(&mut self) {
        self.peers.release(self.addr, true);
    }
}

/// One open stream's place; given back when dropped (the stream's reader ends).
pub(crate) struct StreamSlot {
    peers: Peers,
    addr: PeerId,
}

impl Drop for StreamSlot {
    fn drop(&mut self) {
        self.peers.release(self.addr, false);
    }
}

/// A token bucket pacing one stream's reads to [`GrpcLimits::max_stream_rate`].
pub(crate) struct Pace(Bucket);

impl Pace {
    pub(crate) fn new(rate: f64) -> Pace {
        Pace(Bucket::new(rate))
    }

    /// Waits until the stream may read its next message.
    pub(crate) async fn next(&mut self) {
        let wait = self.0.take(1.0, tokio::time::Instant::now());
        if !wait.is_zero() {
            tokio::time::sleep(wait).await;
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn buckets_charge_debt_and_refill_at_their_rate() {
        let t0 = tokio::time::Instant::now();
        let mut b = Bucket::new(10.0);
        assert_eq!(b.take(10.0, t0), Duration::ZERO);
        // 5 more than it holds: half a second at 10 per second.
        let w = b.take(5.0, t0);
        assert!((w.as_secs_f64() - 0.5).abs() < 1e-9, "{w:?}");
        // A second later it has earned 10: back to +5.
        assert_eq!(b.take(0.0, t0 + Duration::from_secs(1)), Duration::ZERO);
        assert!((b.tokens - 5.0).abs() < 1e-9);
        let mut free = Bucket::new(f64::INFINITY);
        assert_eq!(free.take(1e12, t0), Duration::ZERO);
    }

    #[test]
    fn connection_limits_hold_per_peer_and_in_all() {
        let limits = GrpcLimits {
            max_connections_per_peer: 2,
            ..GrpcLimits::default()
        };
        let peers = Peers::new(limits, 3);
        let (a, b) = ("10.0.0.1".parse().unwrap(), "10.0.0.2".parse().unwrap());
        let a1 = peers.connect(a).unwrap();
        let _a2 = peers.connect(a).unwrap();
        let e = peers.connect(a).err().unwrap();
        assert!(e.contains("10.0.0.1 holds 2 connections"), "{e}");
        let _b1 = peers.connect(b).unwrap();
        let e = peers.connect(b).err().unwrap();
        assert!(e.contains("at most 3"), "{e}");
        drop(a1);
        let _b2 = peers.connect(b).unwrap();
        let s = peers.stats();
        assert_eq!((s.connections, s.refused.connections), (3, 2));
        assert_eq!(s.peers.len(), 2);
        assert_eq!(
            GrpcLimits::default().connections_within(Some(128)),
            128 - RESERVED_DESCRIPTORS as usize
        );
        assert_eq!(GrpcLimits::default().connections_within(Some(10)), 1);
    }

    #[test]
    fn stream_limits_hold_per_peer_and_slots_come_back() {
        let limits = GrpcLimits {
            max_streams: 3,
            max_streams_per_peer: 2,
            ..GrpcLimits::default()
        };
        let peers = Peers::new(limits, 10);
        let (a, b) = (PeerId::Addr("10.0.0.1".parse().unwrap()), PeerId::Cert(7));
        let held: Vec<_> = (0..2).map(|_| peers.open_stream(a).unwrap()).collect();
        let refused = peers.open_stream(a).err().unwrap();
        assert_eq!(refused.code(), tonic::Code::ResourceExhausted);
        assert!(
            refused
                .message()
                .contains("10.0.0.1 holds 2 actor streams, a peer may hold 2")
        );
        let _b = peers.open_stream(b).unwrap();
        assert!(peers.open_stream(b).is_err(), "3 in all");
        drop(held);
        assert_eq!(peers.stats().streams, 1);
        assert!(peers.open_stream(a).is_ok());
    }
}
