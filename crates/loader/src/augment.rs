//! Deterministic per-sample augmentation (random crop with zero padding, random horizontal
//! flip) and user transforms, fused into the conversion that writes the pooled buffer.
//!
//! Every random choice is drawn from a [`SampleRng`] made from `(seed, epoch, sample index)`,
//! never from a worker's state, so a batch is the same whichever worker makes it and after a
//! resume. Nothing here allocates: each output pixel is computed from its source coordinate
//! (or is padding) and appended to the pooled buffer, whose capacity is already the batch's.

use std::fmt;
use std::sync::Arc;

use serde::{Deserialize, Serialize};

use crate::convert::{
    Affine, ChannelAffines, append_converted, append_converted_planes, append_converted_reversed,
};
use crate::error::LoaderError;
use crate::rng::{SampleRng, Stream};
use crate::source::ImageShape;

/// A random crop of the zero-padded image back to the image's own size, as torchvision's
/// `RandomCrop(size, padding)`: the image is padded by `padding` pixels of value 0 on every
/// side, and a window of the image's size is taken at a uniformly random offset.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct RandomCrop {
    /// Zero pixels added on each side (at most the image's height and width).
    pub padding: usize,
}

/// Whether images are mirrored left-right.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub enum HorizontalFlip {
    /// Never.
    #[default]
    Never,
    /// With probability one half, per sample and epoch.
    Random,
}

/// The loader's built-in augmentation: an optional [`RandomCrop`], then an optional
/// [`HorizontalFlip`], each drawn per sample from `(seed, epoch, sample index)`.
///
/// Fused into the conversion: each output pixel is read from its source coordinate (or is a
/// padding 0), then scaled and normalized with its channel's statistics; no intermediate image
/// is made. With [`PixelFormat::RawU8`](crate::PixelFormat::RawU8) the same crop and flip apply
/// to the raw bytes, padding with 0.
///
/// A sample drawn twice in one epoch (sampling with replacement) is augmented the same way both
/// times: the draws depend on its index, not on its position.
///
/// ```
/// use reclaim_loader::{Augmentation, HorizontalFlip, ImageShape, LoaderError, RandomCrop};
///
/// let cifar = Augmentation::CIFAR;
/// assert_eq!(cifar.crop, Some(RandomCrop { padding: 4 }));
/// assert_eq!(cifar.horizontal_flip, HorizontalFlip::Random);
/// assert!(cifar.validate_for(ImageShape::CIFAR).is_ok());
///
/// let too_wide = Augmentation { crop: Some(RandomCrop { padding: 5 }), ..Augmentation::NONE };
/// assert!(matches!(
///     too_wide.validate_for(ImageShape::grayscale(3, 4)),
///     Err(LoaderError::CropPaddingTooLarge { padding: 5, .. })
/// ));
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default, Serialize, Deserialize)]
pub struct Augmentation {
    /// The random crop, if any.
    pub crop: Option<RandomCrop>,
    /// The random mirroring.
    pub horizontal_flip: HorizontalFlip,
}

impl Augmentation {
    /// No augmentation: every image as it is (the default).
    pub const NONE: Augmentation = Augmentation {
        crop: None,
        horizontal_flip: HorizontalFlip::Never,
    };

    /// CIFAR's usual training augmentation: a random crop of 32 with padding 4, then a random
    /// horizontal flip.
    pub const CIFAR: Augmentation = Augmentation {
        crop: Some(RandomCrop { padding: 4 }),
        horizontal_flip: HorizontalFlip::Random,
    };

    /// The MNIST family's usual training augmentation: a random crop of the image's size with
    /// padding 2 (shifts of up to two pixels), and no flip (digits and letters are not
    /// mirror-symmetric).
    pub const MNIST: Augmentation = Augmentation {
        crop: Some(RandomCrop { padding: 2 }),
        horizontal_flip: HorizontalFlip::Never,
    };

    /// Whether this augmentation leaves every image as it is.
    pub fn is_none(self) -> bool {
        self == Self::NONE
    }

