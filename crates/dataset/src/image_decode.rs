//! One source image to one pack record: decoded by the `image` crate (zune-jpeg, png,
//! image-webp) under a memory limit, converted to grey or RGB, resized by
//! `fast_image_resize` (shorter side to the target, then the centre cropped, as torchvision's
//! `Resize` + `CenterCrop`; bilinear with antialiasing), and laid out channel-major.

use std::io::Cursor;

use fast_image_resize as resize;
use image::{ImageFormat, ImageReader};

use crate::pack_format::{PackImageShape, SkipReason};

/// Limits on what one source file may cost to decode.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DecodeLimits {
    /// The largest source file read, in bytes (larger files are skipped unread).
    pub maximum_file_bytes: u64,
    /// The most bytes one decoded image may take (width x height x 4, the decoder's own
    /// allocations capped at the same): a PNG declaring 100000 x 100000 pixels is refused from
    /// its header, before anything is allocated.
    pub maximum_decoded_bytes: u64,
}

impl Default for DecodeLimits {
    /// 256 MiB of source file, 256 MiB decoded (an 8000 x 8000 photo fits).
    fn default() -> Self {
        DecodeLimits {
            maximum_file_bytes: 256 << 20,
            maximum_decoded_bytes: 256 << 20,
        }
    }
}

/// Decodes `bytes` (a whole JPEG, PNG or WebP file) into one record of `shape`: C x H x W
/// `u8`, grey (ITU-R BT.709 luma, as the `image` crate computes it) or RGB (alpha dropped,
/// 16-bit samples scaled to 8, palettes expanded).
pub(crate) fn decode_to_record(
    bytes: &[u8],
    shape: PackImageShape,
    limits: DecodeLimits,
) -> Result<Vec<u8>, SkipReason> {
    let format = match image::guess_format(bytes) {
        Ok(format @ (ImageFormat::Jpeg | ImageFormat::Png | ImageFormat::WebP)) => format,
        _ => return Err(SkipReason::UnknownFormat),
    };
    let (width, height) = ImageReader::with_format(Cursor::new(bytes), format)
        .into_dimensions()
        .map_err(undecodable)?;
    let too_large = SkipReason::ImageTooLarge {
        width,
        height,
        limit_bytes: limits.maximum_decoded_bytes,
    };
    if width == 0
        || height == 0
        || u64::from(width) * u64::from(height) * 4 > limits.maximum_decoded_bytes
    {
        return Err(if width == 0 || height == 0 {
            SkipReason::Undecodable {
                error: format!("{width} x {height} pixels"),
            }
        } else {
            too_large
        });
    }
    let mut reader = ImageReader::with_format(Cursor::new(bytes), format);
    let mut decoder_limits = image::Limits::default();
    decoder_limits.max_alloc = Some(limits.maximum_decoded_bytes);
    reader.limits(decoder_limits);
    let image = reader.decode().map_err(|error| match error {
        image::ImageError::Limits(_) => too_large.clone(),
        other => undecodable(other),
    })?;
    let (pixel_type, interleaved) = match shape.channels {
        1 => (resize::PixelType::U8, image.into_luma8().into_raw()),
        _ => (resize::PixelType::U8x3, image.into_rgb8().into_raw()),
    };
    let resized = resize_centre_crop(width, height, interleaved, pixel_type, shape)?;
    Ok(channel_major(&resized, shape))
}

fn undecodable(error: image::ImageError) -> SkipReason {
    SkipReason::Undecodable {
        error: error.to_string(),
    }
}

/// Scales the image so that it covers `shape` (its shorter side, relative to the target's
/// aspect, to the target's), keeps the centre, and returns `shape.height` rows of
/// `shape.width` interleaved pixels.
fn resize_centre_crop(
    width: u32,
    height: u32,
    interleaved: Vec<u8>,
    pixel_type: resize::PixelType,
    shape: PackImageShape,
) -> Result<Vec<u8>, SkipReason> {
    let failed = |error: String| SkipReason::Undecodable { error };
    let source = resize::images::Image::from_vec_u8(width, height, interleaved, pixel_type)
        .map_err(|error| failed(error.to_string()))?;
    let mut target = resize::images::Image::new(shape.width, shape.height, pixel_type);
    let options = resize::ResizeOptions::new()
        .resize_alg(resize::ResizeAlg::Convolution(resize::FilterType::Bilinear))
        .fit_into_destination(Some((0.5, 0.5)));
    resize::Resizer::new()
        .resize(&source, &mut target, &options)
        .map_err(|error| failed(error.to_string()))?;
    Ok(target.into_vec())
}

