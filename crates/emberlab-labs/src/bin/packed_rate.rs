//! What packing the weights once per update would buy: the forward product `Y = X · W`
//! of an MLP layer (`X` `[rows, inputs]`, `W` `[inputs, outputs]`, both row-major) at the
//! shapes of SAC's and TD3's updates, on one thread, hot operands:
//!
//! - `library`: flex's GEMM library (the `gemm` crate), which packs `W` on every call;
//! - `own, packed once`: an AVX-512 driver of this file over `W` packed into 64-output
//!   panels before the timing (the packing an update would do once and share);
//! - `own, packed per call`: the same with the packing inside each product;
//! - `own, unpacked`: the same driver reading `W` where it is stored.
//!
//! ```sh
//! cargo run --release -p emberlab-labs --bin packed_rate            # the default shapes
//! cargo run --release -p emberlab-labs --bin packed_rate -- 128 400 300
//! ```
//!
//! Each variant's result is checked against the library's before timing.

use std::time::{Duration, Instant};

/// How long each variant multiplies per round.
const SECONDS: f64 = 0.4;
/// Rounds per shape, variants alternated in each.
const ROUNDS: usize = 5;
/// Outputs per panel: four vectors of 16.
const PANEL: usize = 64;
/// Rows of `X` per microkernel call.
const ROWS: usize = 6;
/// Inputs per block of the depth loop: a panel's block (64 × 128 × 4 B = 32 KB) stays in L1.
const KC: usize = 128;

fn main() -> Result<(), String> {
    if !std::arch::is_x86_feature_detected!("avx512f") {
        return Err("packed_rate needs AVX-512".into());
    }
    let dims: Vec<usize> = std::env::args()
        .skip(1)
        .map(|a| a.parse().map_err(|_| format!("not a size: {a:?}")))
        .collect::<Result<_, _>>()?;
    let shapes: Vec<(usize, usize, usize)> = match dims.as_slice() {
        [] => vec![
            (128, 400, 300),
            (128, 300, 400),
            (256, 400, 300),
            (128, 256, 256),
            (256, 256, 256),
        ],
        [r, o, i] => vec![(*r, *o, *i)],
        _ => return Err("usage: packed_rate [ROWS OUTPUTS INPUTS]".into()),
    };
    let _flush = emberlab::backend::denormals::flush_denormals_here();
    for (rows, outputs, inputs) in shapes {
        let mut seed = 7u64;
        let x = emberlab_labs::values(rows * inputs, &mut seed);
        let w = emberlab_labs::values(inputs * outputs, &mut seed);
        let mut reference = vec![0.0; rows * outputs];
        library(&x, &w, &mut reference, (rows, outputs, inputs));
        let packed = pack(&w, outputs, inputs);
        let mut y = vec![0.0; rows * outputs];
        let check = |y: &[f32], what: &str| {
            let worst = y
                .iter()
                .zip(&reference)
                .map(|(a, b)| (a - b).abs())
                .fold(0.0f32, f32::max);
            assert!(worst < 1e-4, "{what}: differs from the library by {worst}");
        };
        // SAFETY: AVX-512 was detected above.
        unsafe { own(&x, &packed, PANEL, &mut y, (rows, outputs, inputs)) };
        check(&y, "packed");
        unsafe { own(&x, &w, outputs, &mut y, (rows, outputs, inputs)) };
        check(&y, "unpacked");

        let mut rates = vec![Vec::new(); 4];
        let mut scratch = vec![0.0; packed.len()];
        for _ in 0..ROUNDS {
            rates[0].push(rate((rows, outputs, inputs), || {
                library(&x, &w, &mut y, (rows, outputs, inputs))
            }));
            rates[1].push(rate((rows, outputs, inputs), || unsafe {
                own(&x, &packed, PANEL, &mut y, (rows, outputs, inputs))
            }));
            rates[2].push(rate((rows, outputs, inputs), || unsafe {
                pack_into(&w, outputs, inputs, &mut scratch);
                own(&x, &scratch, PANEL, &mut y, (rows, outputs, inputs))
            }));
            rates[3].push(rate((rows, outputs, inputs), || unsafe {
                own(&x, &w, outputs, &mut y, (rows, outputs, inputs))
            }));
        }
        for (name, r) in [
            "library",
            "own, packed once",
            "own, packed per call",
            "own, unpacked",
        ]
        .iter()
        .zip(&mut rates)
        {
            r.sort_by(f64::total_cmp);
            println!(
                "packed_rate rows={rows} outputs={outputs} inputs={inputs} {name}: median {:.1} GFLOP/s (min {:.1}, max {:.1})",
                r[ROUNDS / 2] / 1e9,
                r[0] / 1e9,
                r[ROUNDS - 1] / 1e9
            );
        }
    }
    Ok(())
}

/// FLOP/s of `product` run for [`SECONDS`].
fn rate((r, o, i): (usize, usize, usize), mut product: impl FnMut()) -> f64 {
    for _ in 0..3 {
        product();
    }
    let (began, mut n) = (Instant::now(), 0u64);
    while began.elapsed() < Duration::from_secs_f64(SECONDS) {
        product();
        n += 1;
    }
    2.0 * (r * o * i) as f64 * n as f64 / began.elapsed().as_secs_f64()
}

/// `y = x · w` by the library, as flex calls it.
fn library(x: &[f32], w: &[f32], y: &mut [f32], (r, o, i): (usize, usize, usize)) {
    emberlab_labs::host_gemm((r, o, i), y, (x, i, 1), (w, o, 1));
}

