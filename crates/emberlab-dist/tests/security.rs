//! Token and TLS on loopback, and the limits against a flooding peer: the right token (and
//! CA) is served; no token, a wrong token, a wrong CA, a missing client certificate and a
//! plain-text client are refused with a one-line error, counted, and store nothing; a peer
//! past the stream limit is refused while the others keep going; a flooding stream is
//! slowed to its rate while another stream's answers stay quick.
#![cfg(feature = "grpc")]

use emberlab_algo::{ActionBuf, Agent};
use emberlab_core::Result;
use emberlab_dist::{
    ActionKind, Backoff, ClientSecurity, ClientTls, GrpcLimits, GrpcServer, InferenceServer,
    LearnerServices, ParameterServer, ParameterServerConfig, RemoteActor, RemoteTrainer,
    SelfSigned, ServerSecurity, ServerTls, Sgd, Token, TransitionIngest, TransitionLog,
    TransitionSender,
};
use std::time::{Duration, Instant};

mod common;

use common::{Echo, echo_inference};

const WIDTH: u32 = 3;

struct Learner {
    _inference: InferenceServer<Echo>,
    grpc: GrpcServer,
    ingest: TransitionIngest,
    _dir: TempDir,
}

struct TempDir(std::path::PathBuf);

impl Drop for TempDir {
    fn drop(&mut self) {
        let _ = std::fs::remove_dir_all(&self.0);
    }
}

fn temp_dir(name: &str) -> TempDir {
    let dir = std::env::temp_dir().join(format!(
        "ember-security-{name}-{}-{:?}",
        std::process::id(),
        std::thread::current().id()
    ));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    TempDir(dir)
}

fn learner(name: &str, security: &ServerSecurity, limits: GrpcLimits) -> Learner {
    let dir = temp_dir(name);
    let (log, _) = TransitionLog::open(&dir.0.join("log")).unwrap();
    let (ingest, rx) = TransitionIngest::new(log, WIDTH, 1024);
    std::thread::spawn(move || for _ in rx {});
    let inference = echo_inference();
    let services = LearnerServices {
        inference: inference.handle(),
        kind: ActionKind::Discrete,
        ingest: Some(ingest.clone()),
        policy: None,
    };
    let grpc =
        GrpcServer::learner_services_secured("127.0.0.1:0", services, limits, security).unwrap();
    Learner {
        _inference: inference,
        grpc,
        ingest,
        _dir: dir,
    }
}

fn quick() -> Backoff {
    Backoff {
        initial: Duration::from_millis(10),
        max: Duration::from_millis(50),
        give_up_after: Duration::from_secs(1),
    }
}

fn token(text: &str) -> Token {
    Token::new(text, "test").unwrap()
}

fn pair() -> SelfSigned {
    SelfSigned::generate(&["localhost", "127.0.0.1"]).unwrap()
}

fn act(actor: &mut RemoteActor, x: f32) {
    let mut out = ActionBuf::Discrete(vec![]);
    actor.act(&[x, 0.0], true, &mut out).unwrap();
    assert_eq!(out, ActionBuf::Discrete(vec![x as usize]));
}

/// Everything a client does: act, and send one batch of transitions (as a new actor, so
/// that the learner stores it rather than dropping a resend).
fn serve_one(addr: &str, security: ClientSecurity) -> Result<()> {
    static ACTORS: std::sync::atomic::AtomicU64 = std::sync::atomic::AtomicU64::new(100);
    let id = ACTORS.fetch_add(1, std::sync::atomic::Ordering::Relaxed);
    let mut actor = RemoteActor::connect_secured(addr, quick(), security.clone())?;
    act(&mut actor, 3.0);
    let mut sender = TransitionSender::connect_secured(addr, id, 1, WIDTH, quick(), security)?;
    sender.send(&[1.0, 2.0, 3.0])?;
    Ok(())
}

/// A refusal: an error of one line naming `want`.
fn refused(result: Result<()>, want: &str) -> String {
    let text = result.expect_err("refused").to_string();
    eprintln!("refused: {text}");
    assert!(!text.contains('\n'), "one line: {text}");
    assert!(
        text.to_lowercase().contains(&want.to_lowercase()),
        "`{want}` in: {text}"
    );
    text
}

#[test]
fn the_token_is_checked_on_every_call_and_stream() {
    let right = token("right-token-0123456789");
    let security = ServerSecurity {
        token: Some(right.clone()),
        tls: None,
    };
    let l = learner("token", &security, GrpcLimits::default());
    let addr = l.grpc.local_addr().to_string();
    let with = |t: Option<Token>| ClientSecurity {
        token: t,
        tls: None,
    };
    serve_one(&addr, with(Some(right.clone()))).unwrap();
    assert_eq!(l.ingest.stored(), (1, 1));
    assert_eq!(l.grpc.refused(), 0);

    refused(serve_one(&addr, with(None)), "no token");
    refused(
        serve_one(&addr, with(Some(token("wrong-token-0123456789")))),
        "wrong token",
    );
    // A transition stream alone, with the wrong token: nothing is stored.
    let mut sneaky = TransitionSender::connect_secured(
        &addr,
        9,
        9,
        WIDTH,
        quick(),
        with(Some(token("right-token-012345678X"))),
    );
    if let Ok(s) = sneaky.as_mut() {
        refused(s.send(&[6.0, 6.0, 6.0]).map(|_| ()), "wrong token");
    }
    assert_eq!(l.ingest.stored(), (1, 1), "refused peers store nothing");
    assert!(
        l.grpc.refused() >= 3,
        "{} refusals counted",
        l.grpc.refused()
    );
    // The learner keeps serving the right token.
    serve_one(&addr, with(Some(right))).unwrap();
    assert_eq!(l.ingest.stored(), (2, 2));
}

