//! Environment stepping throughput (group `env_steps`), in env steps per second.
//!
//! Run with `cargo bench -p ember-env --bench env`. Random actions come from a precomputed
//! table so the figure is the environments' cost, as in `benches/reference/gym_cartpole.py`
//! (Gymnasium's `SyncVectorEnv` on the same task), which gives the baseline.
//!
//! - `cartpole_scalar`: one `CartPole-v1` (with its `TimeLimit`), reset when done.
//! - `cartpole_sync_64`: `SyncVecEnv` of 64, next-step autoreset.
//! - `cartpole_vec_threads_2x64`: `ThreadedVecEnv`, 2 workers × 64 envs.

use criterion::{Criterion, Throughput, criterion_group, criterion_main};
use ember_core::{Action, EmberRng, Env};
use ember_env::{CartPole, SyncVecEnv, ThreadedVecEnv, TimeLimit, VecActions, VecEnv};
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
    g.finish();
}

criterion_group!(benches, env_steps);
criterion_main!(benches);
