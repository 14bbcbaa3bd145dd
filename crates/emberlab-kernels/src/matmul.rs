//! [`matmul`]: burn's matrix product with the output written straight into a new buffer on
//! flex, differentiable.
//!
//! flex allocates every GEMM output as a zeroed byte vector and then copies it into a
//! 16-byte aligned buffer (cubecl's `Bytes::from_bytes_vec`): a memset and a memcpy of the
//! output around every product, 8% of the CPU time of a SAC update. [`HostMatmul`] calls
//! the same `gemm` kernels with the same strides into an uninitialised `f32` vector that
//! becomes the tensor's buffer, and its backward pass does the same for both gradients.

use burn::backend::autodiff::checkpoint::base::Checkpointer;
use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::autodiff::grads::Gradients;
use burn::backend::autodiff::ops::{Backward, Ops, OpsKind, binary};
use burn::backend::{Autodiff, Backend, backend_extension, tensor::FloatTensor};
use burn::tensor::Tensor;

/// A differentiable matrix product with flex's GEMM writing into its own buffer;
/// implemented for flex and autodiff over it.
#[backend_extension(Flex: cfg(feature = "flex"), Autodiff)]
pub trait HostMatmul: Backend {
    /// `lhs · rhs` over the last two dimensions, for rank-2 or rank-3 operands whose batch
    /// dimensions are equal (no broadcasting); other cases take burn's `matmul`.
    fn host_matmul(lhs: FloatTensor<Self>, rhs: FloatTensor<Self>) -> FloatTensor<Self>;

    /// [`host_matmul`](HostMatmul::host_matmul) for a gradient `lhs` with many all-zero
    /// rows (a minimum or a mask upstream sent nothing back through them): multiplies only
    /// the other rows and writes `+0` for those, the bits the full product gives when
    /// `rhs` is finite; the full product otherwise.
    fn host_matmul_sparse_lhs(lhs: FloatTensor<Self>, rhs: FloatTensor<Self>) -> FloatTensor<Self>;
}

#[cfg(feature = "flex")]
mod flex {
    use super::HostMatmul;
    use crate::thin::{View, thin_product};
    use burn::backend::Flex;
    use burn::backend::flex::FlexTensor;
    use burn::backend::ops::FloatTensorOps as _;
    use burn::tensor::{DType, TensorData};
    use std::mem::MaybeUninit;

    /// One operand's place in its buffer: element offset and strides (batch, row, column).
    #[derive(Clone, Copy)]
    struct Operand {
        offset: isize,
        batch: isize,
        row: isize,
        col: isize,
    }

