//! flex's GEMM (the `gemm` crate, called on host buffers by [`emberlab_labs::host_gemm`]
//! as `emberlab_kernels::matmul` calls it) against the BLAS libraries of PyPI's wheels
//! (`cblas_sgemm` of `mkl` and `scipy-openblas32`, loaded at run time) at the products of
//! SAC's and TD3's updates: batch 256 through 256-wide layers (HalfCheetah's 23 inputs on
//! the first), TD3's zoo 400 × 300, each in the forward layout and the two transposed
//! layouts of the backward pass (`lhsᵀ · grad` for weights, `grad · rhsᵀ` for inputs). One
//! thread per library call (`MKL_NUM_THREADS=1`, `OPENBLAS_NUM_THREADS=1`, checked), on one
//! thread and on two threads at once (each its own products, as an update's two parts
//! run). Every library's product is checked against flex's before it is timed.
//!
//! ```sh
//! benches/reference/setup-blas.sh > blas.env && . ./blas.env
//! cargo run --release -p emberlab-labs --bin gemm_libraries
//! ```
//!
//! `EMBER_BLAS` names the libraries: `name=path:symbol` entries separated by `;` (the symbol
//! has cblas_sgemm's signature). Prints one line per shape, layout, thread count and library,
//! the median rate per thread of 7 rounds and their range:
//! `gemm_libraries 256x256x256 layout=LhsT threads=1 library=mkl GFLOP/s per thread: median …`.

use std::sync::Barrier;
use std::time::{Duration, Instant};

/// How long each thread multiplies per measurement.
const SECONDS: f64 = 0.25;

/// Measurements per configuration, the libraries alternated within each round (a shared
/// VM's speed drifts by tens of percent over seconds): the median and the range are printed.
const ROUNDS: usize = 7;

/// `cblas_sgemm(layout, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)`.
type Sgemm = unsafe extern "C" fn(
    i32,
    i32,
    i32,
    i32,
    i32,
    i32,
    f32,
    *const f32,
    i32,
    *const f32,
    i32,
    f32,
    *mut f32,
    i32,
);

const ROW_MAJOR: i32 = 101;
const NO_TRANS: i32 = 111;
const TRANS: i32 = 112;

/// Where a product comes from.
#[derive(Clone, Copy)]
enum Library {
    /// flex's GEMM library.
    Flex,
    /// A BLAS library's `cblas_sgemm`.
    Blas(Sgemm),
}

/// Which operand is stored transposed (as a training step stores it).
#[derive(Clone, Copy, Debug, PartialEq)]
enum Layout {
    Plain,
    LhsT,
    RhsT,
}

/// Operands of one product: `lhs` is `[m, k]` (stored `[k, m]` for `LhsT`), `rhs` `[k, n]`
/// (stored `[n, k]` for `RhsT`), row-major.
struct Operands {
    m: usize,
    n: usize,
    k: usize,
    layout: Layout,
    lhs: Vec<f32>,
    rhs: Vec<f32>,
}

impl Operands {
    fn new((m, n, k): (usize, usize, usize), layout: Layout, seed: u64) -> Operands {
        let mut state = seed.wrapping_mul(0x9E37_79B9_7F4A_7C15) | 1;
        let mut draw = |len: usize| -> Vec<f32> {
            (0..len)
                .map(|_| {
                    state ^= state << 13;
                    state ^= state >> 7;
                    state ^= state << 17;
                    (state >> 40) as f32 / (1u64 << 24) as f32 * 2.0 - 1.0
                })
                .collect()
        };
        Operands {
            lhs: draw(m * k),
            rhs: draw(k * n),
            m,
            n,
            k,
            layout,
        }
    }

