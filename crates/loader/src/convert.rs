//! Pixel formats and the `u8` to `f32` conversion loop.

use crate::error::LoaderError;
use crate::source::ImageShape;

/// Per-pixel normalization of one channel, applied after scaling to `[0, 1]`:
/// `((pixel / 255) - mean) / standard_deviation`.
///
/// As a [`PixelFormat::NormalizedF32`] it normalizes one-channel images (MNIST); for several
/// channels use a [`ChannelNormalization`].
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct Normalization {
    /// Subtracted from every scaled pixel.
    pub mean: f32,
    /// Divides every centred pixel; positive.
    pub standard_deviation: f32,
}

impl Normalization {
    /// MNIST's training-set statistics, as in PyTorch's and Burn's MNIST examples.
    pub const MNIST: Normalization = Normalization {
        mean: 0.1307,
        standard_deviation: 0.3081,
    };

    /// Checks that the mean is finite and the standard deviation positive and finite.
    ///
    /// # Errors
    ///
    /// [`LoaderError::InvalidNormalization`] (naming channel 0).
    pub fn validate(self) -> Result<Self, LoaderError> {
        self.validate_channel(0)
    }

    fn validate_channel(self, channel: usize) -> Result<Self, LoaderError> {
        if self.mean.is_finite()
            && self.standard_deviation.is_finite()
            && self.standard_deviation > 0.0
        {
            Ok(self)
        } else {
            Err(LoaderError::InvalidNormalization {
                channel,
                mean: self.mean,
                standard_deviation: self.standard_deviation,
            })
        }
    }

    /// The folded affine map of this normalization.
    fn affine(self) -> Affine {
        let standard_deviation = f64::from(self.standard_deviation);
        Affine {
            scale: (1.0 / (255.0 * standard_deviation)) as f32,
            offset: (-f64::from(self.mean) / standard_deviation) as f32,
        }
    }
}

/// Per-channel normalization: channel `c` of every image becomes
/// `((pixel / 255) - mean[c]) / standard_deviation[c]`, for 1 to
/// [`MAX_CHANNELS`](ChannelNormalization::MAX_CHANNELS) channels.
///
/// A plain `Copy` value (no allocation), so that [`PixelFormat`] stays one too. Its number of
/// channels must be the source's, which [`Loader::new`](crate::Loader::new) checks
/// ([`LoaderError::NormalizationChannelMismatch`]).
///
/// ```
/// use reclaim_loader::{ChannelNormalization, LoaderError, Normalization};
///
/// let cifar = ChannelNormalization::CIFAR10;
/// assert_eq!(cifar.channels(), 3);
/// assert_eq!(cifar.statistics()[2], Normalization { mean: 0.4465, standard_deviation: 0.2616 });
///
/// let broken = ChannelNormalization::new(&[
///     Normalization { mean: 0.5, standard_deviation: 0.2 },
///     Normalization { mean: 0.5, standard_deviation: 0.0 },
/// ]);
/// assert!(matches!(
///     broken,
///     Err(LoaderError::InvalidNormalization { channel: 1, standard_deviation: 0.0, .. })
/// ));
/// ```
#[derive(Clone, Copy, Debug, PartialEq)]
pub struct ChannelNormalization {
    /// Channels in use: `1..=MAX_CHANNELS`.
    channels: usize,
    /// The first `channels` entries are the channels' statistics; the rest are unused.
    statistics: [Normalization; ChannelNormalization::MAX_CHANNELS],
}

/// An unused entry of [`ChannelNormalization::statistics`].
const UNUSED_CHANNEL: Normalization = Normalization {
    mean: 0.0,
    standard_deviation: 1.0,
};

impl ChannelNormalization {
    /// The most channels a per-channel normalization holds (grayscale, RGB, RGBA).
    pub const MAX_CHANNELS: usize = 4;

    /// CIFAR-10's usual training-set statistics (red, green, blue), as in torchvision's
    /// CIFAR-10 recipes.
    pub const CIFAR10: ChannelNormalization = ChannelNormalization {
        channels: 3,
        statistics: [
            Normalization {
                mean: 0.4914,
                standard_deviation: 0.2470,
            },
            Normalization {
                mean: 0.4822,
                standard_deviation: 0.2435,
            },
            Normalization {
                mean: 0.4465,
                standard_deviation: 0.2616,
            },
            UNUSED_CHANNEL,
        ],
    };

