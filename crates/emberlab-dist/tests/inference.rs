//! `InferenceServer`: batching across actor threads, each actor gets its own rows' actions,
//! the flush deadline, weight swaps between batches, bad input and failing agents, a burn
//! policy served exactly as it acts alone.

use emberlab_algo::{ActionBuf, Agent};
use emberlab_core::{Error, Result};
use emberlab_dist::{InferenceConfig, InferenceServer};
use std::sync::Arc;
use std::sync::atomic::{AtomicUsize, Ordering};
use std::time::{Duration, Instant};

/// Acts `round(obs[0]) + offset` per row; remembers the largest batch it saw; panics on an
/// observation of exactly 13 and fails on 14 (a user's agent going wrong).
struct Echo {
    offset: usize,
    largest: Arc<AtomicUsize>,
}

impl Agent for Echo {
    fn obs_dim(&self) -> usize {
        2
    }

    fn act(&mut self, obs: &[f32], _explore: bool, out: &mut ActionBuf) -> Result<()> {
        let rows = obs.len() / 2;
        self.largest.fetch_max(rows, Ordering::Relaxed);
        if obs.chunks(2).any(|r| r[0] == 13.0) {
            panic!("thirteen");
        }
        if obs.chunks(2).any(|r| r[0] == 14.0) {
            return Err(Error::invalid("echo input", 14, "not 14"));
        }
        let out = out.discrete_mut("Echo")?;
        out.clear();
        out.extend(obs.chunks(2).map(|r| r[0] as usize + self.offset));
        Ok(())
    }
}

fn echo(config: InferenceConfig) -> (InferenceServer<Echo>, Arc<AtomicUsize>) {
    let largest = Arc::new(AtomicUsize::new(0));
    let agent = Echo {
        offset: 0,
        largest: largest.clone(),
    };
    let server = InferenceServer::spawn(agent, ActionBuf::Discrete(vec![]), config).unwrap();
    (server, largest)
}

#[test]
fn many_actors_share_batches_and_each_gets_its_own_actions() {
    let config = InferenceConfig {
        max_batch: 8,
        max_wait: Duration::from_millis(2),
        queue: 64,
    };
    let (server, largest) = echo(config);
    let threads: Vec<_> = (0..8)
        .map(|actor| {
            let mut client = server.client();
            std::thread::spawn(move || {
                let mut out = ActionBuf::Discrete(vec![]);
                for step in 0..200 {
                    let a = (100 + actor * 1000 + step) as f32;
                    client.act(&[a, 0.0], true, &mut out).unwrap();
                    assert_eq!(out, ActionBuf::Discrete(vec![a as usize]));
                }
                // Several rows in one request come back in order.
                client
                    .act(&[1.0, 0.0, 2.0, 0.0, 3.0, 0.0], true, &mut out)
                    .unwrap();
                assert_eq!(out, ActionBuf::Discrete(vec![1, 2, 3]));
            })
        })
        .collect();
    for t in threads {
        t.join().unwrap();
    }
    let stats = server.stats();
    assert_eq!(stats.requests, 8 * 201);
    assert_eq!(stats.rows, 8 * 200 + 8 * 3);
    assert!(stats.mean_batch() > 1.5, "no batching: {stats:?}");
    // One-row requests stop gathering at max_batch; a 3-row one may end a batch past it.
    assert!(largest.load(Ordering::Relaxed) <= 8 + 2);
}

#[test]
fn a_request_the_agent_cannot_take_fails_alone_not_its_batch() {
    let (server, _) = echo(InferenceConfig {
        max_batch: 64,
        max_wait: Duration::from_millis(20),
        queue: 64,
    });
    let threads: Vec<_> = (0..6)
        .map(|actor| {
            let mut client = server.client();
            std::thread::spawn(move || {
                let mut out = ActionBuf::Discrete(vec![]);
                // Actor 0 sends the row the agent panics on, the others good rows, all
                // within one gathering window.
                let x = if actor == 0 {
                    13.0
                } else {
                    20.0 + actor as f32
                };
                (client.act(&[x, 0.0], true, &mut out), out)
            })
        })
        .collect();
    for (actor, t) in threads.into_iter().enumerate() {
        let (result, out) = t.join().unwrap();
        if actor == 0 {
            let err = result.unwrap_err().to_string();
            assert!(err.contains("thirteen"), "{err}");
        } else {
            assert_eq!(result.unwrap(), 0, "actor {actor}");
            assert_eq!(out, ActionBuf::Discrete(vec![20 + actor]));
        }
    }
    assert!(server.stats().batches >= 2);
}

