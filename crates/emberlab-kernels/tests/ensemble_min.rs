//! `emberlab_kernels::ensemble_min` against burn's product, bias and `min_dim`: the values and
//! the gradients of the hidden layers, the weights and the biases, for two and ten members,
//! on every host backend.

use burn::tensor::{Distribution, Tensor};
use emberlab_kernels::ensemble_min;

mod common;
use common::devices;

fn values<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.into_data().convert::<f32>().try_to_vec::<f32>().unwrap()
}

fn reference(h: Tensor<3>, w: Tensor<3>, b: Tensor<3>) -> Tensor<2> {
    let [_, rows, _] = h.dims();
    (h.matmul(w) + b).min_dim(0).reshape([rows, 1])
}

fn close(what: &str, ours: &[f32], theirs: &[f32]) {
    assert_eq!(ours.len(), theirs.len(), "{what}: lengths");
    for (i, (a, b)) in ours.iter().zip(theirs).enumerate() {
        assert!(
            (a - b).abs() <= 1e-4 * (1.0 + b.abs()),
            "{what}[{i}]: {a} against {b}"
        );
    }
}

#[test]
fn values_and_gradients_are_burns() {
    for device in devices() {
        let device = device.autodiff();
        for (members, rows, hidden) in [(2, 77, 64), (10, 33, 19)] {
            let n = Distribution::Normal(0.0, 1.0);
            let h0 = Tensor::<3>::random([members, rows, hidden], n, &device);
            let w0 = Tensor::<3>::random([members, hidden, 1], n, &device);
            let b0 = Tensor::<3>::random([members, 1, 1], n, &device);
            let probe = Tensor::<2>::random([rows, 1], n, &device);
            let run = |ours: bool| {
                let (h, w, b) = (
                    h0.clone().require_grad(),
                    w0.clone().require_grad(),
                    b0.clone().require_grad(),
                );
                let q = if ours {
                    ensemble_min(h.clone(), w.clone(), b.clone())
                } else {
                    reference(h.clone(), w.clone(), b.clone())
                };
                assert_eq!(q.dims(), [rows, 1]);
                let g = (q.clone() * probe.clone()).sum().backward();
                let grad = |t: &Tensor<3>| values(t.grad(&g).expect("a gradient"));
                (values(q), grad(&h), grad(&w), grad(&b))
            };
            let (ours, theirs) = (run(true), run(false));
            close("values", &ours.0, &theirs.0);
            close("hidden gradient", &ours.1, &theirs.1);
            close("weight gradient", &ours.2, &theirs.2);
            close("bias gradient", &ours.3, &theirs.3);
            // Row-sparse: each row's gradient reaches one member only.
            let nonzero_rows = ours
                .1
                .chunks(hidden)
                .filter(|r| r.iter().any(|&v| v != 0.0));
            assert_eq!(nonzero_rows.count(), rows);
        }
    }
}

#[test]
fn frozen_members_pass_the_gradient_to_the_input_only() {
    for device in devices() {
        let device = device.autodiff();
        let n = Distribution::Normal(0.0, 1.0);
        let h = Tensor::<3>::random([2, 16, 8], n, &device).require_grad();
        let w = Tensor::<3>::random([2, 8, 1], n, &device);
        let b = Tensor::<3>::random([2, 1, 1], n, &device);
        let g = ensemble_min(h.clone(), w.clone(), b.clone())
            .sum()
            .backward();
        let want = reference(h.clone(), w, b).sum().backward();
        close(
            "hidden gradient",
            &values(h.grad(&g).unwrap()),
            &values(h.grad(&want).unwrap()),
        );
    }
}

#[test]
fn the_minimum_is_one_of_the_products_to_the_bit_and_a_nan_is_kept() {
    for device in devices() {
        let n = Distribution::Normal(0.0, 1.0);
        let h = Tensor::<3>::random([3, 41, 70], n, &device);
        let w = Tensor::<3>::random([3, 70, 1], n, &device);
        let b = Tensor::<3>::random([3, 1, 1], n, &device);
        let q = values(emberlab_kernels::matmul(h.clone(), w.clone()) + b.clone());
        let min = values(ensemble_min(h.clone(), w.clone(), b.clone()));
        for (r, m) in min.iter().enumerate() {
            let want = (0..3).map(|e| q[e * 41 + r]).fold(f32::INFINITY, f32::min);
            assert_eq!(m.to_bits(), want.to_bits(), "row {r}");
        }
        // A NaN bias on the last member reaches every row's minimum.
        let nan = Tensor::<3>::from_floats([[[0.0]], [[0.0]], [[f32::NAN]]], &device);
        let min = values(ensemble_min(h, w, nan));
        assert!(min.iter().all(|v| v.is_nan()), "a NaN value was hidden");
    }
}
