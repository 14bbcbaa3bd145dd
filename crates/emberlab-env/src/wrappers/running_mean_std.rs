//! [`RunningMeanStd`]: running per-dimension mean and variance, Gymnasium's way.

/// Running mean and (population) variance of vectors, updated with the parallel
/// (Chan et al.) formula exactly as Gymnasium's `RunningMeanStd` does for a `float32`
/// observation space: mean and variance in `f32`, the count in `f64` starting at `1e-4`.
#[derive(Clone, Debug, PartialEq)]
pub struct RunningMeanStd {
    mean: Vec<f32>,
    var: Vec<f32>,
    count: f64,
}

impl RunningMeanStd {
    /// Statistics of `dim`-vectors: mean 0, variance 1, count `1e-4`.
    pub fn new(dim: usize) -> Self {
        RunningMeanStd {
            mean: vec![0.0; dim],
            var: vec![1.0; dim],
            count: 1e-4,
        }
    }

    /// Appends the statistics to a snapshot.
    pub fn save_state(&self, out: &mut emberlab_core::state::StateWriter) {
        out.f32s(&self.mean).f32s(&self.var).f64(self.count);
    }

    /// Restores what [`RunningMeanStd::save_state`] wrote (of the same dimension).
    ///
    /// # Errors
    /// A snapshot of another dimension, or a short one.
    pub fn load_state(
        &mut self,
        src: &mut emberlab_core::state::StateReader<'_>,
    ) -> emberlab_core::Result<()> {
        let mean = src.f32s(Some(self.mean.len()))?;
        let var = src.f32s(Some(self.var.len()))?;
        self.count = src.f64()?;
        self.mean = mean;
        self.var = var;
        Ok(())
    }

    /// Folds in one sample (a batch of one: batch mean `x`, batch variance 0). `x` must have
    /// the statistics' dimension (callers check it).
    pub fn update(&mut self, x: &[f32]) {
        let tot_count = self.count + 1.0;
        // NumPy 2 turns the Python-float counts into float32 next to float32 arrays.
        let (count, tot) = (self.count as f32, tot_count as f32);
        for ((m, v), &xi) in self.mean.iter_mut().zip(&mut self.var).zip(x) {
            let delta = xi - *m;
            // Gymnasium: new_mean = mean + delta * batch_count / tot_count, and
            // M2 = var * count + batch_var * batch_count + delta² * count * batch_count /
            // tot_count, with batch_count = 1 and batch_var = 0 (both exact no-ops here).
            let m2 = *v * count + delta * delta * count / tot;
            *m += delta / tot;
            *v = m2 / tot;
        }
        self.count = tot_count;
    }

    /// The running means.
    pub fn mean(&self) -> &[f32] {
        &self.mean
    }

    /// The running variances.
    pub fn var(&self) -> &[f32] {
        &self.var
    }

    /// The (fractional) number of samples folded in, starting at `1e-4`.
    pub fn count(&self) -> f64 {
        self.count
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn converges_to_sample_mean_and_variance() {
        let mut rms = RunningMeanStd::new(2);
        let xs = [[1.0f32, -2.0], [3.0, 0.0], [5.0, 2.0], [7.0, 4.0]];
        for x in &xs {
            rms.update(x);
        }
        // Population means 4 and 1, variances 5 (the 1e-4 prior weighs almost nothing).
        assert!((rms.mean()[0] - 4.0).abs() < 1e-3, "{:?}", rms.mean());
        assert!((rms.mean()[1] - 1.0).abs() < 1e-3);
        assert!((rms.var()[0] - 5.0).abs() < 1e-2, "{:?}", rms.var());
        assert!((rms.count() - 4.0001).abs() < 1e-12);
    }
}
