//! Frozen inference forms of the networks: weights copied once into host buffers (in panels
//! of 16 output columns, one sequential stream per tile), bias and activation fused into
//! each layer, register-tiled SIMD kernels (a tile of up to four rows
//! × 64 outputs stays in registers while the inputs stream by; inputs that are zero in all
//! of a tile's rows, as a ReLU leaves about half of them at one row, are listed out first
//! and never read), and no allocation per call once the scratch buffers have grown to the
//! batch. For acting on a CPU (problem 5 of the design: one actor choosing one
//! action), where burn's eager forward pays packing and per-operation overhead that dwarf
//! the arithmetic of a 17→256→256→12 network; measured faster than burn's eager forward
//! from 1 to 64 rows and on a par at 256, so SAC acts through it below
//! [`FROZEN_MAX_ROWS`] rows. [`FrozenMlp::set_threads`] splits batches across threads (one or
//! two rows by the columns of their second-to-last layer).
//!
//! The kernel is chosen at run time for the CPU (AVX-512, AVX2 with FMA, or portable
//! code). Results match the burn forward to float tolerance, not bit for bit (another
//! summation order; FMA where the CPU has it). The AVX-512 and AVX2 kernels give the same
//! bits (each output adds its terms in input order with fused multiply-adds) and a row
//! gets the same bits in any batch; the portable kernel (`EMBER_PORTABLE_KERNELS`, or a
//! CPU without AVX2/FMA) rounds each product separately and may differ in the last bits.
//! [`FrozenMlp::refresh`] copies new weights into the same buffers.
//!
//! ```
//! use burn::tensor::{Device, Tensor, TensorData};
//! use emberlab_nn::{FrozenMlp, MlpConfig};
//!
//! let device = Device::flex();
//! let mlp = MlpConfig::new([3, 16, 2]).init(&device)?;
//! let mut frozen = FrozenMlp::new(&mlp)?;
//! let obs = [0.1f32, -0.2, 0.3];
//! let mut out = Vec::new();
//! frozen.forward(&obs, 1, &mut out)?;
//! let burn = mlp.forward(Tensor::from_data(TensorData::new(obs.to_vec(), [1, 3]), &device));
//! let burn: Vec<f32> = burn.into_data().try_into_vec_as::<f32>().unwrap();
//! assert!(out.iter().zip(&burn).all(|(a, b)| (a - b).abs() < 1e-5));
//! # Ok::<(), emberlab_core::Error>(())
//! ```

use crate::gaussian_policy::{GaussianTanhPolicy, squash};
use crate::mlp::{Activation, Mlp};
use burn::tensor::Tensor;
use emberlab_core::{EmberRng, Error, Result};
use emberlab_kernels::worker::Helper;
use std::ops::Range;
use std::sync::Arc;

#[cfg(target_arch = "x86_64")]
mod tiles;

/// Batches of fewer rows than this act through the frozen path (measured on AMD Zen 4 for
/// the SAC actor on one thread: 4.0× flex's eager `act_host` at one row, 1.7× at four,
/// 1.2–1.3× at 16 and 64, on a par at 256; from 128 rows `act_host` splits a batch
/// across threads).
pub const FROZEN_MAX_ROWS: usize = 128;

/// One linear layer on the host: `y = x·W + b`, `W` `[in, out]` stored in panels of
/// [`PANEL`] output columns.
#[derive(Clone, Debug)]
struct HostLinear {
    inputs: usize,
    outputs: usize,
    /// Panel `p` holds columns `p·PANEL .. (p + 1)·PANEL` of every input row, one row of
    /// the panel after the other; columns past `outputs` are zero.
    weight: Vec<f32>,
    bias: Vec<f32>,
}

/// Output columns per panel of a frozen layer's weights (one cache line of `f32`s, a
/// multiple of every kernel's vector width). A tile walking the inputs then reads each
/// panel as one sequential stream; in burn's row-major layout its rows lay 1 KB apart (256
/// outputs), which mapped them onto a quarter of the L1 cache's sets and cost 15% at four
/// and sixteen rows (measured with `frozen_speed` on AMD Zen 3).
const PANEL: usize = 16;

impl HostLinear {
    /// A layer from burn's row-major `[inputs, outputs]` weights.
    fn new(inputs: usize, outputs: usize, row_major: &[f32], bias: Vec<f32>) -> Self {
        let mut weight = vec![0.0; Self::packed_len(inputs, outputs)];
        pack(row_major, inputs, outputs, &mut weight);
        HostLinear {
            inputs,
            outputs,
            weight,
            bias,
        }
    }

    /// The length of the weights in panels.
    fn packed_len(inputs: usize, outputs: usize) -> usize {
        outputs.div_ceil(PANEL) * PANEL * inputs
    }

    /// Where the weight of input `i` to output `j` is.
    fn at(&self, i: usize, j: usize) -> usize {
        panel_index(self.inputs, i, j)
    }
}

