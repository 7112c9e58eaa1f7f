//! The Burn `DataLoader` adapter, and Burn datasets as sources.

mod common;

use std::collections::BTreeSet;
use std::sync::Arc;

use burn::data::dataloader::DataLoader;
use burn::data::dataset::InMemDataset;
use burn::tensor::{Device, TensorData};
use common::{SMALL, synthetic};
use reclaim_loader::{
    BurnDatasetSource, BurnLoader, ImageSource, LoaderConfig, LoaderError, PixelFormat, RawImages,
    Sampling, TensorBatch,
};

/// An owned source for `'static` loaders: the synthetic rows kept in a `Vec`.
#[derive(Debug)]
struct OwnedRows {
    pixels: Vec<u8>,
    labels: Vec<u8>,
}

impl OwnedRows {
    fn new(count: usize) -> Self {
        let (pixels, labels) = synthetic(count, SMALL);
        Self { pixels, labels }
    }
}

impl ImageSource for OwnedRows {
    fn len(&self) -> usize {
        self.labels.len()
    }

    fn image_shape(&self) -> reclaim_loader::ImageShape {
        SMALL
    }

    fn borrow_sample(&self, index: usize) -> Option<(&[u8], i64)> {
        Some((
            &self.pixels[index * 12..index * 12 + 12],
            i64::from(self.labels[index]),
        ))
    }

    fn read_sample(&self, index: usize, pixels: &mut [u8]) -> Result<i64, LoaderError> {
        pixels.copy_from_slice(&self.pixels[index * 12..index * 12 + 12]);
        Ok(i64::from(self.labels[index]))
    }
}

fn config(num_workers: usize) -> LoaderConfig {
    LoaderConfig {
        batch_size: 8,
        num_workers,
        seed: 3,
        ..LoaderConfig::default()
    }
}

fn labels_of(batch: &TensorBatch<2>) -> Vec<i64> {
    batch
        .labels
        .clone()
        .into_data()
        .convert::<i64>()
        .try_to_vec::<i64>()
        .unwrap()
}

fn first_pixels(batch: &TensorBatch<2>) -> Vec<f32> {
    let data: TensorData = batch.images.clone().into_data();
    data.convert::<f32>().try_to_vec::<f32>().unwrap()
}

/// The first pixel of every image of an epoch identifies the image (see `common`), so the
/// epoch's image order can be read back from the tensors.
fn epoch_images(loader: &dyn DataLoader<TensorBatch<2>>) -> Vec<Vec<f32>> {
    loader
        .iter()
        .map(|batch| {
            let batch = batch.unwrap();
            assert_eq!(labels_of(&batch).len(), batch.images.dims()[0]);
            first_pixels(&batch)
                .chunks(12)
                .map(<[f32]>::to_vec)
                .collect::<Vec<_>>()
        })
        .collect::<Vec<_>>()
        .concat()
}

#[test]
fn each_iteration_is_the_next_epoch_and_covers_every_sample() {
    let device = Device::flex();
    for num_workers in [0, 2] {
        let loader =
            BurnLoader::<_, 2>::new(OwnedRows::new(50), config(num_workers), device.clone())
                .unwrap();
        assert_eq!(loader.num_items(), 50);
        let first = epoch_images(&loader);
        let second = epoch_images(&loader);
        assert_eq!(first.len(), 50);
        assert_ne!(first, second, "a new permutation each epoch");
        let distinct: BTreeSet<Vec<u32>> = first
            .iter()
            .map(|image| image.iter().map(|value| value.to_bits()).collect())
            .collect();
        assert_eq!(distinct.len(), 50);
        // Going back to epoch 0 replays it.
        loader.set_next_epoch(0);
        assert_eq!(epoch_images(&loader), first);
        assert_eq!(loader.memory_report().current_bytes, 0);
    }
}

#[test]
fn slices_split_the_samples_and_keep_the_batch_size() {
    let device = Device::flex();
    let loader = BurnLoader::<_, 2>::new(OwnedRows::new(40), config(1), device.clone()).unwrap();
    let left = loader.slice(0, 15);
    let right = loader.slice(15, 40).to_device(&device);
    assert_eq!(left.num_items(), 15);
    assert_eq!(right.num_items(), 25);
    let sizes: Vec<usize> = loader
        .slice(0, 15)
        .iter()
        .map(|batch| batch.unwrap().images.dims()[0])
        .collect();
    assert_eq!(sizes, [8, 7]);
    // Epoch 0 of each part, then of the whole: the parts are its first 15 and last 25 samples.
    let mut all = epoch_images(left.as_ref());
    all.extend(epoch_images(right.as_ref()));
    let whole = epoch_images(&loader);
    assert_eq!(all, whole);
    let key = |images: &[Vec<f32>]| -> BTreeSet<Vec<u32>> {
        images
            .iter()
            .map(|image| image.iter().map(|value| value.to_bits()).collect())
            .collect()
    };
    assert_eq!(all.len(), 40);
    assert_eq!(key(&all), key(&whole));
}

