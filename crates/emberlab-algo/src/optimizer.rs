//! Optimizers as the algorithms' configs name them, built once here.
//!
//! On flex and ndarray, Adam is [`HostAdam`]: the same update as burn's `Adam`, in one pass
//! over host memory instead of burn's ~13 tensor passes (each allocating a buffer). On
//! libtorch and GPUs burn's `Adam` runs where the tensors are.

use crate::rmsprop_tf::RmsPropTfLike;
use burn::module::Module;
use burn::optim::grad_clipping::GradientClippingConfig;
use burn::optim::{
    AdamConfig, GradientsParams, LearningRate, ModuleOptimizer, Optimizer, RecordState,
    RmsPropConfig, StateSink, StateSource,
};
use burn::tensor::{Device, Tensor, TensorData};
use emberlab_kernels::helping;
use serde::{Deserialize, Serialize};
use std::mem::MaybeUninit;
use std::sync::Arc;

/// Adam's first-moment decay (PyTorch's default).
const BETA_1: f32 = 0.9;
/// Adam's second-moment decay (PyTorch's default).
const BETA_2: f32 = 0.999;
/// Adam's ε (PyTorch's default).
const EPSILON: f32 = 1e-8;

/// Steps `module` in place: `*module = optim.step(lr, module, grads)` without ever taking
/// the module out of its owner. The step works on a clone (parameters are shared handles,
/// so this copies no weights); if it panics, `module` is left as it was, and the learner
/// holding it stays usable. A helper thread waiting meanwhile keeps taking blocks of the
/// step's long parameters ([`emberlab_kernels::helping::hold`]).
pub fn step_in_place<M: Module>(
    optim: &mut ModuleOptimizer,
    lr: f64,
    module: &mut M,
    grads: GradientsParams,
) {
    let _help = emberlab_kernels::helping::hold();
    *module = optim.step(lr, module.clone(), grads);
}

/// `module` and `optim` stepped by `grads`, as new values; the originals are unchanged
/// (shared handles: nothing is copied until written). For an update that steps several
/// networks and moves them into the learner only when all have stepped.
pub fn stepped<M: Module>(
    module: &M,
    optim: &ModuleOptimizer,
    lr: f64,
    grads: GradientsParams,
) -> (M, ModuleOptimizer) {
    let _help = emberlab_kernels::helping::hold();
    let mut optim = optim.clone();
    let module = optim.step(lr, module.clone(), grads);
    (module, optim)
}

/// Which optimizer an algorithm uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OptimizerKind {
    /// Adam with PyTorch's defaults (β = (0.9, 0.999), ε = 1e-8).
    #[default]
    Adam,
    /// RMSprop as SB3's A2C uses it (α = 0.99, ε = 1e-5, no momentum).
    RmsProp,
    /// RMSprop with TensorFlow's arithmetic, SB3's `RMSpropTFLike` as zoo's Atari A2C uses
    /// it (α = 0.99, ε = 1e-5 inside the root, the average from one): [`RmsPropTfLike`].
    #[serde(rename = "rmsprop_tf_like")]
    RmsPropTfLike,
}

impl OptimizerKind {
    /// The optimizer for parameters on `device`, clipping the gradient's global norm to
    /// `max_grad_norm` when it is positive. Adam is [`HostAdam`] on flex and ndarray.
    pub fn build(self, max_grad_norm: f64, device: &Device) -> ModuleOptimizer {
        let optim = match self {
            OptimizerKind::Adam if emberlab_backend::is_host_cpu(device) => {
                ModuleOptimizer::from(HostAdam::default())
            }
            OptimizerKind::Adam => AdamConfig::new()
                .with_beta_1(BETA_1)
                .with_beta_2(BETA_2)
                .with_epsilon(EPSILON)
                .init(),
            OptimizerKind::RmsProp => RmsPropConfig::new()
                .with_alpha(0.99)
                .with_epsilon(1e-5)
                .with_momentum(0.0)
                .init(),
            OptimizerKind::RmsPropTfLike => ModuleOptimizer::from(RmsPropTfLike::default()),
        };
        if max_grad_norm > 0.0 {
            optim.with_grad_clipping(GradientClippingConfig::Norm(max_grad_norm as f32).init())
        } else {
            optim
        }
    }
}

