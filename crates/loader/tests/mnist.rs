//! The real MNIST (vendored in data/mnist), memory-mapped.

mod common;

use burn::tensor::Device;
use reclaim_dataset::{ImageDataset, Split};
use reclaim_loader::{Loader, LoaderConfig, TensorBatch};

fn open(split: Split) -> ImageDataset {
    // SAFETY: the vendored files (and their decompressed cache) are not modified while the
    // tests run.
    unsafe { ImageDataset::open_mapped(common::mnist_folder(), split) }.unwrap()
}

#[test]
fn a_training_epoch_visits_every_image_once_with_its_label() {
    let dataset = open(Split::Train);
    assert_eq!(dataset.len(), 60_000);
    let config = LoaderConfig {
        num_workers: 2,
        ..LoaderConfig::mnist_training(17)
    };
    let loader = Loader::new(&dataset, config).unwrap();
    assert_eq!(loader.batches_per_epoch(), 938);
    let mut seen = vec![0u8; 60_000];
    let mut histogram = vec![0usize; 10];
    let mut batches = 0;
    std::thread::scope(|scope| {
        let epoch = loader.epoch(scope, 0).unwrap();
        for batch in &epoch {
            let batch = batch.unwrap();
            for (&index, &label) in batch.indices().iter().zip(batch.labels()) {
                seen[index] += 1;
                assert_eq!(label, i64::from(dataset.label(index)));
                histogram[label as usize] += 1;
            }
            batches += 1;
        }
    });
    assert_eq!(batches, 938);
    assert!(seen.iter().all(|&count| count == 1));
    assert_eq!(histogram, dataset.label_histogram());
    assert_eq!(loader.memory_report().current_bytes, 0);
}

#[test]
fn evaluation_batches_are_the_normalized_test_images_in_order() {
    let dataset = open(Split::Test);
    let loader = Loader::new(&dataset, LoaderConfig::mnist_evaluation()).unwrap();
    let device = Device::flex();
    std::thread::scope(|scope| {
        let epoch = loader.epoch(scope, 0).unwrap();
        let batch = epoch.next_batch().unwrap().unwrap();
        assert_eq!(batch.indices(), (0..64).collect::<Vec<_>>());
        let images = batch.images_f32().unwrap();
        for index in [0usize, 1, 63] {
            for (pixel, &raw) in dataset.image(index).iter().enumerate() {
                let expected = ((f32::from(raw) / 255.0) - 0.1307) / 0.3081;
                let actual = images[index * 784 + pixel];
                assert!((actual - expected).abs() < 1e-5);
            }
        }
        let tensors: TensorBatch<2> = batch.into_tensors(&device).unwrap();
        assert_eq!(tensors.images.dims(), [64, 784]);
        // 10 000 test images: 156 full batches and one of 16.
        let rest: Vec<usize> = epoch.batches().map(|batch| batch.unwrap().len()).collect();
        assert_eq!(rest.len(), 156);
        assert_eq!(rest.last(), Some(&16));
    });
}
