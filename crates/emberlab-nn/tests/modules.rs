//! Module checks on flex: shapes, log-probabilities against a host computation, the fused
//! ensemble against separate critics, target updates.

use burn::module::{Module, ModuleVisitor, Param, ParamId};
use burn::tensor::{Device, Int, Tensor, TensorData};
use emberlab_core::EmberRng;
use emberlab_nn::*;

fn dev() -> Device {
    emberlab_backend::DeviceSpec::Flex.device().unwrap()
}

fn vals<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.into_data().try_into_vec_as::<f32>().unwrap()
}

#[test]
fn mlp_shapes_and_validation() {
    let d = dev();
    let m = MlpConfig::new([5, 8, 3])
        .with_layer_norm(true)
        .init(&d)
        .unwrap();
    assert_eq!((m.input_dim(), m.output_dim()), (5, 3));
    assert_eq!(m.forward(Tensor::zeros([4, 5], &d)).dims(), [4, 3]);
    assert!(MlpConfig::new([5]).init(&d).is_err());
    assert!(
        MlpConfig::new([5, 0, 1])
            .init(&d)
            .unwrap_err()
            .to_string()
            .contains("sizes[1]")
    );
}

#[test]
fn gaussian_log_prob_matches_host_formula() {
    let d = dev();
    let p = GaussianTanhPolicyConfig::new(3, 2)
        .with_hidden([16])
        .with_bounds(vec![-2.0, 0.0], vec![2.0, 1.0])
        .init(&d)
        .unwrap();
    let mut rng = EmberRng::seed_from(3);
    let obs = noise::standard_normal(5, 3, &mut rng, &d);
    let eps = noise::standard_normal(5, 2, &mut rng, &d);
    let (mean, log_std) = p.forward(obs.clone());
    let (a, logp) = p.sample(obs.clone(), eps.clone());
    let (m, s, e, a, lp) = (
        vals(mean),
        vals(log_std),
        vals(eps.clone()),
        vals(a),
        vals(logp),
    );
    let (scale, bias) = ([2.0f64, 0.5], [0.0f64, 0.5]);
    for (r, &got) in lp.iter().enumerate() {
        let mut want = 0.0f64;
        for j in 0..2 {
            let i = r * 2 + j;
            let u = m[i] as f64 + (s[i] as f64).exp() * e[i] as f64;
            let gauss = -0.5 * (e[i] as f64).powi(2)
                - s[i] as f64
                - 0.5 * (2.0 * std::f64::consts::PI).ln();
            want += gauss - (scale[j] * (1.0 - u.tanh().powi(2))).ln();
            let act = u.tanh() * scale[j] + bias[j];
            assert!(
                (a[i] as f64 - act).abs() < 1e-5,
                "action {i}: {} vs {act}",
                a[i]
            );
        }
        assert!((got as f64 - want).abs() < 1e-3, "row {r}: {got} vs {want}");
    }
    let det = vals(p.deterministic(obs.clone()));
    assert!(
        det.chunks(2)
            .all(|c| c[0].abs() <= 2.0 && (0.0..=1.0).contains(&c[1]))
    );
    assert_eq!(vals(p.act(obs.clone(), eps.clone())), a);
    // The host path draws the same noise stream and gives the same actions.
    let mut r1 = EmberRng::seed_from(77);
    let mut r2 = EmberRng::seed_from(77);
    let mut host = Vec::new();
    p.act_host(obs.clone(), &mut r1, &mut host);
    let dev_act = vals(p.act(obs.clone(), noise::standard_normal(5, 2, &mut r2, &d)));
    for (h, t) in host.iter().zip(&dev_act) {
        assert!((h - t).abs() < 1e-6, "{h} vs {t}");
    }
    assert!(
        GaussianTanhPolicyConfig::new(3, 2)
            .with_bounds(vec![1.0, 1.0], vec![0.0, 2.0])
            .init(&d)
            .is_err()
    );
}