/// Adam (β = (0.9, 0.999), ε = 1e-8, no weight decay) computing burn's `Adam` update,
/// operation for operation, in one fused pass over host memory, with the moments kept as
/// host vectors. For parameters on flex or ndarray, where it produces the same bits as
/// burn's `Adam` (test `host_adam_matches_burn_adam`); elsewhere every step would copy the
/// parameter to the host and back ([`OptimizerKind::build`] picks burn's there).
#[derive(Clone, Debug)]
pub struct HostAdam {
    beta_1: f32,
    beta_2: f32,
    epsilon: f32,
}

impl Default for HostAdam {
    fn default() -> Self {
        Self {
            beta_1: BETA_1,
            beta_2: BETA_2,
            epsilon: EPSILON,
        }
    }
}

/// One parameter's [`HostAdam`] state: the step count and both moments, row-major.
///
/// The moments are shared handles: a clone copies no values (an update steps a clone of
/// the learner's optimizer and keeps the original until it commits), and a step writes
/// new moments beside shared ones instead of copying them first.
#[derive(Clone, Debug)]
pub struct HostAdamState {
    time: usize,
    moment_1: Arc<Vec<f32>>,
    moment_2: Arc<Vec<f32>>,
}

impl HostAdamState {
    /// A fresh state (step 0, zero moments) for a parameter of `len` values.
    pub fn new(len: usize) -> Self {
        HostAdamState {
            time: 0,
            moment_1: Arc::new(vec![0.0; len]),
            moment_2: Arc::new(vec![0.0; len]),
        }
    }

    /// Steps taken.
    pub fn time(&self) -> usize {
        self.time
    }

    /// Values the state is for.
    pub fn len(&self) -> usize {
        self.moment_1.len()
    }

    /// Whether it is for an empty parameter.
    pub fn is_empty(&self) -> bool {
        self.moment_1.is_empty()
    }
}

impl HostAdam {
    /// One Adam step of a flat host parameter `param` (updated in place) from `grad`, with
    /// learning rate `lr` — the same arithmetic as the burn [`Optimizer`] form (e.g. for a
    /// parameter server holding weights as one vector).
    ///
    /// # Panics
    /// If `param`, `grad` and `state` differ in length.
    pub fn step_flat(&self, lr: f32, param: &mut [f32], grad: &[f32], state: &mut HostAdamState) {
        assert!(
            param.len() == grad.len() && grad.len() == state.len(),
            "HostAdam::step_flat: param {}, grad {}, state {} values",
            param.len(),
            grad.len(),
            state.len()
        );
        self.update(lr, param, grad, state);
    }

    /// Counts the step in `state` and returns its coefficients, computed as burn's
    /// `Adam` computes them.
    fn coefficients(&self, lr: f32, state: &mut HostAdamState) -> Coefficients {
        state.time += 1;
        let t = state.time as i32;
        let bias_correction2_sqrt = (1.0 - self.beta_2.powi(t)).sqrt();
        Coefficients {
            betas: [self.beta_1, self.beta_2],
            step_factor: bias_correction2_sqrt / (1.0 - self.beta_1.powi(t)),
            epsilon: self.epsilon * bias_correction2_sqrt,
            lr,
            first: state.time == 1,
        }
    }

    /// One Adam step of `param` (updated in place) from `grad`.
    fn update(&self, lr: f32, param: &mut [f32], grad: &[f32], state: &mut HostAdamState) {
        let k = self.coefficients(lr, state);
        let (m, v) = (&mut state.moment_1, &mut state.moment_2);
        let (m, v) = (Arc::make_mut(m), Arc::make_mut(v));
        adam_in_place(param, grad, m, v, k);
    }

