//! [`conv2d`]: a 2-D convolution (NCHW, one group, no dilation, symmetric zero padding) on
//! flex, differentiable, with its own backward pass.
//!
//! burn's flex convolution runs at about a quarter of the GEMM's rate at the Nature CNN's
//! shapes (`cargo run --release -p emberlab-labs --bin conv_speed`). Two ways here:
//! - output channels a multiple of 16 and a CPU with AVX-512: the forward and the weight's
//!   gradient straight from the input (`conv_direct`), which the backward pass keeps
//!   instead of an unfolding;
//! - otherwise im2col and one product through the GEMM the dense layers use: the unfolded
//!   input `cols` (`[n · oh · ow, c · kh · kw]`, one row per output position) is built once,
//!   the forward product is `cols · Wᵀ`, and `cols` is kept for the backward pass:
//!   `dW = dYᵀ · cols`.
//!
//! Either way `dcols = dY · W` is scattered back into the input's gradient (col2im) only
//! when the input needs one, never for a network's first layer, and `db = Σ dY`.

// Without flex, `backend_extension` generates a dispatch with no backend to pass `t` to.
#![cfg_attr(not(feature = "flex"), allow(unused_variables))]

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind};
use burn::backend::{Autodiff, Backend, backend_extension, tensor::FloatTensor};
use burn::tensor::Tensor;

pub use crate::conv_shape::ConvShape;

/// A differentiable convolution; implemented for flex and autodiff over it.
#[backend_extension(Flex: cfg(feature = "flex"), Autodiff)]
pub trait HostConv: Backend {
    /// `y [n, o, oh, ow]` of `x [n, c, h, w]`, the weight `[o, c, kh, kw]` and the bias
    /// `[o]`, with strides `(sh, sw)` and zero paddings `(ph, pw)`.
    #[allow(clippy::too_many_arguments)]
    fn host_conv2d(
        x: FloatTensor<Self>,
        w: FloatTensor<Self>,
        b: FloatTensor<Self>,
        sh: usize,
        sw: usize,
        ph: usize,
        pw: usize,
    ) -> FloatTensor<Self>;
}

/// The steps of [`HostConv`] on a backend's own tensors (flex's), which the autodiff
/// implementation composes and differentiates.
pub trait HostConvSteps: Backend {
    /// The unfolded input `[n · oh · ow, c · kh · kw]` of `x` `[n, c, h, w]`: row
    /// `(n, oh, ow)` holds the patch that output position reads, zeros where it overlaps
    /// the padding.
    fn im2col(x: FloatTensor<Self>, s: &ConvShape) -> FloatTensor<Self>;

    /// `y [n, o, oh, ow]` from the unfolded input, the weight `[o, c, kh, kw]` and the bias
    /// `[o]`: `cols · Wᵀ + b`, laid out channels first.
    fn conv_cols(
        cols: FloatTensor<Self>,
        w: FloatTensor<Self>,
        b: FloatTensor<Self>,
        s: &ConvShape,
    ) -> FloatTensor<Self>;

    /// `y [n, o, oh, ow]` computed from `x` directly, without unfolding it, where this
    /// backend and CPU have such a kernel for the shape (on flex: output channels a multiple
    /// of 16, AVX-512); `None` otherwise, for [`Self::im2col`] and
    /// [`Self::conv_cols`] (the default: no such kernel).
    fn conv_direct(
        x: &FloatTensor<Self>,
        w: &FloatTensor<Self>,
        b: &FloatTensor<Self>,
        s: &ConvShape,
    ) -> Option<FloatTensor<Self>> {
        let _ = (x, w, b, s);
        None
    }

    /// The weight's gradient (shaped as `w`) and the bias's `[o]` from the output's
    /// gradient `dy [n, o, oh, ow]` and the unfolded input.
    fn conv_param_grads(
        cols: FloatTensor<Self>,
        w: &FloatTensor<Self>,
        dy: FloatTensor<Self>,
        s: &ConvShape,
    ) -> (FloatTensor<Self>, FloatTensor<Self>);

