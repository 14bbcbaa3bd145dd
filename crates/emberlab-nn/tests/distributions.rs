//! Policies' log-probabilities and entropies: the host values recorded at acting time equal
//! the tensor values the losses use; samples follow the distributions; orthogonal init.

use burn::tensor::{Device, Tensor, TensorData};
use emberlab_core::EmberRng;
use emberlab_nn::*;

fn dev() -> Device {
    emberlab_backend::DeviceSpec::Flex.device().unwrap()
}

fn vals(t: Tensor<2>) -> Vec<f32> {
    t.into_data().try_into_vec_as::<f32>().unwrap()
}

fn net(head: PolicyHead, shared_trunk: bool) -> ActorCriticNet {
    ActorCriticNetConfig {
        obs_dim: 3,
        head,
        hidden: vec![16, 16],
        activation: Activation::Tanh,
        shared_trunk,
        value: true,
        orthogonal_init: false,
    }
    .init(&dev())
    .unwrap()
}

fn heads() -> Vec<PolicyHead> {
    vec![
        PolicyHead::Categorical { actions: 4 },
        PolicyHead::Gaussian {
            act_dim: 2,
            log_std_init: -0.5,
        },
        PolicyHead::TanhGaussian {
            low: vec![-2.0, 0.0],
            high: vec![2.0, 1.0],
            log_std_init: 0.3,
        },
        PolicyHead::GaussianSde {
            act_dim: 2,
            log_std_init: -1.0,
        },
    ]
}

fn close(a: f32, b: f32, tol: f32) -> bool {
    (a - b).abs() <= tol * (1.0 + a.abs().max(b.abs()))
}

#[test]
fn acting_log_probs_equal_the_loss_log_probs_for_every_head() {
    for shared in [false, true] {
        for head in heads() {
            let p = net(head.clone(), shared);
            let mut rng = EmberRng::seed_from(5);
            let obs = noise::standard_normal(64, 3, &mut rng, &dev());
            for sample in [true, false] {
                let mut out = HostActions::default();
                p.act_host(obs.clone(), sample, &mut rng, &mut out);
                let w = head.action_width();
                assert_eq!(out.actions.len(), 64 * w, "{head:?}");
                assert_eq!(out.values.len(), 64);
                let actions =
                    Tensor::from_data(TensorData::new(out.actions.clone(), [64, w]), &dev());
                let eval = p.evaluate(obs.clone(), actions);
                let lp = vals(eval.log_prob);
                for (r, (&host, &tensor)) in out.log_probs.iter().zip(&lp).enumerate() {
                    assert!(
                        close(host, tensor, 2e-4),
                        "{head:?} row {r}: {host} vs {tensor}"
                    );
                }
                let v = vals(eval.values.unwrap());
                assert_eq!(v, out.values, "{head:?}: values");
                if let PolicyHead::TanhGaussian { low, high, .. } = &head {
                    for row in out.actions.chunks(2) {
                        for j in 0..2 {
                            assert!(row[j] >= low[j] && row[j] <= high[j], "{row:?}");
                        }
                    }
                }
            }
        }
    }
}

#[test]
fn entropies_follow_the_closed_forms() {
    let d = dev();
    let p = net(
        PolicyHead::Gaussian {
            act_dim: 2,
            log_std_init: -0.5,
        },
        false,
    );
    let obs = Tensor::<2>::zeros([3, 3], &d);
    let e = vals(p.evaluate(obs.clone(), Tensor::zeros([3, 2], &d)).entropy);
    let want = 2.0 * (0.5 + 0.5 * (2.0 * std::f64::consts::PI).ln() - 0.5);
    assert!(
        e.iter().all(|&x| (x as f64 - want).abs() < 1e-5),
        "{e:?} vs {want}"
    );
    assert!((p.gaussian_entropy().unwrap() - want).abs() < 1e-6);

    let c = net(PolicyHead::Categorical { actions: 4 }, false);
    let (logits, _) = c.forward(obs.clone());
    let logits = vals(logits);
    let e = vals(c.evaluate(obs, Tensor::zeros([3, 1], &d)).entropy);
    for (row, &got) in logits.chunks(4).zip(&e) {
        let m = row.iter().cloned().fold(f32::MIN, f32::max) as f64;
        let z: f64 = row.iter().map(|&l| (l as f64 - m).exp()).sum();
        let h: f64 = row
            .iter()
            .map(|&l| {
                let lp = l as f64 - m - z.ln();
                -lp.exp() * lp
            })
            .sum();
        assert!((got as f64 - h).abs() < 1e-5, "{got} vs {h}");
    }
}

