//! Batch normalisation whose running statistics are values a learner commits, and a
//! critic built on it (CrossQ's: Bhatt et al., ICLR 2024).
//!
//! burn's `BatchNorm` moves its running statistics inside `forward`, in state shared by
//! every clone and kept per thread; an update that fails after the forward pass, or one
//! whose parts run on another thread than the last, would change them. Here a training
//! forward pass *returns* the batch's statistics ([`BatchStats`]) and the module is
//! unchanged; [`BatchNorm::with_stats`] moves the running statistics when the learner
//! commits its step, so an update stays all-or-nothing and gives the same bits on any
//! thread. The running statistics are parameters without gradients: checkpoints and exact
//! resume keep them like any weight.

use burn::module::{Module, Param};
use burn::nn::{Linear, LinearConfig};
use burn::tensor::{Device, Tensor};
use emberlab_core::{Error, Result};

/// The mean and (biased) variance over the rows of one training batch, per feature.
#[derive(Clone, Debug)]
pub struct BatchStats {
    mean: Tensor<1>,
    var: Tensor<1>,
    rows: usize,
}

/// Batch normalisation of a `[batch, features]` input: `γ · (x − μ) / √(σ² + ε) + β`,
/// with the batch's statistics when training and the running ones otherwise.
#[derive(Module, Debug)]
pub struct BatchNorm {
    /// Scale per feature (trained).
    pub gamma: Param<Tensor<1>>,
    /// Shift per feature (trained).
    pub beta: Param<Tensor<1>>,
    /// Running mean per feature (no gradient).
    pub mean: Param<Tensor<1>>,
    /// Running (unbiased) variance per feature (no gradient).
    pub var: Param<Tensor<1>>,
    /// Weight of a new batch in the running statistics.
    #[module(skip)]
    pub momentum: f64,
    /// Added to the variance.
    #[module(skip)]
    pub epsilon: f64,
}

impl BatchNorm {
    /// `features` features, γ = 1, β = 0, running mean 0 and variance 1, ε = 10⁻⁵.
    pub fn new(features: usize, momentum: f64, device: &Device) -> Self {
        let fill = |v: f32| Tensor::<1>::ones([features], device).mul_scalar(v);
        let frozen = |v: f32| Param::from_tensor(fill(v)).set_require_grad(false);
        BatchNorm {
            gamma: Param::from_tensor(fill(1.0)),
            beta: Param::from_tensor(fill(0.0)),
            mean: frozen(0.0),
            var: frozen(1.0),
            momentum,
            epsilon: 1e-5,
        }
    }

    /// Normalised with the batch's own statistics, which come back for
    /// [`BatchNorm::with_stats`] (gradients flow through them, as in training).
    pub fn forward_train(&self, x: Tensor<2>) -> (Tensor<2>, BatchStats) {
        let [rows, features] = x.dims();
        let mean = x.clone().mean_dim(0);
        let centred = x - mean.clone();
        let var = centred.clone().powi_scalar(2).mean_dim(0);
        let y = centred / var.clone().add_scalar(self.epsilon).sqrt();
        let stats = BatchStats {
            mean: mean.detach().reshape([features]),
            var: var.detach().reshape([features]),
            rows,
        };
        (self.affine(y), stats)
    }

    /// Normalised with the running statistics.
    pub fn forward(&self, x: Tensor<2>) -> Tensor<2> {
        let [_, features] = x.dims();
        let mean = self.mean.val().reshape([1, features]);
        let std = self
            .var
            .val()
            .add_scalar(self.epsilon)
            .sqrt()
            .reshape([1, features]);
        self.affine((x - mean) / std)
    }

    fn affine(&self, y: Tensor<2>) -> Tensor<2> {
        let [_, features] = y.dims();
        y * self.gamma.val().reshape([1, features]) + self.beta.val().reshape([1, features])
    }