    /// Checks that the crop's padding fits images of `shape`.
    ///
    /// # Errors
    ///
    /// [`LoaderError::CropPaddingTooLarge`] when the padding is larger than the height or the
    /// width.
    pub fn validate_for(self, shape: ImageShape) -> Result<Self, LoaderError> {
        if let Some(RandomCrop { padding }) = self.crop {
            let offsets_countable = padding
                .checked_mul(2)
                .and_then(|span| span.checked_add(1))
                .is_some_and(|offsets| isize::try_from(offsets).is_ok());
            if padding > shape.height || padding > shape.width || !offsets_countable {
                return Err(LoaderError::CropPaddingTooLarge { padding, shape });
            }
        }
        Ok(self)
    }

    /// Draws where one sample's pixels come from (crop offsets first, then the flip).
    ///
    /// The padding was validated: `2 * padding + 1` fits an `isize`.
    pub(crate) fn placement(self, rng: &mut SampleRng) -> Placement {
        let (shift_y, shift_x) = match self.crop {
            None => (0, 0),
            Some(RandomCrop { padding }) => {
                let offsets = 2 * padding + 1;
                let padding = padding as isize;
                let shift_y = rng.below(offsets) as isize - padding;
                let shift_x = rng.below(offsets) as isize - padding;
                (shift_y, shift_x)
            }
        };
        let mirrored = match self.horizontal_flip {
            HorizontalFlip::Never => false,
            HorizontalFlip::Random => rng.coin(),
        };
        Placement {
            shift_y,
            shift_x,
            mirrored,
        }
    }
}

/// Where one augmented sample's pixels come from: output pixel `(y, x)` of the unmirrored
/// image is source pixel `(y + shift_y, x + shift_x)` (padding when outside the image); a
/// mirrored output row is the unmirrored row reversed (the flip follows the crop).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct Placement {
    pub(crate) shift_y: isize,
    pub(crate) shift_x: isize,
    pub(crate) mirrored: bool,
}

/// Where a placed image's rows go: a float or a byte buffer.
pub(crate) trait RowSink {
    /// The rows that follow are of channel `channel`.
    fn start_channel(&mut self, channel: usize);
    /// Appends source pixels in order.
    fn forward(&mut self, pixels: &[u8]);
    /// Appends source pixels in reverse order.
    fn reversed(&mut self, pixels: &[u8]);
    /// Appends `count` padding pixels (a source value of 0).
    fn padding(&mut self, count: usize);
}

/// Rows converted to `f32` with each channel's affine map.
pub(crate) struct FloatRows<'a> {
    out: &'a mut Vec<f32>,
    affines: &'a ChannelAffines,
    affine: Affine,
}

impl<'a> FloatRows<'a> {
    pub(crate) fn new(out: &'a mut Vec<f32>, affines: &'a ChannelAffines) -> Self {
        Self {
            out,
            affine: affines.of_channel(0),
            affines,
        }
    }
}

impl RowSink for FloatRows<'_> {
    fn start_channel(&mut self, channel: usize) {
        self.affine = self.affines.of_channel(channel);
    }

    fn forward(&mut self, pixels: &[u8]) {
        append_converted(pixels, self.out, self.affine);
    }

    fn reversed(&mut self, pixels: &[u8]) {
        append_converted_reversed(pixels, self.out, self.affine);
    }

    fn padding(&mut self, count: usize) {
        let value = self.affine.padding();
        self.out.extend(std::iter::repeat_n(value, count));
    }
}

/// Raw `u8` rows, padded with 0.
pub(crate) struct ByteRows<'a> {
    pub(crate) out: &'a mut Vec<u8>,
}

impl RowSink for ByteRows<'_> {
    fn start_channel(&mut self, _channel: usize) {}

    fn forward(&mut self, pixels: &[u8]) {
        self.out.extend_from_slice(pixels);
    }

    fn reversed(&mut self, pixels: &[u8]) {
        self.out.extend(pixels.iter().rev());
    }

    fn padding(&mut self, count: usize) {
        self.out.extend(std::iter::repeat_n(0u8, count));
    }
}