    /// One Adam step from the parameter's values `old` into `new` (every element
    /// written); the moments are updated in place when this state alone holds them, and
    /// written into new vectors when they are shared (with the original of a cloned
    /// optimizer). Long parameters are stepped block by block with a thread that waits
    /// for this one, if any ([`helping::share_each`]); the bits are the same.
    fn update_into(
        &self,
        lr: f32,
        old: &[f32],
        grad: &[f32],
        state: &mut HostAdamState,
        new: &mut [MaybeUninit<f32>],
    ) {
        let k = self.coefficients(lr, state);
        let n = old.len();
        assert!(
            grad.len() == n && state.len() == n && new.len() == n,
            "HostAdam: parameter {n}, gradient {}, state {} values",
            grad.len(),
            state.len()
        );
        let (m, v) = (&mut state.moment_1, &mut state.moment_2);
        if let (Some(m), Some(v)) = (Arc::get_mut(m), Arc::get_mut(v)) {
            let moments = helping::chunks_mut(m).zip(helping::chunks_mut(v));
            let blocks = moments.zip(helping::chunks(old).zip(helping::chunks(grad)));
            let blocks = blocks.zip(helping::chunks_mut(new));
            helping::share_each(blocks, |(((m, v), (old, grad)), new)| {
                adam_into(old, grad, m, v, new, k)
            });
            return;
        }
        let (mut m_new, mut v_new) = (Vec::with_capacity(n), Vec::with_capacity(n));
        {
            let fresh = (m_new.spare_capacity_mut(), v_new.spare_capacity_mut());
            let moments = (helping::chunks(m).zip(helping::chunks(v))).zip(
                helping::chunks_mut(&mut fresh.0[..n]).zip(helping::chunks_mut(&mut fresh.1[..n])),
            );
            let blocks = moments.zip(helping::chunks(old).zip(helping::chunks(grad)));
            let blocks = blocks.zip(helping::chunks_mut(new));
            helping::share_each(blocks, |((((m, v), (m_new, v_new)), (old, grad)), new)| {
                adam_moments_into(old, grad, [m, v], [m_new, v_new], new, k)
            });
        }
        // SAFETY: `adam_moments_into` wrote every one of the `n` values of both.
        unsafe {
            m_new.set_len(n);
            v_new.set_len(n);
        }
        (state.moment_1, state.moment_2) = (Arc::new(m_new), Arc::new(v_new));
    }
}

/// One Adam step's coefficients: β₁, β₂, the bias-corrected step factor and ε, the
/// learning rate, and whether it is the first step (burn starts the moments from the
/// gradient alone then).
#[derive(Clone, Copy, Debug)]
struct Coefficients {
    betas: [f32; 2],
    step_factor: f32,
    epsilon: f32,
    lr: f32,
    first: bool,
}

impl Coefficients {
    /// The moments after gradient `g` (as burn computes them).
    #[inline(always)]
    fn moments(&self, g: f32, m: f32, v: f32) -> (f32, f32) {
        let [b1, b2] = self.betas;
        let (f1, f2) = (1.0 - b1, 1.0 - b2);
        if self.first {
            (g * f1, (g * g) * f2)
        } else {
            (m * b1 + g * f1, v * b2 + (g * g) * f2)
        }
    }

    /// The parameter `p` stepped with moments `m` and `v`.
    #[inline(always)]
    fn stepped(&self, p: f32, m: f32, v: f32) -> f32 {
        p - (m * self.step_factor / (v.sqrt() + self.epsilon)) * self.lr
    }
}

emberlab_kernels::multiversion! {
    /// Adam's pass in place, vectorised at the CPU's widest ([`Coefficients`]).
    fn adam_in_place(param: &mut [f32], grad: &[f32], m: &mut [f32], v: &mut [f32], k: Coefficients) {
        for (((p, &g), m), v) in param.iter_mut().zip(grad).zip(m).zip(v) {
            (*m, *v) = k.moments(g, *m, *v);
            *p = k.stepped(*p, *m, *v);
        }
    }
}

emberlab_kernels::multiversion! {
    /// Adam's pass from `old` into `new` (every element written), vectorised at the
    /// CPU's widest ([`Coefficients`]); the same arithmetic as [`adam_in_place`].
    fn adam_into(
        old: &[f32],
        grad: &[f32],
        m: &mut [f32],
        v: &mut [f32],
        new: &mut [MaybeUninit<f32>],
        k: Coefficients
    ) {
        for ((((&p, &g), m), v), new) in old.iter().zip(grad).zip(m).zip(v).zip(new) {
            (*m, *v) = k.moments(g, *m, *v);
            new.write(k.stepped(p, *m, *v));
        }
    }
}

emberlab_kernels::multiversion! {
    /// Adam's pass from `old` into `new` with the moments read from `moments` and
    /// written into `fresh` (every element of `new` and `fresh` written), vectorised at
    /// the CPU's widest; the same arithmetic as [`adam_in_place`].
    fn adam_moments_into(
        old: &[f32],
        grad: &[f32],
        moments: [&[f32]; 2],
        fresh: [&mut [MaybeUninit<f32>]; 2],
        new: &mut [MaybeUninit<f32>],
        k: Coefficients
    ) {
        let [m, v] = moments;
        let [m_new, v_new] = fresh;
        let n = old.len();
        assert!(grad.len() == n && m.len() == n && v.len() == n, "Adam: lengths differ");
        assert!(m_new.len() == n && v_new.len() == n && new.len() == n, "Adam: lengths differ");
        for i in 0..n {
            let (m, v) = k.moments(grad[i], m[i], v[i]);
            m_new[i].write(m);
            v_new[i].write(v);
            new[i].write(k.stepped(old[i], m, v));
        }
    }
}

