//! Hostile peers on loopback, against a real learner server (in this process or in a child
//! process of its own): batches that break the learner's rules, idle streams past tokio's
//! blocking pool, idle sockets and half-open TLS handshakes at a low descriptor limit,
//! answers never read, and one peer holding many slots. In each, an honest actor keeps at
//! least 80% of the throughput it has alone, the server's memory stays bounded, and
//! nothing unusable is stored.
//!
//! The attacker dials from 127.0.0.2 (all of 127.0.0.0/8 is loopback on Linux) and the
//! honest actor from 127.0.0.1, so that the server tells them apart by address, as it
//! would two machines.
#![cfg(feature = "grpc")]

use emberlab_algo::{ActionBuf, Agent};
use emberlab_core::{BoxSpace, Discrete, Space};
use emberlab_dist::cluster::{RowRules, TransitionRows};
use emberlab_dist::grpc::proto;
use emberlab_dist::{
    ActionKind, Backoff, ClientSecurity, ClientTls, GrpcLimits, GrpcServer, LearnerServices,
    PeerId, PolicyBoard, PolicyClient, RemoteActor, SelfSigned, ServerSecurity, ServerTls,
    TransitionIngest, TransitionLog, TransitionSender,
};
use std::net::SocketAddr;
use std::path::{Path, PathBuf};
use std::process::{Child, Command, Stdio};
use std::sync::Arc;
use std::time::{Duration, Instant};

mod common;

use common::{Echo, echo_inference};

const ATTACKER: &str = "127.0.0.2";

/// Tests that start a server take turns: on two cores a test that times an honest actor
/// would otherwise measure another test's server and clients too (CI saw 75% of the alone
/// rate under attack while a flooding test ran beside it).
static TIMED: std::sync::Mutex<()> = std::sync::Mutex::new(());

fn timed() -> std::sync::MutexGuard<'static, ()> {
    TIMED.lock().unwrap_or_else(|e| e.into_inner())
}