/// Appends `image` (channel-major, of `shape`) as `placement` places it, channel by channel,
/// row by row; each row is at most three runs: padding, a contiguous (or reversed) span of the
/// source row, padding.
pub(crate) fn append_placed<K: RowSink>(
    image: &[u8],
    shape: ImageShape,
    placement: Placement,
    sink: &mut K,
) {
    let ImageShape { height, width, .. } = shape;
    let plane_len = height * width;
    if plane_len == 0 {
        return;
    }
    for (channel, plane) in image.chunks_exact(plane_len).enumerate() {
        sink.start_channel(channel);
        for output_row in 0..height {
            append_placed_row(plane, shape, output_row, placement, sink);
        }
    }
}

fn append_placed_row<K: RowSink>(
    plane: &[u8],
    shape: ImageShape,
    output_row: usize,
    placement: Placement,
    sink: &mut K,
) {
    let ImageShape { height, width, .. } = shape;
    let source_row = output_row as isize + placement.shift_y;
    let Some(source_row) = usize::try_from(source_row).ok().filter(|&row| row < height) else {
        sink.padding(width);
        return;
    };
    let row = &plane[source_row * width..(source_row + 1) * width];
    // Unmirrored, output column x reads row[x + shift_x]: `lead` padding columns, then `kept`
    // source columns from `first_source`, then `trail` padding columns.
    let shift = placement.shift_x;
    let kept = width.saturating_sub(shift.unsigned_abs());
    let lead = usize::try_from(-shift).map_or(0, |lead| lead.min(width));
    let first_source = usize::try_from(shift).map_or(0, |first| first.min(width));
    let trail = width - lead - kept;
    let span = &row[first_source..first_source + kept];
    if placement.mirrored {
        sink.padding(trail);
        sink.reversed(span);
        sink.padding(lead);
    } else {
        sink.padding(lead);
        sink.forward(span);
        sink.padding(trail);
    }
}

/// A user's own per-sample step, run by the loader on each sample right after its built-in
/// conversion (and augmentation), on the worker that makes the batch.
///
/// `apply` gets the sample's source pixels (channel-major, `shape.pixels()` bytes), its shape,
/// a [`SampleRng`] that is a pure function of `(seed, epoch, sample index)`, and `output`: the
/// sample's `shape.pixels()` floats in the pooled batch buffer, already converted (and
/// augmented and normalized, as configured). It may read and overwrite `output` in place.
///
/// The guarantees of the loader hold as long as the transform keeps them: draw randomness only
/// from `rng` (batches are then identical for any number of workers and after a resume), do
/// not allocate (the memory report counts the pooled buffers only), do not panic (a panic on a
/// worker ends the epoch with [`LoaderError::WorkerPanicked`]). Transforms write floats:
/// with [`PixelFormat::RawU8`](crate::PixelFormat::RawU8) the loader refuses them
/// ([`LoaderError::TransformNeedsFloatPixels`]).
///
/// Any `Fn(&[u8], ImageShape, &mut SampleRng, &mut [f32]) + Send + Sync` is a transform.
///
/// ```
/// use std::sync::Arc;
/// use reclaim_loader::{
///     ImageShape, Loader, LoaderConfig, RawImages, SampleRng, SampleTransform, Sampling,
/// };
///
/// /// Adds uniform noise of `amplitude` to every pixel.
/// struct Noise {
///     amplitude: f32,
/// }
///
/// impl SampleTransform for Noise {
///     fn apply(&self, _source: &[u8], _shape: ImageShape, rng: &mut SampleRng, output: &mut [f32]) {
///         for value in output {
///             *value += (rng.unit_f32() - 0.5) * self.amplitude;
///         }
///     }
/// }
///
/// let pixels = vec![128u8; 8 * 4];
/// let labels = vec![0u8; 8];
/// let source = RawImages::new(&pixels, &labels, ImageShape::grayscale(2, 2)).unwrap();
/// let config = |num_workers| LoaderConfig {
///     batch_size: 4,
///     num_workers,
///     sampling: Sampling::Sequential,
///     transform: Some(Arc::new(Noise { amplitude: 0.1 })),
///     ..LoaderConfig::default()
/// };
/// let first_batch = |num_workers| {
///     let loader = Loader::new(&source, config(num_workers)).unwrap();
///     std::thread::scope(|scope| {
///         let epoch = loader.epoch(scope, 0).unwrap();
///         let batch = epoch.next_batch().unwrap().unwrap();
///         batch.images_f32().unwrap().to_vec()
///     })
/// };
/// let noisy = first_batch(0);
/// assert!(noisy.iter().all(|value| (value - 128.0 / 255.0).abs() <= 0.05));
/// assert_eq!(noisy, first_batch(2), "the same noise on any number of workers");
/// ```
pub trait SampleTransform: Send + Sync {
    /// Transforms one sample's `output` in place (see the trait's documentation).
    fn apply(&self, source: &[u8], shape: ImageShape, rng: &mut SampleRng, output: &mut [f32]);
}

