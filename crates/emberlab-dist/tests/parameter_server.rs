//! `ParameterServer`: rounds averaged exactly, a dead trainer does not hang the others,
//! duplicates and stale gradients are dropped, bad gradients are refused while serving goes
//! on, Adam is burn's Adam.

use emberlab_dist::{Adam, ParameterServer, ParameterServerConfig, Sgd, Weights};
use std::thread;
use std::time::{Duration, Instant};

fn grad(trainer: usize, round: u64, len: usize) -> Vec<f32> {
    (0..len)
        .map(|i| ((trainer * 31 + round as usize * 7 + i * 3) % 11) as f32 - 5.0)
        .collect()
}

#[test]
fn each_round_is_one_step_of_the_mean_gradient() {
    let (k, len, lr) = (3, 5, 0.1f32);
    let init: Vec<f32> = (0..len).map(|i| i as f32).collect();
    let ps =
        ParameterServer::spawn(init.clone(), Sgd { lr }, ParameterServerConfig::new(k)).unwrap();
    let rounds = 6;
    let threads: Vec<_> = (0..k)
        .map(|id| {
            let t = ps.trainer(id).unwrap();
            thread::spawn(move || {
                let mut w = t.weights();
                let mut seen = vec![w.clone()];
                for _ in 0..rounds {
                    w = t.submit(w.version, grad(id, w.version, len)).unwrap();
                    seen.push(w.clone());
                }
                seen
            })
        })
        .collect();
    let seen: Vec<Vec<Weights>> = threads.into_iter().map(|t| t.join().unwrap()).collect();
    // Every trainer saw the same versions 0..=rounds.
    for s in &seen {
        assert_eq!(s, &seen[0]);
    }
    let mut p = init;
    for (round, w) in seen[0].iter().enumerate() {
        assert_eq!(w.version, round as u64);
        assert_eq!(w.params.as_slice(), p.as_slice(), "round {round}");
        for (i, v) in p.iter_mut().enumerate() {
            let mean = (0..k).map(|id| grad(id, round as u64, len)[i]).sum::<f32>() / k as f32;
            *v -= lr * mean;
        }
    }
    let stats = ps.stats();
    assert_eq!((stats.steps, stats.partial_steps), (rounds, 0));
}

#[test]
fn a_dead_trainer_does_not_hang_the_others_and_a_late_one_catches_up() {
    let config = ParameterServerConfig {
        trainers: 3,
        quorum: 2,
        deadline: Duration::from_millis(30),
    };
    let ps = ParameterServer::spawn(vec![0.0; 4], Sgd { lr: 1.0 }, config).unwrap();
    let late = ps.trainer(2).unwrap();
    let start = Instant::now();
    let threads: Vec<_> = (0..2)
        .map(|id| {
            let t = ps.trainer(id).unwrap();
            thread::spawn(move || {
                let mut w = t.weights();
                for _ in 0..3 {
                    w = t.submit(w.version, vec![1.0; 4]).unwrap();
                }
                w
            })
        })
        .collect();
    for t in threads {
        assert_eq!(t.join().unwrap().version, 3);
    }
    assert!(start.elapsed() < Duration::from_secs(5));
    let stats = ps.stats();
    assert_eq!((stats.steps, stats.partial_steps), (3, 3));
    assert_eq!(ps.weights().params.as_slice(), &[-3.0; 4]);
    // Trainer 2 comes back with a gradient against version 0: dropped, and it gets the
    // current weights at once.
    let w = late.submit(0, vec![100.0; 4]).unwrap();
    assert_eq!(w.version, 3);
    assert_eq!(w.params.as_slice(), &[-3.0; 4]);
    assert_eq!(ps.stats().stale, 1);
}

#[test]
fn a_second_gradient_in_a_round_is_dropped() {
    let ps = ParameterServer::spawn(vec![0.0; 2], Sgd { lr: 1.0 }, ParameterServerConfig::new(2))
        .unwrap();
    let (a, b) = (ps.trainer(0).unwrap(), ps.trainer(0).unwrap());
    let first = thread::spawn(move || a.submit(0, vec![2.0, 2.0]).unwrap());
    // The first arrives before its duplicate (the server answers neither before trainer 1).
    thread::sleep(Duration::from_millis(20));
    let dup = thread::spawn(move || b.submit(0, vec![50.0, 50.0]).unwrap());
    thread::sleep(Duration::from_millis(20));
    let w = ps.trainer(1).unwrap().submit(0, vec![4.0, 0.0]).unwrap();
    assert_eq!(w.params.as_slice(), &[-3.0, -1.0]);
    assert_eq!(first.join().unwrap(), w);
    assert_eq!(dup.join().unwrap(), w);
    assert_eq!(ps.stats().duplicates, 1);
}

#[test]
fn bad_gradients_and_ids_are_refused_and_serving_goes_on() {
    assert!(
        ParameterServer::spawn(vec![], Sgd { lr: 1.0 }, ParameterServerConfig::new(1)).is_err()
    );
    assert!(
        ParameterServer::spawn(
            vec![f32::NAN],
            Sgd { lr: 1.0 },
            ParameterServerConfig::new(1)
        )
        .is_err()
    );
    let bad_quorum = ParameterServerConfig {
        quorum: 3,
        ..ParameterServerConfig::new(2)
    };
    let err = ParameterServer::spawn(vec![0.0], Sgd { lr: 1.0 }, bad_quorum)
        .err()
        .unwrap();
    assert!(err.to_string().contains("quorum"), "{err}");

    let ps = ParameterServer::spawn(
        vec![1.0, 1.0],
        Sgd { lr: 0.5 },
        ParameterServerConfig::new(1),
    )
    .unwrap();
    assert!(ps.trainer(1).is_err());
    let t = ps.trainer(0).unwrap();
    let err = t.submit(0, vec![1.0]).unwrap_err().to_string();
    assert!(err.contains("gradient"), "{err}");
    let err = t
        .submit(0, vec![1.0, f32::INFINITY])
        .unwrap_err()
        .to_string();
    assert!(err.contains("row 1"), "{err}");
    let err = t.submit(7, vec![1.0, 1.0]).unwrap_err().to_string();
    assert!(err.contains("version"), "{err}");
    let w = t.submit(0, vec![1.0, -1.0]).unwrap();
    assert_eq!((w.version, w.params.as_slice()), (1, &[0.5, 1.5][..]));

    // A stopped server is an error, not a hang.
    drop(ps);
    assert!(t.submit(1, vec![0.0, 0.0]).is_err());
}

#[test]
fn adam_steps_as_host_adam_does() {
    let len = 6;
    let ps = ParameterServer::spawn(
        vec![0.5; len],
        Adam::new(len, 0.01),
        ParameterServerConfig::new(1),
    )
    .unwrap();
    let t = ps.trainer(0).unwrap();
    let adam = emberlab_algo::HostAdam::default();
    let mut state = emberlab_algo::HostAdamState::new(len);
    let mut p = vec![0.5; len];
    for round in 0..5u64 {
        let g = grad(0, round, len);
        let w = t.submit(round, g.clone()).unwrap();
        adam.step_flat(0.01, &mut p, &g, &mut state);
        assert_eq!(w.params.as_slice(), p.as_slice(), "round {round}");
    }
    assert_eq!(state.time(), 5);
}