struct TempDir(PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn temp_dir(name: &str) -> TempDir {
    let dir = std::env::temp_dir().join(format!("ember-hostile-{name}-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    TempDir(dir)
}

fn quick() -> Backoff {
    Backoff {
        initial: Duration::from_millis(10),
        max: Duration::from_millis(100),
        give_up_after: Duration::from_secs(5),
    }
}

/// CartPole's row layout: 4 observation values, a discrete action of 2.
const LAYOUT: TransitionRows = TransitionRows {
    obs_dim: 2,
    act_dim: 1,
};

fn rules() -> RowRules {
    RowRules::new(LAYOUT, &Space::Discrete(Discrete::new(2).unwrap()), 1e6).unwrap()
}

/// The server every test attacks: [`Echo`]'s inference, a transition stream under
/// [`rules`], and a published policy of `policy_len` weights.
struct Learner {
    _inference: emberlab_dist::InferenceServer<Echo>,
    grpc: GrpcServer,
    ingest: TransitionIngest,
    _dir: TempDir,
}

fn learner(
    name: &str,
    limits: GrpcLimits,
    security: &ServerSecurity,
    policy_len: usize,
) -> Learner {
    learner_at(name, "127.0.0.1:0", limits, security, policy_len)
}

fn learner_at(
    name: &str,
    addr: &str,
    limits: GrpcLimits,
    security: &ServerSecurity,
    policy_len: usize,
) -> Learner {
    let dir = temp_dir(name);
    let (log, _) = TransitionLog::open(&dir.0.join("log")).unwrap();
    serve(dir, log, addr, limits, security, policy_len)
}

/// The learner of [`learner_at`] on a log of the caller's.
fn serve(
    dir: TempDir,
    log: TransitionLog,
    addr: &str,
    limits: GrpcLimits,
    security: &ServerSecurity,
    policy_len: usize,
) -> Learner {
    let (ingest, rx) = TransitionIngest::new(log, LAYOUT.width() as u32, 1024);
    let ingest = ingest.with_rules(Arc::new(rules()));
    std::thread::spawn(move || for _ in rx {});
    let inference = echo_inference();
    let board = PolicyBoard::new("policy config");
    board.publish(1, 0, vec![0.25; policy_len]);
    let services = LearnerServices {
        inference: inference.handle(),
        kind: ActionKind::Discrete,
        ingest: Some(ingest.clone()),
        policy: Some(board),
    };
    let grpc = GrpcServer::learner_services_secured(addr, services, limits, security).unwrap();
    Learner {
        _inference: inference,
        grpc,
        ingest,
        _dir: dir,
    }
}

/// A good transition row: obs, action, reward, next obs, terminated, truncated.
fn row() -> Vec<f32> {
    vec![0.1, -0.2, 1.0, 1.0, 0.15, -0.25, 0.0, 0.0]
}

/// The best of three 300 ms windows of acting: requests per second.
fn act_rate(actor: &mut RemoteActor) -> f64 {
    let mut out = ActionBuf::Discrete(vec![]);
    let mut best: f64 = 0.0;
    for _ in 0..3 {
        let (start, mut n) = (Instant::now(), 0u32);
        while start.elapsed() < Duration::from_millis(300) {
            actor.act(&[1.0, 0.0], true, &mut out).unwrap();
            assert_eq!(out, ActionBuf::Discrete(vec![1]));
            n += 1;
        }
        best = best.max(f64::from(n) / start.elapsed().as_secs_f64());
    }
    best
}

fn assert_kept(what: &str, before: f64, during: f64) {
    eprintln!("{what}: honest actor {before:.0} requests/s alone, {during:.0} under attack");
    assert!(
        during >= 0.8 * before,
        "{what}: {during:.0} requests/s under attack, {before:.0} alone"
    );
}

fn runtime() -> tokio::runtime::Runtime {
    tokio::runtime::Builder::new_multi_thread()
        .worker_threads(1)
        .enable_all()
        .build()
        .unwrap()
}

/// A plain-text channel to `addr` dialled from the attacker's address.
async fn attacker_channel(addr: SocketAddr) -> Option<tonic::transport::Channel> {
    tonic::transport::Endpoint::from_shared(format!("http://{addr}"))
        .unwrap()
        .local_address(Some(ATTACKER.parse().unwrap()))
        .connect()
        .await
        .ok()
}

/// An act stream the attacker opens on `channel` and never sends on: the sender that would
/// feed it and the answers it would get.
type IdleStream = (
    tokio::sync::mpsc::Sender<proto::ActRequest>,
    tonic::Streaming<proto::ActResponse>,
);

async fn idle_act_stream(channel: &tonic::transport::Channel) -> Result<IdleStream, tonic::Status> {
    let mut client = proto::learner_client::LearnerClient::new(channel.clone());
    let (tx, rx) = tokio::sync::mpsc::channel::<proto::ActRequest>(1);
    let call = client.act(tokio_stream::wrappers::ReceiverStream::new(rx));
    match tokio::time::timeout(Duration::from_secs(2), call).await {
        Ok(answers) => Ok((tx, answers?.into_inner())),
        Err(_) => Err(tonic::Status::deadline_exceeded("no answer to the stream")),
    }
}

#[test]
fn batches_that_break_the_rules_are_refused_by_row_and_field_and_nothing_is_stored() {
    let _turn = timed();
    let l = learner(
        "rules",
        GrpcLimits::default(),
        &ServerSecurity::insecure(),
        4,
    );
    let addr = l.grpc.local_addr().to_string();
    let width = LAYOUT.width() as u32;
    let mut actor = 0;
    let mut send = |values: Vec<f32>| {
        actor += 1;
        let mut s = TransitionSender::connect(&addr, actor, 1, width, quick()).unwrap();
        s.send(&values).map(|_| ()).map_err(|e| e.to_string())
    };
    let broken = |i: usize, v: f32| {
        let mut rows = [row(), row(), row()].concat();
        rows[LAYOUT.width() + i] = v;
        rows
    };
    for (i, v, want) in [
        (6, 0.5, "row 1 terminated: got 0.5, expected 0 or 1"),
        (7, -1.0, "row 1 truncated"),
        (
            2,
            7.0,
            "row 1 action: got 7, expected an action index of Discrete(2)",
        ),
        (2, 0.5, "row 1 action: got 0.5"),
        (0, 3e38, "row 1 observation[0]: got 300000000"),
        (3, -3e38, "row 1 reward"),
        (5, f32::NAN, "row 1 next observation[1]"),
    ] {
        let e = send(broken(i, v)).unwrap_err();
        assert!(e.contains(want), "`{want}` in: {e}");
        assert!(e.contains("InvalidArgument"), "{e}");
    }
    assert_eq!(l.ingest.stored(), (0, 0), "nothing of a refused batch");
    assert_eq!(l.grpc.stats().refused.invalid, 7);
    send([row(), row()].concat()).unwrap();
    assert_eq!(l.ingest.stored(), (1, 2));
}

#[test]
fn idle_act_streams_past_the_blocking_pool_stall_no_one() {
    let _turn = timed();
    // 600 idle streams: past tokio's 512 blocking threads, which a thread per stream held.
    let limits = GrpcLimits {
        max_streams_per_peer: 1024,
        ..GrpcLimits::default()
    };
    let l = learner("idle-streams", limits, &ServerSecurity::insecure(), 4);
    let addr = l.grpc.local_addr();
    let mut honest = RemoteActor::connect(&addr.to_string(), quick()).unwrap();
    let before = act_rate(&mut honest);
    let rss_before = own_rss();
    let rt = runtime();
    let held = rt.block_on(async {
        let mut held = Vec::new();
        for _ in 0..75 {
            let channel = attacker_channel(addr).await.expect("connects");
            for _ in 0..8 {
                held.push(
                    idle_act_stream(&channel)
                        .await
                        .expect("an idle stream is taken"),
                );
            }
        }
        held
    });
    assert_eq!(l.grpc.stats().streams, 601);
    // This process holds both ends of the 600 streams.
    let grown = own_rss().saturating_sub(rss_before);
    eprintln!("600 idle act streams: RSS +{} MiB, both ends", grown >> 20);
    assert!(grown < 64 << 20, "RSS grew {} MiB", grown >> 20);
    let during = act_rate(&mut honest);
    assert_kept("600 idle act streams", before, during);
    // Acknowledgements need no thread from the same pool either.
    let mut sender =
        TransitionSender::connect(&addr.to_string(), 1, 1, LAYOUT.width() as u32, quick()).unwrap();
    let t = Instant::now();
    for _ in 0..20 {
        sender.send(&row()).unwrap();
    }
    assert!(t.elapsed() < Duration::from_secs(5), "{:?}", t.elapsed());
    drop(held);
    drop(rt);
}

#[test]
fn one_peer_cannot_hold_every_slot() {
    let _turn = timed();
    let limits = GrpcLimits {
        max_streams: 40,
        max_streams_per_peer: 16,
        max_connections_per_peer: 8,
        ..GrpcLimits::default()
    };
    let l = learner("slots", limits, &ServerSecurity::insecure(), 4);
    let addr = l.grpc.local_addr();
    let mut honest = RemoteActor::connect(&addr.to_string(), quick()).unwrap();
    let before = act_rate(&mut honest);
    let rt = runtime();
    let (held, refused) = rt.block_on(async {
        let (mut held, mut refused) = (Vec::new(), 0);
        for _ in 0..20 {
            // Connections past the peer's 8 are closed at accept.
            let Some(channel) = attacker_channel(addr).await else {
                refused += 1;
                continue;
            };
            for _ in 0..4 {
                match idle_act_stream(&channel).await {
                    Ok(stream) => held.push(stream),
                    Err(_) => refused += 1,
                }
            }
        }
        (held, refused)
    });
    let stats = l.grpc.stats();
    eprintln!(
        "one peer: {} streams held, {refused} refused; {stats:?}",
        held.len()
    );
    assert_eq!(held.len(), 16, "a peer holds at most its 16 streams");
    assert!(refused > 0);
    let attacker = PeerId::Addr(ATTACKER.parse().unwrap());
    let peer = stats.peers.iter().find(|p| p.peer == attacker).unwrap();
    assert!(peer.connections <= 8 && peer.streams == 16, "{peer:?}");
    // The honest peer still gets new streams, and its speed.
    let mut another = RemoteActor::connect(&addr.to_string(), quick()).unwrap();
    let mut out = ActionBuf::Discrete(vec![]);
    another.act(&[1.0, 0.0], false, &mut out).unwrap();
    let during = act_rate(&mut honest);
    assert_kept("a peer holding its every slot", before, during);
    drop(held);
    drop(rt);
}

#[test]
fn an_idle_stream_gives_its_slot_back_and_the_actor_goes_on() {
    let _turn = timed();
    let limits = GrpcLimits {
        stream_idle_timeout: Duration::from_millis(300),
        max_streams: 1,
        ..GrpcLimits::default()
    };
    let l = learner("idle-timeout", limits, &ServerSecurity::insecure(), 4);
    let addr = l.grpc.local_addr().to_string();
    let mut actor = RemoteActor::connect(&addr, quick()).unwrap();
    let mut out = ActionBuf::Discrete(vec![]);
    actor.act(&[1.0, 0.0], true, &mut out).unwrap();
    std::thread::sleep(Duration::from_millis(700));
    let stats = l.grpc.stats();
    assert_eq!((stats.streams, stats.refused.idle_streams), (0, 1));
    // The only slot is free again: another actor takes it, then the first reconnects.
    let other = RemoteActor::connect(&addr, quick()).unwrap();
    drop(other);
    actor.act(&[0.0, 0.0], true, &mut out).unwrap();
    assert_eq!(out, ActionBuf::Discrete(vec![0]));
}

// ---- attacks on a server in a child process: descriptors, CPU and memory are its own ----

/// What the child serves: `EMBER_HOSTILE_CHILD=port,nofile,dir[,spare]` (`spare`: once
/// serving, lower the descriptor limit to leave only that many free). It serves TLS (its
/// certificate written to `dir/ca.pem`) with a policy of 67,500 weights (270 KB) and
/// writes a file every 50 ms, as a learner's checkpoints do, printing a line each time that
/// fails.
#[test]
fn child_server() {
    let Ok(spec) = std::env::var("EMBER_HOSTILE_CHILD") else {
        return;
    };
    let parts: Vec<&str> = spec.split(',').collect();
    let (port, nofile, dir) = (
        parts[0],
        parts[1].parse::<u64>().unwrap(),
        Path::new(parts[2]),
    );
    if nofile > 0 {
        let lim = libc::rlimit {
            rlim_cur: nofile,
            rlim_max: nofile,
        };
        // SAFETY: setrlimit reads the struct we pass.
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) }, 0);
    }
    let pair = SelfSigned::generate(&["localhost", "127.0.0.1"]).unwrap();
    std::fs::write(dir.join("ca.pem"), &pair.cert_pem).unwrap();
    let security = ServerSecurity {
        token: None,
        tls: Some(ServerTls::from_pem(pair.cert_pem, pair.key_pem)),
    };
    let limits = GrpcLimits {
        handshake_timeout: Duration::from_secs(1),
        max_connections_per_peer: 16,
        ..GrpcLimits::default()
    };
    let _l = learner_at(
        "child",
        &format!("127.0.0.1:{port}"),
        limits,
        &security,
        67_500,
    );
    if let Some(spare) = parts.get(3).map(|p| p.parse::<u64>().unwrap()) {
        // Leave only `spare` descriptors free: accepts run out.
        let open = std::fs::read_dir("/proc/self/fd").unwrap().count() as u64;
        let lim = libc::rlimit {
            rlim_cur: open + spare,
            rlim_max: open + spare,
        };
        // SAFETY: setrlimit reads the struct we pass.
        assert_eq!(unsafe { libc::setrlimit(libc::RLIMIT_NOFILE, &lim) }, 0);
    }
    std::fs::write(dir.join("ready"), b"").unwrap();
    let mut shown = None;
    loop {
        std::thread::sleep(Duration::from_millis(50));
        if let Err(e) = std::fs::write(dir.join("checkpoint"), b"state") {
            println!("checkpoint failed: {e}");
        }
        let backoffs = _l.grpc.stats().refused.accept_backoffs;
        if shown != Some(backoffs) {
            println!("accept_backoffs={backoffs}");
            shown = Some(backoffs);
        }
    }
}