#[test]
fn gaussian_samples_follow_mean_and_std() {
    let p = net(
        PolicyHead::Gaussian {
            act_dim: 2,
            log_std_init: -0.5,
        },
        false,
    );
    let obs = Tensor::<2>::zeros([20_000, 3], &dev());
    let mut rng = EmberRng::seed_from(9);
    let mut out = HostActions::default();
    p.act_host(obs.clone(), false, &mut rng, &mut out);
    let mean = out.actions[..2].to_vec();
    p.act_host(obs, true, &mut rng, &mut out);
    let sigma = (-0.5f64).exp();
    for (j, &mean_j) in mean.iter().enumerate() {
        let xs: Vec<f64> = out
            .actions
            .iter()
            .skip(j)
            .step_by(2)
            .map(|&x| x as f64)
            .collect();
        let m = xs.iter().sum::<f64>() / xs.len() as f64;
        let s = (xs.iter().map(|x| (x - m) * (x - m)).sum::<f64>() / xs.len() as f64).sqrt();
        // Standard errors: σ/√n ≈ 0.0043 for the mean, σ/√(2n) ≈ 0.003 for the std.
        assert!((m - mean_j as f64).abs() < 0.025, "mean {m} vs {mean_j}");
        assert!((s - sigma).abs() < 0.02, "std {s} vs {sigma}");
    }
}

#[test]
fn categorical_samples_follow_the_softmax() {
    let p = net(PolicyHead::Categorical { actions: 4 }, true);
    let obs = Tensor::<2>::zeros([1, 3], &dev());
    let (logits, _) = p.forward(obs.clone());
    let logits = vals(logits);
    let m = logits.iter().cloned().fold(f32::MIN, f32::max);
    let z: f32 = logits.iter().map(|&l| (l - m).exp()).sum();
    let obs = Tensor::<2>::zeros([40_000, 3], &dev());
    let mut out = HostActions::default();
    p.act_host(obs, true, &mut EmberRng::seed_from(1), &mut out);
    for (a, &l) in logits.iter().enumerate() {
        let want = ((l - m).exp() / z) as f64;
        let got = out.actions.iter().filter(|&&x| x == a as f32).count() as f64 / 40_000.0;
        // 5 standard errors.
        let tol = 5.0 * (want * (1.0 - want) / 40_000.0).sqrt();
        assert!((got - want).abs() < tol, "action {a}: {got} vs {want}");
    }
}

#[test]
fn sac_policy_log_prob_of_its_own_samples() {
    let d = dev();
    let p = GaussianTanhPolicyConfig::new(3, 2)
        .with_hidden([16])
        .with_bounds(vec![-2.0, 0.0], vec![2.0, 1.0])
        .init(&d)
        .unwrap();
    let mut rng = EmberRng::seed_from(3);
    let obs = noise::standard_normal(32, 3, &mut rng, &d);
    let eps = noise::standard_normal(32, 2, &mut rng, &d);
    let (a, logp) = p.sample(obs.clone(), eps);
    let again = vals(p.log_prob(obs, a));
    for (x, y) in vals(logp).iter().zip(&again) {
        assert!(close(*x, *y, 1e-3), "{x} vs {y}");
    }
}

