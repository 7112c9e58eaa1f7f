//! The crate's one error type.

use std::fmt;

/// A boxed error from a data source the loader does not know (for example a Burn
/// [`Dataset`](burn::data::dataset::Dataset) whose `get` failed).
pub type BoxedSourceError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Everything that can go wrong while configuring a loader or producing its batches.
///
/// Configuration mistakes are reported by [`Loader::new`](crate::Loader::new) (and the sampler
/// constructors) before any batch is made; failures while reading samples, a worker thread that
/// panicked, or a resume state that does not fit are reported as an `Err` item of the epoch's
/// iterator, after which that epoch yields nothing more.
#[derive(Debug)]
#[non_exhaustive]
pub enum LoaderError {
    /// `batch_size` is 0.
    ZeroBatchSize,
    /// `prefetch` is 0 while `num_workers` is not (each worker needs room for one batch).
    ZeroPrefetch {
        /// The configured number of workers.
        num_workers: usize,
    },
    /// The normalization's standard deviation is not a positive finite number, or its mean is not
    /// finite.
    InvalidNormalization {
        /// The configured mean.
        mean: f32,
        /// The configured standard deviation.
        standard_deviation: f32,
    },
    /// The source's images have no pixels (a height or a width of 0).
    EmptyImages {
        /// The image height.
        height: usize,
        /// The image width.
        width: usize,
    },
    /// A batch of this size would hold more elements than a `usize` can count.
    BatchTooLarge {
        /// The configured batch size.
        batch_size: usize,
        /// Pixels per image.
        pixels_per_image: usize,
    },
    /// A distributed sampler was given `world_size == 0`.
    ZeroWorldSize,
    /// A distributed sampler's `rank` is not below its `world_size`.
    RankOutOfRange {
        /// The configured rank.
        rank: usize,
        /// The configured world size.
        world_size: usize,
    },
    /// A subset sampler names an index that is not below the number of samples it may use.
    SubsetIndexOutOfRange {
        /// Position of the offending index in the subset.
        position: usize,
        /// The offending index.
        index: usize,
        /// The number of samples of the source.
        source_len: usize,
    },
    /// A weight of a weighted random sampler is negative, infinite or NaN.
    InvalidWeight {
        /// Position of the weight (the sample index it weighs).
        index: usize,
        /// The weight.
        weight: f64,
    },
    /// Every weight of a weighted random sampler is 0 but samples were requested.
    AllWeightsZero {
        /// The number of weights.
        weights: usize,
    },
    /// Sampling without replacement was asked for more samples than there are positive weights.
    NotEnoughWeightsWithoutReplacement {
        /// The number of samples requested per epoch.
        requested: usize,
        /// The number of positive weights.
        positive_weights: usize,
    },
    /// The sampler produces indices up to `index_bound` (exclusive) but the source is shorter.
    SamplerOutOfRange {
        /// One past the largest index the sampler may produce.
        index_bound: usize,
        /// The number of samples of the source.
        source_len: usize,
    },
    /// A sample's image was not written in full, or has a different size than the source's
    /// image shape announces.
    SampleSizeMismatch {
        /// The sample index.
        index: usize,
        /// Pixels per image announced by the source.
        expected: usize,
        /// Pixels actually provided.
        actual: usize,
    },
    /// Reading sample `index` from the source failed.
    Source {
        /// The sample index.
        index: usize,
        /// What the source reported.
        source: BoxedSourceError,
    },
    /// A worker thread could not be started.
    SpawnWorker {
        /// The worker's number.
        worker: usize,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A worker thread panicked while making a batch; the epoch stopped.
    WorkerPanicked {
        /// The worker's number.
        worker: usize,
        /// The batch it was making (0-based, counted from the start of the epoch).
        batch: usize,
        /// The panic message, when it was a string.
        message: String,
    },
    /// A worker thread ended without delivering its next batch or an error.
    WorkerVanished {
        /// The worker's number.
        worker: usize,
    },
    /// A resume state was made with another seed than the loader's.
    StateSeedMismatch {
        /// The seed stored in the state.
        state_seed: u64,
        /// The loader's configured seed.
        loader_seed: u64,
    },
    /// A resume state's position is past the end of its epoch.
    StatePositionOutOfRange {
        /// The position stored in the state (samples of the epoch already delivered).
        position: u64,
        /// The number of samples of that epoch.
        epoch_len: usize,
    },
    /// A batch was asked for tensors of a rank other than 2 (`[B, H*W]`), 3 (`[B, H, W]`) or
    /// 4 (`[B, 1, H, W]`).
    UnsupportedTensorRank {
        /// The rank asked for.
        rank: usize,
    },
    /// Float tensors were asked of a raw `u8` batch, or raw tensors of a float batch.
    PixelFormatMismatch {
        /// What was asked for.
        requested: &'static str,
        /// What the loader was configured to produce.
        configured: &'static str,
    },
}

impl fmt::Display for LoaderError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            LoaderError::ZeroBatchSize => write!(formatter, "the batch size must be at least 1"),
            LoaderError::ZeroPrefetch { num_workers } => write!(
                formatter,
                "prefetch must be at least 1 when there are workers ({num_workers} configured)"
            ),
            LoaderError::InvalidNormalization {
                mean,
                standard_deviation,
            } => write!(
                formatter,
                "invalid normalization: mean {mean} must be finite and standard deviation \
                 {standard_deviation} positive and finite"
            ),
            LoaderError::EmptyImages { height, width } => write!(
                formatter,
                "the source's images have no pixels ({height} x {width})"
            ),
            LoaderError::BatchTooLarge {
                batch_size,
                pixels_per_image,
            } => write!(
                formatter,
                "a batch of {batch_size} images of {pixels_per_image} pixels is too large"
            ),
            LoaderError::ZeroWorldSize => {
                write!(
                    formatter,
                    "a distributed sampler needs a world size of at least 1"
                )
            }
            LoaderError::RankOutOfRange { rank, world_size } => write!(
                formatter,
                "rank {rank} is out of range for a world size of {world_size}"
            ),
            LoaderError::SubsetIndexOutOfRange {
                position,
                index,
                source_len,
            } => write!(
                formatter,
                "subset index {index} (at position {position}) is out of range for a source of \
                 {source_len} samples"
            ),
            LoaderError::InvalidWeight { index, weight } => write!(
                formatter,
                "weight {weight} of sample {index} is not a finite non-negative number"
            ),
            LoaderError::AllWeightsZero { weights } => {
                write!(formatter, "all {weights} sampling weights are zero")
            }
            LoaderError::NotEnoughWeightsWithoutReplacement {
                requested,
                positive_weights,
            } => write!(
                formatter,
                "cannot draw {requested} samples without replacement from {positive_weights} \
                 positive weights"
            ),
            LoaderError::SamplerOutOfRange {
                index_bound,
                source_len,
            } => write!(
                formatter,
                "the sampler draws indices below {index_bound} but the source has only \
                 {source_len} samples"
            ),
            LoaderError::SampleSizeMismatch {
                index,
                expected,
                actual,
            } => write!(
                formatter,
                "sample {index} has {actual} pixels where the source announces {expected}"
            ),
            LoaderError::Source { index, .. } => {
                write!(formatter, "reading sample {index} from the source failed")
            }
            LoaderError::SpawnWorker { worker, .. } => {
                write!(formatter, "could not start loader worker {worker}")
            }
            LoaderError::WorkerPanicked {
                worker,
                batch,
                message,
            } => write!(
                formatter,
                "loader worker {worker} panicked while making batch {batch}: {message}"
            ),
            LoaderError::WorkerVanished { worker } => write!(
                formatter,
                "loader worker {worker} stopped without delivering its next batch"
            ),
            LoaderError::StateSeedMismatch {
                state_seed,
                loader_seed,
            } => write!(
                formatter,
                "the resume state was made with seed {state_seed} but the loader uses seed \
                 {loader_seed}"
            ),
            LoaderError::StatePositionOutOfRange {
                position,
                epoch_len,
            } => write!(
                formatter,
                "the resume state's position {position} is past the end of an epoch of \
                 {epoch_len} samples"
            ),
            LoaderError::UnsupportedTensorRank { rank } => write!(
                formatter,
                "image tensors of rank {rank} are not supported (use 2: [B, H*W], 3: [B, H, W] \
                 or 4: [B, 1, H, W])"
            ),
            LoaderError::PixelFormatMismatch {
                requested,
                configured,
            } => write!(
                formatter,
                "{requested} tensors were asked of a loader configured for {configured} pixels"
            ),
        }
    }
}

impl std::error::Error for LoaderError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            LoaderError::Source { source, .. } => Some(source.as_ref()),
            LoaderError::SpawnWorker { source, .. } => Some(source),
            _ => None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use std::error::Error as _;

    #[test]
    fn source_errors_keep_their_cause() {
        let error = LoaderError::Source {
            index: 7,
            source: Box::new(std::io::Error::other("disk on fire")),
        };
        assert_eq!(error.to_string(), "reading sample 7 from the source failed");
        assert_eq!(error.source().unwrap().to_string(), "disk on fire");
    }

    #[test]
    fn configuration_errors_have_no_cause_and_name_the_values() {
        let error = LoaderError::RankOutOfRange {
            rank: 4,
            world_size: 4,
        };
        assert!(error.source().is_none());
        assert!(error.to_string().contains("rank 4"));
    }

    #[test]
    fn errors_cross_threads() {
        fn assert_send_sync<T: Send + Sync + 'static>() {}
        assert_send_sync::<LoaderError>();
    }
}
