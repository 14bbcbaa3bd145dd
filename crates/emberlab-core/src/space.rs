//! Observation and action spaces (Gymnasium's `Box` and `Discrete`).

use crate::error::{Error, Result};
use std::fmt;

/// A space of values, as in Gymnasium.
#[derive(Clone, Debug, PartialEq)]
pub enum Space {
    /// A box of real vectors with per-dimension bounds.
    Box(BoxSpace),
    /// The integers `0..n`.
    Discrete(Discrete),
}

/// A box `[low, high]` of `f32` vectors (bounds may be infinite).
#[derive(Clone, Debug, PartialEq)]
pub struct BoxSpace {
    low: Vec<f32>,
    high: Vec<f32>,
}

/// The integers `0..n`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct Discrete {
    n: usize,
}

impl BoxSpace {
    /// A box with the given bounds; errors if the lengths differ, a bound is NaN, or
    /// `low > high` somewhere.
    pub fn new(low: Vec<f32>, high: Vec<f32>) -> Result<Self> {
        Error::check_len("BoxSpace high", low.len(), high.len())?;
        for (i, (&l, &h)) in low.iter().zip(&high).enumerate() {
            if l.is_nan() || h.is_nan() || l > h {
                return Err(Error::invalid(
                    format!("BoxSpace bounds[{i}]"),
                    format!("[{l}, {h}]"),
                    "low <= high, neither NaN",
                ));
            }
        }
        Ok(BoxSpace { low, high })
    }

    /// A box of `dim` dimensions with the same bounds everywhere.
    pub fn uniform(dim: usize, low: f32, high: f32) -> Result<Self> {
        Self::new(vec![low; dim], vec![high; dim])
    }

    /// Number of dimensions.
    pub fn dim(&self) -> usize {
        self.low.len()
    }

    /// Lower bounds.
    pub fn low(&self) -> &[f32] {
        &self.low
    }

    /// Upper bounds.
    pub fn high(&self) -> &[f32] {
        &self.high
    }

    /// Whether `x` has the right length, no NaN, and lies within the bounds.
    pub fn contains(&self, x: &[f32]) -> bool {
        x.len() == self.dim()
            && x.iter()
                .zip(self.low.iter().zip(&self.high))
                .all(|(&v, (&l, &h))| !v.is_nan() && v >= l && v <= h)
    }

    /// Checks an action of this space: right length and no NaN (bounds are left to the
    /// environment, which clips where Gymnasium clips).
    pub fn check_action(&self, x: &[f32]) -> Result<()> {
        if x.len() != self.dim() || x.iter().any(|v| v.is_nan()) {
            return Err(Error::InvalidAction {
                action: format!("{x:?}"),
                space: self.to_string(),
            });
        }
        Ok(())
    }

    /// Clips `x` into the box in place.
    pub fn clip(&self, x: &mut [f32]) {
        for ((v, &l), &h) in x.iter_mut().zip(&self.low).zip(&self.high) {
            *v = v.clamp(l, h);
        }
    }
}

impl Discrete {
    /// The space `0..n`; `n` must be positive.
    pub fn new(n: usize) -> Result<Self> {
        if n == 0 {
            return Err(Error::invalid("Discrete n", n, ">= 1"));
        }
        Ok(Discrete { n })
    }

    /// Number of values.
    pub fn n(&self) -> usize {
        self.n
    }

    /// Whether `a` is in `0..n`.
    pub fn contains(&self, a: usize) -> bool {
        a < self.n
    }
}

impl Space {
    /// This space's box, for a learner that acts continuously; `who` names the learner in
    /// the error.
    ///
    /// # Errors
    /// [`Error::InvalidArgument`] when the space is discrete.
    pub fn as_box(&self, who: &str) -> Result<&BoxSpace> {
        match self {
            Space::Box(b) => Ok(b),
            Space::Discrete(_) => Err(Error::invalid(
                format!("{who} action space"),
                self,
                "a Box (continuous) space",
            )),
        }
    }

    /// Length of a flat `f32` vector holding one element (a discrete value takes one slot).
    pub fn flat_dim(&self) -> usize {
        match self {
            Space::Box(b) => b.dim(),
            Space::Discrete(_) => 1,
        }
    }
}

impl fmt::Display for BoxSpace {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Box(low={:?}, high={:?})", self.low, self.high)
    }
}

impl fmt::Display for Discrete {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(f, "Discrete({})", self.n)
    }
}

impl fmt::Display for Space {
    fn fmt(&self, f: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            Space::Box(b) => b.fmt(f),
            Space::Discrete(d) => d.fmt(f),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn box_bounds_checked() {
        assert!(BoxSpace::new(vec![0.0], vec![1.0, 2.0]).is_err());
        assert!(BoxSpace::new(vec![2.0], vec![1.0]).is_err());
        let b = BoxSpace::uniform(2, -1.0, 1.0).unwrap();
        assert!(b.contains(&[0.5, -1.0]));
        assert!(!b.contains(&[0.5, 1.5]));
        assert!(!b.contains(&[f32::NAN, 0.0]));
        assert!(b.check_action(&[2.0, 0.0]).is_ok());
        let e = b.check_action(&[0.0]).unwrap_err().to_string();
        assert!(e.contains("Box(low="), "{e}");
        let mut x = [2.0, -3.0];
        b.clip(&mut x);
        assert_eq!(x, [1.0, -1.0]);
    }

    #[test]
    fn discrete() {
        assert!(Discrete::new(0).is_err());
        let d = Discrete::new(3).unwrap();
        assert!(d.contains(2) && !d.contains(3));
        assert_eq!(Space::Discrete(d).flat_dim(), 1);
        assert_eq!(Space::Discrete(d).to_string(), "Discrete(3)");
    }
}
