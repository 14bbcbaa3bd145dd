//! Environment stepping throughput (group `env_steps`), in env steps per second.
//!
//! Run with `cargo bench -p emberlab-env --features tensor --bench env -- env_steps` (without
//! `--features tensor` the tensor benches are left out). Random actions come from a
//! precomputed table so the figure is the environments' cost, as in
//! `benches/reference/gym_cartpole.py` (Gymnasium's `SyncVectorEnv` on the same task), which
//! gives the baseline.
//!
//! - `cartpole_scalar`: one `CartPole-v1` (with its `TimeLimit`), reset when done.
//! - `cartpole_sync_64`: `SyncVecEnv` of 64, next-step autoreset.
//! - `cartpole_vec_threads_2x64`: `ThreadedVecEnv`, 2 workers × 64 envs.
//! - `cartpole_tensor_4096_flex`, `pendulum_tensor_4096_flex`: one step of 4096 copies of
//!   `TensorCartPole` / `TensorPendulum` on flex (device from `emberlab-backend`), next-step
//!   autoreset on the device. The actions are a table of tensors made on the device
//!   before timing (as a learner's policy would hand them over), cycled through; nothing
//!   is read back to the host in the timed loop except the environments' own action
//!   checks (one boolean per step).

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use emberlab_core::{Action, EmberRng, Env};
use emberlab_env::{CartPole, SyncVecEnv, ThreadedVecEnv, TimeLimit, VecActions, VecEnv};
use std::hint::black_box;
use std::time::Duration;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Rows of random CartPole actions, `width` per row.
fn action_table(rows: usize, width: usize) -> Vec<Vec<usize>> {
    let mut rng = EmberRng::seed_from(7);
    (0..rows)
        .map(|_| (0..width).map(|_| rng.below(2) as usize).collect())
        .collect()
}

fn cartpole() -> TimeLimit<CartPole> {
    TimeLimit::new(CartPole::new(), 500).expect("500 > 0")
}

fn env_steps(c: &mut Criterion) {
    let mut g = c.benchmark_group("env_steps");
    g.measurement_time(Duration::from_secs(4));

    const SCALAR_STEPS: usize = 1000;
    let table = action_table(1, SCALAR_STEPS).remove(0);
    let mut env = cartpole();
    let mut obs = [0f32; 4];
    env.reset_into(Some(0), &mut obs).unwrap();
    g.throughput(Throughput::Elements(SCALAR_STEPS as u64));
    g.bench_function("cartpole_scalar", |b| {
        b.iter(|| {
            for &a in &table {
                let info = env.step_into(Action::Discrete(a), &mut obs).unwrap();
                if info.terminated || info.truncated {
                    env.reset_into(None, &mut obs).unwrap();
                }
            }
            black_box(&obs);
        })
    });

    let table = action_table(1024, 64);
    let mut sync = SyncVecEnv::new((0..64).map(|_| cartpole()).collect()).unwrap();
    sync.reset(Some(0)).unwrap();
    let mut t = 0;
    g.throughput(Throughput::Elements(64));
    g.bench_function("cartpole_sync_64", |b| {
        b.iter(|| {
            t = (t + 1) % table.len();
            black_box(sync.step(VecActions::Discrete(&table[t])).unwrap().obs);
        })
    });

    for (workers, per) in [(2, 64), (1, 128)] {
        let total = workers * per;
        let table = action_table(1024, total);
        let mut envs = ThreadedVecEnv::new(workers, per, |_| Ok(cartpole())).unwrap();
        envs.reset(Some(0)).unwrap();
        let mut t = 0;
        g.throughput(Throughput::Elements(total as u64));
        g.bench_function(format!("cartpole_vec_threads_{workers}x{per}"), |b| {
            b.iter(|| {
                t = (t + 1) % table.len();
                black_box(envs.step(VecActions::Discrete(&table[t])).unwrap().obs);
            })
        });
    }
    #[cfg(feature = "tensor")]
    tensor_benches(&mut g);
    g.finish();
}

/// The tensor environments' benches (feature `tensor`).
#[cfg(feature = "tensor")]
fn tensor_benches(g: &mut criterion::BenchmarkGroup<'_, criterion::measurement::WallTime>) {
    use burn::tensor::{Int, Tensor, TensorData};
    use emberlab_env::{TensorCartPole, TensorPendulum};

    const B: usize = 4096;
    const ROWS: usize = 64;
    let device = emberlab_backend::DeviceSpec::Flex
        .device()
        .expect("emberlab-backend's default features compile flex");
    let mut rng = EmberRng::seed_from(11);
    g.throughput(Throughput::Elements(B as u64));

    let table: Vec<Tensor<1, Int>> = (0..ROWS)
        .map(|_| {
            let row: Vec<i64> = (0..B).map(|_| rng.below(2) as i64).collect();
            Tensor::from_data(TensorData::new(row, [B]), &device)
        })
        .collect();
    let mut envs = TensorCartPole::new(B, 0, &device).unwrap();
    let mut t = 0;
    g.bench_function("cartpole_tensor_4096_flex", |b| {
        b.iter(|| {
            t = (t + 1) % ROWS;
            black_box(envs.step(table[t].clone()).unwrap());
        })
    });

    let table: Vec<Tensor<2>> = (0..ROWS)
        .map(|_| {
            let row: Vec<f32> = (0..B)
                .map(|_| (4.0 * rng.next_f64() - 2.0) as f32)
                .collect();
            Tensor::from_data(TensorData::new(row, [B, 1]), &device)
        })
        .collect();
    let mut envs = TensorPendulum::new(B, 0, &device).unwrap();
    let mut t = 0;
    g.bench_function("pendulum_tensor_4096_flex", |b| {
        b.iter(|| {
            t = (t + 1) % ROWS;
            black_box(envs.step(table[t].clone()).unwrap());
        })
    });
}

criterion_group!(benches, env_steps);
criterion_main!(benches);
