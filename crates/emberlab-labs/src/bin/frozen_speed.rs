//! The SAC actor's acting speed (17→256→256→12, a sampled tanh-Gaussian action, host
//! observations in and actions out) on flex: burn's eager forward (`act_host`) against the
//! frozen path on one thread and split across two (`frozen`, `frozen2`; `net`, `net2`: the
//! frozen network alone, without drawing and squashing the action), at batch 1, 4 and 16,
//! measured interleaved for noisy machines. Each round times a block of calls of every
//! configuration in turn, so that a slow spell of the host falls on all of them; the
//! medians and minima over the rounds are printed, with the speed-ups over eager from the
//! medians. (The criterion group `inference` measures the same calls one configuration at
//! a time.)
//!
//! ```sh
//! cargo run --release -p emberlab-labs --bin frozen_speed [rounds]
//! ```
//!
//! Prints one line per batch and mode, e.g.
//! `frozen_speed b=1 mode=frozen median_us=3.61 min_us=3.20 calls_per_s=277000 vs_eager=3.9`.

use burn::tensor::{Device, Tensor, TensorData};
use emberlab_core::EmberRng;
use emberlab_nn::{
    FrozenGaussianTanhPolicy, FrozenMlp, GaussianTanhPolicy, GaussianTanhPolicyConfig,
};
use std::hint::black_box;
use std::time::Instant;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

/// Distinct observations (or batches) the calls cycle through.
const OBSERVATIONS: usize = 61;

/// `n` values uniform in [-1, 1).
fn host(n: usize, rng: &mut EmberRng) -> Vec<f32> {
    (0..n).map(|_| rng.next_f64() as f32 * 2.0 - 1.0).collect()
}

/// Wall time of each timed block, about.
const BLOCK_US: f64 = 2_000.0;

/// How one configuration acts on a batch.
enum Mode {
    Eager,
    Frozen(FrozenGaussianTanhPolicy),
    Net(FrozenMlp),
}

fn main() -> emberlab_core::Result<()> {
    let rounds: usize = match std::env::args().nth(1) {
        Some(r) => r.parse().map_err(|_| {
            emberlab_core::Error::invalid("rounds", r, "a whole number of rounds, e.g. 200")
        })?,
        None => 200,
    };
    let device = Device::flex();
    let policy = GaussianTanhPolicyConfig::new(17, 6).init(&device)?;
    let frozen = FrozenGaussianTanhPolicy::new(&policy)?;
    let mut frozen2 = frozen.clone();
    frozen2.set_threads(2)?;
    let mut modes = [
        ("eager", Mode::Eager),
        ("frozen", Mode::Frozen(frozen)),
        ("frozen2", Mode::Frozen(frozen2)),
        ("net", Mode::Net(net(&policy, 1)?)),
        ("net2", Mode::Net(net(&policy, 2)?)),
    ];
    let mut rng = EmberRng::seed_from(1);
    for batch in [1usize, 4, 16] {
        // A new observation every call, as an actor sees them (a kernel that branches on
        // the data would learn one fixed observation's pattern).
        let observations: Vec<Vec<f32>> = (0..OBSERVATIONS)
            .map(|_| host(batch * 17, &mut rng))
            .collect();
        let mut next = 0;
        let mut action = Vec::new();
        let mut call = |mode: &mut Mode, rng: &mut EmberRng| -> emberlab_core::Result<()> {
            let obs = &observations[next];
            next = (next + 1) % OBSERVATIONS;
            match mode {
                Mode::Eager => {
                    let x =
                        Tensor::<2>::from_data(TensorData::new(obs.clone(), [batch, 17]), &device);
                    policy.act_host(x, rng, &mut action);
                }
                Mode::Frozen(f) => f.act(obs, rng, &mut action)?,
                Mode::Net(f) => f.forward(obs, batch, &mut action)?,
            }
            black_box(&action);
            Ok(())
        };
        // Calls per block from a first estimate, so that each block takes ~BLOCK_US.
        let mut per_block = Vec::with_capacity(modes.len());
        for (_, mode) in modes.iter_mut() {
            let start = Instant::now();
            let mut n = 0;
            while start.elapsed().as_secs_f64() < 0.05 {
                call(mode, &mut rng)?;
                n += 1;
            }
            let us = start.elapsed().as_secs_f64() * 1e6 / n as f64;
            per_block.push(((BLOCK_US / us) as usize).max(1));
        }
        let mut times = vec![Vec::with_capacity(rounds); modes.len()];
        for _ in 0..rounds {
            for (k, (_, mode)) in modes.iter_mut().enumerate() {
                let start = Instant::now();
                for _ in 0..per_block[k] {
                    call(mode, &mut rng)?;
                }
                times[k].push(start.elapsed().as_secs_f64() * 1e6 / per_block[k] as f64);
            }
        }
        let medians: Vec<f64> = times.iter_mut().map(|t| median(t)).collect();
        for (k, (name, _)) in modes.iter().enumerate() {
            let min = times[k].iter().copied().fold(f64::INFINITY, f64::min);
            println!(
                "frozen_speed b={batch} mode={name} median_us={:.2} min_us={:.2} calls_per_s={:.0} vs_eager={:.2}",
                medians[k],
                min,
                1e6 / medians[k],
                medians[0] / medians[k]
            );
        }
    }
    Ok(())
}

/// The policy's own network frozen alone (its raw outputs, no action drawn), on `threads`
/// threads: the difference to `frozen` is what drawing and squashing the action costs.
fn net(policy: &GaussianTanhPolicy, threads: usize) -> emberlab_core::Result<FrozenMlp> {
    let mut net = FrozenMlp::new(&policy.net)?;
    net.set_threads(threads)?;
    Ok(net)
}

/// The median of `t` (sorted in place).
fn median(t: &mut [f64]) -> f64 {
    t.sort_by(f64::total_cmp);
    t[t.len() / 2]
}
