//! [`ImageSource`] for the IDX and CIFAR datasets of `reclaim-dataset`, zero-copy.

use crate::error::LoaderError;
use crate::source::{ImageShape, ImageSource};

/// Copies sample `index`'s `image` into `pixels` and returns its `label`, or
/// [`LoaderError::SampleSizeMismatch`] when the two lengths differ.
fn copy_sample(
    index: usize,
    image: &[u8],
    label: impl Into<i64>,
    pixels: &mut [u8],
) -> Result<i64, LoaderError> {
    if image.len() != pixels.len() {
        return Err(LoaderError::SampleSizeMismatch {
            index,
            expected: pixels.len(),
            actual: image.len(),
        });
    }
    pixels.copy_from_slice(image);
    Ok(label.into())
}

impl ImageSource for reclaim_dataset::ImageDataset {
    fn len(&self) -> usize {
        reclaim_dataset::ImageDataset::len(self)
    }

    fn image_shape(&self) -> ImageShape {
        ImageShape::grayscale(self.image_height(), self.image_width())
    }

    fn borrow_sample(&self, index: usize) -> Option<(&[u8], i64)> {
        Some((self.image(index), i64::from(self.label(index))))
    }

    fn prefetch_sample(&self, index: usize) {
        crate::convert::prefetch(self.image(index));
        if let Some(label) = self.labels().get(index..=index) {
            crate::convert::prefetch(label);
        }
    }

    fn read_sample(&self, index: usize, pixels: &mut [u8]) -> Result<i64, LoaderError> {
        copy_sample(index, self.image(index), self.label(index), pixels)
    }

    /// A mapped dataset whose file was truncated under the map (reclaim-dataset's SIGBUS guard,
    /// where the program installed it, caught the fault and put zeros in its place) is
    /// [`LoaderError::SourceChanged`] naming the file; an owned one is always intact.
    fn verify_intact(&self) -> Result<(), LoaderError> {
        self.verify_mapping_intact()
            .map_err(|error| LoaderError::SourceChanged(Box::new(error)))
    }
}

/// CIFAR-10 and CIFAR-100 records: 3 x 32 x 32 images, channel-major as the format stores them,
/// lent straight from the (mapped) record files with the label of the dataset's
/// [`CifarLabelKind`](reclaim_dataset::cifar::CifarLabelKind).
impl ImageSource for reclaim_dataset::CifarDataset {
    fn len(&self) -> usize {
        reclaim_dataset::CifarDataset::len(self)
    }

    fn image_shape(&self) -> ImageShape {
        ImageShape::new(self.channels(), self.image_height(), self.image_width())
    }

    fn borrow_sample(&self, index: usize) -> Option<(&[u8], i64)> {
        Some((self.image(index), i64::from(self.label(index))))
    }

    fn prefetch_sample(&self, index: usize) {
        crate::convert::prefetch(self.record(index));
    }

    fn read_sample(&self, index: usize, pixels: &mut [u8]) -> Result<i64, LoaderError> {
        copy_sample(index, self.image(index), self.label(index), pixels)
    }

    /// As for IDX: a record file truncated under its map is [`LoaderError::SourceChanged`].
    fn verify_intact(&self) -> Result<(), LoaderError> {
        self.verify_mapping_intact()
            .map_err(|error| LoaderError::SourceChanged(Box::new(error)))
    }
}

/// A pack's records: C x H x W images of the pack's shape, channel-major as the pack stores
/// them, lent straight from the (mapped) pack with their labels.
impl ImageSource for reclaim_dataset::PackDataset {
    fn len(&self) -> usize {
        reclaim_dataset::PackDataset::len(self)
    }

    fn image_shape(&self) -> ImageShape {
        let shape = reclaim_dataset::PackDataset::image_shape(self);
        ImageShape::new(
            shape.channels as usize,
            shape.height as usize,
            shape.width as usize,
        )
    }

    fn borrow_sample(&self, index: usize) -> Option<(&[u8], i64)> {
        Some((self.image(index), i64::from(self.label(index))))
    }

    fn prefetch_sample(&self, index: usize) {
        crate::convert::prefetch(self.image(index));
    }

    fn read_sample(&self, index: usize, pixels: &mut [u8]) -> Result<i64, LoaderError> {
        copy_sample(index, self.image(index), self.label(index), pixels)
    }

    /// As for IDX: a pack truncated under its map is [`LoaderError::SourceChanged`].
    fn verify_intact(&self) -> Result<(), LoaderError> {
        self.verify_mapping_intact()
            .map_err(|error| LoaderError::SourceChanged(Box::new(error)))
    }
}
