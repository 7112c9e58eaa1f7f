//! The training loop: the PyTorch recipe (SGD, batch 64, shuffled, N epochs, evaluation after
//! each), on any backend, with metrics, checkpoints, resume, the memory timeline and the
//! release report.
//!
//! [`train`] runs in phases, one module each, in the order a run passes them:
//!
//! 1. `resume`: prepare or resume, everything before the memory baseline (checked settings,
//!    device, run folder and `config.json`, the `warm_up`, whether and from where to resume,
//!    the metrics files);
//! 2. `measurement`: the baseline, then the timeline and release report all run long;
//! 3. `epochs`: the training loader's scope, one epoch at a time, each evaluated
//!    (`evaluation`) and checkpointed;
//! 4. `release`: the memory given back step by step, each [`ReleaseStage`](crate::ReleaseStage)
//!    measured.
//!
//! Beside them: `config` holds [`TrainConfig`] and what is decided from it alone; `steps`
//! which training step a run takes ([`StepKernel`]) and the step itself;
//! `dataset_defaults` what each dataset gets by default; `cancellation` the flag that stops a
//! run. [`RunIdentity`](crate::RunIdentity) lives beside the checkpoint code.

mod cancellation;
mod config;
mod dataset_check;
mod dataset_defaults;
mod epochs;
mod evaluation;
mod measurement;
mod release;
mod resume;
mod steps;
mod warm_up;

use std::path::PathBuf;
use std::time::Instant;

pub use cancellation::CancellationFlag;
pub use config::{MAX_EPOCHS, StartPolicy, TrainConfig};
pub use dataset_defaults::{
    PackStatistics, PixelScaling, TrainingDataset, model_for_dataset, model_for_images,
    photo_augmentation, standard_augmentation,
};
pub use evaluation::{Evaluation, evaluate_weights};
pub use steps::{LARGEST_FUSED_STEP_BATCH_ON_FLEX, StepKernel, StepKernelObstacle};

use crate::PhaseSeconds;
use crate::ReleaseReport;
use crate::{EpochMetrics, TrainError, TrainingData};
use epochs::EpochRun;
use measurement::RunMeasurement;
use resume::{PreparedRun, TrainingState};

/// Seconds since `started`, as the phases count them.
pub(crate) fn seconds_since(started: Instant) -> f64 {
    started.elapsed().as_secs_f64()
}

/// What a finished run leaves behind, besides its files.
#[derive(Clone, Debug)]
pub struct TrainRun {
    /// Every epoch's metrics, resumed ones included.
    pub epochs: Vec<EpochMetrics>,
    /// The final weights' file, in burnpack format (the same weights as the last checkpoint).
    pub final_weights_path: PathBuf,
    /// Memory at each step of the release.
    pub release: ReleaseReport,
    /// Wall-clock seconds of the whole call, phase by phase, and in all (`phases.total`);
    /// also in the run folder's `phases.json`.
    pub phases: PhaseSeconds,
    /// Peak bytes held by the training loader's buffers and queue.
    pub peak_loader_bytes: u64,
    /// The run folder.
    pub run_folder: PathBuf,
    /// The training step taken ([`TrainConfig::step_kernel_used`]).
    pub step_kernel: StepKernel,
    /// Why the step asked for was not taken, where it was not
    /// ([`TrainConfig::step_kernel_obstacle`]).
    pub step_kernel_obstacle: Option<StepKernelObstacle>,
}

impl TrainRun {
    /// The test accuracy after the last epoch.
    pub fn final_test_accuracy(&self) -> Option<f64> {
        self.epochs.last().map(|epoch| epoch.test_accuracy)
    }
}

/// Trains, evaluates after each epoch, checkpoints, then releases everything in the PyTorch
/// recipe's order and measures memory after each step.
///
/// # Errors
///
/// Everything is checked before the first step (settings, the dataset against the model, the
/// run folder against the start policy; see [`TrainError`]); a run that then fails keeps its
/// files readable and its newest checkpoint resumable. [`TrainError::Diverged`] and
/// [`TrainError::Interrupted`] are how a run that diverged or was cancelled ends.
pub fn train(config: &TrainConfig) -> Result<TrainRun, TrainError> {
    let started = Instant::now();
    let PreparedRun {
        device,
        training_device,
        identity,
        resumed,
        mut progress,
        mut writers,
        final_weights_path,
        lock,
        mut previous_run,
        warm_up_seconds,
    } = resume::prepare_or_resume(config)?;
    let trained = (|| {
        // Everything the measurement itself needs exists from here on: the baseline.
        let mut measurement = RunMeasurement::start_at_baseline(config, &device)?;
        let state = TrainingState::fresh_or_resumed(config, &training_device, resumed.as_ref())?;
        let start_up = seconds_since(started) - warm_up_seconds;
        let opening_started = Instant::now();
        let data = TrainingData::open(config.dataset, &config.data_folder, config.storage)?;
        let dataset_opening = seconds_since(opening_started);
        measurement.mark("dataset opened");
        let mut epoch_run = EpochRun {
            config,
            device: &device,
            training_device: &training_device,
            identity: &identity,
            progress: &mut progress,
            writers: &mut writers,
            measurement: &mut measurement,
            previous_run: &mut previous_run,
            last_checkpoint: resumed.as_ref().map(|point| point.path.clone()),
            phases: PhaseSeconds {
                start_up,
                warm_up: warm_up_seconds,
                dataset_opening,
                ..PhaseSeconds::default()
            },
        };
        let (state, peak_loader_bytes) = epochs::train_epochs(&mut epoch_run, &data, state)?;
        let phases = epoch_run.phases;
        // Frees what the epochs held (the newest checkpoint's path) before the release.
        drop(epoch_run);
        let release_started = Instant::now();
        release::release_in_order(data, state, &mut measurement, &final_weights_path)?;
        Ok((measurement, peak_loader_bytes, phases, release_started))
    })();
    let (measurement, peak_loader_bytes, mut phases, release_started) = match trained {
        Ok(trained) => trained,
        Err(error) => {
            // Failed before its first checkpoint: the run an overwrite set aside comes back.
            // The run's own error is the one to report; should putting the old run back fail,
            // it stays in `.previous-run/`, and the next start on the folder settles it.
            if let Some(previous) = previous_run {
                let _ = previous.restore();
            }
            return Err(error);
        }
    };
    drop(writers);
    let release = measurement.finish(&config.run_folder)?;
    phases.release = seconds_since(release_started);
    phases.total = seconds_since(started);
    phases.write_to(&config.run_folder)?;
    drop(lock);
    Ok(TrainRun {
        epochs: progress.epoch_metrics,
        final_weights_path,
        release,
        phases,
        peak_loader_bytes: peak_loader_bytes as u64,
        run_folder: config.run_folder.clone(),
        step_kernel: config.step_kernel_used(),
        step_kernel_obstacle: config.step_kernel_obstacle(),
    })
}