impl<F> SampleTransform for F
where
    F: Fn(&[u8], ImageShape, &mut SampleRng, &mut [f32]) + Send + Sync,
{
    fn apply(&self, source: &[u8], shape: ImageShape, rng: &mut SampleRng, output: &mut [f32]) {
        self(source, shape, rng, output);
    }
}

/// What the loader does to each sample besides converting it.
#[derive(Clone, Default)]
pub(crate) struct SampleSteps {
    pub(crate) augmentation: Augmentation,
    pub(crate) transform: Option<Arc<dyn SampleTransform>>,
}

impl SampleSteps {
    /// Whether samples are only converted (the MNIST fast path).
    pub(crate) fn is_plain(&self) -> bool {
        self.augmentation.is_none() && self.transform.is_none()
    }
}

impl fmt::Debug for SampleSteps {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("SampleSteps")
            .field("augmentation", &self.augmentation)
            .field(
                "transform",
                &self.transform.as_ref().map(|_| "SampleTransform"),
            )
            .finish()
    }
}

/// Which sample of which epoch of which run: all a sample's randomness derives from it.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) struct SampleKey {
    pub(crate) seed: u64,
    pub(crate) epoch: u64,
    pub(crate) index: usize,
}

impl SampleKey {
    fn rng(self, stream: Stream) -> SampleRng {
        SampleRng::with_stream(self.seed, self.epoch, self.index, stream)
    }
}

/// Appends sample `key` (its source `image` of `shape`) to `out` as `f32`: augmented (when
/// configured) and converted with each channel's map in one pass, then given to the user's
/// transform in place.
pub(crate) fn append_sample_f32(
    image: &[u8],
    shape: ImageShape,
    affines: &ChannelAffines,
    steps: &SampleSteps,
    key: SampleKey,
    out: &mut Vec<f32>,
) {
    let start = out.len();
    if steps.augmentation.is_none() {
        let plane_len = shape.height * shape.width;
        append_converted_planes(image, plane_len, out, affines);
    } else {
        let placement = steps
            .augmentation
            .placement(&mut key.rng(Stream::Augmentation));
        append_placed(image, shape, placement, &mut FloatRows::new(out, affines));
    }
    if let Some(transform) = &steps.transform {
        let mut rng = key.rng(Stream::Transform);
        transform.apply(image, shape, &mut rng, &mut out[start..]);
    }
}

