//! Prepare or resume: everything a run makes before its memory baseline — the checked
//! configuration, the device, the checked dataset, the run folder (locked, and what its start
//! policy allows: a fresh folder, an overwrite, a resume) with its `config.json`, the warm-up,
//! the checkpoint to resume from, and the metrics files — and, after the baseline, the model
//! and optimizer, fresh or from the checkpoint.

use std::path::PathBuf;
use std::time::Instant;

use burn::optim::ModuleOptimizer;
use burn::tensor::Device;
use reclaim_loader::LoaderState;
use reclaim_model::Classifier;

use super::config::{StartPolicy, TrainConfig};
use super::dataset_check::CheckedDataset;
use super::seconds_since;
use super::warm_up::warm_up;
use crate::checkpoint::{
    CheckpointState, PartialEpoch, latest_checkpoint, load_checkpoint, read_checkpoint_state,
};
use crate::run_folder::{PreviousRun, RunFolderLock, run_entries, settle_interrupted_overwrite};
use crate::{EpochMetrics, RunFile, RunIdentity, StepMetrics, TrainError};
use reclaim_records::write_file_atomically;
use reclaim_records::{JsonLinesWriter, RecordsError, read_json_lines};

/// What the preparation leaves for the measured part of the run. All of it exists before the
/// baseline, and lives until the release has been measured.
pub(super) struct PreparedRun {
    /// The device evaluation and the memory measurement read.
    pub device: Device,
    /// The same device with autodiff, for training.
    pub training_device: Device,
    /// What the run's checkpoints record of its settings.
    pub identity: RunIdentity,
    /// The checkpoint a resumed run continues from.
    pub resumed: Option<ResumePoint>,
    /// Where the run stands.
    pub progress: RunProgress,
    /// `metrics.jsonl` and `steps.jsonl`, open for appending.
    pub writers: MetricsWriters,
    /// The final weights' path, returned in `TrainRun`: made before the baseline, so that it
    /// does not count as memory the run failed to give back.
    pub final_weights_path: PathBuf,
    /// The run folder's lock, held until the run returns.
    pub lock: RunFolderLock,
    /// The run an overwrite set aside, until this run's first checkpoint.
    pub previous_run: Option<PreviousRun>,
    /// How long the warm-up took.
    pub warm_up_seconds: f64,
}

/// A checkpoint a resumed run continues from: its folder and state.
pub(super) struct ResumePoint {
    pub path: PathBuf,
    pub state: CheckpointState,
}

/// Where a run stands: a fresh run at zero, a resumed one where its checkpoint left off.
pub(super) struct RunProgress {
    /// Every completed epoch's metrics (room reserved for all the run's epochs).
    pub epoch_metrics: Vec<EpochMetrics>,
    /// Optimizer steps taken so far.
    pub steps_completed: usize,
    /// Where the training loader is: the next epoch starts here.
    pub loader_state: LoaderState,
    /// The steps already taken of the epoch in progress, when resumed within it.
    pub partial_epoch: Option<PartialEpoch>,
}

/// The JSON-lines files the epochs append to.
pub(super) struct MetricsWriters {
    /// `metrics.jsonl`.
    pub epochs: JsonLinesWriter,
    /// `steps.jsonl`.
    pub steps: JsonLinesWriter,
}

/// The model being trained and its optimizer.
pub(super) struct TrainingState {
    pub model: Classifier,
    pub optimizer: ModuleOptimizer,
}

/// Checks the configuration, makes the device, opens and checks the dataset (all three first:
/// a run that cannot start leaves no folder behind), locks the run folder and prepares it for
/// the start policy (writing `config.json` unless resuming), warms up, finds the checkpoint to
/// resume from, and opens the metrics files.
pub(super) fn prepare_or_resume(config: &TrainConfig) -> Result<PreparedRun, TrainError> {
    config.validate()?;
    let device = config.backend.device()?;
    let dataset = CheckedDataset::open_and_check(config)?;
    if config.start == StartPolicy::ResumeLatestCheckpoint && !config.run_folder.is_dir() {
        // Nothing to resume, and no folder made to say so.
        return Err(TrainError::NoCheckpoint {
            folder: config.run_folder.clone(),
        });
    }
    let lock = RunFolderLock::acquire(&config.run_folder)?;
    let previous_run = prepare_run_folder(config)?;

    device.seed(config.seed);
    let training_device = device.clone().autodiff();
    let warm_up_started = Instant::now();
    warm_up(&training_device, &device, config, &dataset)?;
    let warm_up_seconds = seconds_since(warm_up_started);
    device.seed(config.seed);

    let identity = config.identity(dataset.fingerprint);
    let resumed = resume_point(config, &identity)?;
    let progress = RunProgress::starting_at(config, resumed.as_ref());
    let writers = MetricsWriters::open(config, &progress, resumed.is_some())?;
    Ok(PreparedRun {
        device,
        training_device,
        identity,
        resumed,
        progress,
        writers,
        final_weights_path: RunFile::FinalWeights.path_in(&config.run_folder),
        lock,
        previous_run,
        warm_up_seconds,
    })
}

