use std::fmt;
use std::path::PathBuf;

/// Everything that can go wrong in `reclaim-train`.
#[derive(Debug)]
#[non_exhaustive]
pub enum TrainError {
    /// A backend name that Reclaim does not know.
    UnknownBackend {
        /// The name as given.
        name: String,
    },
    /// A known backend whose cargo feature is not enabled in this build.
    BackendNotCompiled {
        /// The backend's name.
        backend: &'static str,
        /// The feature to enable.
        feature: &'static str,
    },
    /// Reading or writing a file failed.
    Io {
        /// The file or folder.
        path: PathBuf,
        /// The underlying error.
        source: std::io::Error,
    },
    /// Opening or validating the dataset failed.
    Dataset(reclaim_dataset::DatasetError),
    /// The loader failed (a worker panicked, say).
    Loader(reclaim_loader::LoaderError),
    /// Saving or loading the model's weights failed.
    Model(reclaim_model::ModelError),
    /// A checkpoint is unreadable or does not fit this run.
    Checkpoint {
        /// The checkpoint's folder.
        path: PathBuf,
        /// What is wrong with it.
        message: String,
    },
    /// `--resume` was asked for but the run folder holds no checkpoint.
    NoCheckpoint {
        /// The run folder searched.
        folder: PathBuf,
    },
    /// The device failed to run the computation.
    Device {
        /// What the backend reported.
        message: String,
    },
    /// A configuration value is out of range.
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

impl fmt::Display for TrainError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            TrainError::UnknownBackend { name } => write!(
                formatter,
                "unknown backend '{name}' (known: ndarray, flex, wgpu, cuda)"
            ),
            TrainError::BackendNotCompiled { backend, feature } => write!(
                formatter,
                "the {backend} backend is not compiled into this build: rebuild with `--features {feature}`"
            ),
            TrainError::Io { path, source } => write!(formatter, "{}: {source}", path.display()),
            TrainError::Dataset(error) => write!(formatter, "{error}"),
            TrainError::Loader(error) => write!(formatter, "{error}"),
            TrainError::Model(error) => write!(formatter, "{error}"),
            TrainError::Checkpoint { path, message } => {
                write!(formatter, "checkpoint {}: {message}", path.display())
            }
            TrainError::NoCheckpoint { folder } => write!(
                formatter,
                "nothing to resume: {} holds no checkpoint",
                folder.display()
            ),
            TrainError::Device { message } => write!(formatter, "device error: {message}"),
            TrainError::InvalidConfig { setting, message } => {
                write!(formatter, "invalid {setting}: {message}")
            }
        }
    }
}

impl std::error::Error for TrainError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            TrainError::Io { source, .. } => Some(source),
            TrainError::Dataset(error) => Some(error),
            TrainError::Loader(error) => Some(error),
            TrainError::Model(error) => Some(error),
            _ => None,
        }
    }
}

impl From<reclaim_dataset::DatasetError> for TrainError {
    fn from(error: reclaim_dataset::DatasetError) -> Self {
        TrainError::Dataset(error)
    }
}

impl From<reclaim_loader::LoaderError> for TrainError {
    fn from(error: reclaim_loader::LoaderError) -> Self {
        TrainError::Loader(error)
    }
}

impl From<reclaim_model::ModelError> for TrainError {
    fn from(error: reclaim_model::ModelError) -> Self {
        TrainError::Model(error)
    }
}
