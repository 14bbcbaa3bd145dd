//! Replay demo: fills a one-million-transition buffer, draws return-weighted batches
//! without replacement, prioritized batches and uniform batches, and round-trips the buffer
//! through a file. Run with `cargo run --release --example replay_demo`.

use emberlab::core::{Batch, EmberRng, Transition};
use emberlab::replay::{Prioritized, ReplayBuffer, ReturnWeighted, RingStorage, Sampler, Uniform};
use std::time::Instant;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const CAPACITY: usize = 1 << 20;
const OBS: usize = 17;
const ACT: usize = 6;
const BATCH: usize = 256;

fn fill<S: Sampler>(
    buffer: &mut ReplayBuffer<S>,
    rng: &mut EmberRng,
) -> emberlab::core::Result<()> {
    let (mut obs, mut next, mut act) = ([0f32; OBS], [0f32; OBS], [0f32; ACT]);
    for i in 0..CAPACITY {
        obs.iter_mut()
            .chain(next.iter_mut())
            .for_each(|x| *x = rng.next_f64() as f32);
        act.iter_mut()
            .for_each(|x| *x = rng.next_f64() as f32 * 2.0 - 1.0);
        let episode_return = (i / 1000) as f64 % 200.0 - 100.0 + rng.next_f64();
        let t = Transition {
            obs: &obs,
            action: &act,
            reward: rng.next_f64() as f32,
            next_obs: &next,
            terminated: i % 1000 == 999,
            truncated: false,
        };
        buffer.push_scored(&t, episode_return, &[])?;
    }
    Ok(())
}

fn time_draws<S: Sampler>(name: &str, buffer: &mut ReplayBuffer<S>) -> emberlab::core::Result<()> {
    let mut batch = Batch::with_capacity(OBS, ACT, BATCH);
    for _ in 0..100 {
        buffer.sample(BATCH, &mut batch)?;
    }
    let n = 2000;
    let start = Instant::now();
    for _ in 0..n {
        buffer.sample(BATCH, &mut batch)?;
    }
    let per = start.elapsed().as_secs_f64() / n as f64;
    let mean_reward = batch.reward.iter().sum::<f32>() / batch.len as f32;
    println!(
        "{name:<34} {:>8.1} µs per batch of {BATCH} (rows gathered; last batch mean reward {mean_reward:.3})",
        per * 1e6
    );
    Ok(())
}

fn main() -> emberlab::core::Result<()> {
    let mut rng = EmberRng::seed_from(0);
    println!("filling three buffers of {CAPACITY} transitions (obs {OBS}, action {ACT}) ...");
    let storage = || RingStorage::new(CAPACITY, OBS, ACT);

    let mut rw = ReplayBuffer::new(storage()?, ReturnWeighted::new(CAPACITY), 1)?;
    let start = Instant::now();
    fill(&mut rw, &mut rng)?;
    println!(
        "pushed {CAPACITY} scored transitions in {:.2} s; return shift c = {:.3}",
        start.elapsed().as_secs_f64(),
        rw.sampler().shift()
    );
    time_draws("return-weighted, no replacement", &mut rw)?;

    let mut per = ReplayBuffer::new(storage()?, Prioritized::new(CAPACITY, 0.6, 0.4)?, 2)?;
    fill(&mut per, &mut rng)?;
    let mut batch = Batch::default();
    per.sample(BATCH, &mut batch)?;
    let td: Vec<f32> = (0..BATCH).map(|i| i as f32 * 0.1).collect();
    per.sampler_mut().update_priorities(&batch.indices, &td)?;
    time_draws("prioritized (alpha 0.6, beta 0.4)", &mut per)?;
    drop(per);

    let mut uni = ReplayBuffer::new(storage()?, Uniform::new(CAPACITY, true), 3)?;
    fill(&mut uni, &mut rng)?;
    time_draws("uniform", &mut uni)?;
    drop(uni);

    let path = std::env::temp_dir().join("ember_replay_demo.bin");
    let start = Instant::now();
    rw.save(&path)?;
    let loaded = ReplayBuffer::<ReturnWeighted>::load(&path)?;
    println!(
        "saved and reloaded the return-weighted buffer ({:.0} MB) in {:.2} s; identical: {}",
        std::fs::metadata(&path).map(|m| m.len()).unwrap_or(0) as f64 / 1e6,
        start.elapsed().as_secs_f64(),
        loaded.storage() == rw.storage()
    );
    std::fs::remove_file(&path).ok();
    Ok(())
}
