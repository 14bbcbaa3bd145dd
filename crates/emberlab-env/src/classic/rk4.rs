//! One classical Runge–Kutta (RK4) step, in the order of operations of Gymnasium's `rk4`.

/// Integrates `dy/dt = f(y)` over one step of length `dt` from `y0`.
pub(crate) fn rk4<const N: usize>(
    f: impl Fn(&[f64; N]) -> [f64; N],
    y0: [f64; N],
    dt: f64,
) -> [f64; N] {
    let dt2 = dt / 2.0;
    let shifted = |k: &[f64; N], h: f64| -> [f64; N] { std::array::from_fn(|i| y0[i] + h * k[i]) };
    let k1 = f(&y0);
    let k2 = f(&shifted(&k1, dt2));
    let k3 = f(&shifted(&k2, dt2));
    let k4 = f(&shifted(&k3, dt));
    std::array::from_fn(|i| y0[i] + dt / 6.0 * (k1[i] + 2.0 * k2[i] + 2.0 * k3[i] + k4[i]))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn exponential_growth_to_fourth_order() {
        // dy/dt = y from y = 1 over 0.1: RK4's error is about h^5 / 120.
        let y = rk4(|y: &[f64; 1]| [y[0]], [1.0], 0.1)[0];
        assert!((y - 0.1f64.exp()).abs() < 1e-7, "{y}");
        assert!((y - 0.1f64.exp()).abs() > 0.0);
    }
}