    /// The weight's and the bias's gradients as [`Self::conv_param_grads`], from the input
    /// `x` itself rather than its unfolding, where [`Self::conv_direct`] has a kernel for the
    /// shape; `None` otherwise (the default).
    fn conv_param_grads_direct(
        x: &FloatTensor<Self>,
        w: &FloatTensor<Self>,
        dy: FloatTensor<Self>,
        s: &ConvShape,
    ) -> Option<(FloatTensor<Self>, FloatTensor<Self>)> {
        let _ = (x, w, dy, s);
        None
    }

    /// The input's gradient `[n, c, h, w]`: `dY · W` folded back (col2im, overlapping
    /// patches summed).
    fn conv_input_grad(
        dy: FloatTensor<Self>,
        w: FloatTensor<Self>,
        s: &ConvShape,
    ) -> FloatTensor<Self>;
}

#[cfg(feature = "flex")]
mod flex {
    use super::{ConvShape, HostConv, HostConvSteps};
    use crate::conv_direct::Direct;
    use crate::host::with_values;
    use crate::product::{HostMatrix, host_product};
    use crate::scratch;
    use burn::backend::Flex;
    use burn::backend::flex::FlexTensor;
    use burn::tensor::{DType, TensorData};

    fn dims<const D: usize>(t: &FlexTensor) -> [usize; D] {
        let s = t.layout().shape();
        std::array::from_fn(|i| s[i])
    }

    fn shape_of(
        x: &FlexTensor,
        w: &FlexTensor,
        sh: usize,
        sw: usize,
        ph: usize,
        pw: usize,
    ) -> ConvShape {
        let [o, _, kh, kw] = dims::<4>(w);
        ConvShape {
            input: dims::<4>(x),
            out: o,
            kernel: [kh, kw],
            stride: [sh, sw],
            padding: [ph, pw],
        }
    }

    /// Keeps the buffer of a tensor nothing else holds (an unfolded input after its last
    /// use) for the next [`scratch::take`] on this thread.
    fn recycle(t: FlexTensor) {
        if !t.is_unique() || t.dtype() != DType::F32 {
            return;
        }
        let at = t.bytes().as_ptr();
        // Unique, contiguous tensors give their allocation back; anything else was copied,
        // and the copy is not worth keeping.
        if let Ok(v) = t.into_data().try_into_vec::<f32>()
            && v.as_ptr().cast::<u8>() == at
        {
            scratch::give(v);
        }
    }

    /// `dy [n, o, p]` as `[o, n · p]`: each channel's planes side by side (block copies).
    fn channels_first(dy: &[f32], n: usize, o: usize, p: usize) -> Vec<f32> {
        let mut out = scratch::take(n * o * p);
        for (b, sample) in dy.chunks_exact(o * p).enumerate() {
            for (ch, plane) in sample.chunks_exact(p).enumerate() {
                out[(ch * n + b) * p..(ch * n + b + 1) * p].copy_from_slice(plane);
            }
        }
        out
    }

    /// `op(dst[j], src[j])` along a kernel row: a few values, done inline for the common
    /// widths rather than through a loop of unknown length (or a `memmove` call for a copy:
    /// 20% of a forward under `perf`); the loops of constant length compile to a few vector
    /// instructions.
    #[inline(always)]
    fn run(dst: &mut [f32], src: &[f32], op: impl Fn(&mut f32, f32) + Copy) {
        debug_assert_eq!(dst.len(), src.len(), "a kernel row of another width");
        #[inline(always)]
        fn fixed<const K: usize>(dst: &mut [f32], src: &[f32], op: impl Fn(&mut f32, f32)) {
            let (d, s) = (&mut dst[..K], &src[..K]);
            for j in 0..K {
                op(&mut d[j], s[j]);
            }
        }
        match dst.len() {
            3 => fixed::<3>(dst, src, op),
            4 => fixed::<4>(dst, src, op),
            8 => fixed::<8>(dst, src, op),
            _ => dst.iter_mut().zip(src).for_each(|(d, &s)| op(d, s)),
        }
    }

    /// `dst = src` for a kernel row ([`run`]).
    #[inline(always)]
    fn copy_run(dst: &mut [f32], src: &[f32]) {
        run(dst, src, |d, s| *d = s);
    }

