//! [`ConvShape`]: the geometry of one convolution, shared by [`conv2d`](crate::conv2d)'s
//! two ways of computing it.

/// The geometry of one convolution: input `[n, c, h, w]`, kernel `kh × kw`, strides and
/// paddings, output `[n, o, oh, ow]`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ConvShape {
    /// Batch, channels, height, width of the input.
    pub input: [usize; 4],
    /// Output channels.
    pub out: usize,
    /// Kernel height and width.
    pub kernel: [usize; 2],
    /// Strides along height and width.
    pub stride: [usize; 2],
    /// Zero padding on each side along height and width.
    pub padding: [usize; 2],
}

impl ConvShape {
    /// Output height and width; `None` when the kernel does not fit the padded input or a
    /// stride is zero.
    pub fn output(&self) -> Option<[usize; 2]> {
        let [_, _, h, w] = self.input;
        let side = |x: usize, k: usize, s: usize, p: usize| {
            let padded = x + 2 * p;
            (s > 0 && k > 0 && padded >= k).then(|| (padded - k) / s + 1)
        };
        Some([
            side(h, self.kernel[0], self.stride[0], self.padding[0])?,
            side(w, self.kernel[1], self.stride[1], self.padding[1])?,
        ])
    }

    /// Columns of the unfolded input: `c · kh · kw`.
    pub fn patch(&self) -> usize {
        self.input[1] * self.kernel[0] * self.kernel[1]
    }
}
