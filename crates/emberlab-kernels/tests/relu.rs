//! `emberlab_kernels::relu` against burn's `relu`: the same bits forward and backward, inputs
//! left intact when shared, strided and offset views, NaN kept, on every host backend.

use burn::tensor::{Distribution, Tensor, TensorData};

mod common;
use common::devices;

fn bits<const D: usize>(t: Tensor<D>) -> Vec<u32> {
    let v = t.into_data().try_to_vec::<f32>().unwrap();
    v.iter().map(|x| x.to_bits()).collect()
}

#[test]
fn values_are_burns_and_a_shared_input_is_left_alone() {
    for device in devices() {
        let x = Tensor::<2>::random([37, 65], Distribution::Normal(0.0, 1.0), &device);
        let want = burn::tensor::activation::relu(x.clone());
        assert_eq!(bits(emberlab_kernels::relu(x.clone())), bits(want.clone()));
        // `x` is shared, so it was not overwritten.
        assert_eq!(bits(emberlab_kernels::relu(x.clone())), bits(want.clone()));
        assert!(x.clone().lower_elem(0.0).any().into_scalar::<bool>());
        let t = emberlab_kernels::relu(x.clone().transpose());
        assert_eq!(bits(t), bits(want.clone().transpose()));
        let s = emberlab_kernels::relu(x.clone().slice([3..9, 10..20]));
        assert_eq!(bits(s), bits(want.slice([3..9, 10..20])));
        // A unique buffer (a fresh result) is reused in place and still right.
        let fresh = x.clone().mul_scalar(2.0);
        let want2 = burn::tensor::activation::relu(x.clone().mul_scalar(2.0));
        assert_eq!(bits(emberlab_kernels::relu(fresh)), bits(want2));
    }
}

#[test]
fn nan_propagates() {
    for device in devices() {
        let x = Tensor::<1>::from_data(TensorData::new(vec![f32::NAN, -1.0, 2.0], [3]), &device);
        let y = emberlab_kernels::relu(x)
            .into_data()
            .try_to_vec::<f32>()
            .unwrap();
        assert!(y[0].is_nan());
        assert_eq!(&y[1..], &[0.0, 2.0]);
    }
}

#[test]
fn gradients_are_burns_also_when_the_output_is_used_twice() {
    for device in devices() {
        let device = device.autodiff();
        let x0 = Tensor::<2>::random([16, 33], Distribution::Normal(0.0, 1.0), &device);
        let w = Tensor::<2>::random([16, 33], Distribution::Normal(0.0, 1.0), &device);
        let grad = |ours: bool| {
            let x = x0.clone().require_grad();
            // A fresh (unique) input, as a layer's output is.
            let h = x.clone().mul_scalar(1.5);
            let y = if ours {
                emberlab_kernels::relu(h)
            } else {
                burn::tensor::activation::relu(h)
            };
            let loss = (y.clone() * w.clone() + y.clone() * y).sum();
            bits(x.grad(&loss.backward()).expect("a gradient"))
        };
        assert_eq!(grad(true), grad(false), "{device:?}");
    }
}
