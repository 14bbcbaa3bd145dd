//! [`DeviceSpec`]: a backend and device named by a string, checked against the build.

use burn::tensor::Device;
use emberlab_core::{Error, Result};
use std::fmt;
use std::str::FromStr;

/// The backends Ember knows, whether or not this build compiled them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Backend {
    /// burn's pure-Rust CPU backend (the default, fastest here for RL-sized nets).
    Flex,
    /// burn's ndarray CPU backend (deprecated upstream, kept for comparison).
    NdArray,
    /// libtorch through `burn-tch`, on CPU or CUDA.
    Tch,
    /// CubeCL's CUDA backend.
    Cuda,
}

impl Backend {
    /// Every backend, in the order they are listed to users.
    pub const ALL: [Backend; 4] = [Backend::Flex, Backend::NdArray, Backend::Tch, Backend::Cuda];

    /// The cargo feature of `emberlab-backend` that compiles this backend.
    pub fn feature(self) -> &'static str {
        match self {
            Backend::Flex => "flex",
            Backend::NdArray => "ndarray",
            Backend::Tch => "tch",
            Backend::Cuda => "cuda",
        }
    }

    /// Whether this build compiled the backend.
    pub fn is_compiled(self) -> bool {
        match self {
            Backend::Flex => cfg!(feature = "flex"),
            Backend::NdArray => cfg!(feature = "ndarray"),
            Backend::Tch => cfg!(feature = "tch"),
            Backend::Cuda => cfg!(feature = "cuda"),
        }
    }
}

/// Where tensors live: a backend and, for GPU backends, a device index.
///
/// Parsed from `flex`, `ndarray`, `tch:cpu`, `tch:cuda:N` and `cuda:N` (case-insensitive;
/// `tch` alone means `tch:cpu`, `cuda` alone `cuda:0`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum DeviceSpec {
    /// `flex`
    Flex,
    /// `ndarray`
    NdArray,
    /// `tch:cpu`
    TchCpu,
    /// `tch:cuda:N`
    TchCuda(usize),
    /// `cuda:N`
    Cuda(usize),
}

const FORMS: &str = "one of `flex`, `ndarray`, `tch:cpu`, `tch:cuda:N`, `cuda:N`";

impl FromStr for DeviceSpec {
    type Err = Error;

    fn from_str(s: &str) -> Result<Self> {
        let lower = s.trim().to_ascii_lowercase();
        let parts: Vec<&str> = lower.split(':').collect();
        let index = |p: &str| {
            p.parse::<usize>().map_err(|_| {
                Error::invalid(
                    "device index",
                    format!("`{p}` in `{s}`"),
                    "a non-negative integer",
                )
            })
        };
        match parts.as_slice() {
            ["flex"] => Ok(DeviceSpec::Flex),
            ["ndarray"] => Ok(DeviceSpec::NdArray),
            ["tch"] | ["tch", "cpu"] => Ok(DeviceSpec::TchCpu),
            ["tch", "cuda"] => Ok(DeviceSpec::TchCuda(0)),
            ["tch", "cuda", n] => Ok(DeviceSpec::TchCuda(index(n)?)),
            ["cuda"] => Ok(DeviceSpec::Cuda(0)),
            ["cuda", n] => Ok(DeviceSpec::Cuda(index(n)?)),
            _ => Err(Error::invalid("device", format!("`{s}`"), FORMS)),
        }
    }
}

impl fmt::Display for DeviceSpec {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DeviceSpec::Flex => write!(f, "flex"),
            DeviceSpec::NdArray => write!(f, "ndarray"),
            DeviceSpec::TchCpu => write!(f, "tch:cpu"),
            DeviceSpec::TchCuda(n) => write!(f, "tch:cuda:{n}"),
            DeviceSpec::Cuda(n) => write!(f, "cuda:{n}"),
        }
    }
}

impl DeviceSpec {
    /// The backend this spec runs on.
    pub fn backend(self) -> Backend {
        match self {
            DeviceSpec::Flex => Backend::Flex,
            DeviceSpec::NdArray => Backend::NdArray,
            DeviceSpec::TchCpu | DeviceSpec::TchCuda(_) => Backend::Tch,
            DeviceSpec::Cuda(_) => Backend::Cuda,
        }
    }

