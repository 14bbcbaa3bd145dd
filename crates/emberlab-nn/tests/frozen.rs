//! The frozen inference forms match the burn forward of every policy type to float
//! tolerance, at batch sizes on both sides of the kernel's four-row blocks, draw the same
//! noise as `act_host`, refresh in place, and refuse what they cannot do.

use burn::tensor::{Device, Tensor, TensorData};
use emberlab_core::EmberRng;
use emberlab_nn::{
    Activation, CategoricalPolicy, DiscreteQ, FrozenGaussianTanhPolicy, FrozenMlp,
    GaussianTanhPolicyConfig, MlpConfig,
};

fn device() -> Device {
    Device::flex()
}

fn input(rows: usize, cols: usize, seed: usize) -> Vec<f32> {
    (0..rows * cols)
        .map(|i| (((i + seed) as f32) * 0.731).sin() * 2.0)
        .collect()
}

fn tensor(x: &[f32], rows: usize, cols: usize) -> Tensor<2> {
    Tensor::from_data(TensorData::new(x.to_vec(), [rows, cols]), &device())
}

fn host(t: Tensor<2>) -> Vec<f32> {
    t.into_data().try_into_vec_as::<f32>().unwrap()
}

fn close(a: &[f32], b: &[f32], what: &str) {
    assert_eq!(a.len(), b.len(), "{what}");
    for (i, (x, y)) in a.iter().zip(b).enumerate() {
        assert!(
            (x - y).abs() <= 2e-5 * (1.0 + y.abs()),
            "{what}[{i}]: frozen {x}, burn {y}"
        );
    }
}

const BATCHES: [usize; 6] = [1, 2, 4, 5, 16, 33];

#[test]
fn mlps_q_networks_and_categorical_policies_match_burn() {
    for activation in [Activation::Relu, Activation::Tanh] {
        let mlp = MlpConfig::new([17, 256, 256, 12])
            .with_activation(activation)
            .init(&device())
            .unwrap();
        let mut frozen = FrozenMlp::new(&mlp).unwrap();
        let mut out = Vec::new();
        for rows in BATCHES {
            let x = input(rows, 17, rows);
            frozen.forward(&x, rows, &mut out).unwrap();
            close(&out, &host(mlp.forward(tensor(&x, rows, 17))), "mlp");
        }
    }
    // A Q-network and a categorical policy are MLPs: their frozen forms pick the same
    // greedy actions.
    let q = DiscreteQ::new(MlpConfig::new([4, 64, 64, 2]).init(&device()).unwrap());
    let pi = CategoricalPolicy::new(
        MlpConfig::new([6, 32, 3])
            .with_activation(Activation::Tanh)
            .init(&device())
            .unwrap(),
    );
    for (net, width) in [(&q.net, 4), (&pi.net, 6)] {
        let mut frozen = FrozenMlp::new(net).unwrap();
        let x = input(64, width, 3);
        let mut out = Vec::new();
        frozen.forward(&x, 64, &mut out).unwrap();
        let burn = host(net.forward(tensor(&x, 64, width)));
        close(&out, &burn, "head");
        let k = net.output_dim();
        let argmax = |v: &[f32]| -> Vec<usize> {
            v.chunks(k)
                .map(|r| (0..k).max_by(|&a, &b| r[a].total_cmp(&r[b])).unwrap())
                .collect()
        };
        assert_eq!(argmax(&out), argmax(&burn));
    }
}

#[test]
fn the_gaussian_policy_acts_as_act_host_does() {
    let policy = GaussianTanhPolicyConfig::new(17, 6)
        .with_bounds(vec![-2.0; 6], vec![1.0; 6])
        .init(&device())
        .unwrap();
    let mut frozen = FrozenGaussianTanhPolicy::new(&policy).unwrap();
    for rows in BATCHES {
        let x = input(rows, 17, 7 * rows);
        let (mut a, mut b) = (
            EmberRng::seed_from(rows as u64),
            EmberRng::seed_from(rows as u64),
        );
        let (mut ours, mut theirs) = (Vec::new(), Vec::new());
        frozen.act(&x, &mut a, &mut ours).unwrap();
        policy.act_host(tensor(&x, rows, 17), &mut b, &mut theirs);
        close(&ours, &theirs, "stochastic action");
        assert_eq!(a.state(), b.state(), "the same noise was drawn");
        assert!(ours.iter().all(|v| (-2.0..=1.0).contains(v)));
        frozen.deterministic(&x, &mut ours).unwrap();
        close(
            &ours,
            &host(policy.deterministic(tensor(&x, rows, 17))),
            "deterministic",
        );
    }
    let e = frozen
        .act(&[0.0; 16], &mut EmberRng::seed_from(0), &mut Vec::new())
        .unwrap_err();
    assert!(
        e.to_string()
            .contains("multiple of the observation width 17"),
        "{e}"
    );
}