    impl Operand {
        /// Batch entry `i` of it as a [`View`] of `data`, when no stride is negative.
        fn view(self, data: &[f32], i: isize) -> Option<View<'_>> {
            let u = |v: isize| usize::try_from(v).ok();
            Some(View {
                data,
                offset: u(self.offset + i * self.batch)?,
                rs: u(self.row)?,
                cs: u(self.col)?,
            })
        }
    }

    fn operand(t: &FlexTensor) -> Operand {
        let s = t.layout().strides();
        let r = s.len();
        Operand {
            offset: t.layout().start_offset() as isize,
            batch: if r == 3 { s[0] } else { 0 },
            row: s[r - 2],
            col: s[r - 1],
        }
    }

    /// `(batch, m, k, n)` when the product is one this path computes.
    fn dims(lhs: &FlexTensor, rhs: &FlexTensor) -> Option<(usize, usize, usize, usize)> {
        let (a, b) = (lhs.layout().shape(), rhs.layout().shape());
        let (ra, rb) = (a.num_dims(), b.num_dims());
        let f32s = lhs.dtype() == DType::F32 && rhs.dtype() == DType::F32;
        if !f32s || ra != rb || !(ra == 2 || ra == 3) {
            return None;
        }
        let batch = if ra == 3 { a[0] } else { 1 };
        if ra == 3 && b[0] != batch {
            return None;
        }
        let (m, k, k2, n) = (a[ra - 2], a[ra - 1], b[rb - 2], b[rb - 1]);
        (k == k2 && batch > 0 && m > 0 && k > 0 && n > 0).then_some((batch, m, k, n))
    }

    impl HostMatmul for Flex {
        fn host_matmul(lhs: FlexTensor, rhs: FlexTensor) -> FlexTensor {
            product(lhs, rhs, false)
        }

        fn host_matmul_sparse_lhs(lhs: FlexTensor, rhs: FlexTensor) -> FlexTensor {
            product(lhs, rhs, true)
        }
    }

    /// `lhs · rhs`; with `sparse`, each batch entry whose product goes to the GEMM
    /// library may skip `lhs`'s all-zero rows ([`skip_zero_rows`]).
    fn product(lhs: FlexTensor, rhs: FlexTensor, sparse: bool) -> FlexTensor {
        let Some((batch, m, k, n)) = dims(&lhs, &rhs) else {
            return Flex::float_matmul(lhs, rhs);
        };
        let (l, r) = (operand(&lhs), operand(&rhs));
        let (ls, rs) = (lhs.storage::<f32>(), rhs.storage::<f32>());
        let len = batch * m * n;
        let mut out: Vec<f32> = Vec::with_capacity(len);
        // Whether all of `rhs`'s buffer is finite, once asked.
        let mut rhs_finite = None;
        for i in 0..batch as isize {
            let entry = &mut out.spare_capacity_mut()[i as usize * m * n..][..m * n];
            if let (Some(a), Some(b)) = (l.view(ls, i), r.view(rs, i))
                && (thin_product(m, n, k, a, b, entry)
                    || sparse && skip_zero_rows(m, n, k, a, b, &mut rhs_finite, entry))
            {
                continue;
            }
            let dst = entry.as_mut_ptr().cast::<f32>();
            // SAFETY: every offset stays inside its operand's buffer (flex's layout
            // describes it); with m, n, k > 0 `gemm_shared` writes all m·n outputs of
            // this batch entry (`thin_product` wrote the others) before `set_len` below.
            unsafe {
                gemm_shared(
                    (m, n, k),
                    dst,
                    ls.as_ptr().offset(l.offset + i * l.batch),
                    (l.row, l.col),
                    rs.as_ptr().offset(r.offset + i * r.batch),
                    (r.row, r.col),
                );
            }
        }
        // SAFETY: all `len` values were written above.
        unsafe { out.set_len(len) };
        let shape = if lhs.layout().shape().num_dims() == 3 {
            vec![batch, m, n]
        } else {
            vec![m, n]
        };
        FlexTensor::from_data(TensorData::new(out, shape))
    }

    /// Fewest multiply-adds in a product worth sharing with a waiting thread.
    const SHARE_MIN: usize = 1 << 21;

    /// Deepest product shared: up to 512 terms the library adds all of them in one depth
    /// block whatever kernel it picks for a block's width; deeper, the block depth depends
    /// on the kernel (a 700-deep product's bits changed with the column count).
    const SHARE_MAX_DEPTH: usize = 512;

    /// Output columns per block of a shared product (a multiple of the library's 16-lane
    /// AVX2 / AVX-512 register blocks).
    const SHARE_COLUMNS: usize = 32;

    /// The operands of a shared product, for the blocks' closure.
    #[derive(Clone, Copy)]
    struct Shared {
        dst: *mut f32,
        lhs: *const f32,
        rhs: *const f32,
    }

    // SAFETY: the blocks write disjoint columns of `dst` and only read the operands;
    // `share` returns only after every block has finished.
    unsafe impl Sync for Shared {}

    /// [`gemm_into`], in blocks of [`SHARE_COLUMNS`] output columns that a thread waiting
    /// at a barrier may take ([`crate::helping`]) when one waits and the product is
    /// large and at most [`SHARE_MAX_DEPTH`] deep. Every output is then the same dot
    /// product in the same order either way (tested): the bits do not depend on who
    /// computed what.
    ///
    /// # Safety
    /// As [`gemm_into`].
    pub(crate) unsafe fn gemm_shared(
        (m, n, k): (usize, usize, usize),
        dst: *mut f32,
        lhs: *const f32,
        lhs_strides: (isize, isize),
        rhs: *const f32,
        rhs_strides: (isize, isize),
    ) {
        let large = m * n * k >= SHARE_MIN && n >= 2 * SHARE_COLUMNS && k <= SHARE_MAX_DEPTH;
        if !large || !crate::helping::wanted() {
            // SAFETY: the caller's contract.
            unsafe { gemm_into((m, n, k), dst, n, lhs, lhs_strides, rhs, rhs_strides) };
            return;
        }
        let p = Shared { dst, lhs, rhs };
        crate::helping::share(n.div_ceil(SHARE_COLUMNS), &|b| {
            let from = b * SHARE_COLUMNS;
            let cols = SHARE_COLUMNS.min(n - from);
            // SAFETY: columns `from..from + cols` of `dst` and of `rhs` lie inside the
            // caller's `m × n` and `k × n` (the caller's contract); blocks are disjoint.
            unsafe { p.columns((m, n, k), from, cols, lhs_strides, rhs_strides) };
        });
    }

    impl Shared {
        /// Columns `from..from + cols` of the product (a method, so that the closure
        /// above captures the whole `Sync` struct rather than its raw pointers).
        ///
        /// # Safety
        /// As [`gemm_into`], for those columns of `dst` and `rhs`.
        unsafe fn columns(
            &self,
            (m, n, k): (usize, usize, usize),
            from: usize,
            cols: usize,
            lhs_strides: (isize, isize),
            rhs_strides: (isize, isize),
        ) {
            // SAFETY: the caller's contract.
            unsafe {
                gemm_into(
                    (m, cols, k),
                    self.dst.add(from),
                    n,
                    self.lhs,
                    lhs_strides,
                    self.rhs.offset(from as isize * rhs_strides.1),
                    rhs_strides,
                );
            }
        }
    }

    /// `dst = lhs · rhs` by the GEMM library on one thread, `dst` row-major `m × n` with
    /// `dst_row` floats from row to row, written without being read; the operands'
    /// strides are `(row, column)`.
    ///
    /// # Safety
    /// `dst` holds `m` rows of `n` floats `dst_row` apart; the operands' strides keep
    /// every element `m × k` and `k × n` inside their buffers.
    unsafe fn gemm_into(
        (m, n, k): (usize, usize, usize),
        dst: *mut f32,
        dst_row: usize,
        lhs: *const f32,
        (lhs_rs, lhs_cs): (isize, isize),
        rhs: *const f32,
        (rhs_rs, rhs_cs): (isize, isize),
    ) {
        if transpose_pays((m, n, k), (rhs_rs, rhs_cs)) {
            // `(rhsᵀ · lhsᵀ)ᵀ`: the product into a row-major `n × m` buffer, then turned.
            let mut turned: Vec<f32> = Vec::with_capacity(n * m);
            // SAFETY: the caller's contract for the operands, seen transposed; `turned`
            // holds `n × m` floats, all written before `set_len`. Turned, the product has
            // more rows than columns: this call is not turned again.
            unsafe {
                gemm_into(
                    (n, m, k),
                    turned.as_mut_ptr(),
                    m,
                    rhs,
                    (rhs_cs, rhs_rs),
                    lhs,
                    (lhs_cs, lhs_rs),
                );
                turned.set_len(n * m);
            }
            // SAFETY: `dst` holds `m` rows of `n` floats `dst_row` apart (the caller's
            // contract), apart from `turned`.
            unsafe { crate::transpose::transpose_to(&turned, n, m, dst, dst_row) };
            return;
        }
        // SAFETY: the caller's contract; alpha 0 with `read_dst` false overwrites `dst`.
        crate::gemm_stats::counted(m, n, k, || unsafe {
            gemm::gemm(
                m,
                n,
                k,
                dst,
                1,
                dst_row as isize,
                false,
                lhs,
                lhs_cs,
                lhs_rs,
                rhs,
                rhs_cs,
                rhs_rs,
                0.0f32,
                1.0f32,
                false,
                false,
                false,
                gemm::Parallelism::None,
            );
        });
    }

    /// Whether `lhs · rhs` is faster computed as `(rhsᵀ · lhsᵀ)ᵀ` through a turned
    /// buffer: a transposed `rhs` (an input's gradient, `grad · Wᵀ`), more columns than
    /// rows, and at least four terms per row. The library packs such an `rhs` by gathering
    /// its `k × n` values across rows, slowly; turned, it gathers the `m × k` of `lhs`
    /// and turns `m × n` outputs. `[16, 512] · [3136, 512]ᵀ` ran at 14 GFLOP/s and 109
    /// turned, `[128, 512] · [3136, 512]ᵀ` at 60 and 102, `[32, 256] · [256, 256]ᵀ` at 45
    /// and 96; with two terms per row turning lost (`[128, 256] · [1024, 256]ᵀ` 82 → 51)
    /// (Zen 4, one thread, `gemm_rate`). Only up to [`SHARE_MAX_DEPTH`] terms, where the
    /// library adds all of an output's terms in one depth block, in order, whatever its
    /// kernel: the bits are the same either way (tested), so the choice never shows in a
    /// result.
    fn transpose_pays((m, n, k): (usize, usize, usize), (rhs_rs, rhs_cs): (isize, isize)) -> bool {
        rhs_rs == 1 && rhs_cs != 1 && m < n && 4 * m <= k && k <= SHARE_MAX_DEPTH
    }

    #[cfg(test)]
    #[test]
    fn few_rows_times_a_transposed_rhs_are_turned() {
        assert!(transpose_pays((16, 3136, 512), (1, 512)));
        assert!(transpose_pays((64, 256, 256), (1, 256)));
        assert!(transpose_pays((128, 3136, 512), (1, 512)));
        // Few terms per row, a plain rhs, a deep product, more rows than columns: as
        // they are.
        assert!(!transpose_pays((128, 1024, 256), (1, 256)));
        assert!(!transpose_pays((16, 3136, 512), (512, 1)));
        assert!(!transpose_pays((16, 3136, 513), (1, 513)));
        assert!(!transpose_pays((32, 16, 256), (1, 256)));
    }

    /// Fewest zero rows, as a share of `m` (1/DENSE_SHARE), worth gathering the others.
    const DENSE_SHARE: usize = 8;

    /// Fewest rows handed to the GEMM library in a compacted product (below, it changes
    /// kernels: from 1 row to a matrix-vector product).
    const MIN_ROWS: usize = 2;

    /// Writes `out = a · b` multiplying only `a`'s rows that are not all zero (`-0`
    /// included), gathered into one contiguous block, and `+0` into the others, when at
    /// least an eighth of the rows are zero, `a`'s rows are contiguous and `b` is finite
    /// (`finite` caches the check of `b`'s buffer); says whether it did. Each row's terms
    /// are added in the same order as in the full product (the library's depth blocking
    /// does not depend on the row count, tested), and a zero row times a finite `b` is
    /// `+0` there too: the output's bits are the full product's.
    fn skip_zero_rows(
        m: usize,
        n: usize,
        k: usize,
        a: View<'_>,
        b: View<'_>,
        finite: &mut Option<bool>,
        out: &mut [MaybeUninit<f32>],
    ) -> bool {
        if a.cs != 1 {
            return false;
        }
        let row = |r: usize| &a.data[a.offset + r * a.rs..][..k];
        let kept: Vec<usize> = (0..m).filter(|&r| !all_zero(row(r))).collect();
        let rows = kept.len();
        if (m - rows) * DENSE_SHARE < m || (1..MIN_ROWS).contains(&rows) {
            return false;
        }
        if !*finite.get_or_insert_with(|| all_finite(b.data)) {
            return false;
        }
        let mut dense: Vec<f32> = Vec::with_capacity(rows * n);
        if rows > 0 {
            let mut gathered = Vec::with_capacity(rows * k);
            for &r in &kept {
                gathered.extend_from_slice(row(r));
            }
            // SAFETY: `gathered` is `rows × k` row-major and `b` is `k × n` inside its
            // buffer (`View`'s invariant); with rows, n, k > 0 `gemm_shared` writes all
            // `rows·n` outputs before `set_len`.
            unsafe {
                gemm_shared(
                    (rows, n, k),
                    dense.as_mut_ptr(),
                    gathered.as_ptr(),
                    (k as isize, 1),
                    b.data.as_ptr().add(b.offset),
                    (b.rs as isize, b.cs as isize),
                );
                dense.set_len(rows * n);
            }
        }
        let mut computed = kept.iter().zip(dense.chunks_exact(n)).peekable();
        for (r, o) in out.chunks_exact_mut(n).enumerate() {
            match computed.next_if(|&(&kr, _)| kr == r) {
                Some((_, src)) => {
                    for (o, &v) in o.iter_mut().zip(src) {
                        o.write(v);
                    }
                }
                None => o.fill(MaybeUninit::new(0.0)),
            }
        }
        true
    }

    /// Whether every value of `x` is `+0` or `-0`: the sign bits shifted out, chunk by
    /// chunk (an OR the compiler vectorises), stopping at the first chunk that is not.
    fn all_zero(x: &[f32]) -> bool {
        x.chunks(16)
            .all(|c| c.iter().fold(0u32, |acc, v| acc | (v.to_bits() << 1)) == 0)
    }

    /// Whether every value of `x` is finite, in lanes the compiler vectorises (`v · 0`
    /// is `0` for a finite `v` and NaN otherwise).
    fn all_finite(x: &[f32]) -> bool {
        const LANES: usize = 16;
        let mut acc = [0.0f32; LANES];
        let chunks = x.chunks_exact(LANES);
        let tail = chunks.remainder();
        for c in chunks {
            for (a, &v) in acc.iter_mut().zip(c) {
                *a += v * 0.0;
            }
        }
        acc.iter().all(|a| *a == 0.0) && tail.iter().all(|v| v.is_finite())
    }
}

