//! Checkpoints: the model's weights, the optimizer's state and the loader's position, written
//! as one folder that appears atomically, at each epoch's end (`epoch-NNNN`) and within an
//! epoch (`epoch-NNNN-step-SSSSSSSSS`, every N steps and when the run is interrupted).

use std::path::{Path, PathBuf};

use burn::optim::ModuleOptimizer;
use burn::tensor::Bytes;
use reclaim_loader::LoaderState;
use reclaim_model::{Classifier, WeightFormat};
use serde::{Deserialize, Serialize};

use crate::{EpochMetrics, RunIdentity, TrainError};
use reclaim_records::write_file_atomically;

pub(crate) const CHECKPOINTS_FOLDER: &str = "checkpoints";

/// A file inside a checkpoint's folder (`RUN/checkpoints/epoch-NNNN/`).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum CheckpointFile {
    /// `model.bpk`: the model's weights (burnpack).
    Weights,
    /// `optimizer.bin`: the optimizer's state (momentum buffers and so on).
    OptimizerState,
    /// `checkpoint.json`: the [`CheckpointState`].
    State,
}

impl CheckpointFile {
    /// The file's name inside the checkpoint's folder (`"model.bpk"`).
    pub const fn file_name(self) -> &'static str {
        match self {
            CheckpointFile::Weights => "model.bpk",
            CheckpointFile::OptimizerState => "optimizer.bin",
            CheckpointFile::State => "checkpoint.json",
        }
    }

    /// The file's path inside the checkpoint folder `checkpoint`.
    pub fn path_in(self, checkpoint: &Path) -> PathBuf {
        checkpoint.join(self.file_name())
    }
}

/// What a checkpoint records besides the weights: enough to continue the run exactly.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct CheckpointState {
    /// Epochs completed when the checkpoint was written.
    pub epochs_completed: usize,
    /// Optimizer steps taken so far.
    pub steps_completed: usize,
    /// Where the loader is: the next epoch starts here.
    pub loader_state: LoaderState,
    /// The metrics of every completed epoch.
    pub epoch_metrics: Vec<EpochMetrics>,
    /// The settings that must not change across a resume ([`TrainConfig::identity`](crate::TrainConfig::identity)).
    pub run_identity: RunIdentity,
    /// For a checkpoint written within an epoch: what that epoch's metrics line needs of the
    /// steps already taken. `None` at an epoch's end.
    #[serde(default)]
    pub partial_epoch: Option<PartialEpoch>,
}

impl CheckpointState {
    /// The checkpoint's folder name: `epoch-NNNN` at the end of epoch N, or
    /// `epoch-NNNN-step-SSSSSSSSS` within epoch N after S steps of the run.
    pub fn folder_name(&self) -> String {
        if self.loader_state.position == 0 {
            format!("epoch-{:04}", self.epochs_completed)
        } else {
            format!(
                "epoch-{:04}-step-{:09}",
                self.loader_state.epoch + 1,
                self.steps_completed
            )
        }
    }
}

/// The steps of an epoch taken before a checkpoint written within it.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PartialEpoch {
    /// Samples trained on.
    pub samples: usize,
    /// Steps taken.
    pub steps: usize,
    /// The sum of their losses.
    #[serde(with = "reclaim_records::finite_or_text")]
    pub loss_sum: f64,
    /// Seconds of training so far.
    #[serde(with = "reclaim_records::finite_or_text")]
    pub train_seconds: f64,
}

/// Where a checkpoint's folder name places it in the run: (epoch, whether at its end, step).
/// Later checkpoints order higher; `None` for a name that is not a checkpoint's.
fn checkpoint_order(name: &str) -> Option<(u64, bool, u64)> {
    let rest = name.strip_prefix("epoch-")?;
    match rest.split_once("-step-") {
        None => Some((rest.parse().ok()?, true, 0)),
        Some((epoch, step)) => Some((epoch.parse().ok()?, false, step.parse().ok()?)),
    }
}

/// The folder holding a run's checkpoints.
pub fn checkpoints_folder(run_folder: &Path) -> PathBuf {
    run_folder.join(CHECKPOINTS_FOLDER)
}

