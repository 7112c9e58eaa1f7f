//! Burn's [`DataLoader`] trait, implemented over the same pipeline with an owned source.

use std::fmt;
use std::ops::Range;
use std::sync::Arc;
use std::sync::atomic::{AtomicU64, Ordering};
use std::thread::JoinHandle;

use burn::data::dataloader::{DataLoader, DataLoaderIterator, Progress};
use burn::data::dataset::DatasetError;
use burn::tensor::Device;

use crate::batch::Batch;
use crate::convert::PixelFormat;
use crate::epoch::{EpochCore, EpochPlan, WorkerContext};
use crate::error::LoaderError;
use crate::loader::{LoaderConfig, LoaderCore};
use crate::pool::{Category, MemoryReport, Tracked};
use crate::source::ImageSource;
use crate::state::LoaderState;
use crate::tensor::TensorBatch;

/// A loader that owns its source (through an `Arc`) and implements Burn's [`DataLoader`],
/// yielding [`TensorBatch`]es of rank `D` on its device, so that it can feed `burn-train`'s
/// `Learner`.
///
/// Each call to [`iter`](DataLoader::iter) is a new epoch (0, 1, 2, … unless
/// [`set_next_epoch`](BurnLoader::set_next_epoch) says otherwise). Its worker threads are
/// ordinary threads holding the `Arc`; dropping the iterator stops and joins them.
///
/// [`slice`](DataLoader::slice), which burn-train's multi-device strategies use to give each
/// device a part, keeps a range of positions of each epoch's order: the parts share out every
/// epoch's draws exactly, whatever the sampler.
///
/// ```
/// use burn::data::dataloader::DataLoader;
/// use burn::tensor::Device;
/// use reclaim_loader::{BurnLoader, ImageShape, LoaderConfig};
///
/// # #[derive(Debug)] struct Ones;
/// # impl reclaim_loader::ImageSource for Ones {
/// #     fn len(&self) -> usize { 10 }
/// #     fn image_shape(&self) -> ImageShape { ImageShape::grayscale(2, 2) }
/// #     fn read_sample(&self, index: usize, pixels: &mut [u8]) -> Result<i64, reclaim_loader::LoaderError> {
/// #         pixels.fill(255);
/// #         Ok(index as i64)
/// #     }
/// # }
/// # #[allow(deprecated)]
/// let device = Device::ndarray();
/// let config = LoaderConfig { batch_size: 4, num_workers: 1, ..LoaderConfig::default() };
/// let loader = BurnLoader::<_, 2>::new(Ones, config, device).unwrap();
/// assert_eq!(loader.num_items(), 10);
/// let sizes: Vec<usize> = loader.iter().map(|batch| batch.unwrap().images.dims()[0]).collect();
/// assert_eq!(sizes, [4, 4, 2]);
/// ```
pub struct BurnLoader<S, const D: usize = 2> {
    source: Arc<S>,
    core: Arc<LoaderCore>,
    device: Device,
    next_epoch: AtomicU64,
    /// For a [`slice`](DataLoader::slice): the positions of each epoch's order it keeps.
    range: Option<Range<usize>>,
}

