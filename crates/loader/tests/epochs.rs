//! Epochs end to end: order, contents, workers, dropping half-way, errors and resuming.

mod common;

use burn::data::dataset::{Dataset, DatasetError, InMemDataset};
use common::{SMALL, pixel_value, synthetic};
use reclaim_loader::{
    BatchImages, BatchSampler, BurnDatasetSource, ImageShape, ImageSource, Loader, LoaderConfig,
    LoaderError, LoaderState, Normalization, Order, PixelFormat, Sampling, ShuffledSampler,
};
use std::num::NonZeroUsize;

/// Everything a batch says, copied out so it can outlive its epoch.
#[derive(Clone, Debug, PartialEq)]
struct Seen {
    indices: Vec<usize>,
    pixels: Vec<f32>,
    labels: Vec<i64>,
}

fn seen(batch: &reclaim_loader::Batch<'_>) -> Seen {
    let pixels = match batch.images() {
        BatchImages::F32(values) => values.to_vec(),
        BatchImages::U8(values) => values.iter().map(|&value| f32::from(value)).collect(),
    };
    Seen {
        indices: batch.indices().to_vec(),
        pixels,
        labels: batch.labels().to_vec(),
    }
}

fn run_epoch<S: ImageSource>(loader: &Loader<'_, S>, epoch: u64) -> Vec<Seen> {
    std::thread::scope(|scope| {
        let epoch = loader.epoch(scope, epoch).unwrap();
        (&epoch)
            .into_iter()
            .map(|batch| seen(&batch.unwrap()))
            .collect()
    })
}

fn config(batch_size: usize, num_workers: usize, prefetch: usize) -> LoaderConfig {
    LoaderConfig {
        batch_size,
        num_workers,
        prefetch,
        seed: 1234,
        ..LoaderConfig::default()
    }
}

#[test]
fn batches_come_in_the_samplers_order_whatever_the_number_of_workers() {
    let (pixels, labels) = synthetic(203, SMALL);
    let source = reclaim_loader::RawImages::new(&pixels, &labels, SMALL).unwrap();
    let reference_loader = Loader::new(&source, config(16, 0, 1)).unwrap();
    let expected_order = BatchSampler::new(
        ShuffledSampler::new(203),
        NonZeroUsize::new(16).unwrap(),
        false,
    );
    for epoch in 0..2 {
        let reference = run_epoch(&reference_loader, epoch);
        let indices: Vec<Vec<usize>> = reference
            .iter()
            .map(|batch| batch.indices.clone())
            .collect();
        assert_eq!(indices, expected_order.epoch_batches(1234, epoch));
        for num_workers in 1..=3 {
            for prefetch in 1..=3 {
                let loader = Loader::new(&source, config(16, num_workers, prefetch)).unwrap();
                assert_eq!(
                    run_epoch(&loader, epoch),
                    reference,
                    "{num_workers} workers, prefetch {prefetch}"
                );
                assert_eq!(loader.memory_report().current_bytes, 0);
            }
        }
    }
}

#[test]
fn batches_hold_the_converted_rows_of_their_indices() {
    let (pixels, labels) = synthetic(50, SMALL);
    let source = reclaim_loader::RawImages::new(&pixels, &labels, SMALL).unwrap();
    let formats = [
        PixelFormat::UnitF32,
        PixelFormat::NormalizedF32(Normalization::MNIST),
        PixelFormat::RawU8,
    ];
    for format in formats {
        for num_workers in [0, 2] {
            let loader = Loader::new(
                &source,
                LoaderConfig {
                    pixel_format: format,
                    ..config(7, num_workers, 2)
                },
            )
            .unwrap();
            let mut visited = 0;
            for batch in run_epoch(&loader, 3) {
                assert_eq!(batch.labels.len(), batch.indices.len());
                for (position, &index) in batch.indices.iter().enumerate() {
                    assert_eq!(batch.labels[position], (index % 10) as i64);
                    for pixel in 0..12 {
                        let raw = f32::from(pixel_value(index, pixel));
                        let expected = match format {
                            PixelFormat::UnitF32 => raw / 255.0,
                            PixelFormat::NormalizedF32(n) => {
                                (raw / 255.0 - n.mean) / n.standard_deviation
                            }
                            PixelFormat::ChannelNormalizedF32(n) => {
                                let n = n.statistics()[0];
                                (raw / 255.0 - n.mean) / n.standard_deviation
                            }
                            PixelFormat::RawU8 => raw,
                        };
                        let actual = batch.pixels[position * 12 + pixel];
                        assert!(
                            (actual - expected).abs() < 1e-5,
                            "{format:?} image {index} pixel {pixel}: {actual} vs {expected}"
                        );
                    }
                    visited += 1;
                }
            }
            assert_eq!(visited, 50);
        }
    }
}