    /// How many threads to split a large inference batch over on this device
    /// (`GaussianTanhPolicyConfig::with_row_threads`): the CPU's cores for flex and ndarray,
    /// whose matmuls run on the calling thread; 1 for libtorch, which threads (or runs on
    /// the GPU) by itself, and for CubeCL devices.
    pub fn inference_threads(self) -> usize {
        match self {
            DeviceSpec::Flex | DeviceSpec::NdArray => {
                std::thread::available_parallelism().map_or(1, |n| n.get())
            }
            DeviceSpec::TchCpu | DeviceSpec::TchCuda(_) | DeviceSpec::Cuda(_) => 1,
        }
    }

    /// Whether tensors on this device live in GPU memory.
    pub fn is_gpu(self) -> bool {
        matches!(self, DeviceSpec::TchCuda(_) | DeviceSpec::Cuda(_))
    }

    /// The CPU devices compiled into this build (what the conformance suite runs on when
    /// no GPU is asked for).
    pub fn compiled_cpu() -> Vec<DeviceSpec> {
        [DeviceSpec::Flex, DeviceSpec::NdArray, DeviceSpec::TchCpu]
            .into_iter()
            .filter(|d| d.backend().is_compiled())
            .collect()
    }

    /// [`DeviceSpec::compiled_cpu`] followed by the comma-separated specs in `extra` that
    /// are not among them yet (e.g. `"tch:cuda:0"`: the devices a test suite or bench runs
    /// on, `extra` from an environment variable). Empty entries are skipped.
    ///
    /// # Errors
    /// An entry that is not a device spec (the error names it).
    pub fn compiled_cpu_and(extra: &str) -> Result<Vec<DeviceSpec>> {
        let mut specs = DeviceSpec::compiled_cpu();
        for s in extra.split(',').filter(|s| !s.trim().is_empty()) {
            let spec: DeviceSpec = s.parse()?;
            if !specs.contains(&spec) {
                specs.push(spec);
            }
        }
        Ok(specs)
    }

    /// The inference device (no autodiff). Errors name the feature to enable when the
    /// backend is not compiled, and say so when the CUDA device does not exist.
    pub fn device(self) -> Result<Device> {
        let backend = self.backend();
        if !backend.is_compiled() {
            return Err(Error::Unavailable {
                what: format!("device `{self}`"),
                hint: format!(
                    "backend `{}` is not compiled into this build; rebuild with `--features {}`{}",
                    backend.feature(),
                    backend.feature(),
                    if backend == Backend::Tch {
                        " after `scripts/setup-libtorch.sh > /tmp/torch.env && . /tmp/torch.env`"
                    } else {
                        ""
                    }
                ),
            });
        }
        self.make()
    }

    /// The training device: [`DeviceSpec::device`] with autodiff enabled.
    pub fn autodiff_device(self) -> Result<Device> {
        Ok(self.device()?.autodiff())
    }

    #[allow(deprecated)] // ndarray and tch are deprecated upstream; we keep them on request
    fn make(self) -> Result<Device> {
        match self {
            #[cfg(feature = "flex")]
            DeviceSpec::Flex => Ok(Device::flex()),
            #[cfg(feature = "ndarray")]
            DeviceSpec::NdArray => Ok(Device::ndarray()),
            #[cfg(feature = "tch")]
            DeviceSpec::TchCpu => Ok(Device::libtorch()),
            #[cfg(feature = "tch")]
            DeviceSpec::TchCuda(n) => {
                let count = tch::Cuda::device_count().max(0) as usize;
                if n >= count {
                    return Err(Error::Unavailable {
                        what: format!("device `{self}`"),
                        hint: format!("libtorch sees {count} CUDA device(s) on this machine"),
                    });
                }
                Ok(Device::libtorch_cuda(n))
            }
            #[cfg(feature = "cuda")]
            DeviceSpec::Cuda(n) => Ok(Device::cuda(n)),
            #[allow(unreachable_patterns)]
            _ => unreachable!("checked by `device`"),
        }
    }
}