    /// One normalization per channel, in channel order.
    ///
    /// # Errors
    ///
    /// [`LoaderError::NormalizationChannelCount`] for no channel or more than
    /// [`MAX_CHANNELS`](ChannelNormalization::MAX_CHANNELS), and
    /// [`LoaderError::InvalidNormalization`] naming the first channel whose mean is not finite
    /// or whose standard deviation is not positive and finite.
    pub fn new(per_channel: &[Normalization]) -> Result<Self, LoaderError> {
        if per_channel.is_empty() || per_channel.len() > Self::MAX_CHANNELS {
            return Err(LoaderError::NormalizationChannelCount {
                given: per_channel.len(),
                maximum: Self::MAX_CHANNELS,
            });
        }
        let mut statistics = [UNUSED_CHANNEL; Self::MAX_CHANNELS];
        statistics[..per_channel.len()].copy_from_slice(per_channel);
        Self {
            channels: per_channel.len(),
            statistics,
        }
        .validate()
    }

    /// The number of channels.
    pub fn channels(&self) -> usize {
        self.channels
    }

    /// Each channel's mean and standard deviation, in channel order.
    pub fn statistics(&self) -> &[Normalization] {
        &self.statistics[..self.channels]
    }

    /// Checks every channel as [`Normalization::validate`] does.
    ///
    /// # Errors
    ///
    /// [`LoaderError::InvalidNormalization`] naming the first invalid channel.
    pub fn validate(self) -> Result<Self, LoaderError> {
        for (channel, statistics) in self.statistics().iter().enumerate() {
            statistics.validate_channel(channel)?;
        }
        Ok(self)
    }
}

impl From<Normalization> for ChannelNormalization {
    /// A one-channel normalization.
    fn from(normalization: Normalization) -> Self {
        let mut statistics = [UNUSED_CHANNEL; Self::MAX_CHANNELS];
        statistics[0] = normalization;
        Self {
            channels: 1,
            statistics,
        }
    }
}

/// What a batch's pixels become.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum PixelFormat {
    /// `f32` in `[0, 1]` (`pixel / 255`), any number of channels.
    #[default]
    UnitF32,
    /// `f32`, `((pixel / 255) - mean) / standard_deviation`, for one-channel images.
    NormalizedF32(Normalization),
    /// `f32`, `((pixel / 255) - mean[c]) / standard_deviation[c]` in channel `c`; the
    /// normalization's channels must be the images'.
    ChannelNormalizedF32(ChannelNormalization),
    /// The `u8` pixels as they are, for callers that convert on the device (augmentation, if
    /// configured, still applies: padding is 0).
    RawU8,
}

impl PixelFormat {
    /// A short name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            PixelFormat::UnitF32 => "unit f32",
            PixelFormat::NormalizedF32(_) => "normalized f32",
            PixelFormat::ChannelNormalizedF32(_) => "channel-normalized f32",
            PixelFormat::RawU8 => "raw u8",
        }
    }

    /// Bytes per converted pixel.
    pub fn bytes_per_pixel(self) -> usize {
        match self {
            PixelFormat::UnitF32
            | PixelFormat::NormalizedF32(_)
            | PixelFormat::ChannelNormalizedF32(_) => size_of::<f32>(),
            PixelFormat::RawU8 => size_of::<u8>(),
        }
    }

    /// The number of channels a normalization of this format describes (`None`: any).
    pub(crate) fn normalization_channels(self) -> Option<usize> {
        match self {
            PixelFormat::UnitF32 | PixelFormat::RawU8 => None,
            PixelFormat::NormalizedF32(_) => Some(1),
            PixelFormat::ChannelNormalizedF32(normalization) => Some(normalization.channels()),
        }
    }

    /// Checks the format's normalization, and that it describes `shape`'s channels (as
    /// [`Loader::new`](crate::Loader::new) does).
    ///
    /// # Errors
    ///
    /// [`LoaderError::InvalidNormalization`] and
    /// [`LoaderError::NormalizationChannelMismatch`].
    pub fn validate_for(self, shape: ImageShape) -> Result<(), LoaderError> {
        match self {
            PixelFormat::NormalizedF32(normalization) => {
                normalization.validate()?;
            }
            PixelFormat::ChannelNormalizedF32(normalization) => {
                normalization.validate()?;
            }
            PixelFormat::UnitF32 | PixelFormat::RawU8 => {}
        }
        match self.normalization_channels() {
            Some(channels) if channels != shape.channels => {
                Err(LoaderError::NormalizationChannelMismatch {
                    normalization_channels: channels,
                    shape,
                })
            }
            _ => Ok(()),
        }
    }

    /// The affine maps of the float formats, per channel; `None` for raw pixels.
    pub(crate) fn channel_affines(self) -> Option<ChannelAffines> {
        match self {
            PixelFormat::UnitF32 => Some(ChannelAffines::Uniform(Affine::UNIT)),
            PixelFormat::NormalizedF32(normalization) => {
                Some(ChannelAffines::Uniform(normalization.affine()))
            }
            PixelFormat::ChannelNormalizedF32(normalization) => {
                let mut affines = [Affine::UNIT; ChannelNormalization::MAX_CHANNELS];
                for (affine, statistics) in affines.iter_mut().zip(normalization.statistics()) {
                    *affine = statistics.affine();
                }
                Some(ChannelAffines::PerChannel {
                    affines,
                    channels: normalization.channels(),
                })
            }
            PixelFormat::RawU8 => None,
        }
    }
}

