//! Turning batch buffers into Burn tensors with as few copies as Burn 0.22 allows.
//!
//! A pooled pixel buffer is handed to Burn as [`Bytes`] backed by [`PooledAllocation`], an
//! [`AllocationController`] that owns the buffer and gives it back to its pool when Burn drops
//! the bytes. What each backend does with it:
//!
//! - Flex keeps the bytes as the tensor's storage: no copy; the buffer returns to the pool when
//!   the tensor (and every tensor sharing its storage) is dropped.
//! - NdArray asks to take the allocation over as a `Vec` (`try_detach`): no copy; the buffer
//!   leaves the pool and the tensor frees it.
//! - GPU backends (wgpu, CUDA) upload the bytes, which is the one unavoidable copy, then drop
//!   them: the buffer returns to the pool at once.

use std::mem::MaybeUninit;
use std::ptr::NonNull;
use std::sync::Arc;

use burn::tensor::{AllocationProperty, Bytes, DType, Device, Int, Tensor, TensorData};
use burn_std::{AccessError, AccessPolicy, AllocationController};

use crate::error::LoaderError;
use crate::pool::{BufferPool, Pixels, Tracked};
use crate::source::ImageShape;

/// A batch as Burn tensors: images as floats, labels as integers.
#[derive(Clone, Debug)]
pub struct TensorBatch<const D: usize> {
    /// `[B, C*H*W]` for `D = 2`, `[B, H, W]` for 3 (one-channel images only), `[B, C, H, W]`
    /// for 4.
    pub images: Tensor<D>,
    /// `[B]` class labels.
    pub labels: Tensor<1, Int>,
}

/// A raw batch as Burn tensors: the `u8` pixels as an integer tensor of dtype `U8` (convert on
/// the device, e.g. `images.float() / 255`), labels as integers.
#[derive(Clone, Debug)]
pub struct RawTensorBatch<const D: usize> {
    /// `[B, C*H*W]` for `D = 2`, `[B, H, W]` for 3 (one-channel images only), `[B, C, H, W]`
    /// for 4; dtype `U8`.
    pub images: Tensor<D, Int>,
    /// `[B]` class labels.
    pub labels: Tensor<1, Int>,
}

/// The dimensions of a batch of `batch_len` images of `shape` as a rank-`D` tensor: `[B, C*H*W]`,
/// `[B, H, W]` (one channel only) or `[B, C, H, W]`.
pub(crate) fn image_dims<const D: usize>(
    batch_len: usize,
    shape: ImageShape,
) -> Result<[usize; D], LoaderError> {
    let ImageShape {
        channels,
        height,
        width,
    } = shape;
    let pixels = shape.pixels().ok_or(LoaderError::EmptyImages { shape })?;
    let dims: &[usize] = match D {
        2 => &[batch_len, pixels],
        3 if channels == 1 => &[batch_len, height, width],
        3 => return Err(LoaderError::TensorRankNeedsOneChannel { rank: 3, channels }),
        4 => &[batch_len, channels, height, width],
        rank => return Err(LoaderError::UnsupportedTensorRank { rank }),
    };
    let mut out = [0; D];
    out.copy_from_slice(dims);
    Ok(out)
}

/// The labels as a `[B]` integer tensor on `device` (a 64-element copy; Burn converts to the
/// device's integer type if it is not `i64`).
pub(crate) fn labels_tensor(labels: &[i64], device: &Device) -> Tensor<1, Int> {
    Tensor::from_data(TensorData::new(labels.to_vec(), [labels.len()]), device)
}

/// Lends a pooled pixel buffer to Burn as tensor data of `dims`, without copying it.
pub(crate) fn lend_pixels<const D: usize>(
    pixels: Tracked<Pixels>,
    pool: Arc<BufferPool>,
    dims: [usize; D],
) -> TensorData {
    let (initialized_bytes, dtype) = match pixels.get() {
        Pixels::F32(values) => (size_of_val(values.as_slice()), DType::F32),
        Pixels::U8(values) => (values.len(), DType::U8),
    };
    let controller = PooledAllocation {
        pixels: Some(pixels),
        pool,
    };
    // SAFETY: `Bytes::from_controller` requires `len` to be the number of bytes initialized in
    // the controller: its memory starts with the buffer's `len` elements, which a `Vec`
    // guarantees are initialized, `initialized_bytes` bytes.
    let bytes = unsafe { Bytes::from_controller(Box::new(controller), initialized_bytes) };
    TensorData::from_bytes(bytes, dims, dtype)
}

