//! Colour images and augmentation through the whole loader: per-channel normalization, random
//! crops and flips that are the same for any number of workers and after a resume, checked pixel
//! by pixel against the source; user transforms; CIFAR record files as a source; and the
//! loader's memory, which augmentation must not change.

use std::collections::BTreeSet;
use std::sync::Arc;

use reclaim_dataset::{
    CifarDataset, Split,
    cifar::{CifarRecord, CifarVariant, write_cifar_batch},
};
use reclaim_loader::{
    Augmentation, ChannelNormalization, HorizontalFlip, ImageShape, ImageSource, Loader,
    LoaderConfig, LoaderError, LoaderState, PixelFormat, RandomCrop, RawImages, SampleRng,
    Sampling, TensorBatch,
};

/// Three planes of 6 x 5: small enough to check every placement, with a row and a column
/// count that differ (so that a transposition could not pass).
const COLOUR: ImageShape = ImageShape::new(3, 6, 5);

/// `count` colour images whose every pixel is distinct within its image and never 0 (so that
/// padding, a 0, is told apart from a source pixel), with labels `index % 10`.
fn colour_images(count: usize) -> (Vec<u8>, Vec<u8>) {
    let pixels_per_image = COLOUR.pixels().unwrap();
    let pixels = (0..count)
        .flat_map(|index| {
            (0..pixels_per_image).map(move |pixel| (1 + (pixel + 7 * index) % 250) as u8)
        })
        .collect();
    let labels = (0..count).map(|index| (index % 10) as u8).collect();
    (pixels, labels)
}

const CROP_AND_FLIP: Augmentation = Augmentation {
    crop: Some(RandomCrop { padding: 2 }),
    horizontal_flip: HorizontalFlip::Random,
};

fn raw_config(num_workers: usize, sampling: Sampling) -> LoaderConfig {
    LoaderConfig {
        batch_size: 7,
        num_workers,
        seed: 99,
        sampling,
        pixel_format: PixelFormat::RawU8,
        augmentation: CROP_AND_FLIP,
        ..LoaderConfig::default()
    }
}

/// Every batch of epoch `epoch`: its indices and raw pixels.
fn raw_epoch<S: ImageSource + ?Sized>(
    loader: &Loader<'_, S>,
    epoch: u64,
) -> Vec<(Vec<usize>, Vec<u8>)> {
    std::thread::scope(|scope| {
        let epoch = loader.epoch(scope, epoch).unwrap();
        epoch
            .batches()
            .map(|batch| {
                let batch = batch.unwrap();
                (
                    batch.indices().to_vec(),
                    batch.images_u8().unwrap().to_vec(),
                )
            })
            .collect()
    })
}

/// The image `placed` as placed from `source` by a crop offset `(dy, dx)` and a flip, or
/// `None` when no placement within `padding` reproduces it: output `(y, x)` reads source
/// `(y + dy, x' + dx)` with `x'` mirrored when flipped, 0 outside the image.
fn placement_of(source: &[u8], placed: &[u8], padding: isize) -> Option<(isize, isize, bool)> {
    let ImageShape {
        channels,
        height,
        width,
    } = COLOUR;
    let (h, w) = (height as isize, width as isize);
    let reproduces = |dy: isize, dx: isize, mirrored: bool| {
        (0..channels).all(|c| {
            (0..h).all(|y| {
                (0..w).all(|x| {
                    let unmirrored = if mirrored { w - 1 - x } else { x };
                    let (sy, sx) = (y + dy, unmirrored + dx);
                    let expected = if (0..h).contains(&sy) && (0..w).contains(&sx) {
                        source[c * height * width + (sy * w + sx) as usize]
                    } else {
                        0
                    };
                    placed[c * height * width + (y * w + x) as usize] == expected
                })
            })
        })
    };
    (-padding..=padding)
        .flat_map(|dy| (-padding..=padding).flat_map(move |dx| [(dy, dx, false), (dy, dx, true)]))
        .find(|&(dy, dx, mirrored)| reproduces(dy, dx, mirrored))
}

