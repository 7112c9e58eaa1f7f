//! [`EpochClock`]: when each epoch's training and validation began, read off the loaders.

use std::sync::{Arc, Mutex, PoisonError};
use std::time::{Duration, Instant};

use burn::data::dataloader::{DataLoader, DataLoaderIterator};
use burn::tensor::Device;

/// Records an instant each time burn-train starts iterating one of the wrapped loaders, which
/// it does once per epoch and split: epoch `k`'s training lasts from its training start to its
/// validation start, and the whole epoch to the next epoch's training start (the last one to
/// the end of the fit).
#[derive(Clone, Debug, Default)]
pub struct EpochClock {
    training_starts: Starts,
    validation_starts: Starts,
}

/// Each epoch's durations, epoch 1 first.
#[derive(Clone, Debug, Default)]
pub struct EpochTimes {
    /// The training split alone.
    pub training: Vec<Duration>,
    /// Training and validation.
    pub with_validation: Vec<Duration>,
}

/// The epochs' durations as scalars.
#[derive(Clone, Copy, Debug, Default)]
pub struct EpochSummary {
    /// The mean of the training splits alone.
    pub mean_training: Duration,
    /// The mean of whole epochs, validation included.
    pub mean_with_validation: Duration,
    /// The first epoch, validation included.
    pub first_with_validation: Duration,
}

impl EpochClock {
    /// The training loader, recording on this clock.
    pub fn wrap_training<O: 'static>(
        &self,
        loader: Arc<dyn DataLoader<O>>,
    ) -> Arc<dyn DataLoader<O>> {
        self.training_starts.wrap(loader)
    }

    /// The validation loader, recording on this clock.
    pub fn wrap_validation<O: 'static>(
        &self,
        loader: Arc<dyn DataLoader<O>>,
    ) -> Arc<dyn DataLoader<O>> {
        self.validation_starts.wrap(loader)
    }

    /// The epochs' mean durations and the first one's, the last epoch ending at `end`.
    pub fn summary(&self, end: Instant) -> EpochSummary {
        let times = self.epochs(end);
        let mean = |durations: &[Duration]| {
            let count = u32::try_from(durations.len().max(1)).unwrap_or(u32::MAX);
            durations.iter().sum::<Duration>() / count
        };
        EpochSummary {
            mean_training: mean(&times.training),
            mean_with_validation: mean(&times.with_validation),
            first_with_validation: times.with_validation.first().copied().unwrap_or_default(),
        }
    }

    /// The epochs' durations, the last one ending at `end`.
    pub fn epochs(&self, end: Instant) -> EpochTimes {
        let training_starts = self.training_starts.instants();
        let validation_starts = self.validation_starts.instants();
        let epoch_ends = training_starts.iter().skip(1).copied().chain([end]);
        EpochTimes {
            training: training_starts
                .iter()
                .zip(&validation_starts)
                .map(|(start, end)| *end - *start)
                .collect(),
            with_validation: training_starts
                .iter()
                .zip(epoch_ends)
                .map(|(start, end)| end - *start)
                .collect(),
        }
    }
}

/// The instants a loader's iterations began, shared by the loader's copies.
#[derive(Clone, Debug, Default)]
struct Starts(Arc<Mutex<Vec<Instant>>>);

impl Starts {
    fn wrap<O: 'static>(&self, loader: Arc<dyn DataLoader<O>>) -> Arc<dyn DataLoader<O>> {
        Arc::new(Clocked {
            inner: loader,
            starts: self.clone(),
        })
    }

    fn push_now(&self) {
        let mut instants = self.0.lock().unwrap_or_else(PoisonError::into_inner);
        instants.push(Instant::now());
    }

    fn instants(&self) -> Vec<Instant> {
        self.0
            .lock()
            .unwrap_or_else(PoisonError::into_inner)
            .clone()
    }
}

/// A loader that records when each of its iterations begins.
struct Clocked<O> {
    inner: Arc<dyn DataLoader<O>>,
    starts: Starts,
}

impl<O: 'static> DataLoader<O> for Clocked<O> {
    fn iter<'a>(&'a self) -> Box<dyn DataLoaderIterator<O> + 'a> {
        self.starts.push_now();
        self.inner.iter()
    }

    fn num_items(&self) -> usize {
        self.inner.num_items()
    }

    fn to_device(&self, device: &Device) -> Arc<dyn DataLoader<O>> {
        self.starts.wrap(self.inner.to_device(device))
    }

    fn slice(&self, start: usize, end: usize) -> Arc<dyn DataLoader<O>> {
        self.starts.wrap(self.inner.slice(start, end))
    }
}