#[cfg(feature = "flex")]
pub(crate) use flex::gemm_shared;

impl<B: Backend + HostMatmul, C: CheckpointStrategy> HostMatmul for Autodiff<B, C> {
    fn host_matmul(lhs: FloatTensor<Self>, rhs: FloatTensor<Self>) -> FloatTensor<Self> {
        #[derive(Debug)]
        struct MatmulBackward;

        impl<B: Backend + HostMatmul> Backward<B, 2> for MatmulBackward {
            /// The operand each gradient needs: `rhs` for `lhs`'s, `lhs` for `rhs`'s.
            type State = (Option<FloatTensor<B>>, Option<FloatTensor<B>>);

            fn backward(
                self,
                ops: Ops<Self::State, 2>,
                grads: &mut Gradients,
                _checkpointer: &mut Checkpointer,
            ) {
                let (lhs, rhs) = ops.state;
                binary::<B, _, _>(
                    ops.parents,
                    ops.node,
                    grads,
                    |grad| {
                        let rhs = rhs.expect("kept for a tracked lhs");
                        B::host_matmul_sparse_lhs(grad, B::float_transpose(rhs))
                    },
                    |grad| {
                        let lhs = lhs.expect("kept for a tracked rhs");
                        B::host_matmul(B::float_transpose(lhs), grad)
                    },
                );
            }
        }

        let (lhs_tracked, rhs_tracked) = (lhs.is_tracked(), rhs.is_tracked());
        let nodes = [lhs.node(), rhs.node()];
        let (l, r) = (lhs.into_primitive(), rhs.into_primitive());
        match MatmulBackward
            .prepare::<C>(nodes)
            .compute_bound()
            .stateful()
        {
            OpsKind::Tracked(prep) => {
                let state = (
                    rhs_tracked.then(|| l.clone()),
                    lhs_tracked.then(|| r.clone()),
                );
                prep.finish(state, B::host_matmul(l, r))
            }
            OpsKind::UnTracked(prep) => prep.finish(B::host_matmul(l, r)),
        }
    }