/// Where the weight of input `i` to output `j` of a layer with `inputs` inputs is in its
/// panels.
fn panel_index(inputs: usize, i: usize, j: usize) -> usize {
    (j / PANEL * inputs + i) * PANEL + j % PANEL
}

/// Row-major `[inputs, outputs]` weights into the panels of `dst` (whose padding columns
/// stay as they are: zero).
fn pack(row_major: &[f32], inputs: usize, outputs: usize, dst: &mut [f32]) {
    for (i, row) in row_major.chunks_exact(outputs).take(inputs).enumerate() {
        for (p, cols) in row.chunks(PANEL).enumerate() {
            let at = panel_index(inputs, i, p * PANEL);
            dst[at..at + cols.len()].copy_from_slice(cols);
        }
    }
}

fn host_values<const D: usize>(t: Tensor<D>) -> Vec<f32> {
    emberlab_kernels::unshared(t)
        .into_data()
        .try_into_vec_as::<f32>()
        .expect("float parameters convert to f32")
}

/// An [`Mlp`] frozen for host inference.
#[derive(Clone, Debug)]
pub struct FrozenMlp {
    layers: Vec<HostLinear>,
    activation: Activation,
    /// Each part of a batch's buffers, grown to the largest part seen.
    scratch: Vec<Scratch>,
    /// A single row's activations after the layer split by columns (see
    /// [`FrozenMlp::set_threads`]).
    wide: Vec<f32>,
    /// Threads that take the other parts of a batch ([`FrozenMlp::set_threads`]).
    helpers: Vec<Arc<Helper>>,
}

impl FrozenMlp {
    /// Copies `mlp`'s weights to the host.
    ///
    /// # Errors
    /// A network with layer norms (not supported by this path).
    pub fn new(mlp: &Mlp) -> Result<Self> {
        let mut frozen = FrozenMlp {
            layers: Vec::new(),
            activation: mlp.activation,
            scratch: vec![Scratch::default()],
            wide: Vec::new(),
            helpers: Vec::new(),
        };
        frozen.load(mlp, true)?;
        Ok(frozen)
    }

    /// Copies `mlp`'s current weights into the existing buffers (no allocation).
    ///
    /// # Errors
    /// A network of other shapes or with layer norms; the frozen network is then unchanged.
    pub fn refresh(&mut self, mlp: &Mlp) -> Result<()> {
        self.load(mlp, false)
    }

    fn load(&mut self, mlp: &Mlp, fresh: bool) -> Result<()> {
        if !mlp.norms.is_empty() {
            return Err(Error::Unavailable {
                what: "a frozen form of a network with layer norms".into(),
                hint: "act through the burn forward instead".into(),
            });
        }
        if !fresh {
            Error::check_len("frozen network layers", self.layers.len(), mlp.layers.len())?;
            for (ours, theirs) in self.layers.iter().zip(&mlp.layers) {
                let [i, o] = theirs.weight.shape().dims::<2>();
                Error::check_len("frozen layer shape", ours.inputs * ours.outputs, i * o)?;
                Error::check_len("frozen layer inputs", ours.inputs, i)?;
            }
        }
        if fresh {
            self.layers.clear();
        }
        for (k, layer) in mlp.layers.iter().enumerate() {
            let [inputs, outputs] = layer.weight.shape().dims::<2>();
            let weight = host_values(layer.weight.val());
            let bias = match &layer.bias {
                Some(b) => host_values(b.val()),
                None => vec![0.0; outputs],
            };
            if fresh {
                self.layers
                    .push(HostLinear::new(inputs, outputs, &weight, bias));
            } else {
                let ours = &mut self.layers[k];
                pack(&weight, inputs, outputs, &mut ours.weight);
                ours.bias.copy_from_slice(&bias);
            }
        }
        self.activation = mlp.activation;
        Ok(())
    }

    /// Input width.
    pub fn input_dim(&self) -> usize {
        self.layers[0].inputs
    }

    /// Output width.
    pub fn output_dim(&self) -> usize {
        self.layers[self.layers.len() - 1].outputs
    }

