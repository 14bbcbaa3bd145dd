//! Backend conformance: the same checks on every compiled backend (flex and ndarray in
//! `cargo test --workspace`; libtorch CPU with `--features emberlab-backend/tch`, as
//! `.ci/run` does; a GPU with `EMBER_TEST_DEVICES=tch:cuda:0`). Reference values come from
//! flex. It lives in emberlab-nn, whose dependencies are all it needs, so that the libtorch
//! build compiles burn and four of our crates, not the command and the cluster.

use burn::module::{Module, ModuleVisitor, Param};
use burn::optim::{AdamConfig, GradientsParams};
use burn::store::{ModuleSnapshot, SafetensorsStore};
use burn::tensor::{Device, Tensor, TensorData};
use emberlab_backend::{DeviceChecked, DeviceSpec, inference_copy, move_to};
use emberlab_core::EmberRng;
use emberlab_loss::{mse, sac_critic_loss};
use emberlab_nn::{CriticEnsembleConfig, GaussianTanhPolicyConfig, Mlp, MlpConfig, noise};

/// The devices under test: every compiled CPU backend, plus `EMBER_TEST_DEVICES`
/// (comma-separated specs, e.g. `tch:cuda:0`).
fn devices() -> Vec<DeviceSpec> {
    let extra = std::env::var("EMBER_TEST_DEVICES").unwrap_or_default();
    DeviceSpec::compiled_cpu_and(&extra).unwrap_or_else(|e| panic!("EMBER_TEST_DEVICES: {e}"))
}

/// Tests of this binary run one at a time: several seed the backends' global generators
/// and then build networks from them, and two threads doing so at once would interleave
/// their draws (the Adam test once compared flex with ndarray weights from two different
/// draws).
fn serial() -> std::sync::MutexGuard<'static, ()> {
    static SERIAL: std::sync::Mutex<()> = std::sync::Mutex::new(());
    SERIAL.lock().unwrap_or_else(|e| e.into_inner())
}

fn host(rows: usize, cols: usize, seed: u64) -> TensorData {
    let mut rng = EmberRng::seed_from(seed);
    let v: Vec<f32> = (0..rows * cols)
        .map(|_| rng.next_f64() as f32 * 2.0 - 1.0)
        .collect();
    TensorData::new(v, [rows, cols])
}

fn vals<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.into_data().try_into_vec_as::<f32>().unwrap()
}

fn assert_close(what: &str, a: &[f32], b: &[f32], tol: f32) {
    assert_eq!(a.len(), b.len(), "{what}: lengths");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(
            (x - y).abs() <= tol * (1.0 + y.abs()),
            "{what}[{i}]: {x} vs {y}"
        );
    }
}

#[derive(Default)]
struct Flat(Vec<f32>);

impl ModuleVisitor for Flat {
    fn visit_float<const D: usize>(&mut self, p: &Param<Tensor<D>>) {
        self.0.extend(vals(p.val()));
    }
}

fn flat<M: Module>(m: &M) -> Vec<f32> {
    let mut f = Flat::default();
    m.visit(&mut f);
    f.0
}

/// A flex reference network and its copy on `device` (autodiff when `train`).
fn pair(device: &Device) -> (Mlp, Mlp) {
    let flex = DeviceSpec::Flex.device().unwrap();
    flex.seed(7);
    let reference = MlpConfig::new([23, 64, 64, 1])
        .init(&flex.clone().autodiff())
        .unwrap();
    let copy = move_to(reference.clone(), device);
    (reference, copy)
}

#[test]
fn forward_and_backward_agree_with_flex() {
    let _serial = serial();
    for spec in devices() {
        let device = spec.autodiff_device().unwrap();
        let (reference, net) = pair(&device);
        let x = host(32, 23, 1);
        let y = host(32, 1, 2);
        let run = |net: &Mlp, d: &Device| {
            let out = net.forward(Tensor::from_data(x.clone(), d));
            let loss = mse(out.clone(), Tensor::from_data(y.clone(), d));
            let grads = loss.backward();
            let g = net.layers[0].weight.grad(&grads).map(vals).unwrap();
            (vals(out), g)
        };
        let (out_ref, g_ref) = run(&reference, &reference.devices()[0]);
        let (out, g) = run(&net, &device);
        assert_close(&format!("{spec} forward"), &out, &out_ref, 1e-4);
        assert_close(&format!("{spec} gradient"), &g, &g_ref, 1e-3);
        assert!(g.iter().any(|&v| v != 0.0), "{spec}: gradient is zero");
    }
}

