//! Samplers: which sample indices an epoch visits, and in which order.
//!
//! Every sampler is a pure function of `(seed, epoch)`: the order of an epoch is computed once,
//! on the thread that starts the epoch, so it is the same whatever the number of workers, and a
//! resumed run sees exactly the order the interrupted one saw.

use std::fmt;
use std::num::NonZeroUsize;
use std::sync::Arc;

use crate::error::LoaderError;
use crate::rng::{EpochRng, Stream};

/// Chooses the sample indices of each epoch, in order.
///
/// Implement it to plug a sampling scheme of your own into [`Sampling::Custom`].
pub trait Sampler: Send + Sync + fmt::Debug {
    /// The number of indices each epoch yields.
    fn len(&self) -> usize;

    /// Whether an epoch yields no index at all.
    fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// One past the largest index this sampler can yield; the loader checks it against the
    /// source's length once, when it is built.
    fn index_bound(&self) -> usize;

    /// The indices of `epoch` for a run seeded with `seed`, in the order they are visited.
    ///
    /// Must return [`len`](Sampler::len) indices, each below
    /// [`index_bound`](Sampler::index_bound), and depend on nothing but its arguments and the
    /// sampler's own parameters.
    fn epoch_indices(&self, seed: u64, epoch: u64) -> Vec<usize>;
}

/// Whether a subset or a shard is visited in its own order or shuffled anew each epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Order {
    /// The order given (ascending for a shard).
    #[default]
    AsGiven,
    /// A fresh permutation each epoch, derived from the seed and the epoch.
    Shuffled,
}

/// Whether a weighted random sampler may draw the same index twice in one epoch.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum Replacement {
    /// Independent draws: an index can come several times (PyTorch's default).
    #[default]
    With,
    /// Each index at most once per epoch.
    Without,
}

/// What a distributed sampler does when the dataset does not split evenly across ranks.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Default)]
pub enum UnevenShards {
    /// Repeat indices from the start of the epoch's order until every rank has
    /// `ceil(len / world_size)` (PyTorch's `drop_last=False`).
    #[default]
    Pad,
    /// Drop the tail of the epoch's order so that every rank has `floor(len / world_size)`
    /// (PyTorch's `drop_last=True`).
    Drop,
}

/// `0, 1, 2, …, len - 1`, every epoch (PyTorch's `SequentialSampler`).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct SequentialSampler {
    len: usize,
}

impl SequentialSampler {
    /// A sequential sampler over `len` samples.
    pub fn new(len: usize) -> Self {
        Self { len }
    }
}

impl Sampler for SequentialSampler {
    fn len(&self) -> usize {
        self.len
    }

    fn index_bound(&self) -> usize {
        self.len
    }

    fn epoch_indices(&self, _seed: u64, _epoch: u64) -> Vec<usize> {
        (0..self.len).collect()
    }
}

/// A permutation of `0..len`, a new one each epoch, derived from the seed and the epoch only
/// (PyTorch's `RandomSampler` without replacement, with a seeded generator).
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct ShuffledSampler {
    len: usize,
}

impl ShuffledSampler {
    /// A shuffled sampler over `len` samples.
    pub fn new(len: usize) -> Self {
        Self { len }
    }
}

impl Sampler for ShuffledSampler {
    fn len(&self) -> usize {
        self.len
    }

    fn index_bound(&self) -> usize {
        self.len
    }

    fn epoch_indices(&self, seed: u64, epoch: u64) -> Vec<usize> {
        let mut indices: Vec<usize> = (0..self.len).collect();
        EpochRng::new(seed, epoch, Stream::Shuffle).shuffle(&mut indices);
        indices
    }
}

/// The given indices only, in their order or shuffled each epoch (PyTorch's
/// `SubsetRandomSampler` is `Order::Shuffled`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct SubsetSampler {
    indices: Arc<[usize]>,
    order: Order,
    index_bound: usize,
}

