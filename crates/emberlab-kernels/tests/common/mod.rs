//! Shared by the activation tests.

use burn::tensor::Device;

/// Every host backend this build has (flex, ndarray).
pub fn devices() -> Vec<Device> {
    let found = ["flex", "ndarray"]
        .iter()
        .filter_map(|s| {
            s.parse::<emberlab_backend::DeviceSpec>()
                .ok()?
                .device()
                .ok()
        })
        .collect::<Vec<_>>();
    assert!(!found.is_empty(), "no host backend in this build");
    found
}
