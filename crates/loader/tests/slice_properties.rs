//! Property tests of `BurnLoader::slice`, as burn-train's multi-device strategies use it: the
//! parts Burn's own `split_dataloader` makes share out every epoch exactly, whatever the sampler.

use burn::data::dataloader::DataLoader;
use burn::data::dataloader::split::split_dataloader;
use burn::tensor::Device;
use proptest::prelude::*;
use reclaim_loader::{
    BurnLoader, ImageShape, ImageSource, LoaderConfig, LoaderError, Order, Replacement, Sampling,
    TensorBatch, UnevenShards,
};

/// `len` one-pixel images whose label is their own index, so that an epoch's order can be read
/// back from the label tensors.
#[derive(Debug)]
struct IndexLabelled {
    len: usize,
}

impl ImageSource for IndexLabelled {
    fn len(&self) -> usize {
        self.len
    }

    fn image_shape(&self) -> ImageShape {
        ImageShape::grayscale(1, 1)
    }

    fn read_sample(&self, index: usize, pixels: &mut [u8]) -> Result<i64, LoaderError> {
        pixels.fill(0);
        Ok(i64::try_from(index).expect("a test index fits in i64"))
    }
}

/// The sample indices of the next epoch of `loader`, in the order it yields them.
fn epoch_order(loader: &dyn DataLoader<TensorBatch<2>>) -> Vec<i64> {
    loader
        .iter()
        .flat_map(|batch| {
            batch
                .expect("the synthetic source never fails")
                .labels
                .into_data()
                .convert::<i64>()
                .try_to_vec::<i64>()
                .expect("the labels convert to i64")
        })
        .collect()
}

fn order() -> impl Strategy<Value = Order> {
    prop_oneof![Just(Order::AsGiven), Just(Order::Shuffled)]
}

fn replacement() -> impl Strategy<Value = Replacement> {
    prop_oneof![Just(Replacement::With), Just(Replacement::Without)]
}

fn uneven() -> impl Strategy<Value = UnevenShards> {
    prop_oneof![Just(UnevenShards::Pad), Just(UnevenShards::Drop)]
}

/// A source length and a sampling over it: every kind of sampler the loader offers.
fn source_and_sampling() -> impl Strategy<Value = (usize, Sampling)> {
    (1usize..120).prop_flat_map(|len| {
        let subset = (
            proptest::sample::subsequence((0..len).collect::<Vec<_>>(), 0..=len),
            order(),
        )
            .prop_map(|(indices, order)| Sampling::Subset { indices, order });
        let weighted = (
            proptest::collection::vec(0.1f64..10.0, len),
            0usize..=len,
            replacement(),
        )
            .prop_map(
                |(weights, num_samples, replacement)| Sampling::WeightedRandom {
                    weights,
                    num_samples,
                    replacement,
                },
            );
        let distributed =
            (1usize..5, order(), uneven()).prop_flat_map(|(world_size, order, uneven)| {
                (0..world_size).prop_map(move |rank| Sampling::Distributed {
                    rank,
                    world_size,
                    order,
                    uneven,
                })
            });
        let sampling = prop_oneof![
            Just(Sampling::Sequential),
            Just(Sampling::Shuffled),
            subset,
            weighted,
            distributed,
        ];
        (Just(len), sampling)
    })
}

fn loader(
    len: usize,
    sampling: Sampling,
    seed: u64,
    batch_size: usize,
) -> BurnLoader<IndexLabelled> {
    let config = LoaderConfig {
        batch_size,
        sampling,
        seed,
        ..LoaderConfig::default()
    };
    BurnLoader::new(IndexLabelled { len }, config, Device::flex()).expect("a valid configuration")
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(64))]

    /// Burn's split (`num_items() / parts` items each, the rest to the last part) concatenated
    /// in part order is exactly the whole loader's epoch, for every epoch; so the parts are
    /// disjoint shares of each epoch's draws that together cover it, and the number of items
    /// each part announces is the number it yields.
    #[test]
    fn burn_split_parts_share_out_each_epoch_exactly(
        (len, sampling) in source_and_sampling(),
        parts in 1usize..5,
        seed: u64,
        batch_size in 1usize..17,
    ) {
        let whole = loader(len, sampling, seed, batch_size);
        let devices = vec![Device::flex(); parts];
        let split = split_dataloader(whole.to_device(&Device::flex()), &devices);
        prop_assert_eq!(split.len(), parts);
        for _epoch in 0..2 {
            let expected = epoch_order(&whole);
            let mut concatenated = Vec::with_capacity(expected.len());
            for part in &split {
                let items = epoch_order(part.as_ref());
                prop_assert_eq!(items.len(), part.num_items());
                concatenated.extend(items);
            }
            prop_assert_eq!(concatenated, expected);
        }
    }

    /// Slicing is a function of the seed alone: two loaders built alike give the same parts,
    /// and a slice of a slice is the slice of the whole at the summed offsets.
    #[test]
    fn slices_are_deterministic_and_compose(
        (len, sampling) in source_and_sampling(),
        seed: u64,
        cuts in proptest::collection::vec(0usize..130, 4),
    ) {
        let mut cuts = cuts;
        cuts.sort_unstable();
        let [outer_start, inner_start, inner_end, outer_end] = [cuts[0], cuts[1], cuts[2], cuts[3]];
        let first = loader(len, sampling.clone(), seed, 7);
        let second = loader(len, sampling, seed, 7);
        let outer = first.slice(outer_start, outer_end);
        let nested = outer.slice(inner_start - outer_start, inner_end - outer_start);
        let direct = second.slice(inner_start, inner_end);
        prop_assert_eq!(epoch_order(nested.as_ref()), epoch_order(direct.as_ref()));
        prop_assert_eq!(
            epoch_order(first.slice(outer_start, outer_end).as_ref()),
            epoch_order(second.slice(outer_start, outer_end).as_ref())
        );
    }
}
