//! [`RmsPropTfLike`]: RMSprop as TensorFlow computes it, which rl-baselines3-zoo's Atari
//! A2C uses through SB3's `RMSpropTFLike`. Unlike PyTorch's RMSprop, the running average
//! of squared gradients starts at one rather than zero, and ε is added inside the square
//! root: `v ← α·v + (1 − α)·g²`, `p ← p − lr · g / √(v + ε)`. Starting at one keeps the
//! first steps at about `lr · g` where PyTorch's take `lr · g / |g| · 10`.

use burn::optim::{LearningRate, Optimizer, RecordState, StateSink, StateSource};
use burn::tensor::{Device, Tensor, TensorData};
use std::mem::MaybeUninit;

/// RMSprop with TensorFlow's arithmetic (module docs), no momentum, not centred, no
/// weight decay: SB3's `RMSpropTFLike` as zoo configures it for A2C. The average is kept
/// on the host; on devices other than flex and ndarray every step copies the parameter
/// there and back.
#[derive(Clone, Debug)]
pub struct RmsPropTfLike {
    alpha: f32,
    epsilon: f32,
}

impl Default for RmsPropTfLike {
    /// α = 0.99 and zoo's ε = 1e-5.
    fn default() -> Self {
        RmsPropTfLike {
            alpha: 0.99,
            epsilon: 1e-5,
        }
    }
}

/// One parameter's [`RmsPropTfLike`] state: the average of squared gradients, row-major.
#[derive(Clone, Debug)]
pub struct RmsPropTfState {
    square_avg: Vec<f32>,
}

impl RmsPropTfState {
    /// A fresh state for a parameter of `len` values: the average at one.
    pub fn new(len: usize) -> Self {
        RmsPropTfState {
            square_avg: vec![1.0; len],
        }
    }

    /// The average of squared gradients.
    pub fn square_avg(&self) -> &[f32] {
        &self.square_avg
    }
}

impl RmsPropTfLike {
    /// Decay `alpha` of the squared-gradient average and `epsilon` under the root.
    pub fn new(alpha: f32, epsilon: f32) -> Self {
        RmsPropTfLike { alpha, epsilon }
    }

    /// `p` stepped by gradient `g`, the average `v` updated in place.
    #[inline(always)]
    fn stepped(&self, lr: f32, p: f32, g: f32, v: &mut f32) -> f32 {
        *v = *v * self.alpha + (1.0 - self.alpha) * g * g;
        p - lr * g / (*v + self.epsilon).sqrt()
    }
}

impl Optimizer for RmsPropTfLike {
    type State<const D: usize> = RmsPropTfState;

    fn step<const D: usize>(
        &self,
        lr: LearningRate,
        tensor: Tensor<D>,
        grad: Tensor<D>,
        state: Option<RmsPropTfState>,
    ) -> (Tensor<D>, Option<RmsPropTfState>) {
        let n = tensor.shape().num_elements();
        let mut state = state.unwrap_or_else(|| RmsPropTfState::new(n));
        assert_eq!(
            state.square_avg.len(),
            n,
            "RMSprop state of another parameter shape"
        );
        let lr = lr as f32;
        let into = |old: &[f32], grad: &[f32], avg: &mut Vec<f32>, new: &mut [MaybeUninit<f32>]| {
            for (((&p, &g), v), new) in old.iter().zip(grad).zip(avg).zip(new) {
                new.write(self.stepped(lr, p, g, v));
            }
        };
        let in_place = |values: &mut [f32], grad: &[f32], avg: &mut Vec<f32>| {
            for ((p, &g), v) in values.iter_mut().zip(grad).zip(avg) {
                *p = self.stepped(lr, *p, g, v);
            }
        };
        let avg = &mut state.square_avg;
        // SAFETY: `old`, `grad`, the average and `new` all have the parameter's `n` values
        // (the average checked above, the others by `host_step`), so the zip writes every
        // element of `new`.
        let stepped = unsafe { crate::host_step::host_step(tensor, grad, avg, into, in_place) };
        (stepped, Some(state))
    }

    fn to_device<const D: usize>(state: RmsPropTfState, _device: &Device) -> RmsPropTfState {
        state
    }
}