/// Makes the locked run folder ready for the start policy: settles an overwrite a killed
/// process left half done; refuses a fresh start over another run; sets another run aside for
/// an overwrite (returned); and for a fresh start or an overwrite, writes `config.json` (a
/// resumed run keeps the one its first run wrote).
fn prepare_run_folder(config: &TrainConfig) -> Result<Option<PreviousRun>, TrainError> {
    let run_folder = &config.run_folder;
    settle_interrupted_overwrite(run_folder)?;
    let previous_run = match config.start {
        StartPolicy::ResumeLatestCheckpoint => return Ok(None),
        StartPolicy::Fresh => {
            let found = run_entries(run_folder);
            if !found.is_empty() {
                return Err(TrainError::RunFolderOccupied {
                    folder: run_folder.clone(),
                    found: found.join(", "),
                });
            }
            None
        }
        StartPolicy::Overwrite => PreviousRun::set_aside(run_folder)?,
    };
    let config_json =
        serde_json::to_vec_pretty(config).map_err(|error| TrainError::InvalidConfig {
            setting: "configuration",
            message: format!("cannot be written as JSON: {error}"),
        })?;
    write_file_atomically(&RunFile::Config.path_in(run_folder), &config_json)?;
    Ok(previous_run)
}

/// The newest checkpoint, for a resumed run: [`TrainError::NoCheckpoint`] without one, and
/// [`TrainError::Checkpoint`] naming every differing setting when it was written by a run with
/// another [`RunIdentity`].
fn resume_point(
    config: &TrainConfig,
    identity: &RunIdentity,
) -> Result<Option<ResumePoint>, TrainError> {
    if config.start != StartPolicy::ResumeLatestCheckpoint {
        return Ok(None);
    }
    let run_folder = &config.run_folder;
    let path = latest_checkpoint(run_folder).ok_or_else(|| TrainError::NoCheckpoint {
        folder: run_folder.clone(),
    })?;
    let state = read_checkpoint_state(&path)?;
    let differences = state.run_identity.differences(identity);
    if !differences.is_empty() {
        let differences: Vec<String> = differences.iter().map(ToString::to_string).collect();
        return Err(TrainError::Checkpoint {
            path,
            message: format!(
                "written by a run with other settings: {}",
                differences.join("; ")
            ),
        });
    }
    Ok(Some(ResumePoint { path, state }))
}

impl RunProgress {
    fn starting_at(config: &TrainConfig, resumed: Option<&ResumePoint>) -> Self {
        let resumed = resumed.map(|point| &point.state);
        let mut epoch_metrics: Vec<EpochMetrics> = resumed
            .map(|state| state.epoch_metrics.clone())
            .unwrap_or_default();
        // Room for every epoch's line, so that recording one allocates nothing (within reason:
        // a run of a billion epochs grows it as it goes).
        epoch_metrics.reserve(config.epochs.min(1024));
        RunProgress {
            epoch_metrics,
            steps_completed: resumed.map_or(0, |state| state.steps_completed),
            loader_state: resumed.map_or(
                LoaderState {
                    seed: config.seed,
                    epoch: 0,
                    position: 0,
                },
                |state| state.loader_state,
            ),
            partial_epoch: resumed.and_then(|state| state.partial_epoch),
        }
    }
}

impl MetricsWriters {
    /// Rewrites `metrics.jsonl` and `steps.jsonl` with what the run has recorded so far (a
    /// resumed run keeps what its checkpoint had recorded, nothing after), then opens both for
    /// appending.
    fn open(
        config: &TrainConfig,
        progress: &RunProgress,
        resumed: bool,
    ) -> Result<Self, TrainError> {
        let epochs_path = RunFile::EpochMetrics.path_in(&config.run_folder);
        let steps_path = RunFile::StepMetrics.path_in(&config.run_folder);
        // Of a resumed run's steps, those its checkpoint covers (a line the killed process left
        // unfinished is left out by `read_json_lines`).
        let kept_steps: Vec<StepMetrics> = if resumed {
            read_steps_if_any(&steps_path)?
                .into_iter()
                .filter(|record| record.step <= progress.steps_completed)
                .collect()
        } else {
            Vec::new()
        };
        JsonLinesWriter::write_all_atomically(&epochs_path, &progress.epoch_metrics)?;
        JsonLinesWriter::write_all_atomically(&steps_path, &kept_steps)?;
        drop(kept_steps);
        Ok(MetricsWriters {
            epochs: JsonLinesWriter::append(epochs_path)?,
            steps: JsonLinesWriter::append(steps_path)?,
        })
    }
}

/// The records of `steps.jsonl`: none when the file does not exist; a line that does not parse
/// (other than an unfinished last one) is an error naming it, not a reason to drop the history.
fn read_steps_if_any(path: &std::path::Path) -> Result<Vec<StepMetrics>, TrainError> {
    match read_json_lines::<StepMetrics>(path) {
        Err(RecordsError::Io { source, .. }) if source.kind() == std::io::ErrorKind::NotFound => {
            Ok(Vec::new())
        }
        other => Ok(other?),
    }
}

impl TrainingState {
    /// The model and optimizer: freshly initialized from the run's seed, then loaded from the
    /// checkpoint when the run resumes.
    pub(super) fn fresh_or_resumed(
        config: &TrainConfig,
        training_device: &Device,
        resumed: Option<&ResumePoint>,
    ) -> Result<Self, TrainError> {
        let model = config.model.init_seeded(training_device, config.seed)?;
        let optimizer = config.optimizer();
        let Some(point) = resumed else {
            return Ok(TrainingState { model, optimizer });
        };
        let loaded = load_checkpoint(&point.path, model, optimizer)?;
        Ok(TrainingState {
            model: loaded.model,
            optimizer: loaded.optimizer,
        })
    }
}
