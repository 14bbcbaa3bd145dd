//! Host-memory helpers for the parameter updates that run outside autodiff (optimizer
//! steps, Polyak targets): one pass over `f32` buffers instead of a chain of tensor ops.
//!
//! flex's own paths copy more than they need to: reading a shared tensor's values
//! (`into_data`) copies them twice (to a vector, then to a 16-byte aligned buffer), and
//! every element-wise op allocates a zeroed buffer before filling it. [`unshared`] copies
//! once; [`lerp`] writes its result straight into a new buffer; [`remap`] hands a pass the
//! old values (borrowed) and the new buffer to fill, for updates that must leave the old
//! values to other handles (Adam's step). Other backends keep burn's tensor ops.

// Without flex, `backend_extension` generates a dispatch with no backend to pass `t` to.
#![cfg_attr(not(feature = "flex"), allow(unused_variables))]

use burn::backend::autodiff::checkpoint::strategy::CheckpointStrategy;
use burn::backend::{Autodiff, Backend, backend_extension, tensor::FloatTensor};
use burn::tensor::{DType, Tensor, TensorData};
use std::mem::MaybeUninit;

/// Host-buffer operations on parameters; implemented for flex (and, by falling back to
/// burn's ops, for autodiff over it).
#[backend_extension(Flex: cfg(feature = "flex"), Autodiff)]
pub trait HostBuffers: Backend {
    /// The same values in a contiguous buffer that only the result owns (copied only when
    /// shared, strided or offset).
    fn host_unshared(x: FloatTensor<Self>) -> FloatTensor<Self>;
    /// `a·(1 − t) + b·t` element-wise, computed in `f32` as burn's
    /// `a.mul_scalar(1 − t) + b.mul_scalar(t)` computes it.
    fn host_lerp(a: FloatTensor<Self>, b: FloatTensor<Self>, t: f64) -> FloatTensor<Self>;
    /// `a + b` element-wise, burn's `f32` sum.
    fn host_add(a: FloatTensor<Self>, b: FloatTensor<Self>) -> FloatTensor<Self>;
    /// A tensor of `x`'s shape whose `f32` values `fill(old, new)` writes from `x`'s
    /// values `old` (see [`remap`]); `None` where `x` has no such values at hand.
    fn host_remap(x: FloatTensor<Self>, fill: &mut Fill<'_>) -> Option<FloatTensor<Self>>;
    /// Hands `read` the `f32` values of `x` in row-major order (borrowed where they are
    /// contiguous) and says whether it did: `false` where `x` has no such values at hand.
    fn host_read(x: FloatTensor<Self>, read: &mut Read<'_>) -> bool;
}

/// The reading pass of [`read_values`].
pub type Read<'a> = dyn FnMut(&[f32]) + 'a;

/// The filling pass of [`remap`]: reads the old values, writes every new one.
pub type Fill<'a> = dyn FnMut(&[f32], &mut [MaybeUninit<f32>]) + 'a;

/// The two factors of [`lerp`] as `f32`, rounded as burn rounds scalar arguments.
fn lerp_factors(t: f64) -> (f32, f32) {
    ((1.0 - t) as f32, t as f32)
}

#[cfg(feature = "flex")]
mod flex {
    use super::{HostBuffers, lerp_factors};
    use burn::backend::Flex;
    use burn::backend::flex::FlexTensor;
    use burn::backend::ops::FloatTensorOps as _;
    use burn::tensor::{DType, TensorData};

    /// `t`'s `f32` values, borrowed when contiguous from the start of its buffer.
    fn values(t: &FlexTensor) -> Option<&[f32]> {
        let n = t.layout().num_elements();
        let simple = t.is_contiguous() && t.layout().start_offset() == 0;
        simple
            .then(|| t.as_slice::<f32>())
            .flatten()
            .map(|s| &s[..n])
    }

    /// The tensor's `f32` values as one contiguous, uniquely owned buffer (copied only when
    /// it is shared, strided or offset).
    fn owned_contiguous(mut t: FlexTensor) -> FlexTensor {
        let simple = t.is_contiguous() && t.layout().start_offset() == 0;
        if simple && t.try_storage_mut::<f32>().is_some() {
            return t;
        }
        let shape = t.layout().shape().clone();
        let copied = with_values(&t, <[f32]>::to_vec);
        FlexTensor::from_data(TensorData::new(copied, shape))
    }

    /// `f` of `t`'s `f32` values in row-major order: borrowed when they are contiguous from
    /// the start of the buffer, from a contiguous copy otherwise.
    pub(crate) fn with_values<R>(t: &FlexTensor, f: impl FnOnce(&[f32]) -> R) -> R {
        match values(t) {
            Some(v) => f(v),
            None => f(values(&t.to_contiguous()).expect("a contiguous copy")),
        }
    }

    /// `x` changed in place by `f` (on a buffer only the result owns; see
    /// [`owned_contiguous`]).
    pub(crate) fn map_in_place(x: FlexTensor, f: impl FnOnce(&mut [f32])) -> FlexTensor {
        let mut x = owned_contiguous(x);
        let n = x.layout().num_elements();
        f(&mut x.storage_mut::<f32>()[..n]);
        x
    }

    /// `grad` changed in place by `f(grad, y)`: a backward pass computed from the forward
    /// output `y` (same shape).
    pub(crate) fn grad_in_place(
        grad: FlexTensor,
        y: &FlexTensor,
        f: impl FnOnce(&mut [f32], &[f32]),
    ) -> FlexTensor {
        map_in_place(grad, |g| with_values(y, |y| f(g, y)))
    }

    impl HostBuffers for Flex {
        fn host_unshared(x: FlexTensor) -> FlexTensor {
            if x.dtype() != DType::F32 {
                return x;
            }
            owned_contiguous(x)
        }

        fn host_lerp(a: FlexTensor, b: FlexTensor, t: f64) -> FlexTensor {
            let (ka, kb) = lerp_factors(t);
            let same = a.layout().shape() == b.layout().shape();
            if let (true, Some(va), Some(vb)) = (same, values(&a), values(&b))
                && a.dtype() == DType::F32
                && b.dtype() == DType::F32
            {
                let mut out: Vec<f32> = Vec::with_capacity(va.len());
                let n = va.len();
                // Block by block, with a thread that waits for this one (the same bits).
                use crate::helping::{chunks, chunks_mut};
                let blocks = chunks_mut(&mut out.spare_capacity_mut()[..n]);
                let blocks = blocks.zip(chunks(va).zip(chunks(vb)));
                crate::helping::share_each(blocks, |(out, (a, b))| {
                    crate::kernels::lerp_into(out, a, b, ka, kb)
                });
                // SAFETY: `lerp_into` wrote every block, and the blocks cover all `n` values.
                unsafe { out.set_len(n) };
                return FlexTensor::from_data(TensorData::new(out, a.layout().shape().clone()));
            }
            let a = Flex::float_mul_scalar(a, ka.into());
            let b = Flex::float_mul_scalar(b, kb.into());
            Flex::float_add(a, b)
        }

        fn host_add(a: FlexTensor, b: FlexTensor) -> FlexTensor {
            let same = a.layout().shape() == b.layout().shape();
            if !(same && a.dtype() == DType::F32 && b.dtype() == DType::F32) {
                return Flex::float_add(a, b);
            }
            // Into `a`'s buffer (copied first only if shared), block by block with a
            // thread that waits for this one (the same bits whoever adds a block).
            with_values(&b, |vb| {
                map_in_place(a, |va| {
                    use crate::helping::{chunks, chunks_mut};
                    crate::helping::share_each(chunks_mut(va).zip(chunks(vb)), |(a, b)| {
                        crate::kernels::add_in_place(a, b)
                    })
                })
            })
        }

        fn host_remap(x: FlexTensor, fill: &mut super::Fill<'_>) -> Option<FlexTensor> {
            if x.dtype() != DType::F32 {
                return None;
            }
            let shape = x.layout().shape().clone();
            // SAFETY: `remap`'s caller promised that `fill` writes every value.
            let out = with_values(&x, |old| unsafe { super::filled(old, fill) });
            Some(FlexTensor::from_data(TensorData::new(out, shape)))
        }

        fn host_read(x: FlexTensor, read: &mut super::Read<'_>) -> bool {
            if x.dtype() != DType::F32 {
                return false;
            }
            with_values(&x, |v| read(v));
            true
        }
    }
}

#[cfg(feature = "flex")]
pub(crate) use flex::{grad_in_place, map_in_place, with_values};

/// Needed for routing, not only for autodiff tensors: parameters read outside autodiff
/// (`Tensor::inner`) still carry a disabled autodiff context, which the extension routes
/// to the flex implementation only when `Autodiff` is listed.
impl<B: Backend + HostBuffers, C: CheckpointStrategy> HostBuffers for Autodiff<B, C> {
    fn host_unshared(x: FloatTensor<Self>) -> FloatTensor<Self> {
        x
    }

    fn host_lerp(a: FloatTensor<Self>, b: FloatTensor<Self>, t: f64) -> FloatTensor<Self> {
        use burn::backend::ops::FloatTensorOps as _;
        let (ka, kb) = lerp_factors(t);
        let a = Self::float_mul_scalar(a, ka.into());
        let b = Self::float_mul_scalar(b, kb.into());
        Self::float_add(a, b)
    }

    fn host_add(a: FloatTensor<Self>, b: FloatTensor<Self>) -> FloatTensor<Self> {
        use burn::backend::ops::FloatTensorOps as _;
        Self::float_add(a, b)
    }

    fn host_remap(_x: FloatTensor<Self>, _fill: &mut Fill<'_>) -> Option<FloatTensor<Self>> {
        None
    }

    fn host_read(_x: FloatTensor<Self>, _read: &mut Read<'_>) -> bool {
        false
    }
}

/// Whether `x` lives on flex without autodiff (where the host paths apply).
fn plain_flex<const D: usize>(x: &Tensor<D>) -> bool {
    #[cfg(feature = "flex")]
    {
        let device = x.device();
        device == burn::tensor::Device::flex()
    }
    #[cfg(not(feature = "flex"))]
    {
        let _ = x;
        false
    }
}

/// `x`'s values in a buffer no other tensor shares, so that reading them out
/// (`into_data`) takes them without another copy: on flex one copy when `x` is shared
/// (flex's `into_data` of a shared tensor copies twice); elsewhere `x` itself.
pub fn unshared<const D: usize>(x: Tensor<D>) -> Tensor<D> {
    if !plain_flex(&x) {
        return x;
    }
    Tensor::from_dispatch(<burn::backend::Dispatch as HostBuffers>::host_unshared(
        x.into_dispatch(),
    ))
}

/// A new tensor of `x`'s shape, on its device, whose `f32` values `fill(old, new)` writes
/// from `x`'s values `old`: on flex `old` is borrowed from `x`'s buffer and `new` is the
/// result's, so a parameter update reads the old values once and writes the new ones
/// once, where updating a copy in place (what an update must do while another handle
/// still holds the old values) passes over them twice more. Elsewhere the values are
/// read out and the result is made from them. `fill` is called once; `x` keeps its values.
///
/// # Panics
/// If `x` does not hold `f32` values.
///
/// # Safety
/// `fill` must write every element of `new` (it is given as uninitialised memory).
pub unsafe fn remap<const D: usize>(
    x: &Tensor<D>,
    mut fill: impl FnMut(&[f32], &mut [MaybeUninit<f32>]),
) -> Tensor<D> {
    assert_eq!(x.dtype(), DType::F32, "remap: f32 values only");
    if plain_flex(x) {
        let mapped = <burn::backend::Dispatch as HostBuffers>::host_remap(
            x.clone().into_dispatch(),
            &mut fill,
        );
        if let Some(t) = mapped {
            return Tensor::from_dispatch(t);
        }
    }
    let data = x.clone().into_data();
    let old = data.as_slice::<f32>().expect("f32 values, checked above");
    // SAFETY: the caller promised that `fill` writes every value.
    let new = unsafe { filled(old, &mut fill) };
    Tensor::from_data(TensorData::new(new, data.shape().clone()), &x.device())
}

/// A new vector of `old.len()` values that `fill(old, new)` writes ([`remap`]'s pass on
/// either path).
///
/// # Safety
/// `fill` must write every element of `new`.
unsafe fn filled(old: &[f32], fill: &mut Fill<'_>) -> Vec<f32> {
    let mut new: Vec<f32> = Vec::with_capacity(old.len());
    fill(old, &mut new.spare_capacity_mut()[..old.len()]);
    // SAFETY: the caller promised that `fill` wrote all `old.len()` values.
    unsafe { new.set_len(old.len()) };
    new
}

/// Replaces `out`'s contents with `x`'s `f32` values in row-major order: on flex one copy
/// from `x`'s buffer (a parameter read through `Tensor::inner` included), elsewhere read out
/// with `into_data`. `out` keeps its allocation when it is large enough.
///
/// # Panics
/// If `x` does not hold `f32` values.
pub fn read_values<const D: usize>(x: &Tensor<D>, out: &mut Vec<f32>) {
    assert_eq!(x.dtype(), DType::F32, "read_values: f32 values only");
    out.clear();
    if plain_flex(x) {
        let mut copy = |v: &[f32]| out.extend_from_slice(v);
        if <burn::backend::Dispatch as HostBuffers>::host_read(x.clone().into_dispatch(), &mut copy)
        {
            return;
        }
    }
    let data = x.clone().into_data();
    out.extend_from_slice(data.as_slice::<f32>().expect("f32 values, checked above"));
}

/// `f` of the `f32` values of every tensor of `xs`, each in row-major order: on flex
/// borrowed from the tensors' buffers (a contiguous copy only for a strided one; parameters
/// read through `Tensor::inner` included), elsewhere read out with `into_data`. For code
/// that reads several networks' weights at once without copying them.
///
/// # Panics
/// If a tensor does not hold `f32` values.
pub fn with_host_values<R>(xs: &[Tensor<1>], f: impl FnOnce(&[&[f32]]) -> R) -> R {
    let mut f = Some(f);
    let mut result = None;
    nest(xs, &[], &mut |all: &[&[f32]]| {
        let f = f.take().expect("called once");
        result = Some(f(all));
    });
    result.expect("`nest` calls its closure once")
}

/// [`with_host_values`]' recursion: `outer` holds the values of the tensors before `xs`.
fn nest(xs: &[Tensor<1>], outer: &[&[f32]], f: &mut dyn FnMut(&[&[f32]])) {
    let Some((first, rest)) = xs.split_first() else {
        return f(outer);
    };
    assert_eq!(
        first.dtype(),
        DType::F32,
        "with_host_values: f32 values only"
    );
    let mut inner = |values: &[f32]| {
        let mut all: Vec<&[f32]> = outer.to_vec();
        all.push(values);
        nest(rest, &all, f);
    };
    if plain_flex(first)
        && <burn::backend::Dispatch as HostBuffers>::host_read(
            first.clone().into_dispatch(),
            &mut inner,
        )
    {
        return;
    }
    let data = first.clone().into_data();
    inner(data.as_slice::<f32>().expect("f32 values, checked above"));
}

/// `a + b` element-wise, burn's `f32` sum (summing gradients of parts of a batch). On flex
/// without autodiff it adds into `a`'s buffer when nothing else holds it, in blocks that a
/// thread waiting for this one may take ([`crate::helping`]), so a long sum right after a
/// parallel run is shared. Tensors of different shapes are burn's `a + b`.
pub fn add<const D: usize>(a: Tensor<D>, b: Tensor<D>) -> Tensor<D> {
    if !plain_flex(&a) || !plain_flex(&b) {
        return a + b;
    }
    Tensor::from_dispatch(<burn::backend::Dispatch as HostBuffers>::host_add(
        a.into_dispatch(),
        b.into_dispatch(),
    ))
}

/// `a·(1 − t) + b·t` (a Polyak average, `t = τ`), the same `f32` arithmetic as
/// `a.mul_scalar(1 − t) + b.mul_scalar(t)`; on flex in one pass into one new buffer.
pub fn lerp<const D: usize>(a: Tensor<D>, b: Tensor<D>, t: f64) -> Tensor<D> {
    if !plain_flex(&a) || !plain_flex(&b) {
        return a.mul_scalar(1.0 - t) + b.mul_scalar(t);
    }
    Tensor::from_dispatch(<burn::backend::Dispatch as HostBuffers>::host_lerp(
        a.into_dispatch(),
        b.into_dispatch(),
        t,
    ))
}

#[cfg(test)]
mod tests {
    use super::*;
    use burn::tensor::{Device, TensorData};

    fn devices() -> Vec<Device> {
        ["flex", "ndarray"]
            .iter()
            .filter_map(|s| {
                s.parse::<emberlab_backend::DeviceSpec>()
                    .ok()?
                    .device()
                    .ok()
            })
            .collect()
    }

    fn values<const D: usize>(t: Tensor<D>) -> Vec<f32> {
        t.into_data().try_to_vec::<f32>().unwrap()
    }

    #[test]
    fn read_values_gives_the_values_in_row_major_order() {
        let mut devices = devices();
        devices.push(burn::tensor::Device::flex().autodiff());
        for device in devices {
            let v: Vec<f32> = (0..24).map(|i| i as f32 * 0.5 - 3.0).collect();
            let t = Tensor::<2>::from_data(TensorData::new(v.clone(), [4, 6]), &device);
            // Stale contents and a short allocation are replaced.
            let mut out = vec![9.0; 3];
            read_values(&t, &mut out);
            assert_eq!(out, v, "{device:?}");
            read_values(&t.clone().inner(), &mut out);
            assert_eq!(out, v, "{device:?}: inner");
            // A transposed view is read in its own row-major order.
            read_values(&t.clone().transpose(), &mut out);
            assert_eq!(out, values(t.transpose()), "{device:?}: transposed");
        }
    }

    #[test]
    fn with_host_values_hands_over_every_tensor_in_order() {
        let mut devices = devices();
        devices.push(burn::tensor::Device::flex().autodiff());
        for device in devices {
            let a: Vec<f32> = (0..12).map(|i| i as f32).collect();
            let ta = Tensor::<2>::from_data(TensorData::new(a.clone(), [3, 4]), &device);
            let tb = Tensor::<1>::from_data(TensorData::new(vec![-1.0f32, 2.5], [2]), &device);
            // A transposed view (strided) among borrowed ones.
            let tt = ta.clone().transpose().reshape([12]);
            let xs = [ta.clone().reshape([12]).inner(), tb.inner(), tt.clone()];
            let got = with_host_values(&xs, |v| v.iter().map(|s| s.to_vec()).collect::<Vec<_>>());
            assert_eq!(got, vec![a, vec![-1.0, 2.5], values(tt)], "{device:?}");
            assert_eq!(with_host_values(&[], |v| v.len()), 0);
        }
    }

    #[test]
    fn lerp_is_bit_identical_to_the_tensor_ops() {
        for device in devices() {
            let a: Vec<f32> = (0..1000).map(|i| (i as f32 * 0.37).sin() * 3.0).collect();
            let b: Vec<f32> = (0..1000).map(|i| (i as f32 * 0.11).cos() * 1e-3).collect();
            let ta = Tensor::<2>::from_data(TensorData::new(a, [10, 100]), &device);
            let tb = Tensor::<2>::from_data(TensorData::new(b, [10, 100]), &device);
            for tau in [0.005, 0.3, 1.0, 0.0] {
                let want = ta.clone().mul_scalar(1.0 - tau) + tb.clone().mul_scalar(tau);
                let got = lerp(ta.clone(), tb.clone(), tau);
                let (w, g) = (values(want), values(got));
                assert!(w.iter().zip(&g).all(|(x, y)| x.to_bits() == y.to_bits()));
            }
            // A strided operand takes the general path with the same result.
            let tt = tb.clone().reshape([100, 10]).transpose();
            let want = ta.clone().mul_scalar(0.5) + tt.clone().mul_scalar(0.5);
            assert_eq!(values(lerp(ta.clone(), tt, 0.5)), values(want));
        }
    }

    /// `add` gives burn's sum bit for bit, over several blocks, and leaves a first operand
    /// that another tensor holds unchanged; strided operands and other shapes are burn's.
    #[test]
    fn add_is_bit_identical_to_the_tensor_op() {
        let n = 3 * crate::helping::ELEMENTWISE_BLOCK + 17;
        for device in devices() {
            let a: Vec<f32> = (0..n).map(|i| (i as f32 * 0.37).sin() * 3.0).collect();
            let b: Vec<f32> = (0..n).map(|i| (i as f32 * 0.11).cos() * 1e-3).collect();
            let ta = Tensor::<1>::from_data(TensorData::new(a.clone(), [n]), &device);
            let tb = Tensor::<1>::from_data(TensorData::new(b, [n]), &device);
            let want = values(ta.clone() + tb.clone());
            let held = ta.clone();
            let got = values(add(ta, tb.clone()));
            assert!(
                want.iter()
                    .zip(&got)
                    .all(|(x, y)| x.to_bits() == y.to_bits())
            );
            assert_ne!(got, a, "{device:?}: the sum differs from a");
            assert_eq!(values(held), a, "{device:?}: the held operand changed");
            // Owned by the sum alone: added in place, the same values.
            let owned = Tensor::<1>::from_data(TensorData::new(a.clone(), [n]), &device);
            assert_eq!(values(add(owned, tb)), want);
            let m = Tensor::<2>::from_data(TensorData::new(a[..12].to_vec(), [3, 4]), &device);
            let t = Tensor::<2>::from_data(TensorData::new(a[..12].to_vec(), [4, 3]), &device);
            let t = t.transpose();
            assert_eq!(values(add(m.clone(), t.clone())), values(m.clone() + t));
            let row = Tensor::<2>::from_data(TensorData::new(a[..4].to_vec(), [1, 4]), &device);
            assert_eq!(values(add(m.clone(), row.clone())), values(m + row));
        }
    }

    #[test]
    fn unshared_keeps_values_and_leaves_the_original_alone() {
        for device in devices() {
            let t =
                Tensor::<2>::from_data(TensorData::new(vec![1f32, 2., 3., 4.], [2, 2]), &device);
            let u = unshared(t.clone());
            assert_eq!(values(u.clone()), vec![1., 2., 3., 4.]);
            let u2 = u.add_scalar(1.0);
            assert_eq!(values(t.clone()), vec![1., 2., 3., 4.]);
            assert_eq!(values(u2), vec![2., 3., 4., 5.]);
            // Strided: copied contiguous.
            assert_eq!(values(unshared(t.transpose())), vec![1., 3., 2., 4.]);
        }
    }

    #[test]
    fn remap_reads_the_old_values_and_leaves_them_alone() {
        for device in devices() {
            let t = Tensor::<2>::from_data(
                TensorData::new(vec![1f32, 2., 3., 4., 5., 6.], [2, 3]),
                &device,
            );
            let held = t.clone();
            // SAFETY: the closure writes every element.
            let doubled = unsafe {
                remap(&t, |old, new| {
                    for (n, &o) in new.iter_mut().zip(old) {
                        n.write(o * 2.0);
                    }
                })
            };
            assert_eq!(doubled.dims(), [2, 3]);
            assert_eq!(values(doubled), vec![2., 4., 6., 8., 10., 12.]);
            assert_eq!(values(held), vec![1., 2., 3., 4., 5., 6.]);
            // Strided: read in row-major order.
            // SAFETY: as above.
            let copied = unsafe {
                remap(&t.transpose(), |old, new| {
                    for (n, &o) in new.iter_mut().zip(old) {
                        n.write(o);
                    }
                })
            };
            assert_eq!(values(copied), vec![1., 4., 2., 5., 3., 6.]);
        }
    }
}