/// Owns a pooled pixel buffer lent to Burn; gives it back to the pool when dropped.
///
/// # Safety
///
/// Upholds [`AllocationController`]'s contract: `memory`/`memory_mut` expose exactly the
/// buffer's allocation (its whole capacity, as possibly uninitialized bytes, of which the first
/// `len` elements are initialized); `alloc_align` is the element alignment the buffer was
/// allocated with by the global allocator; `try_detach` gives that allocation away for good
/// (nothing here frees or reuses it afterwards). It is also `Send + Sync` (asserted below):
/// Burn's `Bytes` is `Send + Sync` on the understanding that its controller is.
struct PooledAllocation {
    /// `None` once detached.
    pixels: Option<Tracked<Pixels>>,
    pool: Arc<BufferPool>,
}

// `Bytes` declares itself `Send + Sync` whatever controller it boxes: a pooled buffer may be
// sent to another thread inside a tensor only because `PooledAllocation` is both.
const _: () = {
    const fn assert_send_sync<T: Send + Sync>() {}
    assert_send_sync::<PooledAllocation>();
};

impl PooledAllocation {
    /// The buffer's allocation: its start and its capacity in bytes.
    fn raw_parts(&self) -> (*const u8, usize) {
        match self.pixels.as_ref().map(Tracked::get) {
            Some(Pixels::F32(values)) => {
                (values.as_ptr().cast(), values.capacity() * size_of::<f32>())
            }
            Some(Pixels::U8(values)) => (values.as_ptr(), values.capacity()),
            None => (NonNull::<u8>::dangling().as_ptr(), 0),
        }
    }

    /// [`Self::raw_parts`] from a unique borrow, so that the bytes may be written through the
    /// pointer.
    fn raw_parts_mut(&mut self) -> (*mut u8, usize) {
        match self.pixels.as_mut().map(Tracked::get_mut) {
            Some(Pixels::F32(values)) => (
                values.as_mut_ptr().cast(),
                values.capacity() * size_of::<f32>(),
            ),
            Some(Pixels::U8(values)) => (values.as_mut_ptr(), values.capacity()),
            None => (NonNull::<u8>::dangling().as_ptr(), 0),
        }
    }
}

impl AllocationController for PooledAllocation {
    fn alloc_align(&self) -> usize {
        match self.pixels.as_ref().map(Tracked::get) {
            Some(Pixels::F32(_)) => align_of::<f32>(),
            Some(Pixels::U8(_)) | None => align_of::<u8>(),
        }
    }

    fn property(&self) -> AllocationProperty {
        // The buffer is a `Vec` from the global allocator.
        AllocationProperty::Native
    }

    unsafe fn memory_mut(
        &mut self,
        _policy: AccessPolicy,
    ) -> Result<&mut [MaybeUninit<u8>], AccessError> {
        let (pointer, length) = self.raw_parts_mut();
        // SAFETY: `pointer` comes from `Vec::as_mut_ptr` on the buffer borrowed uniquely through
        // `&mut self`, so it is valid for reads and writes of `length` bytes (the capacity) and
        // nothing else reaches them while the returned slice (which borrows `self`) lives. Any
        // byte pattern is a valid `MaybeUninit<u8>`. The trait's caller promises to write only
        // initialized bytes, so the `len` initialized elements stay initialized.
        Ok(unsafe { std::slice::from_raw_parts_mut(pointer.cast(), length) })
    }

    fn memory(&self, _policy: AccessPolicy) -> Result<&[MaybeUninit<u8>], AccessError> {
        let (pointer, length) = self.raw_parts();
        // SAFETY: `pointer` is the start of the buffer's allocation, valid for reads of `length`
        // bytes (its capacity) for as long as `self` is borrowed, and nothing writes to it
        // meanwhile (writes need `&mut self`); any byte pattern is a valid `MaybeUninit<u8>`.
        Ok(unsafe { std::slice::from_raw_parts(pointer.cast(), length) })
    }

    /// `Bytes::try_into_vec` rebuilds a `Vec` from this pointer with `alloc_align` and the
    /// capacity of `memory`, which are the buffer's own (checked there); the buffer leaves the
    /// pool and its accounting, and its new owner frees it.
    fn try_detach(&mut self) -> Option<NonNull<u8>> {
        let pixels = self.pixels.take()?.into_untracked();
        let pointer = match pixels {
            Pixels::F32(values) => {
                let mut values = std::mem::ManuallyDrop::new(values);
                values.as_mut_ptr().cast::<u8>()
            }
            Pixels::U8(values) => {
                let mut values = std::mem::ManuallyDrop::new(values);
                values.as_mut_ptr()
            }
        };
        NonNull::new(pointer)
    }
}

