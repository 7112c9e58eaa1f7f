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
    /// Opening or validating the dataset failed.
    #[error(transparent)]
    Dataset(#[from] reclaim_dataset::DatasetError),
    /// The loader failed (a worker panicked, say).
    #[error(transparent)]
    Loader(#[from] reclaim_loader::LoaderError),
    /// Saving or loading the model's weights failed.
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
    /// A configuration value is out of range.
    #[error("invalid {setting}: {message}")]
    InvalidConfig {
        /// The setting.
        setting: &'static str,
        /// Why it is refused.
        message: String,
    },
}

impl TrainError {
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        TrainError::Io {
            path: path.into(),
            source,
        }
    }
}
