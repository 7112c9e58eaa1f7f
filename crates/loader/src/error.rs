//! The crate's one error type.

use crate::source::ImageShape;

/// A boxed error from a data source the loader does not know (for example a Burn
/// [`Dataset`](burn::data::dataset::Dataset) whose `get` failed).
pub type BoxedSourceError = Box<dyn std::error::Error + Send + Sync + 'static>;

/// Everything that can go wrong while configuring a loader or producing its batches.
///
/// Configuration mistakes are reported by [`Loader::new`](crate::Loader::new) (and the sampler
/// constructors) before any batch is made; failures while reading samples, a worker thread that
/// panicked, or a resume state that does not fit are reported as an `Err` item of the epoch's
/// iterator, after which that epoch yields nothing more.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LoaderError {
    /// `batch_size` is 0.
    #[error("the batch size must be at least 1")]
    ZeroBatchSize,
    /// `prefetch` is 0 while `num_workers` is not (each worker needs room for one batch).
    #[error("prefetch must be at least 1 when there are workers ({num_workers} configured)")]
    ZeroPrefetch {
        /// The configured number of workers.
        num_workers: usize,
    },
    /// A normalization's standard deviation is not a positive finite number, or its mean is
    /// not finite.
    #[error(
        "invalid normalization of channel {channel}: mean {mean} must be finite and standard \
         deviation {standard_deviation} positive and finite"
    )]
    InvalidNormalization {
        /// The channel (0 for a [`Normalization`](crate::Normalization), which has one).
        channel: usize,
        /// The configured mean.
        mean: f32,
        /// The configured standard deviation.
        standard_deviation: f32,
    },
    /// A per-channel normalization was given no channel, or more than it holds.
    #[error("a per-channel normalization holds 1 to {maximum} channels; {given} were given")]
    NormalizationChannelCount {
        /// The number of channels given.
        given: usize,
        /// [`ChannelNormalization::MAX_CHANNELS`](crate::ChannelNormalization::MAX_CHANNELS).
        maximum: usize,
    },
    /// The normalization has statistics for another number of channels than the source's
    /// images have.
    #[error(
        "the normalization has statistics for {normalization_channels} channel(s) but the \
         source's images ({shape}) have {}",
        shape.channels
    )]
    NormalizationChannelMismatch {
        /// Channels the normalization describes.
        normalization_channels: usize,
        /// The source's image shape.
        shape: ImageShape,
    },
    /// A random crop's padding is larger than the image's height or width.
    #[error(
        "a random crop with padding {padding} does not fit images of {shape} (the padding \
         must be at most the height and the width)"
    )]
    CropPaddingTooLarge {
        /// The configured padding.
        padding: usize,
        /// The source's image shape.
        shape: ImageShape,
    },
    /// A [`SampleTransform`](crate::SampleTransform) was configured with
    /// [`PixelFormat::RawU8`](crate::PixelFormat::RawU8): transforms write `f32` pixels.
    #[error("a sample transform writes f32 pixels, but the loader is configured for raw u8 pixels")]
    TransformNeedsFloatPixels,
    /// The source's images have no pixels (a channel count, height or width of 0), or more
    /// than a `usize` can count.
    #[error("the source's images have no pixels or too many to count ({shape})")]
    EmptyImages {
        /// The image shape.
        shape: ImageShape,
    },
    /// A batch of this size would hold more elements than a `usize` can count.
    #[error("a batch of {batch_size} images of {pixels_per_image} pixels is too large")]
    BatchTooLarge {
        /// The configured batch size.
        batch_size: usize,
        /// Pixels per image.
        pixels_per_image: usize,
    },
    /// A distributed sampler was given `world_size == 0`.
    #[error("a distributed sampler needs a world size of at least 1")]
    ZeroWorldSize,
    /// A distributed sampler's `rank` is not below its `world_size`.
    #[error("rank {rank} is out of range for a world size of {world_size}")]
    RankOutOfRange {
        /// The configured rank.
        rank: usize,
        /// The configured world size.
        world_size: usize,
    },
    /// A subset sampler names an index that is not below the number of samples it may use.
    #[error(
        "subset index {index} (at position {position}) is out of range for a source of \
         {source_len} samples"
    )]
    SubsetIndexOutOfRange {
        /// Position of the offending index in the subset.
        position: usize,
        /// The offending index.
        index: usize,
        /// The number of samples of the source.
        source_len: usize,
    },
    /// A weight of a weighted random sampler is negative, infinite or NaN.
    #[error("weight {weight} of sample {index} is not a finite non-negative number")]
    InvalidWeight {
        /// Position of the weight (the sample index it weighs).
        index: usize,
        /// The weight.
        weight: f64,
    },
    /// Every weight of a weighted random sampler is 0 but samples were requested.
    #[error("all {weights} sampling weights are zero")]
    AllWeightsZero {
        /// The number of weights.
        weights: usize,
    },
    /// Sampling without replacement was asked for more samples than there are positive weights.
    #[error(
        "cannot draw {requested} samples without replacement from {positive_weights} \
         positive weights"
    )]
    NotEnoughWeightsWithoutReplacement {
        /// The number of samples requested per epoch.
        requested: usize,
        /// The number of positive weights.
        positive_weights: usize,
    },
    /// The sampler produces indices up to `index_bound` (exclusive) but the source is shorter.
    #[error(
        "the sampler draws indices below {index_bound} but the source has only \
         {source_len} samples"
    )]
    SamplerOutOfRange {
        /// One past the largest index the sampler may produce.
        index_bound: usize,
        /// The number of samples of the source.
        source_len: usize,
    },
    /// A sample's image was not written in full, or has a different size than the source's
    /// image shape announces.
    #[error("sample {index} has {actual} pixels where the source announces {expected}")]
    SampleSizeMismatch {
        /// The sample index.
        index: usize,
        /// Pixels per image announced by the source.
        expected: usize,
        /// Pixels actually provided.
        actual: usize,
    },
    /// Reading sample `index` from the source failed.
    #[error("reading sample {index} from the source failed")]
    Source {
        /// The sample index.
        index: usize,
        /// What the source reported.
        source: BoxedSourceError,
    },
    /// A label is not below the configured class count
    /// ([`LoaderConfig::class_count`](crate::LoaderConfig::class_count)).
    #[error("sample {index} has label {label}, but there are only {class_count} classes (labels 0 to {})", class_count.saturating_sub(1))]
    LabelOutOfRange {
        /// The sample index.
        index: usize,
        /// The label read.
        label: i64,
        /// The configured number of classes.
        class_count: usize,
    },
    /// The source's data changed while batches were read from it (a mapped file truncated or
    /// replaced, say): the batch was not delivered. The source's own error says what changed.
    #[error(transparent)]
    SourceChanged(BoxedSourceError),
    /// More worker threads than the loader starts.
    #[error("{requested} loader workers asked for; at most {maximum} are started")]
    TooManyWorkers {
        /// The configured number of workers.
        requested: usize,
        /// The most the loader starts.
        maximum: usize,
    },
    /// A deeper prefetch queue than the loader allocates.
    #[error("a prefetch of {requested} batches per worker asked for; at most {maximum}")]
    PrefetchTooDeep {
        /// The configured prefetch.
        requested: usize,
        /// The most the loader allows.
        maximum: usize,
    },
    /// A worker thread could not be started.
    #[error("could not start loader worker {worker}")]
    SpawnWorker {
        /// The worker's number.
        worker: usize,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// A worker thread panicked while making a batch; the epoch stopped.
    #[error("loader worker {worker} panicked while making batch {batch}: {message}")]
    WorkerPanicked {
        /// The worker's number.
        worker: usize,
        /// The batch it was making (0-based, counted from the start of the epoch).
        batch: usize,
        /// The panic message, when it was a string.
        message: String,
    },
    /// A worker thread ended without delivering its next batch or an error.
    #[error("loader worker {worker} stopped without delivering its next batch")]
    WorkerVanished {
        /// The worker's number.
        worker: usize,
    },
    /// A resume state was made with another seed than the loader's.
    #[error(
        "the resume state was made with seed {state_seed} but the loader uses seed \
         {loader_seed}"
    )]
    StateSeedMismatch {
        /// The seed stored in the state.
        state_seed: u64,
        /// The loader's configured seed.
        loader_seed: u64,
    },
    /// A resume state's position is past the end of its epoch.
    #[error(
        "the resume state's position {position} is past the end of an epoch of \
         {epoch_len} samples"
    )]
    StatePositionOutOfRange {
        /// The position stored in the state (samples of the epoch already delivered).
        position: u64,
        /// The number of samples of that epoch.
        epoch_len: usize,
    },
    /// A batch was asked for tensors of a rank other than 2 (`[B, C*H*W]`), 3 (`[B, H, W]`,
    /// one-channel images only) or 4 (`[B, C, H, W]`).
    #[error(
        "image tensors of rank {rank} are not supported (use 2: [B, C*H*W], 3: [B, H, W] \
         or 4: [B, C, H, W])"
    )]
    UnsupportedTensorRank {
        /// The rank asked for.
        rank: usize,
    },
    /// Rank-3 tensors (`[B, H, W]`) were asked of images with more than one channel.
    #[error(
        "image tensors of rank {rank} ([B, H, W]) hold one channel, but the images have \
         {channels} (use rank 4: [B, C, H, W], or 2: [B, C*H*W])"
    )]
    TensorRankNeedsOneChannel {
        /// The rank asked for.
        rank: usize,
        /// The images' channels.
        channels: usize,
    },
    /// Float tensors were asked of a raw `u8` batch, or raw tensors of a float batch.
    #[error("{requested} tensors were asked of a loader configured for {configured} pixels")]
    PixelFormatMismatch {
        /// What was asked for.
        requested: &'static str,
        /// What the loader was configured to produce.
        configured: &'static str,
    },
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