#[test]
fn tls_with_the_token_serves_its_clients_and_refuses_the_others() {
    let (server_pair, right) = (pair(), Token::generate().unwrap());
    let security = ServerSecurity {
        token: Some(right.clone()),
        tls: Some(ServerTls::from_pem(
            server_pair.cert_pem.clone(),
            server_pair.key_pem.clone(),
        )),
    };
    let l = learner("tls", &security, GrpcLimits::default());
    let addr = l.grpc.local_addr().to_string();
    let trusting = ClientSecurity {
        token: Some(right.clone()),
        tls: Some(ClientTls::from_pem(server_pair.cert_pem.clone())),
    };
    serve_one(&addr, trusting.clone()).unwrap();
    // By name too: the certificate holds `localhost`.
    let port = l.grpc.local_addr().port();
    serve_one(&format!("localhost:{port}"), trusting.clone()).unwrap();
    assert_eq!(l.ingest.stored(), (2, 2));

    // Another CA: the handshake fails at once, not after the backoff.
    let strange = ClientSecurity {
        token: Some(right.clone()),
        tls: Some(ClientTls::from_pem(pair().cert_pem)),
    };
    let start = Instant::now();
    refused(serve_one(&addr, strange), "certificate");
    assert!(start.elapsed() < Duration::from_millis(900), "no retries");
    // The right CA checked against a name the certificate does not hold.
    let misnamed = ClientSecurity {
        token: Some(right.clone()),
        tls: Some(ClientTls::from_pem(server_pair.cert_pem.clone()).with_domain("example.org")),
    };
    refused(serve_one(&addr, misnamed), "certificate");
    // Plain text against TLS: the learner never answers it.
    refused(
        serve_one(
            &addr,
            ClientSecurity {
                token: Some(right.clone()),
                tls: None,
            },
        ),
        "learner",
    );
    // TLS without the token.
    refused(
        serve_one(
            &addr,
            ClientSecurity {
                token: None,
                ..trusting.clone()
            },
        ),
        "no token",
    );
    assert_eq!(l.ingest.stored(), (2, 2), "refused peers store nothing");
    serve_one(&addr, trusting).unwrap();
    assert_eq!(l.ingest.stored(), (3, 3));
}

#[test]
fn mutual_tls_refuses_clients_without_a_certificate_of_its_ca() {
    let (server_pair, client_pair) = (pair(), pair());
    let security = ServerSecurity {
        token: None,
        tls: Some(
            ServerTls::from_pem(server_pair.cert_pem.clone(), server_pair.key_pem.clone())
                .with_client_ca(client_pair.cert_pem.clone()),
        ),
    };
    let l = learner("mtls", &security, GrpcLimits::default());
    let addr = l.grpc.local_addr().to_string();
    let ca = ClientTls::from_pem(server_pair.cert_pem.clone());
    let plain = ClientSecurity {
        token: None,
        tls: Some(ca.clone()),
    };
    let text = serve_one(&addr, plain).expect_err("no client certificate");
    assert!(!text.to_string().contains('\n'), "{text}");
    let stranger = pair();
    let foreign = ClientSecurity {
        token: None,
        tls: Some(
            ca.clone()
                .with_identity(stranger.cert_pem, stranger.key_pem),
        ),
    };
    assert!(serve_one(&addr, foreign).is_err());
    assert_eq!(l.ingest.stored(), (0, 0));
    let member = ClientSecurity {
        token: None,
        tls: Some(ca.with_identity(client_pair.cert_pem, client_pair.key_pem)),
    };
    serve_one(&addr, member).unwrap();
    assert_eq!(l.ingest.stored(), (1, 1));
}

