//! Exploration schedules.

use serde::{Deserialize, Serialize};

/// A value going linearly from `start` to `end` over the first `fraction` of training, then
/// staying at `end` (SB3's ε schedule).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
#[serde(deny_unknown_fields)]
pub struct LinearSchedule {
    /// Value at progress 0.
    pub start: f64,
    /// Value from progress `fraction` on.
    pub end: f64,
    /// Share of training over which the value moves, in `[0, 1]`.
    pub fraction: f64,
}

impl LinearSchedule {
    /// The value at `progress` (share of training done, clamped to `[0, 1]`).
    pub fn value(&self, progress: f64) -> f64 {
        if self.fraction <= 0.0 {
            return self.end;
        }
        let p = (progress.clamp(0.0, 1.0) / self.fraction).min(1.0);
        self.start + (self.end - self.start) * p
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn moves_linearly_then_holds() {
        let s = LinearSchedule {
            start: 1.0,
            end: 0.1,
            fraction: 0.5,
        };
        assert_eq!(s.value(0.0), 1.0);
        assert!((s.value(0.25) - 0.55).abs() < 1e-12);
        assert!((s.value(0.5) - 0.1).abs() < 1e-12);
        assert!((s.value(0.9) - 0.1).abs() < 1e-12);
        let instant = LinearSchedule { fraction: 0.0, ..s };
        assert_eq!(instant.value(0.0), 0.1);
    }
}