    /// `dst ← lhs · rhs` (`[m, n]`, row-major) by `library`.
    fn product(&self, library: Library, dst: &mut [f32]) {
        let (m, n, k) = (self.m, self.n, self.k);
        assert_eq!(dst.len(), m * n);
        match library {
            Library::Flex => {
                // (values, row stride, column stride) of each operand as stored.
                let a = match self.layout {
                    Layout::LhsT => (&self.lhs[..], 1, m),
                    _ => (&self.lhs[..], k, 1),
                };
                let b = match self.layout {
                    Layout::RhsT => (&self.rhs[..], 1, k),
                    _ => (&self.rhs[..], n, 1),
                };
                emberlab_labs::host_gemm((m, n, k), dst, a, b);
            }
            Library::Blas(sgemm) => {
                let (ta, lda) = match self.layout {
                    Layout::LhsT => (TRANS, m),
                    _ => (NO_TRANS, k),
                };
                let (tb, ldb) = match self.layout {
                    Layout::RhsT => (TRANS, k),
                    _ => (NO_TRANS, n),
                };
                let i = |v: usize| i32::try_from(v).expect("a dimension over i32::MAX");
                // SAFETY: cblas_sgemm's contract (32-bit integers: MKL_INTERFACE_LAYER=LP64,
                // checked in `main`), with the leading dimensions of the buffers.
                unsafe {
                    sgemm(
                        ROW_MAJOR,
                        ta,
                        tb,
                        i(m),
                        i(n),
                        i(k),
                        1.0,
                        self.lhs.as_ptr(),
                        i(lda),
                        self.rhs.as_ptr(),
                        i(ldb),
                        0.0,
                        dst.as_mut_ptr(),
                        i(n),
                    );
                }
            }
        }
    }
}

fn main() -> Result<(), String> {
    // One thread per library call, as an update's parts run, and MKL's 32-bit integers.
    for (var, want) in [
        ("MKL_NUM_THREADS", "1"),
        ("OPENBLAS_NUM_THREADS", "1"),
        ("MKL_INTERFACE_LAYER", "LP64"),
    ] {
        if std::env::var(var).ok().as_deref() != Some(want) {
            return Err(format!(
                "{var} must be {want}: export what benches/reference/setup-blas.sh prints"
            ));
        }
    }
    let spec = std::env::var("EMBER_BLAS").map_err(|_| {
        "EMBER_BLAS is not set: run benches/reference/setup-blas.sh and export what it prints"
            .to_string()
    })?;
    // Loaded libraries stay open until the end of `main`.
    let mut open = Vec::new();
    let mut libraries = vec![("flex".to_string(), Library::Flex)];
    for entry in spec.split(';').filter(|e| !e.is_empty()) {
        let (name, rest) = entry
            .split_once('=')
            .ok_or_else(|| format!("EMBER_BLAS entry {entry:?}: expected name=path:symbol"))?;
        let (path, symbol) = rest
            .rsplit_once(':')
            .ok_or_else(|| format!("EMBER_BLAS entry {entry:?}: expected name=path:symbol"))?;
        // SAFETY: loading a BLAS library runs its initialisers, which expect nothing of us.
        let lib = unsafe { libloading::Library::new(path) }
            .map_err(|e| format!("{name}: cannot load {path}: {e}"))?;
        // SAFETY: the symbol is documented to have cblas_sgemm's signature.
        let sgemm: Sgemm = unsafe { lib.get::<Sgemm>(symbol.as_bytes()) }
            .map(|f| *f)
            .map_err(|e| format!("{name}: no {symbol} in {path}: {e}"))?;
        open.push(lib);
        libraries.push((name.to_string(), Library::Blas(sgemm)));
    }
    println!(
        "gemm_libraries cpu={:?} flex_kernels={}",
        emberlab_core::machine::cpu_model(),
        emberlab::backend::gemm_kernels()
    );
    let shapes = [
        // SAC, HalfCheetah: hidden 256 × 256, batch 256; first layer 23 inputs.
        ((256, 256, 256), Layout::Plain),
        ((256, 256, 256), Layout::LhsT),
        ((256, 256, 256), Layout::RhsT),
        ((256, 256, 23), Layout::Plain),
        ((23, 256, 256), Layout::LhsT),
        // TD3, zoo's 400 × 300, batch 256.
        ((256, 300, 400), Layout::Plain),
        ((400, 300, 256), Layout::LhsT),
        ((256, 400, 300), Layout::RhsT),
    ];
    for (dims, layout) in shapes {
        check(dims, layout, &libraries)?;
        for threads in [1, 2] {
            // Per library, the mean rate per thread of each round.
            let mut measured = vec![Vec::new(); libraries.len()];
            for _ in 0..ROUNDS {
                for ((_, library), rounds) in libraries.iter().zip(&mut measured) {
                    let rates = rates(dims, layout, *library, threads);
                    rounds.push(rates.iter().sum::<f64>() / rates.len() as f64 / 1e9);
                }
            }
            let (m, n, k) = dims;
            for ((name, _), mut rounds) in libraries.iter().zip(measured) {
                rounds.sort_by(f64::total_cmp);
                println!(
                    "gemm_libraries {m}x{n}x{k} layout={layout:?} threads={threads} library={name} GFLOP/s per thread: median {:.1} ({:.1}-{:.1})",
                    rounds[ROUNDS / 2],
                    rounds[0],
                    rounds[ROUNDS - 1]
                );
            }
        }
    }
    drop(open);
    Ok(())
}