impl SubsetSampler {
    /// A sampler over `indices` (repetitions allowed) of a source of `source_len` samples.
    ///
    /// # Errors
    ///
    /// [`LoaderError::SubsetIndexOutOfRange`] if an index is not below `source_len`.
    pub fn new(indices: Vec<usize>, order: Order, source_len: usize) -> Result<Self, LoaderError> {
        if let Some((position, &index)) = indices
            .iter()
            .enumerate()
            .find(|&(_, &index)| index >= source_len)
        {
            return Err(LoaderError::SubsetIndexOutOfRange {
                position,
                index,
                source_len,
            });
        }
        let index_bound = indices.iter().max().map_or(0, |&largest| largest + 1);
        Ok(Self {
            indices: indices.into(),
            order,
            index_bound,
        })
    }
}

impl Sampler for SubsetSampler {
    fn len(&self) -> usize {
        self.indices.len()
    }

    fn index_bound(&self) -> usize {
        self.index_bound
    }

    fn epoch_indices(&self, seed: u64, epoch: u64) -> Vec<usize> {
        let mut indices = self.indices.to_vec();
        if self.order == Order::Shuffled {
            EpochRng::new(seed, epoch, Stream::Subset).shuffle(&mut indices);
        }
        indices
    }
}

/// Draws `num_samples` indices per epoch, index `i` with probability proportional to
/// `weights[i]` (PyTorch's `WeightedRandomSampler`).
///
/// With replacement the draws are independent. Without replacement the epoch is distributed
/// like successive draws that each remove the drawn index (Efraimidis and Spirakis' keys).
#[derive(Clone, Debug, PartialEq)]
pub struct WeightedRandomSampler {
    /// Inclusive prefix sums of the weights.
    cumulative: Arc<[f64]>,
    weights: Arc<[f64]>,
    num_samples: usize,
    replacement: Replacement,
    /// The largest index with a positive weight (draws that round up to the total land there).
    last_positive: usize,
    index_bound: usize,
}

impl WeightedRandomSampler {
    /// A weighted sampler over `weights.len()` indices.
    ///
    /// # Errors
    ///
    /// [`LoaderError::InvalidWeight`] for a negative, infinite or NaN weight,
    /// [`LoaderError::AllWeightsZero`] if samples are requested but every weight is 0, and
    /// [`LoaderError::NotEnoughWeightsWithoutReplacement`] if more samples are requested
    /// without replacement than there are positive weights.
    pub fn new(
        weights: Vec<f64>,
        num_samples: usize,
        replacement: Replacement,
    ) -> Result<Self, LoaderError> {
        if let Some((index, &weight)) = weights
            .iter()
            .enumerate()
            .find(|&(_, &weight)| !(weight.is_finite() && weight >= 0.0))
        {
            return Err(LoaderError::InvalidWeight { index, weight });
        }
        let positive_weights = weights.iter().filter(|&&weight| weight > 0.0).count();
        if num_samples > 0 && positive_weights == 0 {
            return Err(LoaderError::AllWeightsZero {
                weights: weights.len(),
            });
        }
        if replacement == Replacement::Without && num_samples > positive_weights {
            return Err(LoaderError::NotEnoughWeightsWithoutReplacement {
                requested: num_samples,
                positive_weights,
            });
        }
        let mut total = 0.0;
        let cumulative: Vec<f64> = weights
            .iter()
            .map(|&weight| {
                total += weight;
                total
            })
            .collect();
        let last_positive = weights
            .iter()
            .rposition(|&weight| weight > 0.0)
            .unwrap_or(0);
        let index_bound = if positive_weights == 0 {
            0
        } else {
            last_positive + 1
        };
        Ok(Self {
            cumulative: cumulative.into(),
            weights: weights.into(),
            num_samples,
            replacement,
            last_positive,
            index_bound,
        })
    }
}

impl Sampler for WeightedRandomSampler {
    fn len(&self) -> usize {
        self.num_samples
    }

    fn index_bound(&self) -> usize {
        self.index_bound
    }