    /// Splits each batch across `threads` threads: this one and `threads − 1` helper threads
    /// kept for the network's lifetime (1, the default: this thread only). A batch of more
    /// than two rows is split by rows, each thread running the whole network on its
    /// share. One or two rows (acting in one or two environments) are split by the outputs of
    /// the second-to-last layer, the widest product of the usual shapes (256×256 of
    /// 17→256→256→12), in blocks of 64: each thread computes the layers before it whole,
    /// then its columns, and this thread the last layer once all have finished (used when
    /// that layer has at least 128 outputs), so that each thread streams only its part of
    /// the widest weights. Every output is summed in the same order
    /// either way, so the results are the same bits as on one thread. A helper spins for up to
    /// `EMBER_SPIN_US` (500 µs) after each call before it blocks, so that back-to-back
    /// calls pay no wake-up: give it a core of its own. Clones share the helpers.
    ///
    /// # Errors
    /// `threads` is 0, or the system refused to start a thread (the network then keeps its
    /// previous threads).
    pub fn set_threads(&mut self, threads: usize) -> Result<()> {
        if threads == 0 {
            return Err(Error::invalid(
                "frozen network threads",
                "0",
                "1 (this thread only) or more",
            ));
        }
        let helpers = (1..threads)
            .map(|i| Helper::spawn(&format!("ember-frozen-{i}")).map(Arc::new))
            .collect::<Result<Vec<_>>>()?;
        self.helpers = helpers;
        self.scratch.resize_with(threads, Default::default);
        Ok(())
    }

    /// The threads a batch is split across ([`FrozenMlp::set_threads`]).
    pub fn threads(&self) -> usize {
        1 + self.helpers.len()
    }

    /// `rows` rows of `x` (`rows × input_dim`) through the network into `out` (cleared,
    /// `rows × output_dim`).
    ///
    /// # Errors
    /// An input of another length; a panic on a helper thread.
    pub fn forward(&mut self, x: &[f32], rows: usize, out: &mut Vec<f32>) -> Result<()> {
        self.forward_beside(x, rows, out, || {})
    }

    /// [`FrozenMlp::forward`] that also runs `beside` on the calling thread, before its own
    /// share of the batch and while the helper threads compute theirs (work that does not
    /// need the outputs, such as drawing the noise of a stochastic policy).
    ///
    /// # Errors
    /// As [`FrozenMlp::forward`]; `beside` has run unless the input length was wrong.
    pub fn forward_beside(
        &mut self,
        x: &[f32],
        rows: usize,
        out: &mut Vec<f32>,
        beside: impl FnOnce(),
    ) -> Result<()> {
        self.forward_then(x, rows, out, Rows::none(), beside, &|_, _| {})
    }

    /// Whether a batch of `rows` rows is split by rows across threads
    /// ([`FrozenMlp::set_threads`]).
    fn splits_rows(&self, rows: usize) -> bool {
        rows >= 2 && self.threads() >= 2 && self.column_parts(rows) < 2
    }

    /// How many threads share the second-to-last layer's columns for a batch of `rows`
    /// rows (below 2: the batch is not split by columns).
    fn column_parts(&self, rows: usize) -> usize {
        if rows == 0 || rows > COLUMN_ROWS || self.layers.len() < 2 {
            return 1;
        }
        let width = self.layers[self.layers.len() - 2].outputs;
        self.threads().min(width / COLUMN_BLOCK)
    }

    /// [`FrozenMlp::forward_beside`] in which each thread that takes a share of a batch
    /// split by rows then runs `then(its output rows, its rows of side)` (`side.width`
    /// values per row); unsplit, `then` runs once on this thread over all rows.
    fn forward_then(
        &mut self,
        x: &[f32],
        rows: usize,
        out: &mut Vec<f32>,
        side: Rows<'_>,
        beside: impl FnOnce(),
        then: &(impl Fn(&[f32], &mut [f32]) + Sync),
    ) -> Result<()> {
        Error::check_len(
            "frozen network input (rows × input width)",
            rows * self.input_dim(),
            x.len(),
        )?;
        let (n_in, n_out) = (self.input_dim(), self.output_dim());
        out.clear();
        out.resize(rows * n_out, 0.0);
        let net = Net {
            layers: &self.layers,
            activation: self.activation,
            kernel: Kernel::detect(),
        };
        let parts = self.column_parts(rows);
        if parts >= 2 {
            let jobs = ColumnJobs {
                parts,
                scratch: &mut self.scratch,
                wide: &mut self.wide,
            };
            net.run_by_columns(&self.helpers, x, rows, jobs, out, beside)?;
            then(out, side.values);
            return Ok(());
        }
        let parts = if self.splits_rows(rows) {
            self.threads().min(rows)
        } else {
            1
        };
        // Part p takes rows [p·rows/parts, (p+1)·rows/parts).
        let mut shares = Vec::with_capacity(parts);
        let (mut x, mut y, mut z) = (x, &mut out[..], side.values);
        for (p, scratch) in self.scratch.iter_mut().enumerate().take(parts) {
            let r = (p + 1) * rows / parts - p * rows / parts;
            let (xp, xr) = x.split_at(r * n_in);
            let (yp, yr) = y.split_at_mut(r * n_out);
            let (zp, zr) = z.split_at_mut((r * side.width).min(z.len()));
            shares.push(Share {
                x: xp,
                rows: r,
                scratch,
                out: yp,
                side: zp,
            });
            (x, y, z) = (xr, yr, zr);
        }
        let work = |share: Share<'_>| {
            let Share {
                x,
                rows,
                scratch,
                out,
                side,
            } = share;
            net.run(x, rows, scratch, out);
            then(out, side);
        };
        net.run_split(&self.helpers, shares, beside, &work)
    }
}