    /// The differentiable [`host_matmul`](HostMatmul::host_matmul) (the zero rows are
    /// skipped where the backward pass multiplies gradients).
    fn host_matmul_sparse_lhs(lhs: FloatTensor<Self>, rhs: FloatTensor<Self>) -> FloatTensor<Self> {
        Self::host_matmul(lhs, rhs)
    }
}

/// `lhs · rhs` over the last two dimensions, differentiable: on flex (with or without
/// autodiff) through [`HostMatmul`] for rank 2 and for rank 3 with equal batch dimensions
/// (same values as burn's `matmul`, without the zeroing and copying of the output);
/// burn's `matmul` everywhere else (broadcasting included).
pub fn matmul<const D: usize>(lhs: Tensor<D>, rhs: Tensor<D>) -> Tensor<D> {
    #[cfg(feature = "flex")]
    {
        let on_flex = lhs.device().inner() == burn::tensor::Device::flex();
        let (a, b) = (lhs.dims(), rhs.dims());
        let same_batch = D == 2 || (D == 3 && a[0] == b[0]);
        if on_flex && same_batch {
            let out = <burn::backend::Dispatch as HostMatmul>::host_matmul(
                lhs.into_dispatch(),
                rhs.into_dispatch(),
            );
            return Tensor::from_dispatch(out);
        }
    }
    lhs.matmul(rhs)
}