/// Writes a checkpoint as `RUN/checkpoints/NAME` ([`CheckpointState::folder_name`]),
/// atomically: the folder is assembled under a temporary name and renamed into place once
/// complete. Then removes the checkpoints written within an epoch that it supersedes (those at
/// epochs' ends stay). Returns its path.
///
/// A checkpoint of the same name already there is kept as it is: it was written at the same
/// step of the same run, so it holds the same weights (a run resumed from it and interrupted
/// again before its next step).
pub fn save_checkpoint(
    run_folder: &Path,
    model: &Classifier,
    optimizer: &ModuleOptimizer,
    state: &CheckpointState,
) -> Result<PathBuf, TrainError> {
    let folder = checkpoints_folder(run_folder);
    std::fs::create_dir_all(&folder).map_err(|error| TrainError::io(&folder, error))?;
    let name = state.folder_name();
    let final_path = folder.join(&name);
    if CheckpointFile::State.path_in(&final_path).is_file() {
        return Ok(final_path);
    }
    // Assembled in a uniquely named folder beside its final place, deleted if anything fails.
    let temporary = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".partial")
        .tempdir_in(&folder)
        .map_err(|error| TrainError::io(&folder, error))?;
    write_checkpoint_files(temporary.path(), &final_path, model, optimizer, state)?;
    if final_path.exists() {
        // An incomplete folder of that name (no state file): not a checkpoint.
        std::fs::remove_dir_all(&final_path).map_err(|error| TrainError::io(&final_path, error))?;
    }
    std::fs::rename(temporary.path(), &final_path)
        .map_err(|error| TrainError::io(&final_path, error))?;
    // Renamed into place: nothing is left under the temporary name to delete.
    let _ = temporary.keep();
    remove_superseded_checkpoints(&folder, &name)?;
    Ok(final_path)
}

/// Writes the weights, the optimizer's state and the state file into `folder`.
fn write_checkpoint_files(
    folder: &Path,
    final_path: &Path,
    model: &Classifier,
    optimizer: &ModuleOptimizer,
    state: &CheckpointState,
) -> Result<(), TrainError> {
    let file = |file: CheckpointFile| file.path_in(folder);
    let model_bytes = model.to_weight_bytes(WeightFormat::Burnpack)?;
    write_file_atomically(&file(CheckpointFile::Weights), &model_bytes)?;
    let optimizer_bytes = optimizer
        .into_bytes()
        .map_err(|error| TrainError::Checkpoint {
            path: final_path.to_path_buf(),
            message: format!("cannot serialize the optimizer: {error:?}"),
        })?;
    write_file_atomically(&file(CheckpointFile::OptimizerState), &optimizer_bytes)?;
    let state_text = serde_json::to_vec_pretty(state).map_err(|error| TrainError::Checkpoint {
        path: final_path.to_path_buf(),
        message: format!("cannot write its state as JSON: {error}"),
    })?;
    Ok(write_file_atomically(
        &file(CheckpointFile::State),
        &state_text,
    )?)
}

/// Removes the checkpoints written within an epoch that come before `newest`.
fn remove_superseded_checkpoints(folder: &Path, newest: &str) -> Result<(), TrainError> {
    let Some(newest_order) = checkpoint_order(newest) else {
        return Ok(());
    };
    let entries = std::fs::read_dir(folder).map_err(|error| TrainError::io(folder, error))?;
    for entry in entries.filter_map(Result::ok) {
        let name = entry.file_name();
        let Some(order) = name.to_str().and_then(checkpoint_order) else {
            continue;
        };
        let within_an_epoch = !order.1;
        if within_an_epoch && order < newest_order {
            let path = entry.path();
            std::fs::remove_dir_all(&path).map_err(|error| TrainError::io(path, error))?;
        }
    }
    Ok(())
}

/// The newest complete checkpoint of a run, if any.
pub fn latest_checkpoint(run_folder: &Path) -> Option<PathBuf> {
    let entries = std::fs::read_dir(checkpoints_folder(run_folder)).ok()?;
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let order = checkpoint_order(entry.file_name().to_str()?)?;
            CheckpointFile::State
                .path_in(&entry.path())
                .is_file()
                .then(|| (order, entry.path()))
        })
        .max_by_key(|(order, _)| *order)
        .map(|(_, path)| path)
}