    /// The running statistics moved towards a batch's: `(1 − m) · running + m · batch`
    /// (the variance made unbiased first), the same parameter ids.
    pub fn with_stats(self, stats: &BatchStats) -> Self {
        let m = self.momentum;
        let unbiased = stats.rows as f64 / (stats.rows.max(2) - 1) as f64;
        let moved = |old: Tensor<1>, new: Tensor<1>| {
            let new = new.to_device(&old.device());
            old.mul_scalar(1.0 - m).add(new.mul_scalar(m))
        };
        BatchNorm {
            mean: self.mean.map(|old| moved(old, stats.mean.clone())),
            var: self
                .var
                .map(|old| moved(old, stats.var.clone().mul_scalar(unbiased))),
            ..self
        }
    }
}

/// One critic `Q(s, a)` of a [`BatchNormCritic`]: batch norm on the input and after every
/// hidden layer's ReLU, then one linear output.
#[derive(Module, Debug)]
pub struct BatchNormQ {
    /// The input's normalisation.
    pub input: BatchNorm,
    /// Hidden layers, then the output layer.
    pub layers: Vec<Linear>,
    /// One normalisation after each hidden layer.
    pub norms: Vec<BatchNorm>,
}

impl BatchNormQ {
    /// A critic of `input` features (observation + action), `hidden` layer widths and
    /// running-statistics momentum `momentum` (CrossQ: 0.01).
    ///
    /// # Errors
    /// No hidden layer, or a zero width.
    pub fn new(input: usize, hidden: &[usize], momentum: f64, device: &Device) -> Result<Self> {
        if hidden.is_empty() || input == 0 || hidden.contains(&0) {
            let got = format!("input {input}, hidden {hidden:?}");
            return Err(Error::invalid(
                "batch-norm critic sizes",
                got,
                "positive widths, at least one hidden layer",
            ));
        }
        let sizes: Vec<usize> = std::iter::once(input)
            .chain(hidden.iter().copied())
            .chain([1])
            .collect();
        let layers: Vec<Linear> = sizes
            .windows(2)
            .map(|w| LinearConfig::new(w[0], w[1]).init(device))
            .collect();
        // burn draws a weight at its first read: draw them now, while the caller's seeding
        // holds (a learner built in another thread at once would draw in between).
        for layer in &layers {
            let _ = (layer.weight.val(), layer.bias.as_ref().map(|b| b.val()));
        }
        Ok(BatchNormQ {
            input: BatchNorm::new(input, momentum, device),
            layers,
            norms: hidden
                .iter()
                .map(|&w| BatchNorm::new(w, momentum, device))
                .collect(),
        })
    }

    /// `Q` for the rows `[batch, 1]` normalised by their own statistics, and those
    /// statistics (for [`BatchNormQ::with_stats`]).
    pub fn forward_train(&self, obs: Tensor<2>, act: Tensor<2>) -> (Tensor<2>, Vec<BatchStats>) {
        let (mut x, first) = self.input.forward_train(Tensor::cat(vec![obs, act], 1));
        let mut stats = vec![first];
        for (layer, norm) in self.layers.iter().zip(&self.norms) {
            let (y, s) = norm.forward_train(emberlab_kernels::relu(layer.forward(x)));
            (x, stats) = (y, [stats, vec![s]].concat());
        }
        (self.output(x), stats)
    }

    /// `Q` for the rows `[batch, 1]`, normalised by the running statistics.
    pub fn forward(&self, obs: Tensor<2>, act: Tensor<2>) -> Tensor<2> {
        let mut x = self.input.forward(Tensor::cat(vec![obs, act], 1));
        for (layer, norm) in self.layers.iter().zip(&self.norms) {
            x = norm.forward(emberlab_kernels::relu(layer.forward(x)));
        }
        self.output(x)
    }

    fn output(&self, x: Tensor<2>) -> Tensor<2> {
        self.layers[self.layers.len() - 1].forward(x)
    }

    /// Every normalisation's running statistics moved towards `stats` (from
    /// [`BatchNormQ::forward_train`]).
    pub fn with_stats(self, stats: &[BatchStats]) -> Self {
        let BatchNormQ {
            input,
            layers,
            norms,
        } = self;
        BatchNormQ {
            input: input.with_stats(&stats[0]),
            norms: norms
                .into_iter()
                .zip(&stats[1..])
                .map(|(n, s)| n.with_stats(s))
                .collect(),
            layers,
        }
    }
}