    /// `dst += src` for a kernel row ([`run`]).
    #[inline(always)]
    fn add_run(dst: &mut [f32], src: &[f32]) {
        run(dst, src, |d, s| *d += s);
    }

    /// col2im without padding, [`unpadded_im2col`]'s reverse: each kernel row of `dcols`
    /// is added to the run of `dx` it was read from.
    fn unpadded_col2im(dcols: &[f32], s: &ConvShape, dx: &mut [f32]) {
        let [_, c, h, w] = s.input;
        let [kh, kw] = s.kernel;
        let [sh, sw] = s.stride;
        let [oh, ow] = s.output().expect("checked by conv2d");
        let k = s.patch();
        for (r, row) in dcols.chunks_exact(k).enumerate() {
            let (b, q) = (r / (oh * ow), r % (oh * ow));
            let (y0, x0) = ((q / ow) * sh, (q % ow) * sw);
            for (ch, patch) in row.chunks_exact(kh * kw).enumerate() {
                let plane = &mut dx[(b * c + ch) * h * w..(b * c + ch + 1) * h * w];
                for (i, src) in patch.chunks_exact(kw).enumerate() {
                    let from = (y0 + i) * w + x0;
                    add_run(&mut plane[from..from + kw], src);
                }
            }
        }
    }

    /// im2col without padding: every kernel row lies inside the input, so each is one
    /// run copied from a computed offset, with no bounds to test.
    fn unpadded_im2col(x: &[f32], s: &ConvShape, cols: &mut [f32]) {
        let [_, c, h, w] = s.input;
        let [kh, kw] = s.kernel;
        let [sh, sw] = s.stride;
        let [oh, ow] = s.output().expect("checked by conv2d");
        let k = s.patch();
        for (r, row) in cols.chunks_exact_mut(k).enumerate() {
            let (b, q) = (r / (oh * ow), r % (oh * ow));
            let (y0, x0) = ((q / ow) * sh, (q % ow) * sw);
            for (ch, patch) in row.chunks_exact_mut(kh * kw).enumerate() {
                let plane = &x[(b * c + ch) * h * w..(b * c + ch + 1) * h * w];
                for (i, dst) in patch.chunks_exact_mut(kw).enumerate() {
                    let from = (y0 + i) * w + x0;
                    copy_run(dst, &plane[from..from + kw]);
                }
            }
        }
    }

    /// Calls `f(row, patch row)` for every output position's row of the unfolded input and
    /// every kernel row of every channel that lies inside the input: `(index of the input
    /// plane's row start, column where the kernel row starts (may be left of 0), offset of
    /// the kernel row in the patch)`.
    fn patches(s: &ConvShape, mut f: impl FnMut(usize, usize, isize, usize)) {
        let [n, c, h, w] = s.input;
        let [kh, kw] = s.kernel;
        let [oh, ow] = s.output().expect("checked by conv2d");
        for r in 0..n * oh * ow {
            let (b, q) = (r / (oh * ow), r % (oh * ow));
            let (y0, x0) = ((q / ow) * s.stride[0], (q % ow) * s.stride[1]);
            for ch in 0..c {
                for i in 0..kh {
                    let Some(iy) = (y0 + i).checked_sub(s.padding[0]).filter(|&y| y < h) else {
                        continue;
                    };
                    let start = ((b * c + ch) * h + iy) * w;
                    f(
                        r,
                        start,
                        x0 as isize - s.padding[1] as isize,
                        (ch * kh + i) * kw,
                    );
                }
            }
        }
    }

    /// Adds each channel's sum of `dy [n, o, p]` to `db [o]`.
    fn bias_grad(dy: &[f32], p: usize, db: &mut [f32]) {
        for sample in dy.chunks_exact(db.len() * p) {
            for (d, plane) in db.iter_mut().zip(sample.chunks_exact(p)) {
                *d += plane.iter().sum::<f32>();
            }
        }
    }

