//! `reclaim-train`: the training loop, evaluation, metrics, checkpoints and memory reports.
//!
//! - [`TrainConfig`] and [`train`]: the PyTorch recipe (SGD at lr 0.01, batches of 64, shuffled,
//!   2 epochs, evaluation on the test split after each) on any [`BackendChoice`], writing
//!   `metrics.jsonl`, `steps.jsonl`, checkpoints (at each epoch's end, every N steps, and when
//!   cancelled through a [`CancellationFlag`]), `memory.jsonl` and the release report into the
//!   run folder, which it locks ([`RunFolderLock`]), and resuming from the newest checkpoint on
//!   request. Everything is checked before the first step ([`TrainConfig::validate`], the
//!   dataset against the model); a diverging loss ends the run with [`TrainError::Diverged`].
//! - [`DatasetStorage`]: the dataset read into memory, or mapped (an `unsafe` choice, its
//!   contract stated once).
//! - [`ReleaseReport`]: memory after each [`ReleaseStage`] — the loader's scope ends, the
//!   dataset is dropped, the device pool is cleaned up, the model is dropped.
//! - [`RunFile`] and [`CheckpointFile`]: the files of a run folder and of a checkpoint;
//!   [`RunIdentity`]: the settings a resume must share with its checkpoint, compared field by
//!   field.
//! - [`MemoryTimeline`]: a run's memory over time, sampled in the background and at each phase.
//!   The measurements themselves ([`MemorySnapshot`], [`CountingAllocator`], the `/proc`
//!   readers) live in `reclaim-memory` and are re-exported here.
//! - [`TrainError`]: the one error type of the crate.
//!
//! ```no_run
//! use reclaim_train::{BackendChoice, TrainConfig, train};
//!
//! let config = TrainConfig::recipe(
//!     BackendChoice::Ndarray,
//!     reclaim_dataset::default_data_folder(None, reclaim_dataset::Family::Mnist),
//!     "runs/example".into(),
//! );
//! let run = train(&config)?;
//! println!("test accuracy {:.2}%", run.final_test_accuracy().unwrap() * 100.0);
//! println!("{}", run.release.to_markdown());
//! # Ok::<(), reclaim_train::TrainError>(())
//! ```

mod backend;
mod checkpoint;
mod data;
mod error;
mod identity;
mod run_folder;
mod storage;
mod summary;
mod timeline;
mod trainer;

#[cfg(test)]
mod test_support;

pub use backend::BackendChoice;
pub use checkpoint::{
    CheckpointFile, CheckpointState, LoadedCheckpoint, PartialEpoch, checkpoints_folder,
    latest_checkpoint, load_checkpoint, read_checkpoint_state, save_checkpoint,
};
pub use data::{DataFingerprint, TrainingData};
pub use error::TrainError;
pub use identity::{IdentityDifference, RunIdentity};
/// Bar or nothing on the terminal while training ([`TrainConfig::progress`]); defined in
/// reclaim-dataset, where downloads use it too.
pub use reclaim_dataset::ProgressDisplay;
pub use reclaim_memory::{
    CountingAllocator, FreedMemoryReuse, MemorySnapshot, live_heap_bytes, mapped_bytes_of,
    mapped_bytes_under, peak_heap_bytes, resident_bytes, wait_for_settled_process,
};
/// The run folder's records, defined in reclaim-records (which `reclaim-report` reads without
/// Burn) and re-exported here for the trainer's callers.
pub use reclaim_records::{
    EpochMetrics, JsonLinesWriter, PhaseSeconds, ReleaseReport, ReleaseStage, ReleaseStep, RunFile,
    StepMetrics, TimelineSample, read_json_lines,
};
pub use run_folder::{RunFolderLock, RunFolderOwner};
pub use storage::DatasetStorage;
pub use timeline::MemoryTimeline;
pub use trainer::{
    CancellationFlag, Evaluation, LARGEST_FUSED_STEP_BATCH_ON_FLEX, MAX_EPOCHS, PackStatistics,
    PixelScaling, StartPolicy, StepKernel, StepKernelObstacle, TrainConfig, TrainRun,
    TrainingDataset, evaluate_weights, model_for_dataset, model_for_images, photo_augmentation,
    standard_augmentation, train,
};

/// The README's examples, run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