#[test]
fn categorical_sampling_follows_softmax() {
    let d = dev();
    let net = MlpConfig::new([1, 3]).init(&d).unwrap();
    // Zero weights, biases = log(0.2, 0.3, 0.5): the policy is that distribution everywhere.
    let logits = [0.2f32.ln(), 0.3f32.ln(), 0.5f32.ln()];
    let mut policy = CategoricalPolicy::new(net);
    policy.net.layers[0].weight = Param::from_tensor(Tensor::zeros([1, 3], &d));
    policy.net.layers[0].bias = Some(Param::from_tensor(Tensor::from_data(
        TensorData::new(logits.to_vec(), [3]),
        &d,
    )));
    let n = 30_000;
    let mut rng = EmberRng::seed_from(5);
    let obs = Tensor::<2>::zeros([n, 1], &d);
    let u = noise::uniform_open(n, 3, &mut rng, &d);
    let actions: Vec<i64> = policy
        .sample(obs.clone(), u)
        .into_data()
        .try_into_vec_as::<i64>()
        .unwrap();
    let mut counts = [0f64; 3];
    for a in actions {
        counts[a as usize] += 1.0;
    }
    let p = [0.2f32, 0.3, 0.5];
    let chi2: f64 = counts
        .iter()
        .zip(p)
        .map(|(c, p)| (c - p as f64 * n as f64).powi(2) / (p as f64 * n as f64))
        .sum();
    assert!(chi2 < 27.6, "chi2 {chi2} counts {counts:?}"); // df 2, p = 1e-6
    let acts = Tensor::<1, Int>::from_data(TensorData::new(vec![2i64, 0], [2]), &d);
    let (logp, ent) = policy.evaluate(Tensor::zeros([2, 1], &d), acts);
    let (logp, ent) = (vals(logp), vals(ent));
    assert!((logp[0] - 0.5f32.ln()).abs() < 1e-5 && (logp[1] - 0.2f32.ln()).abs() < 1e-5);
    let h: f32 = -p.iter().map(|&x: &f32| x * x.ln()).sum::<f32>();
    assert!((ent[0] - h).abs() < 1e-5);
}

#[test]
fn fused_ensemble_equals_separate_critics_bitwise() {
    let d = dev();
    let ens = CriticEnsembleConfig::new(2, 23, [64, 64]).init(&d).unwrap();
    let mut rng = EmberRng::seed_from(9);
    let obs = noise::standard_normal(32, 17, &mut rng, &d);
    let act = noise::standard_normal(32, 6, &mut rng, &d);
    let fused = vals(ens.forward(obs.clone(), act.clone()));
    for e in 0..2 {
        let single = vals(ens.member(e).forward(obs.clone(), act.clone()));
        assert_eq!(&fused[e * 32..(e + 1) * 32], &single[..], "member {e}");
    }
    let min = vals(ens.min_q(obs, act));
    for (i, &m) in min.iter().enumerate() {
        assert_eq!(m, fused[i].min(fused[32 + i]));
    }
}

#[test]
fn selected_members_equal_the_fused_rows_and_take_their_gradients() {
    let ad = dev().autodiff();
    let ens = CriticEnsembleConfig::new(3, 5, [16, 8]).init(&ad).unwrap();
    let mut rng = EmberRng::seed_from(4);
    let obs = noise::standard_normal(10, 3, &mut rng, &ad);
    let act = noise::standard_normal(10, 2, &mut rng, &ad);
    let fused = vals(ens.forward(obs.clone(), act.clone()));
    let picked = ens.select(1..3).unwrap();
    assert_eq!(picked.members(), 2);
    let q = picked.forward(obs.clone(), act.clone());
    assert_eq!(vals(q.clone()), fused[10..30].to_vec());
    // Gradients through the selection reach the chosen members' slices of the weights.
    let grads = q.sum().backward();
    let g = ens.weights[1]
        .grad(&grads)
        .expect("a gradient for the fused weight");
    let g = g.into_data().try_into_vec_as::<f32>().unwrap();
    let per = 16 * 8;
    assert!(
        g[..per].iter().all(|&x| x == 0.0),
        "member 0 was not selected"
    );
    assert!(g[per..].iter().any(|&x| x != 0.0), "members 1 and 2 were");
    // Frozen, the selection gives the input its gradient and the weights none.
    let x = Tensor::cat(vec![obs, act], 1).require_grad();
    let frozen = ens.select(0..1).unwrap().no_grad();
    let grads = frozen.forward_input(x.clone()).sum().backward();
    assert!(x.grad(&grads).is_some());
    assert!(frozen.weights[0].grad(&grads).is_none());
    for bad in [0..0, 2..4] {
        let e = ens.select(bad.clone()).unwrap_err().to_string();
        assert!(
            e.contains("critic members") && e.contains("0..3"),
            "{bad:?}: {e}"
        );
    }
}

#[derive(Default)]
struct Ids(Vec<ParamId>, Vec<Vec<f32>>);

impl ModuleVisitor for Ids {
    fn visit_float<const D: usize>(&mut self, p: &Param<Tensor<D>>) {
        self.0.push(p.id);
        self.1
            .push(p.val().into_data().try_into_vec_as::<f32>().unwrap());
    }
}

fn params<M: Module>(m: &M) -> Ids {
    let mut v = Ids::default();
    m.visit(&mut v);
    v
}

