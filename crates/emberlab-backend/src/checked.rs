//! [`DeviceChecked`]: a module wrapper that verifies where its inputs, outputs and
//! parameters live (after rlstructures' `RL_Agent_CheckDevice`).

use burn::module::{Module, ModuleVisitor, Param};
use burn::tensor::{Device, Tensor};
use emberlab_core::{Error, Result};

/// A module that must run on `device`: [`DeviceChecked::forward`] checks that the input
/// and the output of a call are on it, and construction checks the parameters.
#[derive(Clone, Debug)]
pub struct DeviceChecked<M> {
    inner: M,
    device: Device,
    name: String,
}

impl<M: Module> DeviceChecked<M> {
    /// Wraps `inner`, named `name` in errors; errors if a parameter is on another device.
    pub fn new(inner: M, device: Device, name: impl Into<String>) -> Result<Self> {
        let name = name.into();
        let mut visitor = ParamDevices {
            expected: device.clone(),
            bad: None,
        };
        inner.visit(&mut visitor);
        if let Some(got) = visitor.bad {
            return Err(Error::DeviceMismatch {
                what: format!("a parameter of {name}"),
                expected: format!("{device:?}"),
                got: format!("{got:?}"),
            });
        }
        Ok(DeviceChecked {
            inner,
            device,
            name,
        })
    }

    /// The wrapped module.
    pub fn inner(&self) -> &M {
        &self.inner
    }

    /// Unwraps the module.
    pub fn into_inner(self) -> M {
        self.inner
    }

    /// The device everything must be on.
    pub fn device(&self) -> &Device {
        &self.device
    }

    /// Errors unless `tensor` is on the expected device.
    pub fn check<const D: usize>(&self, what: &str, tensor: &Tensor<D>) -> Result<()> {
        let got = tensor.device();
        if got != self.device {
            return Err(Error::DeviceMismatch {
                what: format!("{what} of {}", self.name),
                expected: format!("{:?}", self.device),
                got: format!("{got:?}"),
            });
        }
        Ok(())
    }

    /// Runs `f(module, input)` after checking the input's device, and checks the output's.
    pub fn forward<const D: usize, const E: usize>(
        &self,
        input: Tensor<D>,
        f: impl FnOnce(&M, Tensor<D>) -> Tensor<E>,
    ) -> Result<Tensor<E>> {
        self.check("input", &input)?;
        let out = f(&self.inner, input);
        self.check("output", &out)?;
        Ok(out)
    }
}

struct ParamDevices {
    expected: Device,
    bad: Option<Device>,
}

impl ModuleVisitor for ParamDevices {
    fn visit_float<const D: usize>(&mut self, param: &Param<Tensor<D>>) {
        let got = param.val().device();
        if self.bad.is_none() && got != self.expected {
            self.bad = Some(got);
        }
    }
}
