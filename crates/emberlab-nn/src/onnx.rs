//! Networks out as ONNX: an [`OnnxGraph`] builder over the ONNX messages (the subset of
//! `onnx.proto3` a feed-forward policy needs, encoded with prost), and the ONNX form of
//! [`Mlp`] and of the policies' deterministic actions.
//!
//! Models are ONNX IR version 8 with the default operator set 17 (`Gemm`, `Relu`, `Tanh`,
//! `LayerNormalization`, `Slice`, `Clip`, `Sub`, `Mul`, `Add`, `Max`, `Min`, `ArgMax`, and
//! for image encoders `Cast`, `Div`, `Conv`, `MaxPool`, `Flatten`), readable by onnxruntime
//! 1.13 and later. Inputs are `[batch, width]` float32, or uint8 frames `[batch, c, h, w]`
//! ([`OnnxGraph::input_images`]), with a symbolic `batch`.
//!
//! ```
//! use burn::tensor::Device;
//! use emberlab_nn::{MlpConfig, OnnxGraph};
//!
//! let mlp = MlpConfig::new([3, 16, 2]).init(&Device::flex())?;
//! let mut g = OnnxGraph::new("q_network");
//! let obs = g.input("obs", 3);
//! let q = mlp.to_onnx(&mut g, &obs, "q")?;
//! g.output(&q, "q_values", Some(2));
//! let bytes = g.to_bytes("example");
//! assert!(bytes.len() > 3 * 16 * 4);
//! # Ok::<(), emberlab_core::Error>(())
//! ```

use crate::{GaussianTanhPolicy, Mlp};
use burn::tensor::Tensor;
use emberlab_core::{Error, Result};
use prost::Message;

/// The ONNX messages Ember writes (field numbers of the ONNX specification's
/// `onnx.proto3`; a `oneof` is written as the optional field it is on the wire).
pub mod proto {
    /// A whole model.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ModelProto {
        /// The IR version.
        #[prost(int64, tag = "1")]
        pub ir_version: i64,
        /// Operator sets used.
        #[prost(message, repeated, tag = "8")]
        pub opset_import: Vec<OperatorSetIdProto>,
        /// The tool that wrote the model.
        #[prost(string, tag = "2")]
        pub producer_name: String,
        /// Its version.
        #[prost(string, tag = "3")]
        pub producer_version: String,
        /// A description.
        #[prost(string, tag = "6")]
        pub doc_string: String,
        /// The computation.
        #[prost(message, optional, tag = "7")]
        pub graph: Option<GraphProto>,
    }

    /// An operator set and its version.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct OperatorSetIdProto {
        /// The domain (empty: the default `ai.onnx`).
        #[prost(string, tag = "1")]
        pub domain: String,
        /// Its version.
        #[prost(int64, tag = "2")]
        pub version: i64,
    }

    /// A graph: nodes in topological order, constant tensors, inputs and outputs.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct GraphProto {
        /// The nodes.
        #[prost(message, repeated, tag = "1")]
        pub node: Vec<NodeProto>,
        /// The graph's name.
        #[prost(string, tag = "2")]
        pub name: String,
        /// Constant tensors (weights).
        #[prost(message, repeated, tag = "5")]
        pub initializer: Vec<TensorProto>,
        /// Inputs.
        #[prost(message, repeated, tag = "11")]
        pub input: Vec<ValueInfoProto>,
        /// Outputs.
        #[prost(message, repeated, tag = "12")]
        pub output: Vec<ValueInfoProto>,
    }

    /// One operator application.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct NodeProto {
        /// Input value names.
        #[prost(string, repeated, tag = "1")]
        pub input: Vec<String>,
        /// Output value names.
        #[prost(string, repeated, tag = "2")]
        pub output: Vec<String>,
        /// The node's name.
        #[prost(string, tag = "3")]
        pub name: String,
        /// The operator.
        #[prost(string, tag = "4")]
        pub op_type: String,
        /// Its attributes.
        #[prost(message, repeated, tag = "5")]
        pub attribute: Vec<AttributeProto>,
    }

    /// A named attribute (the kinds Ember writes: a float, an int, ints).
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct AttributeProto {
        /// Its name.
        #[prost(string, tag = "1")]
        pub name: String,
        /// A float value.
        #[prost(float, optional, tag = "2")]
        pub f: Option<f32>,
        /// An integer value.
        #[prost(int64, optional, tag = "3")]
        pub i: Option<i64>,
        /// Integer values.
        #[prost(int64, repeated, tag = "8")]
        pub ints: Vec<i64>,
        /// `AttributeType`: 1 float, 2 int, 7 ints.
        #[prost(int32, tag = "20")]
        pub r#type: i32,
    }

    /// A tensor: its dimensions, element type and little-endian bytes.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TensorProto {
        /// Dimensions.
        #[prost(int64, repeated, tag = "1")]
        pub dims: Vec<i64>,
        /// `DataType`: 1 float, 7 int64.
        #[prost(int32, tag = "2")]
        pub data_type: i32,
        /// Its name.
        #[prost(string, tag = "8")]
        pub name: String,
        /// The values, little-endian.
        #[prost(bytes = "vec", tag = "9")]
        pub raw_data: Vec<u8>,
    }

    /// A named, typed value (a graph input or output).
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct ValueInfoProto {
        /// Its name.
        #[prost(string, tag = "1")]
        pub name: String,
        /// Its type.
        #[prost(message, optional, tag = "2")]
        pub r#type: Option<TypeProto>,
    }

    /// A type (Ember writes tensor types only).
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TypeProto {
        /// A tensor type.
        #[prost(message, optional, tag = "1")]
        pub tensor_type: Option<TensorTypeProto>,
    }

    /// `TypeProto.Tensor`: an element type and a shape.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TensorTypeProto {
        /// `DataType` of the elements.
        #[prost(int32, tag = "1")]
        pub elem_type: i32,
        /// The shape.
        #[prost(message, optional, tag = "2")]
        pub shape: Option<TensorShapeProto>,
    }

    /// A shape.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct TensorShapeProto {
        /// Its dimensions.
        #[prost(message, repeated, tag = "1")]
        pub dim: Vec<Dimension>,
    }

    /// One dimension: a size or a symbolic name.
    #[derive(Clone, PartialEq, prost::Message)]
    pub struct Dimension {
        /// A fixed size.
        #[prost(int64, optional, tag = "1")]
        pub dim_value: Option<i64>,
        /// A symbolic size.
        #[prost(string, optional, tag = "2")]
        pub dim_param: Option<String>,
    }
}

