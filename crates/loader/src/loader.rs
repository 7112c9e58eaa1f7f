//! The loader, its configuration, and the borrowing epoch.

use std::fmt;
use std::num::NonZeroUsize;
use std::sync::Arc;
use std::thread::{Scope, ScopedJoinHandle};

use crate::augment::{Augmentation, SampleSteps, SampleTransform};
use crate::batch::Batch;
use crate::convert::{ChannelNormalization, Normalization, PixelFormat};
use crate::epoch::{EpochCore, EpochPlan, PlanSettings, WorkerContext};
use crate::error::LoaderError;
use crate::pool::{Category, MemoryAccounting, MemoryReport, Tracked};
use crate::sampler::{Sampler, Sampling, batch_count};
use crate::source::{ImageShape, ImageSource};
use crate::state::LoaderState;

/// How a [`Loader`] samples, batches, converts, augments and prefetches.
#[derive(Clone)]
pub struct LoaderConfig {
    /// Samples per batch (at least 1).
    pub batch_size: usize,
    /// Whether to drop the last batch of an epoch when it is shorter than `batch_size`.
    pub drop_last: bool,
    /// Which sampler chooses each epoch's indices.
    pub sampling: Sampling,
    /// The run's seed; every epoch's order derives from it and the epoch number only.
    pub seed: u64,
    /// Worker threads making batches ahead of the consumer; 0 makes them on the consumer's
    /// thread, when asked for.
    pub num_workers: usize,
    /// Finished batches each worker's queue holds (at least 1 when there are workers); a
    /// worker waits when its queue is full, so at most `prefetch + 1` batches per worker are in
    /// flight (the one it is making included).
    pub prefetch: usize,
    /// What pixels become.
    pub pixel_format: PixelFormat,
    /// The number of classes, when known: every label read must then be below it, and a label
    /// that is not (a labels file changed or mislabelled) ends the epoch with
    /// [`LoaderError::LabelOutOfRange`] instead of reaching the model. `None` checks nothing.
    pub class_count: Option<usize>,
    /// Random crops and flips, drawn per sample from `(seed, epoch, sample index)` and fused
    /// into the conversion ([`Augmentation::NONE`] by default).
    pub augmentation: Augmentation,
    /// Your own per-sample step, run after the conversion and augmentation on the worker that
    /// makes the batch (see [`SampleTransform`] for what it must keep); float formats only.
    pub transform: Option<Arc<dyn SampleTransform>>,
}

impl fmt::Debug for LoaderConfig {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("LoaderConfig")
            .field("batch_size", &self.batch_size)
            .field("drop_last", &self.drop_last)
            .field("sampling", &self.sampling)
            .field("seed", &self.seed)
            .field("num_workers", &self.num_workers)
            .field("prefetch", &self.prefetch)
            .field("pixel_format", &self.pixel_format)
            .field("class_count", &self.class_count)
            .field("augmentation", &self.augmentation)
            .field(
                "transform",
                &self.transform.as_ref().map(|_| "SampleTransform"),
            )
            .finish()
    }
}

impl Default for LoaderConfig {
    /// Batches of 64, shuffled with seed 0, `f32` pixels in `[0, 1]`, no worker, prefetch 2,
    /// no augmentation or transform.
    fn default() -> Self {
        Self {
            batch_size: 64,
            drop_last: false,
            sampling: Sampling::Shuffled,
            seed: 0,
            num_workers: 0,
            prefetch: 2,
            pixel_format: PixelFormat::UnitF32,
            class_count: None,
            augmentation: Augmentation::NONE,
            transform: None,
        }
    }
}

impl LoaderConfig {
    /// The most worker threads a loader starts ([`LoaderError::TooManyWorkers`] beyond).
    pub const MAX_WORKERS: usize = 1024;
    /// The deepest per-worker queue a loader allocates ([`LoaderError::PrefetchTooDeep`]
    /// beyond): each slot of a queue is allocated when the epoch starts.
    pub const MAX_PREFETCH: usize = 1024;

    /// The MNIST training recipe: batches of 64, shuffled with `seed`, pixels normalized with
    /// MNIST's mean and standard deviation.
    pub fn mnist_training(seed: u64) -> Self {
        Self {
            seed,
            pixel_format: PixelFormat::NormalizedF32(Normalization::MNIST),
            ..Self::default()
        }
    }

    /// The MNIST evaluation recipe: batches of 64 in order, pixels normalized like in training.
    pub fn mnist_evaluation() -> Self {
        Self {
            sampling: Sampling::Sequential,
            ..Self::mnist_training(0)
        }
    }

