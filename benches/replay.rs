//! Replay benchmarks (issue: replay buffers that never dominate training time).
//!
//! Run with `cargo bench --bench replay`. Shapes follow a HalfCheetah SAC: obs 17, action 6,
//! buffer of 1M transitions, batch 256. Every `sample_*` id gathers the sampled rows into
//! the caller's batch buffers, as an update needs them.

use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use emberlab_core::{Batch, EmberRng, Transition};
use emberlab_replay::naive::{NaiveScratch, naive_return_weighted};
use emberlab_replay::{Prioritized, ReplayBuffer, ReturnWeighted, RingStorage, Sampler, Uniform};
use std::hint::black_box;
use std::time::Duration;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const N: usize = 1 << 20;
const K: usize = 256;
const OBS: usize = 17;
const ACT: usize = 6;

/// A full 1M buffer; scores are returns uniform in [-100, 100) unless `heavy`, where ten
/// transitions hold ~99% of the weight.
fn filled<S: Sampler>(sampler: S, heavy: bool) -> (ReplayBuffer<S>, Vec<f64>) {
    let mut rng = EmberRng::seed_from(1);
    let mut b = ReplayBuffer::new(RingStorage::new(N, OBS, ACT).unwrap(), sampler, 2).unwrap();
    let mut scores = Vec::with_capacity(N);
    let mut obs = [0f32; OBS];
    let mut next = [0f32; OBS];
    let mut act = [0f32; ACT];
    for i in 0..N {
        obs.iter_mut().for_each(|x| *x = rng.next_f64() as f32);
        next.iter_mut().for_each(|x| *x = rng.next_f64() as f32);
        act.iter_mut()
            .for_each(|x| *x = rng.next_f64() as f32 * 2.0 - 1.0);
        let score = if heavy {
            if i % (N / 10) == 7 {
                1e8
            } else {
                rng.next_f64()
            }
        } else {
            rng.next_f64() * 200.0 - 100.0
        };
        let t = Transition {
            obs: &obs,
            action: &act,
            reward: rng.next_f64() as f32,
            next_obs: &next,
            terminated: i % 1000 == 999,
            truncated: false,
        };
        b.push_scored(&t, score, &[]).unwrap();
        scores.push(score);
    }
    (b, scores)
}

fn return_weighted(c: &mut Criterion) {
    let mut g = c.benchmark_group("return_weighted");
    g.warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    let (mut buf, scores) = filled(ReturnWeighted::new(N), false);
    let mut rng = EmberRng::seed_from(3);
    let mut scratch = NaiveScratch::default();
    let mut out = Vec::with_capacity(K);
    g.bench_function("naive_1m_b256", |b| {
        b.iter(|| {
            naive_return_weighted(black_box(&scores), K, &mut rng, &mut scratch, &mut out).unwrap();
            black_box(&out);
        })
    });
    g.bench_function("tree_1m_b256", |b| {
        b.iter(|| {
            buf.sampler_mut().draw(K, &mut rng, &mut out).unwrap();
            black_box(&out);
        })
    });
    let mut batch = Batch::with_capacity(OBS, ACT, K);
    g.bench_function("sample_1m_b256", |b| {
        b.iter(|| {
            buf.sample(K, &mut batch).unwrap();
            black_box(&batch);
        })
    });
    drop(buf);
    let (mut heavy, _) = filled(ReturnWeighted::new(N), true);
    g.bench_function("tree_1m_b256_heavy", |b| {
        b.iter(|| {
            heavy.sampler_mut().draw(K, &mut rng, &mut out).unwrap();
            black_box(&out);
        })
    });
    g.finish();
}

fn prioritized(c: &mut Criterion) {
    let mut g = c.benchmark_group("prioritized");
    g.warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    let (mut buf, _) = filled(Prioritized::new(N, 0.6, 0.4).unwrap(), false);
    // Spread the priorities as training would.
    let mut rng = EmberRng::seed_from(4);
    let slots: Vec<usize> = (0..N).collect();
    let prios: Vec<f32> = (0..N).map(|_| (rng.next_f64() * 10.0) as f32).collect();
    buf.sampler_mut().update_priorities(&slots, &prios).unwrap();
    let mut batch = Batch::with_capacity(OBS, ACT, K);
    g.bench_function("sample_1m_b256", |b| {
        b.iter(|| {
            buf.sample(K, &mut batch).unwrap();
            black_box(&batch);
        })
    });
    let td: Vec<f32> = (0..K).map(|_| (rng.next_f64() * 10.0) as f32).collect();
    let mut idx: Vec<Vec<usize>> = Vec::new();
    for _ in 0..64 {
        buf.sample(K, &mut batch).unwrap();
        idx.push(batch.indices.clone());
    }
    let mut j = 0;
    g.bench_function("update_1m_b256", |b| {
        b.iter(|| {
            j = (j + 1) % idx.len();
            buf.sampler_mut().update_priorities(&idx[j], &td).unwrap();
        })
    });
    g.finish();
}

fn uniform(c: &mut Criterion) {
    let mut g = c.benchmark_group("uniform");
    g.warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    let (mut buf, _) = filled(Uniform::new(N, true), false);
    let mut batch = Batch::with_capacity(OBS, ACT, K);
    g.bench_function("sample_1m_b256", |b| {
        b.iter(|| {
            buf.sample(K, &mut batch).unwrap();
            black_box(&batch);
        })
    });
    g.finish();
}

fn push(c: &mut Criterion) {
    let mut g = c.benchmark_group("push");
    g.sample_size(10)
        .warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(5));
    g.throughput(Throughput::Elements(N as u64));
    let mut buf = ReplayBuffer::new(
        RingStorage::new(N, OBS, ACT).unwrap(),
        Uniform::new(N, true),
        0,
    )
    .unwrap();
    let obs = [0.5f32; OBS];
    let act = [0.1f32; ACT];
    g.bench_function(BenchmarkId::from_parameter("push_1m"), |b| {
        b.iter(|| {
            for i in 0..N {
                let t = Transition {
                    obs: &obs,
                    action: &act,
                    reward: i as f32,
                    next_obs: &obs,
                    terminated: false,
                    truncated: false,
                };
                buf.push(black_box(&t)).unwrap();
            }
        })
    });
    drop(buf);
    let mut rw = ReplayBuffer::new(
        RingStorage::new(N, OBS, ACT).unwrap(),
        ReturnWeighted::new(N),
        0,
    )
    .unwrap();
    g.bench_function(
        BenchmarkId::from_parameter("push_1m_return_weighted"),
        |b| {
            b.iter(|| {
                for i in 0..N {
                    let t = Transition {
                        obs: &obs,
                        action: &act,
                        reward: i as f32,
                        next_obs: &obs,
                        terminated: false,
                        truncated: false,
                    };
                    rw.push(black_box(&t)).unwrap();
                }
            })
        },
    );
    g.finish();
}

criterion_group!(benches, return_weighted, prioritized, uniform, push);
criterion_main!(benches);