use proto::*;

/// ONNX `DataType` of float32 tensors.
pub const FLOAT: i32 = 1;
/// ONNX `DataType` of int64 tensors.
pub const INT64: i32 = 7;
/// ONNX `TensorProto.DataType` of uint8.
pub const UINT8: i32 = 2;
/// The IR version Ember writes.
pub const IR_VERSION: i64 = 8;
/// The default operator-set version Ember writes.
pub const OPSET: i64 = 17;
/// The `epsilon` of the layer norms [`crate::MlpConfig`] builds (burn's default).
pub const LAYER_NORM_EPSILON: f32 = 1e-5;

/// A graph under construction: nodes are appended in order, every value gets a fresh name.
#[derive(Clone, Debug, Default)]
pub struct OnnxGraph {
    graph: GraphProto,
    names: usize,
}

fn attr_int(name: &str, i: i64) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        i: Some(i),
        r#type: 2,
        ..Default::default()
    }
}

fn attr_float(name: &str, f: f32) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        f: Some(f),
        r#type: 1,
        ..Default::default()
    }
}

fn attr_ints(name: &str, ints: &[usize]) -> AttributeProto {
    AttributeProto {
        name: name.into(),
        ints: ints.iter().map(|&i| i as i64).collect(),
        r#type: 7,
        ..Default::default()
    }
}

/// `[batch, width]` of `elem_type`, or `[batch]` when `width` is `None`.
fn value_info(name: &str, elem_type: i32, width: Option<usize>) -> ValueInfoProto {
    match width {
        Some(w) => tensor_info(name, elem_type, &[None, Some(w)]),
        None => tensor_info(name, elem_type, &[None]),
    }
}

/// A tensor of `elem_type` and `dims`, `None` standing for the symbolic `batch`.
fn tensor_info(name: &str, elem_type: i32, dims: &[Option<usize>]) -> ValueInfoProto {
    let dim = |d: &Option<usize>| Dimension {
        dim_value: d.map(|d| d as i64),
        dim_param: d.is_none().then(|| "batch".to_string()),
    };
    ValueInfoProto {
        name: name.into(),
        r#type: Some(TypeProto {
            tensor_type: Some(TensorTypeProto {
                elem_type,
                shape: Some(TensorShapeProto {
                    dim: dims.iter().map(dim).collect(),
                }),
            }),
        }),
    }
}