#[test]
fn polyak_and_hard_targets() {
    let ad = dev().autodiff();
    let online = MlpConfig::new([4, 8, 2]).init(&ad).unwrap();
    let target = hard_target(&online);
    let (o, t) = (params(&online), params(&target));
    assert_eq!(o.0, t.0, "a target keeps the online parameter ids");
    assert_eq!(o.1, t.1);
    // Move the online net, then blend halfway.
    let moved = MlpConfig::new([4, 8, 2]).init(&ad).unwrap();
    let mut shifted = online.clone();
    for (l, m) in shifted.layers.iter_mut().zip(&moved.layers) {
        let (id, w) = (l.weight.id, m.weight.val());
        l.weight = Param::initialized(id, w);
    }
    let blended = polyak_update(target, &shifted, 0.5);
    let (b, s) = (params(&blended), params(&shifted));
    for ((bv, tv), sv) in b.1.iter().zip(&t.1).zip(&s.1) {
        for ((x, y), z) in bv.iter().zip(tv).zip(sv) {
            assert!((x - 0.5 * (y + z)).abs() < 1e-6);
        }
    }
    assert!(
        !blended.layers[0].weight.val().is_autodiff(),
        "targets stay off the autodiff device"
    );
}

#[test]
fn act_host_split_over_threads_gives_the_same_actions() {
    let d = dev();
    let rows = 3 * MIN_ROWS_PER_THREAD + 5; // uneven blocks
    let config = GaussianTanhPolicyConfig::new(17, 6);
    let one = config.init(&d).unwrap();
    let mut split = one.clone();
    split.row_threads = 4;
    let mut rng = EmberRng::seed_from(5);
    let obs: Vec<f32> = (0..rows * 17)
        .map(|_| rng.next_f64() as f32 - 0.5)
        .collect();
    let obs = Tensor::<2>::from_data(TensorData::new(obs, [rows, 17]), &d);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    one.act_host(obs.clone(), &mut EmberRng::seed_from(9), &mut a);
    split.act_host(obs, &mut EmberRng::seed_from(9), &mut b);
    assert_eq!(a.len(), rows * 6);
    assert_eq!(a, b, "row blocks on other threads changed the actions");
    assert_eq!(config.with_row_threads(0).row_threads, 1);
}

#[test]
fn host_tanh_matches_tanh_to_eight_ulps() {
    for d in [dev(), dev().autodiff()] {
        let xs: Vec<f32> = (-4000..=4000)
            .map(|i| i as f32 / 400.0)
            .chain([1e-6, -1e-6, 60.0, -60.0, 1e4])
            .collect();
        let n = xs.len();
        let x = Tensor::<2>::from_data(TensorData::new(xs.clone(), [1, n]), &d);
        let fast = vals(Activation::Tanh.apply(x));
        let mut differ = 0;
        for (x, y) in xs.iter().zip(&fast) {
            assert!(
                (y - x.tanh()).abs() <= 5e-7,
                "tanh({x}): {y} vs {}",
                x.tanh()
            );
            differ += (*y != x.tanh()) as usize;
        }
        // The host kernel ran (bits differ somewhere), not the library's tanh.
        assert!(differ > 0);
    }
}

#[test]
fn flat_parameters_round_trip_between_modules_of_one_architecture() {
    let d = dev();
    let config = MlpConfig::new([4, 16, 16, 2]).with_layer_norm(true);
    let (a, b) = (config.init(&d).unwrap(), config.init(&d).unwrap());
    let x = Tensor::<2>::from_data(
        TensorData::new((0..12).map(|i| i as f32 * 0.1).collect(), [3, 4]),
        &d,
    );
    assert_ne!(vals(a.forward(x.clone())), vals(b.forward(x.clone())));
    let flat = flat_params(&a);
    assert_eq!(flat.len(), num_flat_params(&a));
    assert_eq!(
        flat.len(),
        (4 * 16 + 16) + (16 * 16 + 16) + (16 * 2 + 2) + 2 * (16 + 16)
    );
    let ids = params(&b);
    let b = load_flat_params(b, &flat).unwrap();
    assert_eq!(vals(a.forward(x.clone())), vals(b.forward(x)));
    assert_eq!(flat_params(&b), flat);
    assert!(params(&b).0 == ids.0, "parameter ids kept");
    let short = load_flat_params(b.clone(), &flat[1..])
        .unwrap_err()
        .to_string();
    assert!(short.contains("flat parameters"), "{short}");
    let mut nan = flat.clone();
    nan[7] = f32::NAN;
    assert!(load_flat_params(b, &nan).is_err());
}