/// `pixel * scale + offset`, the folded form of `((pixel / 255) - mean) / std`.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) struct Affine {
    pub(crate) scale: f32,
    pub(crate) offset: f32,
}

impl Affine {
    /// `pixel / 255`.
    pub(crate) const UNIT: Affine = Affine {
        scale: (1.0f64 / 255.0) as f32,
        offset: 0.0,
    };

    /// The pixel itself, as a float.
    pub(crate) const IDENTITY: Affine = Affine {
        scale: 1.0,
        offset: 0.0,
    };

    /// The value of a padding pixel (a `u8` 0) once converted: exactly `offset`.
    pub(crate) fn padding(self) -> f32 {
        0.0 * self.scale + self.offset
    }
}

/// The affine map of each channel of a float format.
#[derive(Clone, Copy, Debug, PartialEq)]
pub(crate) enum ChannelAffines {
    /// The same map for every channel.
    Uniform(Affine),
    /// One map per channel; the loader checked that the images have `channels` channels.
    PerChannel {
        affines: [Affine; ChannelNormalization::MAX_CHANNELS],
        channels: usize,
    },
}

impl ChannelAffines {
    /// The map of channel `channel` (below the normalization's channels, which the loader
    /// checked are the images').
    pub(crate) fn of_channel(&self, channel: usize) -> Affine {
        match self {
            ChannelAffines::Uniform(affine) => *affine,
            ChannelAffines::PerChannel { affines, .. } => {
                affines.get(channel).copied().unwrap_or(Affine::IDENTITY)
            }
        }
    }

    /// The one map of every channel, when there is one: a uniform format, or a per-channel
    /// normalization of a single channel.
    pub(crate) fn single(&self) -> Option<Affine> {
        match self {
            ChannelAffines::Uniform(affine) => Some(*affine),
            ChannelAffines::PerChannel {
                affines,
                channels: 1,
            } => Some(affines[0]),
            ChannelAffines::PerChannel { .. } => None,
        }
    }
}

/// Appends one image of `plane_len`-pixel channels, converted channel by channel through
/// `affines`: the image in one pass when every channel shares a map, else a vectorized pass per
/// channel.
#[inline]
pub(crate) fn append_converted_planes(
    image: &[u8],
    plane_len: usize,
    out: &mut Vec<f32>,
    affines: &ChannelAffines,
) {
    match affines.single() {
        Some(affine) => append_converted(image, out, affine),
        None => {
            for (channel, plane) in image.chunks_exact(plane_len.max(1)).enumerate() {
                append_converted(plane, out, affines.of_channel(channel));
            }
        }
    }
}

/// Appends a row of `u8` pixels, converted to `f32` through `affine`, to `out`.
///
/// Written as a plain map over a slice iterator whose length is known, appended with
/// `Vec::extend` (which writes straight into the spare capacity, with no zero-fill first), so
/// that the compiler unrolls and vectorizes it: u8 → i32 → f32 widening, a multiply and an add
/// per lane. On x86-64 a copy compiled for AVX2 is picked at run time when the CPU has it.
#[inline]
pub(crate) fn append_converted(pixels: &[u8], out: &mut Vec<f32>, affine: Affine) {
    #[cfg(target_arch = "x86_64")]
    {
        if std::arch::is_x86_feature_detected!("avx2") {
            // SAFETY: the CPU supports AVX2, checked just above, which is all
            // `append_converted_avx2` requires of its caller.
            unsafe { append_converted_avx2(pixels, out, affine) };
            return;
        }
    }
    append_converted_portable(pixels, out, affine);
}

