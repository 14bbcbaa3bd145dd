//! Target networks: hard copies and Polyak averaging.
//!
//! Targets live on the plain (non-autodiff) device and keep the online network's parameter
//! ids (`module.valid()` keeps them), so an update matches parameters by id.

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param, ParamId};
use burn::tensor::Tensor;
use std::collections::HashMap;

/// A target copy of `online`: same values and parameter ids, no autodiff.
pub fn hard_target<M: Module>(online: &M) -> M {
    online.valid()
}

/// `target ← (1 − τ)·target + τ·online`, parameter by parameter (matched by id). `τ = 1`
/// copies. Parameters of `target` absent from `online` are left unchanged.
pub fn polyak_update<M: Module>(target: M, online: &M, tau: f64) -> M {
    let mut collect = Collect::default();
    online.visit(&mut collect);
    let mut mapper = Blend {
        online: collect.values,
        tau,
    };
    target.map(&mut mapper)
}

#[derive(Default)]
struct Collect {
    values: HashMap<ParamId, Tensor<1>>,
}

impl ModuleVisitor for Collect {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let v = param.val().inner();
        let n = v.shape().num_elements();
        self.values.insert(param.id, v.reshape([n]));
    }
}

struct Blend {
    online: HashMap<ParamId, Tensor<1>>,
    tau: f64,
}

impl ModuleMapper for Blend {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let Some(source) = self.online.remove(&param.id) else {
            return param;
        };
        let tau = self.tau;
        param.map(|t| {
            let dims = t.dims();
            let s = source.to_device(&t.device()).reshape(dims);
            if tau >= 1.0 {
                s
            } else {
                emberlab_kernels::lerp(t, s, tau)
            }
        })
    }
}