    /// The CIFAR-10 training recipe: batches of 64, shuffled with `seed`, pixels normalized
    /// per channel with CIFAR-10's statistics, a random crop of 32 with padding 4 and a random
    /// horizontal flip ([`Augmentation::CIFAR`]).
    pub fn cifar_training(seed: u64) -> Self {
        Self {
            seed,
            pixel_format: PixelFormat::ChannelNormalizedF32(ChannelNormalization::CIFAR10),
            augmentation: Augmentation::CIFAR,
            ..Self::default()
        }
    }

    /// The CIFAR-10 evaluation recipe: batches of 64 in order, normalized like in training,
    /// not augmented.
    pub fn cifar_evaluation() -> Self {
        Self {
            sampling: Sampling::Sequential,
            augmentation: Augmentation::NONE,
            ..Self::cifar_training(0)
        }
    }
}

/// A validated configuration with its sampler built, shared by [`Loader`] and the Burn
/// adapter.
#[derive(Debug)]
pub(crate) struct LoaderCore {
    pub(crate) config: LoaderConfig,
    pub(crate) sampler: Arc<dyn Sampler>,
    pub(crate) settings: PlanSettings,
    pub(crate) accounting: Arc<MemoryAccounting>,
}

impl LoaderCore {
    pub(crate) fn new<S: ImageSource + ?Sized>(
        source: &S,
        config: LoaderConfig,
    ) -> Result<Self, LoaderError> {
        let batch_size = NonZeroUsize::new(config.batch_size).ok_or(LoaderError::ZeroBatchSize)?;
        if config.num_workers > 0 && config.prefetch == 0 {
            return Err(LoaderError::ZeroPrefetch {
                num_workers: config.num_workers,
            });
        }
        if config.num_workers > LoaderConfig::MAX_WORKERS {
            return Err(LoaderError::TooManyWorkers {
                requested: config.num_workers,
                maximum: LoaderConfig::MAX_WORKERS,
            });
        }
        if config.prefetch > LoaderConfig::MAX_PREFETCH {
            return Err(LoaderError::PrefetchTooDeep {
                requested: config.prefetch,
                maximum: LoaderConfig::MAX_PREFETCH,
            });
        }
        let shape = source.image_shape();
        let pixels_per_image = match shape.pixels() {
            Some(0) | None => return Err(LoaderError::EmptyImages { shape }),
            Some(pixels) => pixels,
        };
        let steps = validated_steps(&config, shape)?;
        let too_large = LoaderError::BatchTooLarge {
            batch_size: batch_size.get(),
            pixels_per_image,
        };
        let batch_bytes = batch_size
            .get()
            .checked_mul(pixels_per_image)
            .and_then(|pixels| pixels.checked_mul(config.pixel_format.bytes_per_pixel()))
            .ok_or(too_large)?;
        if isize::try_from(batch_bytes).is_err() {
            return Err(LoaderError::BatchTooLarge {
                batch_size: batch_size.get(),
                pixels_per_image,
            });
        }
        let sampler = config.sampling.build(source.len())?;
        Ok(Self {
            settings: PlanSettings {
                batch_size,
                drop_last: config.drop_last,
                format: config.pixel_format,
                shape,
                pixels_per_image,
                class_count: config.class_count,
                steps,
            },
            config,
            sampler,
            accounting: Arc::new(MemoryAccounting::default()),
        })
    }

    pub(crate) fn plan(&self, seed: u64, epoch: u64, start: u64) -> Result<EpochPlan, LoaderError> {
        let order = Tracked::new(
            self.sampler.epoch_indices(seed, epoch),
            Category::Order,
            &self.accounting,
        );
        EpochPlan::new(seed, epoch, order, start, self.settings.clone())
    }

    pub(crate) fn plan_for_state(&self, state: &LoaderState) -> Result<EpochPlan, LoaderError> {
        if state.seed != self.config.seed {
            return Err(LoaderError::StateSeedMismatch {
                state_seed: state.seed,
                loader_seed: self.config.seed,
            });
        }
        self.plan(state.seed, state.epoch, state.position)
    }

    pub(crate) fn batches_per_epoch(&self) -> usize {
        batch_count(
            self.sampler.len(),
            self.settings.batch_size,
            self.config.drop_last,
        )
    }
}

/// Checks the pixel format, the augmentation and the transform against images of `shape`, and
/// gathers what is done to each sample.
fn validated_steps(config: &LoaderConfig, shape: ImageShape) -> Result<SampleSteps, LoaderError> {
    config.pixel_format.validate_for(shape)?;
    let augmentation = config.augmentation.validate_for(shape)?;
    if config.transform.is_some() && config.pixel_format == PixelFormat::RawU8 {
        return Err(LoaderError::TransformNeedsFloatPixels);
    }
    Ok(SampleSteps {
        augmentation,
        transform: config.transform.clone(),
    })
}