/// Values that go with each row of a batch: `width` per row.
struct Rows<'a> {
    values: &'a mut [f32],
    width: usize,
}

impl Rows<'_> {
    /// Nothing with the rows.
    fn none() -> Self {
        Rows {
            values: &mut [],
            width: 0,
        }
    }
}

/// One part of a batch's buffers: ping-pong activations and the kernel's list of live
/// inputs.
#[derive(Clone, Debug, Default)]
struct Scratch {
    act: [Vec<f32>; 2],
    live: Vec<u32>,
}

/// The columns of a small batch's split layer go to the threads in blocks of this many
/// (a multiple of every kernel's vector width).
const COLUMN_BLOCK: usize = 64;

/// Batches of up to this many rows are split by columns, larger ones by rows
/// ([`FrozenMlp::set_threads`]).
const COLUMN_ROWS: usize = 2;

/// The buffers of a small batch split by columns ([`Net::run_by_columns`]).
struct ColumnJobs<'a> {
    parts: usize,
    scratch: &'a mut [Scratch],
    wide: &'a mut Vec<f32>,
}

/// One thread's columns of a small batch's split layer.
struct ColumnShare<'a> {
    x: &'a [f32],
    rows: usize,
    scratch: &'a mut Scratch,
    cols: Range<usize>,
    /// The whole batch's rows of the split layer, shared by the threads.
    out: RowsOut,
}

// SAFETY: the threads' column ranges are disjoint and the buffer behind `out` outlives
// the join of every share (`Net::run_by_columns`).
unsafe impl Send for ColumnShare<'_> {}

/// The parts of a frozen network one forward pass reads.
#[derive(Clone, Copy)]
struct Net<'a> {
    layers: &'a [HostLinear],
    activation: Activation,
    kernel: Kernel,
}

/// One thread's share of a batch.
struct Share<'a> {
    x: &'a [f32],
    rows: usize,
    scratch: &'a mut Scratch,
    out: &'a mut [f32],
    /// The share's rows of the values that go with the batch ([`Rows`]).
    side: &'a mut [f32],
}

impl Net<'_> {
    /// The first job on this thread (after `beside`), the others on `helpers` (one each)
    /// at the same time.
    fn run_split<J: Send>(
        self,
        helpers: &[Arc<Helper>],
        mut jobs: Vec<J>,
        beside: impl FnOnce(),
        work: &(impl Fn(J) + Sync),
    ) -> Result<()> {
        match helpers.split_first() {
            Some((helper, rest)) if jobs.len() > 1 => {
                let last = jobs.pop().expect("two jobs or more");
                helper
                    .join(
                        "a frozen network's helper thread",
                        move || work(last),
                        || self.run_split(rest, jobs, beside, work),
                    )?
                    .1
            }
            _ => {
                beside();
                jobs.into_iter().for_each(work);
                Ok(())
            }
        }
    }

    /// `rows` rows of `x` through the network with the second-to-last layer's outputs
    /// split into `jobs.parts` column ranges (blocks of [`COLUMN_BLOCK`]), one per thread
    /// (each computes the layers before it whole), and the last layer on this thread into
    /// `out`.
    fn run_by_columns(
        self,
        helpers: &[Arc<Helper>],
        x: &[f32],
        rows: usize,
        jobs: ColumnJobs<'_>,
        out: &mut [f32],
        beside: impl FnOnce(),
    ) -> Result<()> {
        let ColumnJobs {
            parts,
            scratch,
            wide,
        } = jobs;
        let (last, split) = self.layers.split_last().expect("two layers or more");
        let split = split.last().expect("two layers or more");
        let width = split.outputs;
        wide.resize(rows * width, 0.0);
        let shared = RowsOut {
            ptr: wide.as_mut_ptr(),
            stride: width,
            from: 0,
        };
        let blocks = width / COLUMN_BLOCK;
        let bound = |p: usize| {
            if p == parts {
                width
            } else {
                p * blocks / parts * COLUMN_BLOCK
            }
        };
        let shares = scratch
            .iter_mut()
            .enumerate()
            .take(parts)
            .map(|(p, scratch)| ColumnShare {
                x,
                rows,
                scratch,
                cols: bound(p)..bound(p + 1),
                out: shared,
            })
            .collect();
        self.run_split(helpers, shares, beside, &|share| self.run_columns(share))?;
        let live = &mut scratch[0].live;
        self.kernel
            .layer(last, wide, rows, out, None, 0..last.outputs, live);
        Ok(())
    }

    /// The layers before the split one on the share's rows, then its columns of the split
    /// layer.
    fn run_columns(self, share: ColumnShare<'_>) {
        let ColumnShare {
            x,
            rows,
            scratch,
            cols,
            out,
        } = share;
        let split = self.layers.len() - 2;
        let Scratch { act, live } = scratch;
        let input = self.hidden(&self.layers[..split], x, rows, act, live);
        let act = Some(self.activation);
        // SAFETY: `out` holds `rows` rows of the split layer's outputs, and this share's
        // columns are its own until the join (`run_by_columns`).
        unsafe {
            self.kernel
                .layer_out(&self.layers[split], input, rows, out, act, cols, live)
        };
    }

    /// The whole network on `rows` rows of `x`: the hidden layers through the ping-pong
    /// buffers of `scratch`, the last layer straight into `out`.
    fn run(self, x: &[f32], rows: usize, scratch: &mut Scratch, out: &mut [f32]) {
        let (last, hidden) = self.layers.split_last().expect("one layer or more");
        let Scratch { act, live } = scratch;
        let input = self.hidden(hidden, x, rows, act, live);
        self.kernel
            .layer(last, input, rows, out, None, 0..last.outputs, live);
    }

    /// `layers`, each followed by the activation, on `rows` rows of `x`, alternating
    /// between the buffers of `act` (grown as needed); their output (`x` itself when
    /// `layers` is empty).
    fn hidden<'a>(
        self,
        layers: &[HostLinear],
        x: &'a [f32],
        rows: usize,
        act: &'a mut [Vec<f32>; 2],
        live: &mut Vec<u32>,
    ) -> &'a [f32] {
        let mut len = 0;
        for (k, layer) in layers.iter().enumerate() {
            let [a, b] = &mut *act;
            let (from, to) = if k % 2 == 0 { (b, a) } else { (a, b) };
            let input = if k == 0 { x } else { &from[..len] };
            len = rows * layer.outputs;
            if to.len() < len {
                to.resize(len, 0.0);
            }
            let (all, act) = (0..layer.outputs, Some(self.activation));
            self.kernel
                .layer(layer, input, rows, &mut to[..len], act, all, live);
        }
        match layers.len() {
            0 => x,
            n => &act[(n - 1) % 2][..len],
        }
    }
}

