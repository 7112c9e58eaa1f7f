//! The epochs: the training loader's scope, one function per epoch, the step-logging window,
//! the evaluation after each epoch, and its metrics and checkpoint.

use std::path::PathBuf;
use std::thread::Scope;
use std::time::Instant;

use burn::module::Module;
use burn::tensor::{Device, Tensor};
use indicatif::ProgressBar;
use reclaim_loader::{Epoch, ImageSource, Loader, LoaderState};
use reclaim_memory::FreedMemoryReuse;
use reclaim_model::Classifier;

use super::config::TrainConfig;
use super::evaluation::evaluate_source;
use super::measurement::RunMeasurement;
use super::resume::{MetricsWriters, RunProgress, TrainingState};
use super::seconds_since;
use super::steps::{StepLoss, TrainingSteps};
use crate::PhaseSeconds;
use crate::checkpoint::{CheckpointState, PartialEpoch, save_checkpoint};
use crate::run_folder::PreviousRun;
use crate::{EpochMetrics, ReleaseStage, RunIdentity, StepMetrics, TrainError, TrainingData};

/// Steps whose losses are averaged into one line of `steps.jsonl`.
const STEPS_PER_LOG_LINE: usize = 10;

/// An epoch's progress bar: its prefix (`epoch 1/2`), position, and at its end the loss and
/// speed, in indicatif's template syntax.
const EPOCH_BAR_TEMPLATE: &str = "{prefix} [{bar:30}] {pos}/{len} steps  {msg}  {elapsed_precise}";

/// What every epoch reads and updates: the run's settings and devices, where the run stands,
/// its metrics files, its memory measurement, and the run an overwrite set aside.
pub(super) struct EpochRun<'run> {
    pub config: &'run TrainConfig,
    pub device: &'run Device,
    pub training_device: &'run Device,
    pub identity: &'run RunIdentity,
    pub progress: &'run mut RunProgress,
    pub writers: &'run mut MetricsWriters,
    pub measurement: &'run mut RunMeasurement,
    pub previous_run: &'run mut Option<PreviousRun>,
    /// The newest checkpoint written (or resumed from), named when the run diverges. Owned
    /// here, not in [`RunProgress`], so that its path is freed with the `EpochRun`, before the
    /// release is measured.
    pub last_checkpoint: Option<PathBuf>,
    /// The training, evaluation and checkpoint seconds of this call, added up as they pass.
    pub phases: PhaseSeconds,
}

/// Trains on `data.train()` from where `run.progress` stands to the last epoch, evaluating on
/// `data.test()` after each, inside the training loader's scope; records
/// [`ReleaseStage::Trained`] before the scope ends. Returns the trained state and the loader's
/// peak bytes.
///
/// # Errors
///
/// Besides the loader's and the files': [`TrainError::Diverged`] at the first step whose loss
/// is not finite, and [`TrainError::Interrupted`] once the run's cancellation flag is set (a
/// checkpoint written first).
pub(super) fn train_epochs(
    run: &mut EpochRun<'_>,
    data: &TrainingData,
    mut state: TrainingState,
) -> Result<(TrainingState, usize), TrainError> {
    let loader_config = run.config.training_loader_config(data.train().len());
    std::thread::scope(|scope| {
        let loader = Loader::new(data.train(), loader_config)?;
        // Each step's buffers reuse the previous step's pages (reclaim-memory says why); an
        // early return drops the guard like the end of the epochs does.
        let reuse = FreedMemoryReuse::begin();
        while (run.progress.loader_state.epoch as usize) < run.config.last_epoch() {
            if run.config.cancellation.is_cancelled() {
                let partial = run.progress.partial_epoch;
                return Err(interrupt(run, &state, run.progress.loader_state, partial)?);
            }
            state = run_one_epoch(run, &loader, scope, data.test(), state)?;
        }
        // The kept pages go back to the kernel before the release is measured.
        drop(reuse);
        run.measurement.record_release(ReleaseStage::Trained);
        Ok((state, loader.memory_report().peak_bytes))
    })
}

/// One epoch: its training steps, the evaluation after them, the metrics line and the
/// checkpoint.
fn run_one_epoch<'scope, 'dataset: 'scope>(
    run: &mut EpochRun<'_>,
    loader: &Loader<'dataset, dyn ImageSource + 'dataset>,
    scope: &'scope Scope<'scope, '_>,
    test_set: &dyn ImageSource,
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

    let epoch = loader.resume(scope, &run.progress.loader_state)?;
    let totals = EpochTotals::resumed(run.progress.partial_epoch.take());
    let training_started = Instant::now();
    let checkpoint_seconds_before = run.phases.checkpoints;
    let (state, totals) = train_on_batches(run, &epoch, number, &bar, state, totals)?;
    // The checkpoints within the epoch are their own phase.
    run.phases.training +=
        seconds_since(training_started) - (run.phases.checkpoints - checkpoint_seconds_before);
    let next_state = epoch.state().next_epoch();
    drop(epoch);
    run.training_device
        .sync()
        .map_err(|error| TrainError::Device {
            message: format!("{error:?}"),
        })?;
    let trained = TrainedEpoch {
        number,
        samples: totals.samples,
        train_loss: totals.loss_sum / totals.steps.max(1) as f64,
        train_seconds: totals.train_seconds(),
    };

    let metrics = evaluate_epoch(run, &state.model, test_set, &trained)?;
    bar.finish_with_message(format!(
        "loss {:.4}  test accuracy {:.2}%  {:.0} samples/s",
        trained.train_loss,
        metrics.test_accuracy * 100.0,
        metrics.samples_per_second
    ));
    record_epoch(run, metrics, next_state, &state)?;
    Ok(state)
}