impl OnnxGraph {
    /// An empty graph called `name`.
    pub fn new(name: &str) -> Self {
        OnnxGraph {
            graph: GraphProto {
                name: name.into(),
                ..Default::default()
            },
            names: 0,
        }
    }

    fn fresh(&mut self, hint: &str) -> String {
        self.names += 1;
        format!("{hint}_{}", self.names)
    }

    /// Declares a float32 input `[batch, width]`; returns its name.
    pub fn input(&mut self, name: &str, width: usize) -> String {
        self.graph.input.push(value_info(name, FLOAT, Some(width)));
        name.to_string()
    }

    /// Declares a uint8 input `[batch, c, h, w]` (stacked frames, as
    /// `emberlab_env::FrameVecEnv` gives them); returns its name.
    pub fn input_images(&mut self, name: &str, [c, h, w]: [usize; 3]) -> String {
        let dims = [None, Some(c), Some(h), Some(w)];
        self.graph.input.push(tensor_info(name, UINT8, &dims));
        name.to_string()
    }

    /// uint8 images `x` as float32 `x / 255` ([`crate::pixels_to_unit`]).
    ///
    /// # Errors
    /// None in practice (the divisor is finite).
    pub fn images_to_unit(&mut self, x: &str) -> Result<String> {
        let floats = self.op("Cast", &[x], vec![attr_int("to", FLOAT as i64)]);
        let d = self.constant("pixel_scale", &[], &[255.0])?;
        Ok(self.op("Div", &[&floats, &d], vec![]))
    }

    /// `Conv` of `[batch, c, h, w]` `x` with `weight` `[out, c / groups, kh, kw]` (values
    /// row-major), an optional `bias` of `out` values, `strides`, `pads` (top, left, bottom,
    /// right), `dilations` and `groups`; returns its name.
    ///
    /// # Errors
    /// Weights or biases of the wrong length, or not finite.
    #[allow(clippy::too_many_arguments)]
    pub fn conv(
        &mut self,
        x: &str,
        prefix: &str,
        (weight, dims): (&[f32], [usize; 4]),
        bias: Option<&[f32]>,
        strides: [usize; 2],
        pads: [usize; 4],
        dilations: [usize; 2],
        groups: usize,
    ) -> Result<String> {
        let w = self.constant(&format!("{prefix}_w"), &dims, weight)?;
        let mut inputs = vec![x.to_string(), w];
        if let Some(b) = bias {
            inputs.push(self.constant(&format!("{prefix}_b"), &[dims[0]], b)?);
        }
        let inputs: Vec<&str> = inputs.iter().map(String::as_str).collect();
        let attributes = vec![
            attr_ints("kernel_shape", &dims[2..]),
            attr_ints("strides", &strides),
            attr_ints("pads", &pads),
            attr_ints("dilations", &dilations),
            attr_int("group", groups as i64),
        ];
        Ok(self.op("Conv", &inputs, attributes))
    }

    /// `MaxPool` of `[batch, c, h, w]` `x` over `kernel` windows with `strides`, `pads`
    /// (top, left, bottom, right; padded values never win) and `dilations`, rounding the
    /// output size up when `ceil`; returns its name.
    pub fn max_pool(
        &mut self,
        x: &str,
        kernel: [usize; 2],
        strides: [usize; 2],
        pads: [usize; 4],
        dilations: [usize; 2],
        ceil: bool,
    ) -> String {
        let attributes = vec![
            attr_ints("kernel_shape", &kernel),
            attr_ints("strides", &strides),
            attr_ints("pads", &pads),
            attr_ints("dilations", &dilations),
            attr_int("ceil_mode", ceil as i64),
        ];
        self.op("MaxPool", &[x], attributes)
    }

    /// `[batch, …]` `x` flattened to `[batch, rest]`, row-major.
    pub fn flatten(&mut self, x: &str) -> String {
        self.op("Flatten", &[x], vec![attr_int("axis", 1)])
    }

