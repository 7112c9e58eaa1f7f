//! Batches into Burn tensors on the NdArray and Flex devices.

mod common;

use burn::tensor::{DType, Device, TensorData};
use common::{SMALL, synthetic};
use reclaim_loader::{
    ImageShape, Loader, LoaderConfig, LoaderError, Normalization, PixelFormat, RawImages,
    RawTensorBatch, Sampling, TensorBatch,
};

fn devices() -> Vec<(&'static str, Device)> {
    #[allow(deprecated)] // Burn 0.22 deprecates NdArray in favour of Flex; we support both.
    let ndarray = Device::ndarray();
    vec![("ndarray", ndarray), ("flex", Device::flex())]
}

fn float_values(data: TensorData) -> Vec<f32> {
    data.convert::<f32>().try_to_vec::<f32>().unwrap()
}

fn int_values(data: TensorData) -> Vec<i64> {
    data.convert::<i64>().try_to_vec::<i64>().unwrap()
}

fn config(pixel_format: PixelFormat) -> LoaderConfig {
    LoaderConfig {
        batch_size: 8,
        num_workers: 1,
        prefetch: 2,
        sampling: Sampling::Shuffled,
        seed: 99,
        pixel_format,
        ..LoaderConfig::default()
    }
}

#[test]
fn lent_and_copied_tensors_hold_the_batch_in_every_rank() {
    let (pixels, labels) = synthetic(21, SMALL);
    let source = RawImages::new(&pixels, &labels, SMALL).unwrap();
    let loader = Loader::new(
        &source,
        config(PixelFormat::NormalizedF32(Normalization::MNIST)),
    )
    .unwrap();
    for (name, device) in devices() {
        std::thread::scope(|scope| {
            let epoch = loader.epoch(scope, 0).unwrap();
            for batch in &epoch {
                let batch = batch.unwrap();
                let expected_images = batch.images_f32().unwrap().to_vec();
                let expected_labels = batch.labels().to_vec();
                let length = batch.len();

                let copied: TensorBatch<3> = batch.to_tensors(&device).unwrap();
                assert_eq!(copied.images.dims(), [length, 3, 4], "{name}");
                assert_eq!(float_values(copied.images.into_data()), expected_images);

                let four: TensorBatch<4> = batch.to_tensors(&device).unwrap();
                assert_eq!(four.images.dims(), [length, 1, 3, 4], "{name}");

                let lent: TensorBatch<2> = batch.into_tensors(&device).unwrap();
                assert_eq!(lent.images.dims(), [length, 12], "{name}");
                assert_eq!(lent.labels.dims(), [length], "{name}");
                assert_eq!(
                    float_values(lent.images.into_data()),
                    expected_images,
                    "{name}"
                );
                assert_eq!(
                    int_values(lent.labels.into_data()),
                    expected_labels,
                    "{name}"
                );
            }
        });
        assert_eq!(loader.memory_report().current_bytes, 0, "{name}");
    }
}

#[test]
fn lent_tensors_survive_their_epoch_and_compute() {
    let (pixels, labels) = synthetic(16, SMALL);
    let source = RawImages::new(&pixels, &labels, SMALL).unwrap();
    let loader = Loader::new(&source, config(PixelFormat::UnitF32)).unwrap();
    for (name, device) in devices() {
        let (kept, expected) = std::thread::scope(|scope| {
            let epoch = loader.epoch(scope, 1).unwrap();
            let batch = epoch.next_batch().unwrap().unwrap();
            let expected: f32 = batch.images_f32().unwrap().iter().sum();
            let tensors: TensorBatch<2> = batch.into_tensors(&device).unwrap();
            (tensors, expected)
        });
        // The epoch is gone; the tensor owns (or shares) the buffer it was lent.
        let sum = float_values(kept.images.clone().sum().into_data())[0];
        assert!((sum - expected).abs() < 1e-3, "{name}: {sum} vs {expected}");
        let doubled = float_values((kept.images * 2.0).sum().into_data())[0];
        assert!((doubled - 2.0 * expected).abs() < 1e-3, "{name}");
        // Once the tensor is dropped, the loader holds nothing.
        assert_eq!(loader.memory_report().current_bytes, 0, "{name}");
    }
}

