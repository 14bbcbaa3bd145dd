//! What a DQN update on Atari frames costs on flex (convolutions through
//! `emberlab_kernels::conv2d`: from the input on AVX-512, else im2col and the GEMM): SB3's
//! `NatureCNN` (`emberlab_nn::NatureCnn`) and a 512→6 head, batch 32 of 4×84×84 stacks, the
//! target network's max over the next stacks, a Huber loss, backward and Adam (Ember's
//! `OptimizerKind::Adam`, host Adam on flex) — `benches/reference/dqn_cnn_update.py`'s
//! update. Sequential (one thread) and by rows (two halves side by side, as `Dqn` runs its
//! update), plus the forward alone at batch 1 and 32. Each configuration is timed in
//! alternating rounds; medians are printed. A second argument keeps only the modes whose
//! names contain it (e.g. `by_rows`, for `perf record`).
//!
//! ```sh
//! cargo run --release -p emberlab-labs --bin conv_speed [rounds] [mode]
//! ```
//!
//! Prints `conv_speed mode=MODE median_ms=X min_ms=Y`.

use burn::module::Module;
use burn::nn::{Linear, LinearConfig};
use burn::optim::GradientsParams;
use burn::tensor::{Device, Int, Tensor, TensorData};
use emberlab::algo::parts::{UpdateSchedule, own_leaves, run_by_rows, sum_gradients};
use emberlab::algo::{OptimizerKind, step_in_place};
use emberlab::backend::DeviceSpec;
use emberlab_core::{EmberRng, Result};
use emberlab_nn::{NatureCnn, NatureCnnConfig, pixels_to_unit};
use std::time::Instant;

#[global_allocator]
static GLOBAL: mimalloc::MiMalloc = mimalloc::MiMalloc;

const BATCH: usize = 32;
const STACK: usize = 4;
const SIDE: usize = 84;
const ACTIONS: usize = 6;
const GAMMA: f32 = 0.99;

/// NatureCNN and a linear head: Q-values `[batch, actions]`.
#[derive(Module, Debug)]
struct CnnQ {
    cnn: NatureCnn,
    head: Linear,
}

impl CnnQ {
    fn forward(&self, x: Tensor<4>) -> Tensor<2> {
        self.head.forward(self.cnn.forward(x))
    }
}

/// A batch on the host, as frame replay gathers it.
struct Batch {
    obs: Vec<u8>,
    next_obs: Vec<u8>,
    action: Vec<i64>,
    reward: Vec<f32>,
    done: Vec<f32>,
}

