//! Per-epoch checkpoints: the model's weights, the optimizer's state and the loader's
//! position, written as one folder that appears atomically.

use std::path::{Path, PathBuf};

use burn::optim::ModuleOptimizer;
use burn::tensor::Bytes;
use reclaim_loader::LoaderState;
use reclaim_model::{SimpleNn, WeightFormat};
use serde::{Deserialize, Serialize};

use crate::files::write_file_atomically;
use crate::{EpochMetrics, RunIdentity, TrainError};

const CHECKPOINTS_FOLDER: &str = "checkpoints";

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
}

/// The folder holding a run's checkpoints.
pub fn checkpoints_folder(run_folder: &Path) -> PathBuf {
    run_folder.join(CHECKPOINTS_FOLDER)
}

/// Writes a checkpoint as `RUN/checkpoints/epoch-NNNN`, atomically: the folder is assembled
/// under a temporary name and renamed into place once complete. Returns its path.
pub fn save_checkpoint(
    run_folder: &Path,
    model: &SimpleNn,
    optimizer: &ModuleOptimizer,
    state: &CheckpointState,
) -> Result<PathBuf, TrainError> {
    let folder = checkpoints_folder(run_folder);
    std::fs::create_dir_all(&folder).map_err(|error| TrainError::io(&folder, error))?;
    let name = format!("epoch-{:04}", state.epochs_completed);
    let final_path = folder.join(&name);
    // Assembled in a uniquely named folder beside its final place, deleted if anything fails.
    let temporary = tempfile::Builder::new()
        .prefix(&format!(".{name}."))
        .suffix(".partial")
        .tempdir_in(&folder)
        .map_err(|error| TrainError::io(&folder, error))?;
    let file = |file: CheckpointFile| file.path_in(temporary.path());
    let model_bytes = model.to_weight_bytes(WeightFormat::Burnpack)?;
    write_file_atomically(&file(CheckpointFile::Weights), &model_bytes)?;
    let optimizer_bytes = optimizer
        .into_bytes()
        .map_err(|error| TrainError::Checkpoint {
            path: final_path.clone(),
            message: format!("cannot serialize the optimizer: {error:?}"),
        })?;
    write_file_atomically(&file(CheckpointFile::OptimizerState), &optimizer_bytes)?;
    let state_text = serde_json::to_vec_pretty(state).map_err(|error| TrainError::Checkpoint {
        path: final_path.clone(),
        message: format!("cannot write its state as JSON: {error}"),
    })?;
    write_file_atomically(&file(CheckpointFile::State), &state_text)?;
    if final_path.exists() {
        std::fs::remove_dir_all(&final_path).map_err(|error| TrainError::io(&final_path, error))?;
    }
    std::fs::rename(temporary.path(), &final_path)
        .map_err(|error| TrainError::io(&final_path, error))?;
    // Renamed into place: nothing is left under the temporary name to delete.
    let _ = temporary.keep();
    Ok(final_path)
}

/// The newest complete checkpoint of a run, if any.
pub fn latest_checkpoint(run_folder: &Path) -> Option<PathBuf> {
    let entries = std::fs::read_dir(checkpoints_folder(run_folder)).ok()?;
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let epoch: usize = name.strip_prefix("epoch-")?.parse().ok()?;
            CheckpointFile::State
                .path_in(&entry.path())
                .is_file()
                .then(|| (epoch, entry.path()))
        })
        .max_by_key(|(epoch, _)| *epoch)
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
    pub model: SimpleNn,
    /// The optimizer with the checkpoint's state (momentum buffers and so on).
    pub optimizer: ModuleOptimizer,
}

/// Reads the checkpoint folder `path` into `model` and `optimizer` (freshly initialized ones
/// of the same shape and kind).
pub fn load_checkpoint(
    path: &Path,
    model: SimpleNn,
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
    let model = model.load_weight_bytes(&read(CheckpointFile::Weights)?, WeightFormat::Burnpack)?;
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
                "run_identity": "model=SimpleNnConfig batch_size=64 lr=0.01"}"#,
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
