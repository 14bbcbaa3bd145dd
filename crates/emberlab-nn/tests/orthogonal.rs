//! `emberlab_nn::orthogonal` draws the Gaussian matrix burn's `Initializer::Orthogonal`
//! draws and returns the same factor (the QR factor whose `R` has a positive diagonal),
//! computed on the host: equal values for the same seed, tall, wide and convolutional.
//! One test in this binary: it seeds the backend's global generator.

use burn::nn::Initializer;
use burn::tensor::{Device, Tensor};
use emberlab_nn::orthogonal;

fn dev() -> Device {
    emberlab_backend::DeviceSpec::Flex.device().unwrap()
}

fn values<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    t.into_data().try_into_vec_as::<f32>().unwrap()
}

#[test]
fn orthogonal_equals_burns_initializer_for_the_same_seed() {
    let device = dev();
    let mut compared = 0;
    for (shape, gain) in [([96, 40], 2f64.sqrt()), ([40, 96], 1.0), ([64, 64], 0.01)] {
        device.seed(3);
        let burns: Tensor<2> = Initializer::Orthogonal { gain }.init(shape, &device).val();
        device.seed(3);
        let ours: Tensor<2> = orthogonal(shape, gain, &device);
        for (a, b) in values(burns).iter().zip(values(ours)) {
            assert!(
                (a - b).abs() <= 2e-5 * gain as f32 + 1e-6,
                "{shape:?}: burn {a}, ours {b}"
            );
            compared += 1;
        }
    }
    // A convolution's weight `[out, in, kh, kw]`: rows of `in · kh · kw` values.
    device.seed(5);
    let burns: Tensor<4> = Initializer::Orthogonal { gain: 1.0 }
        .init([16, 4, 3, 3], &device)
        .val();
    device.seed(5);
    let ours: Tensor<4> = orthogonal([16, 4, 3, 3], 1.0, &device);
    for (a, b) in values(burns).iter().zip(values(ours)) {
        assert!((a - b).abs() <= 2e-5, "conv: burn {a}, ours {b}");
        compared += 1;
    }
    assert_eq!(compared, 2 * 96 * 40 + 64 * 64 + 16 * 36);
}