struct ChildServer {
    child: Child,
    addr: SocketAddr,
    ca: String,
    _dir: TempDir,
}

impl Drop for ChildServer {
    fn drop(&mut self) {
        let _ = self.child.kill();
        let _ = self.child.wait();
    }
}

fn spawn_child_server(name: &str, nofile: u64) -> ChildServer {
    spawn_child_server_with(name, &format!("{nofile}"))
}

/// [`spawn_child_server`] with the child's spec after the port (`nofile,dir` are filled).
fn spawn_child_server_with(name: &str, limits: &str) -> ChildServer {
    let dir = temp_dir(name);
    let port = std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port();
    let child = Command::new(std::env::current_exe().unwrap())
        .args(["child_server", "--exact", "--nocapture", "--test-threads=1"])
        .env(
            "EMBER_HOSTILE_CHILD",
            match limits.split_once(',') {
                None => format!("{port},{limits},{}", dir.0.display()),
                Some((nofile, spare)) => format!("{port},{nofile},{},{spare}", dir.0.display()),
            },
        )
        .stdout(Stdio::piped())
        .stderr(Stdio::null())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(60);
    while !dir.0.join("ready").exists() {
        assert!(Instant::now() < deadline, "the child server did not start");
        std::thread::sleep(Duration::from_millis(20));
    }
    let ca = std::fs::read_to_string(dir.0.join("ca.pem")).unwrap();
    ChildServer {
        child,
        addr: format!("127.0.0.1:{port}").parse().unwrap(),
        ca,
        _dir: dir,
    }
}

