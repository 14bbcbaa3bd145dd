//! The image encoders ([`NatureCnn`], [`ImpalaCnn`]) as ONNX: `Conv`, `MaxPool`, `Relu`,
//! `Add`, `Flatten` and `Gemm` nodes with the encoders' weights, reading the float32 images
//! [`OnnxGraph::images_to_unit`] makes of uint8 frames.

use crate::onnx::{linear_onnx, values};
use crate::{ImpalaCnn, NatureCnn, OnnxGraph, PixelEncoder};
use burn::nn::PaddingConfig2d;
use burn::nn::conv::Conv2d;
use burn::nn::pool::MaxPool2d;
use emberlab_core::{Error, Result};

/// Padding as ONNX's `pads` (top, left, bottom, right).
///
/// # Errors
/// `Same` padding, which the encoders never use and ONNX would compute differently.
fn pads(padding: &PaddingConfig2d) -> Result<[usize; 4]> {
    match padding {
        PaddingConfig2d::Valid => Ok([0; 4]),
        &PaddingConfig2d::Explicit(top, left, bottom, right) => Ok([top, left, bottom, right]),
        other => Err(Error::Unavailable {
            what: format!("ONNX export of {other:?} padding"),
            hint: "encoders with explicit or no padding export".into(),
        }),
    }
}

/// `conv` applied to `x` as an ONNX `Conv`.
fn conv_onnx(g: &mut OnnxGraph, conv: &Conv2d, x: &str, prefix: &str) -> Result<String> {
    let bias = conv.bias.as_ref().map(|b| values(b.val()));
    g.conv(
        x,
        prefix,
        (&values(conv.weight.val()), conv.weight.dims()),
        bias.as_deref(),
        conv.stride,
        pads(&conv.padding)?,
        conv.dilation,
        conv.groups,
    )
}

/// `pool` applied to `x` as an ONNX `MaxPool`.
///
/// # Errors
/// `Same` padding, or `ceil_mode` (onnxruntime and burn may place the last window
/// differently; the encoders never round up).
fn max_pool_onnx(g: &mut OnnxGraph, pool: &MaxPool2d, x: &str) -> Result<String> {
    if pool.ceil_mode {
        return Err(Error::Unavailable {
            what: "ONNX export of a max-pool rounding its size up".into(),
            hint: "encoders whose max-pools round down export".into(),
        });
    }
    let pads = pads(&pool.padding)?;
    Ok(g.max_pool(x, pool.kernel_size, pool.stride, pads, pool.dilation, false))
}

impl NatureCnn {
    /// Appends this encoder applied to float32 images `[batch, c, h, w]` `x` (values in
    /// `[0, 1]`); returns the features' name (`[batch, features]`).
    ///
    /// # Errors
    /// Non-finite weights, or layers ONNX would compute differently (`Same` padding, a
    /// max-pool rounding its size up).
    pub fn to_onnx(&self, g: &mut OnnxGraph, x: &str) -> Result<String> {
        let mut x = x.to_string();
        for (i, conv) in self.convs.iter().enumerate() {
            let y = conv_onnx(g, conv, &x, &format!("nature_conv{i}"))?;
            x = g.op("Relu", &[&y], vec![]);
        }
        let flat = g.flatten(&x);
        let features = linear_onnx(g, &self.fc, &flat, "nature_fc")?;
        Ok(g.op("Relu", &[&features], vec![]))
    }
}

impl ImpalaCnn {
    /// Appends this encoder applied to float32 images `[batch, c, h, w]` `x` (values in
    /// `[0, 1]`); returns the features' name (`[batch, features]`).
    ///
    /// # Errors
    /// Non-finite weights, or layers ONNX would compute differently (`Same` padding, a
    /// max-pool rounding its size up).
    pub fn to_onnx(&self, g: &mut OnnxGraph, x: &str) -> Result<String> {
        let mut x = x.to_string();
        for (s, stage) in self.stages.iter().enumerate() {
            let y = conv_onnx(g, &stage.conv, &x, &format!("impala{s}_conv"))?;
            x = max_pool_onnx(g, &stage.pool, &y)?;
            for (b, block) in stage.blocks.iter().enumerate() {
                let prefix = format!("impala{s}_block{b}");
                let a = g.op("Relu", &[&x], vec![]);
                let inner = conv_onnx(g, &block.conv0, &a, &format!("{prefix}_conv0"))?;
                let a = g.op("Relu", &[&inner], vec![]);
                let outer = conv_onnx(g, &block.conv1, &a, &format!("{prefix}_conv1"))?;
                x = g.op("Add", &[&x, &outer], vec![]);
            }
        }
        let a = g.op("Relu", &[&x], vec![]);
        let flat = g.flatten(&a);
        let features = linear_onnx(g, &self.fc, &flat, "impala_fc")?;
        Ok(g.op("Relu", &[&features], vec![]))
    }
}

impl PixelEncoder {
    /// Appends this encoder applied to uint8 frames `[batch, c, h, w]` `images` (divided by
    /// 255 first, as [`crate::pixels_to_unit`] does); returns the features' name.
    ///
    /// # Errors
    /// Non-finite weights, or layers ONNX would compute differently (`Same` padding, a
    /// max-pool rounding its size up).
    pub fn to_onnx(&self, g: &mut OnnxGraph, images: &str) -> Result<String> {
        let x = g.images_to_unit(images)?;
        match self {
            PixelEncoder::Nature(e) => e.to_onnx(g, &x),
            PixelEncoder::Impala(e) => e.to_onnx(g, &x),
        }
    }
}

/// Appends the rows a network's image path reads from uint8 frames `[batch, c, h, w]`
/// `images`: `encoder`'s features, or without an encoder the frames divided by 255 and
/// flattened (as [`crate::DiscreteQ::forward_pixels`] and [`crate::ActorCriticNet::encode`]
/// make them); returns their name.
///
/// # Errors
/// As [`PixelEncoder::to_onnx`].
pub fn image_rows_onnx(
    g: &mut OnnxGraph,
    encoder: Option<&PixelEncoder>,
    images: &str,
) -> Result<String> {
    match encoder {
        Some(e) => e.to_onnx(g, images),
        None => {
            let unit = g.images_to_unit(images)?;
            Ok(g.flatten(&unit))
        }
    }
}