impl RecordState for RmsPropTfState {
    fn state_flatten(&self, prefix: &str, out: &mut StateSink) {
        let n = self.square_avg.len();
        let avg = TensorData::new(self.square_avg.clone(), [n]);
        out.push_tensor(prefix, "square_avg", avg);
    }

    fn state_unflatten(prefix: &str, src: &mut StateSource, _device: &Device) -> Option<Self> {
        let square_avg = src
            .take_tensor(prefix, "square_avg")?
            .try_into_vec::<f32>()
            .ok()?;
        Some(RmsPropTfState { square_avg })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::module::{Module, Param};
    use burn::optim::{GradientsParams, ModuleOptimizer};

    #[derive(Module, Debug)]
    struct Toy {
        w: Param<Tensor<2>>,
    }

    /// The gradient of `Σ w ⊙ c` is `c`: a fixed, known gradient per step.
    fn step_with(optim: &mut ModuleOptimizer, toy: Toy, c: &[f32], device: &Device) -> Toy {
        let ct = Tensor::<2>::from_data(TensorData::new(c.to_vec(), [2, 3]), device);
        let loss = (toy.w.val() * ct).sum();
        let grads = GradientsParams::from_grads(loss.backward(), &toy);
        optim.step(1e-2, toy, grads)
    }

    fn gradient(step: usize) -> Vec<f32> {
        (0..6)
            .map(|i| ((i + step) as f32 * 1.3).cos() * 3.0)
            .collect()
    }

    #[test]
    fn steps_follow_sb3s_rmsprop_tf_like_and_resume_from_the_saved_average() {
        let device = Device::flex().autodiff();
        let start: Vec<f32> = (0..6).map(|i| (i as f32 * 0.7).sin()).collect();
        let toy = || Toy {
            w: Param::from_tensor(Tensor::from_data(
                TensorData::new(start.clone(), [2, 3]),
                &device,
            )),
        };
        // SB3's `RMSpropTFLike.step` in f64: the average from ones,
        // `mul_(alpha).addcmul_(g, g, 1 − alpha)`, `p.addcdiv_(g, sqrt(avg + eps), −lr)`.
        let mut p: Vec<f64> = start.iter().map(|&x| x as f64).collect();
        let mut v = vec![1.0f64; 6];
        let mut optim = ModuleOptimizer::from(RmsPropTfLike::default());
        let mut m = toy();
        for step in 0..6 {
            let c = gradient(step);
            m = step_with(&mut optim, m, &c, &device);
            for ((p, v), &g) in p.iter_mut().zip(&mut v).zip(&c) {
                let g = g as f64;
                *v = *v * 0.99 + 0.01 * g * g;
                *p -= 1e-2 * g / (*v + 1e-5).sqrt();
            }
            let got = crate::tensors::host(m.w.val());
            for (a, b) in got.iter().zip(&p) {
                assert!((*a as f64 - b).abs() < 1e-6, "step {step}: {a} vs {b}");
            }
        }
        // The first step of a fresh optimizer is about lr·g (the average starts at one),
        // where PyTorch's RMSprop would step lr·g/√(0.01·g²) = 10·lr·sign(g).
        let first = step_with(
            &mut ModuleOptimizer::from(RmsPropTfLike::default()),
            toy(),
            &gradient(0),
            &device,
        );
        let moved = crate::tensors::host(first.w.val());
        let c = gradient(0);
        for ((a, s), g) in moved.iter().zip(&start).zip(&c) {
            assert!(
                ((s - a) / (1e-2 * g) - 1.0).abs() < 0.05,
                "{s} → {a}, g {g}"
            );
        }
        // The state survives a record round trip: the next steps are the same bits.
        let record = optim.to_record();
        let mut reloaded = ModuleOptimizer::from(RmsPropTfLike::default()).load_record(record);
        let a = step_with(&mut reloaded, m.clone(), &gradient(6), &device);
        let b = step_with(&mut optim, m, &gradient(6), &device);
        assert_eq!(
            crate::tensors::host(a.w.val()),
            crate::tensors::host(b.w.val())
        );
    }
}