#[test]
fn every_augmented_image_is_a_crop_and_flip_of_its_source_pixel_by_pixel() {
    let (pixels, labels) = colour_images(60);
    let source = RawImages::new(&pixels, &labels, COLOUR).unwrap();
    let loader = Loader::new(&source, raw_config(0, Sampling::Shuffled)).unwrap();
    let image_len = COLOUR.pixels().unwrap();
    let mut placements = BTreeSet::new();
    for (indices, images) in raw_epoch(&loader, 0) {
        for (position, &index) in indices.iter().enumerate() {
            let placed = &images[position * image_len..][..image_len];
            let original = source.borrow_sample(index).unwrap().0;
            let placement = placement_of(original, placed, 2)
                .unwrap_or_else(|| panic!("sample {index} is no crop or flip of its source"));
            placements.insert(placement);
        }
    }
    // 60 samples over 50 placements: many of them are drawn, flipped and not.
    assert!(placements.len() > 20, "{placements:?}");
    assert!(placements.iter().any(|placement| placement.2));
    assert!(placements.iter().any(|placement| !placement.2));
}

#[test]
fn augmented_batches_are_the_same_for_any_number_of_workers() {
    let (pixels, labels) = colour_images(45);
    let source = RawImages::new(&pixels, &labels, COLOUR).unwrap();
    let reference = Loader::new(&source, raw_config(0, Sampling::Shuffled)).unwrap();
    for num_workers in [1, 2, 5] {
        let loader = Loader::new(&source, raw_config(num_workers, Sampling::Shuffled)).unwrap();
        for epoch in [0, 3] {
            assert_eq!(
                raw_epoch(&loader, epoch),
                raw_epoch(&reference, epoch),
                "{num_workers} workers, epoch {epoch}"
            );
        }
    }
}

#[test]
fn each_epoch_draws_new_augmentations_of_the_same_samples() {
    let (pixels, labels) = colour_images(30);
    let source = RawImages::new(&pixels, &labels, COLOUR).unwrap();
    let loader = Loader::new(&source, raw_config(0, Sampling::Sequential)).unwrap();
    let first = raw_epoch(&loader, 0);
    let second = raw_epoch(&loader, 1);
    // The same samples in the same order, placed differently.
    let indices = |batches: &[(Vec<usize>, Vec<u8>)]| -> Vec<usize> {
        batches.iter().flat_map(|batch| batch.0.clone()).collect()
    };
    assert_eq!(indices(&first), indices(&second));
    assert_ne!(first, second);
    assert_eq!(
        first,
        raw_epoch(&loader, 0),
        "an epoch is a function of its number"
    );
}

#[test]
fn a_resumed_epoch_augments_its_remaining_batches_as_the_uninterrupted_one() {
    let (pixels, labels) = colour_images(40);
    let source = RawImages::new(&pixels, &labels, COLOUR).unwrap();
    for num_workers in [0, 2] {
        let loader = Loader::new(&source, raw_config(num_workers, Sampling::Shuffled)).unwrap();
        let full = raw_epoch(&loader, 2);
        let saved = std::thread::scope(|scope| {
            let epoch = loader.epoch(scope, 2).unwrap();
            for _ in 0..3 {
                drop(epoch.next_batch().unwrap().unwrap());
            }
            serde_json::to_string(&epoch.state()).unwrap()
        });
        let state: LoaderState = serde_json::from_str(&saved).unwrap();
        // A new loader, as after a restart of the process, with another worker count.
        let restarted =
            Loader::new(&source, raw_config(3 - num_workers, Sampling::Shuffled)).unwrap();
        let resumed: Vec<(Vec<usize>, Vec<u8>)> = std::thread::scope(|scope| {
            let epoch = restarted.resume(scope, &state).unwrap();
            epoch
                .batches()
                .map(|batch| {
                    let batch = batch.unwrap();
                    (
                        batch.indices().to_vec(),
                        batch.images_u8().unwrap().to_vec(),
                    )
                })
                .collect()
        });
        assert_eq!(
            resumed,
            full[3..],
            "{num_workers} workers before the restart"
        );
    }
}