/// Trains on every batch of `epoch`. Reads the losses back every [`STEPS_PER_LOG_LINE`] steps,
/// at the epoch's end and before a checkpoint ([`flush_losses`]: a line of `steps.jsonl`, and
/// the divergence check); writes a checkpoint every `checkpoint_every` steps within the epoch;
/// and stops with a checkpoint when the run is cancelled. Returns the state after the last
/// step and the epoch's totals.
fn train_on_batches(
    run: &mut EpochRun<'_>,
    epoch: &Epoch<'_, '_, dyn ImageSource + '_>,
    epoch_number: usize,
    bar: &ProgressBar,
    state: TrainingState,
    mut totals: EpochTotals,
) -> Result<(TrainingState, EpochTotals), TrainError> {
    let TrainingState {
        mut model,
        mut optimizer,
    } = state;
    let mut window = LossWindow::starting_after(run.progress.steps_completed);
    let mut steps = TrainingSteps::new(run.config.step_kernel_used(), &model)?;
    for batch in epoch {
        let batch = batch?;
        totals.samples += batch.len();
        let loss;
        (model, loss) = steps.step(
            model,
            &mut optimizer,
            run.config.learning_rate,
            batch,
            run.training_device,
        )?;
        window.losses.push(loss);
        run.progress.steps_completed += 1;
        bar.inc(1);
        let within_epoch = !epoch.is_finished();
        let checkpoint_due = within_epoch
            && run
                .config
                .checkpoint_every
                .is_some_and(|every| run.progress.steps_completed.is_multiple_of(every.get()));
        let cancelled = within_epoch && run.config.cancellation.is_cancelled();
        if window.losses.len() == STEPS_PER_LOG_LINE || !within_epoch || checkpoint_due || cancelled
        {
            flush_losses(run, &mut window, epoch_number, &mut totals, bar)?;
        }
        if checkpoint_due || cancelled {
            let state = TrainingState {
                model: steps.synced(model)?,
                optimizer,
            };
            let partial = Some(totals.partial());
            if cancelled {
                return Err(interrupt(run, &state, epoch.state(), partial)?);
            }
            save_run_checkpoint(run, &state, epoch.state(), partial)?;
            TrainingState { model, optimizer } = state;
        }
    }
    let model = steps.synced(model)?;
    Ok((TrainingState { model, optimizer }, totals))
}

/// Reads the window's losses back (one transfer), appends their mean to `steps.jsonl` and adds
/// them to the epoch's totals; [`TrainError::Diverged`] at the first that is not finite (its
/// line is written first, so the files show it).
fn flush_losses(
    run: &mut EpochRun<'_>,
    window: &mut LossWindow,
    epoch_number: usize,
    totals: &mut EpochTotals,
    bar: &ProgressBar,
) -> Result<(), TrainError> {
    let first_step = window.first_step;
    let losses = window.take_values()?;
    if losses.is_empty() {
        return Ok(());
    }
    let sum: f64 = losses.iter().map(|&loss| f64::from(loss)).sum();
    let mean = sum / losses.len() as f64;
    run.writers.steps.write(&StepMetrics {
        step: run.progress.steps_completed,
        epoch: epoch_number,
        loss: mean,
    })?;
    if let Some(position) = losses.iter().position(|loss| !loss.is_finite()) {
        return Err(TrainError::Diverged {
            step: first_step + position,
            epoch: epoch_number,
            loss: f64::from(losses[position]),
            last_checkpoint: run.last_checkpoint.clone(),
        });
    }
    totals.loss_sum += sum;
    totals.steps += losses.len();
    bar.set_message(format!("loss {mean:.4}"));
    Ok(())
}