    impl HostConvSteps for Flex {
        fn im2col(x: FlexTensor, s: &ConvShape) -> FlexTensor {
            let [oh, ow] = s.output().expect("checked by conv2d");
            let (rows, k, kw, w) = (s.input[0] * oh * ow, s.patch(), s.kernel[1], s.input[3]);
            if s.padding == [0, 0] {
                // Every value is written: the buffer's old contents do not matter.
                let mut cols = scratch::take(rows * k);
                with_values(&x, |x| unpadded_im2col(x, s, &mut cols));
                return FlexTensor::from_data(TensorData::new(cols, [rows, k]));
            }
            let mut cols = scratch::take_zeroed(rows * k);
            with_values(&x, |x| {
                patches(s, |r, start, x0, at| {
                    let dst = &mut cols[r * k + at..r * k + at + kw];
                    if x0 >= 0 && x0 as usize + kw <= w {
                        let from = start + x0 as usize;
                        copy_run(dst, &x[from..from + kw]);
                    } else {
                        for (j, d) in dst.iter_mut().enumerate() {
                            let ix = x0 + j as isize;
                            if ix >= 0 && (ix as usize) < w {
                                *d = x[start + ix as usize];
                            }
                        }
                    }
                })
            });
            FlexTensor::from_data(TensorData::new(cols, [rows, k]))
        }

        fn conv_cols(cols: FlexTensor, w: FlexTensor, b: FlexTensor, s: &ConvShape) -> FlexTensor {
            let [oh, ow] = s.output().expect("checked by conv2d");
            let (n, o, k, p) = (s.input[0], s.out, s.patch(), oh * ow);
            // `[n · p, o]` = cols · Wᵀ (faster here than W · colsᵀ, whose strided right
            // side the GEMM packs more slowly), then each sample's rows turned into planes.
            let mut prod = scratch::take(n * p * o);
            with_values(&cols, |cv| {
                with_values(&w, |wv| {
                    host_product(
                        HostMatrix::row_major(cv, n * p, k),
                        HostMatrix::row_major(wv, o, k).t(),
                        &mut prod,
                    )
                })
            });
            // Without autodiff (acting, evaluation) this was the unfolded input's last use.
            recycle(cols);
            let mut y = vec![0.0f32; n * o * p];
            with_values(&b, |bias| {
                for (src, dst) in prod.chunks_exact(p * o).zip(y.chunks_exact_mut(o * p)) {
                    for (ch, plane) in dst.chunks_exact_mut(p).enumerate() {
                        for (q, v) in plane.iter_mut().enumerate() {
                            *v = src[q * o + ch] + bias[ch];
                        }
                    }
                }
            });
            scratch::give(prod);
            FlexTensor::from_data(TensorData::new(y, [n, o, oh, ow]))
        }

        fn conv_direct(
            x: &FlexTensor,
            w: &FlexTensor,
            b: &FlexTensor,
            s: &ConvShape,
        ) -> Option<FlexTensor> {
            let direct = Direct::of(s)?;
            let [oh, ow] = s.output()?;
            let (n, o) = (s.input[0], s.out);
            let mut y = vec![0.0f32; n * o * oh * ow];
            with_values(x, |xv| {
                with_values(w, |wv| {
                    with_values(b, |bv| direct.forward(xv, wv, bv, &mut y))
                })
            });
            Some(FlexTensor::from_data(TensorData::new(y, [n, o, oh, ow])))
        }

        fn conv_param_grads(
            cols: FlexTensor,
            w: &FlexTensor,
            dy: FlexTensor,
            s: &ConvShape,
        ) -> (FlexTensor, FlexTensor) {
            let [oh, ow] = s.output().expect("checked by conv2d");
            let (n, o, k, p) = (s.input[0], s.out, s.patch(), oh * ow);
            let mut dw = vec![0.0f32; o * k];
            let mut db = vec![0.0f32; o];
            with_values(&dy, |g| {
                let g_cf = channels_first(g, n, o, p);
                with_values(&cols, |cv| {
                    host_product(
                        HostMatrix::row_major(&g_cf, o, n * p),
                        HostMatrix::row_major(cv, n * p, k),
                        &mut dw,
                    )
                });
                bias_grad(g, p, &mut db);
                scratch::give(g_cf);
            });
            recycle(cols);
            (
                FlexTensor::from_data(TensorData::new(dw, w.layout().shape().clone())),
                FlexTensor::from_data(TensorData::new(db, [o])),
            )
        }