#[test]
fn flex_gives_lent_buffers_back_to_the_pool() {
    // Flex keeps the lent bytes as the tensor's storage; dropping the tensor returns them, so a
    // whole epoch reuses a handful of buffers instead of allocating one per batch.
    let shape = ImageShape::MNIST;
    let (pixels, labels) = synthetic(64 * 40, shape);
    let source = RawImages::new(&pixels, &labels, shape).unwrap();
    let loader = Loader::new(
        &source,
        LoaderConfig {
            batch_size: 64,
            num_workers: 0,
            ..LoaderConfig::default()
        },
    )
    .unwrap();
    let device = Device::flex();
    let batch_bytes = 64 * 784 * 4;
    std::thread::scope(|scope| {
        let epoch = loader.epoch(scope, 0).unwrap();
        for batch in &epoch {
            let tensors: TensorBatch<2> = batch.unwrap().into_tensors(&device).unwrap();
            // Lent, not given away: the buffer still counts as the loader's.
            let report = loader.memory_report();
            assert!(report.buffer_bytes >= batch_bytes, "{report:?}");
            drop(tensors);
            // Back in the pool, still counted, ready for the next batch.
            assert!(loader.memory_report().buffer_bytes >= batch_bytes);
        }
    });
    let peak = loader.memory_report().peak_bytes;
    assert!(peak < 3 * batch_bytes, "{peak}");
}

#[test]
fn raw_batches_become_u8_tensors() {
    let (pixels, labels) = synthetic(10, SMALL);
    let source = RawImages::new(&pixels, &labels, SMALL).unwrap();
    let loader = Loader::new(&source, config(PixelFormat::RawU8)).unwrap();
    for (name, device) in devices() {
        std::thread::scope(|scope| {
            let epoch = loader.epoch(scope, 0).unwrap();
            let batch = epoch.next_batch().unwrap().unwrap();
            let expected: Vec<i64> = batch
                .images_u8()
                .unwrap()
                .iter()
                .map(|&value| i64::from(value))
                .collect();
            assert!(matches!(
                batch.to_tensors::<2>(&device),
                Err(LoaderError::PixelFormatMismatch { .. })
            ));
            let copied: RawTensorBatch<2> = batch.to_raw_tensors(&device).unwrap();
            assert_eq!(copied.images.dtype(), DType::U8, "{name}");
            assert_eq!(int_values(copied.images.into_data()), expected, "{name}");
            let lent: RawTensorBatch<3> = batch.into_raw_tensors(&device).unwrap();
            assert_eq!(lent.images.dims(), [8, 3, 4], "{name}");
            assert_eq!(lent.images.dtype(), DType::U8, "{name}");
            let unit = lent.images.float() / 255.0;
            let unit = float_values(unit.into_data());
            for (value, raw) in unit.iter().zip(&expected) {
                assert!((value - *raw as f32 / 255.0).abs() < 1e-6, "{name}");
            }
        });
    }
}

#[test]
fn unsupported_ranks_and_formats_are_errors() {
    let (pixels, labels) = synthetic(4, SMALL);
    let source = RawImages::new(&pixels, &labels, SMALL).unwrap();
    let loader = Loader::new(&source, config(PixelFormat::UnitF32)).unwrap();
    let device = Device::flex();
    std::thread::scope(|scope| {
        let epoch = loader.epoch(scope, 0).unwrap();
        let batch = epoch.next_batch().unwrap().unwrap();
        assert!(matches!(
            batch.to_tensors::<5>(&device),
            Err(LoaderError::UnsupportedTensorRank { rank: 5 })
        ));
        assert!(matches!(
            batch.to_raw_tensors::<2>(&device),
            Err(LoaderError::PixelFormatMismatch {
                requested: "raw u8",
                ..
            })
        ));
        assert!(matches!(
            batch.into_tensors::<1>(&device),
            Err(LoaderError::UnsupportedTensorRank { rank: 1 })
        ));
    });
}
