//! The epochs: the training loader's scope, one function per epoch, the step-logging window,
//! the evaluation after each epoch, and its metrics and checkpoint.

use std::thread::Scope;
use std::time::Instant;

use burn::module::Module;
use burn::optim::{GradientsParams, ModuleOptimizer};
use burn::tensor::{Device, ElementConversion, Tensor};
use indicatif::ProgressBar;
use reclaim_dataset::{DatasetSplits, ImageDataset};
use reclaim_loader::{Epoch, Loader, LoaderState, TensorBatch};
use reclaim_model::SimpleNn;

use super::config::{RunIdentity, TrainConfig};
use super::evaluation::evaluate_source;
use super::measurement::RunMeasurement;
use super::resume::{MetricsWriters, RunProgress, TrainingState};
use crate::checkpoint::{CheckpointState, save_checkpoint};
use crate::{EpochMetrics, ReleaseStage, StepMetrics, TrainError};

/// Steps whose losses are averaged into one line of `steps.jsonl`.
const STEPS_PER_LOG_LINE: usize = 10;

/// An epoch's progress bar: its prefix (`epoch 1/2`), position, and at its end the loss and
/// speed, in indicatif's template syntax.
const EPOCH_BAR_TEMPLATE: &str = "{prefix} [{bar:30}] {pos}/{len} steps  {msg}  {elapsed_precise}";

/// One optimizer step on one batch: forward, cross-entropy, backward, SGD. Returns the updated
/// model and the batch's loss, taken off the autodiff graph. The run and its warm-up both step
/// through here, so the warm-up exercises exactly the code the run measures.
pub(super) fn training_step(
    model: SimpleNn,
    optimizer: &mut ModuleOptimizer,
    learning_rate: f64,
    batch: TensorBatch<2>,
) -> (SimpleNn, Tensor<1>) {
    let TensorBatch { images, labels } = batch;
    let loss = model.loss(model.forward(images), labels);
    let gradients = GradientsParams::from_grads(loss.backward(), &model);
    let model = optimizer.step(learning_rate, model, gradients);
    (model, loss.inner())
}

/// What every epoch reads and updates: the run's settings and devices, where the run stands,
/// its metrics files and its memory measurement.
pub(super) struct EpochRun<'run> {
    pub config: &'run TrainConfig,
    pub device: &'run Device,
    pub training_device: &'run Device,
    pub identity: &'run RunIdentity,
    pub progress: &'run mut RunProgress,
    pub writers: &'run mut MetricsWriters,
    pub measurement: &'run mut RunMeasurement,
}

/// Trains on `splits.train` from where `run.progress` stands to the last epoch, evaluating on
/// `splits.test` after each, inside the training loader's scope; records
/// [`ReleaseStage::Trained`] before the scope ends. Returns the trained state and the loader's
/// peak bytes.
pub(super) fn train_epochs(
    run: &mut EpochRun<'_>,
    splits: &DatasetSplits,
    mut state: TrainingState,
) -> Result<(TrainingState, usize), TrainError> {
    let loader_config = run.config.training_loader_config(splits.train.len());
    std::thread::scope(|scope| {
        let loader = Loader::new(&splits.train, loader_config)?;
        while (run.progress.loader_state.epoch as usize) < run.config.last_epoch() {
            state = run_one_epoch(run, &loader, scope, &splits.test, state)?;
        }
        run.measurement.record_release(ReleaseStage::Trained);
        Ok((state, loader.memory_report().peak_bytes))
    })
}

/// One epoch: its training steps, the evaluation after them, the metrics line and the
/// checkpoint.
fn run_one_epoch<'scope, 'dataset: 'scope>(
    run: &mut EpochRun<'_>,
    loader: &Loader<'dataset, ImageDataset>,
    scope: &'scope Scope<'scope, '_>,
    test_set: &ImageDataset,
    state: TrainingState,
) -> Result<TrainingState, TrainError> {
    let number = run.progress.loader_state.epoch as usize + 1;
    run.measurement.mark(format!("epoch {number}"));
    let bar = run
        .config
        .progress
        .progress_bar(Some(loader.batches_per_epoch() as u64), EPOCH_BAR_TEMPLATE);
    bar.set_prefix(format!("epoch {number}/{}", run.config.epochs));
    bar.set_position(run.progress.loader_state.position / run.config.batch_size as u64);

    let started = Instant::now();
    let epoch = loader.resume(scope, &run.progress.loader_state)?;
    let (state, samples, loss) = train_on_batches(run, &epoch, number, started, &bar, state)?;
    let next_state = epoch.state().next_epoch();
    drop(epoch);
    let train_loss = loss.mean();
    run.training_device
        .sync()
        .map_err(|error| TrainError::Device {
            message: format!("{error:?}"),
        })?;
    let trained = TrainedEpoch {
        number,
        samples,
        train_loss,
        train_seconds: started.elapsed().as_secs_f64(),
    };

    let metrics = evaluate_epoch(run, &state.model, test_set, &trained)?;
    bar.finish_with_message(format!(
        "loss {train_loss:.4}  test accuracy {:.2}%  {:.0} samples/s",
        metrics.test_accuracy * 100.0,
        metrics.samples_per_second
    ));
    record_epoch(run, metrics, next_state, &state)?;
    Ok(state)
}

