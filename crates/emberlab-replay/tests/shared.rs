//! Several writer threads and one sampling thread on one buffer.

use emberlab_core::{Batch, Transition};
use emberlab_replay::{ReplayBuffer, RingStorage, SharedReplay, Uniform};

#[test]
fn concurrent_writers_lose_nothing() {
    let (writers, per_writer) = (4, 5_000);
    let cap = writers * per_writer;
    let buf = ReplayBuffer::new(
        RingStorage::new(cap, 2, 1).unwrap(),
        Uniform::new(cap, true),
        0,
    )
    .unwrap();
    let shared = SharedReplay::new(buf);
    let sampler = {
        let shared = shared.clone();
        std::thread::spawn(move || {
            let mut batch = Batch::default();
            let mut draws = 0;
            while shared.len() < cap {
                if shared.len() > 64 {
                    shared.sample(64, &mut batch).unwrap();
                    // Every row is a complete transition: obs[1] is always obs[0] + 0.5.
                    for r in 0..batch.len {
                        let o = batch.obs_row(r);
                        assert_eq!(o[1], o[0] + 0.5);
                    }
                    draws += 1;
                }
                std::thread::yield_now();
            }
            draws
        })
    };
    let handles: Vec<_> = (0..writers)
        .map(|w| {
            let mut writer = shared.writer(64);
            std::thread::spawn(move || {
                for i in 0..per_writer {
                    let tag = (w * per_writer + i) as f32;
                    let t = Transition {
                        obs: &[tag, tag + 0.5],
                        action: &[0.0],
                        reward: 1.0,
                        next_obs: &[tag, tag],
                        terminated: false,
                        truncated: false,
                    };
                    writer.push(&t).unwrap();
                }
                assert!(
                    writer
                        .push(&Transition {
                            obs: &[1.0],
                            action: &[0.0],
                            reward: 0.0,
                            next_obs: &[1.0],
                            terminated: false,
                            truncated: false
                        })
                        .is_err()
                );
                // Dropping the writer commits the last partial chunk.
            })
        })
        .collect();
    for h in handles {
        h.join().unwrap();
    }
    sampler.join().unwrap();
    let buf = shared.lock();
    let mut tags: Vec<u32> = (0..cap)
        .map(|s| buf.storage().get(s).unwrap().obs[0] as u32)
        .collect();
    tags.sort();
    assert_eq!(tags, (0..cap as u32).collect::<Vec<_>>());
}

#[test]
fn same_seed_same_batches() {
    let make = || {
        let mut b = ReplayBuffer::new(
            RingStorage::new(500, 1, 1).unwrap(),
            Uniform::new(500, false),
            42,
        )
        .unwrap();
        for i in 0..500 {
            let x = [i as f32];
            b.push(&Transition {
                obs: &x,
                action: &x,
                reward: 0.0,
                next_obs: &x,
                terminated: false,
                truncated: false,
            })
            .unwrap();
        }
        b
    };
    let (mut a, mut b) = (make(), make());
    let (mut x, mut y) = (Batch::default(), Batch::default());
    a.sample(100, &mut x).unwrap();
    b.sample(100, &mut y).unwrap();
    assert_eq!(x, y);
}
