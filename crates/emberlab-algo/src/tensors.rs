//! Host ↔ device conversions used by every learner.

use burn::tensor::{Device, Int, Tensor, TensorData};
use emberlab_core::{Error, Result};

/// A `[rows, cols]` tensor from row-major host values.
pub fn matrix(values: &[f32], rows: usize, cols: usize, device: &Device) -> Tensor<2> {
    Tensor::from_data(TensorData::new(values.to_vec(), [rows, cols]), device)
}

/// A `[n, 1]` column from host values.
pub fn column(values: &[f32], device: &Device) -> Tensor<2> {
    matrix(values, values.len(), 1, device)
}

/// Rows `rows` of a `[n, cols]` tensor (a view where the backend allows): one share of a
/// batch for an update split by rows (`crate::parts::run_by_rows`).
pub fn rows_of(t: &Tensor<2>, rows: &std::ops::Range<usize>) -> Tensor<2> {
    t.clone().narrow(0, rows.start, rows.len())
}

/// A `[n, 1]` integer column from discrete actions stored as `f32`.
pub fn index_column(values: &[f32], device: &Device) -> Tensor<2, Int> {
    let v: Vec<i64> = values.iter().map(|&x| x as i64).collect();
    Tensor::from_data(TensorData::new(v, [values.len(), 1]), device)
}

/// A `[n]` integer vector from discrete actions stored as `f32`.
pub fn index_vector(values: &[f32], device: &Device) -> Tensor<1, Int> {
    let v: Vec<i64> = values.iter().map(|&x| x as i64).collect();
    Tensor::from_data(TensorData::new(v, [values.len()]), device)
}

/// The values of a float tensor, row-major, on the host.
pub fn host<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    emberlab_kernels::unshared(t)
        .into_data()
        .try_into_vec_as::<f32>()
        .expect("float tensors convert to f32")
}

/// The values of an integer tensor on the host, as indices.
pub fn host_indices<const D: usize>(t: Tensor<D, Int>) -> Vec<usize> {
    t.into_data()
        .try_into_vec_as::<i64>()
        .expect("int tensors convert to i64")
        .into_iter()
        .map(|x| x as usize)
        .collect()
}

/// The `[rows, obs_dim]` tensor of a row-major observation batch on `device`; an error if
/// the length is not a multiple of `obs_dim`.
pub fn obs_batch(obs: &[f32], obs_dim: usize, device: &Device) -> Result<(Tensor<2>, usize)> {
    let n = obs.len() / obs_dim.max(1);
    Error::check_len("observations (batch × obs_dim)", n * obs_dim, obs.len())?;
    Ok((matrix(obs, n, obs_dim, device), n))
}

/// Held from [`learner_devices`] to the end of a learner's constructor: the backend's
/// generator is one per process, so two learners built at once in two threads would
/// otherwise draw from each other's seeds. burn draws a parameter's initial values when it
/// is first read, so a constructor reads every network before it returns (its target
/// copies and acting copy do) and keeps this guard until then (`let (plain, learn,
/// _seeded) = ...`); it must not build another learner meanwhile.
#[must_use = "the seed holds only while this guard lives: keep it until the weights are drawn"]
pub struct Seeded {
    _lock: std::sync::MutexGuard<'static, ()>,
}

/// Serializes seeding and weight initialisation across threads.
static SEEDING: std::sync::Mutex<()> = std::sync::Mutex::new(());

/// A learner's devices from the device it was given: `(plain, autodiff, guard)`. Seeds the
/// backend's generator with `seed` so that the weights drawn while `guard` lives are
/// reproducible, whatever other threads build at the same time (see [`Seeded`]).
pub fn learner_devices(learn: &Device, seed: u64) -> (Device, Device, Seeded) {
    let lock = SEEDING.lock().unwrap_or_else(|e| e.into_inner());
    let plain = learn.clone().without_autodiff();
    plain.seed(seed);
    let learn = plain.clone().autodiff();
    (plain, learn, Seeded { _lock: lock })
}

/// A float tensor's values as `f32` (converted when it has another float type), for the
/// optimizers' host passes.
pub(crate) fn f32_data<const D: usize>(t: Tensor<D>) -> TensorData {
    // One copy of a shared tensor on flex, not two (`emberlab_kernels::unshared`).
    let data = emberlab_kernels::unshared(t).into_data();
    if data.dtype() == burn::tensor::DType::F32 {
        data
    } else {
        data.convert::<f32>()
    }
}