#[test]
fn float_batches_are_the_raw_augmented_bytes_normalized_per_channel() {
    let (pixels, labels) = colour_images(20);
    let source = RawImages::new(&pixels, &labels, COLOUR).unwrap();
    let raw = Loader::new(&source, raw_config(0, Sampling::Shuffled)).unwrap();
    let normalization = ChannelNormalization::CIFAR10;
    let float = Loader::new(
        &source,
        LoaderConfig {
            pixel_format: PixelFormat::ChannelNormalizedF32(normalization),
            ..raw_config(2, Sampling::Shuffled)
        },
    )
    .unwrap();
    let raw_batches = raw_epoch(&raw, 5);
    let plane = COLOUR.plane_pixels().unwrap();
    std::thread::scope(|scope| {
        let epoch = float.epoch(scope, 5).unwrap();
        for (batch, (indices, bytes)) in epoch.batches().zip(&raw_batches) {
            let batch = batch.unwrap();
            assert_eq!(batch.indices(), indices.as_slice());
            let values = batch.images_f32().unwrap();
            assert_eq!(values.len(), bytes.len());
            for (position, (value, byte)) in values.iter().zip(bytes).enumerate() {
                let channel = position / plane % 3;
                let statistics = normalization.statistics()[channel];
                let expected =
                    (f32::from(*byte) / 255.0 - statistics.mean) / statistics.standard_deviation;
                assert!((value - expected).abs() < 1e-5, "{value} vs {expected}");
            }
        }
    });
}

#[test]
fn augmentation_allocates_nothing_beyond_the_plain_loaders_buffers() {
    let (pixels, labels) = colour_images(50);
    let source = RawImages::new(&pixels, &labels, COLOUR).unwrap();
    let peak = |augmentation| {
        let loader = Loader::new(
            &source,
            LoaderConfig {
                augmentation,
                pixel_format: PixelFormat::ChannelNormalizedF32(ChannelNormalization::CIFAR10),
                // On the consuming thread: the buffers in flight do not depend on scheduling.
                ..raw_config(0, Sampling::Shuffled)
            },
        )
        .unwrap();
        let _ = std::thread::scope(|scope| {
            let epoch = loader.epoch(scope, 0).unwrap();
            epoch.batches().count()
        });
        assert_eq!(loader.memory_report().current_bytes, 0);
        loader.memory_report().peak_bytes
    };
    assert_eq!(peak(CROP_AND_FLIP), peak(Augmentation::NONE));
}

#[test]
fn settings_that_do_not_fit_the_images_are_typed_errors() {
    let (pixels, labels) = colour_images(4);
    let source = RawImages::new(&pixels, &labels, COLOUR).unwrap();
    let with = |config: LoaderConfig| Loader::new(&source, config).err();
    let too_wide = Augmentation {
        crop: Some(RandomCrop { padding: 6 }),
        ..Augmentation::NONE
    };
    assert!(matches!(
        with(LoaderConfig {
            augmentation: too_wide,
            ..LoaderConfig::default()
        }),
        Some(LoaderError::CropPaddingTooLarge {
            padding: 6,
            shape: COLOUR
        })
    ));
    let mnist_statistics = with(LoaderConfig::mnist_training(0)).unwrap();
    assert!(
        matches!(
            mnist_statistics,
            LoaderError::NormalizationChannelMismatch {
                normalization_channels: 1,
                ..
            }
        ),
        "{mnist_statistics}"
    );
    let noise = |_: &[u8], _: ImageShape, _: &mut SampleRng, _: &mut [f32]| {};
    assert!(matches!(
        with(LoaderConfig {
            transform: Some(Arc::new(noise)),
            pixel_format: PixelFormat::RawU8,
            ..LoaderConfig::default()
        }),
        Some(LoaderError::TransformNeedsFloatPixels)
    ));
}

/// Inverts the first channel; the rng is drawn to prove it is the sample's own.
fn invert_red(source: &[u8], shape: ImageShape, rng: &mut SampleRng, output: &mut [f32]) {
    let plane = shape.plane_pixels().unwrap();
    let jitter = rng.unit_f32() * 1e-3;
    for (value, pixel) in output[..plane].iter_mut().zip(source) {
        *value = 1.0 - f32::from(*pixel) / 255.0 + jitter;
    }
}