    /// `x · weight + bias` for `[batch, d_in]` `x` and `weight` `[d_in, d_out]` (row-major;
    /// `bias` of `d_out`, zeros when `None`), as one `Gemm`; returns its name.
    ///
    /// # Errors
    /// Weights or biases of the wrong length, or not finite.
    pub fn gemm(
        &mut self,
        x: &str,
        prefix: &str,
        (weight, [d_in, d_out]): (&[f32], [usize; 2]),
        bias: Option<&[f32]>,
    ) -> Result<String> {
        let w = self.constant(&format!("{prefix}_w"), &[d_in, d_out], weight)?;
        let zeros;
        let bias = match bias {
            Some(b) => b,
            None => {
                zeros = vec![0.0; d_out];
                &zeros
            }
        };
        let b = self.constant(&format!("{prefix}_b"), &[d_out], bias)?;
        Ok(self.op("Gemm", &[x, &w, &b], vec![]))
    }

    /// Names `value` as the graph output `name` (float32 `[batch, width]`, or int64
    /// `[batch]` when `width` is `None`), through an `Identity` node.
    pub fn output(&mut self, value: &str, name: &str, width: Option<usize>) {
        self.op_named("Identity", &[value], vec![], name);
        let elem = if width.is_some() { FLOAT } else { INT64 };
        self.graph.output.push(value_info(name, elem, width));
    }

    /// A constant float32 tensor of `dims`; returns its name.
    ///
    /// # Errors
    /// `values` not holding the product of `dims`, or a non-finite value.
    pub fn constant(&mut self, hint: &str, dims: &[usize], values: &[f32]) -> Result<String> {
        Error::check_len(hint, dims.iter().product(), values.len())?;
        if let Some(i) = values.iter().position(|v| !v.is_finite()) {
            return Err(Error::NonFinite {
                name: format!("{hint}[{i}]"),
                value: values[i] as f64,
            });
        }
        let name = self.fresh(hint);
        self.graph.initializer.push(TensorProto {
            dims: dims.iter().map(|&d| d as i64).collect(),
            data_type: FLOAT,
            name: name.clone(),
            raw_data: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        });
        Ok(name)
    }

    /// A constant int64 vector; returns its name.
    pub fn constant_i64(&mut self, hint: &str, values: &[i64]) -> String {
        let name = self.fresh(hint);
        self.graph.initializer.push(TensorProto {
            dims: vec![values.len() as i64],
            data_type: INT64,
            name: name.clone(),
            raw_data: values.iter().flat_map(|v| v.to_le_bytes()).collect(),
        });
        name
    }

    /// Appends `op_type(inputs)` with `attributes`; returns its (single) output's name.
    pub fn op(
        &mut self,
        op_type: &str,
        inputs: &[&str],
        attributes: Vec<AttributeProto>,
    ) -> String {
        let out = self.fresh(&op_type.to_lowercase());
        self.op_named(op_type, inputs, attributes, &out);
        out
    }

    fn op_named(
        &mut self,
        op_type: &str,
        inputs: &[&str],
        attributes: Vec<AttributeProto>,
        out: &str,
    ) {
        let name = self.fresh(op_type);
        self.graph.node.push(NodeProto {
            input: inputs.iter().map(|s| s.to_string()).collect(),
            output: vec![out.to_string()],
            name,
            op_type: op_type.into(),
            attribute: attributes,
        });
    }

    /// Columns `start..end` of `[batch, n]` `x`.
    pub fn columns(&mut self, x: &str, start: usize, end: usize) -> String {
        let s = self.constant_i64("starts", &[start as i64]);
        let e = self.constant_i64("ends", &[end as i64]);
        let axes = self.constant_i64("axes", &[1]);
        self.op("Slice", &[x, &s, &e, &axes], vec![])
    }

    /// `x · scale + bias` per column, skipped where it is the identity.
    ///
    /// # Errors
    /// Non-finite scales or biases.
    pub fn affine(&mut self, x: &str, scale: &[f32], bias: &[f32]) -> Result<String> {
        let mut y = x.to_string();
        if scale.iter().any(|&s| s != 1.0) {
            let s = self.constant("scale", &[scale.len()], scale)?;
            y = self.op("Mul", &[&y, &s], vec![]);
        }
        if bias.iter().any(|&b| b != 0.0) {
            let b = self.constant("bias", &[bias.len()], bias)?;
            y = self.op("Add", &[&y, &b], vec![]);
        }
        Ok(y)
    }