/// Appends sample `key` to `out` as raw bytes, augmented when configured (padding 0).
pub(crate) fn append_sample_u8(
    image: &[u8],
    shape: ImageShape,
    augmentation: Augmentation,
    key: SampleKey,
    out: &mut Vec<u8>,
) {
    if augmentation.is_none() {
        out.extend_from_slice(image);
    } else {
        let placement = augmentation.placement(&mut key.rng(Stream::Augmentation));
        append_placed(image, shape, placement, &mut ByteRows { out });
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use proptest::prelude::*;

    /// The reference: each output pixel from its source coordinate, one at a time.
    fn placed_by_coordinates(image: &[u8], shape: ImageShape, placement: Placement) -> Vec<u8> {
        let ImageShape {
            channels,
            height,
            width,
        } = shape;
        let mut out = Vec::new();
        for channel in 0..channels {
            for y in 0..height {
                for x in 0..width {
                    let unmirrored_x = if placement.mirrored { width - 1 - x } else { x };
                    let source_y = y as isize + placement.shift_y;
                    let source_x = unmirrored_x as isize + placement.shift_x;
                    let inside = (0..height as isize).contains(&source_y)
                        && (0..width as isize).contains(&source_x);
                    out.push(if inside {
                        image[channel * height * width
                            + source_y as usize * width
                            + source_x as usize]
                    } else {
                        0
                    });
                }
            }
        }
        out
    }

    fn placed_bytes(image: &[u8], shape: ImageShape, placement: Placement) -> Vec<u8> {
        let mut out = Vec::new();
        append_placed(image, shape, placement, &mut ByteRows { out: &mut out });
        out
    }

    /// A 1 x 3 x 4 image whose pixels are 1 to 12, row after row.
    const SMALL: ImageShape = ImageShape::grayscale(3, 4);
    const SMALL_PIXELS: [u8; 12] = [1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11, 12];

    #[test]
    fn a_crop_shifts_the_image_and_pads_with_zeros_pixel_by_pixel() {
        // The window starts one row above and two columns right of the image's corner.
        let placement = Placement {
            shift_y: -1,
            shift_x: 2,
            mirrored: false,
        };
        #[rustfmt::skip]
        let expected = [
            0, 0, 0, 0,
            3, 4, 0, 0,
            7, 8, 0, 0,
        ];
        assert_eq!(placed_bytes(&SMALL_PIXELS, SMALL, placement), expected);
        let placement = Placement {
            shift_y: 1,
            shift_x: -1,
            mirrored: false,
        };
        #[rustfmt::skip]
        let expected = [
            0, 5, 6, 7,
            0, 9, 10, 11,
            0, 0, 0, 0,
        ];
        assert_eq!(placed_bytes(&SMALL_PIXELS, SMALL, placement), expected);
    }

    #[test]
    fn a_flip_mirrors_each_row_after_the_crop() {
        let identity_flipped = Placement {
            shift_y: 0,
            shift_x: 0,
            mirrored: true,
        };
        #[rustfmt::skip]
        let expected = [
            4, 3, 2, 1,
            8, 7, 6, 5,
            12, 11, 10, 9,
        ];
        assert_eq!(
            placed_bytes(&SMALL_PIXELS, SMALL, identity_flipped),
            expected
        );
        let cropped_flipped = Placement {
            shift_y: 0,
            shift_x: -1,
            mirrored: true,
        };
        // Cropped: [0 1 2 3 / 0 5 6 7 / 0 9 10 11], then mirrored.
        #[rustfmt::skip]
        let expected = [
            3, 2, 1, 0,
            7, 6, 5, 0,
            11, 10, 9, 0,
        ];
        assert_eq!(
            placed_bytes(&SMALL_PIXELS, SMALL, cropped_flipped),
            expected
        );
    }

    #[test]
    fn three_channels_are_placed_alike_plane_by_plane() {
        // 3 x 4 x 4: channel c's pixel (y, x) is 100 c + 10 y + x.
        let shape = ImageShape::new(3, 4, 4);
        let image: Vec<u8> = (0..3)
            .flat_map(|c| (0..4).flat_map(move |y| (0..4).map(move |x| 100 * c + 10 * y + x)))
            .collect();
        let placement = Placement {
            shift_y: 2,
            shift_x: 1,
            mirrored: true,
        };
        let out = placed_bytes(&image, shape, placement);
        // Row 0 of each channel reads source row 2 columns 1..4 (then 0), mirrored.
        for channel in 0..3u8 {
            let plane = &out[usize::from(channel) * 16..][..16];
            let base = 100 * channel + 20;
            assert_eq!(plane[..4], [0, base + 3, base + 2, base + 1]);
            let base = 100 * channel + 30;
            assert_eq!(plane[4..8], [0, base + 3, base + 2, base + 1]);
            assert!(plane[8..].iter().all(|&pixel| pixel == 0));
        }
        assert_eq!(out, placed_by_coordinates(&image, shape, placement));
    }

    #[test]
    fn float_rows_normalize_per_channel_and_pad_with_a_normalized_zero() {
        let shape = ImageShape::new(2, 1, 3);
        let image = [10u8, 20, 30, 40, 50, 60];
        let affines = ChannelAffines::PerChannel {
            affines: [
                Affine {
                    scale: 1.0,
                    offset: 0.5,
                },
                Affine {
                    scale: 2.0,
                    offset: -1.0,
                },
                Affine::UNIT,
                Affine::UNIT,
            ],
            channels: 2,
        };
        let placement = Placement {
            shift_y: 0,
            shift_x: 1,
            mirrored: false,
        };
        let mut out = Vec::new();
        append_placed(
            image.as_slice(),
            shape,
            placement,
            &mut FloatRows::new(&mut out, &affines),
        );
        assert_eq!(out, [20.5, 30.5, 0.5, 99.0, 119.0, -1.0]);
    }

    #[test]
    fn placements_are_drawn_within_the_padding_and_from_the_sample_key_only() {
        let augmentation = Augmentation::CIFAR;
        let mut shifts = std::collections::BTreeSet::new();
        let mut mirrored = 0;
        for index in 0..2000 {
            let key = SampleKey {
                seed: 3,
                epoch: 1,
                index,
            };
            let placement = augmentation.placement(&mut key.rng(Stream::Augmentation));
            assert_eq!(
                placement,
                augmentation.placement(&mut key.rng(Stream::Augmentation))
            );
            assert!((-4..=4).contains(&placement.shift_y));
            assert!((-4..=4).contains(&placement.shift_x));
            shifts.insert(placement.shift_x);
            mirrored += usize::from(placement.mirrored);
        }
        assert_eq!(shifts.len(), 9, "every offset is drawn");
        assert!((800..1200).contains(&mirrored), "{mirrored}");
        let none = Augmentation::NONE.placement(&mut SampleRng::for_sample(0, 0, 0));
        assert_eq!(
            none,
            Placement {
                shift_y: 0,
                shift_x: 0,
                mirrored: false
            }
        );
    }

    #[test]
    fn padding_up_to_the_image_size_is_accepted_and_beyond_it_refused() {
        let crop = |padding| Augmentation {
            crop: Some(RandomCrop { padding }),
            horizontal_flip: HorizontalFlip::Never,
        };
        assert!(crop(3).validate_for(SMALL).is_ok());
        assert!(crop(0).validate_for(SMALL).is_ok());
        let error = crop(4).validate_for(SMALL).unwrap_err();
        assert!(matches!(
            error,
            LoaderError::CropPaddingTooLarge {
                padding: 4,
                shape: SMALL
            }
        ));
        assert!(error.to_string().contains("1x3x4"), "{error}");
        assert!(Augmentation::NONE.validate_for(SMALL).is_ok());
        let huge = ImageShape::grayscale(usize::MAX, 1);
        assert!(crop(usize::MAX / 2 + 1).validate_for(huge).is_err());
    }

    proptest! {
        #[test]
        fn placing_matches_the_coordinate_reference(
            channels in 1usize..4,
            height in 1usize..7,
            width in 1usize..7,
            shift_y in -7isize..8,
            shift_x in -7isize..8,
            mirrored in any::<bool>(),
            seed in any::<u8>(),
        ) {
            let shape = ImageShape::new(channels, height, width);
            let image: Vec<u8> = (0..channels * height * width)
                .map(|pixel| (pixel as u8).wrapping_mul(37).wrapping_add(seed) | 1)
                .collect();
            let placement = Placement { shift_y, shift_x, mirrored };
            prop_assert_eq!(
                placed_bytes(&image, shape, placement),
                placed_by_coordinates(&image, shape, placement)
            );
        }
    }
}
