//! [`LearnerError`], the crate's one error type.

use std::path::PathBuf;
use std::sync::Arc;

use burn_train::TrainingError;
use reclaim_loader::LoaderError;

/// Everything that can end a `Learner` run made with this crate without a model.
///
/// No message repeats its cause: the `Learner`'s own error is the `source()` of
/// [`LoaderFailed`](LearnerError::LoaderFailed) and
/// [`TrainingFailed`](LearnerError::TrainingFailed); print the chain (anyhow's `{:#}`) to see
/// every cause, or ask [`loader_error`](LearnerError::loader_error) for Reclaim's.
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum LearnerError {
    /// A batch could not be loaded: the `Learner` stopped at it (the rest of that epoch, and
    /// every later epoch, did not run).
    #[error("the Learner stopped: a batch could not be loaded")]
    LoaderFailed {
        /// The `Learner`'s error, whose chain holds the [`LoaderError`].
        source: Arc<TrainingError>,
    },
    /// The `Learner` failed for another reason (a metric, a checkpoint, a training worker).
    #[error("the Learner stopped on an error")]
    TrainingFailed {
        /// The `Learner`'s error.
        source: Arc<TrainingError>,
    },
    /// The run was stopped through its `Interrupter`, or by early stopping's interrupter.
    #[error("the Learner was interrupted ({})", reason.as_deref().unwrap_or("no reason given"))]
    Interrupted {
        /// The reason given to the interrupter, if any.
        reason: Option<String>,
    },
    /// The metrics a run left in its folder could not be read.
    #[error("cannot read the Learner's metrics in {directory}: {message}")]
    Metrics {
        /// The run's folder.
        directory: PathBuf,
        /// What burn-train's summary reported.
        message: String,
    },
    /// A metric asked for is not among those the run logged.
    #[error("the Learner's run in {directory} logged no metric named '{name}'")]
    MissingMetric {
        /// The run's folder.
        directory: PathBuf,
        /// The metric's name.
        name: String,
    },
}

impl LearnerError {
    /// The loader's own error, when a batch could not be loaded.
    pub fn loader_error(&self) -> Option<&LoaderError> {
        match self {
            LearnerError::LoaderFailed { source } => loader_error_of(source),
            _ => None,
        }
    }
}

/// The [`LoaderError`] in the cause chain of a `Learner`'s error, if the run stopped because a
/// Reclaim loader failed (burn-train wraps it as `TrainingError::Dataset(DatasetError)`).
pub fn loader_error_of(error: &TrainingError) -> Option<&LoaderError> {
    let mut cause: Option<&(dyn std::error::Error + 'static)> = Some(error);
    while let Some(current) = cause {
        if let Some(loader_error) = current.downcast_ref::<LoaderError>() {
            return Some(loader_error);
        }
        cause = current.source();
    }
    None
}