    /// `clip(x, lo, hi)`.
    ///
    /// # Errors
    /// Non-finite bounds.
    pub fn clip(&mut self, x: &str, lo: f32, hi: f32) -> Result<String> {
        let lo = self.constant("min", &[], &[lo])?;
        let hi = self.constant("max", &[], &[hi])?;
        Ok(self.op("Clip", &[x, &lo, &hi], vec![]))
    }

    /// `min(max(x, low), high)` per column (infinite bounds clamp nothing).
    ///
    /// # Errors
    /// NaN bounds, or bounds of different lengths.
    pub fn clamp_columns(&mut self, x: &str, low: &[f32], high: &[f32]) -> Result<String> {
        Error::check_len("high bounds", low.len(), high.len())?;
        let finite =
            |v: &[f32]| -> Vec<f32> { v.iter().map(|b| b.clamp(f32::MIN, f32::MAX)).collect() };
        let lo = self.constant("low", &[low.len()], &finite(low))?;
        let hi = self.constant("high", &[high.len()], &finite(high))?;
        let y = self.op("Max", &[x, &lo], vec![]);
        Ok(self.op("Min", &[&y, &hi], vec![]))
    }

    /// `clip((x − mean) · inv_std, ±clip)` per column: an observation normaliser.
    ///
    /// # Errors
    /// Non-finite statistics, or statistics of different lengths.
    pub fn normalize(
        &mut self,
        x: &str,
        mean: &[f32],
        inv_std: &[f32],
        clip: f32,
    ) -> Result<String> {
        Error::check_len("inv_std", mean.len(), inv_std.len())?;
        let m = self.constant("obs_mean", &[mean.len()], mean)?;
        let s = self.constant("obs_inv_std", &[inv_std.len()], inv_std)?;
        let centred = self.op("Sub", &[x, &m], vec![]);
        let z = self.op("Mul", &[&centred, &s], vec![]);
        self.clip(&z, -clip, clip)
    }

    /// The index of the largest column of each row (int64 `[batch]`).
    pub fn argmax(&mut self, x: &str) -> String {
        self.op(
            "ArgMax",
            &[x],
            vec![attr_int("axis", 1), attr_int("keepdims", 0)],
        )
    }

    /// The model holding this graph, encoded (`producer`: the writer's name).
    pub fn to_bytes(&self, producer: &str) -> Vec<u8> {
        ModelProto {
            ir_version: IR_VERSION,
            opset_import: vec![OperatorSetIdProto {
                domain: String::new(),
                version: OPSET,
            }],
            producer_name: producer.into(),
            producer_version: env!("CARGO_PKG_VERSION").into(),
            doc_string: String::new(),
            graph: Some(self.graph.clone()),
        }
        .encode_to_vec()
    }

    /// The graph so far.
    pub fn graph(&self) -> &GraphProto {
        &self.graph
    }
}

/// A burn `Linear` (weight `[d_in, d_out]`) applied to `[batch, d_in]` `x`, as a `Gemm`.
pub(crate) fn linear_onnx(
    g: &mut OnnxGraph,
    layer: &burn::nn::Linear,
    x: &str,
    prefix: &str,
) -> Result<String> {
    let dims = layer.weight.dims();
    let bias = layer.bias.as_ref().map(|b| values(b.val()));
    g.gemm(
        x,
        prefix,
        (&values(layer.weight.val()), dims),
        bias.as_deref(),
    )
}

/// A tensor's values as `f32`, row-major.
pub(crate) fn values<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    let data = t.into_data();
    match data.as_slice::<f32>() {
        Ok(s) => s.to_vec(),
        Err(_) => data.iter::<f32>().collect(),
    }
}

