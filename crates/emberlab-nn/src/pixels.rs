//! Networks over image observations: [`NatureCnn`], the encoder of Stable-Baselines3's
//! `NatureCNN` (Mnih et al. 2015); [`ImpalaCnn`], the residual encoder of IMPALA
//! (Espeholt et al. 2018) as CleanRL's and procgen's baselines build it; [`PixelEncoder`],
//! either one, chosen by a config's name; and [`pixels_to_unit`], which turns stacked `u8`
//! frames into the `[0, 1]` floats the encoders read. Their convolutions run through
//! [`emberlab_kernels::conv2d`] (on flex straight from the input on AVX-512, else im2col and
//! the GEMM).
//!
//! ```
//! use emberlab_nn::{NatureCnnConfig, pixels_to_unit};
//!
//! let device = emberlab_backend::DeviceSpec::Flex.device()?;
//! let cnn = NatureCnnConfig::new(4, 84, 84).init(&device)?;
//! let frames = vec![128u8; 2 * 4 * 84 * 84]; // two stacks of four 84×84 frames
//! let features = cnn.forward(pixels_to_unit(&frames, [2, 4, 84, 84], &device)?);
//! assert_eq!(features.dims(), [2, 512]);
//! # Ok::<(), emberlab_core::Error>(())
//! ```

use crate::mlp::linear;
use crate::orthogonal::orthogonal_param;
use burn::module::{Module, Param};
use burn::nn::conv::{Conv2d, Conv2dConfig};
use burn::nn::pool::{MaxPool2d, MaxPool2dConfig};
use burn::nn::{Linear, LinearConfig, PaddingConfig2d};
use burn::tensor::{Device, Tensor, TensorData};
use emberlab_core::{Error, Result};

/// The convolutions of the Nature CNN: `(output channels, kernel, stride)`.
const NATURE_CONVS: [(usize, usize, usize); 3] = [(32, 8, 4), (64, 4, 2), (64, 3, 1)];

/// How to build a [`NatureCnn`].
#[derive(Clone, Debug, PartialEq)]
pub struct NatureCnnConfig {
    /// Input channels: frames stacked × channels per frame (4 for Atari's gray stacks).
    pub channels: usize,
    /// Input height in pixels.
    pub height: usize,
    /// Input width in pixels.
    pub width: usize,
    /// Width of the output features (SB3: 512).
    pub features: usize,
    /// Orthogonal weights with this gain and zero biases (SB3's `ortho_init` for A2C and
    /// PPO: √2); `None`: burn's default (Kaiming-uniform, as PyTorch's, SB3's DQN).
    pub orthogonal: Option<f64>,
}

impl NatureCnnConfig {
    /// `channels × height × width` inputs, 512 features, burn's default initialisation.
    pub fn new(channels: usize, height: usize, width: usize) -> Self {
        NatureCnnConfig {
            channels,
            height,
            width,
            features: 512,
            orthogonal: None,
        }
    }

    /// Sets the width of the output features.
    pub fn with_features(mut self, features: usize) -> Self {
        self.features = features;
        self
    }

    /// Orthogonal weights with `gain` and zero biases (see the field).
    pub fn with_orthogonal(mut self, gain: Option<f64>) -> Self {
        self.orthogonal = gain;
        self
    }

    /// The height and width after each convolution; the last pair is what the linear
    /// layer flattens.
    ///
    /// # Errors
    /// A zero size, or an image too small for the kernels (under 36 pixels a side).
    pub fn spatial(&self) -> Result<[(usize, usize); 3]> {
        for (what, v) in [
            ("channels", self.channels),
            ("height", self.height),
            ("width", self.width),
            ("features", self.features),
        ] {
            if v == 0 {
                return Err(Error::invalid(format!("nature cnn {what}"), v, ">= 1"));
            }
        }
        let mut out = [(0, 0); 3];
        let (mut h, mut w) = (self.height, self.width);
        for (i, &(_, k, s)) in NATURE_CONVS.iter().enumerate() {
            if h < k || w < k {
                return Err(Error::invalid(
                    "nature cnn input",
                    format!("{}×{}", self.height, self.width),
                    "an image of at least 36×36 pixels (the kernels 8/4, 4/2, 3/1 need it)",
                ));
            }
            (h, w) = ((h - k) / s + 1, (w - k) / s + 1);
            out[i] = (h, w);
        }
        Ok(out)
    }

