//! Shared by the criterion benches: the devices to measure, backend names in benchmark ids
//! and random host inputs.

use emberlab_backend::DeviceSpec;
use emberlab_core::EmberRng;

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

/// The devices a bench measures: every compiled CPU backend, plus the comma-separated specs
/// of `EMBER_BENCH_DEVICES` (e.g. `tch:cuda:0` on a CUDA machine).
///
/// # Panics
/// When an entry of `EMBER_BENCH_DEVICES` is not a device spec (the message names it).
#[allow(dead_code)]
pub fn bench_specs() -> Vec<DeviceSpec> {
    let extra = std::env::var("EMBER_BENCH_DEVICES").unwrap_or_default();
    DeviceSpec::compiled_cpu_and(&extra).unwrap_or_else(|e| panic!("EMBER_BENCH_DEVICES: {e}"))
}

/// `rows × cols` uniform values in `[-1, 1)`.
#[allow(dead_code)]
pub fn host(rows: usize, cols: usize, rng: &mut EmberRng) -> Vec<f32> {
    (0..rows * cols)
        .map(|_| rng.next_f64() as f32 * 2.0 - 1.0)
        .collect()
}
