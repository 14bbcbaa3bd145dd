//! PyTorch's "batch RPC" tutorial, second program, on emberlab-dist: a batch-updating
//! parameter server and K trainer **processes**. Each trainer computes the gradient of its
//! own mini-batch with burn's autodiff, submits it over gRPC tagged with the weight version
//! it used, and waits; once all K gradients of a round are in, the server averages them,
//! takes one Adam step and answers every trainer with the new weights.
//!
//! ```text
//! cargo run --release -p emberlab-dist --example batch_update_parameter_server -- --trainers 4 --rounds 200
//! ```
//!
//! The model is an MLP (32 → 256 → 256 → 1) regressing a fixed smooth function of its
//! input; every trainer prints its first and last loss, the server the rounds per second.

use burn::module::{Module, ModuleVisitor, Param};
use burn::optim::GradientsParams;
use burn::tensor::{Device, Tensor};
use emberlab_algo::tensors::{host, learner_devices, matrix};
use emberlab_core::{EmberRng, Error, Result};
use emberlab_dist::{
    Adam, GrpcLimits, GrpcServer, ParameterServer, ParameterServerConfig, RemoteTrainer,
};
use emberlab_nn::{Mlp, MlpConfig, flat_params, load_flat_params};
use std::process::{Command, Stdio};
use std::time::Instant;

const INPUT: usize = 32;
const BATCH: usize = 64;

fn main() -> Result<()> {
    let args: Vec<String> = std::env::args().collect();
    let number = |i: usize| args.get(i).and_then(|a| a.parse().ok()).unwrap_or(0usize);
    if args.get(1).map(String::as_str) == Some("trainer") {
        return trainer(&args[2], number(3) as u32, number(4));
    }
    let flag = |name: &str, default: usize| {
        args.iter()
            .position(|a| a == name)
            .and_then(|i| args.get(i + 1)?.parse().ok())
            .unwrap_or(default)
    };
    server(flag("--trainers", 4), flag("--rounds", 200))
}

fn model(device: &Device) -> Result<Mlp> {
    MlpConfig::new([INPUT, 256, 256, 1]).init(device)
}

/// The server: the model's weights, one Adam step per round of all trainers.
fn server(trainers: usize, rounds: usize) -> Result<()> {
    let device = emberlab_backend::DeviceSpec::Flex.device()?;
    let (plain, _, seeded) = learner_devices(&device, 7);
    let initial = flat_params(&model(&plain)?);
    drop(seeded);
    let params = initial.len();
    let ps = ParameterServer::spawn(
        initial,
        Adam::new(params, 1e-3),
        ParameterServerConfig::new(trainers),
    )?;
    let grpc = GrpcServer::parameter_server("127.0.0.1:0", &ps, GrpcLimits::default())?;
    let addr = grpc.local_addr().to_string();
    let exe = std::env::current_exe().map_err(|e| Error::Io {
        path: "current_exe".into(),
        source: e,
    })?;
    let start = Instant::now();
    let children = (0..trainers)
        .map(|id| {
            Command::new(&exe)
                .args(["trainer", &addr, &id.to_string(), &rounds.to_string()])
                .stdout(Stdio::inherit())
                .spawn()
                .map_err(|e| Error::Io {
                    path: exe.clone(),
                    source: e,
                })
        })
        .collect::<Result<Vec<_>>>()?;
    for mut c in children {
        let status = c.wait().map_err(|e| Error::Io {
            path: exe.clone(),
            source: e,
        })?;
        if !status.success() {
            return Err(Error::Unavailable {
                what: "a trainer process".into(),
                hint: format!("it exited with {status}"),
            });
        }
    }
    let secs = start.elapsed().as_secs_f64();
    let stats = ps.stats();
    println!(
        "{trainers} trainers, {params} parameters: {} rounds in {secs:.2} s ({:.1} ms per \
         round, {:.0} gradients/s), version {}",
        stats.steps,
        1e3 * secs / stats.steps.max(1) as f64,
        (stats.steps as usize * trainers) as f64 / secs,
        ps.weights().version
    );
    drop(grpc);
    Ok(())
}

/// The regression target: a fixed smooth function of the input.
fn target(x: &[f32]) -> f32 {
    x.iter()
        .enumerate()
        .map(|(j, v)| (v * (1.0 + j as f32 * 0.1)).sin())
        .sum::<f32>()
        / INPUT as f32
}

/// A trainer process: `rounds` gradients of fresh mini-batches, each submitted and
/// answered with the round's new weights.
fn trainer(addr: &str, id: u32, rounds: usize) -> Result<()> {
    let device = emberlab_backend::DeviceSpec::Flex.device()?;
    // The weights come from the server: the seed's guard is not needed.
    let (plain, learn, _) = learner_devices(&device, u64::from(id));
    let mut remote = RemoteTrainer::connect(addr, id, GrpcLimits::default())?;
    let weights = remote.current()?;
    let mut net = load_flat_params(model(&learn)?, &weights.params)?;
    let mut version = weights.version;
    let mut rng = EmberRng::seed_from(1000 + u64::from(id));
    let (mut first, mut last) = (None, 0.0);
    let (mut computing, mut waiting) = (0.0, 0.0);
    for _ in 0..rounds {
        let t0 = Instant::now();
        let x: Vec<f32> = (0..BATCH * INPUT)
            .map(|_| rng.next_f64() as f32 * 2.0 - 1.0)
            .collect();
        let y: Vec<f32> = x.chunks(INPUT).map(target).collect();
        let pred = net.forward(matrix(&x, BATCH, INPUT, &learn));
        let err = pred - matrix(&y, BATCH, 1, &learn);
        let loss = (err.clone() * err).mean();
        last = host(loss.clone().inner())[0];
        first.get_or_insert(last);
        let grads = flat_grads(&net, &GradientsParams::from_grads(loss.backward(), &net));
        let t1 = Instant::now();
        let w = remote.submit(version, grads)?;
        let t2 = Instant::now();
        version = w.version;
        net = load_flat_params(net, &w.params)?;
        computing += (t1 - t0 + t2.elapsed()).as_secs_f64();
        waiting += (t2 - t1).as_secs_f64();
    }
    let _ = plain;
    println!(
        "trainer {id}: loss {:.4} -> {last:.4} over {rounds} rounds; {:.2} ms computing and \
         {:.2} ms waiting for the round per round",
        first.unwrap_or(0.0),
        1e3 * computing / rounds as f64,
        1e3 * waiting / rounds as f64
    );
    Ok(())
}

/// The gradient of every float parameter of `module`, flat in the order of
/// [`flat_params`] (zeros for a parameter without one).
fn flat_grads<M: Module>(module: &M, grads: &GradientsParams) -> Vec<f32> {
    struct Collect<'a>(&'a GradientsParams, Vec<f32>);
    impl ModuleVisitor for Collect<'_> {
        fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
            match self.0.get::<D>(param.id) {
                Some(g) => self.1.extend(host(g)),
                None => self
                    .1
                    .extend(std::iter::repeat_n(0.0, param.shape().num_elements())),
            }
        }
    }
    let mut c = Collect(grads, Vec::new());
    module.visit(&mut c);
    c.1
}