#[cfg(all(test, feature = "flex"))]
mod tests {
    use super::*;
    use burn::tensor::{Device, TensorData};

    fn filled<const D: usize>(shape: [usize; D], seed: u32, device: &Device) -> Tensor<D> {
        let n: usize = shape.iter().product();
        let v: Vec<f32> = (0..n)
            .map(|i| {
                ((i as u32).wrapping_mul(2654435761).wrapping_add(seed) % 1000) as f32 / 500.0 - 1.0
            })
            .collect();
        Tensor::from_data(TensorData::new(v, shape), device)
    }

    fn bits<const D: usize>(t: Tensor<D>) -> Vec<u32> {
        t.into_data()
            .try_to_vec::<f32>()
            .unwrap()
            .iter()
            .map(|x| x.to_bits())
            .collect()
    }

    #[test]
    fn same_bits_as_burns_matmul_for_strided_and_batched_operands() {
        let d = Device::flex();
        let a = filled([37, 29], 1, &d);
        let b = filled([29, 41], 2, &d);
        assert_eq!(
            bits(matmul(a.clone(), b.clone())),
            bits(a.clone().matmul(b.clone()))
        );
        // Transposed (strided) operands, as in a backward pass.
        let at = filled([29, 37], 3, &d).transpose();
        let bt = filled([41, 29], 4, &d).transpose();
        assert_eq!(bits(matmul(at.clone(), bt.clone())), bits(at.matmul(bt)));
        // Batched, with an expanded (stride-0) left operand as the critic ensemble has.
        let x = filled([1, 64, 23], 5, &d).expand([2, 64, 23]);
        let w = filled([2, 23, 256], 6, &d);
        assert_eq!(bits(matmul(x.clone(), w.clone())), bits(x.matmul(w)));
        // Broadcast batch dimensions go to burn.
        let p = filled([1, 5, 3], 7, &d);
        let q = filled([4, 3, 2], 8, &d);
        assert_eq!(matmul(p.clone(), q.clone()).dims(), [4, 5, 2]);
    }