    fn epoch_indices(&self, seed: u64, epoch: u64) -> Vec<usize> {
        if self.num_samples == 0 {
            return Vec::new();
        }
        match self.replacement {
            Replacement::With => {
                let mut rng = EpochRng::new(seed, epoch, Stream::WeightedWithReplacement);
                let total = self.cumulative.last().copied().unwrap_or(0.0);
                (0..self.num_samples)
                    .map(|_| {
                        let target = rng.unit_f64() * total;
                        self.cumulative
                            .partition_point(|&sum| sum <= target)
                            .min(self.last_positive)
                    })
                    .collect()
            }
            Replacement::Without => {
                let mut rng = EpochRng::new(seed, epoch, Stream::WeightedWithoutReplacement);
                // Key ln(u) / w, u uniform in (0, 1]: the largest keys are a weighted draw
                // without replacement, in draw order.
                let mut keyed: Vec<(f64, usize)> = self
                    .weights
                    .iter()
                    .enumerate()
                    .filter(|&(_, &weight)| weight > 0.0)
                    .map(|(index, &weight)| ((1.0 - rng.unit_f64()).ln() / weight, index))
                    .collect();
                keyed.sort_unstable_by(|left, right| {
                    right.0.total_cmp(&left.0).then(left.1.cmp(&right.1))
                });
                keyed
                    .into_iter()
                    .take(self.num_samples)
                    .map(|(_, index)| index)
                    .collect()
            }
        }
    }
}

/// This rank's share of each epoch when `world_size` processes train together, with the same
/// semantics as PyTorch's `DistributedSampler`: every rank computes the same order of the whole
/// dataset (shuffled from the seed and the epoch, or ascending), pads it by repeating its start
/// or drops its tail so that its length is a multiple of `world_size`, then takes every
/// `world_size`-th index starting at `rank`.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct DistributedSampler {
    source_len: usize,
    rank: usize,
    world_size: usize,
    order: Order,
    uneven: UnevenShards,
    samples_per_rank: usize,
}

impl DistributedSampler {
    /// The shard of `rank` (of `world_size`) of a source of `len` samples.
    ///
    /// # Errors
    ///
    /// [`LoaderError::ZeroWorldSize`] and [`LoaderError::RankOutOfRange`].
    pub fn new(
        len: usize,
        rank: usize,
        world_size: usize,
        order: Order,
        uneven: UnevenShards,
    ) -> Result<Self, LoaderError> {
        if world_size == 0 {
            return Err(LoaderError::ZeroWorldSize);
        }
        if rank >= world_size {
            return Err(LoaderError::RankOutOfRange { rank, world_size });
        }
        let samples_per_rank = match uneven {
            UnevenShards::Pad => len.div_ceil(world_size),
            UnevenShards::Drop => len / world_size,
        };
        Ok(Self {
            source_len: len,
            rank,
            world_size,
            order,
            uneven,
            samples_per_rank,
        })
    }

    /// The number of samples every rank gets per epoch.
    pub fn samples_per_rank(&self) -> usize {
        self.samples_per_rank
    }
}

impl Sampler for DistributedSampler {
    fn len(&self) -> usize {
        self.samples_per_rank
    }

    fn index_bound(&self) -> usize {
        self.source_len
    }

    fn epoch_indices(&self, seed: u64, epoch: u64) -> Vec<usize> {
        let mut whole: Vec<usize> = (0..self.source_len).collect();
        if self.order == Order::Shuffled {
            EpochRng::new(seed, epoch, Stream::Distributed).shuffle(&mut whole);
        }
        let total = self.samples_per_rank * self.world_size;
        match self.uneven {
            UnevenShards::Pad => {
                // Repeat the order from its start (as many times as needed) up to `total`.
                if !whole.is_empty() {
                    let mut next = 0;
                    while whole.len() < total {
                        whole.push(whole[next]);
                        next += 1;
                    }
                }
            }
            UnevenShards::Drop => whole.truncate(total),
        }
        whole
            .into_iter()
            .skip(self.rank)
            .step_by(self.world_size)
            .collect()
    }
}

/// The number of batches an epoch of `samples` samples makes.
pub fn batch_count(samples: usize, batch_size: NonZeroUsize, drop_last: bool) -> usize {
    if drop_last {
        samples / batch_size.get()
    } else {
        samples.div_ceil(batch_size.get())
    }
}

