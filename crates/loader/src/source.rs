//! Where samples come from: the [`ImageSource`] trait and its implementations.

use std::fmt;
use std::marker::PhantomData;

use burn::data::dataset::{Dataset, DatasetError};

use crate::error::LoaderError;

/// The shape of one image: `channels` planes of `height` rows of `width` pixels.
///
/// A sample's bytes are channel-major (CHW): the whole first plane (row after row), then the
/// second, and so on, as CIFAR's binary format stores them. A one-channel image (MNIST) is
/// simply its rows.
///
/// ```
/// use reclaim_loader::ImageShape;
///
/// assert_eq!(ImageShape::CIFAR.pixels(), Some(3 * 32 * 32));
/// assert_eq!(ImageShape::MNIST.to_string(), "1x28x28");
/// assert_eq!(ImageShape::grayscale(28, 28), ImageShape::MNIST);
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ImageShape {
    /// Channels (planes): 1 for grayscale, 3 for RGB.
    pub channels: usize,
    /// Rows.
    pub height: usize,
    /// Columns.
    pub width: usize,
}

impl ImageShape {
    /// MNIST and its family: one channel of 28 x 28.
    pub const MNIST: ImageShape = ImageShape::grayscale(28, 28);

    /// CIFAR-10 and CIFAR-100: three channels (red, green, blue) of 32 x 32.
    pub const CIFAR: ImageShape = ImageShape::new(3, 32, 32);

    /// `channels` planes of `height` x `width`.
    pub const fn new(channels: usize, height: usize, width: usize) -> Self {
        Self {
            channels,
            height,
            width,
        }
    }

    /// One channel of `height` x `width`.
    pub const fn grayscale(height: usize, width: usize) -> Self {
        Self::new(1, height, width)
    }

    /// `channels * height * width`, the bytes of one sample, or `None` on overflow.
    pub fn pixels(self) -> Option<usize> {
        self.plane_pixels()?.checked_mul(self.channels)
    }

    /// `height * width`, the pixels of one channel, or `None` on overflow.
    pub fn plane_pixels(self) -> Option<usize> {
        self.height.checked_mul(self.width)
    }
}

impl fmt::Display for ImageShape {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "{}x{}x{}",
            self.channels, self.height, self.width
        )
    }
}

/// A collection of labelled `u8` images (one or more channels, channel-major) that loader
/// workers may read at the same time.
///
/// Implemented zero-copy for [`reclaim_dataset::ImageDataset`] and [`RawImages`], and through
/// [`BurnDatasetSource`] for any Burn [`Dataset`].
pub trait ImageSource: Sync {
    /// The number of samples.
    fn len(&self) -> usize;

    /// Whether there are no samples.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The shape shared by every image.
    fn image_shape(&self) -> ImageShape;

    /// The pixels (channel-major, each plane row-major: `image_shape().pixels()` of them) and
    /// the label of sample
    /// `index`, borrowed without a copy, for sources that hold their images in memory (or in a
    /// mapped file). Sources that cannot lend return `None` and are read with
    /// [`read_sample`](ImageSource::read_sample).
    ///
    /// The loader only asks for indices below [`len`](ImageSource::len).
    fn borrow_sample(&self, index: usize) -> Option<(&[u8], i64)> {
        let _ = index;
        None
    }

    /// Hints that sample `index` will be read soon, so that its bytes can be on their way into
    /// the CPU's caches while earlier samples are converted. Only a hint: it must not read the
    /// sample (a read would wait for the very memory access the hint is meant to hide). The
    /// default does nothing.
    fn prefetch_sample(&self, index: usize) {
        let _ = index;
    }

    /// Writes the pixels of sample `index` into `pixels` (exactly `image_shape().pixels()`
    /// long) and returns its label.
    ///
    /// # Errors
    ///
    /// Whatever reading the sample may fail with, typically [`LoaderError::Source`].
    fn read_sample(&self, index: usize, pixels: &mut [u8]) -> Result<i64, LoaderError>;

    /// Whether the samples read so far can be trusted: called after each batch is assembled,
    /// so it must be cheap (a memory-mapped dataset checks that its file was not truncated
    /// under the map: two atomic loads). The default trusts the source.
    ///
    /// # Errors
    ///
    /// [`LoaderError::SourceChanged`] with the source's own error.
    fn verify_intact(&self) -> Result<(), LoaderError> {
        Ok(())
    }
}

impl<T: ImageSource + ?Sized> ImageSource for &T {
    fn len(&self) -> usize {
        (**self).len()
    }

