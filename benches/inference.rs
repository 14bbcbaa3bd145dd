//! Batched inference, by backend × mode × batch size (problem 5 of the design; RLlib's
//! torch.compile table, for our backends).
//!
//! `cargo bench --bench inference` (add `--features tch` after
//! `scripts/setup-libtorch.sh > /tmp/torch.env && . /tmp/torch.env` for the libtorch rows;
//! `EMBER_BENCH_DEVICES=tch:cuda:0` adds a GPU's eager rows, `tch_cuda_eager_b<batch>`:
//! frozen networks run on the host whatever the backend, so a GPU adds no frozen rows).
//! Calls per second (criterion's elements/s, one element per call), host observations in
//! and actions out; the calls cycle through [`OBSERVATIONS`] distinct observations (or
//! batches), as an actor sees a new one every step (with one fixed observation, a kernel
//! that branches on the data learns its pattern: the frozen kernel that tested each input
//! for zero measured twice as fast on one observation as on changing ones):
//! - `inference/<backend>_<mode>_b<batch>`: SAC's actor 17→256→256→12 (ReLU) sampling a
//!   tanh-Gaussian action; `eager` is burn's forward (`GaussianTanhPolicy::act_host`),
//!   `frozen` the host fast path (`FrozenGaussianTanhPolicy::act`) frozen from that
//!   backend's policy (it runs on the host whatever the backend), `frozen2` the same with
//!   each batch split across two threads (`set_threads(2)`: this one and a helper).
//! - `inference_ppo/<backend>_<mode>_b<batch>`: RLlib's default PPO model (two hidden
//!   layers of 256, tanh) on CartPole shapes: logits of 2 actions and a value, as two
//!   networks.
//!
//! PyTorch eager and `torch.compile` on the same shapes: `benches/reference/inference.py`,
//! run in the same window.

use burn::tensor::{Tensor, TensorData};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use emberlab_core::EmberRng;
use emberlab_nn::{
    Activation, FrozenGaussianTanhPolicy, FrozenMlp, GaussianTanhPolicyConfig, MlpConfig,
};
use std::hint::black_box;
use std::time::Duration;

mod common;
use common::*;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const BATCHES: [usize; 5] = [1, 4, 16, 64, 256];

/// Distinct observations (or batches) the calls of each benchmark cycle through.
const OBSERVATIONS: usize = 61;

/// [`OBSERVATIONS`] batches of `rows × cols` values, and the index of the next one.
struct Cycle {
    batches: Vec<Vec<f32>>,
    next: usize,
}

impl Cycle {
    fn new(rows: usize, cols: usize, rng: &mut EmberRng) -> Self {
        Cycle {
            batches: (0..OBSERVATIONS).map(|_| host(rows, cols, rng)).collect(),
            next: 0,
        }
    }

    /// The next batch.
    fn next(&mut self) -> &[f32] {
        let k = self.next;
        self.next = (k + 1) % OBSERVATIONS;
        &self.batches[k]
    }
}

fn sac_actor(c: &mut Criterion) {
    let mut g = c.benchmark_group("inference");
    g.warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    g.throughput(Throughput::Elements(1));
    for spec in bench_specs() {
        let device = spec.device().unwrap();
        let policy = GaussianTanhPolicyConfig::new(17, 6).init(&device).unwrap();
        let mut frozen = FrozenGaussianTanhPolicy::new(&policy).unwrap();
        let mut frozen2 = frozen.clone();
        frozen2.set_threads(2).unwrap();
        let mut rng = EmberRng::seed_from(1);
        for batch in BATCHES {
            let mut obs = Cycle::new(batch, 17, &mut rng);
            let mut action = Vec::new();
            g.bench_function(format!("{}_eager_b{batch}", name(spec)), |b| {
                b.iter(|| {
                    let x = TensorData::new(obs.next().to_vec(), [batch, 17]);
                    policy.act_host(Tensor::<2>::from_data(x, &device), &mut rng, &mut action);
                    black_box(&action);
                })
            });
            if spec.is_gpu() {
                continue;
            }
            for (mode, f) in [("frozen", &mut frozen), ("frozen2", &mut frozen2)] {
                g.bench_function(format!("{}_{mode}_b{batch}", name(spec)), |b| {
                    b.iter(|| {
                        f.act(obs.next(), &mut rng, &mut action).unwrap();
                        black_box(&action);
                    })
                });
            }
        }
    }
    g.finish();
}

fn ppo_model(c: &mut Criterion) {
    let mut g = c.benchmark_group("inference_ppo");
    g.warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(2));
    g.throughput(Throughput::Elements(1));
    for spec in bench_specs() {
        let device = spec.device().unwrap();
        let net = |out| {
            MlpConfig::new([4, 256, 256, out])
                .with_activation(Activation::Tanh)
                .init(&device)
                .unwrap()
        };
        let (pi, vf) = (net(2), net(1));
        let (mut fpi, mut fvf) = (FrozenMlp::new(&pi).unwrap(), FrozenMlp::new(&vf).unwrap());
        let mut rng = EmberRng::seed_from(2);
        for batch in BATCHES {
            let mut obs = Cycle::new(batch, 4, &mut rng);
            g.bench_function(format!("{}_eager_b{batch}", name(spec)), |b| {
                b.iter(|| {
                    let x = TensorData::new(obs.next().to_vec(), [batch, 4]);
                    let x = Tensor::<2>::from_data(x, &device);
                    let logits = pi.forward(x.clone()).into_data();
                    let value = vf.forward(x).into_data();
                    black_box((logits, value));
                })
            });
            if spec.is_gpu() {
                continue;
            }
            let (mut logits, mut value) = (Vec::new(), Vec::new());
            g.bench_function(format!("{}_frozen_b{batch}", name(spec)), |b| {
                b.iter(|| {
                    let x = obs.next();
                    fpi.forward(x, batch, &mut logits).unwrap();
                    fvf.forward(x, batch, &mut value).unwrap();
                    black_box((&logits, &value));
                })
            });
        }
    }
    g.finish();
}

criterion_group!(benches, sac_actor, ppo_model);
criterion_main!(benches);