#[test]
fn every_index_comes_once_per_epoch_and_drop_last_drops_only_the_tail() {
    let (pixels, labels) = synthetic(100, SMALL);
    let source = reclaim_loader::RawImages::new(&pixels, &labels, SMALL).unwrap();
    for drop_last in [false, true] {
        let loader = Loader::new(
            &source,
            LoaderConfig {
                drop_last,
                ..config(32, 2, 2)
            },
        )
        .unwrap();
        let batches = run_epoch(&loader, 0);
        let sizes: Vec<usize> = batches.iter().map(|batch| batch.indices.len()).collect();
        let mut all: Vec<usize> = batches
            .into_iter()
            .flat_map(|batch| batch.indices)
            .collect();
        all.sort_unstable();
        if drop_last {
            assert_eq!(sizes, [32, 32, 32]);
            assert_eq!(all.len(), 96);
            all.dedup();
            assert_eq!(all.len(), 96);
        } else {
            assert_eq!(sizes, [32, 32, 32, 4]);
            assert_eq!(all, (0..100).collect::<Vec<_>>());
        }
        assert_eq!(loader.batches_per_epoch(), sizes.len());
    }
}

#[test]
fn dropping_an_epoch_half_way_returns_every_buffer() {
    let (pixels, labels) = synthetic(1000, SMALL);
    let source = reclaim_loader::RawImages::new(&pixels, &labels, SMALL).unwrap();
    let loader = Loader::new(&source, config(10, 2, 3)).unwrap();
    std::thread::scope(|scope| {
        let epoch = loader.epoch(scope, 0).unwrap();
        let first = epoch.next_batch().unwrap().unwrap();
        let second = epoch.next_batch().unwrap().unwrap();
        assert_eq!(first.len(), 10);
        drop(second);
        let during = loader.memory_report();
        assert!(during.buffer_bytes > 0);
        assert!(during.order_bytes >= 1000 * size_of::<usize>());
        assert!(during.queue_bytes > 0);
        drop(first);
        drop(epoch);
        let after = loader.memory_report();
        assert_eq!(after.current_bytes, 0, "{after:?}");
        assert_eq!(
            after.buffer_bytes + after.order_bytes + after.queue_bytes,
            0
        );
        assert!(after.peak_bytes >= during.current_bytes);
    });
}

#[test]
fn peak_memory_stays_bounded_by_the_workers_and_prefetch() {
    let shape = ImageShape::MNIST;
    let (pixels, labels) = synthetic(2000, shape);
    let source = reclaim_loader::RawImages::new(&pixels, &labels, shape).unwrap();
    let loader = Loader::new(&source, config(64, 2, 2)).unwrap();
    let batches = run_epoch(&loader, 0);
    assert_eq!(batches.len(), 32);
    let batch_bytes = 64 * 784 * 4;
    let peak = loader.memory_report().peak_bytes;
    // 2 workers x (2 queued + 1 being made), one being consumed, one free in the pool: never
    // anything like one buffer per batch (32 of them).
    assert!(peak >= batch_bytes, "{peak}");
    assert!(peak <= 8 * batch_bytes + 2000 * 8 + 4096, "{peak}");
}

#[derive(Clone, Debug)]
struct Item {
    pixels: Vec<u8>,
    label: u8,
}

/// A Burn dataset whose `get` fails at one index.
struct FailingDataset {
    items: InMemDataset<Item>,
    fail_at: usize,
}

impl Dataset<Item> for FailingDataset {
    fn get(&self, index: usize) -> Result<Item, DatasetError> {
        if index == self.fail_at {
            return Err(DatasetError::new(std::io::Error::other("bad sector")));
        }
        self.items.get(index)
    }

    fn len(&self) -> usize {
        self.items.len()
    }
}