#[test]
fn streams_past_the_limit_are_refused_and_the_others_go_on() {
    let limits = GrpcLimits {
        max_streams: 3,
        ..GrpcLimits::default()
    };
    let l = learner("streams", &ServerSecurity::insecure(), limits);
    let addr = l.grpc.local_addr().to_string();
    let mut held: Vec<RemoteActor> = (0..3)
        .map(|_| RemoteActor::connect(&addr, quick()).unwrap())
        .collect();
    // The held streams' speed: 200 requests each, before and while a peer knocks.
    let speed = |held: &mut Vec<RemoteActor>| {
        let start = Instant::now();
        for i in 0..200 {
            for (k, a) in held.iter_mut().enumerate() {
                act(a, ((i + k) % 4) as f32);
            }
        }
        (200 * held.len()) as f64 / start.elapsed().as_secs_f64()
    };
    let before = speed(&mut held);
    let knocking = {
        let addr = addr.clone();
        std::thread::spawn(move || {
            let mut refused = 0;
            let start = Instant::now();
            while start.elapsed() < Duration::from_millis(500) {
                refused += usize::from(RemoteActor::connect(&addr, quick()).is_err());
            }
            refused
        })
    };
    let during = speed(&mut held);
    let knocks = knocking.join().unwrap();
    eprintln!(
        "3 held streams: {before:.0} requests/s alone, {during:.0} while a peer was refused \
         {knocks} times"
    );
    assert!(knocks > 0);
    assert!(
        during > before / 4.0,
        "{during:.0} requests/s, {before:.0} alone"
    );
    let text = RemoteActor::connect(&addr, quick())
        .err()
        .expect("a fourth stream is refused")
        .to_string();
    assert!(text.contains("at most 3"), "{text}");
    let sender = TransitionSender::connect(&addr, 1, 1, WIDTH, quick());
    let text = match sender {
        Err(e) => e.to_string(),
        Ok(mut s) => s.send(&[1.0, 2.0, 3.0]).unwrap_err().to_string(),
    };
    assert!(text.contains("at most 3"), "{text}");
    for (i, a) in held.iter_mut().enumerate() {
        act(a, i as f32);
    }
    // A closed stream gives its place back.
    held.pop();
    let deadline = Instant::now() + Duration::from_secs(5);
    let mut again = loop {
        match RemoteActor::connect(&addr, quick()) {
            Ok(a) => break a,
            Err(e) if Instant::now() < deadline => {
                let _ = e;
                std::thread::sleep(Duration::from_millis(20));
            }
            Err(e) => panic!("the freed place was not given back: {e}"),
        }
    };
    act(&mut again, 7.0);
}

#[test]
fn a_flooding_stream_is_paced_and_the_others_keep_their_speed() {
    let rate = 100.0;
    let limits = GrpcLimits {
        max_stream_rate: rate,
        ..GrpcLimits::default()
    };
    let l = learner("pace", &ServerSecurity::insecure(), limits);
    let addr = l.grpc.local_addr().to_string();
    let flood_addr = addr.clone();
    let flood = std::thread::spawn(move || {
        let mut a = RemoteActor::connect(&flood_addr, quick()).unwrap();
        let start = Instant::now();
        for i in 0..300 {
            act(&mut a, (i % 5) as f32);
        }
        start.elapsed()
    });
    // Meanwhile a polite actor: 50 requests, 20 ms apart (50 per second, under the rate).
    let mut polite = RemoteActor::connect(&addr, quick()).unwrap();
    let mut worst = Duration::ZERO;
    for i in 0..50 {
        let t = Instant::now();
        act(&mut polite, (i % 3) as f32);
        worst = worst.max(t.elapsed());
        std::thread::sleep(Duration::from_millis(20));
    }
    let took = flood.join().unwrap();
    // 300 requests at 100 per second after a burst of 100: at least 2 s.
    assert!(
        took >= Duration::from_millis(1900),
        "the flooding stream took {took:?}"
    );
    assert!(
        worst < Duration::from_millis(200),
        "the polite actor waited up to {worst:?}"
    );
    eprintln!("flooding stream: 300 requests in {took:?}; polite actor's slowest answer {worst:?}");
}

#[test]
fn the_parameter_server_takes_gradients_over_tls_with_its_token_only() {
    let ps = ParameterServer::spawn(
        vec![1.0, 2.0],
        Sgd { lr: 0.5 },
        ParameterServerConfig::new(1),
    )
    .unwrap();
    let (pair, right) = (pair(), Token::generate().unwrap());
    let security = ServerSecurity {
        token: Some(right.clone()),
        tls: Some(ServerTls::from_pem(pair.cert_pem.clone(), pair.key_pem)),
    };
    let grpc =
        GrpcServer::parameter_server_secured("127.0.0.1:0", &ps, GrpcLimits::default(), &security)
            .unwrap();
    let addr = grpc.local_addr().to_string();
    let tls = ClientTls::from_pem(pair.cert_pem);
    let client = |token: Option<Token>| ClientSecurity {
        token,
        tls: Some(tls.clone()),
    };
    let mut stranger =
        RemoteTrainer::connect_secured(&addr, 0, GrpcLimits::default(), &client(None)).unwrap();
    let text = stranger.submit(0, vec![2.0, 2.0]).unwrap_err().to_string();
    assert!(text.contains("no token"), "{text}");
    assert_eq!(
        ps.trainer(0).unwrap().weights().version,
        0,
        "nothing applied"
    );
    let mut trainer =
        RemoteTrainer::connect_secured(&addr, 0, GrpcLimits::default(), &client(Some(right)))
            .unwrap();
    let w = trainer.submit(0, vec![2.0, 2.0]).unwrap();
    assert_eq!((w.version, w.params.as_slice()), (1, &[0.0, 1.0][..]));
    assert_eq!(grpc.refused(), 1);
}