impl ChildServer {
    fn security(&self) -> ClientSecurity {
        ClientSecurity {
            token: None,
            tls: Some(ClientTls::from_pem(self.ca.clone())),
        }
    }

    /// The child's CPU time so far (user + system).
    fn cpu(&self) -> Duration {
        let stat = std::fs::read_to_string(format!("/proc/{}/stat", self.child.id())).unwrap();
        let fields: Vec<&str> = stat
            .rsplit(')')
            .next()
            .unwrap()
            .split_whitespace()
            .collect();
        let ticks: u64 = fields[11].parse::<u64>().unwrap() + fields[12].parse::<u64>().unwrap();
        // SAFETY: sysconf reads no memory of ours.
        let hz = unsafe { libc::sysconf(libc::_SC_CLK_TCK) } as u64;
        Duration::from_millis(ticks * 1000 / hz)
    }

    /// The child's resident memory, bytes.
    fn rss(&self) -> u64 {
        let status = std::fs::read_to_string(format!("/proc/{}/status", self.child.id())).unwrap();
        let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
        let kb: u64 = line.split_whitespace().nth(1).unwrap().parse().unwrap();
        kb * 1024
    }

    fn alive(&mut self) -> bool {
        self.child.try_wait().unwrap().is_none()
    }
}

/// A TCP connection from the attacker's address (`None`: refused, reset, or not
/// answered within a second).
async fn attacker_socket(addr: SocketAddr) -> Option<tokio::net::TcpStream> {
    let socket = tokio::net::TcpSocket::new_v4().ok()?;
    socket
        .bind(SocketAddr::new(ATTACKER.parse().unwrap(), 0))
        .ok()?;
    tokio::time::timeout(Duration::from_secs(1), socket.connect(addr))
        .await
        .ok()?
        .ok()
}