    fn image_shape(&self) -> ImageShape {
        (**self).image_shape()
    }

    fn borrow_sample(&self, index: usize) -> Option<(&[u8], i64)> {
        (**self).borrow_sample(index)
    }

    fn prefetch_sample(&self, index: usize) {
        (**self).prefetch_sample(index);
    }

    fn read_sample(&self, index: usize, pixels: &mut [u8]) -> Result<i64, LoaderError> {
        (**self).read_sample(index, pixels)
    }

    fn verify_intact(&self) -> Result<(), LoaderError> {
        (**self).verify_intact()
    }
}

impl<T: ImageSource + ?Sized + Send> ImageSource for std::sync::Arc<T> {
    fn len(&self) -> usize {
        (**self).len()
    }

    fn image_shape(&self) -> ImageShape {
        (**self).image_shape()
    }

    fn borrow_sample(&self, index: usize) -> Option<(&[u8], i64)> {
        (**self).borrow_sample(index)
    }

    fn prefetch_sample(&self, index: usize) {
        (**self).prefetch_sample(index);
    }

    fn read_sample(&self, index: usize, pixels: &mut [u8]) -> Result<i64, LoaderError> {
        (**self).read_sample(index, pixels)
    }

    fn verify_intact(&self) -> Result<(), LoaderError> {
        (**self).verify_intact()
    }
}

/// Images and labels in memory you already hold: `pixels` is `len` images of
/// `shape.pixels()` bytes each, back to back; `labels` has one byte per image.
#[derive(Clone, Copy, Debug)]
pub struct RawImages<'a> {
    pixels: &'a [u8],
    labels: &'a [u8],
    shape: ImageShape,
    pixels_per_image: usize,
}

impl<'a> RawImages<'a> {
    /// Checks that `pixels` holds exactly one image of `shape` per label.
    ///
    /// # Errors
    ///
    /// [`LoaderError::EmptyImages`] for a shape without pixels, and
    /// [`LoaderError::SampleSizeMismatch`] (with `index` = the number of labels) when the
    /// lengths disagree.
    pub fn new(pixels: &'a [u8], labels: &'a [u8], shape: ImageShape) -> Result<Self, LoaderError> {
        let pixels_per_image = match shape.pixels() {
            Some(0) | None => {
                return Err(LoaderError::EmptyImages { shape });
            }
            Some(count) => count,
        };
        let expected = labels.len().checked_mul(pixels_per_image);
        if expected != Some(pixels.len()) {
            return Err(LoaderError::SampleSizeMismatch {
                index: labels.len(),
                expected: expected.unwrap_or(usize::MAX),
                actual: pixels.len(),
            });
        }
        Ok(Self {
            pixels,
            labels,
            shape,
            pixels_per_image,
        })
    }

    fn image(&self, index: usize) -> &'a [u8] {
        let start = index * self.pixels_per_image;
        &self.pixels[start..start + self.pixels_per_image]
    }
}

impl ImageSource for RawImages<'_> {
    fn len(&self) -> usize {
        self.labels.len()
    }

    fn image_shape(&self) -> ImageShape {
        self.shape
    }

    fn borrow_sample(&self, index: usize) -> Option<(&[u8], i64)> {
        Some((self.image(index), i64::from(self.labels[index])))
    }

    fn prefetch_sample(&self, index: usize) {
        crate::convert::prefetch(self.image(index));
        crate::convert::prefetch(&self.labels[index..=index]);
    }

    fn read_sample(&self, index: usize, pixels: &mut [u8]) -> Result<i64, LoaderError> {
        pixels.copy_from_slice(self.image(index));
        Ok(i64::from(self.labels[index]))
    }
}

/// Any Burn [`Dataset`] as an image source, through a conversion you supply.
///
/// `convert(item, pixels)` writes the item's `shape.pixels()` pixels, as `u8`, into `pixels`
/// and returns its label. A failing `Dataset::get` becomes [`LoaderError::Source`] naming the
/// index.
///
/// ```
/// use burn::data::dataset::InMemDataset;
/// use reclaim_loader::{BurnDatasetSource, ImageShape, ImageSource};
///
/// #[derive(Clone)]
/// struct Item {
///     image: [[f32; 2]; 2],
///     label: u8,
/// }
///
/// let dataset = InMemDataset::new(vec![Item { image: [[0.0, 64.0], [128.0, 255.0]], label: 3 }]);
/// let source = BurnDatasetSource::new(dataset, ImageShape::grayscale(2, 2), |item: Item, pixels: &mut [u8]| {
///     for (pixel, value) in pixels.iter_mut().zip(item.image.as_flattened()) {
///         *pixel = *value as u8;
///     }
///     i64::from(item.label)
/// });
/// let mut pixels = [0u8; 4];
/// assert_eq!(source.read_sample(0, &mut pixels).unwrap(), 3);
/// assert_eq!(pixels, [0, 64, 128, 255]);
/// ```
pub struct BurnDatasetSource<D, I, F, E = DatasetError> {
    dataset: D,
    shape: ImageShape,
    convert: F,
    _item: PhantomData<fn() -> (I, E)>,
}