impl<S, const D: usize> BurnLoader<S, D>
where
    S: ImageSource + Send + 'static,
{
    /// A loader owning `source`, making tensors on `device`.
    ///
    /// # Errors
    ///
    /// As [`Loader::new`](crate::Loader::new), plus [`LoaderError::PixelFormatMismatch`] for
    /// [`PixelFormat::RawU8`] (Burn's loaders yield float tensors here) and
    /// [`LoaderError::UnsupportedTensorRank`] unless `D` is 2, 3 or 4.
    pub fn new(source: S, config: LoaderConfig, device: Device) -> Result<Self, LoaderError> {
        Self::from_arc(Arc::new(source), config, device)
    }

    /// As [`new`](BurnLoader::new), for a source already shared.
    ///
    /// # Errors
    ///
    /// As [`new`](BurnLoader::new).
    pub fn from_arc(
        source: Arc<S>,
        config: LoaderConfig,
        device: Device,
    ) -> Result<Self, LoaderError> {
        if config.pixel_format == PixelFormat::RawU8 {
            return Err(LoaderError::PixelFormatMismatch {
                requested: "float",
                configured: PixelFormat::RawU8.name(),
            });
        }
        crate::tensor::image_dims::<D>(0, source.image_shape())?;
        let core = LoaderCore::new(source.as_ref(), config)?;
        Ok(Self {
            source,
            core: Arc::new(core),
            device,
            next_epoch: AtomicU64::new(0),
            range: None,
        })
    }

    /// The epoch the next [`iter`](DataLoader::iter) will run (to carry on after a restart).
    pub fn set_next_epoch(&self, epoch: u64) {
        self.next_epoch.store(epoch, Ordering::Relaxed);
    }

    /// The epoch the next [`iter`](DataLoader::iter) will run.
    pub fn next_epoch(&self) -> u64 {
        self.next_epoch.load(Ordering::Relaxed)
    }

    /// Bytes the loader holds now and at its peak (shared with the loaders made from it by
    /// `to_device` and `slice`).
    pub fn memory_report(&self) -> MemoryReport {
        self.core.accounting.report()
    }

    /// Resumes the epoch `state` was taken in; later [`iter`](DataLoader::iter) calls go on
    /// with the epoch after it.
    ///
    /// # Errors
    ///
    /// As [`Loader::resume`](crate::Loader::resume).
    pub fn resume(&self, state: &LoaderState) -> Result<BurnLoaderIterator<S, D>, LoaderError> {
        if state.seed != self.core.config.seed {
            return Err(LoaderError::StateSeedMismatch {
                state_seed: state.seed,
                loader_seed: self.core.config.seed,
            });
        }
        let plan = self.plan(state.seed, state.epoch, state.position)?;
        self.next_epoch
            .store(state.epoch.saturating_add(1), Ordering::Relaxed);
        self.start(plan)
    }

    fn plan(&self, seed: u64, epoch: u64, start: u64) -> Result<EpochPlan, LoaderError> {
        match &self.range {
            None => self.core.plan(seed, epoch, start),
            Some(range) => {
                let order = slice_of_order(self.core.sampler.epoch_indices(seed, epoch), range);
                let order = Tracked::new(order, Category::Order, &self.core.accounting);
                EpochPlan::new(seed, epoch, order, start, self.core.settings.clone())
            }
        }
    }

    /// The positions of each epoch's order this loader keeps: all of them, or its slice's
    /// (clamped to the epoch's length).
    fn positions(&self) -> Range<usize> {
        let epoch_len = self.core.sampler.len();
        match &self.range {
            None => 0..epoch_len,
            Some(range) => clamp_range(range, epoch_len),
        }
    }

    fn start(&self, plan: EpochPlan) -> Result<BurnLoaderIterator<S, D>, LoaderError> {
        let core = EpochCore::start(
            plan,
            &self.core.accounting,
            self.core.config.num_workers,
            self.core.config.prefetch,
            |context: WorkerContext| {
                let source = Arc::clone(&self.source);
                std::thread::Builder::new()
                    .name(context.thread_name())
                    .spawn(move || context.run(source.as_ref()))
            },
        )?;
        Ok(BurnLoaderIterator {
            source: Arc::clone(&self.source),
            core,
            device: self.device.clone(),
        })
    }

    /// Starts the next epoch.
    ///
    /// # Errors
    ///
    /// [`LoaderError::SpawnWorker`].
    pub fn try_iter(&self) -> Result<BurnLoaderIterator<S, D>, LoaderError> {
        let epoch = self.next_epoch.fetch_add(1, Ordering::Relaxed);
        let plan = self.plan(self.core.config.seed, epoch, 0)?;
        self.start(plan)
    }

    fn derived(&self, device: Device, range: Option<Range<usize>>) -> Self {
        Self {
            source: Arc::clone(&self.source),
            core: Arc::clone(&self.core),
            device,
            next_epoch: AtomicU64::new(self.next_epoch()),
            range,
        }
    }
}

impl<S, const D: usize> DataLoader<TensorBatch<D>> for BurnLoader<S, D>
where
    S: ImageSource + Send + 'static,
{
    fn iter<'a>(&'a self) -> Box<dyn DataLoaderIterator<TensorBatch<D>> + 'a> {
        match self.try_iter() {
            Ok(iterator) => Box::new(iterator),
            Err(error) => Box::new(FailedIterator { error: Some(error) }),
        }
    }

    fn num_items(&self) -> usize {
        self.positions().len()
    }

    fn to_device(&self, device: &Device) -> Arc<dyn DataLoader<TensorBatch<D>>> {
        Arc::new(self.derived(device.clone(), self.range.clone()))
    }

    /// Keeps the positions `start..end` of each epoch's order (positions of this loader's own
    /// items when it is itself a slice), clamped to the epoch's length.
    ///
    /// The slices `0..a`, `a..b`, …, `y..num_items()` that burn-train's multi-device
    /// strategies make (`split_dataloader`) therefore share out every epoch exactly: each sample
    /// the sampler draws (a shuffled permutation, a subset, weighted draws with repeats, a
    /// distributed rank's shard) goes to exactly one slice, and each slice sees a new share of
    /// the data each epoch, all of it decided by the seed and the epoch number.
    fn slice(&self, start: usize, end: usize) -> Arc<dyn DataLoader<TensorBatch<D>>> {
        let own = self.positions();
        let start = own.start.saturating_add(start);
        let end = own.start.saturating_add(end).max(start);
        let range = clamp_range(&(start..end), own.end);
        Arc::new(self.derived(self.device.clone(), Some(range)))
    }
}