impl Drop for PooledAllocation {
    fn drop(&mut self) {
        if let Some(pixels) = self.pixels.take() {
            self.pool.give_back_pixels(pixels);
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::convert::PixelFormat;
    use crate::pool::MemoryAccounting;

    /// A pool of float buffers of 6 pixels, and one buffer of it holding `values`.
    fn pool_and_buffer(
        values: &[f32],
    ) -> (Arc<MemoryAccounting>, Arc<BufferPool>, Tracked<Pixels>) {
        let accounting = Arc::new(MemoryAccounting::default());
        let pool = Arc::new(BufferPool::new(
            Arc::clone(&accounting),
            PixelFormat::UnitF32,
            2,
            3,
        ));
        let mut pixels = pool.take_pixels();
        match pixels.get_mut() {
            Pixels::F32(buffer) => buffer.extend_from_slice(values),
            Pixels::U8(_) => panic!("a float pool gives float buffers"),
        }
        (accounting, pool, pixels)
    }

    fn address(pixels: &Tracked<Pixels>) -> usize {
        match pixels.get() {
            Pixels::F32(values) => values.as_ptr() as usize,
            Pixels::U8(values) => values.as_ptr() as usize,
        }
    }

    #[test]
    fn a_lent_buffer_reads_and_writes_in_place_and_returns_to_the_pool_when_dropped() {
        let (accounting, pool, pixels) = pool_and_buffer(&[0.5, 1.5, 2.5, 3.5]);
        let lent_address = address(&pixels);
        let mut data = lend_pixels(pixels, Arc::clone(&pool), [2, 2]);
        assert_eq!(data.as_slice::<f32>().unwrap(), &[0.5, 1.5, 2.5, 3.5]);
        // Writing goes through `memory_mut`, into the pooled buffer itself.
        data.as_mut_slice::<f32>().unwrap()[1] = 9.0;
        assert_eq!(data.as_slice::<f32>().unwrap(), &[0.5, 9.0, 2.5, 3.5]);
        assert_eq!(data.bytes().as_ptr() as usize, lent_address);
        // Lent, the buffer still counts: 6 floats of capacity.
        assert_eq!(accounting.report().buffer_bytes, 6 * 4);
        drop(data);
        assert_eq!(accounting.report().buffer_bytes, 6 * 4);
        let again = pool.take_pixels();
        assert_eq!(
            address(&again),
            lent_address,
            "the pool got the buffer back"
        );
        match again.get() {
            Pixels::F32(values) => assert_eq!(values, &[0.5, 9.0, 2.5, 3.5]),
            Pixels::U8(_) => unreachable!(),
        }
        pool.close();
        drop(again);
        assert_eq!(accounting.report().current_bytes, 0);
    }

    #[test]
    fn a_detached_buffer_leaves_the_pool_without_a_copy() {
        let (accounting, pool, pixels) = pool_and_buffer(&[1.0, 2.0, 3.0, 4.0]);
        let lent_address = address(&pixels);
        let data = lend_pixels(pixels, Arc::clone(&pool), [4]);
        let values = data
            .into_bytes()
            .try_into_vec::<f32>()
            .unwrap_or_else(|_| panic!("a pooled float buffer detaches as a Vec<f32>"));
        assert_eq!(values, [1.0, 2.0, 3.0, 4.0]);
        assert_eq!(values.capacity(), 6);
        assert_eq!(
            values.as_ptr() as usize,
            lent_address,
            "detached, not copied"
        );
        // The buffer left the loader's accounting and its pool: the Vec owns it now.
        assert_eq!(accounting.report().current_bytes, 0);
        let fresh = pool.take_pixels();
        assert_ne!(address(&fresh), lent_address);
        drop(values);
        drop(fresh);
        pool.close();
        assert_eq!(accounting.report().current_bytes, 0);
    }

    #[test]
    fn image_dims_carry_the_channels() {
        assert_eq!(image_dims::<2>(5, ImageShape::CIFAR).unwrap(), [5, 3072]);
        assert_eq!(
            image_dims::<4>(5, ImageShape::CIFAR).unwrap(),
            [5, 3, 32, 32]
        );
        assert_eq!(image_dims::<3>(5, ImageShape::MNIST).unwrap(), [5, 28, 28]);
        assert_eq!(
            image_dims::<4>(5, ImageShape::MNIST).unwrap(),
            [5, 1, 28, 28]
        );
        assert!(matches!(
            image_dims::<3>(5, ImageShape::CIFAR),
            Err(LoaderError::TensorRankNeedsOneChannel {
                rank: 3,
                channels: 3
            })
        ));
        assert!(matches!(
            image_dims::<5>(5, ImageShape::CIFAR),
            Err(LoaderError::UnsupportedTensorRank { rank: 5 })
        ));
    }
}
