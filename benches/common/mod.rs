//! Shared by the criterion benches: backend names in benchmark ids and random host inputs.

use ember_backend::DeviceSpec;
use ember_core::EmberRng;

/// The backend's name in benchmark ids (`flex`, `ndarray`, `tch`, …).
#[allow(dead_code)]
pub fn name(spec: DeviceSpec) -> &'static str {
    match spec {
        DeviceSpec::Flex => "flex",
        DeviceSpec::NdArray => "ndarray",
        DeviceSpec::TchCpu => "tch",
        DeviceSpec::TchCuda(_) => "tch_cuda",
        DeviceSpec::Cuda(_) => "cuda",
    }
}

/// `rows × cols` uniform values in `[-1, 1)`.
#[allow(dead_code)]
pub fn host(rows: usize, cols: usize, rng: &mut EmberRng) -> Vec<f32> {
    (0..rows * cols)
        .map(|_| rng.next_f64() as f32 * 2.0 - 1.0)
        .collect()
}