/// Whether `device` (with or without autodiff) is flex or ndarray: tensors in host memory,
/// kernels on the calling thread. Host-side fused kernels (emberlab-algo's fused Adam) pay off
/// only there; on libtorch or a GPU they would copy every parameter to the host and back.
#[allow(deprecated)] // ndarray is deprecated upstream; we keep it on request
pub fn is_host_cpu(device: &Device) -> bool {
    let inner = device.clone().inner();
    #[cfg(feature = "flex")]
    if inner == Device::flex() {
        return true;
    }
    #[cfg(feature = "ndarray")]
    if inner == Device::ndarray() {
        return true;
    }
    let _ = inner;
    false
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn parses_every_form() {
        let cases = [
            ("flex", DeviceSpec::Flex),
            ("NdArray", DeviceSpec::NdArray),
            ("tch", DeviceSpec::TchCpu),
            ("tch:cpu", DeviceSpec::TchCpu),
            ("tch:cuda:1", DeviceSpec::TchCuda(1)),
            ("tch:cuda", DeviceSpec::TchCuda(0)),
            ("cuda:0", DeviceSpec::Cuda(0)),
            (" cuda ", DeviceSpec::Cuda(0)),
        ];
        for (s, want) in cases {
            assert_eq!(s.parse::<DeviceSpec>().unwrap(), want, "{s}");
        }
        for spec in [
            DeviceSpec::Flex,
            DeviceSpec::TchCuda(3),
            DeviceSpec::Cuda(2),
        ] {
            assert_eq!(spec.to_string().parse::<DeviceSpec>().unwrap(), spec);
        }
    }

    #[test]
    fn typos_are_named() {
        let e = "flx".parse::<DeviceSpec>().unwrap_err().to_string();
        assert!(e.contains("`flx`") && e.contains("tch:cuda:N"), "{e}");
        let e = "cuda:x".parse::<DeviceSpec>().unwrap_err().to_string();
        assert!(e.contains("`x`"), "{e}");
        assert!("tch:gpu".parse::<DeviceSpec>().is_err());
    }

    #[test]
    fn extra_devices_follow_the_compiled_ones_once() {
        let cpu = DeviceSpec::compiled_cpu();
        assert_eq!(DeviceSpec::compiled_cpu_and("").unwrap(), cpu);
        let specs = DeviceSpec::compiled_cpu_and("tch:cuda:0, ,flex,tch:cuda:0,cuda:1").unwrap();
        let mut want = cpu.clone();
        if !want.contains(&DeviceSpec::Flex) {
            want.push(DeviceSpec::Flex);
        }
        want.extend([DeviceSpec::TchCuda(0), DeviceSpec::Cuda(1)]);
        assert_eq!(specs, want);
        let e = DeviceSpec::compiled_cpu_and("flex,flx")
            .unwrap_err()
            .to_string();
        assert!(e.contains("`flx`"), "{e}");
    }

    #[test]
    fn uncompiled_backends_say_which_feature() {
        for spec in [
            DeviceSpec::TchCpu,
            DeviceSpec::Cuda(0),
            DeviceSpec::NdArray,
            DeviceSpec::Flex,
        ] {
            let backend = spec.backend();
            match spec.device() {
                Ok(_) => assert!(backend.is_compiled()),
                Err(e) => {
                    assert!(!backend.is_compiled());
                    assert!(
                        e.to_string()
                            .contains(&format!("--features {}", backend.feature())),
                        "{e}"
                    );
                }
            }
        }
        assert!(DeviceSpec::compiled_cpu().contains(&DeviceSpec::Flex));
    }

    #[test]
    fn host_devices_are_flex_and_ndarray_with_or_without_autodiff() {
        for spec in DeviceSpec::compiled_cpu() {
            let host = !matches!(spec, DeviceSpec::TchCpu);
            assert_eq!(is_host_cpu(&spec.device().unwrap()), host, "{spec}");
            assert_eq!(
                is_host_cpu(&spec.autodiff_device().unwrap()),
                host,
                "{spec}"
            );
        }
    }
}
