//! What a `Learner` run ended with: [`trained_model`] and [`epoch_means`].

use std::path::Path;

use burn_train::{LearnerSummary, LearningResult};

use crate::error::{LearnerError, loader_error_of};

/// The model of a finished run, or why the run ended early.
///
/// burn-train does not panic when a loader fails: the first error a training or validation
/// epoch meets stops that epoch and the run, and is kept in
/// [`LearningResult::error`]. This turns it into a [`LearnerError`]:
/// [`LoaderFailed`](LearnerError::LoaderFailed) when the cause is Reclaim's loader (its
/// [`LoaderError`](reclaim_loader::LoaderError) is then
/// [`loader_error`](LearnerError::loader_error)), else
/// [`TrainingFailed`](LearnerError::TrainingFailed), and
/// [`Interrupted`](LearnerError::Interrupted) for a run stopped by its interrupter.
///
/// # Errors
///
/// As above.
pub fn trained_model<M>(result: LearningResult<M>) -> Result<M, LearnerError> {
    if let Some(error) = result.error {
        return Err(match loader_error_of(&error) {
            Some(_) => LearnerError::LoaderFailed { source: error },
            None => LearnerError::TrainingFailed { source: error },
        });
    }
    if let Some(interruption) = result.interrupted {
        return Err(LearnerError::Interrupted {
            reason: interruption.reason,
        });
    }
    Ok(result.model)
}

/// The per-epoch means of one numeric metric, as burn-train's file logger wrote them.
#[derive(Clone, Debug, Default, PartialEq)]
pub struct EpochMeans {
    /// The training split's mean, epoch 1 first.
    pub train: Vec<f64>,
    /// The validation split's mean, epoch 1 first.
    pub valid: Vec<f64>,
}

/// Reads the per-epoch means of `metric_name` (`"Loss"`, `"Accuracy"` in percent, …) from the
/// run folder `directory` of a finished `Learner` run.
///
/// # Errors
///
/// [`LearnerError::Metrics`] when burn-train's summary cannot read the folder,
/// [`LearnerError::MissingMetric`] when neither split logged the metric.
pub fn epoch_means(directory: &Path, metric_name: &str) -> Result<EpochMeans, LearnerError> {
    let summary = LearnerSummary::new(directory, &[metric_name]).map_err(|message| {
        LearnerError::Metrics {
            directory: directory.to_path_buf(),
            message,
        }
    })?;
    let values = |summaries: &[burn_train::MetricSummary]| -> Vec<f64> {
        summaries
            .iter()
            .filter(|summary| summary.name == metric_name)
            .flat_map(|summary| summary.entries.iter().map(|entry| entry.value))
            .collect()
    };
    let means = EpochMeans {
        train: values(&summary.metrics.train),
        valid: values(&summary.metrics.valid),
    };
    if means.train.is_empty() && means.valid.is_empty() {
        return Err(LearnerError::MissingMetric {
            directory: directory.to_path_buf(),
            name: metric_name.to_owned(),
        });
    }
    Ok(means)
}

#[cfg(test)]
mod tests {
    use std::sync::Arc;

    use burn::data::dataset::DatasetError;
    use burn_train::renderer::CliMetricsRenderer;
    use burn_train::{Interruption, TrainingError};
    use reclaim_loader::LoaderError;

    use super::*;

    fn result(
        error: Option<TrainingError>,
        interrupted: Option<Interruption>,
    ) -> LearningResult<u8> {
        LearningResult {
            model: 7,
            renderer: Box::new(CliMetricsRenderer::new()),
            interrupted,
            error: error.map(Arc::new),
        }
    }

    #[test]
    fn a_finished_run_gives_its_model() {
        assert_eq!(trained_model(result(None, None)).unwrap(), 7);
    }

    #[test]
    fn a_loader_error_is_found_in_the_learners_error() {
        let loader_error = LoaderError::WorkerVanished { worker: 1 };
        let message = loader_error.to_string();
        let dataset_error = TrainingError::Dataset(DatasetError::new(loader_error));
        let error = trained_model(result(Some(dataset_error), None)).unwrap_err();
        assert!(matches!(error, LearnerError::LoaderFailed { .. }));
        assert_eq!(error.loader_error().unwrap().to_string(), message);
    }

    #[test]
    fn another_dataset_error_is_a_training_failure() {
        let other = std::io::Error::other("not Reclaim's");
        let dataset_error = TrainingError::Dataset(DatasetError::new(other));
        let error = trained_model(result(Some(dataset_error), None)).unwrap_err();
        assert!(matches!(error, LearnerError::TrainingFailed { .. }));
        assert!(error.loader_error().is_none());
    }

    #[test]
    fn an_interruption_keeps_its_reason() {
        let interruption = Interruption {
            reason: Some("enough".to_owned()),
        };
        let error = trained_model(result(None, Some(interruption))).unwrap_err();
        assert_eq!(error.to_string(), "the Learner was interrupted (enough)");
    }

    #[test]
    fn a_folder_without_metrics_is_an_error() {
        let folder = std::env::temp_dir().join("reclaim-learner-no-such-run");
        assert!(epoch_means(&folder, "Loss").is_err());
    }
}