/// `range` with both ends at most `limit`.
fn clamp_range(range: &Range<usize>, limit: usize) -> Range<usize> {
    let end = range.end.min(limit);
    range.start.min(end)..end
}

/// The positions `range` of an epoch's `order` (clamped to its length).
fn slice_of_order(mut order: Vec<usize>, range: &Range<usize>) -> Vec<usize> {
    let kept = clamp_range(range, order.len());
    order.truncate(kept.end);
    order.drain(..kept.start);
    order
}

impl<S: ImageSource, const D: usize> fmt::Debug for BurnLoader<S, D> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("BurnLoader")
            .field("source_len", &self.source.len())
            .field("config", &self.core.config)
            .field("device", &self.device)
            .field("next_epoch", &self.next_epoch)
            .field("range", &self.range)
            .finish()
    }
}

/// One epoch of a [`BurnLoader`], as Burn's iterator.
pub struct BurnLoaderIterator<S: ImageSource + ?Sized, const D: usize> {
    source: Arc<S>,
    core: EpochCore<JoinHandle<()>>,
    device: Device,
}

impl<S: ImageSource + ?Sized, const D: usize> BurnLoaderIterator<S, D> {
    /// Where this epoch stands (see [`LoaderState`]).
    pub fn state(&self) -> LoaderState {
        self.core.state()
    }

    /// The next batch as tensors, with the loader's own error type.
    pub fn next_tensors(&mut self) -> Option<Result<TensorBatch<D>, LoaderError>> {
        let plan = self.core.plan();
        let (shape, format) = (plan.shape, plan.format);
        let filled = self.core.next_filled(self.source.as_ref())?;
        Some(filled.and_then(|filled| {
            Batch::new(filled, shape, format, self.core.pool()).into_tensors::<D>(&self.device)
        }))
    }
}

impl<S: ImageSource + ?Sized, const D: usize> Iterator for BurnLoaderIterator<S, D> {
    type Item = Result<TensorBatch<D>, DatasetError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.next_tensors()
            .map(|outcome| outcome.map_err(DatasetError::new))
    }

    fn size_hint(&self) -> (usize, Option<usize>) {
        (0, Some(self.core.remaining_batches()))
    }
}

impl<S: ImageSource + ?Sized, const D: usize> DataLoaderIterator<TensorBatch<D>>
    for BurnLoaderIterator<S, D>
{
    fn progress(&self) -> Progress {
        Progress::new(
            self.core.items_delivered(),
            self.core.plan().items_total(),
            Some("items".to_owned()),
        )
    }
}

impl<S: ImageSource + ?Sized, const D: usize> fmt::Debug for BurnLoaderIterator<S, D> {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("BurnLoaderIterator")
            .field("state", &self.state())
            .finish()
    }
}

/// What `iter` returns when an epoch cannot start: the error once, then nothing.
struct FailedIterator<const D: usize> {
    error: Option<LoaderError>,
}

impl<const D: usize> DataLoaderIterator<TensorBatch<D>> for FailedIterator<D> {
    fn progress(&self) -> Progress {
        Progress::new(0, 0, Some("items".to_owned()))
    }
}

impl<const D: usize> Iterator for FailedIterator<D> {
    type Item = Result<TensorBatch<D>, DatasetError>;

    fn next(&mut self) -> Option<Self::Item> {
        self.error.take().map(|error| Err(DatasetError::new(error)))
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_slice_of_an_order_keeps_its_positions_clamped_to_its_length() {
        let order = vec![7, 3, 9, 1, 4];
        assert_eq!(slice_of_order(order.clone(), &(1..3)), [3, 9]);
        assert_eq!(slice_of_order(order.clone(), &(3..99)), [1, 4]);
        assert_eq!(slice_of_order(order.clone(), &(6..9)), Vec::<usize>::new());
        assert_eq!(slice_of_order(order, &(0..5)), [7, 3, 9, 1, 4]);
    }

    #[test]
    fn clamping_keeps_a_range_within_its_limit_and_never_reversed() {
        assert_eq!(clamp_range(&(2..8), 5), 2..5);
        assert_eq!(clamp_range(&(7..9), 5), 5..5);
        assert_eq!(clamp_range(&(1..3), 5), 1..3);
    }
}