#[test]
fn adam_steps_agree_and_learn() {
    let _serial = serial();
    for spec in devices() {
        let device = spec.autodiff_device().unwrap();
        let (_, mut net) = pair(&device);
        let mut optim = AdamConfig::new().init();
        let x = Tensor::<2>::from_data(host(64, 23, 3), &device);
        let y = Tensor::<2>::from_data(host(64, 1, 4), &device).mul_scalar(0.5);
        let mut losses = Vec::new();
        for _ in 0..60 {
            let loss = mse(net.forward(x.clone()), y.clone());
            losses.push(vals(loss.clone())[0]);
            let grads = GradientsParams::from_grads(loss.backward(), &net);
            net = optim.step(1e-3, net, grads);
        }
        assert!(
            losses[59] < 0.5 * losses[0],
            "{spec}: loss {} -> {}",
            losses[0],
            losses[59]
        );
        if spec != DeviceSpec::Flex {
            let flex = DeviceSpec::Flex.autodiff_device().unwrap();
            let (_, mut r) = pair(&flex);
            let mut o = AdamConfig::new().init();
            let (xr, yr) = (x.clone().to_device(&flex), y.clone().to_device(&flex));
            for _ in 0..60 {
                let loss = mse(r.forward(xr.clone()), yr.clone());
                let grads = GradientsParams::from_grads(loss.backward(), &r);
                r = o.step(1e-3, r, grads);
            }
            assert_close(
                &format!("{spec} weights after 60 Adam steps"),
                &flat(&net),
                &flat(&r),
                2e-3,
            );
        }
    }
}

#[test]
fn policy_sampling_statistics() {
    let _serial = serial();
    for spec in devices() {
        let device = spec.device().unwrap();
        let mut policy = GaussianTanhPolicyConfig::new(3, 2)
            .with_hidden([8])
            .init(&device)
            .unwrap();
        // Last layer: zero weights; biases fix mean (0.3, -0.5) and log-std (-1, 0).
        let last = policy.net.layers.len() - 1;
        let layer = &mut policy.net.layers[last];
        layer.weight = Param::from_tensor(Tensor::zeros([8, 4], &device));
        layer.bias = Some(Param::from_tensor(Tensor::from_data(
            TensorData::new(vec![0.3f32, -0.5, -1.0, 0.0], [4]),
            &device,
        )));
        let n = 20_000;
        let mut rng = EmberRng::seed_from(11);
        let obs = noise::standard_normal(n, 3, &mut rng, &device);
        let eps = noise::standard_normal(n, 2, &mut rng, &device);
        let (a, logp) = policy.sample(obs, eps);
        let (a, logp) = (vals(a), vals(logp));
        for (j, (mu, sigma)) in [(0.3f64, (-1.0f64).exp()), (-0.5, 1.0)]
            .into_iter()
            .enumerate()
        {
            let u: Vec<f64> = a
                .iter()
                .skip(j)
                .step_by(2)
                .map(|&x| (x as f64).clamp(-0.999999, 0.999999).atanh())
                .collect();
            let mean = u.iter().sum::<f64>() / n as f64;
            let sd = (u.iter().map(|x| (x - mean).powi(2)).sum::<f64>() / n as f64).sqrt();
            let se = sigma / (n as f64).sqrt();
            assert!(
                (mean - mu).abs() < 5.0 * se + 1e-3,
                "{spec} dim {j}: mean {mean} vs {mu}"
            );
            assert!(
                (sd - sigma).abs() < 0.03 * sigma + 1e-3,
                "{spec} dim {j}: sd {sd} vs {sigma}"
            );
        }
        // The average log-probability estimates minus the entropy of the squashed Gaussian:
        // it must be finite and below the log-density bound of a 2-D box of volume 4.
        let mean_logp = logp.iter().map(|&x| x as f64).sum::<f64>() / n as f64;
        assert!(
            mean_logp.is_finite() && mean_logp > -4.0 && mean_logp < 3.0,
            "{spec}: {mean_logp}"
        );
    }
}