impl Optimizer for HostAdam {
    type State<const D: usize> = HostAdamState;

    fn step<const D: usize>(
        &self,
        lr: LearningRate,
        tensor: Tensor<D>,
        grad: Tensor<D>,
        state: Option<HostAdamState>,
    ) -> (Tensor<D>, Option<HostAdamState>) {
        let n = tensor.shape().num_elements();
        let mut state = state.unwrap_or_else(|| HostAdamState::new(n));
        assert_eq!(
            state.moment_1.len(),
            n,
            "Adam state of another parameter shape"
        );
        let lr = lr as f32;
        let into = |old: &[f32], grad: &[f32], state: &mut _, new: &mut [MaybeUninit<f32>]| {
            self.update_into(lr, old, grad, state, new)
        };
        let in_place =
            |values: &mut [f32], grad: &[f32], state: &mut _| self.update(lr, values, grad, state);
        // SAFETY: `update_into` writes every element of `new` (it checks that the lengths
        // agree and zips over all of them).
        let stepped =
            unsafe { crate::host_step::host_step(tensor, grad, &mut state, into, in_place) };
        (stepped, Some(state))
    }

    fn to_device<const D: usize>(state: HostAdamState, _device: &Device) -> HostAdamState {
        state
    }
}

impl RecordState for HostAdamState {
    fn state_flatten(&self, prefix: &str, out: &mut StateSink) {
        let n = self.moment_1.len();
        out.push_tensor(prefix, "time", TensorData::new(vec![self.time as i64], [1]));
        out.push_tensor(
            prefix,
            "moment_1",
            TensorData::new(self.moment_1.to_vec(), [n]),
        );
        out.push_tensor(
            prefix,
            "moment_2",
            TensorData::new(self.moment_2.to_vec(), [n]),
        );
    }