#[test]
fn a_user_transform_sees_each_sample_and_writes_in_place_deterministically() {
    let (pixels, labels) = colour_images(21);
    let source = RawImages::new(&pixels, &labels, COLOUR).unwrap();
    let first_batches = |num_workers| {
        let loader = Loader::new(
            &source,
            LoaderConfig {
                transform: Some(Arc::new(invert_red)),
                pixel_format: PixelFormat::UnitF32,
                augmentation: Augmentation::NONE,
                ..raw_config(num_workers, Sampling::Shuffled)
            },
        )
        .unwrap();
        std::thread::scope(|scope| {
            let epoch = loader.epoch(scope, 1).unwrap();
            epoch
                .batches()
                .map(|batch| {
                    let batch = batch.unwrap();
                    (
                        batch.indices().to_vec(),
                        batch.images_f32().unwrap().to_vec(),
                    )
                })
                .collect::<Vec<_>>()
        })
    };
    let batches = first_batches(0);
    assert_eq!(batches, first_batches(3));
    let (image_len, plane) = (COLOUR.pixels().unwrap(), COLOUR.plane_pixels().unwrap());
    for (indices, values) in &batches {
        for (position, &index) in indices.iter().enumerate() {
            let image = &values[position * image_len..][..image_len];
            let original = source.borrow_sample(index).unwrap().0;
            let jitter = image[0] - (1.0 - f32::from(original[0]) / 255.0);
            assert!((0.0..1e-3).contains(&jitter), "{jitter}");
            // Red inverted, green and blue as converted.
            assert!((image[1] - (1.0 - f32::from(original[1]) / 255.0) - jitter).abs() < 1e-6);
            assert!((image[plane] - f32::from(original[plane]) / 255.0).abs() < 1e-6);
        }
    }
}

#[test]
fn cifar_record_files_feed_rank_4_tensors_without_a_copy_of_the_records() {
    let folder = tempfile::tempdir().unwrap();
    let images: Vec<Vec<u8>> = (0..12u8)
        .map(|index| (0..3072).map(|pixel| (pixel % 251) as u8 ^ index).collect())
        .collect();
    let records: Vec<CifarRecord<'_>> = images
        .iter()
        .enumerate()
        .map(|(index, image)| CifarRecord::cifar10((index % 10) as u8, image))
        .collect();
    write_cifar_batch(
        folder.path().join("test_batch.bin"),
        CifarVariant::Cifar10,
        &records,
    )
    .unwrap();
    // SAFETY: the file is only read, by this test, while the dataset lives.
    let dataset =
        unsafe { CifarDataset::open_mapped(folder.path(), CifarVariant::Cifar10, Split::Test) }
            .unwrap();
    assert_eq!(dataset.image_shape(), ImageShape::CIFAR);
    assert_eq!(dataset.borrow_sample(3), Some((images[3].as_slice(), 3)));
    let loader = Loader::new(
        &dataset,
        LoaderConfig {
            batch_size: 5,
            ..LoaderConfig::cifar_evaluation()
        },
    )
    .unwrap();
    #[allow(deprecated)]
    let device = burn::tensor::Device::ndarray();
    std::thread::scope(|scope| {
        let epoch = loader.epoch(scope, 0).unwrap();
        let batch = epoch.next_batch().unwrap().unwrap();
        let TensorBatch {
            images: tensor,
            labels,
        } = batch.into_tensors::<4>(&device).unwrap();
        assert_eq!(tensor.dims(), [5, 3, 32, 32]);
        assert_eq!(
            labels.into_data().try_to_vec::<i64>().unwrap(),
            [0, 1, 2, 3, 4]
        );
        let values = tensor.into_data().try_to_vec::<f32>().unwrap();
        let blue = ChannelNormalization::CIFAR10.statistics()[2];
        // Image 1, blue plane, pixel (0, 5).
        let expected =
            (f32::from(images[1][2048 + 5]) / 255.0 - blue.mean) / blue.standard_deviation;
        assert!((values[3072 + 2048 + 5] - expected).abs() < 1e-5);
    });
}