/// This process's resident memory, bytes.
fn own_rss() -> u64 {
    let status = std::fs::read_to_string("/proc/self/status").unwrap();
    let line = status.lines().find(|l| l.starts_with("VmRSS:")).unwrap();
    line.split_whitespace()
        .nth(1)
        .unwrap()
        .parse::<u64>()
        .unwrap()
        * 1024
}

#[test]
fn idle_sockets_and_half_open_handshakes_at_a_low_descriptor_limit_lock_no_one_out() {
    let _turn = timed();
    // 128 descriptors: the server keeps 64 free and takes at most 64 connections.
    let mut server = spawn_child_server("sockets", 128);
    let addr = server.addr;
    let mut honest =
        RemoteActor::connect_secured(&addr.to_string(), quick(), server.security()).unwrap();
    let before = act_rate(&mut honest);
    let rt = runtime();
    let (cpu_before, rss_before) = (server.cpu(), server.rss());
    let t0 = Instant::now();
    // 300 idle sockets and 50 half-open TLS handshakes (a few bytes of a ClientHello).
    let sockets = rt.block_on(async {
        use tokio::io::AsyncWriteExt;
        let mut held = Vec::new();
        for i in 0..350 {
            if let Some(mut s) = attacker_socket(addr).await {
                if i >= 300 {
                    let _ = s.write_all(&[0x16, 0x03, 0x01, 0x02]).await;
                }
                held.push(s);
            }
        }
        held
    });
    let during = act_rate(&mut honest);
    let grown = server.rss().saturating_sub(rss_before);
    eprintln!("350 attacker sockets held: server RSS +{} MiB", grown >> 20);
    assert!(grown < 32 << 20, "server RSS grew {} MiB", grown >> 20);
    // A new honest actor gets in while the sockets are held.
    let mut late =
        RemoteActor::connect_secured(&addr.to_string(), quick(), server.security()).unwrap();
    let mut out = ActionBuf::Discrete(vec![]);
    late.act(&[1.0, 0.0], true, &mut out).unwrap();
    // Past the handshake timeout (1 s) every attacker socket is closed by the server: those
    // it took at once after that second, those waiting in the kernel's queue a second
    // after it took them. Asked until all are closed, for at most 10 s (a loaded machine).
    std::thread::sleep(Duration::from_millis(1500));
    let closed = rt.block_on(async {
        use tokio::io::AsyncReadExt;
        let mut open = sockets;
        let deadline = Instant::now() + Duration::from_secs(10);
        while !open.is_empty() && Instant::now() < deadline {
            let mut still = Vec::new();
            for mut s in open {
                let mut buf = [0u8; 64];
                let r = tokio::time::timeout(Duration::from_millis(50), s.read(&mut buf)).await;
                if !matches!(r, Ok(Ok(0) | Err(_))) {
                    still.push(s);
                }
            }
            open = still;
        }
        350 - open.len()
    });
    let (cpu, wall) = (server.cpu() - cpu_before, t0.elapsed());
    eprintln!(
        "350 attacker sockets: {closed} closed by the server; server CPU {cpu:?} in {wall:?}"
    );
    assert_eq!(closed, 350, "every idle or half-open socket is closed");
    assert!(
        cpu.as_secs_f64() < 0.5 * wall.as_secs_f64(),
        "the server spun: {cpu:?} of CPU in {wall:?}"
    );
    assert_kept("350 idle and half-open sockets", before, during);
    assert!(server.alive(), "the server exited");
    let mut stdout = String::new();
    std::thread::sleep(Duration::from_millis(200));
    drop(late);
    drop(honest);
    let _ = server.child.kill();
    let _ = std::io::Read::read_to_string(server.child.stdout.as_mut().unwrap(), &mut stdout);
    assert!(
        !stdout.contains("checkpoint failed"),
        "the server could not write its file: {stdout}"
    );
}

