//! One pass over the data: the batch order, the pool, the workers and the consumer side.
//!
//! The machinery here is shared by the borrowing [`Epoch`](crate::Epoch) (scoped worker
//! threads) and the owning Burn adapter (worker threads that hold an `Arc` of the source). It is
//! generic over the join handle type only.

use std::any::Any;
use std::cell::{Cell, RefCell};
use std::num::NonZeroUsize;
use std::panic::{AssertUnwindSafe, catch_unwind};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, SyncSender, sync_channel};

use crate::augment::SampleSteps;
use crate::batch::{FilledBatch, assemble_batch};
use crate::convert::PixelFormat;
use crate::error::LoaderError;
use crate::pool::{BufferPool, Category, MemoryAccounting, Tracked};
use crate::source::{ImageShape, ImageSource};
use crate::state::LoaderState;

/// What a worker sends for each of its batches.
pub(crate) type WorkerMessage = Result<FilledBatch, LoaderError>;

/// Prefix of worker thread names (kept short: Linux shows 15 bytes of a thread's name).
pub const WORKER_THREAD_NAME_PREFIX: &str = "loader-worker-";

/// The order and batch boundaries of one epoch.
#[derive(Debug)]
pub(crate) struct EpochPlan {
    pub(crate) seed: u64,
    pub(crate) epoch: u64,
    order: Tracked<Vec<usize>>,
    /// Position (in `order`) of the first sample to deliver.
    start: usize,
    /// One past the last position to deliver (the dropped tail excluded).
    end: usize,
    batch_size: NonZeroUsize,
    pub(crate) format: PixelFormat,
    pub(crate) shape: ImageShape,
    pub(crate) pixels_per_image: usize,
    /// Labels must be below this, when set ([`LoaderConfig::class_count`](crate::LoaderConfig::class_count)).
    pub(crate) class_count: Option<usize>,
    /// The augmentation and the user's transform, applied to each sample as it is converted.
    pub(crate) steps: SampleSteps,
}

/// The parameters an [`EpochPlan`] is made from, besides its order.
#[derive(Clone, Debug)]
pub(crate) struct PlanSettings {
    pub(crate) batch_size: NonZeroUsize,
    pub(crate) drop_last: bool,
    pub(crate) format: PixelFormat,
    pub(crate) shape: ImageShape,
    pub(crate) pixels_per_image: usize,
    pub(crate) class_count: Option<usize>,
    pub(crate) steps: SampleSteps,
}

impl EpochPlan {
    /// The plan of an epoch visiting `order` from `start` on.
    ///
    /// # Errors
    ///
    /// [`LoaderError::StatePositionOutOfRange`] when `start` is past the end of `order`.
    pub(crate) fn new(
        seed: u64,
        epoch: u64,
        order: Tracked<Vec<usize>>,
        start: u64,
        settings: PlanSettings,
    ) -> Result<Self, LoaderError> {
        let epoch_len = order.get().len();
        let start = usize::try_from(start)
            .ok()
            .filter(|&start| start <= epoch_len)
            .ok_or(LoaderError::StatePositionOutOfRange {
                position: start,
                epoch_len,
            })?;
        let batch_size = settings.batch_size.get();
        let end = if settings.drop_last {
            start + (epoch_len - start) / batch_size * batch_size
        } else {
            epoch_len
        };
        Ok(Self {
            seed,
            epoch,
            order,
            start,
            end,
            batch_size: settings.batch_size,
            format: settings.format,
            shape: settings.shape,
            pixels_per_image: settings.pixels_per_image,
            class_count: settings.class_count,
            steps: settings.steps,
        })
    }

    /// Samples in the plan's largest batch (at least 1).
    pub(crate) fn largest_batch(&self) -> usize {
        self.batch_size.get().min(self.end - self.start).max(1)
    }

    pub(crate) fn batch_count(&self) -> usize {
        (self.end - self.start).div_ceil(self.batch_size.get())
    }

    /// The sample indices of batch `batch` (0-based from the plan's start).
    pub(crate) fn batch_indices(&self, batch: usize) -> &[usize] {
        let first = self.start + batch * self.batch_size.get();
        let last = (first + self.batch_size.get()).min(self.end);
        &self.order.get()[first..last]
    }

