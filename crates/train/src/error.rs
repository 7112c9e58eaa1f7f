use std::path::PathBuf;

/// Everything that can go wrong in `reclaim-train`.
///
/// No message repeats its cause: `Io` keeps the operating system's error as its `source()`, and
/// `Dataset`, `Loader` and `Model` are transparent (their message and `source()` are the inner
/// error's). Print the chain (anyhow's `{:#}`) to see every cause.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum TrainError {
    /// A backend name that Reclaim does not know.
    #[error("unknown backend '{name}' (known: ndarray, flex, wgpu, cuda)")]
    UnknownBackend {
        /// The name as given.
        name: String,
    },
    /// A known backend whose cargo feature is not enabled in this build.
    #[error(
        "the {backend} backend is not compiled into this build: rebuild with `--features {feature}`"
    )]
    BackendNotCompiled {
        /// The backend's name.
        backend: &'static str,
        /// The feature to enable.
        feature: &'static str,
    },
    /// Reading or writing a file failed.
    #[error("{path}: input/output error")]
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// A line of a JSON-lines file (metrics, steps, memory timeline) is not a record of it.
    #[error("{path}, line {line}: not a valid record")]
    Record {
        /// The file.
        path: PathBuf,
        /// The line's number, from 1.
        line: usize,
        /// What the JSON parser reported.
        source: serde_json::Error,
    },
    /// A run folder's record could not be read or written, for a reason other than those above.
    #[error(transparent)]
    Records(reclaim_records::RecordsError),
    /// Opening or validating the dataset failed.
    #[error(transparent)]
    Dataset(#[from] reclaim_dataset::DatasetError),
    /// The loader failed (a worker panicked, say).
    #[error(transparent)]
    Loader(#[from] reclaim_loader::LoaderError),
    /// The model refused its configuration, saving or loading its weights failed, or the
    /// fused step could not read a parameter back or was given a batch it cannot take.
    #[error(transparent)]
    Model(#[from] reclaim_model::ModelError),
    /// A checkpoint is unreadable or does not fit this run.
    #[error("checkpoint {path}: {message}")]
    Checkpoint {
        /// The checkpoint's folder.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// `--resume` was asked for but the run folder holds no checkpoint.
    #[error("nothing to resume: {folder} holds no checkpoint")]
    NoCheckpoint {
        /// The run folder searched.
        folder: PathBuf,
    },
    /// The device failed to run the computation.
    #[error("device error: {message}")]
    Device {
        /// What the backend reported.
        message: String,
    },
    /// The model's input size does not fit the dataset's images.
    #[error(
        "{images}: images are {channels} x {height} x {width} = {pixels} pixels, but the model \
         takes {model_inputs} inputs"
    )]
    InputSizeMismatch {
        /// The training images' file.
        images: PathBuf,
        /// Image channels.
        channels: usize,
        /// Image rows.
        height: usize,
        /// Image columns.
        width: usize,
        /// `channels * height * width`.
        pixels: usize,
        /// The model's input size.
        model_inputs: usize,
    },
    /// A convolutional model was configured for images of another shape (the same number of
    /// values, arranged otherwise).
    #[error("{images}: images are {images_shape}, but the model takes {model_shape} images")]
    ImageShapeMismatch {
        /// The training images' file.
        images: PathBuf,
        /// The images' shape, `CxHxW`.
        images_shape: String,
        /// The shape the model takes, `CxHxW`.
        model_shape: String,
    },
    /// The test split's images have another shape than the training split's.
    #[error(
        "{test_images}: test images are {test_height} x {test_width}, but the training \
         images ({train_images}) are {train_height} x {train_width}"
    )]
    SplitShapesDiffer {
        /// The training images' file.
        train_images: PathBuf,
        /// Training image rows.
        train_height: usize,
        /// Training image columns.
        train_width: usize,
        /// The test images' file.
        test_images: PathBuf,
        /// Test image rows.
        test_height: usize,
        /// Test image columns.
        test_width: usize,
    },
    /// A split holds no sample.
    #[error("{images}: the split holds no image")]
    EmptySplit {
        /// The split's images file.
        images: PathBuf,
    },
    /// A label of the dataset is not below the model's number of outputs (its classes).
    #[error(
        "{labels}: sample {index} has label {label}, but the model has {classes} outputs \
         (labels 0 to {})",
        classes.saturating_sub(1)
    )]
    LabelOutOfRange {
        /// The labels file.
        labels: PathBuf,
        /// The sample.
        index: usize,
        /// Its label.
        label: u8,
        /// The model's number of outputs.
        classes: usize,
    },
    /// The training loss stopped being a finite number: the run stopped at that step, the
    /// files written so far stay readable, and the last checkpoint (written before the
    /// divergence) stays resumable.
    #[error(
        "the training loss became {loss} at step {step} (epoch {epoch}): training diverged \
         (a smaller learning rate usually helps); {}",
        match last_checkpoint {
            Some(path) => format!("the last good checkpoint is {}", path.display()),
            None => "no checkpoint had been written yet".to_string(),
        }
    )]
    Diverged {
        /// The first step whose loss was not finite (counted from 1 over the run).
        step: usize,
        /// Its epoch (counted from 1).
        epoch: usize,
        /// The loss (NaN or an infinity).
        loss: f64,
        /// The newest checkpoint, written before the divergence.
        last_checkpoint: Option<PathBuf>,
    },
    /// The run was asked to stop ([`TrainConfig::cancellation`](crate::TrainConfig::cancellation),
    /// set by Ctrl-C in `reclaim train`): it finished its step, wrote a checkpoint and flushed
    /// its files.
    #[error("stopped after step {step} (epoch {epoch}); checkpoint {}", checkpoint.display())]
    Interrupted {
        /// Steps completed (counted from 1 over the run).
        step: usize,
        /// The epoch in progress (counted from 1).
        epoch: usize,
        /// The checkpoint written on the way out, from which the run resumes.
        checkpoint: PathBuf,
    },
    /// Another process holds the run folder.
    #[error("{folder} is in use by another run ({holder}); wait for it or choose another folder")]
    RunFolderLocked {
        /// The run folder.
        folder: PathBuf,
        /// Who holds it, as that process recorded itself (process id, host, start time).
        holder: String,
    },
    /// A fresh run was asked for in a folder that holds another run.
    #[error(
        "{folder} holds another run ({found}); resume it, choose another folder, or overwrite it \
         (StartPolicy::Overwrite, `reclaim train --overwrite`)"
    )]
    RunFolderOccupied {
        /// The run folder.
        folder: PathBuf,
        /// What was found (`config.json, checkpoints/`).
        found: String,
    },
    /// A model this backend does not train ([`BackendChoice::training_obstacle`]).
    ///
    /// [`BackendChoice::training_obstacle`]: crate::BackendChoice::training_obstacle
    #[error("the {model} model is not offered for training on the {backend} backend: {reason}")]
    ModelNotOffered {
        /// The model asked for.
        model: reclaim_model::ModelKind,
        /// The backend asked for.
        backend: crate::BackendChoice,
        /// Why, and what to use instead.
        reason: &'static str,
    },
    /// A configuration value is out of range.
    #[error("invalid {setting}: {message}")]
    InvalidConfig {
        /// The setting.
        setting: &'static str,
        /// Why it is refused.
        message: String,
    },
}

/// A record's file error is this crate's [`TrainError::Io`] or [`TrainError::Record`], as every
/// other file error of the crate is.
impl From<reclaim_records::RecordsError> for TrainError {
    fn from(error: reclaim_records::RecordsError) -> Self {
        match error {
            reclaim_records::RecordsError::Io { path, source } => TrainError::Io { path, source },
            reclaim_records::RecordsError::Record { path, line, source } => {
                TrainError::Record { path, line, source }
            }
            other => TrainError::Records(other),
        }
    }
}

impl TrainError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        TrainError::Io {
            path: path.into(),
            source,
        }
    }
}
