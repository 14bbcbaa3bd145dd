//! Regression losses.

use burn::tensor::Tensor;

/// Mean squared error `mean((pred − target)²)`, a one-element tensor.
pub fn mse<const D: usize>(pred: Tensor<D>, target: Tensor<D>) -> Tensor<1> {
    let d = pred - target;
    (d.clone() * d).mean()
}

/// Huber (smooth L1) loss with threshold `delta`: `0.5 d²` where `|d| ≤ delta`, else
/// `delta (|d| − 0.5 delta)`, averaged.
pub fn huber<const D: usize>(pred: Tensor<D>, target: Tensor<D>, delta: f64) -> Tensor<1> {
    let a = (pred - target).abs();
    let quadratic = a.clone().clamp_max(delta);
    let linear = a - quadratic.clone();
    (quadratic.clone() * quadratic)
        .mul_scalar(0.5)
        .add(linear.mul_scalar(delta))
        .mean()
}

/// Importance-weighted squared error `mean(w · (pred − target)²)` over `[batch, 1]` columns
/// (prioritized replay's correction).
pub fn mse_weighted(pred: Tensor<2>, target: Tensor<2>, weights: Tensor<2>) -> Tensor<1> {
    let d = pred - target;
    (d.clone() * d * weights).mean()
}

/// Importance-weighted Huber loss `mean(w · huber(pred − target))` over `[batch, 1]`
/// columns.
pub fn huber_weighted(
    pred: Tensor<2>,
    target: Tensor<2>,
    delta: f64,
    weights: Tensor<2>,
) -> Tensor<1> {
    let a = (pred - target).abs();
    let quadratic = a.clone().clamp_max(delta);
    let linear = a - quadratic.clone();
    ((quadratic.clone() * quadratic)
        .mul_scalar(0.5)
        .add(linear.mul_scalar(delta))
        * weights)
        .mean()
}