    /// A few rows times a transposed right operand, computed turned (`(rhsᵀ · lhsᵀ)ᵀ`),
    /// gives burn's bits: an input's gradient at half a DQN batch and at half a PPO
    /// minibatch, a 1-row and a 64-row product, a row-strided left operand, a batched
    /// pair.
    #[test]
    fn turned_products_keep_burns_bits() {
        let d = Device::flex();
        let cases: Vec<(Tensor<3>, Tensor<3>)> = vec![
            (
                filled([1, 16, 512], 61, &d),
                filled([1, 3136, 512], 62, &d).swap_dims(1, 2),
            ),
            (
                filled([1, 1, 300], 63, &d),
                filled([1, 70, 300], 64, &d).swap_dims(1, 2),
            ),
            (
                filled([1, 64, 256], 65, &d),
                filled([1, 256, 256], 66, &d).swap_dims(1, 2),
            ),
            (
                filled([1, 128, 512], 71, &d),
                filled([1, 3136, 512], 72, &d).swap_dims(1, 2),
            ),
            (
                filled([1, 40, 33], 67, &d).narrow(2, 3, 29),
                filled([1, 100, 29], 68, &d).swap_dims(1, 2),
            ),
            (
                filled([3, 8, 64], 69, &d),
                filled([3, 1600, 64], 70, &d).swap_dims(1, 2),
            ),
        ];
        for (a, b) in cases {
            let dims = (a.dims(), b.dims());
            assert_eq!(
                bits(matmul(a.clone(), b.clone())),
                bits(a.matmul(b)),
                "{dims:?}"
            );
        }
    }

