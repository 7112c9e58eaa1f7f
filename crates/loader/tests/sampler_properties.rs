//! Property tests of the samplers and of batching.

mod common;

use std::collections::BTreeMap;
use std::num::NonZeroUsize;

use proptest::prelude::*;
use reclaim_loader::{
    BatchSampler, DistributedSampler, Loader, LoaderConfig, Order, RawImages, Replacement, Sampler,
    SequentialSampler, ShuffledSampler, SubsetSampler, UnevenShards, WeightedRandomSampler,
};

fn sorted(mut values: Vec<usize>) -> Vec<usize> {
    values.sort_unstable();
    values
}

fn counts(values: &[usize]) -> BTreeMap<usize, usize> {
    let mut counts = BTreeMap::new();
    for &value in values {
        *counts.entry(value).or_insert(0) += 1;
    }
    counts
}

fn order() -> impl Strategy<Value = Order> {
    prop_oneof![Just(Order::AsGiven), Just(Order::Shuffled)]
}

fn uneven() -> impl Strategy<Value = UnevenShards> {
    prop_oneof![Just(UnevenShards::Pad), Just(UnevenShards::Drop)]
}

proptest! {
    #[test]
    fn each_shuffled_epoch_is_a_permutation(len in 0usize..3000, seed: u64, epoch in 0u64..1000) {
        let sampler = ShuffledSampler::new(len);
        let indices = sampler.epoch_indices(seed, epoch);
        prop_assert_eq!(indices.len(), sampler.len());
        prop_assert_eq!(sorted(indices.clone()), (0..len).collect::<Vec<_>>());
        // Reproducible from the seed and the epoch alone.
        prop_assert_eq!(indices, sampler.epoch_indices(seed, epoch));
    }

    #[test]
    fn a_subset_epoch_is_a_permutation_of_the_subset(
        indices in proptest::collection::vec(0usize..100, 0..200),
        order in order(),
        seed: u64,
        epoch: u64,
    ) {
        let sampler = SubsetSampler::new(indices.clone(), order, 100).unwrap();
        let drawn = sampler.epoch_indices(seed, epoch);
        if order == Order::AsGiven {
            prop_assert_eq!(&drawn, &indices);
        }
        prop_assert_eq!(sorted(drawn), sorted(indices));
    }

    #[test]
    fn shards_are_equal_disjoint_and_cover_the_dataset(
        len in 0usize..700,
        world_size in 1usize..9,
        order in order(),
        uneven in uneven(),
        seed: u64,
        epoch in 0u64..100,
    ) {
        let shards: Vec<Vec<usize>> = (0..world_size)
            .map(|rank| {
                DistributedSampler::new(len, rank, world_size, order, uneven)
                    .unwrap()
                    .epoch_indices(seed, epoch)
            })
            .collect();
        let per_rank = shards[0].len();
        for shard in &shards {
            prop_assert_eq!(shard.len(), per_rank);
            prop_assert!(shard.iter().all(|&index| index < len));
        }
        let all: Vec<usize> = shards.concat();
        let counts = counts(&all);
        let remainder = len % world_size;
        match uneven {
            UnevenShards::Drop => {
                prop_assert_eq!(per_rank, len / world_size);
                // Disjoint, and only the remainder is left out.
                prop_assert!(counts.values().all(|&count| count == 1));
                prop_assert_eq!(counts.len(), len - remainder);
            }
            UnevenShards::Pad => {
                prop_assert_eq!(per_rank, len.div_ceil(world_size));
                // Every sample is in some shard; only the padding repeats samples.
                prop_assert_eq!(counts.len(), len);
                let padding = per_rank * world_size - len;
                prop_assert_eq!(all.len() - counts.len(), padding);
                if remainder == 0 {
                    prop_assert!(counts.values().all(|&count| count == 1));
                }
            }
        }
    }

    #[test]
    fn batches_cover_every_index_once_but_the_dropped_tail(
        len in 0usize..1000,
        batch_size in 1usize..100,
        drop_last: bool,
        shuffled: bool,
        seed: u64,
        epoch in 0u64..50,
    ) {
        let batch_size = NonZeroUsize::new(batch_size).unwrap();
        let batches = if shuffled {
            BatchSampler::new(ShuffledSampler::new(len), batch_size, drop_last)
                .epoch_batches(seed, epoch)
        } else {
            BatchSampler::new(SequentialSampler::new(len), batch_size, drop_last)
                .epoch_batches(seed, epoch)
        };
        let (last, full) = match batches.split_last() {
            Some((last, full)) => (Some(last), full),
            None => (None, &[][..]),
        };
        prop_assert!(full.iter().all(|batch| batch.len() == batch_size.get()));
        if let Some(last) = last {
            prop_assert!(!last.is_empty() && last.len() <= batch_size.get());
            if drop_last {
                prop_assert_eq!(last.len(), batch_size.get());
            }
        }
        let all: Vec<usize> = batches.concat();
        let distinct = counts(&all);
        prop_assert!(distinct.values().all(|&count| count == 1));
        if drop_last {
            prop_assert_eq!(all.len(), len - len % batch_size.get());
        } else {
            prop_assert_eq!(sorted(all), (0..len).collect::<Vec<_>>());
        }
    }

    #[test]
    fn weighted_draws_never_pick_a_zero_weight(
        weights in proptest::collection::vec(prop_oneof![Just(0.0), 0.001f64..10.0], 1..60),
        num_samples in 0usize..80,
        seed: u64,
    ) {
        let positive = weights.iter().filter(|&&weight| weight > 0.0).count();
        let with = WeightedRandomSampler::new(weights.clone(), num_samples, Replacement::With);
        if positive == 0 && num_samples > 0 {
            prop_assert!(with.is_err());
        } else {
            let drawn = with.unwrap().epoch_indices(seed, 0);
            prop_assert_eq!(drawn.len(), num_samples);
            prop_assert!(drawn.iter().all(|&index| weights[index] > 0.0));
        }
        let without = WeightedRandomSampler::new(weights.clone(), num_samples, Replacement::Without);
        if num_samples > positive {
            prop_assert!(without.is_err());
        } else {
            let drawn = without.unwrap().epoch_indices(seed, 0);
            prop_assert_eq!(drawn.len(), num_samples);
            prop_assert!(drawn.iter().all(|&index| weights[index] > 0.0));
            prop_assert!(counts(&drawn).values().all(|&count| count == 1));
        }
    }
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(24))]

    #[test]
    fn the_loaders_order_is_the_same_whatever_the_number_of_workers(
        len in 0usize..300,
        batch_size in 1usize..40,
        num_workers in 1usize..5,
        prefetch in 1usize..4,
        drop_last: bool,
        seed: u64,
        epoch in 0u64..10,
    ) {
        let (pixels, labels) = common::synthetic(len, common::SMALL);
        let source = RawImages::new(&pixels, &labels, common::SMALL).unwrap();
        let order_with = |num_workers| {
            let config = LoaderConfig {
                batch_size,
                num_workers,
                prefetch,
                drop_last,
                seed,
                ..LoaderConfig::default()
            };
            let loader = Loader::new(&source, config).unwrap();
            std::thread::scope(|scope| {
                let epoch = loader.epoch(scope, epoch).unwrap();
                epoch
                    .batches()
                    .map(|batch| batch.unwrap().indices().to_vec())
                    .collect::<Vec<_>>()
            })
        };
        let expected = BatchSampler::new(
            ShuffledSampler::new(len),
            NonZeroUsize::new(batch_size).unwrap(),
            drop_last,
        )
        .epoch_batches(seed, epoch);
        prop_assert_eq!(order_with(0), expected.clone());
        prop_assert_eq!(order_with(num_workers), expected);
    }
}