        fn conv_param_grads_direct(
            x: &FlexTensor,
            w: &FlexTensor,
            dy: FlexTensor,
            s: &ConvShape,
        ) -> Option<(FlexTensor, FlexTensor)> {
            let direct = Direct::of(s)?;
            let [oh, ow] = s.output()?;
            let (o, k, p) = (s.out, s.patch(), oh * ow);
            let mut dw = vec![0.0f32; o * k];
            let mut db = vec![0.0f32; o];
            with_values(&dy, |g| {
                bias_grad(g, p, &mut db);
                with_values(x, |xv| direct.weight_grad(xv, g, &mut dw))
            });
            Some((
                FlexTensor::from_data(TensorData::new(dw, w.layout().shape().clone())),
                FlexTensor::from_data(TensorData::new(db, [o])),
            ))
        }

        fn conv_input_grad(dy: FlexTensor, w: FlexTensor, s: &ConvShape) -> FlexTensor {
            let [oh, ow] = s.output().expect("checked by conv2d");
            let (n, o, k, p) = (s.input[0], s.out, s.patch(), oh * ow);
            let (kw, width) = (s.kernel[1], s.input[3]);
            let mut dcols = scratch::take(n * p * k);
            with_values(&dy, |g| {
                let g_cf = channels_first(g, n, o, p);
                with_values(&w, |wv| {
                    host_product(
                        HostMatrix::row_major(&g_cf, o, n * p).t(),
                        HostMatrix::row_major(wv, o, k),
                        &mut dcols,
                    )
                });
                scratch::give(g_cf);
            });
            let mut dx = vec![0.0f32; s.input.iter().product()];
            if s.padding == [0, 0] {
                unpadded_col2im(&dcols, s, &mut dx);
                scratch::give(dcols);
                return FlexTensor::from_data(TensorData::new(dx, s.input));
            }
            patches(s, |r, start, x0, at| {
                let src = &dcols[r * k + at..r * k + at + kw];
                for (j, &v) in src.iter().enumerate() {
                    let ix = x0 + j as isize;
                    if ix >= 0 && (ix as usize) < width {
                        dx[start + ix as usize] += v;
                    }
                }
            });
            scratch::give(dcols);
            FlexTensor::from_data(TensorData::new(dx, s.input))
        }
    }

    impl HostConv for Flex {
        fn host_conv2d(
            x: FlexTensor,
            w: FlexTensor,
            b: FlexTensor,
            sh: usize,
            sw: usize,
            ph: usize,
            pw: usize,
        ) -> FlexTensor {
            let s = shape_of(&x, &w, sh, sw, ph, pw);
            if let Some(y) = Flex::conv_direct(&x, &w, &b, &s) {
                return y;
            }
            let cols = Flex::im2col(x, &s);
            Flex::conv_cols(cols, w, b, &s)
        }
    }
}