    /// Builds the encoder on `device`, every parameter materialised.
    ///
    /// # Errors
    /// See [`NatureCnnConfig::spatial`].
    pub fn init(&self, device: &Device) -> Result<NatureCnn> {
        let spatial = self.spatial()?;
        let mut channels = self.channels;
        let convs = NATURE_CONVS
            .iter()
            .map(|&(out, k, s)| {
                let mut conv = Conv2dConfig::new([channels, out], [k, k])
                    .with_stride([s, s])
                    .init(device);
                if let Some(gain) = self.orthogonal {
                    conv.weight = orthogonal_param([out, channels, k, k], gain, device);
                    conv.bias = Some(Param::from_tensor(Tensor::zeros([out], device)));
                }
                channels = out;
                conv
            })
            .collect();
        let (h, w) = spatial[2];
        let flat = channels * h * w;
        let mut fc = LinearConfig::new(flat, self.features).init(device);
        if let Some(gain) = self.orthogonal {
            fc.weight = orthogonal_param([flat, self.features], gain, device);
            fc.bias = Some(Param::from_tensor(Tensor::zeros([self.features], device)));
        }
        Ok(NatureCnn { convs, fc }.materialize())
    }
}

/// SB3's `NatureCNN`: three ReLU convolutions (32 of 8×8 stride 4, 64 of 4×4 stride 2, 64
/// of 3×3 stride 1), flattened into a ReLU linear layer: `[batch, c, h, w] → [batch,
/// features]`.
#[derive(Module, Debug)]
pub struct NatureCnn {
    /// The three convolutions.
    pub convs: Vec<Conv2d>,
    /// The linear layer over the flattened last feature maps.
    pub fc: Linear,
}

impl NatureCnn {
    /// Features `[batch, features]` of images `[batch, c, h, w]` with values in `[0, 1]`.
    pub fn forward(&self, x: Tensor<4>) -> Tensor<2> {
        let mut x = x;
        for conv in &self.convs {
            x = emberlab_kernels::relu(convolve(conv, x));
        }
        let x: Tensor<2> = x.flatten(1, 3);
        emberlab_kernels::relu(linear(&self.fc, x))
    }

    /// Width of the output features.
    pub fn features(&self) -> usize {
        self.fc.weight.dims()[1]
    }
}

/// How to build an [`ImpalaCnn`].
#[derive(Clone, Debug, PartialEq)]
pub struct ImpalaCnnConfig {
    /// Input channels (frames stacked × channels per frame).
    pub channels: usize,
    /// Input height in pixels.
    pub height: usize,
    /// Input width in pixels.
    pub width: usize,
    /// Channels of each stage (IMPALA: 16, 32, 32).
    pub depths: Vec<usize>,
    /// Width of the output features (IMPALA: 256).
    pub features: usize,
}

impl ImpalaCnnConfig {
    /// `channels × height × width` inputs, stages of 16, 32 and 32 channels, 256 features.
    pub fn new(channels: usize, height: usize, width: usize) -> Self {
        ImpalaCnnConfig {
            channels,
            height,
            width,
            depths: vec![16, 32, 32],
            features: 256,
        }
    }

    /// Sets the stages' channels.
    pub fn with_depths(mut self, depths: impl Into<Vec<usize>>) -> Self {
        self.depths = depths.into();
        self
    }

    /// Sets the width of the output features.
    pub fn with_features(mut self, features: usize) -> Self {
        self.features = features;
        self
    }

