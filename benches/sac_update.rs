//! One full SAC update (critic, actor, temperature, targets) at batch 256 with 256×256
//! networks and HalfCheetah shapes (obs 17, act 6), by schedule and backend; one TD3
//! update at Pendulum-v1's zoo shapes (400×300), by schedule (`td3_update`).
//!
//! `cargo bench --bench sac_update` (add `--features tch` after
//! `scripts/setup-libtorch.sh > /tmp/torch.env && . /tmp/torch.env` for
//! `sequential_tch_b256`; `EMBER_BENCH_DEVICES=tch:cuda:0` adds `sequential_tch_cuda_b256`
//! and `parallel_tch_cuda_b256` on a CUDA machine). The PyTorch reference is
//! `benches/reference/sac_update.py` (CleanRL's update, 1 and 2 threads, or `--device cuda`);
//! run it in the same window.

use criterion::{Criterion, criterion_group, criterion_main};
use emberlab::algo::{OffPolicyLearner, SacConfig, UpdateSchedule};
use emberlab::backend::DeviceSpec;
use emberlab::core::{Batch, BoxSpace, EmberRng, Space};
use std::time::Duration;

mod common;
use common::*;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const OBS: usize = 17;
const ACT: usize = 6;
const BATCH: usize = 256;

/// `n` batches of `BATCH` random rows with `obs` observations and `act` actions.
fn batches(n: usize, obs: usize, act: usize) -> Vec<Batch> {
    let mut rng = EmberRng::seed_from(3);
    let mut u =
        |k: usize| -> Vec<f32> { (0..k).map(|_| rng.next_f64() as f32 * 2.0 - 1.0).collect() };
    (0..n)
        .map(|_| {
            let mut b = Batch::with_capacity(obs, act, BATCH);
            b.len = BATCH;
            b.obs = u(BATCH * obs);
            b.action = u(BATCH * act);
            b.reward = u(BATCH);
            b.next_obs = u(BATCH * obs);
            b.terminated = u(BATCH).iter().map(|&x| (x > 0.98) as u8 as f32).collect();
            b.truncated = vec![0.0; BATCH];
            b.weights = vec![1.0; BATCH];
            b
        })
        .collect()
}

fn sac_update(c: &mut Criterion) {
    let mut g = c.benchmark_group("sac_update");
    g.warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(6))
        .sample_size(30);
    let data = batches(16, OBS, ACT);
    let obs = Space::Box(BoxSpace::uniform(OBS, f32::NEG_INFINITY, f32::INFINITY).unwrap());
    let act = Space::Box(BoxSpace::uniform(ACT, -1.0, 1.0).unwrap());
    for spec in bench_specs() {
        let device = spec.device().unwrap();
        let schedules: &[UpdateSchedule] = match spec {
            DeviceSpec::TchCpu => &[UpdateSchedule::Sequential],
            _ => &[UpdateSchedule::Sequential, UpdateSchedule::Parallel],
        };
        for &schedule in schedules {
            let config = SacConfig {
                update_schedule: schedule,
                ..SacConfig::default()
            };
            let mut sac = config
                .build(&obs, &act, &emberlab::algo::Devices::same(&device))
                .unwrap();
            let label = format!("{schedule:?}").to_lowercase();
            let mut step = 0u64;
            g.bench_function(format!("{label}_{}_b256", name(spec)), |b| {
                b.iter(|| {
                    let batch = &data[step as usize % data.len()];
                    let m = sac.update(batch, step).unwrap();
                    step += 1;
                    m
                })
            });
        }
    }
    g.finish();
}