#[test]
fn fused_ensemble_equals_separate_critics() {
    let _serial = serial();
    for spec in devices() {
        let device = spec.device().unwrap();
        let ens = CriticEnsembleConfig::new(2, 23, [64, 64])
            .init(&device)
            .unwrap();
        let obs = Tensor::from_data(host(16, 17, 5), &device);
        let act = Tensor::from_data(host(16, 6, 6), &device);
        let fused = vals(ens.forward(obs.clone(), act.clone()));
        for e in 0..2 {
            let single = vals(ens.member(e).forward(obs.clone(), act.clone()));
            assert_close(
                &format!("{spec} member {e}"),
                &fused[e * 16..(e + 1) * 16],
                &single,
                1e-6,
            );
            if spec == DeviceSpec::Flex {
                assert_eq!(
                    &fused[e * 16..(e + 1) * 16],
                    &single[..],
                    "bit-equal on flex"
                );
            }
        }
        // The fused critic loss back-propagates into both members (trainable parameters are
        // created on the autodiff device).
        let ad = spec.autodiff_device().unwrap();
        let ens = CriticEnsembleConfig::new(2, 23, [64, 64])
            .init(&ad)
            .unwrap();
        let q = ens.forward(obs.to_device(&ad), act.to_device(&ad));
        let grads = sac_critic_loss(q, Tensor::zeros([16, 1], &ad)).backward();
        let g = vals(ens.weights[0].grad(&grads).unwrap());
        let half = g.len() / 2;
        assert!(g[..half].iter().any(|&x| x != 0.0) && g[half..].iter().any(|&x| x != 0.0));
    }
}

#[test]
fn safetensors_round_trip() {
    let _serial = serial();
    for spec in devices() {
        let device = spec.device().unwrap();
        // Its own seed: the `tch:cpu` pass of this loop seeds all of libtorch's generators
        // with 1234 below, CUDA's too, and nothing draws from CUDA's before the `tch:cuda`
        // pass, whose policy would then be the fresh one, weight for weight.
        device.seed(4321);
        let policy = GaussianTanhPolicyConfig::new(17, 6).init(&device).unwrap();
        let path = std::env::temp_dir().join(
            format!(
                "ember-conformance-{}-{spec}.safetensors",
                std::process::id()
            )
            .replace(':', "_"),
        );
        policy
            .save_into(&mut SafetensorsStore::from_file(&path))
            .unwrap();
        device.seed(1234);
        let mut fresh = GaussianTanhPolicyConfig::new(17, 6).init(&device).unwrap();
        let obs = Tensor::<2>::from_data(host(4, 17, 8), &device);
        assert_ne!(
            vals(fresh.deterministic(obs.clone())),
            vals(policy.deterministic(obs.clone()))
        );
        let result = fresh
            .load_from(&mut SafetensorsStore::from_file(&path))
            .unwrap();
        assert!(result.errors.is_empty(), "{spec}: {:?}", result.errors);
        assert_eq!(
            vals(fresh.deterministic(obs.clone())),
            vals(policy.deterministic(obs))
        );
        std::fs::remove_file(&path).ok();
    }
}

#[test]
fn modules_move_between_backends_and_devices_are_checked() {
    let _serial = serial();
    let flex = DeviceSpec::Flex.device().unwrap();
    let learner = GaussianTanhPolicyConfig::new(17, 6)
        .init(&flex.clone().autodiff())
        .unwrap();
    let obs = host(8, 17, 9);
    let want =
        vals(learner.deterministic(Tensor::from_data(obs.clone(), &flex.clone().autodiff())));
    for spec in devices() {
        let device = spec.device().unwrap();
        let actor = inference_copy(&learner, &device);
        let got = vals(actor.deterministic(Tensor::from_data(obs.clone(), &device)));
        assert_close(&format!("{spec} moved actor"), &got, &want, 1e-5);
        let checked = DeviceChecked::new(actor, device.clone(), "actor").unwrap();
        let ok = checked.forward(Tensor::from_data(obs.clone(), &device), |m, x| {
            m.deterministic(x)
        });
        assert!(ok.is_ok());
        for other in devices()
            .into_iter()
            .filter(|o| o.backend() != spec.backend())
        {
            let elsewhere = Tensor::<2>::from_data(obs.clone(), &other.device().unwrap());
            let e = checked
                .forward(elsewhere, |m, x| m.deterministic(x))
                .unwrap_err()
                .to_string();
            assert!(e.contains("input of actor"), "{e}");
        }
    }
    // A module whose parameters are elsewhere is refused at construction.
    if let Some(other) = devices().into_iter().find(|s| *s != DeviceSpec::Flex) {
        let m = MlpConfig::new([2, 2]).init(&flex).unwrap();
        let e = DeviceChecked::new(m, other.device().unwrap(), "critic")
            .unwrap_err()
            .to_string();
        assert!(e.contains("parameter of critic"), "{e}");
    }
}
