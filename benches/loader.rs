//! Feeding a Burn model from MNIST's train split (60 000 images, memory-mapped), one whole
//! shuffled epoch per iteration, batches of 64 turned into `[64, 28, 28]` image tensors and
//! `[64]` label tensors on the default CPU device (Flex), normalized with MNIST's mean and standard
//! deviation:
//!
//! - `memcpy_pixels`: a plain copy of the same 47 MB of pixels, the floor.
//! - `reclaim/{0,1,2}_workers`: this crate's loader (`Batch::into_tensors`).
//! - `burn/{0,2}_workers`: Burn's own pipeline as its MNIST example builds it: `MnistItem`s
//!   (`image: [[f32; 28]; 28]`, `label: u8`, made here from the same IDX data since Burn's
//!   `MnistDataset` downloads) in an `InMemDataset`, `DataLoaderBuilder` with a batcher that
//!   makes a tensor per item, normalizes it, then concatenates.
//!
//! Two latencies of the same loader, in `mnist_train_latency`:
//!
//! - `first_batch/{0,2}_workers`: from asking for an epoch (order drawn, workers started) to
//!   holding its first batch.
//! - `drop_half_way/2_workers_prefetch_4`: dropping an epoch half-way, with every worker's queue
//!   full: raising the stop flag, freeing the queued batches, joining both workers.
//!
//! CIFAR's shape, in `cifar_train_epoch`: 10 000 generated 3 x 32 x 32 images in memory
//! (`RawImages`, as a mapped CIFAR file lends them), one shuffled epoch of batches of 64 into
//! `[64, 3, 32, 32]` tensors:
//!
//! - `memcpy_pixels`: a plain copy of the 30.7 MB of pixels, the floor.
//! - `normalized/{0,2}_workers`: per-channel normalization with CIFAR-10's statistics.
//! - `augmented/{0,2}_workers`: the same, with the standard augmentation (random crop 32 with
//!   padding 4, random horizontal flip) fused into the conversion.
//!
//! Throughput is in samples per second. Run with `cargo bench --bench loader`; figures go to
//! docs/benchmarks.md.
#![expect(
    missing_docs,
    reason = "criterion_group! generates an undocumented public function"
)]

use std::hint::black_box;
use std::time::{Duration, Instant};

use burn::data::dataloader::DataLoaderBuilder;
use burn::data::dataloader::batcher::Batcher;
use burn::data::dataset::InMemDataset;
use burn::tensor::{Device, Int, Tensor, TensorData};
use criterion::{BenchmarkId, Criterion, Throughput, criterion_group, criterion_main};
use reclaim::dataset::{Family, ImageDataset, Split, default_data_folder};
use reclaim::loader::{Augmentation, ImageShape, Loader, LoaderConfig, RawImages, TensorBatch};
use reclaim::train::BackendChoice;

const SEED: u64 = 42;
const BATCH_SIZE: usize = 64;

fn train_split() -> ImageDataset {
    let folder = default_data_folder(None, Family::Mnist);
    // SAFETY: the vendored files and their decompressed cache are not modified while the bench
    // runs.
    unsafe { ImageDataset::open_mapped(&folder, Split::Train) }.expect("MNIST train opens")
}

/// The default build's CPU device (Flex; NdArray in a build with only that backend).
fn device() -> Device {
    BackendChoice::default_cpu()
        .device()
        .expect("the default CPU backend is compiled in")
}

/// Burn's MNIST item (`burn::data::dataset::vision::MnistItem`).
#[derive(Clone, Debug)]
struct MnistItem {
    image: [[f32; 28]; 28],
    label: u8,
}

#[derive(Clone, Debug)]
struct MnistBatch {
    images: Tensor<3>,
    targets: Tensor<1, Int>,
}

/// The batcher of Burn's MNIST example.
#[derive(Clone, Debug, Default)]
struct MnistBatcher;