/// `w` (`[inputs, outputs]`) in panels of [`PANEL`] outputs: panel `p`, input `k` holds
/// outputs `p·64 .. p·64 + 64` (zeros past the last).
fn pack(w: &[f32], outputs: usize, inputs: usize) -> Vec<f32> {
    let mut packed = vec![0.0; outputs.div_ceil(PANEL) * PANEL * inputs];
    pack_into(w, outputs, inputs, &mut packed);
    packed
}

/// [`pack`] into `packed`.
fn pack_into(w: &[f32], outputs: usize, inputs: usize, packed: &mut [f32]) {
    for p in 0..outputs.div_ceil(PANEL) {
        let (o0, width) = (p * PANEL, PANEL.min(outputs - p * PANEL));
        for k in 0..inputs {
            let dst = &mut packed[(p * inputs + k) * PANEL..][..PANEL];
            dst[..width].copy_from_slice(&w[k * outputs + o0..][..width]);
            dst[width..].fill(0.0);
        }
    }
}

/// `y = x · w` with `w` packed (`a_stride` = [`PANEL`]: panels of [`pack`]) or as stored
/// (`a_stride` = outputs).
///
/// # Safety
/// The CPU must have AVX-512F; the slices must hold their shapes.
#[target_feature(enable = "avx512f")]
unsafe fn own(
    x: &[f32],
    a: &[f32],
    a_stride: usize,
    y: &mut [f32],
    (rows, outputs, inputs): (usize, usize, usize),
) {
    assert!(x.len() >= rows * inputs && y.len() >= rows * outputs);
    assert!(
        a.len()
            >= if a_stride == PANEL {
                outputs.div_ceil(PANEL) * PANEL * inputs
            } else {
                inputs * outputs
            }
    );
    for k0 in (0..inputs).step_by(KC) {
        let kc = KC.min(inputs - k0);
        for p in 0..outputs.div_ceil(PANEL) {
            let o0 = p * PANEL;
            let width = PANEL.min(outputs - o0);
            // SAFETY (this block's pointers): the asserts above keep every panel, row and
            // output block in bounds; AVX-512F is this function's precondition.
            let a_block = if a_stride == PANEL {
                a[(p * inputs + k0) * PANEL..].as_ptr()
            } else {
                a[k0 * a_stride + o0..].as_ptr()
            };
            let vectors = width.div_ceil(16);
            let tail = width - (vectors - 1) * 16;
            let mask: u16 = if tail == 16 {
                0xffff
            } else {
                (1u16 << tail) - 1
            };
            for r0 in (0..rows).step_by(ROWS) {
                let call = Call {
                    kc,
                    a: a_block,
                    a_stride,
                    x: x[r0 * inputs + k0..].as_ptr(),
                    x_stride: inputs,
                    y: y[r0 * outputs + o0..].as_mut_ptr(),
                    y_stride: outputs,
                    mask,
                    accumulate: k0 > 0,
                };
                unsafe { dispatch(vectors, ROWS.min(rows - r0), call) };
            }
        }
    }
}

/// One microkernel call's operands.
#[derive(Clone, Copy)]
struct Call {
    kc: usize,
    a: *const f32,
    a_stride: usize,
    x: *const f32,
    x_stride: usize,
    y: *mut f32,
    y_stride: usize,
    mask: u16,
    accumulate: bool,
}

/// [`kernel`] for `vectors` × `rows`.
#[target_feature(enable = "avx512f")]
unsafe fn dispatch(vectors: usize, rows: usize, c: Call) {
    macro_rules! go {
        ($($v:literal),*; $($r:literal),*) => {
            go!(@v [$($v),*] [$($r),*])
        };
        (@v [$($v:literal),*] $rs:tt) => {
            match vectors {
                $($v => go!(@r $v $rs),)*
                _ => unreachable!(),
            }
        };
        (@r $v:literal [$($r:literal),*]) => {
            match rows {
                $($r => kernel::<$v, $r>(c),)*
                _ => unreachable!(),
            }
        };
    }
    // SAFETY: the caller's bounds hold for every kernel shape.
    unsafe { go!(1, 2, 3, 4; 1, 2, 3, 4, 5, 6) }
}

/// `V` vectors of outputs × `R` rows of `x`, over `kc` inputs.
#[target_feature(enable = "avx512f")]
#[inline]
unsafe fn kernel<const V: usize, const R: usize>(c: Call) {
    // SAFETY: `c` holds pointers whose `kc` inputs, `R` rows and `V` vectors (the last
    // one masked where the panel is not full) lie in bounds ([`own`]'s asserts), and the
    // CPU has AVX-512F (this function's precondition).
    unsafe {
        use std::arch::x86_64::*;
        let mut acc = [[_mm512_setzero_ps(); V]; R];
        for k in 0..c.kc {
            let mut a = [_mm512_setzero_ps(); V];
            for (v, a) in a.iter_mut().enumerate() {
                *a = if v + 1 == V && c.a_stride != PANEL {
                    _mm512_maskz_loadu_ps(c.mask, c.a.add(k * c.a_stride + 16 * v))
                } else {
                    _mm512_loadu_ps(c.a.add(k * c.a_stride + 16 * v))
                };
            }
            for (r, acc) in acc.iter_mut().enumerate() {
                let b = _mm512_set1_ps(*c.x.add(r * c.x_stride + k));
                for v in 0..V {
                    acc[v] = _mm512_fmadd_ps(a[v], b, acc[v]);
                }
            }
        }
        for (r, acc) in acc.iter().enumerate() {
            for (v, acc) in acc.iter().enumerate() {
                let mask = if v + 1 == V { c.mask } else { 0xffff };
                let dst = c.y.add(r * c.y_stride + 16 * v);
                let value = if c.accumulate {
                    _mm512_add_ps(*acc, _mm512_maskz_loadu_ps(mask, dst))
                } else {
                    *acc
                };
                _mm512_mask_storeu_ps(dst, mask, value);
            }
        }
    }
}
