//! The gRPC services on loopback: remote actors batched by the learner, bad messages of
//! every kind refused with a status while the other actors go on, actors reconnecting to
//! a restarted learner, versioned policy publication, the parameter server over gRPC.
#![cfg(feature = "grpc")]

use emberlab_algo::{ActionBuf, Agent};
use emberlab_dist::grpc::proto;
use emberlab_dist::{
    ActionKind, Backoff, GrpcLimits, GrpcServer, InferenceConfig, InferenceServer, LearnerServices,
    ParameterServer, ParameterServerConfig, PolicyBoard, PolicyClient, RemoteActor, RemoteTrainer,
    Sgd,
};
use std::io::Write;
use std::time::Duration;

mod common;

use common::{Echo, echo_inference};

fn learner(limits: GrpcLimits) -> (InferenceServer<Echo>, GrpcServer) {
    let inference = echo_inference();
    let grpc = GrpcServer::learner(
        "127.0.0.1:0",
        inference.handle(),
        ActionKind::Discrete,
        limits,
    )
    .unwrap();
    (inference, grpc)
}

fn quick() -> Backoff {
    Backoff {
        initial: Duration::from_millis(10),
        max: Duration::from_millis(100),
        give_up_after: Duration::from_secs(10),
    }
}

fn check_serving(actor: &mut RemoteActor, x: f32) {
    let mut out = ActionBuf::Discrete(vec![]);
    actor.act(&[x, 0.0], true, &mut out).unwrap();
    assert_eq!(out, ActionBuf::Discrete(vec![x as usize]));
}