    #[test]
    fn products_shared_with_a_waiting_thread_keep_their_bits() {
        let d = Device::flex();
        // Large enough to be shared; plain and transposed operands as in the forward and
        // backward passes, a batched pair, a last block narrower than the others.
        let cases: Vec<(Tensor<3>, Tensor<3>)> = vec![
            (filled([1, 256, 256], 41, &d), filled([1, 256, 256], 42, &d)),
            (
                filled([1, 256, 256], 43, &d),
                filled([1, 256, 256], 44, &d).swap_dims(1, 2),
            ),
            (
                filled([1, 256, 256], 45, &d).swap_dims(1, 2),
                filled([1, 256, 256], 46, &d),
            ),
            (filled([2, 64, 500], 47, &d), filled([2, 500, 200], 48, &d)),
            (filled([1, 130, 300], 49, &d), filled([1, 300, 100], 50, &d)),
            // A few rows times a transposed rhs: each block turned.
            (
                filled([1, 16, 512], 53, &d),
                filled([1, 3136, 512], 54, &d).swap_dims(1, 2),
            ),
            // Too deep to share: computed alone.
            (filled([1, 64, 700], 51, &d), filled([1, 700, 200], 52, &d)),
        ];
        let alone: Vec<Vec<u32>> = cases
            .iter()
            .map(|(a, b)| bits(a.clone().matmul(b.clone())))
            .collect();
        use std::sync::atomic::{AtomicBool, Ordering};
        /// Lets the helper go even when an assertion fails.
        struct Stop<'a>(&'a AtomicBool);
        impl Drop for Stop<'_> {
            fn drop(&mut self) {
                self.0.store(true, Ordering::Release);
            }
        }
        let stop = AtomicBool::new(false);
        std::thread::scope(|s| {
            let helper = s.spawn(|| {
                crate::helping::help_until(std::time::Duration::from_secs(60), || {
                    stop.load(Ordering::Acquire)
                })
            });
            let _stop = Stop(&stop);
            while !crate::helping::wanted() {
                std::hint::spin_loop();
            }
            for round in 0..3 {
                for ((a, b), want) in cases.iter().zip(&alone) {
                    let got = bits(matmul(a.clone(), b.clone()));
                    assert!(
                        got == *want,
                        "round {round}, {:?} · {:?}",
                        a.dims(),
                        b.dims()
                    );
                }
            }
            drop(_stop);
            assert!(helper.join().unwrap());
        });
    }

    fn close<const D: usize>(ours: Tensor<D>, burns: Tensor<D>) {
        assert_eq!(ours.dims(), burns.dims());
        let (a, b) = (ours.into_data(), burns.into_data());
        let (a, b) = (
            a.try_to_vec::<f32>().unwrap(),
            b.try_to_vec::<f32>().unwrap(),
        );
        for (x, y) in a.iter().zip(&b) {
            assert!((x - y).abs() <= 1e-5 * (1.0 + y.abs()), "{x} vs {y}");
        }
    }

    #[test]
    fn thin_products_and_their_gradients_agree_with_burns() {
        // A small network's layers: few inputs, one or two outputs, and the ensemble's
        // batched form; the backward passes give the other thin shapes.
        let d = Device::flex().autodiff();
        for (xs, ws) in [
            ([1, 256, 3], [1, 3, 256]),
            ([1, 256, 256], [1, 256, 2]),
            ([2, 256, 256], [2, 256, 1]),
            ([2, 64, 4], [2, 4, 256]),
            ([1, 1, 256], [1, 256, 6]),
        ] {
            let run = |ours: bool| {
                let x = filled(xs, 14, &d).require_grad();
                let w = filled(ws, 15, &d).require_grad();
                let y = if ours {
                    matmul(x.clone(), w.clone())
                } else {
                    x.clone().matmul(w.clone())
                };
                let c = filled(y.dims(), 16, &d);
                let g = (y.clone() * c).sum().backward();
                (y.inner(), x.grad(&g).unwrap(), w.grad(&g).unwrap())
            };
            let (ours, burns) = (run(true), run(false));
            close(ours.0, burns.0);
            close(ours.1, burns.1);
            close(ours.2, burns.2);
        }
    }

    #[test]
    fn gradients_equal_burns() {
        let d = Device::flex().autodiff();
        let grads_of = |ours: bool| {
            // No side thin enough for `thin_product`: the GEMM library computes all three.
            let x = filled([1, 16, 9], 9, &d).require_grad();
            let w = filled([3, 9, 11], 10, &d).require_grad();
            let c = filled([3, 16, 11], 11, &d);
            let xe = x.clone().expand([3, 16, 9]);
            let y = if ours {
                matmul(xe, w.clone())
            } else {
                xe.matmul(w.clone())
            };
            let g = (y * c).sum().backward();
            (bits(x.grad(&g).unwrap()), bits(w.grad(&g).unwrap()))
        };
        assert_eq!(grads_of(true), grads_of(false));
        // Only one side tracked.
        let x = filled([8, 12], 12, &d);
        let w = filled([12, 10], 13, &d).require_grad();
        let g = matmul(x.clone(), w.clone()).sum().backward();
        let g2 = x.matmul(w.clone()).sum().backward();
        assert_eq!(bits(w.grad(&g).unwrap()), bits(w.grad(&g2).unwrap()));
    }

    /// `host_matmul_sparse_lhs` on flex, through the dispatch backend.
    fn sparse(lhs: Tensor<3>, rhs: Tensor<3>) -> Tensor<3> {
        Tensor::from_dispatch(
            <burn::backend::Dispatch as HostMatmul>::host_matmul_sparse_lhs(
                lhs.into_dispatch(),
                rhs.into_dispatch(),
            ),
        )
    }

    /// `filled` with the rows of batch entry `e` for which `zero(e, r)` set to `-0` or
    /// `+0` (alternating).
    fn with_zero_rows(
        shape: [usize; 3],
        seed: u32,
        zero: impl Fn(usize, usize) -> bool,
    ) -> Tensor<3> {
        let d = Device::flex();
        let mut v = filled(shape, seed, &d)
            .into_data()
            .try_to_vec::<f32>()
            .unwrap();
        let [b, m, k] = shape;
        for e in 0..b {
            for r in (0..m).filter(|&r| zero(e, r)) {
                let z = if r % 2 == 0 { -0.0 } else { 0.0 };
                v[(e * m + r) * k..][..k].fill(z);
            }
        }
        Tensor::from_data(TensorData::new(v, shape), &d)
    }

    #[test]
    fn skipping_zero_rows_keeps_the_full_products_bits() {
        let d = Device::flex();
        // The backward pass's operand: a transposed weight, with negative values.
        let w = filled([2, 96, 80], 21, &d).swap_dims(1, 2);
        /// Which rows of which batch entry are zero.
        type ZeroRows = Box<dyn Fn(usize, usize) -> bool>;
        let cases: [(&str, ZeroRows); 6] = [
            // Complementary halves, as after a minimum over two critics.
            ("alternate", Box::new(|e, r| (r * 7 + e) % 3 == e % 2)),
            (
                "odd count",
                Box::new(|e, r| r % 5 != 0 || (e == 1 && r == 0)),
            ),
            ("all zero", Box::new(|_, _| true)),
            ("one row left", Box::new(|_, r| r != 17)),
            ("too few zero rows", Box::new(|_, r| r == 3)),
            ("none", Box::new(|_, _| false)),
        ];
        for (name, zero) in cases {
            let g = with_zero_rows([2, 61, 80], 22, zero);
            let full = g.clone().matmul(w.clone());
            assert_eq!(bits(sparse(g, w.clone())), bits(full), "{name}");
        }
        // A non-finite weight: the zero rows get its NaN as in the full product.
        let mut v = filled([2, 80, 96], 23, &d)
            .into_data()
            .try_to_vec::<f32>()
            .unwrap();
        v[5] = f32::INFINITY;
        let w = Tensor::<3>::from_data(TensorData::new(v, [2, 80, 96]), &d);
        let g = with_zero_rows([2, 61, 80], 24, |_, r| r % 2 == 0);
        let (ours, full) = (sparse(g.clone(), w.clone()), g.matmul(w));
        assert!(ours.clone().is_nan().any().into_scalar::<bool>());
        assert_eq!(bits(ours), bits(full));
    }

    #[test]
    fn gradients_through_a_minimum_equal_burns() {
        // Two members' hidden layers and a minimum over their outputs: each member's
        // output gradient is zero on the rows where the other is smaller.
        let d = Device::flex().autodiff();
        let grads_of = |ours: bool| {
            let x = filled([1, 64, 48], 31, &d).require_grad();
            let w = filled([2, 48, 40], 32, &d);
            let v = filled([2, 40, 1], 33, &d);
            let mm = |a: Tensor<3>, b: Tensor<3>| if ours { matmul(a, b) } else { a.matmul(b) };
            let h = burn::tensor::activation::relu(mm(x.clone().expand([2, 64, 48]), w));
            let q = mm(h, v);
            let [q0, q1] = [0, 1].map(|i| q.clone().narrow(0, i, 1));
            let g = q0.min_pair(q1).sum().backward();
            bits(x.grad(&g).unwrap())
        };
        assert_eq!(grads_of(true), grads_of(false));
    }
}
