//! Pixel formats and the `u8` to `f32` conversion loop.

use crate::error::LoaderError;

/// Per-pixel normalization applied after scaling to `[0, 1]`:
/// `((pixel / 255) - mean) / standard_deviation`.
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
    /// [`LoaderError::InvalidNormalization`].
    pub fn validate(self) -> Result<Self, LoaderError> {
        if self.mean.is_finite()
            && self.standard_deviation.is_finite()
            && self.standard_deviation > 0.0
        {
            Ok(self)
        } else {
            Err(LoaderError::InvalidNormalization {
                mean: self.mean,
                standard_deviation: self.standard_deviation,
            })
        }
    }
}

/// What a batch's pixels become.
#[derive(Clone, Copy, Debug, PartialEq, Default)]
pub enum PixelFormat {
    /// `f32` in `[0, 1]` (`pixel / 255`).
    #[default]
    UnitF32,
    /// `f32`, `((pixel / 255) - mean) / standard_deviation`.
    NormalizedF32(Normalization),
    /// The `u8` pixels as they are, for callers that convert on the device.
    RawU8,
}

impl PixelFormat {
    /// A short name, for messages.
    pub fn name(self) -> &'static str {
        match self {
            PixelFormat::UnitF32 => "unit f32",
            PixelFormat::NormalizedF32(_) => "normalized f32",
            PixelFormat::RawU8 => "raw u8",
        }
    }

    /// Bytes per converted pixel.
    pub fn bytes_per_pixel(self) -> usize {
        match self {
            PixelFormat::UnitF32 | PixelFormat::NormalizedF32(_) => size_of::<f32>(),
            PixelFormat::RawU8 => size_of::<u8>(),
        }
    }

    /// The affine map `pixel * scale + offset` of the float formats; `None` for raw pixels.
    pub(crate) fn affine(self) -> Option<Affine> {
        match self {
            PixelFormat::UnitF32 => Some(Affine {
                scale: (1.0f64 / 255.0) as f32,
                offset: 0.0,
            }),
            PixelFormat::NormalizedF32(normalization) => {
                let standard_deviation = f64::from(normalization.standard_deviation);
                Some(Affine {
                    scale: (1.0 / (255.0 * standard_deviation)) as f32,
                    offset: (-f64::from(normalization.mean) / standard_deviation) as f32,
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
        append_converted(&pixels, &mut out, PixelFormat::UnitF32.affine().unwrap());
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
        append_converted(&pixels, &mut out, format.affine().unwrap());
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
        let affine = PixelFormat::UnitF32.affine().unwrap();
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
    }
}