#[test]
fn remote_actors_are_answered_through_shared_batches() {
    let (inference, grpc) = learner(GrpcLimits::default());
    let addr = grpc.local_addr().to_string();
    let threads: Vec<_> = (0..4)
        .map(|actor| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                let mut remote = RemoteActor::connect(&addr, quick()).unwrap();
                assert_eq!(remote.obs_dim(), 2);
                assert_eq!(remote.action_kind(), ActionKind::Discrete);
                let mut out = ActionBuf::Discrete(vec![]);
                for step in 0..100 {
                    let x = (actor * 1000 + step) as f32;
                    let version = remote
                        .act_remote(&[x, 0.0, 1.0, 0.0], true, &mut out)
                        .unwrap();
                    assert_eq!(version, 0);
                    assert_eq!(out, ActionBuf::Discrete(vec![x as usize, 1]));
                }
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let stats = inference.stats();
    assert_eq!(stats.requests, 400);
    assert!(stats.mean_batch() > 2.0, "{stats:?}");
}

/// Sends one request on a fresh stream with the raw client; the stream's first answer.
fn raw_exchange(
    addr: &str,
    obs: Vec<f32>,
) -> std::result::Result<proto::ActResponse, tonic::Status> {
    let rt = tokio::runtime::Builder::new_current_thread()
        .enable_all()
        .build()
        .unwrap();
    rt.block_on(async {
        let mut client = proto::learner_client::LearnerClient::connect(format!("http://{addr}"))
            .await
            .unwrap()
            .max_encoding_message_size(64 << 20);
        let req = proto::ActRequest {
            obs,
            explore: true,
            seq: 1,
        };
        let mut answers = client
            .act(tokio_stream::iter(vec![req]))
            .await?
            .into_inner();
        match answers.message().await? {
            Some(r) => Ok(r),
            None => Err(tonic::Status::aborted("no answer")),
        }
    })
}

#[test]
fn bad_messages_get_statuses_and_the_other_actors_are_still_served() {
    let limits = GrpcLimits {
        max_message_bytes: 64 << 10,
        max_rows: 100,
        ..GrpcLimits::default()
    };
    let (_inference, grpc) = learner(limits);
    let addr = grpc.local_addr().to_string();
    let mut good = RemoteActor::connect(&addr, quick()).unwrap();
    check_serving(&mut good, 3.0);

    // Garbage, a cut HTTP/2 preface and random frames on raw TCP connections.
    let mut rng = emberlab_core::EmberRng::seed_from(5);
    for i in 0..20 {
        let mut tcp = std::net::TcpStream::connect(&addr).unwrap();
        let mut bytes: Vec<u8> = match i % 3 {
            0 => b"PRI * HTTP/2.0\r\n\r\nSM".to_vec(),
            1 => b"PRI * HTTP/2.0\r\n\r\nSM\r\n\r\n".to_vec(),
            _ => Vec::new(),
        };
        bytes.extend((0..rng.below(2000)).map(|_| rng.next_u64() as u8));
        let _ = tcp.write_all(&bytes);
        drop(tcp);
        check_serving(&mut good, i as f32);
    }

    let code = |r: std::result::Result<proto::ActResponse, tonic::Status>| r.unwrap_err().code();
    // Wrong width, NaN, too many rows, an oversized message.
    assert_eq!(
        code(raw_exchange(&addr, vec![1.0, 2.0, 3.0])),
        tonic::Code::InvalidArgument
    );
    assert_eq!(
        code(raw_exchange(&addr, vec![])),
        tonic::Code::InvalidArgument
    );
    assert_eq!(
        code(raw_exchange(&addr, vec![f32::NAN, 0.0])),
        tonic::Code::InvalidArgument
    );
    assert_eq!(
        code(raw_exchange(&addr, vec![1.0; 2 * 101])),
        tonic::Code::ResourceExhausted
    );
    let oversized = code(raw_exchange(&addr, vec![1.0; 40_000]));
    assert!(
        matches!(
            oversized,
            tonic::Code::OutOfRange | tonic::Code::ResourceExhausted | tonic::Code::Internal
        ),
        "{oversized:?}"
    );
    // A good request on a raw stream still works, and the long-lived actor never noticed.
    assert_eq!(
        raw_exchange(&addr, vec![9.0, 0.0]).unwrap().discrete,
        vec![9]
    );
    check_serving(&mut good, 42.0);
    assert_eq!(good.reconnects(), 0);

    // The actor's own client refuses what the server would (no reconnect loop on refusals).
    let mut out = ActionBuf::Discrete(vec![]);
    let err = good.act(&[1.0, 2.0, 3.0], true, &mut out).unwrap_err();
    assert!(err.to_string().contains("obs_dim"), "{err}");
    check_serving(&mut good, 7.0);
}

#[test]
fn an_actor_reconnects_when_the_learner_restarts() {
    let (inference, grpc) = learner(GrpcLimits::default());
    let addr = grpc.local_addr().to_string();
    let mut actor = RemoteActor::connect(&addr, quick()).unwrap();
    check_serving(&mut actor, 1.0);
    drop(grpc);
    drop(inference);
    // The learner comes back on the same address a little later.
    let addr2 = addr.clone();
    let restart = std::thread::spawn(move || {
        std::thread::sleep(Duration::from_millis(300));
        let inference = InferenceServer::spawn(
            Echo,
            ActionBuf::Discrete(vec![]),
            InferenceConfig::default(),
        )
        .unwrap();
        let grpc = GrpcServer::learner(
            &addr2,
            inference.handle(),
            ActionKind::Discrete,
            GrpcLimits::default(),
        )
        .unwrap();
        (inference, grpc)
    });
    check_serving(&mut actor, 2.0);
    assert!(actor.reconnects() >= 1);
    let _servers = restart.join().unwrap();
    check_serving(&mut actor, 3.0);

    // Nobody there at all: an error after the backoff budget, not a hang.
    drop(_servers);
    let mut lonely = RemoteActor::connect(
        &addr,
        Backoff {
            give_up_after: Duration::from_millis(200),
            ..quick()
        },
    );
    if let Ok(a) = lonely.as_mut() {
        let mut out = ActionBuf::Discrete(vec![]);
        assert!(a.act(&[1.0, 0.0], true, &mut out).is_err());
    }
}

#[test]
fn trainers_meet_at_the_parameter_server_over_grpc() {
    let ps = ParameterServer::spawn(
        vec![1.0, 1.0],
        Sgd { lr: 0.5 },
        ParameterServerConfig::new(2),
    )
    .unwrap();
    let grpc = GrpcServer::parameter_server("127.0.0.1:0", &ps, GrpcLimits::default()).unwrap();
    let addr = grpc.local_addr().to_string();
    let threads: Vec<_> = (0..2u32)
        .map(|id| {
            let addr = addr.clone();
            std::thread::spawn(move || {
                let mut t = RemoteTrainer::connect(&addr, id, GrpcLimits::default()).unwrap();
                let w = t.current().unwrap();
                t.submit(w.version, vec![id as f32 * 2.0, 0.0]).unwrap()
            })
        })
        .collect();
    let results: Vec<_> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    assert_eq!(results[0], results[1]);
    assert_eq!(results[0].version, 1);
    assert_eq!(results[0].params.as_slice(), &[0.5, 1.0]);
    let mut t = RemoteTrainer::connect(&addr, 0, GrpcLimits::default()).unwrap();
    assert!(
        t.submit(1, vec![1.0])
            .unwrap_err()
            .to_string()
            .contains("gradient")
    );
    let mut stranger = RemoteTrainer::connect(&addr, 9, GrpcLimits::default()).unwrap();
    assert!(stranger.submit(1, vec![1.0, 1.0]).is_err());
}

#[test]
fn policy_weights_are_sent_only_when_newer_and_refused_where_not_published() {
    let inference = InferenceServer::spawn(
        Echo,
        ActionBuf::Discrete(vec![]),
        InferenceConfig::default(),
    )
    .unwrap();
    let board = PolicyBoard::new("algo = \"dqn\"");
    let services = LearnerServices {
        inference: inference.handle(),
        kind: ActionKind::Discrete,
        ingest: None,
        policy: Some(board.clone()),
    };
    let grpc =
        GrpcServer::learner_services("127.0.0.1:0", services, GrpcLimits::default()).unwrap();
    let addr = grpc.local_addr().to_string();
    let mut client = PolicyClient::connect(&addr, quick()).unwrap();
    // Nothing published yet: a clear error once the backoff gives up.
    let short = Backoff {
        give_up_after: Duration::from_millis(50),
        ..quick()
    };
    let mut impatient = PolicyClient::connect(&addr, short).unwrap();
    let err = impatient.fetch().unwrap_err().to_string();
    assert!(err.contains("published no policy"), "{err}");

    board.publish(3, 300, vec![1.0, 2.0]);
    let (version, first) = client.fetch().unwrap();
    let first = first.unwrap();
    assert_eq!((version, first.env_steps), (3, 300));
    assert_eq!(
        (first.params.as_slice(), &*first.config),
        (&[1.0, 2.0][..], "algo = \"dqn\"")
    );
    // Held: only the version comes back.
    assert_eq!(client.fetch().unwrap(), (3, None));
    board.publish(2, 200, vec![9.0, 9.0]);
    assert_eq!(board.version(), 3, "an older version is not posted");
    board.publish(7, 700, vec![3.0, 4.0]);
    let (version, next) = client.fetch().unwrap();
    assert_eq!(
        (version, next.unwrap().params.as_slice()),
        (7, &[3.0, 4.0][..])
    );

    // A learner without publication refuses the call by name.
    let (_inference, plain) = learner(GrpcLimits::default());
    let mut other = PolicyClient::connect(&plain.local_addr().to_string(), quick()).unwrap();
    let err = other.fetch().unwrap_err().to_string();
    assert!(err.contains("publishes no policy"), "{err}");
}