/// Reads only the state of the checkpoint folder `path`.
pub fn read_checkpoint_state(path: &Path) -> Result<CheckpointState, TrainError> {
    let file = CheckpointFile::State.path_in(path);
    let bytes = std::fs::read(&file).map_err(|error| TrainError::io(&file, error))?;
    serde_json::from_slice(&bytes).map_err(|error| TrainError::Checkpoint {
        path: path.to_path_buf(),
        message: format!("{}: {error}", CheckpointFile::State.file_name()),
    })
}

/// A checkpoint read back: its state, the weights loaded into `model`, and the optimizer.
pub struct LoadedCheckpoint {
    /// The recorded state.
    pub state: CheckpointState,
    /// The model with the checkpoint's weights.
    pub model: Classifier,
    /// The optimizer with the checkpoint's state (momentum buffers and so on).
    pub optimizer: ModuleOptimizer,
}

/// Reads the checkpoint folder `path` into `model` and `optimizer` (freshly initialized ones
/// of the same shape and kind).
pub fn load_checkpoint(
    path: &Path,
    model: Classifier,
    optimizer: ModuleOptimizer,
) -> Result<LoadedCheckpoint, TrainError> {
    let read = |file: CheckpointFile| {
        let file = file.path_in(path);
        std::fs::read(&file).map_err(|error| TrainError::io(file, error))
    };
    let checkpoint_error = |message: String| TrainError::Checkpoint {
        path: path.to_path_buf(),
        message,
    };
    let state = read_checkpoint_state(path)?;
    let model = model
        .load_weight_bytes(&read(CheckpointFile::Weights)?, WeightFormat::Burnpack)
        .map_err(|error| {
            let name = CheckpointFile::Weights.file_name();
            checkpoint_error(format!("{name}: {error}"))
        })?;
    let optimizer = optimizer
        .from_bytes(Bytes::from_bytes_vec(read(CheckpointFile::OptimizerState)?))
        .map_err(|error| {
            let name = CheckpointFile::OptimizerState.file_name();
            checkpoint_error(format!("{name}: {error:?}"))
        })?;
    Ok(LoadedCheckpoint {
        state,
        model,
        optimizer,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn a_state_with_a_text_identity_is_a_checkpoint_error() {
        // What checkpoints written before `RunIdentity` hold: the identity as one string.
        let folder = tempfile::tempdir().unwrap();
        let checkpoint = folder.path().join("epoch-0001");
        std::fs::create_dir(&checkpoint).unwrap();
        std::fs::write(
            CheckpointFile::State.path_in(&checkpoint),
            r#"{"epochs_completed": 1, "steps_completed": 5,
                "loader_state": {"seed": 42, "epoch": 1, "position": 0},
                "epoch_metrics": [],
                "run_identity": "model=MlpConfig batch_size=64 lr=0.01"}"#,
        )
        .unwrap();
        let error = read_checkpoint_state(&checkpoint).unwrap_err();
        match &error {
            TrainError::Checkpoint { path, message } => {
                assert_eq!(path, &checkpoint);
                assert!(message.contains("checkpoint.json"), "{message}");
            }
            other => panic!("expected a checkpoint error, got {other:?}"),
        }
    }

    #[test]
    fn checkpoints_order_by_epoch_then_end_then_step() {
        let mut names = [
            "epoch-0002",
            "epoch-0001-step-000000005",
            "epoch-0002-step-000000012",
            "epoch-0001",
            "epoch-0010-step-000000100",
            "epoch-0002-step-000000009",
        ];
        names.sort_by_key(|name| checkpoint_order(name).unwrap());
        assert_eq!(
            names,
            [
                "epoch-0001-step-000000005",
                "epoch-0001",
                "epoch-0002-step-000000009",
                "epoch-0002-step-000000012",
                "epoch-0002",
                "epoch-0010-step-000000100",
            ]
        );
        assert_eq!(checkpoint_order(".epoch-0001.abc.partial"), None);
        assert_eq!(checkpoint_order("epoch-x"), None);
    }

    #[test]
    fn checkpoint_files_have_distinct_names() {
        let names = [
            CheckpointFile::Weights,
            CheckpointFile::OptimizerState,
            CheckpointFile::State,
        ]
        .map(CheckpointFile::file_name);
        assert_eq!(names, ["model.bpk", "optimizer.bin", "checkpoint.json"]);
    }
}
