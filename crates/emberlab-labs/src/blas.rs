//! The GEMM paths the labs compare at the updates' shapes: flex's GEMM library
//! ([`crate::host_gemm`], as `emberlab_kernels::matmul` calls it) and the `cblas_sgemm` of
//! BLAS libraries from PyPI's wheels (`mkl`, `scipy-openblas32`), loaded at run time from
//! `EMBER_BLAS` (what `benches/reference/setup-blas.sh` prints). Shared by the
//! `gemm_libraries` program and the `gemm_paths` criterion bench.

/// `cblas_sgemm(layout, trans_a, trans_b, m, n, k, alpha, a, lda, b, ldb, beta, c, ldc)`.
pub type Sgemm = unsafe extern "C" fn(
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

/// Where a product comes from, valid while the [`Libraries`] it came from lives.
#[derive(Clone, Copy)]
pub enum Library<'a> {
    /// flex's GEMM library.
    Flex,
    /// A loaded BLAS library's `cblas_sgemm`.
    Blas(Blas<'a>),
}

/// A `cblas_sgemm` loaded by [`Libraries::from_env`]; only it makes one, and the lifetime
/// keeps the library loaded while this is used.
#[derive(Clone, Copy)]
pub struct Blas<'a> {
    sgemm: Sgemm,
    _loaded: std::marker::PhantomData<&'a Libraries>,
}

/// Which operand is stored transposed (as a training step stores it).
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum Layout {
    /// `lhs · rhs`, both as stored: a layer's forward product.
    Plain,
    /// `lhsᵀ · rhs` with `lhs` stored `[k, m]`: a weight gradient.
    LhsT,
    /// `lhs · rhsᵀ` with `rhs` stored `[n, k]`: an input gradient.
    RhsT,
}

/// The products of SAC's update on HalfCheetah (batch 256, 256-wide layers, 23 inputs on
/// the first layer) and TD3's zoo 400 × 300 layers, as `((m, n, k), layout)`.
pub const UPDATE_SHAPES: [((usize, usize, usize), Layout); 8] = [
    ((256, 256, 256), Layout::Plain),
    ((256, 256, 256), Layout::LhsT),
    ((256, 256, 256), Layout::RhsT),
    ((256, 256, 23), Layout::Plain),
    ((23, 256, 256), Layout::LhsT),
    ((256, 300, 400), Layout::Plain),
    ((400, 300, 256), Layout::LhsT),
    ((256, 400, 300), Layout::RhsT),
];

/// Operands of one product: `lhs` is `[m, k]` (stored `[k, m]` for `LhsT`), `rhs` `[k, n]`
/// (stored `[n, k]` for `RhsT`), row-major, with values in `[-1, 1)` from `seed`.
pub struct Operands {
    m: usize,
    n: usize,
    k: usize,
    layout: Layout,
    lhs: Vec<f32>,
    rhs: Vec<f32>,
}

impl Operands {
    /// Operands of the product `(m, n, k)` stored as `layout` says.
    pub fn new((m, n, k): (usize, usize, usize), layout: Layout, seed: u64) -> Operands {
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

    /// Multiply-adds of one product, times two.
    pub fn flops(&self) -> f64 {
        2.0 * (self.m * self.n * self.k) as f64
    }

    /// Length of the product `[m, n]`.
    pub fn out_len(&self) -> usize {
        self.m * self.n
    }

    /// `dst ← lhs · rhs` (`[m, n]`, row-major) by `library`.
    ///
    /// # Panics
    /// If `dst` is not `m · n` long, or a dimension exceeds `i32` for a BLAS library.
    pub fn product(&self, library: Library<'_>, dst: &mut [f32]) {
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
                crate::host_gemm((m, n, k), dst, a, b);
            }
            Library::Blas(Blas { sgemm, .. }) => {
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
                // checked by `Libraries::from_env`), with the leading dimensions of the
                // buffers.
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

/// flex and the BLAS libraries `EMBER_BLAS` names, loaded (they stay open while this
/// lives).
pub struct Libraries {
    /// `(name, cblas_sgemm)`, flex first (without one).
    list: Vec<(String, Option<Sgemm>)>,
    _open: Vec<libloading::Library>,
}

impl Libraries {
    /// flex alone.
    pub fn flex() -> Libraries {
        Libraries {
            list: vec![("flex".to_string(), None)],
            _open: Vec::new(),
        }
    }

    /// How many libraries, flex included.
    pub fn len(&self) -> usize {
        self.list.len()
    }

    /// Whether there are none (never: flex is always there).
    pub fn is_empty(&self) -> bool {
        self.list.is_empty()
    }

    /// `(name, library)`, flex first.
    pub fn iter(&self) -> impl Iterator<Item = (&str, Library<'_>)> {
        self.list.iter().map(|(name, sgemm)| {
            let library = match sgemm {
                None => Library::Flex,
                Some(sgemm) => Library::Blas(Blas {
                    sgemm: *sgemm,
                    _loaded: std::marker::PhantomData,
                }),
            };
            (name.as_str(), library)
        })
    }

    /// flex and every library of `EMBER_BLAS` (`name=path:symbol` entries separated by `;`,
    /// the symbol with cblas_sgemm's signature), called one thread per call.
    ///
    /// # Errors
    /// `MKL_NUM_THREADS` or `OPENBLAS_NUM_THREADS` not `1`, `MKL_INTERFACE_LAYER` not
    /// `LP64`, `EMBER_BLAS` unset or malformed, a library that does not load or lacks the
    /// symbol.
    pub fn from_env() -> Result<Libraries, String> {
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
        let mut all = Libraries::flex();
        for entry in spec.split(';').filter(|e| !e.is_empty()) {
            let malformed = || format!("EMBER_BLAS entry {entry:?}: expected name=path:symbol");
            let (name, rest) = entry.split_once('=').ok_or_else(malformed)?;
            let (path, symbol) = rest.rsplit_once(':').ok_or_else(malformed)?;
            // SAFETY: loading a BLAS library runs its initialisers, which expect nothing of
            // us.
            let lib = unsafe { libloading::Library::new(path) }
                .map_err(|e| format!("{name}: cannot load {path}: {e}"))?;
            // SAFETY: the symbol is documented to have cblas_sgemm's signature.
            let sgemm: Sgemm = unsafe { lib.get::<Sgemm>(symbol.as_bytes()) }
                .map(|f| *f)
                .map_err(|e| format!("{name}: no {symbol} in {path}: {e}"))?;
            all._open.push(lib);
            all.list.push((name.to_string(), Some(sgemm)));
        }
        Ok(all)
    }

    /// Every library's product of one set of operands against flex's (relative error ≤
    /// 1e-4 of the largest value).
    ///
    /// # Errors
    /// The first library whose product differs, or has a NaN.
    pub fn check(&self, dims: (usize, usize, usize), layout: Layout) -> Result<(), String> {
        let x = Operands::new(dims, layout, 7);
        let mut want = vec![0.0; x.out_len()];
        x.product(Library::Flex, &mut want);
        let scale = want.iter().fold(1.0f32, |a, v| a.max(v.abs()));
        for (name, library) in self.iter() {
            let mut got = vec![f32::NAN; want.len()];
            x.product(library, &mut got);
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
}