/// CrossQ's critics: E batch-normalised critics ([`BatchNormQ`]) side by side, with the
/// interface of a fused [`crate::CriticEnsemble`] (values `[E, batch, 1]`, `min_q`). Its
/// targets come from the same forward pass as its values (the batch's `(s, a)` and
/// `(s', a')` rows together, so both are normalised alike), which is what lets CrossQ drop
/// target networks.
#[derive(Module, Debug)]
pub struct BatchNormCritic {
    /// The critics.
    pub members: Vec<BatchNormQ>,
}

/// Every member's batch statistics of one training pass ([`BatchNormCritic::forward_train`]).
#[derive(Clone, Debug)]
pub struct CriticStats(Vec<Vec<BatchStats>>);

impl BatchNormCritic {
    /// `members` critics of `input` features, `hidden` widths and running-statistics
    /// momentum `momentum` (CrossQ: two critics, momentum 0.01).
    ///
    /// # Errors
    /// No member, no hidden layer, or a zero width.
    pub fn new(
        members: usize,
        input: usize,
        hidden: &[usize],
        momentum: f64,
        device: &Device,
    ) -> Result<Self> {
        if members == 0 {
            return Err(Error::invalid(
                "batch-norm critic members",
                0,
                "at least one",
            ));
        }
        let members = (0..members).map(|_| BatchNormQ::new(input, hidden, momentum, device));
        Ok(BatchNormCritic {
            members: members.collect::<Result<_>>()?,
        })
    }

    /// Every critic's value `[E, batch, 1]` normalised by the rows' own statistics, and
    /// those statistics (for [`BatchNormCritic::with_stats`]).
    pub fn forward_train(&self, obs: Tensor<2>, act: Tensor<2>) -> (Tensor<3>, CriticStats) {
        let passes = self
            .members
            .iter()
            .map(|m| m.forward_train(obs.clone(), act.clone()));
        let (q, stats): (Vec<Tensor<2>>, Vec<_>) = passes.unzip();
        (stack(q), CriticStats(stats))
    }

    /// Every critic's value `[E, batch, 1]` with the running statistics.
    pub fn forward(&self, obs: Tensor<2>, act: Tensor<2>) -> Tensor<3> {
        stack(
            self.members
                .iter()
                .map(|m| m.forward(obs.clone(), act.clone()))
                .collect(),
        )
    }

    /// The smallest of the E values `[batch, 1]`, with the running statistics.
    pub fn min_q(&self, obs: Tensor<2>, act: Tensor<2>) -> Tensor<2> {
        let q = self.forward(obs, act);
        let [_, rows, _] = q.dims();
        q.min_dim(0).reshape([rows, 1])
    }

    /// Every member's running statistics moved towards `stats`.
    pub fn with_stats(self, stats: &CriticStats) -> Self {
        let members = self.members.into_iter().zip(&stats.0);
        BatchNormCritic {
            members: members.map(|(m, s)| m.with_stats(s)).collect(),
        }
    }
}