#[inline(always)]
fn append_converted_portable(pixels: &[u8], out: &mut Vec<f32>, affine: Affine) {
    let Affine { scale, offset } = affine;
    out.extend(
        pixels
            .iter()
            .map(|&pixel| f32::from(pixel) * scale + offset),
    );
}

/// [`append_converted_portable`] compiled for AVX2 (8 lanes instead of SSE2's 4).
///
/// # Safety
///
/// The CPU must support AVX2.
#[cfg(target_arch = "x86_64")]
#[target_feature(enable = "avx2")]
unsafe fn append_converted_avx2(pixels: &[u8], out: &mut Vec<f32>, affine: Affine) {
    append_converted_portable(pixels, out, affine);
}

/// Appends a row of `u8` pixels in reverse order (a mirrored row), converted through `affine`.
#[inline]
pub(crate) fn append_converted_reversed(pixels: &[u8], out: &mut Vec<f32>, affine: Affine) {
    let Affine { scale, offset } = affine;
    out.extend(
        pixels
            .iter()
            .rev()
            .map(|&pixel| f32::from(pixel) * scale + offset),
    );
}

/// Hints the CPU to start loading `bytes` into its caches (one hint per 64-byte line). A hint
/// only: it never faults and changes no value.
#[inline]
pub(crate) fn prefetch(bytes: &[u8]) {
    #[cfg(target_arch = "x86_64")]
    {
        use std::arch::x86_64::{_MM_HINT_T0, _mm_prefetch};
        for line in bytes.chunks(64) {
            // SAFETY: `_mm_prefetch` (SSE, part of the x86-64 baseline) only hints the cache;
            // the pointer is into a live slice, and a prefetch never faults or reads for the
            // program.
            unsafe { _mm_prefetch::<_MM_HINT_T0>(line.as_ptr().cast()) };
        }
    }
    #[cfg(not(target_arch = "x86_64"))]
    let _ = bytes;
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn unit_pixels_stay_in_the_unit_interval_and_match_division() {
        let pixels: Vec<u8> = (0..=255).collect();
        let mut out = Vec::new();
        append_converted(&pixels, &mut out, Affine::UNIT);
        assert_eq!(out.len(), 256);
        assert_eq!(out[0], 0.0);
        assert_eq!(out[255], 1.0);
        for (pixel, value) in pixels.iter().zip(&out) {
            assert!((0.0..=1.0).contains(value));
            let exact = f32::from(*pixel) / 255.0;
            assert!((value - exact).abs() <= f32::EPSILON * exact.max(f32::MIN_POSITIVE));
        }
    }

    #[test]
    fn normalized_pixels_match_burns_formula() {
        let pixels: Vec<u8> = (0..=255).collect();
        let mut out = Vec::new();
        let format = PixelFormat::NormalizedF32(Normalization::MNIST);
        append_converted(
            &pixels,
            &mut out,
            format.channel_affines().unwrap().of_channel(0),
        );
        for (pixel, value) in pixels.iter().zip(&out) {
            let reference = ((f32::from(*pixel) / 255.0) - 0.1307) / 0.3081;
            assert!(
                (value - reference).abs() < 1e-6,
                "{pixel}: {value} vs {reference}"
            );
        }
    }

    #[test]
    fn odd_lengths_convert_every_element_and_append() {
        // 37 elements: a vectorized body plus a scalar tail, after what is already there.
        let pixels: Vec<u8> = (0..37).map(|value| value * 7).collect();
        let affine = Affine::UNIT;
        let mut out = vec![-1.0];
        append_converted_portable(&pixels, &mut out, affine);
        let mut avx_or_not = vec![-1.0];
        append_converted(&pixels, &mut avx_or_not, affine);
        assert_eq!(out, avx_or_not);
        assert_eq!(out.len(), 38);
        assert_eq!(out[0], -1.0);
        for (value, pixel) in out[1..].iter().zip(&pixels) {
            assert_eq!(*value, f32::from(*pixel) * affine.scale);
        }
    }

    #[test]
    fn normalization_is_validated() {
        assert!(Normalization::MNIST.validate().is_ok());
        let bad = Normalization {
            mean: 0.5,
            standard_deviation: 0.0,
        };
        assert!(matches!(
            bad.validate(),
            Err(LoaderError::InvalidNormalization { .. })
        ));
        let nan = Normalization {
            mean: f32::NAN,
            standard_deviation: 1.0,
        };
        assert!(nan.validate().is_err());
        assert!(
            bad.validate()
                .unwrap_err()
                .to_string()
                .contains("channel 0")
        );
    }

    #[test]
    fn channel_normalization_counts_and_checks_its_channels() {
        assert!(ChannelNormalization::CIFAR10.validate().is_ok());
        let one = ChannelNormalization::from(Normalization::MNIST);
        assert_eq!(one.channels(), 1);
        assert_eq!(one.statistics(), &[Normalization::MNIST]);
        assert!(matches!(
            ChannelNormalization::new(&[]),
            Err(LoaderError::NormalizationChannelCount {
                given: 0,
                maximum: 4
            })
        ));
        assert!(matches!(
            ChannelNormalization::new(&[Normalization::MNIST; 5]),
            Err(LoaderError::NormalizationChannelCount { given: 5, .. })
        ));
        let negative = Normalization {
            mean: 0.5,
            standard_deviation: -1.0,
        };
        let error =
            ChannelNormalization::new(&[Normalization::MNIST, Normalization::MNIST, negative])
                .unwrap_err();
        assert!(matches!(
            error,
            LoaderError::InvalidNormalization {
                channel: 2,
                mean: 0.5,
                standard_deviation: -1.0
            }
        ));
        let message = error.to_string();
        assert!(
            message.contains("channel 2") && message.contains("-1"),
            "{message}"
        );
    }

    #[test]
    fn a_normalization_must_describe_the_images_channels() {
        let cifar = PixelFormat::ChannelNormalizedF32(ChannelNormalization::CIFAR10);
        assert!(cifar.validate_for(ImageShape::CIFAR).is_ok());
        let error = cifar.validate_for(ImageShape::MNIST).unwrap_err();
        assert!(matches!(
            error,
            LoaderError::NormalizationChannelMismatch {
                normalization_channels: 3,
                shape: ImageShape::MNIST
            }
        ));
        assert!(error.to_string().contains("1x28x28"), "{error}");
        let mnist = PixelFormat::NormalizedF32(Normalization::MNIST);
        assert!(mnist.validate_for(ImageShape::MNIST).is_ok());
        assert!(mnist.validate_for(ImageShape::CIFAR).is_err());
        assert!(PixelFormat::UnitF32.validate_for(ImageShape::CIFAR).is_ok());
        assert!(
            PixelFormat::RawU8
                .validate_for(ImageShape::new(7, 2, 2))
                .is_ok()
        );
    }

    #[test]
    fn each_channel_is_normalized_with_its_own_statistics() {
        // Three planes of two pixels: 0 and 255 in each.
        let image = [0u8, 255, 0, 255, 0, 255];
        let affines = PixelFormat::ChannelNormalizedF32(ChannelNormalization::CIFAR10)
            .channel_affines()
            .unwrap();
        assert_eq!(affines.single(), None);
        let mut out = vec![];
        append_converted_planes(&image, 2, &mut out, &affines);
        let means = [0.4914f32, 0.4822, 0.4465];
        let deviations = [0.2470f32, 0.2435, 0.2616];
        for channel in 0..3 {
            for (position, pixel) in [0.0f32, 1.0].into_iter().enumerate() {
                let expected = (pixel - means[channel]) / deviations[channel];
                let value = out[channel * 2 + position];
                assert!(
                    (value - expected).abs() < 1e-5,
                    "{channel}: {value} vs {expected}"
                );
            }
            assert_eq!(out[channel * 2], affines.of_channel(channel).padding());
        }
    }

    #[test]
    fn a_mirrored_row_is_the_row_reversed() {
        let pixels: Vec<u8> = (0..37).map(|value| value * 5).collect();
        let mut forward = vec![];
        append_converted(&pixels, &mut forward, Affine::UNIT);
        let mut mirrored = vec![];
        append_converted_reversed(&pixels, &mut mirrored, Affine::UNIT);
        forward.reverse();
        assert_eq!(forward, mirrored);
    }
}