/// Opens a raw HTTP/2 connection (the `h2` crate, not tonic) from the attacker's address
/// over TLS and sends up to `calls` `Policy` requests whose answers it never reads.
async fn unread_policy_calls(
    addr: SocketAddr,
    tls: Arc<rustls::ClientConfig>,
    calls: usize,
) -> Option<(
    h2::client::SendRequest<bytes::Bytes>,
    Vec<h2::client::ResponseFuture>,
)> {
    let tcp = attacker_socket(addr).await?;
    let connector = tokio_rustls::TlsConnector::from(tls);
    let name = rustls::pki_types::ServerName::try_from("localhost").ok()?;
    let tls = connector.connect(name, tcp).await.ok()?;
    let (mut send, connection) = h2::client::handshake(tls).await.ok()?;
    tokio::spawn(connection);
    let mut pending = Vec::new();
    for _ in 0..calls {
        send = match tokio::time::timeout(Duration::from_millis(200), send.clone().ready()).await {
            Ok(Ok(ready)) => ready,
            _ => break,
        };
        let request = http::Request::post(format!("https://{addr}/ember.v1.Learner/Policy"))
            .header("content-type", "application/grpc")
            .header("te", "trailers")
            .body(())
            .unwrap();
        let Ok((response, mut body)) = send.send_request(request, false) else {
            break;
        };
        // An empty PolicyRequest: the gRPC frame header only.
        let _ = body.send_data(bytes::Bytes::from_static(&[0, 0, 0, 0, 0]), true);
        pending.push(response);
    }
    Some((send, pending))
}

#[test]
fn answers_never_read_keep_the_servers_memory_bounded() {
    let _turn = timed();
    let server = spawn_child_server("unread", 0);
    let addr = server.addr;
    let mut honest =
        PolicyClient::connect_secured(&addr.to_string(), quick(), server.security()).unwrap();
    let fetch_rate = |c: &mut PolicyClient| {
        let mut best: f64 = 0.0;
        for _ in 0..3 {
            let (start, mut n) = (Instant::now(), 0u32);
            while start.elapsed() < Duration::from_millis(300) {
                // A local actor's poll: the version, weights only when newer.
                c.fetch().unwrap();
                n += 1;
            }
            best = best.max(f64::from(n) / start.elapsed().as_secs_f64());
        }
        best
    };
    let (_, first) = honest.fetch().unwrap();
    assert_eq!(first.unwrap().params.len(), 67_500);
    let polls_before = fetch_rate(&mut honest);
    let mut acting =
        RemoteActor::connect_secured(&addr.to_string(), quick(), server.security()).unwrap();
    let before = act_rate(&mut acting);
    let rss_before = server.rss();
    let rt = runtime();
    let mut roots = rustls::RootCertStore::empty();
    use rustls::pki_types::pem::PemObject;
    let ca = rustls::pki_types::CertificateDer::from_pem_slice(server.ca.as_bytes()).unwrap();
    roots.add(ca).unwrap();
    // ring, as the server's TLS (tonic's `tls-ring`) uses: rustls 0.23.48 deprecates its
    // provider for lacking post-quantum key exchange, which this client does not need.
    #[allow(deprecated)]
    let provider = rustls::crypto::ring::default_provider();
    let mut config = rustls::ClientConfig::builder_with_provider(Arc::new(provider))
        .with_safe_default_protocol_versions()
        .unwrap()
        .with_root_certificates(roots)
        .with_no_client_auth();
    config.alpn_protocols = vec![b"h2".to_vec()];
    let config = Arc::new(config);
    // 600 calls over as many connections as the server lets this peer hold.
    let held = rt.block_on(async {
        let mut held = Vec::new();
        let mut calls = 0;
        for _ in 0..75 {
            if let Some((send, pending)) = unread_policy_calls(addr, config.clone(), 8).await {
                calls += pending.len();
                held.push((send, pending));
            }
            if calls >= 600 {
                break;
            }
        }
        held
    });
    std::thread::sleep(Duration::from_millis(500));
    let calls: usize = held.iter().map(|h| h.1.len()).sum();
    let grown = server.rss().saturating_sub(rss_before);
    let during = act_rate(&mut acting);
    let polls_during = fetch_rate(&mut honest);
    eprintln!(
        "{calls} unread policy answers (270 KB each) on {} connections: server RSS +{} MiB",
        held.len(),
        grown >> 20
    );
    eprintln!(
        "honest local actor's polls: {polls_before:.0}/s alone, {polls_during:.0}/s under attack"
    );
    assert!(calls >= 100, "the attack sent only {calls} calls");
    assert!(grown < 64 << 20, "server RSS grew {} MiB", grown >> 20);
    assert_kept("128 unread policy answers", before, during);
    // Polls go on too (a tight loop of unary calls, measured for the record: 83-99% of
    // their rate alone in three runs here).
    assert!(polls_during > 0.5 * polls_before);
    drop(held);
    drop(rt);
}