    /// The height and width after each stage (each halves them, rounding up).
    ///
    /// # Errors
    /// A zero size or no stage.
    pub fn spatial(&self) -> Result<Vec<(usize, usize)>> {
        for (what, v) in [
            ("channels", self.channels),
            ("height", self.height),
            ("width", self.width),
            ("features", self.features),
            ("stages", self.depths.len()),
        ] {
            if v == 0 {
                return Err(Error::invalid(format!("impala cnn {what}"), v, ">= 1"));
            }
        }
        if let Some(i) = self.depths.iter().position(|&d| d == 0) {
            return Err(Error::invalid(format!("impala cnn depths[{i}]"), 0, ">= 1"));
        }
        let (mut h, mut w) = (self.height, self.width);
        Ok(self
            .depths
            .iter()
            .map(|_| {
                (h, w) = (h.div_ceil(2), w.div_ceil(2));
                (h, w)
            })
            .collect())
    }

    /// Builds the encoder on `device`, every parameter materialised (burn's default
    /// initialisation, as PyTorch's).
    ///
    /// # Errors
    /// See [`ImpalaCnnConfig::spatial`].
    pub fn init(&self, device: &Device) -> Result<ImpalaCnn> {
        let spatial = self.spatial()?;
        let conv3 = |from: usize, to: usize| {
            Conv2dConfig::new([from, to], [3, 3])
                .with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1))
                .init(device)
        };
        let mut from = self.channels;
        let stages = self
            .depths
            .iter()
            .map(|&depth| {
                let stage = ImpalaStage {
                    conv: conv3(from, depth),
                    pool: MaxPool2dConfig::new([3, 3])
                        .with_strides([2, 2])
                        .with_padding(PaddingConfig2d::Explicit(1, 1, 1, 1))
                        .init(),
                    blocks: (0..2)
                        .map(|_| ResidualBlock {
                            conv0: conv3(depth, depth),
                            conv1: conv3(depth, depth),
                        })
                        .collect(),
                };
                from = depth;
                stage
            })
            .collect();
        let (h, w) = spatial[spatial.len() - 1];
        let fc = LinearConfig::new(from * h * w, self.features).init(device);
        Ok(ImpalaCnn { stages, fc }.materialize())
    }
}

/// One residual block of [`ImpalaCnn`]: `x + conv1(relu(conv0(relu(x))))`, 3×3 convolutions
/// that keep the size.
#[derive(Module, Debug)]
pub struct ResidualBlock {
    /// The first convolution.
    pub conv0: Conv2d,
    /// The second convolution.
    pub conv1: Conv2d,
}

/// One stage of [`ImpalaCnn`]: a 3×3 convolution, a 3×3 max-pool of stride 2, two
/// residual blocks.
#[derive(Module, Debug)]
pub struct ImpalaStage {
    /// The convolution into the stage's channels.
    pub conv: Conv2d,
    /// The max-pool halving height and width.
    pub pool: MaxPool2d,
    /// The residual blocks.
    pub blocks: Vec<ResidualBlock>,
}

/// IMPALA's encoder: stages of a convolution, a max-pool and two residual blocks, then a
/// ReLU, the flattened maps and a ReLU linear layer: `[batch, c, h, w] → [batch,
/// features]`.
#[derive(Module, Debug)]
pub struct ImpalaCnn {
    /// The stages.
    pub stages: Vec<ImpalaStage>,
    /// The linear layer over the flattened last feature maps.
    pub fc: Linear,
}

impl ImpalaCnn {
    /// Features `[batch, features]` of images `[batch, c, h, w]` with values in `[0, 1]`.
    pub fn forward(&self, x: Tensor<4>) -> Tensor<2> {
        let mut x = x;
        for stage in &self.stages {
            x = stage.pool.forward(convolve(&stage.conv, x));
            for block in &stage.blocks {
                let inner = convolve(&block.conv0, emberlab_kernels::relu(x.clone()));
                x = x + convolve(&block.conv1, emberlab_kernels::relu(inner));
            }
        }
        let x: Tensor<2> = emberlab_kernels::relu(x).flatten(1, 3);
        emberlab_kernels::relu(linear(&self.fc, x))
    }