impl<D, I, F, E> BurnDatasetSource<D, I, F, E>
where
    D: Dataset<I, E>,
    F: Fn(I, &mut [u8]) -> i64 + Sync,
    E: std::error::Error + Send + Sync + 'static,
{
    /// Wraps `dataset`, whose items are images of `shape` once converted by `convert`.
    pub fn new(dataset: D, shape: ImageShape, convert: F) -> Self {
        Self {
            dataset,
            shape,
            convert,
            _item: PhantomData,
        }
    }

    /// The wrapped dataset.
    pub fn dataset(&self) -> &D {
        &self.dataset
    }

    /// Unwraps the dataset.
    pub fn into_dataset(self) -> D {
        self.dataset
    }
}

impl<D, I, F, E> fmt::Debug for BurnDatasetSource<D, I, F, E>
where
    D: Dataset<I, E>,
    E: std::error::Error + Send + Sync + 'static,
{
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("BurnDatasetSource")
            .field("len", &self.dataset.len())
            .field("shape", &self.shape)
            .finish_non_exhaustive()
    }
}

impl<D, I, F, E> ImageSource for BurnDatasetSource<D, I, F, E>
where
    D: Dataset<I, E>,
    F: Fn(I, &mut [u8]) -> i64 + Sync,
    E: std::error::Error + Send + Sync + 'static,
{
    fn len(&self) -> usize {
        self.dataset.len()
    }

    fn image_shape(&self) -> ImageShape {
        self.shape
    }

    fn read_sample(&self, index: usize, pixels: &mut [u8]) -> Result<i64, LoaderError> {
        let item = self
            .dataset
            .get(index)
            .map_err(|error| LoaderError::Source {
                index,
                source: Box::new(error),
            })?;
        Ok((self.convert)(item, pixels))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn raw_images_lend_rows_and_labels() {
        let pixels: Vec<u8> = (0..12).collect();
        let labels = [1u8, 2, 3];
        let source = RawImages::new(&pixels, &labels, ImageShape::grayscale(2, 2)).unwrap();
        assert_eq!(source.len(), 3);
        assert_eq!(source.borrow_sample(1), Some((&pixels[4..8], 2)));
        let mut copy = [0u8; 4];
        assert_eq!(source.read_sample(2, &mut copy).unwrap(), 3);
        assert_eq!(copy, [8, 9, 10, 11]);
    }

    #[test]
    fn raw_images_reject_lengths_that_disagree() {
        let pixels = [0u8; 11];
        let error = RawImages::new(&pixels, &[0, 0, 0], ImageShape::grayscale(2, 2)).unwrap_err();
        assert!(matches!(
            error,
            LoaderError::SampleSizeMismatch {
                expected: 12,
                actual: 11,
                ..
            }
        ));
        assert!(matches!(
            RawImages::new(&[], &[], ImageShape::grayscale(0, 5)),
            Err(LoaderError::EmptyImages { .. })
        ));
    }

    #[derive(Debug)]
    struct Failing;

    impl Dataset<u8> for Failing {
        fn get(&self, index: usize) -> Result<u8, DatasetError> {
            if index == 1 {
                Err(DatasetError::new(std::io::Error::other(
                    "row 1 is unreadable",
                )))
            } else {
                Ok(index as u8)
            }
        }

        fn len(&self) -> usize {
            3
        }
    }

    #[test]
    fn burn_dataset_errors_name_the_index() {
        let source = BurnDatasetSource::new(
            Failing,
            ImageShape::grayscale(1, 1),
            |item: u8, pixels: &mut [u8]| {
                pixels[0] = item;
                i64::from(item)
            },
        );
        let mut pixel = [0u8];
        assert_eq!(source.read_sample(2, &mut pixel).unwrap(), 2);
        let error = source.read_sample(1, &mut pixel).unwrap_err();
        assert!(matches!(error, LoaderError::Source { index: 1, .. }));
        let cause = std::error::Error::source(&error).unwrap().to_string();
        assert!(cause.contains("row 1 is unreadable"), "{cause}");
    }
}
