//! The transition stream over gRPC with a real learner process: actors stream batches, the
//! learner is killed with SIGKILL mid-run and restarted on the same log, the actors
//! reconnect and resend, and every acknowledged batch is in the log exactly once.
#![cfg(feature = "grpc")]

use emberlab_algo::{ActionBuf, Agent};
use emberlab_dist::{
    ActionKind, Backoff, GrpcLimits, GrpcServer, InferenceConfig, InferenceServer,
    TransitionIngest, TransitionLog, TransitionSender,
};
use std::path::PathBuf;
use std::process::{Child, Command, Stdio};
use std::time::Duration;

const WIDTH: u32 = 5;
const ROWS: usize = 8;

struct Zero;

impl Agent for Zero {
    fn obs_dim(&self) -> usize {
        2
    }

    fn act(
        &mut self,
        obs: &[f32],
        _explore: bool,
        out: &mut ActionBuf,
    ) -> emberlab_core::Result<()> {
        let out = out.discrete_mut("zero")?;
        out.clear();
        out.resize(obs.len() / 2, 0);
        Ok(())
    }
}

/// The learner process: serves on `EMBER_LEARNER_CHILD=port,log path` until killed.
#[test]
fn child_learner() {
    let Ok(spec) = std::env::var("EMBER_LEARNER_CHILD") else {
        return;
    };
    let (port, path) = spec.split_once(',').unwrap();
    let (log, _recovered) = TransitionLog::open(std::path::Path::new(path)).unwrap();
    let (ingest, rx) = TransitionIngest::new(log, WIDTH, 16);
    let inference = InferenceServer::spawn(
        Zero,
        ActionBuf::Discrete(vec![]),
        InferenceConfig::default(),
    )
    .unwrap();
    let _grpc = GrpcServer::learner_with_transitions(
        &format!("127.0.0.1:{port}"),
        inference.handle(),
        ActionKind::Discrete,
        Some(ingest),
        GrpcLimits::default(),
    )
    .unwrap();
    // The learner's replay would take these; here they are only drained.
    for _ in rx {}
}

fn spawn_learner(port: u16, log: &std::path::Path) -> Child {
    Command::new(std::env::current_exe().unwrap())
        .args([
            "child_learner",
            "--exact",
            "--nocapture",
            "--test-threads=1",
        ])
        .env("EMBER_LEARNER_CHILD", format!("{port},{}", log.display()))
        .stdout(Stdio::null())
        .stderr(Stdio::null())
        .spawn()
        .unwrap()
}

fn free_port() -> u16 {
    std::net::TcpListener::bind("127.0.0.1:0")
        .unwrap()
        .local_addr()
        .unwrap()
        .port()
}

#[test]
fn a_killed_learner_loses_no_acknowledged_transition() {
    let dir: PathBuf =
        std::env::temp_dir().join(format!("ember-transitions-{}", std::process::id()));
    let _ = std::fs::remove_dir_all(&dir);
    std::fs::create_dir_all(&dir).unwrap();
    let log_path = dir.join("transitions.wal");
    let port = free_port();
    let mut learner = spawn_learner(port, &log_path);
    let batches = 200u64;
    let actors: Vec<_> = (0..4u64)
        .map(|actor| {
            let addr = format!("127.0.0.1:{port}");
            std::thread::spawn(move || {
                let backoff = Backoff {
                    initial: Duration::from_millis(10),
                    max: Duration::from_millis(200),
                    give_up_after: Duration::from_secs(30),
                };
                let mut sender =
                    TransitionSender::connect(&addr, actor, 77, WIDTH, backoff).unwrap();
                let mut duplicates = 0;
                for seq in 1..=batches {
                    let values: Vec<f32> = (0..ROWS * WIDTH as usize)
                        .map(|i| (actor * 1_000_000 + seq * 100 + i as u64) as f32)
                        .collect();
                    duplicates += sender.send(&values).unwrap() as u64;
                    std::thread::sleep(Duration::from_millis(3));
                }
                (sender.acknowledged(), sender.reconnects(), duplicates)
            })
        })
        .collect();
    // Kill the learner twice mid-run; restart it on the same log and port.
    for pause in [300, 250] {
        std::thread::sleep(Duration::from_millis(pause));
        learner.kill().unwrap();
        learner.wait().unwrap();
        std::thread::sleep(Duration::from_millis(100));
        learner = spawn_learner(port, &log_path);
    }
    let results: Vec<_> = actors.into_iter().map(|a| a.join().unwrap()).collect();
    learner.kill().unwrap();
    learner.wait().unwrap();
    let reconnects: u64 = results.iter().map(|r| r.1).sum();
    assert!(
        reconnects >= 4,
        "the actors never lost the learner: {results:?}"
    );
    let (_, records) = TransitionLog::open(&log_path).unwrap();
    for actor in 0..4u64 {
        assert_eq!(
            results[actor as usize].0, batches,
            "actor {actor} acknowledged"
        );
        let seqs: Vec<u64> = records
            .iter()
            .filter(|r| r.actor == actor)
            .map(|r| r.seq)
            .collect();
        // Every acknowledged batch, once, in order, with its own values.
        assert_eq!(seqs, (1..=batches).collect::<Vec<_>>(), "actor {actor}");
    }
    for r in &records {
        assert_eq!(r.values[0], (r.actor * 1_000_000 + r.seq * 100) as f32);
        assert_eq!(r.rows(), ROWS);
    }
    std::fs::remove_dir_all(&dir).unwrap();
}