/// Makes batches from a source it borrows.
///
/// A loader cannot outlive its source, an [`Epoch`] cannot outlive its loader, and a
/// [`Batch`] cannot outlive its epoch: when the last of them goes, every byte the loader
/// allocated has been freed (see [`memory_report`](Loader::memory_report)).
///
/// Epochs run their worker threads in a [`std::thread::scope`] you provide, so no thread can
/// outlive the data it reads.
pub struct Loader<'dataset, S: ImageSource + ?Sized> {
    source: &'dataset S,
    core: LoaderCore,
}

impl<'dataset, S: ImageSource + ?Sized> Loader<'dataset, S> {
    /// A loader over `source`.
    ///
    /// # Errors
    ///
    /// A configuration the source cannot satisfy: [`LoaderError::ZeroBatchSize`],
    /// [`LoaderError::ZeroPrefetch`], [`LoaderError::InvalidNormalization`],
    /// [`LoaderError::EmptyImages`], [`LoaderError::BatchTooLarge`], and the sampler's errors.
    pub fn new(source: &'dataset S, config: LoaderConfig) -> Result<Self, LoaderError> {
        let core = LoaderCore::new(source, config)?;
        Ok(Self { source, core })
    }

    /// The source.
    pub fn source(&self) -> &'dataset S {
        self.source
    }

    /// The configuration.
    pub fn config(&self) -> &LoaderConfig {
        &self.core.config
    }

    /// The sampler built from the configuration.
    pub fn sampler(&self) -> &Arc<dyn Sampler> {
        &self.core.sampler
    }

    /// Samples per epoch (including a last batch `drop_last` would drop).
    pub fn samples_per_epoch(&self) -> usize {
        self.core.sampler.len()
    }

    /// Batches per epoch.
    pub fn batches_per_epoch(&self) -> usize {
        self.core.batches_per_epoch()
    }

    /// Bytes the loader holds now (buffers, epoch orders, queue slots) and at its peak.
    pub fn memory_report(&self) -> MemoryReport {
        self.core.accounting.report()
    }

    /// Starts epoch `epoch`, with this loader's workers running in `scope`.
    ///
    /// ```
    /// use reclaim_loader::{ImageShape, Loader, LoaderConfig, RawImages};
    ///
    /// let pixels = vec![255u8; 10 * 4];
    /// let labels: Vec<u8> = (0..10).collect();
    /// let source = RawImages::new(&pixels, &labels, ImageShape::grayscale(2, 2)).unwrap();
    /// let config = LoaderConfig { batch_size: 4, num_workers: 2, ..LoaderConfig::default() };
    /// let loader = Loader::new(&source, config).unwrap();
    /// std::thread::scope(|scope| {
    ///     let epoch = loader.epoch(scope, 0).unwrap();
    ///     let sizes: Vec<usize> = epoch.batches().map(|batch| batch.unwrap().len()).collect();
    ///     assert_eq!(sizes, [4, 4, 2]);
    /// });
    /// assert_eq!(loader.memory_report().current_bytes, 0);
    /// ```
    ///
    /// # Errors
    ///
    /// [`LoaderError::SpawnWorker`] if a worker thread cannot be started.
    pub fn epoch<'loader, 'scope>(
        &'loader self,
        scope: &'scope Scope<'scope, '_>,
        epoch: u64,
    ) -> Result<Epoch<'loader, 'scope, S>, LoaderError>
    where
        'dataset: 'scope,
    {
        let plan = self.core.plan(self.core.config.seed, epoch, 0)?;
        self.start(scope, plan)
    }

    /// Resumes the epoch `state` was taken in: yields exactly the batches it had left.
    ///
    /// # Errors
    ///
    /// [`LoaderError::StateSeedMismatch`] when the state comes from a run with another seed,
    /// [`LoaderError::StatePositionOutOfRange`] when its position is past its epoch's end, and
    /// [`LoaderError::SpawnWorker`].
    pub fn resume<'loader, 'scope>(
        &'loader self,
        scope: &'scope Scope<'scope, '_>,
        state: &LoaderState,
    ) -> Result<Epoch<'loader, 'scope, S>, LoaderError>
    where
        'dataset: 'scope,
    {
        let plan = self.core.plan_for_state(state)?;
        self.start(scope, plan)
    }

    fn start<'loader, 'scope>(
        &'loader self,
        scope: &'scope Scope<'scope, '_>,
        plan: EpochPlan,
    ) -> Result<Epoch<'loader, 'scope, S>, LoaderError>
    where
        'dataset: 'scope,
    {
        let source: &'dataset S = self.source;
        let core = EpochCore::start(
            plan,
            &self.core.accounting,
            self.core.config.num_workers,
            self.core.config.prefetch,
            |context: WorkerContext| {
                std::thread::Builder::new()
                    .name(context.thread_name())
                    .spawn_scoped(scope, move || context.run(source))
            },
        )?;
        Ok(Epoch {
            source: self.source,
            core,
        })
    }
}