/// Every library's product of one set of operands against flex's (relative error ≤ 1e-4).
fn check(
    dims: (usize, usize, usize),
    layout: Layout,
    libraries: &[(String, Library)],
) -> Result<(), String> {
    let x = Operands::new(dims, layout, 7);
    let mut want = vec![0.0; dims.0 * dims.1];
    x.product(Library::Flex, &mut want);
    let scale = want.iter().fold(1.0f32, |a, v| a.max(v.abs()));
    for (name, library) in libraries {
        let mut got = vec![f32::NAN; want.len()];
        x.product(*library, &mut got);
        let err = got
            .iter()
            .zip(&want)
            .fold(0.0f32, |a, (g, w)| a.max((g - w).abs()));
        // (f32::max skips NaN: a NaN anywhere fails on its own.)
        if got.iter().any(|v| v.is_nan()) || err > 1e-4 * scale {
            return Err(format!(
                "{name}: {dims:?} {layout:?} differs from flex's product by {err} (scale {scale})"
            ));
        }
    }
    Ok(())
}

/// Each of `threads` threads multiplies its own operands for [`SECONDS`], all starting
/// together; their rates in FLOP/s.
fn rates(
    dims: (usize, usize, usize),
    layout: Layout,
    library: Library,
    threads: usize,
) -> Vec<f64> {
    let start = Barrier::new(threads);
    std::thread::scope(|s| {
        let workers: Vec<_> = (0..threads)
            .map(|t| {
                let start = &start;
                s.spawn(move || one_thread(dims, layout, library, t as u64, start))
            })
            .collect();
        workers
            .into_iter()
            .map(|w| w.join().expect("a multiplying thread panicked"))
            .collect()
    })
}

/// One thread's rate: products until [`SECONDS`] have passed.
fn one_thread(
    dims: (usize, usize, usize),
    layout: Layout,
    library: Library,
    seed: u64,
    start: &Barrier,
) -> f64 {
    let _flush = emberlab::backend::denormals::flush_denormals_here();
    let x = Operands::new(dims, layout, seed + 1);
    let mut dst = vec![0.0; dims.0 * dims.1];
    for _ in 0..3 {
        x.product(library, &mut dst);
    }
    start.wait();
    let (began, mut products) = (Instant::now(), 0u64);
    while began.elapsed() < Duration::from_secs_f64(SECONDS) {
        x.product(library, std::hint::black_box(&mut dst));
        products += 1;
    }
    let (m, n, k) = dims;
    2.0 * (m * n * k) as f64 * products as f64 / began.elapsed().as_secs_f64()
}