/// Writes a checkpoint at `loader_state` (within an epoch when `partial` is set), then removes
/// the run an overwrite set aside, if any: the new run can now be resumed on its own.
fn save_run_checkpoint(
    run: &mut EpochRun<'_>,
    state: &TrainingState,
    loader_state: LoaderState,
    partial_epoch: Option<PartialEpoch>,
) -> Result<PathBuf, TrainError> {
    let started = Instant::now();
    let path = save_checkpoint(
        &run.config.run_folder,
        &state.model,
        &state.optimizer,
        &CheckpointState {
            epochs_completed: run.progress.epoch_metrics.len(),
            steps_completed: run.progress.steps_completed,
            loader_state,
            epoch_metrics: run.progress.epoch_metrics.clone(),
            run_identity: run.identity.clone(),
            partial_epoch,
        },
    )?;
    run.last_checkpoint = Some(path.clone());
    if let Some(previous) = run.previous_run.take() {
        previous.discard()?;
    }
    run.phases.checkpoints += seconds_since(started);
    Ok(path)
}

/// Writes the checkpoint a cancelled run stops at and gives the error that says so.
fn interrupt(
    run: &mut EpochRun<'_>,
    state: &TrainingState,
    loader_state: LoaderState,
    partial_epoch: Option<PartialEpoch>,
) -> Result<TrainError, TrainError> {
    let checkpoint = save_run_checkpoint(run, state, loader_state, partial_epoch)?;
    Ok(TrainError::Interrupted {
        step: run.progress.steps_completed,
        epoch: loader_state.epoch as usize + 1,
        checkpoint,
    })
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

/// The epoch's steps so far: those of the checkpoint it resumed from, then this call's.
struct EpochTotals {
    samples: usize,
    steps: usize,
    loss_sum: f64,
    seconds_before: f64,
    started: Instant,
}

impl EpochTotals {
    fn resumed(partial: Option<PartialEpoch>) -> Self {
        let partial = partial.unwrap_or(PartialEpoch {
            samples: 0,
            steps: 0,
            loss_sum: 0.0,
            train_seconds: 0.0,
        });
        EpochTotals {
            samples: partial.samples,
            steps: partial.steps,
            loss_sum: partial.loss_sum,
            seconds_before: partial.train_seconds,
            started: Instant::now(),
        }
    }

    fn train_seconds(&self) -> f64 {
        self.seconds_before + self.started.elapsed().as_secs_f64()
    }

    fn partial(&self) -> PartialEpoch {
        PartialEpoch {
            samples: self.samples,
            steps: self.steps,
            loss_sum: self.loss_sum,
            train_seconds: self.train_seconds(),
        }
    }
}

/// The losses of the steps since the last read-back: on the device (Burn's step) or on the
/// host (the fused step).
struct LossWindow {
    /// The step (counted from 1 over the run) of the first loss.
    first_step: usize,
    losses: Vec<StepLoss>,
}

impl LossWindow {
    fn starting_after(steps_completed: usize) -> Self {
        LossWindow {
            first_step: steps_completed + 1,
            losses: Vec::with_capacity(STEPS_PER_LOG_LINE),
        }
    }

    /// The losses, those on the device read back in one transfer; the window then starts
    /// after them.
    fn take_values(&mut self) -> Result<Vec<f32>, TrainError> {
        let losses = std::mem::take(&mut self.losses);
        self.first_step += losses.len();
        let on_device: Vec<Tensor<1>> = losses
            .iter()
            .filter_map(|loss| match loss {
                StepLoss::Device(loss) => Some((**loss).clone()),
                StepLoss::Host(_) => None,
            })
            .collect();
        let mut read_back = read_back(on_device)?.into_iter();
        losses
            .into_iter()
            .map(|loss| match loss {
                StepLoss::Host(value) => Ok(value),
                StepLoss::Device(_) => read_back.next().ok_or_else(|| TrainError::Device {
                    message: "reading the losses back: fewer values than losses".into(),
                }),
            })
            .collect()
    }
}

/// The values of one-element `losses`, read back in one transfer (none for none).
fn read_back(losses: Vec<Tensor<1>>) -> Result<Vec<f32>, TrainError> {
    if losses.is_empty() {
        return Ok(Vec::new());
    }
    Tensor::cat(losses, 0)
        .into_data()
        .convert::<f32>()
        .try_into_vec::<f32>()
        .map_err(|error| TrainError::Device {
            message: format!("reading the losses back: {error:?}"),
        })
}

/// Evaluates the model after an epoch, marking the evaluation in the memory timeline, and
/// gives the epoch's metrics.
fn evaluate_epoch(
    run: &mut EpochRun<'_>,
    model: &Classifier,
    test_set: &dyn ImageSource,
    trained: &TrainedEpoch,
) -> Result<EpochMetrics, TrainError> {
    let number = trained.number;
    run.measurement.mark(format!("evaluation {number}"));
    let evaluation_started = Instant::now();
    let evaluation = evaluate_source(
        &model.valid(),
        test_set,
        run.config.pixel_format(),
        run.config.model.number_of_classes(),
        run.device,
    )?;
    let evaluation_seconds = seconds_since(evaluation_started);
    run.phases.evaluation += evaluation_seconds;
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
    run.writers.epochs.write(&metrics)?;
    run.progress.epoch_metrics.push(metrics);
    run.progress.loader_state = next_state;
    save_run_checkpoint(run, state, next_state, None)?;
    Ok(())
}
