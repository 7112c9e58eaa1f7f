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
    /// `[B, H*W]` for `D = 2`, `[B, H, W]` for 3, `[B, 1, H, W]` for 4.
    pub images: Tensor<D>,
    /// `[B]` class labels.
    pub labels: Tensor<1, Int>,
}

/// A raw batch as Burn tensors: the `u8` pixels as an integer tensor of dtype `U8` (convert on
/// the device, e.g. `images.float() / 255`), labels as integers.
#[derive(Clone, Debug)]
pub struct RawTensorBatch<const D: usize> {
    /// `[B, H*W]` for `D = 2`, `[B, H, W]` for 3, `[B, 1, H, W]` for 4; dtype `U8`.
    pub images: Tensor<D, Int>,
    /// `[B]` class labels.
    pub labels: Tensor<1, Int>,
}

/// The dimensions of a batch of `batch_len` images of `shape` as a rank-`D` tensor.
pub(crate) fn image_dims<const D: usize>(
    batch_len: usize,
    shape: ImageShape,
) -> Result<[usize; D], LoaderError> {
    let ImageShape { height, width } = shape;
    let dims: &[usize] = match D {
        2 => &[batch_len, height * width],
        3 => &[batch_len, height, width],
        4 => &[batch_len, 1, height, width],
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
    // SAFETY: the controller's memory starts with the buffer's `len` elements, which a `Vec`
    // guarantees are initialized: `initialized_bytes` bytes.
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
/// (nothing here frees or reuses it afterwards).
struct PooledAllocation {
    /// `None` once detached.
    pixels: Option<Tracked<Pixels>>,
    pool: Arc<BufferPool>,
}

impl PooledAllocation {
    fn raw_parts(&self) -> (*const u8, usize) {
        match self.pixels.as_ref().map(Tracked::get) {
            Some(Pixels::F32(values)) => {
                (values.as_ptr().cast(), values.capacity() * size_of::<f32>())
            }
            Some(Pixels::U8(values)) => (values.as_ptr(), values.capacity()),
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
        let (pointer, length) = self.raw_parts();
        // SAFETY: `pointer` is valid for `length` bytes (the buffer's capacity) and uniquely
        // owned through `&mut self`; any byte pattern is a valid `MaybeUninit<u8>`. The caller
        // promises to write only initialized bytes.
        Ok(unsafe { std::slice::from_raw_parts_mut(pointer.cast_mut().cast(), length) })
    }

    fn memory(&self, _policy: AccessPolicy) -> Result<&[MaybeUninit<u8>], AccessError> {
        let (pointer, length) = self.raw_parts();
        // SAFETY: `pointer` is valid for reads of `length` bytes for as long as `self` is
        // borrowed; any byte pattern is a valid `MaybeUninit<u8>`.
        Ok(unsafe { std::slice::from_raw_parts(pointer.cast(), length) })
    }

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