impl<B: Backend + HostConvSteps, C: CheckpointStrategy> HostConv for Autodiff<B, C> {
    fn host_conv2d(
        x: FloatTensor<Self>,
        w: FloatTensor<Self>,
        b: FloatTensor<Self>,
        sh: usize,
        sw: usize,
        ph: usize,
        pw: usize,
    ) -> FloatTensor<Self> {
        #[derive(Debug)]
        struct ConvBackward;

        /// What the forward keeps for the weight's gradient: the unfolded input, or the
        /// input itself when the forward did not unfold it (then the backward does).
        #[derive(Clone, Debug)]
        enum Saved<T> {
            Cols(T),
            Input(T),
        }

        impl<B: Backend + HostConvSteps> Backward<B, 3> for ConvBackward {
            /// The unfolded input (or the input), the weight and the geometry.
            type State = (Saved<FloatTensor<B>>, FloatTensor<B>, ConvShape);

            fn backward(
                self,
                ops: Ops<Self::State, 3>,
                grads: &mut Gradients,
                _checkpointer: &mut Checkpointer,
            ) {
                let (saved, w, s) = ops.state;
                let dy = grads.consume::<B>(&ops.node);
                let [input, weight, bias] = ops.parents;
                if weight.is_some() || bias.is_some() {
                    let (dw, db) = match saved {
                        Saved::Cols(cols) => B::conv_param_grads(cols, &w, dy.clone(), &s),
                        Saved::Input(x) => B::conv_param_grads_direct(&x, &w, dy.clone(), &s)
                            .unwrap_or_else(|| {
                                B::conv_param_grads(B::im2col(x, &s), &w, dy.clone(), &s)
                            }),
                    };
                    if let Some(node) = weight {
                        grads.register::<B>(node.id, dw);
                    }
                    if let Some(node) = bias {
                        grads.register::<B>(node.id, db);
                    }
                }
                if let Some(node) = input {
                    grads.register::<B>(node.id, B::conv_input_grad(dy, w, &s));
                }
            }
        }

        use burn::backend::TensorMetadata as _;
        let (xs, ws) = (x.shape(), w.shape());
        let s = ConvShape {
            input: [xs[0], xs[1], xs[2], xs[3]],
            out: ws[0],
            kernel: [ws[2], ws[3]],
            stride: [sh, sw],
            padding: [ph, pw],
        };
        let nodes = [x.node(), w.node(), b.node()];
        let (x, w, b) = (x.into_primitive(), w.into_primitive(), b.into_primitive());
        let direct = B::conv_direct(&x, &w, &b, &s);
        match ConvBackward.prepare::<C>(nodes).compute_bound().stateful() {
            OpsKind::Tracked(prep) => match direct {
                Some(y) => prep.finish((Saved::Input(x), w, s), y),
                None => {
                    let cols = B::im2col(x, &s);
                    let y = B::conv_cols(cols.clone(), w.clone(), b, &s);
                    prep.finish((Saved::Cols(cols), w, s), y)
                }
            },
            OpsKind::UnTracked(prep) => {
                prep.finish(direct.unwrap_or_else(|| B::conv_cols(B::im2col(x, &s), w, b, &s)))
            }
        }
    }
}

/// A 2-D convolution of `x` `[n, c, h, w]` with `weight` `[o, c, kh, kw]` and an optional
/// `bias` `[o]`: one group, no dilation, `padding` zeros on each side. Differentiable; on
/// flex straight from the input or as im2col and the GEMM (module docs), burn's `conv2d`
/// elsewhere.
///
/// # Panics
/// Shapes that do not agree, or a kernel larger than the padded input (as burn's).
pub fn conv2d(
    x: Tensor<4>,
    weight: Tensor<4>,
    bias: Option<Tensor<1>>,
    stride: [usize; 2],
    padding: [usize; 2],
) -> Tensor<4> {
    let [n, c, h, w] = x.dims();
    let [o, wc, kh, kw] = weight.dims();
    assert_eq!(c, wc, "conv2d: {c} input channels, a weight for {wc}");
    let shape = ConvShape {
        input: [n, c, h, w],
        out: o,
        kernel: [kh, kw],
        stride,
        padding,
    };
    assert!(
        shape.output().is_some(),
        "conv2d: a {kh}×{kw} kernel over {h}×{w} padded by {padding:?} with stride {stride:?}"
    );
    #[cfg(feature = "flex")]
    if x.device().inner() == burn::tensor::Device::flex() && n > 0 && o > 0 && c > 0 {
        let bias = bias.unwrap_or_else(|| Tensor::zeros([o], &x.device()));
        let out = <burn::backend::Dispatch as HostConv>::host_conv2d(
            x.into_dispatch(),
            weight.into_dispatch(),
            bias.into_dispatch(),
            stride[0],
            stride[1],
            padding[0],
            padding[1],
        );
        return Tensor::from_dispatch(out);
    }
    let options = burn::tensor::ops::ConvOptions::new(stride, padding, [1, 1], 1);
    burn::tensor::module::conv2d(x, weight, bias, options)
}