impl Mlp {
    /// Appends this network applied to `[batch, input]` `x` (`Gemm` per layer, then the
    /// layer norm and the activation of hidden layers); returns the output's name.
    ///
    /// # Errors
    /// Non-finite weights.
    pub fn to_onnx(&self, g: &mut OnnxGraph, x: &str, prefix: &str) -> Result<String> {
        let last = self.layers.len() - 1;
        let mut x = x.to_string();
        for (i, layer) in self.layers.iter().enumerate() {
            x = linear_onnx(g, layer, &x, &format!("{prefix}{i}"))?;
            let d_out = layer.weight.dims()[1];
            if i == last {
                break;
            }
            if let Some(norm) = self.norms.get(i) {
                let gamma = g.constant(
                    &format!("{prefix}_ln_g{i}"),
                    &[d_out],
                    &values(norm.gamma.val()),
                )?;
                let beta = match &norm.beta {
                    Some(b) => values(b.val()),
                    None => vec![0.0; d_out],
                };
                let beta = g.constant(&format!("{prefix}_ln_b{i}"), &[d_out], &beta)?;
                x = g.op(
                    "LayerNormalization",
                    &[&x, &gamma, &beta],
                    vec![
                        attr_int("axis", -1),
                        attr_float("epsilon", LAYER_NORM_EPSILON),
                    ],
                );
            }
            x = match self.activation {
                crate::Activation::Relu => g.op("Relu", &[&x], vec![]),
                crate::Activation::Tanh => g.op("Tanh", &[&x], vec![]),
            };
        }
        Ok(x)
    }
}

impl GaussianTanhPolicy {
    /// Appends the deterministic action `scale · tanh(μ(x)) + bias` (gSDE: `μ` clipped to
    /// `[−2, 2]` first, as it acts); returns its name.
    ///
    /// # Errors
    /// Non-finite weights.
    pub fn deterministic_onnx(&self, g: &mut OnnxGraph, x: &str) -> Result<String> {
        let out = self.net.to_onnx(g, x, "actor")?;
        let mean = if self.is_sde() {
            g.clip(&out, -2.0, 2.0)?
        } else {
            g.columns(&out, 0, self.act_dim)
        };
        let unit = g.op("Tanh", &[&mean], vec![]);
        g.affine(&unit, &self.scale, &self.bias)
    }
}

impl crate::ActorCriticNet {
    /// Appends the greedy policy applied to the rows `x` (`[batch, width]`, what
    /// [`crate::ActorCriticNet::forward`] reads: for images, [`crate::image_rows_onnx`] of
    /// them): the most likely action (int64 `[batch]`) of a categorical head, the mean of a
    /// Gaussian or gSDE head (unclipped: the caller clips it to the action box),
    /// `scale · tanh(μ) + bias` of a tanh head; returns its name.
    ///
    /// # Errors
    /// Non-finite weights.
    pub fn greedy_onnx(&self, g: &mut OnnxGraph, x: &str) -> Result<String> {
        let features = match &self.trunk {
            Some(t) => {
                let out = t.to_onnx(g, x, "trunk")?;
                match self.activation {
                    crate::Activation::Relu => g.op("Relu", &[&out], vec![]),
                    crate::Activation::Tanh => g.op("Tanh", &[&out], vec![]),
                }
            }
            None => x.to_string(),
        };
        let out = self.policy.to_onnx(g, &features, "policy")?;
        Ok(match &self.head {
            crate::PolicyHead::Categorical { .. } => g.argmax(&out),
            crate::PolicyHead::Gaussian { .. } | crate::PolicyHead::GaussianSde { .. } => out,
            crate::PolicyHead::TanhGaussian { .. } => {
                let unit = g.op("Tanh", &[&out], vec![]);
                g.affine(&unit, &self.scale, &self.bias)?
            }
        })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::MlpConfig;
    use burn::tensor::Device;

    #[test]
    fn an_mlp_becomes_gemms_and_activations_with_its_weights() {
        let mlp = MlpConfig::new([3, 4, 2]).init(&Device::flex()).unwrap();
        let mut g = OnnxGraph::new("t");
        let x = g.input("obs", 3);
        let y = mlp.to_onnx(&mut g, &x, "q").unwrap();
        g.output(&y, "q_values", Some(2));
        let ops: Vec<&str> = g.graph().node.iter().map(|n| n.op_type.as_str()).collect();
        assert_eq!(ops, ["Gemm", "Relu", "Gemm", "Identity"]);
        let w0 = &g.graph().initializer[0];
        assert_eq!(w0.dims, [3, 4]);
        let first = f32::from_le_bytes(w0.raw_data[..4].try_into().unwrap());
        assert_eq!(first, values(mlp.layers[0].weight.val())[0]);
        let model = ModelProto::decode(g.to_bytes("test").as_slice()).unwrap();
        assert_eq!(model.opset_import[0].version, OPSET);
        assert_eq!(model.graph.unwrap().output[0].name, "q_values");
        assert!(g.constant("bad", &[1], &[f32::NAN]).is_err());
    }
}