impl<S: ImageSource + ?Sized> fmt::Debug for Loader<'_, S> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("Loader")
            .field("source_len", &self.source.len())
            .field("image_shape", &self.core.settings.shape)
            .field("config", &self.core.config)
            .field("memory", &self.memory_report())
            .finish()
    }
}

/// One pass over the data, borrowing its loader.
///
/// Iterate it by reference (`for batch in &epoch`) or with [`batches`](Epoch::batches); batches
/// come in the sampler's order whatever the number of workers. Dropping it, finished or not,
/// stops its workers, waits for them, and frees every buffer that is not lent to a tensor.
pub struct Epoch<'loader, 'scope, S: ImageSource + ?Sized> {
    source: &'loader S,
    core: EpochCore<ScopedJoinHandle<'scope, ()>>,
}

impl<S: ImageSource + ?Sized> Epoch<'_, '_, S> {
    /// The next batch, `None` at the end of the epoch or after an error.
    pub fn next_batch(&self) -> Option<Result<Batch<'_>, LoaderError>> {
        let plan = self.core.plan();
        let (shape, format) = (plan.shape, plan.format);
        self.core.next_filled(self.source).map(|outcome| {
            outcome.map(|filled| Batch::new(filled, shape, format, self.core.pool()))
        })
    }

    /// An iterator over the batches not yet handed out.
    pub fn batches(&self) -> Batches<'_, S> {
        Batches { epoch: self }
    }

    /// The epoch number.
    pub fn number(&self) -> u64 {
        self.core.plan().epoch
    }

    /// Batches this epoch will still hand out.
    pub fn remaining_batches(&self) -> usize {
        self.core.remaining_batches()
    }

    /// Batches handed out so far.
    pub fn batches_delivered(&self) -> usize {
        self.core.batches_delivered()
    }

    /// The number of worker threads this epoch runs (the configured number, or fewer when the
    /// epoch has fewer batches; 0 when batches are made on the consumer's thread).
    pub fn worker_threads(&self) -> usize {
        self.core.worker_threads()
    }

    /// Whether every batch has been handed out (or an error ended the epoch).
    pub fn is_finished(&self) -> bool {
        self.core.is_finished()
    }

    /// Where this epoch stands: save it with a checkpoint after the batches it counts have been
    /// used, and give it to [`Loader::resume`] to carry on from there.
    pub fn state(&self) -> LoaderState {
        self.core.state()
    }
}

impl<S: ImageSource + ?Sized> fmt::Debug for Epoch<'_, '_, S> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("Epoch")
            .field("state", &self.state())
            .field("remaining_batches", &self.remaining_batches())
            .finish()
    }
}

/// The batches of an [`Epoch`], in order.
pub struct Batches<'epoch, S: ImageSource + ?Sized> {
    epoch: &'epoch dyn EpochBatches<S>,
}

/// Object-safe view of an epoch for its iterator (hides the epoch's lifetimes).
trait EpochBatches<S: ImageSource + ?Sized> {
    fn next_batch(&self) -> Option<Result<Batch<'_>, LoaderError>>;
    fn remaining_batches(&self) -> usize;
}

impl<S: ImageSource + ?Sized> EpochBatches<S> for Epoch<'_, '_, S> {
    fn next_batch(&self) -> Option<Result<Batch<'_>, LoaderError>> {
        Epoch::next_batch(self)
    }

    fn remaining_batches(&self) -> usize {
        Epoch::remaining_batches(self)
    }
}

impl<'epoch, S: ImageSource + ?Sized> Iterator for Batches<'epoch, S> {
    type Item = Result<Batch<'epoch>, LoaderError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.epoch.next_batch()
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.epoch.remaining_batches()))
    }
}

impl<S: ImageSource + ?Sized> fmt::Debug for Batches<'_, S> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("Batches")
            .field("remaining_batches", &self.epoch.remaining_batches())
            .finish()
    }
}

impl<'epoch, S: ImageSource + ?Sized> IntoIterator for &'epoch Epoch<'_, '_, S> {
    type Item = Result<Batch<'epoch>, LoaderError>;
    type IntoIter = Batches<'epoch, S>;

    fn into_iter(self) -> Self::IntoIter {
        self.batches()
    }
}