fn item_source(
    count: usize,
    fail_at: usize,
) -> BurnDatasetSource<FailingDataset, Item, impl Fn(Item, &mut [u8]) -> i64 + Sync> {
    let (pixels, labels) = synthetic(count, SMALL);
    let items = pixels
        .chunks(12)
        .zip(labels)
        .map(|(pixels, label)| Item {
            pixels: pixels.to_vec(),
            label,
        })
        .collect();
    let dataset = FailingDataset {
        items: InMemDataset::new(items),
        fail_at,
    };
    BurnDatasetSource::new(dataset, SMALL, |item: Item, pixels: &mut [u8]| {
        pixels.copy_from_slice(&item.pixels);
        i64::from(item.label)
    })
}

#[test]
fn a_burn_dataset_gives_the_same_batches_as_the_rows_it_was_made_from() {
    let (pixels, labels) = synthetic(40, SMALL);
    let rows = reclaim_loader::RawImages::new(&pixels, &labels, SMALL).unwrap();
    let items = item_source(40, usize::MAX);
    for num_workers in [0, 2] {
        let from_rows = run_epoch(&Loader::new(&rows, config(6, num_workers, 2)).unwrap(), 5);
        let from_items = run_epoch(&Loader::new(&items, config(6, num_workers, 2)).unwrap(), 5);
        assert_eq!(from_rows, from_items);
    }
}

#[test]
fn a_failing_sample_ends_the_epoch_with_an_error_naming_it() {
    let source = item_source(40, 17);
    for num_workers in [0, 1, 3] {
        let loader = Loader::new(
            &source,
            LoaderConfig {
                sampling: Sampling::Sequential,
                ..config(5, num_workers, 2)
            },
        )
        .unwrap();
        std::thread::scope(|scope| {
            let epoch = loader.epoch(scope, 0).unwrap();
            let outcomes: Vec<Result<usize, LoaderError>> = epoch
                .batches()
                .map(|batch| batch.map(|batch| batch.len()))
                .collect();
            // Batches 0, 1 and 2 (samples 0..15) are fine; batch 3 holds sample 17.
            assert_eq!(outcomes.len(), 4, "{num_workers} workers: {outcomes:?}");
            assert!(outcomes[..3].iter().all(|outcome| matches!(outcome, Ok(5))));
            match &outcomes[3] {
                Err(LoaderError::Source { index: 17, source }) => {
                    assert!(source.to_string().contains("bad sector"));
                }
                other => panic!("{other:?}"),
            }
            assert!(epoch.next_batch().is_none());
            assert!(epoch.is_finished());
        });
        assert_eq!(loader.memory_report().current_bytes, 0);
    }
}

#[test]
fn resuming_yields_exactly_the_batches_the_interrupted_epoch_had_left() {
    let (pixels, labels) = synthetic(97, SMALL);
    let source = reclaim_loader::RawImages::new(&pixels, &labels, SMALL).unwrap();
    for drop_last in [false, true] {
        for num_workers in [0, 2] {
            let loader = Loader::new(
                &source,
                LoaderConfig {
                    drop_last,
                    ..config(10, num_workers, 2)
                },
            )
            .unwrap();
            let full = run_epoch(&loader, 4);
            for stop_after in [0, 1, 4, full.len() - 1, full.len()] {
                let saved = std::thread::scope(|scope| {
                    let epoch = loader.epoch(scope, 4).unwrap();
                    for _ in 0..stop_after {
                        drop(epoch.next_batch().unwrap().unwrap());
                    }
                    serde_json::to_string(&epoch.state()).unwrap()
                    // The epoch is dropped half-way here.
                });
                let state: LoaderState = serde_json::from_str(&saved).unwrap();
                assert_eq!(state.epoch, 4);
                assert_eq!(state.seed, 1234);
                let resumed: Vec<Seen> = std::thread::scope(|scope| {
                    let epoch = loader.resume(scope, &state).unwrap();
                    epoch.batches().map(|batch| seen(&batch.unwrap())).collect()
                });
                assert_eq!(
                    resumed,
                    full[stop_after..],
                    "drop_last {drop_last}, {num_workers} workers, stopped after {stop_after}"
                );
            }
        }
    }
}