/// Interleaved H x W x C to planar C x H x W.
fn channel_major(interleaved: &[u8], shape: PackImageShape) -> Vec<u8> {
    let channels = shape.channels as usize;
    if channels == 1 {
        return interleaved.to_vec();
    }
    let plane = (shape.height * shape.width) as usize;
    let mut record = vec![0u8; plane * channels];
    for (pixel, values) in interleaved.chunks_exact(channels).enumerate() {
        for (channel, &value) in values.iter().enumerate() {
            record[channel * plane + pixel] = value;
        }
    }
    record
}

#[cfg(test)]
mod tests {
    use super::*;

    fn encode(image: image::DynamicImage, format: ImageFormat) -> Vec<u8> {
        let mut bytes = Cursor::new(Vec::new());
        image.write_to(&mut bytes, format).unwrap();
        bytes.into_inner()
    }

    const RGB_4X4: PackImageShape = PackImageShape {
        channels: 3,
        height: 4,
        width: 4,
    };

    #[test]
    fn a_wide_image_keeps_its_centre_and_is_laid_out_channel_major() {
        // 12 x 4: red left third, green centre, blue right third; target 4 x 4 keeps the
        // green centre only.
        let image = image::RgbImage::from_fn(12, 4, |x, _| match x / 4 {
            0 => image::Rgb([255, 0, 0]),
            1 => image::Rgb([0, 255, 0]),
            _ => image::Rgb([0, 0, 255]),
        });
        let png = encode(image.into(), ImageFormat::Png);
        let record = decode_to_record(&png, RGB_4X4, DecodeLimits::default()).unwrap();
        assert_eq!(record.len(), 48);
        assert!(record[..16].iter().all(|&red| red == 0), "{record:?}");
        assert!(record[16..32].iter().all(|&green| green == 255));
        assert!(record[32..].iter().all(|&blue| blue == 0));
    }

    #[test]
    fn sixteen_bit_grey_palette_and_alpha_pngs_all_become_rgb_records() {
        let grey16 =
            image::ImageBuffer::<image::Luma<u16>, _>::from_pixel(5, 7, image::Luma([65535]));
        let rgba = image::RgbaImage::from_pixel(9, 3, image::Rgba([10, 20, 30, 0]));
        for (image, expected) in [
            (image::DynamicImage::from(grey16), [255u8, 255, 255]),
            (image::DynamicImage::from(rgba), [10, 20, 30]),
        ] {
            let png = encode(image, ImageFormat::Png);
            let record = decode_to_record(&png, RGB_4X4, DecodeLimits::default()).unwrap();
            for (channel, value) in expected.into_iter().enumerate() {
                assert!(
                    record[channel * 16..(channel + 1) * 16]
                        .iter()
                        .all(|&v| v == value)
                );
            }
        }
    }

    #[test]
    fn a_jpeg_decodes_to_grey() {
        let image = image::RgbImage::from_pixel(40, 30, image::Rgb([200, 200, 200]));
        let jpeg = encode(image.into(), ImageFormat::Jpeg);
        let grey = PackImageShape {
            channels: 1,
            height: 8,
            width: 8,
        };
        let record = decode_to_record(&jpeg, grey, DecodeLimits::default()).unwrap();
        assert_eq!(record.len(), 64);
        assert!(
            record.iter().all(|&value| value.abs_diff(200) <= 3),
            "{record:?}"
        );
    }

    #[test]
    fn text_and_huge_declared_sizes_are_refused_before_decoding() {
        assert_eq!(
            decode_to_record(b"not an image at all", RGB_4X4, DecodeLimits::default()),
            Err(SkipReason::UnknownFormat)
        );
        let image = image::RgbImage::from_pixel(100, 100, image::Rgb([1, 2, 3]));
        let png = encode(image.into(), ImageFormat::Png);
        let tight = DecodeLimits {
            maximum_file_bytes: 1 << 20,
            maximum_decoded_bytes: 100 * 100 * 4 - 1,
        };
        assert_eq!(
            decode_to_record(&png, RGB_4X4, tight),
            Err(SkipReason::ImageTooLarge {
                width: 100,
                height: 100,
                limit_bytes: 100 * 100 * 4 - 1
            })
        );
        let truncated = &png[..png.len() / 2];
        assert!(matches!(
            decode_to_record(truncated, RGB_4X4, DecodeLimits::default()),
            Err(SkipReason::Undecodable { .. })
        ));
    }
}