    /// Width of the output features.
    pub fn features(&self) -> usize {
        self.fc.weight.dims()[1]
    }
}

/// Which encoder a config names: `"nature"` ([`NatureCnn`]) or `"impala"` ([`ImpalaCnn`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, serde::Serialize, serde::Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum PixelEncoderKind {
    /// [`NatureCnn`], SB3's default for images.
    #[default]
    Nature,
    /// [`ImpalaCnn`].
    Impala,
}

impl PixelEncoderKind {
    /// The encoder of this kind for `channels × height × width` images, with its default
    /// feature width (512 for Nature, 256 for IMPALA) and, for Nature, `orthogonal`
    /// initialisation (see [`NatureCnnConfig::orthogonal`]; IMPALA keeps burn's default).
    ///
    /// # Errors
    /// The encoder's size checks.
    pub fn init(
        self,
        [channels, height, width]: [usize; 3],
        orthogonal: Option<f64>,
        device: &Device,
    ) -> Result<PixelEncoder> {
        Ok(match self {
            PixelEncoderKind::Nature => PixelEncoder::Nature(
                NatureCnnConfig::new(channels, height, width)
                    .with_orthogonal(orthogonal)
                    .init(device)?,
            ),
            PixelEncoderKind::Impala => {
                PixelEncoder::Impala(ImpalaCnnConfig::new(channels, height, width).init(device)?)
            }
        })
    }
}

/// A [`NatureCnn`] or an [`ImpalaCnn`], for networks that take either in front of their
/// layers.
#[derive(Module, Debug)]
pub enum PixelEncoder {
    /// SB3's `NatureCNN`.
    Nature(NatureCnn),
    /// IMPALA's residual encoder.
    Impala(ImpalaCnn),
}

impl PixelEncoder {
    /// Features `[batch, features]` of images `[batch, c, h, w]` with values in `[0, 1]`.
    pub fn forward(&self, x: Tensor<4>) -> Tensor<2> {
        match self {
            PixelEncoder::Nature(e) => e.forward(x),
            PixelEncoder::Impala(e) => e.forward(x),
        }
    }

    /// Width of the output features.
    pub fn features(&self) -> usize {
        match self {
            PixelEncoder::Nature(e) => e.features(),
            PixelEncoder::Impala(e) => e.features(),
        }
    }
}

/// `conv`'s output through [`emberlab_kernels::conv2d`] (Ember's own on flex) where
/// its padding is explicit and symmetric, as the encoders here build it; burn's otherwise.
fn convolve(conv: &Conv2d, x: Tensor<4>) -> Tensor<4> {
    let padding = match conv.padding {
        PaddingConfig2d::Valid => [0, 0],
        PaddingConfig2d::Explicit(top, left, bottom, right) if top == bottom && left == right => {
            [top, left]
        }
        _ => return conv.forward(x),
    };
    if conv.dilation != [1, 1] || conv.groups != 1 {
        return conv.forward(x);
    }
    let bias = conv.bias.as_ref().map(|b| b.val());
    emberlab_kernels::conv2d(x, conv.weight.val(), bias, conv.stride, padding)
}