#[test]
fn refresh_copies_new_weights_in_place_and_refuses_other_shapes() {
    let cfg = GaussianTanhPolicyConfig::new(5, 2).with_hidden(vec![32, 32]);
    let first = cfg.init(&device()).unwrap();
    let second = cfg.init(&device()).unwrap();
    let mut frozen = FrozenGaussianTanhPolicy::new(&first).unwrap();
    let x = input(3, 5, 1);
    let mut out = Vec::new();
    frozen.refresh(&second).unwrap();
    frozen.deterministic(&x, &mut out).unwrap();
    close(
        &out,
        &host(second.deterministic(tensor(&x, 3, 5))),
        "after refresh",
    );
    let before = out.clone();
    let other = GaussianTanhPolicyConfig::new(5, 2)
        .with_hidden(vec![16])
        .init(&device())
        .unwrap();
    assert!(frozen.refresh(&other).is_err());
    frozen.deterministic(&x, &mut out).unwrap();
    assert_eq!(out, before, "a refused refresh changes nothing");
    let normed = MlpConfig::new([3, 8, 1])
        .with_layer_norm(true)
        .init(&device())
        .unwrap();
    let e = FrozenMlp::new(&normed).unwrap_err().to_string();
    assert!(e.contains("layer norm"), "{e}");
}

#[test]
fn a_batch_split_across_threads_gives_the_same_bits() {
    let mlp = MlpConfig::new([17, 256, 256, 12]).init(&device()).unwrap();
    let mut one = FrozenMlp::new(&mlp).unwrap();
    let mut split = FrozenMlp::new(&mlp).unwrap();
    split.set_threads(3).unwrap();
    assert_eq!(split.threads(), 3);
    let (mut a, mut b) = (Vec::new(), Vec::new());
    for rows in [0, 1, 2, 3, 4, 7, 16, 33] {
        let x = input(rows, 17, rows + 1);
        one.forward(&x, rows, &mut a).unwrap();
        split.forward(&x, rows, &mut b).unwrap();
        assert_eq!(a, b, "{rows} rows");
        assert_eq!(b.len(), rows * 12);
    }
    // Back to one thread; zero threads is refused and changes nothing.
    let e = split.set_threads(0).unwrap_err().to_string();
    assert!(e.contains("threads"), "{e}");
    assert_eq!(split.threads(), 3);
    split.set_threads(1).unwrap();
    assert_eq!(split.threads(), 1);
    let x = input(5, 17, 9);
    one.forward(&x, 5, &mut a).unwrap();
    split.forward(&x, 5, &mut b).unwrap();
    assert_eq!(a, b);
    // A wrong input length is an error on any number of threads.
    split.set_threads(2).unwrap();
    assert!(split.forward(&x[..16], 1, &mut b).is_err());

    // The policy's split keeps its actions (same noise, same bits).
    let policy = GaussianTanhPolicyConfig::new(17, 6)
        .init(&device())
        .unwrap();
    let mut p1 = FrozenGaussianTanhPolicy::new(&policy).unwrap();
    let mut p2 = FrozenGaussianTanhPolicy::new(&policy).unwrap();
    p2.set_threads(2).unwrap();
    let obs = input(8, 17, 4);
    let (mut r1, mut r2) = (EmberRng::seed_from(5), EmberRng::seed_from(5));
    p1.act(&obs, &mut r1, &mut a).unwrap();
    p2.act(&obs, &mut r2, &mut b).unwrap();
    assert_eq!(a, b);
    // One or two rows: split by columns (more: by rows), the same noise and bits.
    for rows in [1, 2, 3, 4, 1] {
        p1.act(&obs[..rows * 17], &mut r1, &mut a).unwrap();
        p2.act(&obs[..rows * 17], &mut r2, &mut b).unwrap();
        assert_eq!(a, b, "{rows} rows");
        assert_eq!(b.len(), rows * 6);
    }
}

#[test]
fn a_small_batch_split_by_columns_gives_the_same_bits() {
    // Split layers of 64 (too narrow: one block, no split), 130 (blocks 0..64, 64..130: a
    // partial vector in the last), 200 and 256 (three threads: uneven blocks); the split
    // layer first, in the middle, after a tanh.
    let shapes: [(&[usize], Activation); 5] = [
        (&[5, 64, 3], Activation::Relu),
        (&[5, 130, 3], Activation::Relu),
        (&[17, 40, 200, 12], Activation::Relu),
        (&[4, 256, 256, 2], Activation::Tanh),
        (&[3, 7, 9, 256, 1], Activation::Tanh),
    ];
    for (widths, activation) in shapes {
        let mlp = MlpConfig::new(widths.to_vec())
            .with_activation(activation)
            .init(&device())
            .unwrap();
        let mut one = FrozenMlp::new(&mlp).unwrap();
        let (mut a, mut b) = (Vec::new(), Vec::new());
        for threads in [2, 3, 5] {
            let mut split = FrozenMlp::new(&mlp).unwrap();
            split.set_threads(threads).unwrap();
            for (seed, rows) in [1, 2, 3, 4, 1, 4].into_iter().enumerate() {
                let x = input(rows, widths[0], seed * 13);
                one.forward(&x, rows, &mut a).unwrap();
                split.forward(&x, rows, &mut b).unwrap();
                assert_eq!(a, b, "{widths:?}, {threads} threads, {rows} rows");
                let burn = mlp.forward(tensor(&x, rows, widths[0]));
                let burn: Vec<f32> = burn.into_data().try_into_vec_as::<f32>().unwrap();
                for (x, y) in b.iter().zip(&burn) {
                    assert!((x - y).abs() < 1e-4, "{widths:?}: {x} vs burn's {y}");
                }
            }
        }
    }
}
