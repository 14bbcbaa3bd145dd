//! A module's float parameters as one flat vector, and back: what travels when a learner
//! publishes a policy to actors that act locally, or a parameter server hands out weights.

use burn::module::{Module, ModuleMapper, ModuleVisitor, Param};
use burn::tensor::{Tensor, TensorData};
use emberlab_core::{Error, Result};

/// Every float parameter of `module`, in the module's visiting order, concatenated.
pub fn flat_params<M: Module>(module: &M) -> Vec<f32> {
    let mut collect = Concat(Vec::new());
    module.visit(&mut collect);
    collect.0
}

/// The number of float parameter values of `module`.
pub fn num_flat_params<M: Module>(module: &M) -> usize {
    let mut count = Count(0);
    module.visit(&mut count);
    count.0
}

/// `module` with its float parameters taken from `values` (as [`flat_params`] of a module
/// of the same architecture wrote them), on the devices they were on, ids kept.
///
/// # Errors
/// `values` of another length than the module's parameters, or holding a NaN or infinity.
pub fn load_flat_params<M: Module>(module: M, values: &[f32]) -> Result<M> {
    Error::check_len("flat parameters", values.len(), num_flat_params(&module))?;
    if let Some(i) = values.iter().position(|v| !v.is_finite()) {
        return Err(Error::invalid("flat parameter", i, "finite values"));
    }
    let mut load = Load { values, at: 0 };
    Ok(module.map(&mut load))
}

struct Concat(Vec<f32>);

impl ModuleVisitor for Concat {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let data = param.val().into_data();
        match data.as_slice::<f32>() {
            Ok(s) => self.0.extend_from_slice(s),
            Err(_) => self.0.extend(data.iter::<f32>()),
        }
    }
}

struct Count(usize);

impl ModuleVisitor for Count {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        self.0 += param.shape().num_elements();
    }
}

struct Load<'a> {
    values: &'a [f32],
    at: usize,
}

impl ModuleMapper for Load<'_> {
    fn map_float<const D: usize>(&mut self, param: Param<Tensor<D>>) -> Param<Tensor<D>> {
        let (values, at) = (self.values, self.at);
        let n = param.shape().num_elements();
        self.at += n;
        param.map(|t| {
            let (dims, device) = (t.dims(), t.device());
            let data = TensorData::new(values[at..at + n].to_vec(), dims);
            let fresh = Tensor::<D>::from_data(data, &device);
            if t.is_require_grad() {
                fresh.require_grad()
            } else {
                fresh
            }
        })
    }
}