/// Trains on every batch of `epoch`, appending a line to `steps.jsonl` every
/// [`STEPS_PER_LOG_LINE`] steps and after the epoch's last. Returns the state after the last
/// step, the samples trained on and the epoch's summed loss.
fn train_on_batches(
    run: &mut EpochRun<'_>,
    epoch: &Epoch<'_, '_, ImageDataset>,
    epoch_number: usize,
    epoch_started: Instant,
    bar: &ProgressBar,
    state: TrainingState,
) -> Result<(TrainingState, usize, LossSum), TrainError> {
    let TrainingState {
        mut model,
        mut optimizer,
    } = state;
    let mut samples = 0usize;
    let mut epoch_loss = LossSum::new(run.device);
    let mut window = LossSum::new(run.device);
    for batch in epoch {
        let batch = batch?;
        samples += batch.len();
        let loss;
        (model, loss) = training_step(
            model,
            &mut optimizer,
            run.config.learning_rate,
            batch.into_tensors::<2>(run.training_device)?,
        );
        epoch_loss = epoch_loss.add(loss.clone());
        window = window.add(loss);
        run.progress.steps_completed += 1;
        if window.steps == STEPS_PER_LOG_LINE || epoch.is_finished() {
            let window_loss = window.take_mean(run.device);
            run.writers.steps.write(&StepMetrics {
                step: run.progress.steps_completed,
                epoch: epoch_number,
                loss: window_loss,
            })?;
            let rate = samples as f64 / epoch_started.elapsed().as_secs_f64();
            bar.set_message(format!("loss {window_loss:.4}  {rate:.0} samples/s"));
        }
        bar.inc(1);
    }
    Ok((TrainingState { model, optimizer }, samples, epoch_loss))
}

/// An epoch's training, done: what its metrics line needs besides the evaluation.
struct TrainedEpoch {
    /// The epoch, counted from 1.
    number: usize,
    /// Samples trained on.
    samples: usize,
    /// Mean training loss over the epoch's steps.
    train_loss: f64,
    /// Seconds of training, the device synchronized.
    train_seconds: f64,
}

/// Losses summed on the device, read back only when their mean is wanted.
struct LossSum {
    sum: Tensor<1>,
    steps: usize,
}

impl LossSum {
    fn new(device: &Device) -> Self {
        LossSum {
            sum: Tensor::<1>::zeros([1], device),
            steps: 0,
        }
    }

    fn add(self, loss: Tensor<1>) -> Self {
        LossSum {
            sum: self.sum + loss,
            steps: self.steps + 1,
        }
    }

    /// The mean so far (0 steps count as 1).
    fn mean(self) -> f64 {
        self.sum.into_scalar::<f32>().elem::<f64>() / self.steps.max(1) as f64
    }

    /// The mean so far, starting a new sum at zero.
    fn take_mean(&mut self, device: &Device) -> f64 {
        let taken = std::mem::replace(self, LossSum::new(device));
        taken.mean()
    }
}

/// Evaluates the model after an epoch, marking the evaluation in the memory timeline, and
/// gives the epoch's metrics.
fn evaluate_epoch(
    run: &mut EpochRun<'_>,
    model: &SimpleNn,
    test_set: &ImageDataset,
    trained: &TrainedEpoch,
) -> Result<EpochMetrics, TrainError> {
    let number = trained.number;
    run.measurement.mark(format!("evaluation {number}"));
    let evaluation_started = Instant::now();
    let evaluation = evaluate_source(
        &model.valid(),
        test_set,
        run.config.pixel_format(),
        run.device,
    )?;
    let evaluation_seconds = evaluation_started.elapsed().as_secs_f64();
    let memory = run.measurement.mark(format!("epoch {number} evaluated"));
    Ok(EpochMetrics {
        epoch: number,
        train_loss: trained.train_loss,
        test_loss: evaluation.loss,
        test_accuracy: evaluation.accuracy,
        train_seconds: trained.train_seconds,
        evaluation_seconds,
        samples_per_second: trained.samples as f64 / trained.train_seconds,
        resident_bytes: memory.resident_bytes,
        device_bytes_in_use: memory.device_bytes_in_use,
    })
}

/// Appends the epoch's line to `metrics.jsonl`, moves the run past the epoch and writes its
/// checkpoint.
fn record_epoch(
    run: &mut EpochRun<'_>,
    metrics: EpochMetrics,
    next_state: LoaderState,
    state: &TrainingState,
) -> Result<(), TrainError> {
    let epochs_completed = metrics.epoch;
    run.writers.epochs.write(&metrics)?;
    run.progress.epoch_metrics.push(metrics);
    run.progress.loader_state = next_state;
    save_checkpoint(
        &run.config.run_folder,
        &state.model,
        &state.optimizer,
        &CheckpointState {
            epochs_completed,
            steps_completed: run.progress.steps_completed,
            loader_state: run.progress.loader_state,
            epoch_metrics: run.progress.epoch_metrics.clone(),
            run_identity: run.identity.clone(),
        },
    )?;
    Ok(())
}
