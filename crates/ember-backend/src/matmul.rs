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
}

#[cfg(feature = "flex")]
mod flex {
    use super::HostMatmul;
    use crate::thin::{View, thin_product};
    use burn::backend::Flex;
    use burn::backend::flex::FlexTensor;
    use burn::backend::ops::FloatTensorOps as _;
    use burn::tensor::{DType, TensorData};

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
            let Some((batch, m, k, n)) = dims(&lhs, &rhs) else {
                return Flex::float_matmul(lhs, rhs);
            };
            let (l, r) = (operand(&lhs), operand(&rhs));
            let (ls, rs) = (lhs.storage::<f32>(), rhs.storage::<f32>());
            let len = batch * m * n;
            let mut out: Vec<f32> = Vec::with_capacity(len);
            for i in 0..batch as isize {
                let entry = &mut out.spare_capacity_mut()[i as usize * m * n..][..m * n];
                if let (Some(a), Some(b)) = (l.view(ls, i), r.view(rs, i))
                    && thin_product(m, n, k, a, b, entry)
                {
                    continue;
                }
                let dst = entry.as_mut_ptr().cast::<f32>();
                // SAFETY: every offset stays inside its operand's buffer (flex's layout
                // describes it); with `read_dst` false and m, n, k > 0 gemm writes all
                // m·n outputs of this batch entry (`thin_product` wrote the others)
                // before `set_len` below.
                unsafe {
                    gemm::gemm(
                        m,
                        n,
                        k,
                        dst,
                        1,
                        n as isize,
                        false,
                        ls.as_ptr().offset(l.offset + i * l.batch),
                        l.col,
                        l.row,
                        rs.as_ptr().offset(r.offset + i * r.batch),
                        r.col,
                        r.row,
                        0.0f32,
                        1.0f32,
                        false,
                        false,
                        false,
                        gemm::Parallelism::None,
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
    }
}

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
                        B::host_matmul(grad, B::float_transpose(rhs))
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
}