#[test]
fn a_lone_actor_is_answered_after_max_wait() {
    let (server, _) = echo(InferenceConfig {
        max_batch: 1000,
        max_wait: Duration::from_millis(5),
        queue: 8,
    });
    let mut client = server.client();
    let mut out = ActionBuf::Discrete(vec![]);
    let t = Instant::now();
    client.act(&[4.0, 0.0], false, &mut out).unwrap();
    let waited = t.elapsed();
    assert_eq!(out, ActionBuf::Discrete(vec![4]));
    assert!(waited >= Duration::from_millis(5), "{waited:?}");
    assert!(waited < Duration::from_secs(1), "{waited:?}");
}

#[test]
fn every_answer_comes_from_one_version_while_weights_change() {
    let (server, largest) = echo(InferenceConfig {
        max_batch: 4,
        max_wait: Duration::from_micros(200),
        queue: 16,
    });
    let threads: Vec<_> = (0..4)
        .map(|_| {
            let mut client = server.client();
            std::thread::spawn(move || {
                let mut out = ActionBuf::Discrete(vec![]);
                let mut last = 0;
                for _ in 0..300 {
                    let version = client.act(&[0.0, 0.0, 0.0, 0.0], true, &mut out).unwrap();
                    // The update sets the offset to the version it creates.
                    let v = version as usize;
                    assert_eq!(out, ActionBuf::Discrete(vec![v, v]), "version {version}");
                    assert!(version >= last, "versions went back");
                    last = version;
                }
            })
        })
        .collect();
    for v in 1..=50 {
        let version = server
            .update(move |agent: &mut Echo| {
                agent.offset = v;
                Ok(())
            })
            .unwrap();
        assert_eq!(version, v as u64);
    }
    // A failing update leaves the version (and the agent) as they were.
    let err = server
        .update(|_: &mut Echo| Err(Error::invalid("weights", "bad", "good")))
        .unwrap_err();
    assert!(err.to_string().contains("weights"), "{err}");
    assert_eq!(server.stats().version, 50);
    for t in threads {
        t.join().unwrap();
    }
    assert!(largest.load(Ordering::Relaxed) >= 2);
}

#[test]
fn bad_input_and_failing_batches_get_errors_and_the_server_keeps_serving() {
    let (server, _) = echo(InferenceConfig::default());
    let mut client = server.client();
    let mut out = ActionBuf::Discrete(vec![]);
    let err = client.act(&[1.0, 2.0, 3.0], true, &mut out).unwrap_err();
    assert!(matches!(err, Error::Shape { .. }), "{err}");
    assert!(client.act(&[], true, &mut out).is_err());
    let err = client
        .act(&[1.0, 2.0, f32::NAN, 0.0], true, &mut out)
        .unwrap_err();
    assert!(err.to_string().contains("row 1"), "{err}");
    let err = client.act(&[13.0, 0.0], true, &mut out).unwrap_err();
    assert!(err.to_string().contains("thirteen"), "{err}");
    let err = client.act(&[14.0, 0.0], true, &mut out).unwrap_err();
    assert!(err.to_string().contains("not 14"), "{err}");
    // Still serving, this actor and others.
    assert_eq!(client.act(&[6.0, 0.0], true, &mut out).unwrap(), 0);
    assert_eq!(out, ActionBuf::Discrete(vec![6]));
    let mut other = client.clone();
    other.act(&[7.0, 0.0], false, &mut out).unwrap();
    assert_eq!(out, ActionBuf::Discrete(vec![7]));

    // A stopped server is an error, not a hang or a panic.
    drop(server);
    let err = client.act(&[1.0, 0.0], true, &mut out).unwrap_err();
    assert!(err.to_string().contains("stopped"), "{err}");
}

#[test]
fn a_burn_policy_serves_the_actions_it_takes_alone() {
    use emberlab_env::VecEnv;
    let env = emberlab_env::SyncVecEnv::from_id("CartPole-v1", 1).unwrap();
    let flex = "flex".parse::<emberlab_backend::DeviceSpec>().unwrap();
    let devices = emberlab_algo::Devices::same(&flex.device().unwrap());
    let build = || {
        emberlab_algo::A2cConfig {
            hidden: vec![32],
            seed: 3,
            ..emberlab_algo::A2cConfig::default()
        }
        .build(
            env.single_observation_space(),
            env.single_action_space(),
            &devices,
        )
        .unwrap()
    };
    let mut alone = build();
    let server = InferenceServer::spawn(
        build(),
        ActionBuf::Discrete(vec![]),
        InferenceConfig::default(),
    )
    .unwrap();
    let mut client = server.client();
    let obs: Vec<f32> = (0..40)
        .map(|i| ((i * 37) % 17) as f32 / 17.0 - 0.5)
        .collect();
    let (mut a, mut b) = (ActionBuf::Discrete(vec![]), ActionBuf::Discrete(vec![]));
    alone.act(&obs, false, &mut a).unwrap();
    client.act(&obs, false, &mut b).unwrap();
    assert_eq!(a, b);
    assert_eq!(server.stats().rows, 10);
}