impl Batcher<MnistItem, MnistBatch> for MnistBatcher {
    fn batch(&self, items: Vec<MnistItem>, device: &Device) -> MnistBatch {
        let images = items
            .iter()
            .map(|item| TensorData::from(item.image))
            .map(|data| Tensor::<2>::from_data(data, device))
            .map(|tensor| tensor.reshape([1, 28, 28]))
            // Normalize: scale to [0, 1], then mean 0 and standard deviation 1, with the values
            // of PyTorch's MNIST example.
            .map(|tensor| ((tensor / 255) - 0.1307) / 0.3081)
            .collect();
        let targets = items
            .iter()
            .map(|item| Tensor::<1, Int>::from_data([i64::from(item.label)], device))
            .collect();
        MnistBatch {
            images: Tensor::cat(images, 0),
            targets: Tensor::cat(targets, 0),
        }
    }
}

fn mnist_items(dataset: &ImageDataset) -> Vec<MnistItem> {
    (0..dataset.len())
        .map(|index| {
            let mut image = [[0.0f32; 28]; 28];
            for (value, &pixel) in image
                .as_flattened_mut()
                .iter_mut()
                .zip(dataset.image(index))
            {
                *value = f32::from(pixel);
            }
            MnistItem {
                image,
                label: dataset.label(index),
            }
        })
        .collect()
}

fn epoch(criterion: &mut Criterion) {
    let dataset = train_split();
    let samples = dataset.len();
    let device = device();
    let mut group = criterion.benchmark_group("mnist_train_epoch");
    group.throughput(Throughput::Elements(samples as u64));
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(2));
    group.measurement_time(Duration::from_secs(8));

    let mut copy = vec![0u8; dataset.pixels().len()];
    group.bench_function("memcpy_pixels", |bencher| {
        bencher.iter(|| {
            copy.copy_from_slice(black_box(dataset.pixels()));
            black_box(&copy);
        })
    });

    for num_workers in [0, 1, 2] {
        let config = LoaderConfig {
            num_workers,
            ..LoaderConfig::mnist_training(SEED)
        };
        let loader = Loader::new(&dataset, config).expect("a valid configuration");
        let mut epoch_number = 0;
        group.bench_function(
            BenchmarkId::new("reclaim", format!("{num_workers}_workers")),
            |bencher| {
                bencher.iter(|| {
                    std::thread::scope(|scope| {
                        let epoch = loader.epoch(scope, epoch_number).expect("workers start");
                        for batch in &epoch {
                            let tensors: TensorBatch<3> = batch
                                .expect("MNIST batches assemble")
                                .into_tensors(&device)
                                .expect("rank 3 is supported");
                            black_box(tensors);
                        }
                    });
                    epoch_number += 1;
                })
            },
        );
    }

    let items = mnist_items(&dataset);
    for num_workers in [0, 2] {
        let burn_loader = DataLoaderBuilder::new(MnistBatcher)
            .batch_size(BATCH_SIZE)
            .shuffle(SEED)
            .num_workers(num_workers)
            .set_device(device.clone())
            .build(InMemDataset::new(items.clone()));
        group.bench_function(
            BenchmarkId::new("burn", format!("{num_workers}_workers")),
            |bencher| {
                bencher.iter(|| {
                    for batch in burn_loader.iter() {
                        let batch = batch.expect("in-memory items never fail");
                        black_box((batch.images, batch.targets));
                    }
                })
            },
        );
    }
    group.finish();
}