#[test]
fn orthogonal_init_gives_orthogonal_weights_and_zero_biases() {
    let m = MlpConfig::new([8, 8, 3])
        .with_orthogonal(Some((2f64.sqrt(), 0.01)))
        .init(&dev())
        .unwrap();
    let w = m.layers[0].weight.val();
    let wtw = vals(w.clone().transpose().matmul(w));
    for i in 0..8 {
        for j in 0..8 {
            let want = if i == j { 2.0 } else { 0.0 };
            assert!(
                (wtw[i * 8 + j] - want).abs() < 1e-4,
                "({i},{j}) {}",
                wtw[i * 8 + j]
            );
        }
    }
    let out = vals(m.layers[1].weight.val());
    assert!(out.iter().all(|x| x.abs() <= 0.01 + 1e-6));
    for layer in &m.layers {
        let b = layer
            .bias
            .as_ref()
            .unwrap()
            .val()
            .into_data()
            .try_into_vec_as::<f32>()
            .unwrap();
        assert!(b.iter().all(|&x| x == 0.0));
    }
    let bad = ActorCriticNetConfig {
        obs_dim: 3,
        head: PolicyHead::Gaussian {
            act_dim: 1,
            log_std_init: f32::NAN,
        },
        hidden: vec![4],
        activation: Activation::Tanh,
        shared_trunk: false,
        value: false,
        orthogonal_init: true,
    };
    assert!(
        bad.init(&dev())
            .unwrap_err()
            .to_string()
            .contains("log_std_init")
    );
}

fn sde_policy() -> GaussianTanhPolicy {
    GaussianTanhPolicyConfig::new(3, 2)
        .with_hidden([16, 8])
        .with_bounds(vec![-2.0, 0.0], vec![2.0, 1.0])
        .with_sde(Some(-1.0))
        .init(&dev())
        .unwrap()
}

#[test]
fn sde_acting_on_the_host_equals_the_tensor_path_and_log_probs_agree() {
    let d = dev();
    let p = sde_policy();
    assert_eq!(p.noise_shape(64), [8, 2]);
    let mut rng = EmberRng::seed_from(4);
    let obs = noise::standard_normal(64, 3, &mut rng, &d);
    let theta = p.sde_weights(&mut rng.clone());
    let e = noise::standard_normal(8, 2, &mut rng, &d);
    let mut host = Vec::new();
    p.act_host_sde(obs.clone(), &theta, &mut host);
    let tensor = vals(p.act(obs.clone(), e.clone()));
    for (h, t) in host.iter().zip(&tensor) {
        assert!((h - t).abs() < 1e-5, "{h} vs {t}");
    }
    let (a, logp) = p.sample(obs.clone(), e);
    assert_eq!(vals(a.clone()), tensor);
    for (x, y) in vals(logp).iter().zip(&vals(p.log_prob(obs, a))) {
        assert!(close(*x, *y, 1e-3), "{x} vs {y}");
    }
    assert!(FrozenGaussianTanhPolicy::new(&p).is_err());
}

#[test]
fn sde_noise_is_a_function_of_the_state_with_the_predicted_spread() {
    let d = dev();
    let p = sde_policy();
    let obs = Tensor::<2>::from_data(TensorData::new(vec![0.3f32, -0.7, 1.1], [1, 3]), &d);
    let (mean, log_std) = p.forward(obs.clone());
    let (mean, sd) = (vals(mean), vals(log_std.exp()));
    let mut rng = EmberRng::seed_from(8);
    let mut u = [Vec::new(), Vec::new()];
    let mut out = Vec::new();
    for _ in 0..4000 {
        let theta = p.sde_weights(&mut rng);
        p.act_host_sde(obs.clone(), &theta, &mut out);
        // Undo the squashing: a = tanh(u)·scale + bias.
        u[0].push(((out[0] / 2.0) as f64).atanh());
        u[1].push((((out[1] - 0.5) / 0.5) as f64).atanh());
    }
    for j in 0..2 {
        let m = u[j].iter().sum::<f64>() / 4000.0;
        let s = (u[j].iter().map(|x| (x - m) * (x - m)).sum::<f64>() / 4000.0).sqrt();
        // Standard errors about sd/63 (mean) and sd/89 (std): 5 of them.
        assert!(
            (m - mean[j] as f64).abs() < 5.0 * sd[j] as f64 / 63.0,
            "{m} vs {}",
            mean[j]
        );
        assert!(
            (s - sd[j] as f64).abs() < 5.0 * sd[j] as f64 / 89.0,
            "{s} vs {}",
            sd[j]
        );
    }
    // The same weights act differently in another state.
    let theta = p.sde_weights(&mut rng);
    let two = Tensor::<2>::from_data(
        TensorData::new(vec![0.3f32, -0.7, 1.1, -1.0, 0.5, 0.2], [2, 3]),
        &d,
    );
    p.act_host_sde(two, &theta, &mut out);
    assert_ne!(out[..2], out[2..]);
}