/// Stacked `u8` frames `[n, c, h, w]` (`bytes`, row-major) as `f32` values `x / 255` (divided, as PyTorch's `x.float() / 255`) on
/// `device`.
///
/// # Errors
/// `bytes` not of length `n · c · h · w`.
pub fn pixels_to_unit(bytes: &[u8], shape: [usize; 4], device: &Device) -> Result<Tensor<4>> {
    let n = shape.iter().product::<usize>();
    Error::check_len("pixels", n, bytes.len())?;
    let values: Vec<f32> = bytes.iter().map(|&b| b as f32 / 255.0).collect();
    Ok(Tensor::from_data(TensorData::new(values, shape), device))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn shapes_follow_sb3_and_bad_sizes_are_errors() {
        let c = NatureCnnConfig::new(4, 84, 84);
        assert_eq!(c.spatial().unwrap(), [(20, 20), (9, 9), (7, 7)]);
        let device = emberlab_backend::DeviceSpec::Flex.device().unwrap();
        let cnn = c.init(&device).unwrap();
        // 3136 = 64 · 7 · 7 inputs to the linear layer, as in SB3.
        assert_eq!(cnn.fc.weight.dims(), [3136, 512]);
        let params: usize = cnn.num_params();
        // As PyTorch counts them (benches/reference/dqn_cnn_update.py --count).
        assert_eq!(params, 1_684_128);
        assert!(NatureCnnConfig::new(4, 35, 84).spatial().is_err());
        assert!(NatureCnnConfig::new(0, 84, 84).spatial().is_err());
        assert!(pixels_to_unit(&[0; 5], [1, 1, 2, 2], &device).is_err());
        let x = pixels_to_unit(&[0, 255, 51, 102], [1, 1, 2, 2], &device).unwrap();
        let v: Vec<f32> = x.into_data().try_to_vec::<f32>().unwrap();
        assert_eq!(v, [0.0, 1.0, 0.2, 0.4]);
        let impala = ImpalaCnnConfig::new(4, 84, 84);
        assert_eq!(impala.spatial().unwrap(), [(42, 42), (21, 21), (11, 11)]);
        let net = impala.init(&device).unwrap();
        // As PyTorch counts CleanRL's IMPALA encoder (benches/reference/dqn_cnn_update.py
        // --count): the convolutions and the 3872→256 layer.
        assert_eq!(net.num_params(), 1_089_232);
        let y =
            net.forward(pixels_to_unit(&[7; 2 * 4 * 84 * 84], [2, 4, 84, 84], &device).unwrap());
        assert_eq!(y.dims(), [2, 256]);
        assert!(
            ImpalaCnnConfig::new(4, 84, 84)
                .with_depths([16, 0])
                .spatial()
                .is_err()
        );
        let any = PixelEncoderKind::Impala
            .init([4, 64, 64], None, &device)
            .unwrap();
        assert_eq!(any.features(), 256);
        let ortho = c.with_orthogonal(Some(2f64.sqrt())).init(&device).unwrap();
        let b: Vec<f32> = ortho
            .fc
            .bias
            .as_ref()
            .unwrap()
            .val()
            .into_data()
            .try_to_vec::<f32>()
            .unwrap();
        assert!(b.iter().all(|&x| x == 0.0));
    }

    /// Both encoders train under Adam: regressing three images' mean feature onto three
    /// targets (no head; the convolutions' own gradients are checked against burn's in
    /// `emberlab-kernels`' `conv` test) cuts the loss twentyfold.
    #[test]
    fn encoders_learn_to_separate_images() {
        use burn::optim::{AdamConfig, GradientsParams};
        let device = emberlab_backend::DeviceSpec::Flex
            .autodiff_device()
            .unwrap();
        let mut bytes = Vec::new();
        for k in 0..3u32 {
            bytes.extend((0..2 * 40 * 40).map(|i| ((i * (k + 1) * 37 + k * 91) % 256) as u8));
        }
        let x = pixels_to_unit(&bytes, [3, 2, 40, 40], &device).unwrap();
        let target = Tensor::<1>::from_data(TensorData::new(vec![0.8f32, 0.1, 0.4], [3]), &device);
        for kind in [PixelEncoderKind::Nature, PixelEncoderKind::Impala] {
            let mut net = kind.init([2, 40, 40], None, &device).unwrap();
            let mut optim = AdamConfig::new().init();
            let mut losses = Vec::new();
            for _ in 0..60 {
                let y: Tensor<1> = net.forward(x.clone()).mean_dim(1).squeeze_dim(1);
                let loss = (y - target.clone()).powi_scalar(2).mean();
                losses.push(loss.clone().into_scalar::<f32>());
                let grads = GradientsParams::from_grads(loss.backward(), &net);
                net = optim.step(1e-3, net, grads);
            }
            assert!(
                losses[59] < 0.05 * losses[0],
                "{kind:?}: loss {} -> {}",
                losses[0],
                losses[59]
            );
        }
    }
}