#[test]
fn progress_counts_items() {
    let loader = BurnLoader::<_, 2>::new(OwnedRows::new(20), config(2), Device::flex()).unwrap();
    let mut iterator = loader.iter();
    let start = iterator.progress();
    assert_eq!((start.items_processed, start.items_total), (0, 20));
    iterator.next().unwrap().unwrap();
    assert_eq!(iterator.progress().items_processed, 8);
    let rest = iterator.by_ref().count();
    assert_eq!(rest, 2);
    assert!(iterator.progress().is_completed());
}

#[test]
fn resuming_a_burn_loader_replays_the_rest_of_its_epoch() {
    let loader = BurnLoader::<_, 2>::new(OwnedRows::new(45), config(2), Device::flex()).unwrap();
    loader.set_next_epoch(6);
    let mut iterator = loader.try_iter().unwrap();
    let full: Vec<Vec<f32>> = iterator
        .by_ref()
        .map(|batch| first_pixels(&batch.unwrap()))
        .collect();
    drop(iterator);
    loader.set_next_epoch(6);
    let mut interrupted = loader.try_iter().unwrap();
    interrupted.next().unwrap().unwrap();
    interrupted.next().unwrap().unwrap();
    let state = interrupted.state();
    drop(interrupted);
    assert_eq!((state.epoch, state.position), (6, 16));
    let resumed: Vec<Vec<f32>> = loader
        .resume(&state)
        .unwrap()
        .map(|batch| first_pixels(&batch.unwrap()))
        .collect();
    assert_eq!(resumed, full[2..]);
    assert_eq!(loader.next_epoch(), 7);
}

#[test]
fn raw_pixels_and_bad_ranks_are_refused_by_the_burn_loader() {
    let raw = LoaderConfig {
        pixel_format: PixelFormat::RawU8,
        ..config(0)
    };
    assert!(matches!(
        BurnLoader::<_, 2>::new(OwnedRows::new(4), raw, Device::flex()),
        Err(LoaderError::PixelFormatMismatch { .. })
    ));
    assert!(matches!(
        BurnLoader::<_, 7>::new(OwnedRows::new(4), config(0), Device::flex()),
        Err(LoaderError::UnsupportedTensorRank { rank: 7 })
    ));
}

/// Burn's MNIST item, as `burn::data::dataset::vision::MnistItem` lays it out.
#[derive(Clone, Debug)]
struct MnistLikeItem {
    image: [[f32; 4]; 3],
    label: u8,
}

#[test]
fn a_burn_in_memory_dataset_feeds_the_same_batches_as_the_rows() {
    let (pixels, labels) = synthetic(30, SMALL);
    let items: Vec<MnistLikeItem> = pixels
        .chunks(12)
        .zip(&labels)
        .map(|(row, &label)| {
            let mut image = [[0.0; 4]; 3];
            for (value, &pixel) in image.as_flattened_mut().iter_mut().zip(row) {
                *value = f32::from(pixel);
            }
            MnistLikeItem { image, label }
        })
        .collect();
    let source = BurnDatasetSource::new(
        InMemDataset::new(items),
        SMALL,
        |item: MnistLikeItem, pixels: &mut [u8]| {
            for (pixel, value) in pixels.iter_mut().zip(item.image.as_flattened()) {
                *pixel = *value as u8;
            }
            i64::from(item.label)
        },
    );
    let rows = RawImages::new(&pixels, &labels, SMALL).unwrap();
    let config = LoaderConfig {
        sampling: Sampling::Shuffled,
        ..config(2)
    };
    let from_items = BurnLoader::<_, 2>::new(source, config.clone(), Device::flex()).unwrap();
    let expected: Vec<Vec<f32>> = std::thread::scope(|scope| {
        let loader = reclaim_loader::Loader::new(&rows, config).unwrap();
        let epoch = loader.epoch(scope, 0).unwrap();
        epoch
            .batches()
            .map(|batch| batch.unwrap().images_f32().unwrap().to_vec())
            .collect()
    });
    let actual: Vec<Vec<f32>> = from_items
        .iter()
        .map(|batch| first_pixels(&batch.unwrap()))
        .collect();
    assert_eq!(actual, expected);
}

#[test]
fn an_arc_shared_source_outlives_nothing() {
    let source = Arc::new(OwnedRows::new(10));
    let loader =
        BurnLoader::<_, 3>::from_arc(Arc::clone(&source), config(1), Device::flex()).unwrap();
    let batch = loader.iter().next().unwrap().unwrap();
    assert_eq!(batch.images.dims(), [8, 3, 4]);
    drop(batch);
    drop(loader);
    // The loader and its threads are gone: the source is ours alone again.
    assert!(Arc::into_inner(source).is_some());
}