/// Which instructions the layer kernel uses.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
enum Kernel {
    #[cfg(target_arch = "x86_64")]
    Avx512,
    #[cfg(target_arch = "x86_64")]
    Avx2Fma,
    Portable,
}

impl Kernel {
    fn detect() -> Kernel {
        #[cfg(target_arch = "x86_64")]
        {
            use std::sync::OnceLock;
            static KERNEL: OnceLock<Kernel> = OnceLock::new();
            *KERNEL.get_or_init(|| {
                // The SIMD kernels' lists of live inputs count with `popcnt`.
                if std::env::var_os("EMBER_PORTABLE_KERNELS").is_some()
                    || !is_x86_feature_detected!("popcnt")
                {
                    Kernel::Portable
                } else if is_x86_feature_detected!("avx512f") {
                    Kernel::Avx512
                } else if is_x86_feature_detected!("avx2") && is_x86_feature_detected!("fma") {
                    Kernel::Avx2Fma
                } else {
                    Kernel::Portable
                }
            })
        }
        #[cfg(not(target_arch = "x86_64"))]
        Kernel::Portable
    }

    /// Outputs `cols` of `y = act(x·W + b)` for `rows` rows of `x` into `y` (`rows ×
    /// cols.len()`, row-major), listing live inputs in `live`. `cols` starts at a panel
    /// ([`PANEL`]), so that no vector of the kernels straddles two.
    #[allow(clippy::too_many_arguments)]
    fn layer(
        self,
        l: &HostLinear,
        x: &[f32],
        rows: usize,
        y: &mut [f32],
        act: Option<Activation>,
        cols: Range<usize>,
        live: &mut Vec<u32>,
    ) {
        assert!(
            y.len() >= rows * cols.len(),
            "frozen layer: output buffer length"
        );
        let out = RowsOut {
            ptr: y.as_mut_ptr(),
            stride: cols.len(),
            from: cols.start,
        };
        // SAFETY: `y` holds `rows` rows of `cols.len()` outputs (checked above) and is
        // borrowed mutably for the call.
        unsafe { self.layer_out(l, x, rows, out, act, cols, live) }
    }