    /// The position (in the epoch's order) just after batch `batch`.
    fn position_after(&self, batch: usize) -> usize {
        (self.start + (batch + 1) * self.batch_size.get()).min(self.end)
    }

    pub(crate) fn items_total(&self) -> usize {
        self.end - self.start
    }
}

/// A handle that can wait for a worker thread to end.
pub(crate) trait JoinWorker {
    /// Waits for the thread; a panic it carried has already been reported as an error.
    fn join_worker(self);
}

impl JoinWorker for std::thread::ScopedJoinHandle<'_, ()> {
    fn join_worker(self) {
        let _ = self.join();
    }
}

impl JoinWorker for std::thread::JoinHandle<()> {
    fn join_worker(self) {
        let _ = self.join();
    }
}

/// What one worker thread needs; owns only `Arc`s, so it can go to a scoped or a `'static`
/// thread alike.
pub(crate) struct WorkerContext {
    worker: usize,
    workers: usize,
    plan: Arc<EpochPlan>,
    pool: Arc<BufferPool>,
    stop: Arc<AtomicBool>,
    sender: SyncSender<WorkerMessage>,
}

impl WorkerContext {
    pub(crate) fn thread_name(&self) -> String {
        format!("{WORKER_THREAD_NAME_PREFIX}{}", self.worker)
    }

    /// Makes batches `worker`, `worker + workers`, … until the epoch ends, the consumer goes
    /// away, the stop flag is raised, or a batch fails (the failure is sent first).
    pub(crate) fn run<S: ImageSource + ?Sized>(self, source: &S) {
        let plan = &*self.plan;
        let mut scratch = Vec::new();
        let mut batch = self.worker;
        while batch < plan.batch_count() && !self.stop.load(Ordering::Acquire) {
            let outcome = catch_unwind(AssertUnwindSafe(|| {
                assemble_batch(source, plan, batch, &self.pool, &mut scratch)
            }));
            let message = match outcome {
                Ok(result) => result,
                Err(payload) => Err(LoaderError::WorkerPanicked {
                    worker: self.worker,
                    batch,
                    message: panic_message(payload.as_ref()),
                }),
            };
            let failed = message.is_err();
            if self.sender.send(message).is_err() || failed {
                break;
            }
            batch += self.workers;
        }
    }
}

fn panic_message(payload: &(dyn Any + Send)) -> String {
    if let Some(message) = payload.downcast_ref::<&str>() {
        (*message).to_owned()
    } else if let Some(message) = payload.downcast_ref::<String>() {
        message.clone()
    } else {
        "a panic without a message".to_owned()
    }
}

struct Workers<H: JoinWorker> {
    receivers: Vec<Receiver<WorkerMessage>>,
    handles: Vec<H>,
    stop: Arc<AtomicBool>,
    _queue_slots: Tracked<()>,
}

/// The consumer side of an epoch: hands out batches in order, from its workers or made on the
/// spot, and stops and joins the workers when dropped.
pub(crate) struct EpochCore<H: JoinWorker> {
    plan: Arc<EpochPlan>,
    pool: Arc<BufferPool>,
    next_batch: Cell<usize>,
    position: Cell<usize>,
    failed: Cell<bool>,
    workers: Option<Workers<H>>,
    scratch: RefCell<Vec<u8>>,
}