#[test]
fn continuous_rows_are_bounded_by_magnitude_not_by_the_box() {
    let space = Space::Box(BoxSpace::new(vec![-2.0], vec![2.0]).unwrap());
    let layout = TransitionRows {
        obs_dim: 1,
        act_dim: 1,
    };
    let rules = RowRules::new(layout, &space, 100.0).unwrap();
    use emberlab_dist::BatchRules;
    // Exploration noise may step past the box: still a usable transition.
    assert!(rules.check(&[0.5, 2.5, -1.0, 0.4, 0.0, 1.0]).is_ok());
    assert!(rules.check(&[0.5, 250.0, -1.0, 0.4, 0.0, 1.0]).is_err());
}

#[test]
fn unary_calls_past_a_peers_rate_wait_then_are_refused_and_others_are_served() {
    let _turn = timed();
    let limits = GrpcLimits {
        peer_unary_per_sec: 5.0,
        ..GrpcLimits::default()
    };
    let l = learner("unary", limits, &ServerSecurity::insecure(), 4);
    let addr = l.grpc.local_addr();
    let rt = runtime();
    let codes = rt.block_on(async {
        let mut calls = tokio::task::JoinSet::new();
        for _ in 0..4 {
            let channel = attacker_channel(addr).await.unwrap();
            for _ in 0..8 {
                let mut client = proto::learner_client::LearnerClient::new(channel.clone());
                calls.spawn(async move { client.info(proto::InfoRequest {}).await.map(|_| ()) });
            }
        }
        let mut codes = Vec::new();
        while let Some(r) = calls.join_next().await {
            codes.push(r.unwrap().err().map(|s| s.code()));
        }
        codes
    });
    let served = codes.iter().filter(|c| c.is_none()).count();
    let refused = codes
        .iter()
        .filter(|c| **c == Some(tonic::Code::ResourceExhausted))
        .count();
    eprintln!("32 calls at once, 5 per second allowed: {served} served, {refused} refused");
    // A burst of 5, then one every 200 ms for up to a second of waiting.
    assert!((5..=12).contains(&served), "{served} served");
    assert_eq!(served + refused, 32);
    assert_eq!(l.grpc.stats().refused.unary_rate, refused as u64);
    // Another peer's calls are not held up.
    let t = Instant::now();
    let mut honest = PolicyClient::connect(&addr.to_string(), quick()).unwrap();
    honest.fetch().unwrap();
    assert!(
        t.elapsed() < Duration::from_millis(500),
        "{:?}",
        t.elapsed()
    );
}

#[test]
fn a_flooding_peer_cannot_fill_the_disk_its_acknowledgements_wait() {
    let _turn = timed();
    let dir = temp_dir("budget");
    let (mut log, _) = TransitionLog::open(&dir.0.join("log")).unwrap();
    // Rows of 8 values: a batch of 10 rows is 8 + 28 + 320 bytes; 1 KB segments, 4 KB in all.
    log.set_segment_bytes(1024);
    log.set_budget(4096);
    let files = dir.0.clone();
    let l = serve(
        dir,
        log,
        "127.0.0.1:0",
        GrpcLimits::default(),
        &ServerSecurity::insecure(),
        4,
    );
    let (ingest, addr) = (l.ingest.clone(), l.grpc.local_addr().to_string());
    let flood = std::thread::spawn(move || {
        let mut s = TransitionSender::connect(&addr, 1, 1, LAYOUT.width() as u32, quick()).unwrap();
        let batch: Vec<f32> = (0..10).flat_map(|_| row()).collect();
        let mut slowest = Duration::ZERO;
        for _ in 0..30 {
            let t = Instant::now();
            s.send(&batch).unwrap();
            slowest = slowest.max(t.elapsed());
        }
        slowest
    });
    // The learner's checkpoints: every 400 ms, everything acknowledged is covered.
    let mut peak = 0;
    let start = Instant::now();
    while !flood.is_finished() {
        std::thread::sleep(Duration::from_millis(50));
        peak = peak.max(std::fs::read_dir(&files).unwrap().count());
        if start.elapsed() > Duration::from_secs(30) {
            panic!("the flood never finished");
        }
        if ingest.wants_room() {
            std::thread::sleep(Duration::from_millis(400));
            ingest.release(ingest.stored().0, 0).unwrap();
        }
    }
    let slowest = flood.join().unwrap();
    let bytes: u64 = std::fs::read_dir(&files)
        .unwrap()
        .map(|e| e.unwrap().metadata().unwrap().len())
        .sum();
    eprintln!(
        "30 batches into a 4 KB log: slowest acknowledgement {slowest:?}, at most {peak} \
         segments, {bytes} bytes at the end"
    );
    assert!(
        slowest >= Duration::from_millis(300),
        "{slowest:?}: no push-back"
    );
    assert!(peak <= 6, "{peak} segment files");
    assert_eq!(ingest.stored(), (30, 300), "every batch stored once");
}