/// Groups a sampler's indices into batches of `batch_size`, the last one shorter unless
/// `drop_last` (PyTorch's `BatchSampler`).
#[derive(Clone, Debug)]
pub struct BatchSampler<S> {
    sampler: S,
    batch_size: NonZeroUsize,
    drop_last: bool,
}

impl<S: Sampler> BatchSampler<S> {
    /// Batches of `batch_size` indices drawn from `sampler`.
    pub fn new(sampler: S, batch_size: NonZeroUsize, drop_last: bool) -> Self {
        Self {
            sampler,
            batch_size,
            drop_last,
        }
    }

    /// The number of batches per epoch.
    pub fn len(&self) -> usize {
        batch_count(self.sampler.len(), self.batch_size, self.drop_last)
    }

    /// Whether an epoch has no batch.
    pub fn is_empty(&self) -> bool {
        self.len() == 0
    }

    /// The batches of `epoch`, in order.
    pub fn epoch_batches(&self, seed: u64, epoch: u64) -> Vec<Vec<usize>> {
        let indices = self.sampler.epoch_indices(seed, epoch);
        indices
            .chunks(self.batch_size.get())
            .take(self.len())
            .map(<[usize]>::to_vec)
            .collect()
    }
}

/// Which sampler a [`Loader`](crate::Loader) uses; the length-dependent ones are built when the
/// loader knows its source.
#[derive(Clone, Debug, Default)]
pub enum Sampling {
    /// [`SequentialSampler`] over the whole source.
    Sequential,
    /// [`ShuffledSampler`] over the whole source (the default).
    #[default]
    Shuffled,
    /// [`SubsetSampler`] over the given indices.
    Subset {
        /// The indices, each below the source's length.
        indices: Vec<usize>,
        /// Their order.
        order: Order,
    },
    /// [`WeightedRandomSampler`]; `weights[i]` weighs sample `i`.
    WeightedRandom {
        /// One non-negative weight per sample (at most the source's length of them).
        weights: Vec<f64>,
        /// Samples drawn per epoch.
        num_samples: usize,
        /// Whether an index may be drawn twice in one epoch.
        replacement: Replacement,
    },
    /// [`DistributedSampler`] over the whole source.
    Distributed {
        /// This process's rank, below `world_size`.
        rank: usize,
        /// The number of processes.
        world_size: usize,
        /// Ascending or shuffled each epoch (the same permutation on every rank).
        order: Order,
        /// Padding or dropping so every rank gets the same count.
        uneven: UnevenShards,
    },
    /// A sampler of your own.
    Custom(Arc<dyn Sampler>),
}

