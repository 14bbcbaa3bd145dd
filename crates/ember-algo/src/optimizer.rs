//! Optimizers as the algorithms' configs name them, built once here.

use burn::optim::grad_clipping::GradientClippingConfig;
use burn::optim::{AdamConfig, ModuleOptimizer, RmsPropConfig};
use serde::{Deserialize, Serialize};

/// Which optimizer an algorithm uses.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum OptimizerKind {
    /// Adam with PyTorch's defaults (β = (0.9, 0.999), ε = 1e-8).
    #[default]
    Adam,
    /// RMSprop as SB3's A2C uses it (α = 0.99, ε = 1e-5, no momentum).
    RmsProp,
}

impl OptimizerKind {
    /// The optimizer, clipping the gradient's global norm to `max_grad_norm` when it is
    /// positive.
    pub fn build(self, max_grad_norm: f64) -> ModuleOptimizer {
        let clip =
            (max_grad_norm > 0.0).then_some(GradientClippingConfig::Norm(max_grad_norm as f32));
        match self {
            OptimizerKind::Adam => AdamConfig::new()
                .with_epsilon(1e-8)
                .with_grad_clipping(clip)
                .init(),
            OptimizerKind::RmsProp => RmsPropConfig::new()
                .with_alpha(0.99)
                .with_epsilon(1e-5)
                .with_momentum(0.0)
                .with_grad_clipping(clip)
                .init(),
        }
    }
}