/// `[batch, 1]` values stacked into `[E, batch, 1]`.
fn stack(q: Vec<Tensor<2>>) -> Tensor<3> {
    let q: Vec<Tensor<3>> = q.into_iter().map(|q| q.unsqueeze_dim(0)).collect();
    Tensor::cat(q, 0)
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::TensorData;

    fn rows(values: &[f32], rows: usize, device: &Device) -> Tensor<2> {
        let cols = values.len() / rows;
        Tensor::from_data(TensorData::new(values.to_vec(), [rows, cols]), device)
    }

    #[test]
    fn training_normalises_by_the_batch_and_commits_running_statistics_as_a_value() {
        let device = Device::flex();
        let bn = BatchNorm::new(2, 0.1, &device);
        let x = rows(&[1.0, 10.0, 3.0, 20.0, 5.0, 30.0, 7.0, 40.0], 4, &device);
        let (y, stats) = bn.forward_train(x.clone());
        let y: Vec<f32> = y.into_data().try_to_vec::<f32>().unwrap();
        // Column 0: mean 4, biased variance 5.
        let want = (1.0f32 - 4.0) / (5.0f32 + 1e-5).sqrt();
        assert!((y[0] - want).abs() < 1e-5, "{y:?}");
        // The module has not moved; committing moves it by the momentum.
        let before: Vec<f32> = bn.mean.val().into_data().try_to_vec::<f32>().unwrap();
        assert_eq!(before, vec![0.0, 0.0]);
        let id = bn.mean.id;
        let bn = bn.with_stats(&stats);
        assert_eq!(bn.mean.id, id);
        let mean: Vec<f32> = bn.mean.val().into_data().try_to_vec::<f32>().unwrap();
        let var: Vec<f32> = bn.var.val().into_data().try_to_vec::<f32>().unwrap();
        assert!(
            (mean[0] - 0.4).abs() < 1e-6 && (mean[1] - 2.5).abs() < 1e-5,
            "{mean:?}"
        );
        // Unbiased variance of column 0: 20/3; running 0.9 · 1 + 0.1 · 20/3.
        assert!((var[0] - (0.9 + 2.0 / 3.0)).abs() < 1e-5, "{var:?}");
        // Inference uses the running statistics.
        let z: Vec<f32> = bn.forward(x).into_data().try_to_vec::<f32>().unwrap();
        let want = (1.0f32 - 0.4) / (var[0] + 1e-5).sqrt();
        assert!((z[0] - want).abs() < 1e-5, "{z:?}");
    }

    #[test]
    fn critics_train_on_batch_statistics_and_are_refused_without_layers_or_members() {
        let device = Device::flex();
        assert!(BatchNormQ::new(3, &[], 0.01, &device).is_err());
        assert!(BatchNormCritic::new(0, 3, &[8], 0.01, &device).is_err());
        let critic = BatchNormQ::new(3, &[8, 8], 0.01, &device).unwrap();
        let obs = rows(&[0.1, 0.2, 0.3, 0.4, 0.5, 0.6, 0.7, 0.8], 4, &device);
        let act = rows(&[1.0, -1.0, 0.5, 0.0], 4, &device);
        let (q, stats) = critic.forward_train(obs.clone(), act.clone());
        assert_eq!((q.dims(), stats.len()), ([4, 1], 3));
        // A batch's statistics differ from the initial running ones, so the two modes differ;
        // after committing, the running mean has moved.
        let eval: Vec<f32> = critic
            .forward(obs.clone(), act.clone())
            .into_data()
            .try_to_vec::<f32>()
            .unwrap();
        let train: Vec<f32> = q.into_data().try_to_vec::<f32>().unwrap();
        assert_ne!(eval, train);
        let moved = critic.with_stats(&stats);
        let mean: Vec<f32> = moved
            .input
            .mean
            .val()
            .into_data()
            .try_to_vec::<f32>()
            .unwrap();
        assert!((mean[0] - 0.01 * 0.4).abs() < 1e-6, "{mean:?}");
        // Two of them side by side: values [2, rows, 1], the minimum per row.
        let twin = BatchNormCritic::new(2, 3, &[8, 8], 0.01, &device).unwrap();
        let (q, stats) = twin.forward_train(obs.clone(), act.clone());
        assert_eq!(q.dims(), [2, 4, 1]);
        let q: Vec<f32> = twin
            .forward(obs.clone(), act.clone())
            .into_data()
            .try_to_vec::<f32>()
            .unwrap();
        let min: Vec<f32> = twin
            .min_q(obs, act)
            .into_data()
            .try_to_vec::<f32>()
            .unwrap();
        for row in 0..4 {
            assert_eq!(min[row], q[row].min(q[4 + row]));
        }
        let moved = twin.with_stats(&stats);
        let mean: Vec<f32> = moved.members[1]
            .input
            .mean
            .val()
            .into_data()
            .try_to_vec::<f32>()
            .unwrap();
        assert!((mean[0] - 0.01 * 0.4).abs() < 1e-6, "{mean:?}");
    }
}