    fn state_unflatten(prefix: &str, src: &mut StateSource, _device: &Device) -> Option<Self> {
        let time = src
            .take_tensor(prefix, "time")?
            .try_into_vec::<i64>()
            .ok()?;
        let moment_1 = src
            .take_tensor(prefix, "moment_1")?
            .try_into_vec::<f32>()
            .ok()?;
        let moment_2 = src
            .take_tensor(prefix, "moment_2")?
            .try_into_vec::<f32>()
            .ok()?;
        (moment_1.len() == moment_2.len()).then_some(HostAdamState {
            time: usize::try_from(*time.first()?).ok()?,
            moment_1: Arc::new(moment_1),
            moment_2: Arc::new(moment_2),
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::module::{Module, Param};
    use burn::optim::GradientsParams;

    /// Two parameters (a matrix and a vector) fitting a fixed target.
    #[derive(Module, Debug)]
    struct Toy {
        w: Param<Tensor<2>>,
        b: Param<Tensor<1>>,
    }

    fn toy(device: &Device) -> Toy {
        let w: Vec<f32> = (0..12).map(|i| (i as f32 * 0.37).sin()).collect();
        Toy {
            w: Param::from_tensor(Tensor::from_data(TensorData::new(w, [3, 4]), device)),
            b: Param::from_tensor(Tensor::from_data(
                TensorData::new(vec![0.1f32, -0.2, 0.3, 0.05], [4]),
                device,
            )),
        }
    }

    fn grads(m: &Toy, step: usize, device: &Device) -> GradientsParams {
        let x: Vec<f32> = (0..6).map(|i| ((i + step) as f32 * 0.9).cos()).collect();
        let x = Tensor::<2>::from_data(TensorData::new(x, [2, 3]), device);
        let y = x.matmul(m.w.val()) + m.b.val().unsqueeze();
        let loss = (y - 0.5).powi_scalar(2).mean();
        GradientsParams::from_grads(loss.backward(), m)
    }

    fn values(m: &Toy) -> Vec<f32> {
        let mut v = crate::tensors::host(m.w.val());
        v.extend(crate::tensors::host(m.b.val()));
        v
    }

    #[test]
    fn host_adam_matches_burn_adam() {
        let hosts = emberlab_backend::DeviceSpec::compiled_cpu()
            .into_iter()
            .filter_map(|spec| spec.autodiff_device().ok())
            .filter(emberlab_backend::is_host_cpu);
        for device in hosts {
            let mut ours = ModuleOptimizer::from(HostAdam::default());
            let mut burns = AdamConfig::new().with_epsilon(EPSILON).init();
            let (mut a, mut b) = (toy(&device), toy(&device));
            for step in 0..25 {
                let lr = if step < 10 { 1e-2 } else { 3e-3 };
                let ga = grads(&a, step, &device);
                let gb = grads(&b, step, &device);
                a = ours.step(lr, a, ga);
                b = burns.step(lr, b, gb);
                assert_eq!(values(&a), values(&b), "{device:?}, step {step}");
            }
            assert_ne!(values(&a), values(&toy(&device)), "the parameters moved");
        }
    }

    #[test]
    fn the_flat_step_and_the_tensor_step_agree_bit_for_bit() {
        let device = Device::flex().autodiff();
        let adam = HostAdam::default();
        let mut optim = ModuleOptimizer::from(adam.clone());
        let mut m = toy(&device);
        let mut flat = values(&m);
        let mut state_w = HostAdamState::new(12);
        let mut state_b = HostAdamState::new(4);
        for step in 0..10 {
            let g = grads(&m, step, &device);
            let mut gw = crate::tensors::host(g.get::<2>(m.w.id).expect("w's gradient"));
            gw.extend(crate::tensors::host(
                g.get::<1>(m.b.id).expect("b's gradient"),
            ));
            let before = m.w.val();
            let before_values = crate::tensors::host(before.clone());
            m = optim.step(1e-2, m, g);
            let (w, b) = flat.split_at_mut(12);
            adam.step_flat(1e-2, w, &gw[..12], &mut state_w);
            adam.step_flat(1e-2, b, &gw[12..], &mut state_b);
            assert_eq!(values(&m), flat, "step {step}");
            // The tensor step wrote new buffers: a handle to the old values keeps them.
            assert_eq!(crate::tensors::host(before), before_values);
            assert_ne!(before_values, values(&m)[..12].to_vec());
        }
    }

    /// An update steps a clone of the optimizer and keeps the original until it commits:
    /// the clone's step (moments written beside the shared ones) leaves the original's
    /// moments as they were, so the original steps to the same bits, and both agree with
    /// an optimizer that was never cloned (moments stepped in place).
    #[test]
    fn stepping_a_clone_leaves_the_original_state_alone() {
        let device = Device::flex().autodiff();
        let mut original = ModuleOptimizer::from(HostAdam::default());
        let mut alone = ModuleOptimizer::from(HostAdam::default());
        let (mut m, mut n) = (toy(&device), toy(&device));
        for step in 0..6 {
            let mut clone = original.clone();
            let from_clone = clone.step(1e-2, m.clone(), grads(&m, step, &device));
            let from_original = original.step(1e-2, m.clone(), grads(&m, step, &device));
            assert_eq!(values(&from_clone), values(&from_original), "step {step}");
            let g = grads(&n, step, &device);
            n = alone.step(1e-2, n, g);
            assert_eq!(values(&from_clone), values(&n), "step {step}");
            m = from_clone;
            original = clone;
        }
        assert_ne!(values(&m), values(&toy(&device)), "the parameters moved");
    }

    #[test]
    fn host_adam_is_chosen_on_host_devices_only() {
        let flex = Device::flex().autodiff();
        let mut optim = OptimizerKind::Adam.build(0.5, &flex);
        let m = toy(&flex);
        let g = grads(&m, 0, &flex);
        let m = optim.step(1e-3, m, g);
        let record = optim.to_record();
        // HostAdam records three tensors per parameter (step, two moments), burn's Adam two.
        let described = format!("{record:?}");
        assert!(described.contains("num_tensors: 6"), "{described}");
        // The state survives a record round trip, and training goes on from it.
        let mut reloaded = OptimizerKind::Adam.build(0.5, &flex).load_record(record);
        let g = grads(&m, 1, &flex);
        let a = reloaded.step(1e-3, m.clone(), g);
        let g = grads(&m, 1, &flex);
        let b = optim.step(1e-3, m, g);
        assert_eq!(values(&a), values(&b));
    }
}
