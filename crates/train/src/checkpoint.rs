//! Per-epoch checkpoints: the model's weights, the optimizer's state and the loader's
//! position, written as one folder that appears atomically.

use std::path::{Path, PathBuf};

use burn::optim::ModuleOptimizer;
use burn::tensor::Bytes;
use reclaim_loader::LoaderState;
use reclaim_model::{SimpleNn, WeightFormat};
use serde::{Deserialize, Serialize};

use crate::files::{temporary_sibling, write_file_atomically};
use crate::{EpochMetrics, TrainError};

const MODEL_FILE: &str = "model.bpk";
const OPTIMIZER_FILE: &str = "optimizer.bin";
const STATE_FILE: &str = "checkpoint.json";
const CHECKPOINTS_FOLDER: &str = "checkpoints";

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
    /// The settings that must not change across a resume, as text (`TrainConfig::identity`).
    pub run_identity: String,
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
    let final_path = folder.join(format!("epoch-{:04}", state.epochs_completed));
    let temporary = temporary_sibling(&final_path);
    std::fs::create_dir(&temporary).map_err(|error| TrainError::io(&temporary, error))?;
    let written = (|| {
        let model_bytes = model.to_weight_bytes(WeightFormat::Burnpack)?;
        write_file_atomically(&temporary.join(MODEL_FILE), &model_bytes)?;
        let optimizer_bytes = optimizer
            .into_bytes()
            .map_err(|error| TrainError::Checkpoint {
                path: final_path.clone(),
                message: format!("cannot serialize the optimizer: {error:?}"),
            })?;
        write_file_atomically(&temporary.join(OPTIMIZER_FILE), &optimizer_bytes)?;
        let state_text = serde_json::to_vec_pretty(state).expect("checkpoint state serializes");
        write_file_atomically(&temporary.join(STATE_FILE), &state_text)?;
        if final_path.exists() {
            std::fs::remove_dir_all(&final_path)
                .map_err(|error| TrainError::io(&final_path, error))?;
        }
        std::fs::rename(&temporary, &final_path).map_err(|error| TrainError::io(&final_path, error))
    })();
    if written.is_err() {
        let _ = std::fs::remove_dir_all(&temporary);
    }
    written.map(|()| final_path)
}

/// The newest complete checkpoint of a run, if any.
pub fn latest_checkpoint(run_folder: &Path) -> Option<PathBuf> {
    let entries = std::fs::read_dir(checkpoints_folder(run_folder)).ok()?;
    entries
        .filter_map(Result::ok)
        .filter_map(|entry| {
            let name = entry.file_name().into_string().ok()?;
            let epoch: usize = name.strip_prefix("epoch-")?.parse().ok()?;
            entry
                .path()
                .join(STATE_FILE)
                .is_file()
                .then(|| (epoch, entry.path()))
        })
        .max_by_key(|(epoch, _)| *epoch)
        .map(|(_, path)| path)
}

/// Reads only the state of the checkpoint folder `path`.
pub fn read_checkpoint_state(path: &Path) -> Result<CheckpointState, TrainError> {
    let file = path.join(STATE_FILE);
    let bytes = std::fs::read(&file).map_err(|error| TrainError::io(&file, error))?;
    serde_json::from_slice(&bytes).map_err(|error| TrainError::Checkpoint {
        path: path.to_path_buf(),
        message: format!("{STATE_FILE}: {error}"),
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
    let read = |name: &str| {
        let file = path.join(name);
        std::fs::read(&file).map_err(|error| TrainError::io(file, error))
    };
    let checkpoint_error = |message: String| TrainError::Checkpoint {
        path: path.to_path_buf(),
        message,
    };
    let state = read_checkpoint_state(path)?;
    let model = model.load_weight_bytes(&read(MODEL_FILE)?, WeightFormat::Burnpack)?;
    let optimizer = optimizer
        .from_bytes(Bytes::from_bytes_vec(read(OPTIMIZER_FILE)?))
        .map_err(|error| checkpoint_error(format!("{OPTIMIZER_FILE}: {error:?}")))?;
    Ok(LoadedCheckpoint {
        state,
        model,
        optimizer,
    })
}