impl Sampling {
    /// Builds the sampler for a source of `source_len` samples and checks that it stays in
    /// range.
    ///
    /// # Errors
    ///
    /// The sampler constructors' errors, and [`LoaderError::SamplerOutOfRange`] when the
    /// sampler may yield an index at or past `source_len`.
    pub fn build(&self, source_len: usize) -> Result<Arc<dyn Sampler>, LoaderError> {
        let sampler: Arc<dyn Sampler> = match self {
            Sampling::Sequential => Arc::new(SequentialSampler::new(source_len)),
            Sampling::Shuffled => Arc::new(ShuffledSampler::new(source_len)),
            Sampling::Subset { indices, order } => {
                Arc::new(SubsetSampler::new(indices.clone(), *order, source_len)?)
            }
            Sampling::WeightedRandom {
                weights,
                num_samples,
                replacement,
            } => Arc::new(WeightedRandomSampler::new(
                weights.clone(),
                *num_samples,
                *replacement,
            )?),
            Sampling::Distributed {
                rank,
                world_size,
                order,
                uneven,
            } => Arc::new(DistributedSampler::new(
                source_len,
                *rank,
                *world_size,
                *order,
                *uneven,
            )?),
            Sampling::Custom(sampler) => Arc::clone(sampler),
        };
        if sampler.index_bound() > source_len {
            return Err(LoaderError::SamplerOutOfRange {
                index_bound: sampler.index_bound(),
                source_len,
            });
        }
        Ok(sampler)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn size(value: usize) -> NonZeroUsize {
        NonZeroUsize::new(value).unwrap()
    }

    #[test]
    fn sequential_counts_up() {
        assert_eq!(
            SequentialSampler::new(4).epoch_indices(9, 9),
            vec![0, 1, 2, 3]
        );
    }

    #[test]
    fn shuffled_changes_with_the_epoch_and_repeats_with_the_seed() {
        let sampler = ShuffledSampler::new(50);
        let epoch_0 = sampler.epoch_indices(5, 0);
        assert_eq!(epoch_0, sampler.epoch_indices(5, 0));
        assert_ne!(epoch_0, sampler.epoch_indices(5, 1));
        assert_ne!(epoch_0, sampler.epoch_indices(6, 0));
    }

    #[test]
    fn shuffled_epoch_zero_of_seed_zero_is_pinned() {
        // Pins the generator: a change here would change every resumed run's batches.
        let sampler = ShuffledSampler::new(10);
        assert_eq!(
            sampler.epoch_indices(0, 0),
            vec![1, 8, 4, 5, 7, 9, 6, 3, 2, 0]
        );
    }

    #[test]
    fn subset_keeps_or_shuffles_its_indices() {
        let sampler = SubsetSampler::new(vec![7, 3, 3, 9], Order::AsGiven, 10).unwrap();
        assert_eq!(sampler.epoch_indices(1, 1), vec![7, 3, 3, 9]);
        assert_eq!(sampler.index_bound(), 10);
        let shuffled = SubsetSampler::new((0..40).collect(), Order::Shuffled, 40).unwrap();
        let mut indices = shuffled.epoch_indices(1, 1);
        assert_ne!(indices, (0..40).collect::<Vec<_>>());
        indices.sort_unstable();
        assert_eq!(indices, (0..40).collect::<Vec<_>>());
    }

    #[test]
    fn subset_rejects_an_index_out_of_range() {
        let error = SubsetSampler::new(vec![1, 10], Order::AsGiven, 10).unwrap_err();
        assert!(matches!(
            error,
            LoaderError::SubsetIndexOutOfRange {
                position: 1,
                index: 10,
                source_len: 10
            }
        ));
    }

    #[test]
    fn weighted_with_replacement_follows_the_weights_and_never_draws_zero_weights() {
        let sampler =
            WeightedRandomSampler::new(vec![1.0, 0.0, 3.0, 0.0], 40_000, Replacement::With)
                .unwrap();
        let indices = sampler.epoch_indices(3, 0);
        assert_eq!(indices.len(), 40_000);
        let mut counts = [0usize; 4];
        for index in indices {
            counts[index] += 1;
        }
        assert_eq!(counts[1], 0);
        assert_eq!(counts[3], 0);
        // Expect 10 000 and 30 000.
        assert!((9_400..10_600).contains(&counts[0]), "{counts:?}");
        assert!((29_400..30_600).contains(&counts[2]), "{counts:?}");
        assert_eq!(sampler.index_bound(), 3);
    }

    #[test]
    fn weighted_without_replacement_draws_distinct_positive_indices() {
        let sampler =
            WeightedRandomSampler::new(vec![1.0, 0.0, 5.0, 2.0, 0.5], 4, Replacement::Without)
                .unwrap();
        let mut indices = sampler.epoch_indices(11, 2);
        indices.sort_unstable();
        assert_eq!(indices, vec![0, 2, 3, 4]);
    }

    #[test]
    fn weighted_without_replacement_favours_heavy_indices_first() {
        // Index 1 weighs 99 times index 0: it comes first far more often.
        let sampler = WeightedRandomSampler::new(vec![1.0, 99.0], 2, Replacement::Without).unwrap();
        let heavy_first = (0..1000)
            .filter(|&epoch| sampler.epoch_indices(0, epoch)[0] == 1)
            .count();
        assert!(heavy_first > 950, "{heavy_first}");
    }

    #[test]
    fn weighted_rejects_bad_weights() {
        assert!(matches!(
            WeightedRandomSampler::new(vec![1.0, -1.0], 1, Replacement::With),
            Err(LoaderError::InvalidWeight { index: 1, .. })
        ));
        assert!(matches!(
            WeightedRandomSampler::new(vec![f64::NAN], 1, Replacement::With),
            Err(LoaderError::InvalidWeight { index: 0, .. })
        ));
        assert!(matches!(
            WeightedRandomSampler::new(vec![0.0, 0.0], 1, Replacement::With),
            Err(LoaderError::AllWeightsZero { weights: 2 })
        ));
        assert!(matches!(
            WeightedRandomSampler::new(vec![1.0, 0.0, 1.0], 3, Replacement::Without),
            Err(LoaderError::NotEnoughWeightsWithoutReplacement {
                requested: 3,
                positive_weights: 2
            })
        ));
    }

    #[test]
    fn distributed_matches_pytorch_with_padding() {
        // PyTorch: DistributedSampler(range(10), num_replicas=4, rank=r, shuffle=False)
        // yields [0, 4, 8], [1, 5, 9], [2, 6, 0], [3, 7, 1].
        let expected = [[0, 4, 8], [1, 5, 9], [2, 6, 0], [3, 7, 1]];
        for (rank, expected) in expected.iter().enumerate() {
            let sampler =
                DistributedSampler::new(10, rank, 4, Order::AsGiven, UnevenShards::Pad).unwrap();
            assert_eq!(sampler.epoch_indices(0, 0), expected.to_vec());
        }
    }

    #[test]
    fn distributed_matches_pytorch_when_dropping() {
        // PyTorch with drop_last=True: [0, 4], [1, 5], [2, 6], [3, 7].
        for rank in 0..4 {
            let sampler =
                DistributedSampler::new(10, rank, 4, Order::AsGiven, UnevenShards::Drop).unwrap();
            assert_eq!(sampler.epoch_indices(0, 0), vec![rank, rank + 4]);
        }
    }

    #[test]
    fn distributed_pads_by_repeating_a_short_dataset() {
        // 2 samples over 5 ranks: the order 0 1 is repeated to 0 1 0 1 0.
        let shards: Vec<Vec<usize>> = (0..5)
            .map(|rank| {
                DistributedSampler::new(2, rank, 5, Order::AsGiven, UnevenShards::Pad)
                    .unwrap()
                    .epoch_indices(0, 0)
            })
            .collect();
        assert_eq!(shards, vec![vec![0], vec![1], vec![0], vec![1], vec![0]]);
    }

    #[test]
    fn distributed_rejects_bad_ranks() {
        assert!(matches!(
            DistributedSampler::new(10, 0, 0, Order::AsGiven, UnevenShards::Pad),
            Err(LoaderError::ZeroWorldSize)
        ));
        assert!(matches!(
            DistributedSampler::new(10, 2, 2, Order::AsGiven, UnevenShards::Pad),
            Err(LoaderError::RankOutOfRange {
                rank: 2,
                world_size: 2
            })
        ));
    }

    #[test]
    fn batch_sampler_keeps_or_drops_the_tail() {
        let keep = BatchSampler::new(SequentialSampler::new(7), size(3), false);
        assert_eq!(keep.len(), 3);
        assert_eq!(
            keep.epoch_batches(0, 0),
            vec![vec![0, 1, 2], vec![3, 4, 5], vec![6]]
        );
        let drop = BatchSampler::new(SequentialSampler::new(7), size(3), true);
        assert_eq!(drop.len(), 2);
        assert_eq!(drop.epoch_batches(0, 0), vec![vec![0, 1, 2], vec![3, 4, 5]]);
    }

    #[test]
    fn sampling_checks_custom_samplers_against_the_source() {
        let custom = Sampling::Custom(Arc::new(SequentialSampler::new(20)));
        assert!(matches!(
            custom.build(10),
            Err(LoaderError::SamplerOutOfRange {
                index_bound: 20,
                source_len: 10
            })
        ));
        let weighted = Sampling::WeightedRandom {
            weights: vec![1.0; 11],
            num_samples: 4,
            replacement: Replacement::With,
        };
        assert!(matches!(
            weighted.build(10),
            Err(LoaderError::SamplerOutOfRange { .. })
        ));
        assert_eq!(Sampling::Shuffled.build(10).unwrap().len(), 10);
    }
}