fn main() -> Result<()> {
    let rounds: usize = std::env::args()
        .nth(1)
        .map(|r| r.parse().unwrap_or(9))
        .unwrap_or(9);
    // Network math with denormals flushed, as `Dqn`'s update runs it (and as a run's
    // helper thread takes blocks only from a thread in its own mode).
    let _flush = emberlab_core::denormals::flush_denormals_here();
    let learn = DeviceSpec::Flex.autodiff_device()?;
    let plain = DeviceSpec::Flex.device()?;
    let q = CnnQ {
        cnn: NatureCnnConfig::new(STACK, SIDE, SIDE).init(&learn)?,
        head: LinearConfig::new(512, ACTIONS).init(&learn),
    };
    let mut q = q.materialize();
    let target = q.clone().valid();
    let mut optim = OptimizerKind::Adam.build(0.0, &learn);
    let mut rng = EmberRng::seed_from(1);
    let frame = STACK * SIDE * SIDE;
    let bytes = |n: usize, rng: &mut EmberRng| -> Vec<u8> {
        (0..n).map(|_| rng.below(256) as u8).collect()
    };
    let batch = Batch {
        obs: bytes(BATCH * frame, &mut rng),
        next_obs: bytes(BATCH * frame, &mut rng),
        action: (0..BATCH)
            .map(|_| rng.below(ACTIONS as u64) as i64)
            .collect(),
        reward: (0..BATCH).map(|_| rng.next_f64() as f32 - 0.5).collect(),
        done: (0..BATCH)
            .map(|_| (rng.below(10) == 0) as u8 as f32)
            .collect(),
    };
    // The gradients of the loss over `rows`, scaled by their share of the batch.
    let grads_of = |q: &CnnQ, rows: std::ops::Range<usize>| -> Result<GradientsParams> {
        let n = rows.len();
        let share = n as f64 / BATCH as f64;
        let shape = [n, STACK, SIDE, SIDE];
        let next = pixels_to_unit(
            &batch.next_obs[rows.start * frame..rows.end * frame],
            shape,
            &plain,
        )?;
        let max_next: Tensor<1> = target.forward(next).max_dim(1).squeeze_dim(1);
        let column = |v: &[f32]| Tensor::<1>::from_data(TensorData::new(v.to_vec(), [n]), &plain);
        let y = column(&batch.reward[rows.clone()])
            + (column(&batch.done[rows.clone()]).neg() + 1.0) * max_next * GAMMA;
        let y = Tensor::from_inner(y);
        let q = own_leaves(q);
        let obs = pixels_to_unit(
            &batch.obs[rows.start * frame..rows.end * frame],
            shape,
            &learn,
        )?;
        let actions = Tensor::<2, Int>::from_data(
            TensorData::new(batch.action[rows].to_vec(), [n, 1]),
            &learn,
        );
        let taken: Tensor<1> = q.forward(obs).gather(1, actions).squeeze_dim(1);
        let loss = emberlab::loss::huber(taken, y, 1.0).mul_scalar(share);
        Ok(GradientsParams::from_grads(loss.backward(), &q))
    };
    let mut parts = [
        ("sequential", UpdateSchedule::Sequential.parts("conv")),
        ("by_rows", UpdateSchedule::Parallel.parts("conv")),
    ];
    let mut times: Vec<Vec<f64>> = vec![Vec::new(); parts.len() + 2];
    let x1 = pixels_to_unit(&batch.obs[..frame], [1, STACK, SIDE, SIDE], &plain)?;
    let x32 = pixels_to_unit(&batch.obs, [BATCH, STACK, SIDE, SIDE], &plain)?;
    let only = std::env::args().nth(2).unwrap_or_default();
    let wanted = |name: &str| name.contains(only.as_str());
    for round in 0..rounds + 1 {
        for (i, (name, p)) in parts.iter_mut().enumerate() {
            if !wanted(name) {
                continue;
            }
            let t = Instant::now();
            let shares = run_by_rows(p, "conv", (BATCH, p.threads()), |rows| grads_of(&q, rows))?;
            let grads = sum_gradients(&q, shares);
            step_in_place(&mut optim, 1e-4, &mut q, grads);
            if round > 0 {
                times[i].push(t.elapsed().as_secs_f64() * 1e3);
            }
        }
        for (j, x) in [&x1, &x32].into_iter().enumerate() {
            if !wanted(["forward_b1", "forward_b32"][j]) {
                continue;
            }
            let t = Instant::now();
            let reps = if j == 0 { 20 } else { 2 };
            for _ in 0..reps {
                let out: Vec<f32> = target
                    .forward(x.clone())
                    .into_data()
                    .try_to_vec()
                    .unwrap_or_default();
                std::hint::black_box(out);
            }
            if round > 0 {
                times[parts.len() + j].push(t.elapsed().as_secs_f64() * 1e3 / reps as f64);
            }
        }
    }
    let names = [
        "update_sequential",
        "update_by_rows",
        "forward_b1",
        "forward_b32",
    ];
    for (name, mut t) in names.iter().zip(times) {
        if t.is_empty() {
            continue;
        }
        t.sort_by(f64::total_cmp);
        println!(
            "conv_speed mode={name} median_ms={:.3} min_ms={:.3}",
            t[t.len() / 2],
            t[0]
        );
    }
    let _ = Device::default;
    Ok(())
}