    /// [`Kernel::layer`] into rows of a buffer that other threads may be writing other
    /// columns of: output `j` of row `r` at `y.ptr + r·y.stride + j − y.from`.
    ///
    /// # Safety
    /// Those places for `r < rows` and `j` in `cols` (`y.from ≤ cols.start`) are inside one
    /// allocation and nothing else reads or writes them during the call.
    #[allow(clippy::too_many_arguments)]
    unsafe fn layer_out(
        self,
        l: &HostLinear,
        x: &[f32],
        rows: usize,
        y: RowsOut,
        act: Option<Activation>,
        cols: Range<usize>,
        live: &mut Vec<u32>,
    ) {
        let (n_in, n_out, width) = (l.inputs, l.outputs, cols.len());
        assert!(
            x.len() >= rows * n_in
                && cols.start.is_multiple_of(PANEL)
                && y.from <= cols.start
                && cols.start <= cols.end
                && cols.end <= n_out
                && l.weight.len() == HostLinear::packed_len(n_in, n_out)
                && l.bias.len() == n_out,
            "frozen layer: buffer lengths"
        );
        // Row `r`'s outputs `cols`.
        // SAFETY: inside the buffer and this call's own (the function's contract).
        let row = |r: usize| unsafe {
            std::slice::from_raw_parts_mut(y.ptr.add(r * y.stride + cols.start - y.from), width)
        };
        #[cfg(target_arch = "x86_64")]
        if live.len() < n_in + tiles::LIVE_SLACK {
            live.resize(n_in + tiles::LIVE_SLACK, 0);
        }
        let relu = act == Some(Activation::Relu);
        #[cfg(target_arch = "x86_64")]
        let call = tiles::Call {
            l: tiles::Parts {
                inputs: n_in,
                weight: l.weight.as_ptr(),
                bias: l.bias.as_ptr(),
            },
            x: x.as_ptr(),
            rows,
            // The kernel computes outputs `from .. to`: the same places, counted from
            // `cols.start`.
            y: tiles::Out {
                ptr: y.ptr.wrapping_add(cols.start - y.from),
                stride: y.stride,
                from: cols.start,
            },
            to: cols.end,
            relu,
            live: live.as_mut_ptr(),
        };
        match self {
            #[cfg(target_arch = "x86_64")]
            // SAFETY: the features were detected at run time; the lengths are checked above
            // and the outputs' places are the caller's.
            Kernel::Avx512 => unsafe { tiles::layer_avx512(call) },
            #[cfg(target_arch = "x86_64")]
            // SAFETY: as above.
            Kernel::Avx2Fma => unsafe { tiles::layer_avx2(call) },
            Kernel::Portable => {
                for r in 0..rows {
                    layer_portable(l, &x[r * n_in..(r + 1) * n_in], row(r), relu, cols.clone());
                }
            }
        }
        if act == Some(Activation::Tanh) {
            (0..rows).for_each(|r| emberlab_kernels::kernels::tanh_in_place(row(r)));
        }
    }
}

/// Where a layer's outputs go ([`Kernel::layer_out`]): output `j` of row `r` at
/// `ptr + r·stride + j − from`.
#[derive(Clone, Copy)]
struct RowsOut {
    ptr: *mut f32,
    stride: usize,
    from: usize,
}

/// Outputs `cols` of `y = x·W + b` (ReLU'd when `relu`) for one row `x`, without SIMD:
/// the row starts as the bias and gains `x_i` times weight row `i` for every input `i`,
/// in order of `i` (the order of the [`tiles`] kernels, there with one rounding per
/// multiply-add). After a ReLU about half the inputs are zero; their weight rows add
/// nothing (the weights are finite) and are skipped.
fn layer_portable(l: &HostLinear, x: &[f32], y: &mut [f32], relu: bool, cols: Range<usize>) {
    y.copy_from_slice(&l.bias[cols.clone()]);
    for (i, &xi) in x.iter().enumerate() {
        if xi == 0.0 {
            continue;
        }
        // Panel by panel: the columns of `cols` in each, contiguous.
        let mut j = cols.start;
        while j < cols.end {
            let end = (j / PANEL + 1) * PANEL;
            let w = &l.weight[l.at(i, j)..][..end.min(cols.end) - j];
            for (yo, &wo) in y[j - cols.start..].iter_mut().zip(w) {
                *yo += xi * wo;
            }
            j = end;
        }
    }
    if relu {
        emberlab_kernels::kernels::relu_in_place(y);
    }
}

/// A [`GaussianTanhPolicy`] frozen for acting on the host.
#[derive(Clone, Debug)]
pub struct FrozenGaussianTanhPolicy {
    net: FrozenMlp,
    act_dim: usize,
    scale: Vec<f32>,
    bias: Vec<f32>,
    log_std_bounds: (f32, f32),
    raw: Vec<f32>,
}

impl FrozenGaussianTanhPolicy {
    /// Copies `policy`'s weights to the host.
    ///
    /// # Errors
    /// See [`FrozenMlp::new`].
    pub fn new(policy: &GaussianTanhPolicy) -> Result<Self> {
        if policy.is_sde() {
            return Err(Error::invalid(
                "frozen policy",
                "a gSDE policy",
                "a plain tanh-Gaussian policy (gSDE acts through act_host_sde)",
            ));
        }
        Ok(FrozenGaussianTanhPolicy {
            net: FrozenMlp::new(&policy.net)?,
            act_dim: policy.act_dim,
            scale: policy.scale.clone(),
            bias: policy.bias.clone(),
            log_std_bounds: policy.log_std_bounds,
            raw: Vec::new(),
        })
    }

