//! Backend benchmarks (issue: one code path on flex, ndarray and libtorch).
//!
//! `cargo bench --bench backends` (add `--features tch` after
//! `scripts/setup-libtorch.sh > /tmp/torch.env && . /tmp/torch.env` for the libtorch rows).
//! - `policy_forward/{backend}_b{1,4,16,256}`: a SAC actor 17→256→256→6 acting as an actor
//!   does: host observations in, tanh-Gaussian action sampled with host noise
//!   (`GaussianTanhPolicy::act_host`), actions back on the host; batches of 128+ rows split
//!   over `DeviceSpec::inference_threads()` threads (the cores on flex and ndarray, as
//!   PyTorch's intra-op threads). Reported as calls per second (criterion's elements/s with
//!   1 element per call).
//! - `critic_step/{backend}_b256`: forward + MSE + backward + Adam for a 23→256→256→1 critic
//!   (the learners' Adam: `OptimizerKind::Adam`, fused on the host on flex and ndarray).
//! - `twin_critic_step/{separate,fused}_flex`: two critics trained on one loss, as two
//!   networks or as one fused ensemble.

use burn::module::Module;
use burn::optim::GradientsParams;
use burn::tensor::{Tensor, TensorData};
use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use emberlab_algo::OptimizerKind;
use emberlab_backend::DeviceSpec;
use emberlab_core::EmberRng;
use emberlab_loss::{mse, sac_critic_loss};
use emberlab_nn::{ContinuousQ, CriticEnsembleConfig, GaussianTanhPolicyConfig, MlpConfig, noise};
use std::hint::black_box;
use std::time::Duration;

mod common;
use common::*;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

fn specs() -> Vec<DeviceSpec> {
    DeviceSpec::compiled_cpu()
}

fn policy_forward(c: &mut Criterion) {
    let mut g = c.benchmark_group("policy_forward");
    g.warm_up_time(Duration::from_millis(500))
        .measurement_time(Duration::from_secs(3));
    g.throughput(Throughput::Elements(1));
    for spec in specs() {
        let device = spec.device().unwrap();
        let policy = GaussianTanhPolicyConfig::new(17, 6)
            .with_row_threads(spec.inference_threads())
            .init(&device)
            .unwrap();
        for batch in [1usize, 4, 16, 256] {
            let mut rng = EmberRng::seed_from(0);
            let obs = host(batch, 17, &mut rng);
            let mut action = Vec::with_capacity(batch * 6);
            g.bench_function(format!("{}_b{batch}", name(spec)), |b| {
                b.iter(|| {
                    let x =
                        Tensor::<2>::from_data(TensorData::new(obs.clone(), [batch, 17]), &device);
                    policy.act_host(x, &mut rng, &mut action);
                    black_box(&action);
                })
            });
        }
    }
    g.finish();
}

fn critic_step(c: &mut Criterion) {
    let mut g = c.benchmark_group("critic_step");
    g.warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    for spec in specs() {
        let device = spec.autodiff_device().unwrap();
        let mut rng = EmberRng::seed_from(1);
        let x =
            Tensor::<2>::from_data(TensorData::new(host(256, 23, &mut rng), [256, 23]), &device);
        let y = Tensor::<2>::from_data(TensorData::new(host(256, 1, &mut rng), [256, 1]), &device);
        let mut net = Some(MlpConfig::new([23, 256, 256, 1]).init(&device).unwrap());
        let mut optim = OptimizerKind::Adam.build(0.0, &device);
        g.bench_function(format!("{}_b256", name(spec)), |b| {
            b.iter(|| {
                let n = net.take().unwrap();
                let loss = mse(n.forward(x.clone()), y.clone());
                let grads = GradientsParams::from_grads(loss.backward(), &n);
                net = Some(optim.step(3e-4, n, grads));
            })
        });
    }
    g.finish();
}

fn twin_critic_step(c: &mut Criterion) {
    let mut g = c.benchmark_group("twin_critic_step");
    g.warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(4));
    let device = DeviceSpec::Flex.autodiff_device().unwrap();
    let mut rng = EmberRng::seed_from(2);
    let obs = noise::standard_normal(256, 17, &mut rng, &device);
    let act = noise::standard_normal(256, 6, &mut rng, &device);
    let y = noise::standard_normal(256, 1, &mut rng, &device);
    let critic = || ContinuousQ::new(MlpConfig::new([23, 256, 256, 1]).init(&device).unwrap());
    let mut pair = Some((critic(), critic()));
    let mut optim = OptimizerKind::Adam.build(0.0, &device);
    g.bench_function("separate_flex", |b| {
        b.iter(|| {
            let (q1, q2) = pair.take().unwrap();
            let loss = mse(q1.forward(obs.clone(), act.clone()), y.clone())
                + mse(q2.forward(obs.clone(), act.clone()), y.clone());
            let mut grads = loss.backward();
            let g1 = GradientsParams::from_module(&mut grads, &q1);
            let g2 = GradientsParams::from_module(&mut grads, &q2);
            pair = Some((optim.step(3e-4, q1, g1), optim.step(3e-4, q2, g2)));
        })
    });
    let mut ens = Some(
        CriticEnsembleConfig::new(2, 23, [256, 256])
            .init(&device)
            .unwrap(),
    );
    let mut optim = OptimizerKind::Adam.build(0.0, &device);
    g.bench_function("fused_flex", |b| {
        b.iter(|| {
            let e = ens.take().unwrap();
            let loss = sac_critic_loss(e.forward(obs.clone(), act.clone()), y.clone());
            let grads = GradientsParams::from_grads(loss.backward(), &e);
            ens = Some(optim.step(3e-4, e, grads));
        })
    });
    let _ = ens.as_ref().map(|e| e.num_params());
    g.finish();
}

criterion_group!(benches, policy_forward, critic_step, twin_critic_step);
criterion_main!(benches);