impl<H: JoinWorker> EpochCore<H> {
    /// Starts an epoch; `spawn(context)` starts one worker thread running
    /// `context.run(source)` and returns its handle.
    ///
    /// # Errors
    ///
    /// [`LoaderError::SpawnWorker`]; workers started before the failure are stopped and joined.
    pub(crate) fn start(
        plan: EpochPlan,
        accounting: &Arc<MemoryAccounting>,
        num_workers: usize,
        prefetch: usize,
        mut spawn: impl FnMut(WorkerContext) -> std::io::Result<H>,
    ) -> Result<Self, LoaderError> {
        // Buffers as large as the epoch's largest batch: a batch size beyond the epoch's
        // length allocates for the samples there are, not for the batch size.
        let pool = Arc::new(BufferPool::new(
            Arc::clone(accounting),
            plan.format,
            plan.largest_batch(),
            plan.pixels_per_image,
        ));
        let plan = Arc::new(plan);
        let position = plan.start;
        let mut core = Self {
            plan: Arc::clone(&plan),
            pool: Arc::clone(&pool),
            next_batch: Cell::new(0),
            position: Cell::new(position),
            failed: Cell::new(false),
            workers: None,
            scratch: RefCell::new(Vec::new()),
        };
        // No thread for an epoch with nothing to do.
        let num_workers = num_workers.min(plan.batch_count());
        if num_workers == 0 {
            return Ok(core);
        }
        // Each worker's queue holds up to `prefetch` finished batches (the worker may be making
        // one more meanwhile).
        let slots = prefetch;
        let stop = Arc::new(AtomicBool::new(false));
        let mut workers = Workers {
            receivers: Vec::with_capacity(num_workers),
            handles: Vec::with_capacity(num_workers),
            stop: Arc::clone(&stop),
            _queue_slots: Tracked::with_bytes(
                (),
                num_workers * slots * size_of::<WorkerMessage>(),
                Category::Queue,
                accounting,
            ),
        };
        for worker in 0..num_workers {
            let (sender, receiver) = sync_channel(slots);
            let context = WorkerContext {
                worker,
                workers: num_workers,
                plan: Arc::clone(&plan),
                pool: Arc::clone(&pool),
                stop: Arc::clone(&stop),
                sender,
            };
            match spawn(context) {
                Ok(handle) => {
                    workers.receivers.push(receiver);
                    workers.handles.push(handle);
                }
                Err(source) => {
                    core.workers = Some(workers);
                    // Dropping `core` stops and joins the workers already started.
                    drop(core);
                    return Err(LoaderError::SpawnWorker { worker, source });
                }
            }
        }
        core.workers = Some(workers);
        Ok(core)
    }

    pub(crate) fn pool(&self) -> &Arc<BufferPool> {
        &self.pool
    }

    pub(crate) fn plan(&self) -> &EpochPlan {
        &self.plan
    }

    /// The next batch's buffers, or `None` at the end (or after an error).
    pub(crate) fn next_filled<S: ImageSource + ?Sized>(
        &self,
        source: &S,
    ) -> Option<Result<FilledBatch, LoaderError>> {
        let batch = self.next_batch.get();
        if self.failed.get() || batch >= self.plan.batch_count() {
            return None;
        }
        let outcome = match &self.workers {
            None => assemble_batch(
                source,
                &self.plan,
                batch,
                &self.pool,
                &mut self.scratch.borrow_mut(),
            ),
            Some(workers) => {
                let worker = batch % workers.receivers.len();
                // std's channel spins briefly before it sleeps: a batch ready within
                // microseconds is handed over without a wake-up.
                workers.receivers[worker]
                    .recv()
                    .unwrap_or(Err(LoaderError::WorkerVanished { worker }))
            }
        };
        match &outcome {
            Ok(_) => {
                self.next_batch.set(batch + 1);
                self.position.set(self.plan.position_after(batch));
            }
            Err(_) => self.failed.set(true),
        }
        Some(outcome)
    }

    /// Batches not yet handed out (0 after an error).
    pub(crate) fn remaining_batches(&self) -> usize {
        if self.failed.get() {
            0
        } else {
            self.plan.batch_count() - self.next_batch.get()
        }
    }

    pub(crate) fn worker_threads(&self) -> usize {
        self.workers
            .as_ref()
            .map_or(0, |workers| workers.handles.len())
    }

    pub(crate) fn batches_delivered(&self) -> usize {
        self.next_batch.get()
    }

    pub(crate) fn items_delivered(&self) -> usize {
        self.position.get() - self.plan.start
    }

    pub(crate) fn state(&self) -> LoaderState {
        LoaderState {
            seed: self.plan.seed,
            epoch: self.plan.epoch,
            position: self.position.get() as u64,
        }
    }

    pub(crate) fn is_finished(&self) -> bool {
        self.remaining_batches() == 0
    }

    /// Raises the stop flag, disconnects the queues (which frees the batches waiting in them)
    /// and waits for every worker.
    pub(crate) fn stop_workers(&mut self) {
        if let Some(workers) = self.workers.take() {
            let Workers {
                receivers,
                handles,
                stop,
                _queue_slots,
            } = workers;
            stop.store(true, Ordering::Release);
            drop(receivers);
            for handle in handles {
                handle.join_worker();
            }
        }
    }
}

impl<H: JoinWorker> Drop for EpochCore<H> {
    fn drop(&mut self) {
        self.stop_workers();
        self.pool.close();
    }
}