    /// Copies `policy`'s current weights into the existing buffers.
    ///
    /// # Errors
    /// A policy of other shapes (the frozen one is then unchanged).
    pub fn refresh(&mut self, policy: &GaussianTanhPolicy) -> Result<()> {
        Error::check_len("frozen policy action width", self.act_dim, policy.act_dim)?;
        self.net.refresh(&policy.net)?;
        self.scale.copy_from_slice(&policy.scale);
        self.bias.copy_from_slice(&policy.bias);
        self.log_std_bounds = policy.log_std_bounds;
        Ok(())
    }

    /// Splits batches across `threads` threads ([`FrozenMlp::set_threads`]).
    ///
    /// # Errors
    /// As [`FrozenMlp::set_threads`].
    pub fn set_threads(&mut self, threads: usize) -> Result<()> {
        self.net.set_threads(threads)
    }

    /// Observation width.
    pub fn obs_dim(&self) -> usize {
        self.net.input_dim()
    }

    /// Stochastic actions for the rows of `obs` into `out` (cleared, `rows × act_dim`), with
    /// noise drawn from `rng` exactly as [`GaussianTanhPolicy::act_host`] draws it.
    ///
    /// # Errors
    /// Observations whose length is not a multiple of the observation width.
    pub fn act(&mut self, obs: &[f32], rng: &mut EmberRng, out: &mut Vec<f32>) -> Result<()> {
        let rows = self.rows(obs)?;
        let a = self.act_dim;
        out.clear();
        let (scale, bias, bounds) = (&self.scale, &self.bias, self.log_std_bounds);
        let then = |raw: &[f32], eps: &mut [f32]| squash(raw, eps, scale, bias, bounds);
        if self.net.splits_rows(rows) {
            // The noise first, so that each thread squashes its own rows.
            crate::noise::fill_standard_normal(rows * a, rng, out);
            let side = Rows {
                values: &mut out[..],
                width: a,
            };
            self.net
                .forward_then(obs, rows, &mut self.raw, side, || {}, &then)
        } else {
            // Not split, or split by columns: the noise on this thread while the helpers
            // compute.
            let (net, raw) = (&mut self.net, &mut self.raw);
            net.forward_beside(obs, rows, raw, || {
                crate::noise::fill_standard_normal(rows * a, rng, out)
            })?;
            then(raw, out);
            Ok(())
        }
    }

    /// The deterministic actions `tanh(μ(s))·scale + bias` (evaluation) into `out`.
    ///
    /// # Errors
    /// As [`FrozenGaussianTanhPolicy::act`].
    pub fn deterministic(&mut self, obs: &[f32], out: &mut Vec<f32>) -> Result<()> {
        let rows = self.rows(obs)?;
        self.net.forward(obs, rows, &mut self.raw)?;
        let a = self.act_dim;
        out.clear();
        for row in self.raw.chunks_exact(2 * a) {
            out.extend((0..a).map(|j| row[j].tanh() * self.scale[j] + self.bias[j]));
        }
        Ok(())
    }

