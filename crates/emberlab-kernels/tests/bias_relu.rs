//! `emberlab_kernels::bias_relu` against burn's `relu(y + b)`: the same bits forward and for
//! both gradients, for a layer (rank 2) and an ensemble's layers (rank 3), a shared product
//! left intact, a bias needing no gradient, on every host backend.

use burn::tensor::{Distribution, Tensor};

mod common;
use common::devices;

fn bits<const D: usize>(t: Tensor<D>) -> Vec<u32> {
    let v = t.into_data().try_to_vec::<f32>().unwrap();
    v.iter().map(|x| x.to_bits()).collect()
}

fn reference<const D: usize>(y: Tensor<D>, b: Tensor<D>) -> Tensor<D> {
    burn::tensor::activation::relu(y + b)
}

#[test]
fn values_are_burns_and_a_shared_product_is_left_alone() {
    for device in devices() {
        let y = Tensor::<2>::random([37, 65], Distribution::Normal(0.0, 1.0), &device);
        let b = Tensor::<2>::random([1, 65], Distribution::Normal(0.0, 1.0), &device);
        let want = reference(y.clone(), b.clone());
        let before = bits(y.clone());
        assert_eq!(
            bits(emberlab_kernels::bias_relu(y.clone(), b.clone())),
            bits(want)
        );
        assert_eq!(bits(y.clone()), before, "a shared product was overwritten");
        // Rank 3: one bias row per ensemble member, the product fresh (unique).
        let y3 = Tensor::<3>::random([3, 20, 9], Distribution::Normal(0.0, 1.0), &device);
        let b3 = Tensor::<3>::random([3, 1, 9], Distribution::Normal(0.0, 1.0), &device);
        let want3 = reference(y3.clone().mul_scalar(2.0), b3.clone());
        let got3 = emberlab_kernels::bias_relu(y3.mul_scalar(2.0), b3);
        assert_eq!(bits(got3), bits(want3));
        // A bias that is not one row per leading index takes burn's ops.
        let full = Tensor::<2>::random([37, 65], Distribution::Normal(0.0, 1.0), &device);
        let want_full = reference(y.clone(), full.clone());
        assert_eq!(bits(emberlab_kernels::bias_relu(y, full)), bits(want_full));
    }
}

#[test]
fn gradients_are_burns() {
    for device in devices() {
        let device = device.autodiff();
        let x0 = Tensor::<3>::random([2, 16, 5], Distribution::Normal(0.0, 1.0), &device);
        let w0 = Tensor::<3>::random([2, 5, 33], Distribution::Normal(0.0, 1.0), &device);
        let b0 = Tensor::<3>::random([2, 1, 33], Distribution::Normal(0.0, 1.0), &device);
        let probe = Tensor::<3>::random([2, 16, 33], Distribution::Normal(0.0, 1.0), &device);
        let grads = |ours: bool, bias_grad: bool| {
            let (x, w) = (x0.clone().require_grad(), w0.clone().require_grad());
            let b = if bias_grad {
                b0.clone().require_grad()
            } else {
                b0.clone()
            };
            let y = x.clone().matmul(w.clone());
            let h = if ours {
                emberlab_kernels::bias_relu(y, b.clone())
            } else {
                reference(y, b.clone())
            };
            // The output used twice, as a layer's features can be.
            let loss = (h.clone() * probe.clone()).sum() + h.sum();
            let g = loss.backward();
            let gb = b.grad(&g).map(bits);
            (bits(x.grad(&g).unwrap()), bits(w.grad(&g).unwrap()), gb)
        };
        for bias_grad in [true, false] {
            let (ours, theirs) = (grads(true, bias_grad), grads(false, bias_grad));
            assert_eq!(ours, theirs, "bias tracked: {bias_grad}");
            assert_eq!(ours.2.is_some(), bias_grad);
        }
    }
}

#[test]
fn other_broadcasts_take_burns_ops_and_get_gradients_of_their_shapes() {
    for device in devices() {
        let device = device.autodiff();
        let dist = Distribution::Normal(0.0, 1.0);
        // (product, bias): a full-size bias, a row-vector product, a bias broadcast over
        // the ensemble dimension too.
        let cases: [([usize; 3], [usize; 3]); 3] = [
            ([2, 7, 5], [2, 7, 5]),
            ([2, 1, 5], [2, 7, 5]),
            ([2, 7, 5], [1, 1, 5]),
        ];
        for (ys, bs) in cases {
            let y0 = Tensor::<3>::random(ys, dist, &device);
            let b0 = Tensor::<3>::random(bs, dist, &device);
            let grads = |ours: bool| {
                let (y, b) = (y0.clone().require_grad(), b0.clone().require_grad());
                let h = if ours {
                    emberlab_kernels::bias_relu(y.clone(), b.clone())
                } else {
                    reference(y.clone(), b.clone())
                };
                let g = (h.clone() * h).sum().backward();
                let (gy, gb) = (y.grad(&g).unwrap(), b.grad(&g).unwrap());
                assert_eq!((gy.dims(), gb.dims()), (ys, bs));
                (bits(gy), bits(gb))
            };
            assert_eq!(grads(true), grads(false), "product {ys:?}, bias {bs:?}");
        }
    }
}