#[test]
fn a_resume_state_from_another_run_is_refused() {
    let (pixels, labels) = synthetic(20, SMALL);
    let source = reclaim_loader::RawImages::new(&pixels, &labels, SMALL).unwrap();
    let loader = Loader::new(&source, config(4, 0, 1)).unwrap();
    std::thread::scope(|scope| {
        let other_seed = LoaderState {
            seed: 1,
            epoch: 0,
            position: 0,
        };
        assert!(matches!(
            loader.resume(scope, &other_seed),
            Err(LoaderError::StateSeedMismatch {
                state_seed: 1,
                loader_seed: 1234
            })
        ));
        let past_the_end = LoaderState {
            seed: 1234,
            epoch: 0,
            position: 21,
        };
        assert!(matches!(
            loader.resume(scope, &past_the_end),
            Err(LoaderError::StatePositionOutOfRange {
                position: 21,
                epoch_len: 20
            })
        ));
        let at_the_end = LoaderState {
            position: 20,
            ..past_the_end
        };
        let epoch = loader.resume(scope, &at_the_end).unwrap();
        assert!(epoch.next_batch().is_none());
        assert_eq!(epoch.state(), at_the_end);
    });
}

#[test]
fn the_sampling_choice_reaches_the_epochs() {
    let (pixels, labels) = synthetic(30, SMALL);
    let source = reclaim_loader::RawImages::new(&pixels, &labels, SMALL).unwrap();
    let subset = LoaderConfig {
        sampling: Sampling::Subset {
            indices: vec![29, 3, 3, 8],
            order: Order::AsGiven,
        },
        ..config(3, 1, 1)
    };
    let batches = run_epoch(&Loader::new(&source, subset).unwrap(), 0);
    let indices: Vec<Vec<usize>> = batches.into_iter().map(|batch| batch.indices).collect();
    assert_eq!(indices, vec![vec![29, 3, 3], vec![8]]);

    // Two ranks of a distributed run see disjoint halves.
    let shard = |rank| {
        let config = LoaderConfig {
            sampling: Sampling::Distributed {
                rank,
                world_size: 2,
                order: Order::Shuffled,
                uneven: reclaim_loader::UnevenShards::Pad,
            },
            ..config(4, 0, 1)
        };
        let loader = Loader::new(&source, config).unwrap();
        assert_eq!(loader.samples_per_epoch(), 15);
        run_epoch(&loader, 2)
            .into_iter()
            .flat_map(|batch| batch.indices)
            .collect::<Vec<_>>()
    };
    let mut both = shard(0);
    both.extend(shard(1));
    both.sort_unstable();
    assert_eq!(both, (0..30).collect::<Vec<_>>());
}

#[test]
fn bad_configurations_are_refused_before_any_batch() {
    let (pixels, labels) = synthetic(10, SMALL);
    let source = reclaim_loader::RawImages::new(&pixels, &labels, SMALL).unwrap();
    assert!(matches!(
        Loader::new(&source, config(0, 0, 1)),
        Err(LoaderError::ZeroBatchSize)
    ));
    assert!(matches!(
        Loader::new(&source, config(4, 2, 0)),
        Err(LoaderError::ZeroPrefetch { num_workers: 2 })
    ));
    let bad_normalization = LoaderConfig {
        pixel_format: PixelFormat::NormalizedF32(Normalization {
            mean: 0.0,
            standard_deviation: -1.0,
        }),
        ..config(4, 0, 1)
    };
    assert!(matches!(
        Loader::new(&source, bad_normalization),
        Err(LoaderError::InvalidNormalization { .. })
    ));
    let out_of_range = LoaderConfig {
        sampling: Sampling::Subset {
            indices: vec![10],
            order: Order::AsGiven,
        },
        ..config(4, 0, 1)
    };
    assert!(matches!(
        Loader::new(&source, out_of_range),
        Err(LoaderError::SubsetIndexOutOfRange { index: 10, .. })
    ));
}

#[test]
fn an_empty_source_makes_an_empty_epoch() {
    let source = reclaim_loader::RawImages::new(&[], &[], SMALL).unwrap();
    let loader = Loader::new(&source, config(4, 2, 2)).unwrap();
    assert!(run_epoch(&loader, 0).is_empty());
    assert_eq!(loader.sampler().len(), 0);
}