/// One 256×256×256 product on one thread through `emberlab_kernels::matmul` on flex: the
/// GEMM rate a SAC update's layers can reach here (`nn`), and with a transposed operand as
/// the backward pass multiplies (`tn`: weight gradients, `nt`: input gradients). 33.5 MFLOP
/// per call. Then the thin products of a Pendulum SAC update on a 256-row batch (`thin_…`):
/// first and last layers forward, their weight and input gradients.
fn gemm_256(c: &mut Criterion) {
    use burn::tensor::{Tensor, TensorData};
    let mut g = c.benchmark_group("gemm_flex");
    g.warm_up_time(Duration::from_secs(1))
        .measurement_time(Duration::from_secs(3));
    let device = DeviceSpec::Flex.device().unwrap();
    let mut rng = EmberRng::seed_from(5);
    let mut m = || {
        Tensor::<2>::from_data(
            TensorData::new(host(256, 256, &mut rng), [256, 256]),
            &device,
        )
    };
    let (a, b) = (m(), m());
    let cases = [
        ("nn_256", a.clone(), b.clone()),
        ("tn_256", a.clone().transpose(), b.clone()),
        ("nt_256", a.clone(), b.clone().transpose()),
    ];
    let mut t = |r: usize, c: usize| {
        Tensor::<2>::from_data(TensorData::new(host(r, c, &mut rng), [r, c]), &device)
    };
    let thin = [
        // Actor's first layer (3 observations), its output layer (mean and log-std).
        ("thin_fwd_256x3x256", t(256, 3), t(3, 256)),
        ("thin_fwd_256x256x2", a.clone(), t(256, 2)),
        // The output layer's input gradient (dY · Wᵀ, 2 terms) and weight gradient.
        ("thin_dx_256x2x256", t(256, 2), t(256, 2).transpose()),
        ("thin_dw_256x256x2", a.clone().transpose(), t(256, 2)),
        // The critic's input gradient at its first layer (4 inputs), as the actor loss needs.
        ("thin_dx_256x256x4", a.clone(), t(4, 256).transpose()),
    ];
    for (id, x, y) in cases.into_iter().chain(thin) {
        g.bench_function(id, |bench| {
            bench.iter(|| emberlab::kernels::matmul(x.clone(), y.clone()))
        });
    }
    g.finish();
}

/// One TD3 update (zoo's Pendulum-v1 settings: 400×300 nets, batch 256, obs 3, act 1), by
/// schedule: the critic step every update, the actor step and the targets every second.
/// Averaged over both kinds of update: 0.72 GFLOP each (multiply-adds × 2, counted from the
/// layer shapes: the critic part 0.56 GFLOP, the actor part 0.31 every second update), so
/// `0.72 / time` is the update's GFLOP/s, to compare with `gemm_rate`'s.
fn td3_update(c: &mut Criterion) {
    let mut g = c.benchmark_group("td3_update");
    g.warm_up_time(Duration::from_secs(2))
        .measurement_time(Duration::from_secs(6))
        .sample_size(30);
    let (obs_dim, act_dim) = (3, 1);
    let data = batches(16, obs_dim, act_dim);
    let obs = Space::Box(BoxSpace::uniform(obs_dim, -8.0, 8.0).unwrap());
    let act = Space::Box(BoxSpace::uniform(act_dim, -2.0, 2.0).unwrap());
    let device = DeviceSpec::Flex.device().unwrap();
    for schedule in [UpdateSchedule::Sequential, UpdateSchedule::Parallel] {
        let config = emberlab::algo::Td3Config {
            update_schedule: schedule,
            ..emberlab::algo::Td3Config::default()
        };
        let mut td3 = config
            .build(&obs, &act, &emberlab::algo::Devices::same(&device))
            .unwrap();
        let label = format!("{schedule:?}").to_lowercase();
        let mut step = 0u64;
        g.bench_function(format!("{label}_flex_b256"), |b| {
            b.iter(|| {
                let batch = &data[step as usize % data.len()];
                let m = td3.update(batch, step).unwrap();
                step += 1;
                m
            })
        });
    }
    g.finish();
}

criterion_group!(benches, sac_update, td3_update, gemm_256);
criterion_main!(benches);