    fn rows(&self, obs: &[f32]) -> Result<usize> {
        let d = self.obs_dim();
        if !obs.len().is_multiple_of(d) {
            return Err(Error::invalid(
                "observations",
                format!("{} values", obs.len()),
                format!("a multiple of the observation width {d}"),
            ));
        }
        Ok(obs.len() / d)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn layer(n_in: usize, n_out: usize) -> HostLinear {
        let weight: Vec<f32> = (0..n_in * n_out)
            .map(|i| ((i as f32) * 0.37).sin())
            .collect();
        let bias = (0..n_out).map(|i| (i as f32 * 0.1).cos()).collect();
        let l = HostLinear::new(n_in, n_out, &weight, bias);
        // The panels hold every weight where `at` says, and zero past the outputs.
        let mut padding = vec![true; l.weight.len()];
        for i in 0..n_in {
            for o in 0..n_out {
                assert_eq!(l.weight[l.at(i, o)], weight[i * n_out + o]);
                padding[l.at(i, o)] = false;
            }
        }
        let pads = l.weight.iter().zip(&padding).filter(|(_, p)| **p);
        assert!(pads.map(|(w, _)| *w).all(|w| w == 0.0));
        l
    }

    /// Inputs with some zeros (whole columns and single entries), as after a ReLU.
    fn inputs(rows: usize, n_in: usize) -> Vec<f32> {
        (0..rows * n_in)
            .map(|i| {
                let v = ((i as f32) * 0.11).cos();
                if (i % n_in).is_multiple_of(3) || i.is_multiple_of(7) {
                    0.0
                } else {
                    v
                }
            })
            .collect()
    }

    fn kernels() -> Vec<Kernel> {
        let mut kernels = vec![Kernel::Portable, Kernel::detect()];
        #[cfg(target_arch = "x86_64")]
        if is_x86_feature_detected!("avx2")
            && is_x86_feature_detected!("fma")
            && is_x86_feature_detected!("popcnt")
        {
            kernels.push(Kernel::Avx2Fma);
        }
        kernels
    }

    fn run(k: Kernel, l: &HostLinear, x: &[f32], rows: usize, act: Option<Activation>) -> Vec<f32> {
        // A guard value past the end shows any write beyond the rows.
        let mut y = vec![7.0f32; rows * l.outputs + 1];
        k.layer(l, x, rows, &mut y, act, 0..l.outputs, &mut Vec::new());
        assert_eq!(y[rows * l.outputs], 7.0, "{k:?} wrote past its rows");
        y.truncate(rows * l.outputs);
        y
    }

    #[test]
    fn every_kernel_agrees_with_a_naive_product() {
        // Widths around the tiles: partial vectors (12, 19), single vectors after the
        // blocks (80 = 5·16), a block and a tail (261).
        for (n_in, n_out) in [(37, 19), (17, 12), (5, 80), (9, 261), (3, 256)] {
            let l = layer(n_in, n_out);
            for rows in [1, 2, 3, 4, 5, 6, 7, 9] {
                let x = inputs(rows, n_in);
                for act in [None, Some(Activation::Relu), Some(Activation::Tanh)] {
                    let mut naive = vec![0.0f32; rows * n_out];
                    for r in 0..rows {
                        for o in 0..n_out {
                            let mut acc = l.bias[o] as f64;
                            for i in 0..n_in {
                                acc += x[r * n_in + i] as f64 * l.weight[l.at(i, o)] as f64;
                            }
                            naive[r * n_out + o] = match act {
                                None => acc as f32,
                                Some(Activation::Relu) => acc.max(0.0) as f32,
                                Some(Activation::Tanh) => (acc as f32).tanh(),
                            };
                        }
                    }
                    for k in kernels() {
                        let y = run(k, &l, &x, rows, act);
                        for (a, b) in y.iter().zip(&naive) {
                            assert!(
                                (a - b).abs() < 1e-4,
                                "{k:?}, {n_in}→{n_out}, {rows} rows, {act:?}: {a} vs {b}"
                            );
                        }
                    }
                }
            }
        }
    }

    #[test]
    fn a_row_gets_the_same_bits_in_any_batch_and_on_either_simd_kernel() {
        let l = layer(23, 261);
        let x = inputs(9, 23);
        let simd: Vec<Kernel> = kernels()
            .into_iter()
            .filter(|k| *k != Kernel::Portable)
            .collect();
        let reference = run(simd[0], &l, &x, 9, Some(Activation::Relu));
        for k in simd {
            assert_eq!(
                run(k, &l, &x, 9, Some(Activation::Relu)),
                reference,
                "{k:?}"
            );
            for r in 0..9 {
                let one = run(k, &l, &x[r * 23..(r + 1) * 23], 1, Some(Activation::Relu));
                assert_eq!(one[..], reference[r * 261..(r + 1) * 261], "{k:?}, row {r}");
            }
        }
    }

    #[test]
    fn a_range_of_columns_gets_the_full_layers_bits() {
        let l = layer(23, 261);
        for rows in [1, 2, 3, 4, 6] {
            let x = inputs(rows, 23);
            for k in kernels() {
                let full = run(k, &l, &x, rows, Some(Activation::Relu));
                for cols in [0..64, 64..261, 128..200, 16..24, 48..61, 256..261, 48..48] {
                    let w = cols.len();
                    let mut y = vec![7.0f32; rows * w + 1];
                    let mut live = vec![0; 5];
                    k.layer(
                        &l,
                        &x,
                        rows,
                        &mut y,
                        Some(Activation::Relu),
                        cols.clone(),
                        &mut live,
                    );
                    assert_eq!(y[rows * w], 7.0, "{k:?} wrote past its columns");
                    for r in 0..rows {
                        let want = &full[r * 261..(r + 1) * 261][cols.clone()];
                        assert_eq!(&y[r * w..(r + 1) * w], want, "{k:?}, {cols:?}, row {r}");
                    }
                }
            }
        }
    }

    #[test]
    fn relu_keeps_a_nan() {
        let l = layer(4, 20);
        let mut x = inputs(3, 4);
        x[5] = f32::NAN;
        for k in kernels() {
            let y = run(k, &l, &x, 3, Some(Activation::Relu));
            assert!(
                y[20..40].iter().all(|v| v.is_nan()),
                "{k:?}: {:?}",
                &y[20..40]
            );
            assert!(y[..20].iter().chain(&y[40..]).all(|v| *v >= 0.0), "{k:?}");
        }
    }
}
