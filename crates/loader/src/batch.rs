//! A batch: a view of pooled buffers that borrows its epoch.

use std::fmt;
use std::sync::Arc;

use burn::tensor::{DType, Device, Tensor, TensorData};

use crate::augment::{SampleKey, append_sample_f32, append_sample_u8};
use crate::convert::{
    Affine, ChannelAffines, PixelFormat, append_converted, append_converted_planes,
};
use crate::epoch::EpochPlan;
use crate::error::LoaderError;
use crate::pool::{BufferPool, Pixels, SampleBuffers, Tracked};
use crate::source::{ImageShape, ImageSource};
use crate::tensor::{RawTensorBatch, TensorBatch, image_dims, labels_tensor, lend_pixels};

/// The pixels of a batch, in the loader's [`PixelFormat`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub enum BatchImages<'a> {
    /// `f32` pixels (unit or normalized), `len * C * H * W` of them, image after image, each
    /// channel-major.
    F32(&'a [f32]),
    /// Raw `u8` pixels, `len * C * H * W` of them, image after image, each channel-major.
    U8(&'a [u8]),
}

/// Buffers filled with one batch, on their way from a worker to the consumer.
#[derive(Debug)]
pub(crate) struct FilledBatch {
    pub(crate) pixels: Tracked<Pixels>,
    pub(crate) samples: Tracked<SampleBuffers>,
}

/// Fills pooled buffers with the samples of `plan`'s batch `batch` from `source`, converted to
/// the plan's pixel format, with every label checked against the plan's class count; then asks
/// the source whether its data is still intact ([`ImageSource::verify_intact`]), so that a
/// batch read from a file changed under its mapping is an error, not a batch.
///
/// `scratch` is a per-thread buffer for sources that cannot lend their rows.
pub(crate) fn assemble_batch<S: ImageSource + ?Sized>(
    source: &S,
    plan: &EpochPlan,
    batch: usize,
    pool: &BufferPool,
    scratch: &mut Vec<u8>,
) -> Result<FilledBatch, LoaderError> {
    let indices = plan.batch_indices(batch);
    let mut pixels = pool.take_pixels();
    let mut samples = pool.take_samples();
    let result = {
        let SampleBuffers {
            labels,
            indices: batch_indices,
        } = samples.get_mut();
        labels.clear();
        batch_indices.clear();
        batch_indices.extend_from_slice(indices);
        // Buffers have full-batch capacity from the start: appending a batch never reallocates
        // (so the memory report stays exact) and never zero-fills first.
        fill_pixels(source, plan, indices, pixels.get_mut(), labels, scratch)
    }
    .and_then(|()| check_labels(samples.get().labels.as_slice(), indices, plan.class_count))
    .and_then(|()| source.verify_intact());
    match result {
        Ok(()) => Ok(FilledBatch { pixels, samples }),
        Err(error) => {
            pool.give_back_pixels(pixels);
            pool.give_back_samples(samples);
            Err(error)
        }
    }
}

/// Fills `pixels` with the samples `indices` in the plan's pixel format, and `labels` with
/// their labels.
///
/// Without augmentation or transform, a one-channel image (or a format whose channels share one
/// map) is converted in one vectorized pass per row of the source, and several channels in one
/// pass per channel; otherwise each sample goes through [`append_sample_f32`] (or
/// [`append_sample_u8`]), which places, converts and transforms it in the same single write.
fn fill_pixels<S: ImageSource + ?Sized>(
    source: &S,
    plan: &EpochPlan,
    indices: &[usize],
    pixels: &mut Pixels,
    labels: &mut Vec<i64>,
    scratch: &mut Vec<u8>,
) -> Result<(), LoaderError> {
    let pixels_per_image = plan.pixels_per_image;
    let shape = plan.shape;
    let key = |index| SampleKey {
        seed: plan.seed,
        epoch: plan.epoch,
        index,
    };
    match pixels {
        Pixels::F32(values) => {
            values.clear();
            let affines = plan
                .format
                .channel_affines()
                .unwrap_or(ChannelAffines::Uniform(Affine::IDENTITY));
            match (plan.steps.is_plain(), affines.single()) {
                (true, Some(affine)) => fill_rows(
                    source,
                    indices,
                    pixels_per_image,
                    labels,
                    scratch,
                    |_, row| append_converted(row, values, affine),
                ),
                (true, None) => {
                    let plane_len = shape.height * shape.width;
                    fill_rows(
                        source,
                        indices,
                        pixels_per_image,
                        labels,
                        scratch,
                        |_, row| append_converted_planes(row, plane_len, values, &affines),
                    )
                }
                (false, _) => fill_rows(
                    source,
                    indices,
                    pixels_per_image,
                    labels,
                    scratch,
                    |index, row| {
                        append_sample_f32(row, shape, &affines, &plan.steps, key(index), values)
                    },
                ),
            }
        }
        Pixels::U8(values) => {
            values.clear();
            let augmentation = plan.steps.augmentation;
            fill_rows(
                source,
                indices,
                pixels_per_image,
                labels,
                scratch,
                |index, row| append_sample_u8(row, shape, augmentation, key(index), values),
            )
        }
    }
}

/// [`LoaderError::LabelOutOfRange`] for the first label (of the samples `indices`) that is not
/// below `class_count`.
fn check_labels(
    labels: &[i64],
    indices: &[usize],
    class_count: Option<usize>,
) -> Result<(), LoaderError> {
    let Some(class_count) = class_count else {
        return Ok(());
    };
    let in_range = |label: i64| usize::try_from(label).is_ok_and(|label| label < class_count);
    match labels.iter().position(|&label| !in_range(label)) {
        None => Ok(()),
        Some(position) => Err(LoaderError::LabelOutOfRange {
            index: indices[position],
            label: labels[position],
            class_count,
        }),
    }
}

/// How many samples ahead [`fill_rows`] asks the CPU to start loading rows: enough to cover a
/// memory access while the rows in between are converted.
const PREFETCH_DISTANCE: usize = 4;

/// Appends, for each index, its image (through `append_row(index, image)`) and its label.
///
/// Shuffled rows of a mapped file are scattered reads, each likely to miss the CPU's caches, so
/// while a row is converted the row `PREFETCH_DISTANCE` samples later is asked for already.
/// (A design choice: its effect has not been measured on its own; the loader bench measures the
/// whole assembly.)
fn fill_rows<S>(
    source: &S,
    indices: &[usize],
    pixels_per_image: usize,
    labels: &mut Vec<i64>,
    scratch: &mut Vec<u8>,
    mut append_row: impl FnMut(usize, &[u8]),
) -> Result<(), LoaderError>
where
    S: ImageSource + ?Sized,
{
    for &index in indices.iter().take(PREFETCH_DISTANCE) {
        source.prefetch_sample(index);
    }
    for (position, &index) in indices.iter().enumerate() {
        if let Some(&ahead) = indices.get(position + PREFETCH_DISTANCE) {
            source.prefetch_sample(ahead);
        }
        let label = match source.borrow_sample(index) {
            Some((row, label)) => {
                if row.len() != pixels_per_image {
                    return Err(LoaderError::SampleSizeMismatch {
                        index,
                        expected: pixels_per_image,
                        actual: row.len(),
                    });
                }
                append_row(index, row);
                label
            }
            None => {
                scratch.resize(pixels_per_image, 0);
                let label = source.read_sample(index, scratch)?;
                append_row(index, scratch);
                label
            }
        };
        labels.push(label);
    }
    Ok(())
}

/// One batch of an epoch: images, labels and the sample indices they came from.
///
/// Its buffers belong to the epoch's pool and go back to it when the batch is dropped, so a
/// batch cannot outlive its epoch (it borrows it). [`into_tensors`](Batch::into_tensors) lends
/// the pixel buffer to Burn without a copy.
pub struct Batch<'epoch> {
    pixels: Option<Tracked<Pixels>>,
    samples: Option<Tracked<SampleBuffers>>,
    shape: ImageShape,
    format: PixelFormat,
    pool: &'epoch Arc<BufferPool>,
}

