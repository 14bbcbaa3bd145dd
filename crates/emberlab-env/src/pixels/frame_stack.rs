//! [`FrameStack`]: the last `k` frames of an image environment as one observation, as
//! Stable-Baselines3's `VecFrameStack` builds it (zeros before an episode's first frame,
//! oldest frame first): frames one after another, so channels-first frames `[c, h, w]`
//! give `[k · c, h, w]`, as `VecTransposeImage` gives PyTorch's convolutions.

use emberlab_core::{Error, Result};

/// The last `k` frames of `frame_len` bytes each (module docs).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FrameStack {
    frame_len: usize,
    data: Vec<u8>,
}

impl FrameStack {
    /// A stack of `k` frames of `frame_len` bytes, all zero.
    ///
    /// # Errors
    /// A zero size, or one too large to address.
    pub fn new(k: usize, frame_len: usize) -> Result<Self> {
        if k == 0 || frame_len == 0 || k.checked_mul(frame_len).is_none() {
            return Err(Error::invalid(
                "frame stack",
                format!("{k} frames of {frame_len} bytes"),
                "at least one frame of at least one byte",
            ));
        }
        Ok(FrameStack {
            frame_len,
            data: vec![0; k * frame_len],
        })
    }

    /// Starts an episode: zeros, then `frame` as the newest.
    ///
    /// # Errors
    /// A frame of the wrong size.
    pub fn reset(&mut self, frame: &[u8]) -> Result<&[u8]> {
        Error::check_len("frame", self.frame_len, frame.len())?;
        restart(&mut self.data, frame);
        Ok(&self.data)
    }

    /// Adds `frame` as the newest, dropping the oldest.
    ///
    /// # Errors
    /// A frame of the wrong size.
    pub fn push(&mut self, frame: &[u8]) -> Result<&[u8]> {
        Error::check_len("frame", self.frame_len, frame.len())?;
        shift_in(&mut self.data, frame);
        Ok(&self.data)
    }

    /// The stacked observation, oldest frame first.
    pub fn obs(&self) -> &[u8] {
        &self.data
    }
}

/// Drops the oldest frame of `stack` and appends `frame` (of the stack's frame length).
pub(crate) fn shift_in(stack: &mut [u8], frame: &[u8]) {
    let start = stack.len() - frame.len();
    stack.copy_within(frame.len().., 0);
    stack[start..].copy_from_slice(frame);
}

/// Zeros `stack`, then `frame` as its newest: an episode's first observation.
pub(crate) fn restart(stack: &mut [u8], frame: &[u8]) {
    let start = stack.len() - frame.len();
    stack[..start].fill(0);
    stack[start..].copy_from_slice(frame);
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn zeros_then_oldest_first() {
        let mut s = FrameStack::new(3, 2).unwrap();
        assert_eq!(s.reset(&[1, 1]).unwrap(), [0, 0, 0, 0, 1, 1]);
        assert_eq!(s.push(&[2, 2]).unwrap(), [0, 0, 1, 1, 2, 2]);
        assert_eq!(s.push(&[3, 3]).unwrap(), [1, 1, 2, 2, 3, 3]);
        assert_eq!(s.push(&[4, 4]).unwrap(), [2, 2, 3, 3, 4, 4]);
        assert_eq!(s.reset(&[5, 5]).unwrap(), [0, 0, 0, 0, 5, 5]);
        assert!(s.push(&[1]).is_err());
        assert!(FrameStack::new(0, 4).is_err());
    }
}
