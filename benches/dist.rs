//! Many actors, one model (problem 4): actions per second for 16 actor threads that each
//! run their own forward pass, against the same 16 actors served by one
//! `emberlab_dist::InferenceServer` that batches their rows.
//!
//! `cargo bench --bench dist`. Group `dist_inference`, one element per action:
//! - `per_actor_16`: 16 threads, each with its own copy of the policy, one observation row
//!   per call through burn's forward pass (what a naive multi-actor program does);
//! - `per_actor_16_frozen`: the same through emberlab-nn's frozen host path (`FrozenMlp`), which
//!   removes the per-call framework cost batching amortises;
//! - `batched_16`: the same 16 threads send their row to an `InferenceServer`
//!   (`max_batch` 16, `max_wait` 200 µs) that runs one forward pass per batch.
//!
//! - `batched_16_noop`: the server with an agent that computes nothing: the cost of handing
//!   a row to the server thread and the answer back, the ceiling of central inference here.
//!
//! The policy is the PyTorch batch-RPC tutorial's CartPole policy shape (4 → 128 → 2,
//! ReLU, a sampled categorical action) on flex.

use burn::tensor::{Device, Tensor, TensorData};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use emberlab_algo::{ActionBuf, Agent};
use emberlab_core::EmberRng;
use emberlab_dist::{InferenceConfig, InferenceHandle, InferenceServer};
use emberlab_nn::{FrozenMlp, Mlp, MlpConfig};
use std::sync::mpsc;
use std::time::{Duration, Instant};

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const ACTORS: usize = 16;

/// The tutorial's policy, 4 → 128 → 2 (ReLU), acting with burn's forward pass on flex
/// (`frozen`: through emberlab-nn's frozen host path instead) and a sampled action.
struct Policy {
    mlp: Mlp,
    frozen: Option<FrozenMlp>,
    device: Device,
    logits: Vec<f32>,
    rng: EmberRng,
}

impl Policy {
    fn new(frozen: bool) -> Self {
        let device = "flex"
            .parse::<emberlab_backend::DeviceSpec>()
            .unwrap()
            .device()
            .unwrap();
        let mlp = MlpConfig::new([4, 128, 2]).init(&device).unwrap();
        Policy {
            frozen: frozen.then(|| FrozenMlp::new(&mlp).unwrap()),
            mlp,
            device,
            logits: Vec::new(),
            rng: EmberRng::seed_from(1),
        }
    }
}

impl Agent for Policy {
    fn obs_dim(&self) -> usize {
        4
    }

    fn act(
        &mut self,
        obs: &[f32],
        _explore: bool,
        out: &mut ActionBuf,
    ) -> emberlab_core::Result<()> {
        let rows = obs.len() / 4;
        match &mut self.frozen {
            Some(f) => f.forward(obs, rows, &mut self.logits)?,
            None => {
                let x =
                    Tensor::<2>::from_data(TensorData::new(obs.to_vec(), [rows, 4]), &self.device);
                self.logits = self
                    .mlp
                    .forward(x)
                    .into_data()
                    .try_into_vec::<f32>()
                    .unwrap();
            }
        }
        let out = out.discrete_mut("policy")?;
        out.clear();
        for l in self.logits.chunks_exact(2) {
            // P(action 1) = σ(l1 − l0).
            let p1 = 1.0 / (1.0 + (l[0] - l[1]).exp());
            out.push((self.rng.next_f64() < p1 as f64) as usize);
        }
        Ok(())
    }
}

/// Action 0 for every row, no computation.
struct Noop;

impl Agent for Noop {
    fn obs_dim(&self) -> usize {
        4
    }

    fn act(
        &mut self,
        obs: &[f32],
        _explore: bool,
        out: &mut ActionBuf,
    ) -> emberlab_core::Result<()> {
        let out = out.discrete_mut("noop")?;
        out.clear();
        out.resize(obs.len() / 4, 0);
        Ok(())
    }
}

fn observation(actor: usize, i: u64) -> [f32; 4] {
    let x = (actor as f32 * 0.37 + i as f32 * 0.011).sin();
    [x, -x * 0.5, x * 0.1, 0.2]
}

/// `ACTORS` threads that live for the whole benchmark, each acting through its own `act`.
struct Actors {
    go: Vec<mpsc::Sender<u64>>,
    done: mpsc::Receiver<()>,
}

impl Actors {
    fn new<F>(make: impl Fn(usize) -> F) -> Self
    where
        F: FnMut(&[f32], &mut ActionBuf) + Send + 'static,
    {
        let (done_tx, done) = mpsc::channel();
        let go = (0..ACTORS)
            .map(|actor| {
                let (tx, rx) = mpsc::channel::<u64>();
                let mut act = make(actor);
                let done = done_tx.clone();
                std::thread::spawn(move || {
                    let mut out = ActionBuf::Discrete(Vec::new());
                    let mut i = 0u64;
                    while let Ok(n) = rx.recv() {
                        for _ in 0..n {
                            act(&observation(actor, i), &mut out);
                            i += 1;
                        }
                        done.send(()).unwrap();
                    }
                });
                tx
            })
            .collect();
        Actors { go, done }
    }

    /// Wall time for `iters` actions split over the actors.
    fn run(&self, iters: u64) -> Duration {
        let per = iters.div_ceil(ACTORS as u64);
        let t = Instant::now();
        for tx in &self.go {
            tx.send(per).unwrap();
        }
        for _ in 0..ACTORS {
            self.done.recv().unwrap();
        }
        t.elapsed()
    }
}

/// The server settings of the batched rows: a forward pass per 16 rows or 200 µs.
fn batching() -> InferenceConfig {
    InferenceConfig {
        max_batch: ACTORS,
        max_wait: Duration::from_micros(200),
        queue: 4 * ACTORS,
    }
}

/// Actors that act through a server.
fn through(server: &InferenceHandle) -> Actors {
    Actors::new(|_| {
        let mut client = server.client();
        move |obs: &[f32], out: &mut ActionBuf| {
            client.act(obs, true, out).unwrap();
        }
    })
}

fn dist_inference(c: &mut Criterion) {
    let mut g = c.benchmark_group("dist_inference");
    g.warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3))
        .sample_size(20);
    g.throughput(Throughput::Elements(1));
    for (name, frozen) in [("per_actor_16", false), ("per_actor_16_frozen", true)] {
        let own = Actors::new(|_| {
            let mut p = Policy::new(frozen);
            move |obs: &[f32], out: &mut ActionBuf| p.act(obs, true, out).unwrap()
        });
        g.bench_function(name, |b| b.iter_custom(|iters| own.run(iters)));
    }
    let server = InferenceServer::spawn(
        Policy::new(false),
        ActionBuf::Discrete(Vec::new()),
        batching(),
    )
    .unwrap();
    let served = through(&server.handle());
    g.bench_function("batched_16", |b| b.iter_custom(|iters| served.run(iters)));
    drop(served);
    // The hand-off alone: an agent that does no work, served the same way (the ceiling of
    // central inference on this machine, whatever the model).
    let noop = InferenceServer::spawn(Noop, ActionBuf::Discrete(Vec::new()), batching()).unwrap();
    let served = through(&noop.handle());
    g.bench_function("batched_16_noop", |b| {
        b.iter_custom(|iters| served.run(iters))
    });
    drop(served);
    g.finish();
    let s = server.stats();
    eprintln!(
        "batched_16: {} requests in {} forward passes (mean batch {:.1})",
        s.requests,
        s.batches,
        s.mean_batch()
    );
}

criterion_group!(benches, dist_inference);
criterion_main!(benches);