impl<'epoch> Batch<'epoch> {
    pub(crate) fn new(
        filled: FilledBatch,
        shape: ImageShape,
        format: PixelFormat,
        pool: &'epoch Arc<BufferPool>,
    ) -> Self {
        Self {
            pixels: Some(filled.pixels),
            samples: Some(filled.samples),
            shape,
            format,
            pool,
        }
    }

    fn samples(&self) -> &SampleBuffers {
        // Present until `into_*` consumes the batch.
        self.samples.as_ref().map_or(&EMPTY_SAMPLES, Tracked::get)
    }

    /// The number of samples.
    pub fn len(&self) -> usize {
        self.samples().labels.len()
    }

    /// Whether the batch has no sample (never true for a batch an epoch yields).
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The shape of each image.
    pub fn image_shape(&self) -> ImageShape {
        self.shape
    }

    /// The pixel format of [`images`](Batch::images).
    pub fn pixel_format(&self) -> PixelFormat {
        self.format
    }

    /// The pixels, image after image, each channel-major (`[C, H, W]`).
    pub fn images(&self) -> BatchImages<'_> {
        match self.pixels.as_ref().map(Tracked::get) {
            Some(Pixels::F32(values)) => BatchImages::F32(values),
            Some(Pixels::U8(values)) => BatchImages::U8(values),
            None => BatchImages::U8(&[]),
        }
    }

    /// The pixels as `f32`, if the loader converts to a float format.
    pub fn images_f32(&self) -> Option<&[f32]> {
        match self.images() {
            BatchImages::F32(values) => Some(values),
            BatchImages::U8(_) => None,
        }
    }

    /// The raw `u8` pixels, if the loader is configured for [`PixelFormat::RawU8`].
    pub fn images_u8(&self) -> Option<&[u8]> {
        match self.images() {
            BatchImages::U8(values) => Some(values),
            BatchImages::F32(_) => None,
        }
    }

    /// The labels, one per image.
    pub fn labels(&self) -> &[i64] {
        &self.samples().labels
    }

    /// The sample index of each image in the source.
    pub fn indices(&self) -> &[usize] {
        &self.samples().indices
    }

    fn float_mismatch(&self) -> LoaderError {
        LoaderError::PixelFormatMismatch {
            requested: "float",
            configured: self.format.name(),
        }
    }

    fn raw_mismatch(&self) -> LoaderError {
        LoaderError::PixelFormatMismatch {
            requested: "raw u8",
            configured: self.format.name(),
        }
    }

    /// Float image and label tensors on `device`, copying the pixels once and keeping the
    /// batch.
    ///
    /// # Errors
    ///
    /// [`LoaderError::UnsupportedTensorRank`] unless `D` is 2 (`[B, C*H*W]`), 3 (`[B, H, W]`)
    /// or 4 (`[B, C, H, W]`), [`LoaderError::TensorRankNeedsOneChannel`] for rank 3 of images
    /// with several channels, and [`LoaderError::PixelFormatMismatch`] for a raw batch.
    pub fn to_tensors<const D: usize>(
        &self,
        device: &Device,
    ) -> Result<TensorBatch<D>, LoaderError> {
        let dims = image_dims::<D>(self.len(), self.shape)?;
        let values = self.images_f32().ok_or_else(|| self.float_mismatch())?;
        let images = Tensor::from_data(TensorData::new(values.to_vec(), dims), device);
        Ok(TensorBatch {
            images,
            labels: labels_tensor(self.labels(), device),
        })
    }

    /// Float image and label tensors on `device`, lending the pixel buffer to Burn instead of
    /// copying it (see the crate documentation for what each backend does with it).
    ///
    /// # Errors
    ///
    /// As [`to_tensors`](Batch::to_tensors).
    pub fn into_tensors<const D: usize>(
        mut self,
        device: &Device,
    ) -> Result<TensorBatch<D>, LoaderError> {
        let dims = image_dims::<D>(self.len(), self.shape)?;
        if self.images_f32().is_none() {
            return Err(self.float_mismatch());
        }
        let labels = labels_tensor(self.labels(), device);
        let pixels = self.pixels.take().ok_or_else(|| self.float_mismatch())?;
        let data = lend_pixels(pixels, Arc::clone(self.pool), dims);
        Ok(TensorBatch {
            images: Tensor::from_data(data, device),
            labels,
        })
    }

    /// Raw `u8` image tensors (dtype `U8`) and label tensors on `device`, copying the pixels
    /// once and keeping the batch.
    ///
    /// # Errors
    ///
    /// [`LoaderError::UnsupportedTensorRank`] unless `D` is 2 (`[B, C*H*W]`), 3 (`[B, H, W]`)
    /// or 4 (`[B, C, H, W]`), [`LoaderError::TensorRankNeedsOneChannel`] for rank 3 of images
    /// with several channels, and [`LoaderError::PixelFormatMismatch`] for a float batch.
    pub fn to_raw_tensors<const D: usize>(
        &self,
        device: &Device,
    ) -> Result<RawTensorBatch<D>, LoaderError> {
        let dims = image_dims::<D>(self.len(), self.shape)?;
        let values = self.images_u8().ok_or_else(|| self.raw_mismatch())?;
        let images = Tensor::from_data(TensorData::new(values.to_vec(), dims), (device, DType::U8));
        Ok(RawTensorBatch {
            images,
            labels: labels_tensor(self.labels(), device),
        })
    }

    /// Raw `u8` image tensors (dtype `U8`) and label tensors on `device`, lending the pixel
    /// buffer to Burn instead of copying it.
    ///
    /// # Errors
    ///
    /// As [`to_raw_tensors`](Batch::to_raw_tensors).
    pub fn into_raw_tensors<const D: usize>(
        mut self,
        device: &Device,
    ) -> Result<RawTensorBatch<D>, LoaderError> {
        let dims = image_dims::<D>(self.len(), self.shape)?;
        if self.images_u8().is_none() {
            return Err(self.raw_mismatch());
        }
        let labels = labels_tensor(self.labels(), device);
        let pixels = self.pixels.take().ok_or_else(|| self.raw_mismatch())?;
        let data = lend_pixels(pixels, Arc::clone(self.pool), dims);
        Ok(RawTensorBatch {
            images: Tensor::from_data(data, (device, DType::U8)),
            labels,
        })
    }
}

static EMPTY_SAMPLES: SampleBuffers = SampleBuffers {
    labels: Vec::new(),
    indices: Vec::new(),
};

impl Drop for Batch<'_> {
    fn drop(&mut self) {
        if let Some(pixels) = self.pixels.take() {
            self.pool.give_back_pixels(pixels);
        }
        if let Some(samples) = self.samples.take() {
            self.pool.give_back_samples(samples);
        }
    }
}

impl fmt::Debug for Batch<'_> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("Batch")
            .field("len", &self.len())
            .field("image_shape", &self.shape)
            .field("pixel_format", &self.format)
            .field("indices", &self.indices())
            .finish()
    }
}