fn latency(criterion: &mut Criterion) {
    let dataset = train_split();
    let mut group = criterion.benchmark_group("mnist_train_latency");
    group.sample_size(30);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(4));

    for num_workers in [0, 2] {
        let config = LoaderConfig {
            num_workers,
            ..LoaderConfig::mnist_training(SEED)
        };
        let loader = Loader::new(&dataset, config).expect("a valid configuration");
        group.bench_function(
            BenchmarkId::new("first_batch", format!("{num_workers}_workers")),
            |bencher| {
                bencher.iter_custom(|iterations| {
                    let mut elapsed = Duration::ZERO;
                    std::thread::scope(|scope| {
                        for iteration in 0..iterations {
                            let started = Instant::now();
                            let epoch = loader.epoch(scope, iteration).expect("workers start");
                            let batch = epoch.next_batch().expect("a first batch");
                            elapsed += started.elapsed();
                            black_box(batch.expect("MNIST batches assemble").len());
                        }
                    });
                    elapsed
                })
            },
        );
    }

    let config = LoaderConfig {
        num_workers: 2,
        prefetch: 4,
        ..LoaderConfig::mnist_training(SEED)
    };
    let loader = Loader::new(&dataset, config).expect("a valid configuration");
    group.bench_function(
        BenchmarkId::new("drop_half_way", "2_workers_prefetch_4"),
        |bencher| {
            bencher.iter_custom(|iterations| {
                let mut elapsed = Duration::ZERO;
                std::thread::scope(|scope| {
                    for iteration in 0..iterations {
                        let epoch = loader.epoch(scope, iteration).expect("workers start");
                        for _ in 0..epoch.remaining_batches() / 2 {
                            drop(epoch.next_batch().expect("a batch"));
                        }
                        // Let both workers fill their queues.
                        std::thread::sleep(Duration::from_millis(2));
                        let started = Instant::now();
                        drop(epoch);
                        elapsed += started.elapsed();
                        assert_eq!(loader.memory_report().current_bytes, 0);
                    }
                });
                elapsed
            })
        },
    );
    group.finish();
}

/// `count` generated CIFAR-shaped images (every byte different from its neighbours) and labels.
fn cifar_images(count: usize) -> (Vec<u8>, Vec<u8>) {
    let pixels_per_image = ImageShape::CIFAR.pixels().expect("3072");
    let pixels = (0..count * pixels_per_image)
        .map(|index| (index * 7 + index / 3072) as u8)
        .collect();
    let labels = (0..count).map(|index| (index % 10) as u8).collect();
    (pixels, labels)
}

fn cifar_epoch(criterion: &mut Criterion) {
    let (pixels, labels) = cifar_images(10_000);
    let source = RawImages::new(&pixels, &labels, ImageShape::CIFAR).expect("consistent lengths");
    let device = device();
    let mut group = criterion.benchmark_group("cifar_train_epoch");
    group.sample_size(10);
    group.warm_up_time(Duration::from_secs(1));
    group.measurement_time(Duration::from_secs(6));
    group.throughput(Throughput::Elements(labels.len() as u64));

    group.bench_function("memcpy_pixels", |bencher| {
        let mut copy = vec![0u8; pixels.len()];
        bencher.iter(|| {
            copy.copy_from_slice(black_box(&pixels));
            black_box(&copy);
        })
    });
    for (name, augmentation) in [
        ("normalized", Augmentation::NONE),
        ("augmented", Augmentation::CIFAR),
    ] {
        for num_workers in [0, 2] {
            let config = LoaderConfig {
                num_workers,
                augmentation,
                ..LoaderConfig::cifar_training(SEED)
            };
            let loader = Loader::new(&source, config).expect("a valid configuration");
            let mut epoch_number = 0;
            group.bench_function(
                BenchmarkId::new(name, format!("{num_workers}_workers")),
                |bencher| {
                    bencher.iter(|| {
                        std::thread::scope(|scope| {
                            let epoch = loader.epoch(scope, epoch_number).expect("workers start");
                            for batch in &epoch {
                                let TensorBatch { images, labels } = batch
                                    .expect("in-memory batches assemble")
                                    .into_tensors::<4>(&device)
                                    .expect("rank 4");
                                black_box((images, labels));
                            }
                        });
                        epoch_number += 1;
                    })
                },
            );
        }
    }
    group.finish();
}

criterion_group!(benches, epoch, latency, cifar_epoch);
criterion_main!(benches);