#[test]
fn out_of_descriptors_the_accept_loop_backs_off_and_recovers() {
    let _turn = timed();
    // Once serving, the child keeps only 8 descriptors free.
    let mut server = spawn_child_server_with("emfile", "0,8");
    let addr = server.addr;
    let mut honest =
        RemoteActor::connect_secured(&addr.to_string(), quick(), server.security()).unwrap();
    let before = act_rate(&mut honest);
    let rt = runtime();
    let cpu_before = server.cpu();
    let t0 = Instant::now();
    let sockets = rt.block_on(async {
        let mut held = Vec::new();
        for _ in 0..100 {
            if let Some(s) = attacker_socket(addr).await {
                held.push(s);
            }
        }
        held
    });
    let during = act_rate(&mut honest);
    std::thread::sleep(Duration::from_millis(1000));
    let (cpu, wall) = (server.cpu() - cpu_before, t0.elapsed());
    drop(sockets);
    assert!(server.alive(), "the server exited");
    // Once the sockets are gone, new actors get in again.
    let deadline = Instant::now() + Duration::from_secs(10);
    let mut late = loop {
        match RemoteActor::connect_secured(&addr.to_string(), quick(), server.security()) {
            Ok(a) => break a,
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                std::thread::sleep(Duration::from_millis(100));
            }
            Err(e) => panic!("no new connection after the attack: {e}"),
        }
    };
    let mut out = ActionBuf::Discrete(vec![]);
    late.act(&[1.0, 0.0], true, &mut out).unwrap();
    drop((late, honest));
    let _ = server.child.kill();
    let mut stdout = String::new();
    let _ = std::io::Read::read_to_string(server.child.stdout.as_mut().unwrap(), &mut stdout);
    let backoffs: u64 = stdout
        .lines()
        .filter_map(|l| l.strip_prefix("accept_backoffs="))
        .filter_map(|n| n.parse().ok())
        .max()
        .unwrap_or(0);
    eprintln!(
        "out of descriptors: {backoffs} accept back-offs, server CPU {cpu:?} in {wall:?}; \
         honest actor {before:.0} requests/s alone, {during:.0} during"
    );
    assert!(backoffs > 0, "the accept loop never ran out: {stdout}");
    assert!(
        cpu.as_secs_f64() < 0.5 * wall.as_secs_f64(),
        "the server spun: {cpu:?} of CPU in {wall:?}"
    );
    assert_kept("descriptors exhausted", before, during);
}

#[test]
fn with_client_certificates_each_certificate_is_a_peer_of_its_own() {
    let _turn = timed();
    // Two actors on one machine (one address), each with a certificate of its own.
    let (server_pair, a, b) = (
        SelfSigned::generate(&["localhost", "127.0.0.1"]).unwrap(),
        SelfSigned::generate(&["actor-a"]).unwrap(),
        SelfSigned::generate(&["actor-b"]).unwrap(),
    );
    let security = ServerSecurity {
        token: None,
        tls: Some(
            ServerTls::from_pem(server_pair.cert_pem.clone(), server_pair.key_pem)
                .with_client_ca(format!("{}{}", a.cert_pem, b.cert_pem)),
        ),
    };
    let limits = GrpcLimits {
        max_streams_per_peer: 2,
        ..GrpcLimits::default()
    };
    let l = learner("certs", limits, &security, 4);
    let addr = l.grpc.local_addr().to_string();
    let as_actor = |p: &SelfSigned| ClientSecurity {
        token: None,
        tls: Some(
            ClientTls::from_pem(server_pair.cert_pem.clone())
                .with_identity(p.cert_pem.clone(), p.key_pem.clone()),
        ),
    };
    let held_a: Vec<_> = (0..2)
        .map(|_| RemoteActor::connect_secured(&addr, quick(), as_actor(&a)).unwrap())
        .collect();
    let e = RemoteActor::connect_secured(&addr, quick(), as_actor(&a))
        .err()
        .unwrap()
        .to_string();
    assert!(
        e.contains("certificate") && e.contains("a peer may hold 2"),
        "{e}"
    );
    // The other certificate, from the same address, has its own two.
    let held_b: Vec<_> = (0..2)
        .map(|_| RemoteActor::connect_secured(&addr, quick(), as_actor(&b)).unwrap())
        .collect();
    let stats = l.grpc.stats();
    assert_eq!(stats.streams, 4);
    assert_eq!(
        stats
            .peers
            .iter()
            .filter(|p| matches!(p.peer, PeerId::Cert(_)) && p.streams == 2)
            .count(),
        2,
        "{stats:?}"
    );
    drop((held_a, held_b));
}
