//! [`classification_training`]: burn-train's `SupervisedTraining` set up for Reclaim.

use std::path::Path;
use std::sync::Arc;

use burn::data::dataloader::DataLoader;
use burn_train::SupervisedTraining;
use burn_train::metric::{AccuracyMetric, LossMetric};
use reclaim_loader::TensorBatch;

use crate::renderer::SplitLinesRenderer;
use crate::step::LearnerClassifier;

/// burn-train's `SupervisedTraining` for [`LearnerClassifier`], writing its metrics under
/// `directory`, with accuracy and loss logged for both splits and the summary printed at the
/// end ([`SplitLinesRenderer`]: a line per split; `renderer` replaces it).
///
/// One default of burn-train's is changed: no application logger is installed (burn-train's
/// would install a process-wide `tracing` subscriber writing `experiment.log`, which a library
/// should not decide for its caller; `with_application_logger` puts it back). No checkpointer
/// is configured either (burn-train's default); `with_default_checkpointers` adds its own.
///
/// A Reclaim [`BurnLoader`](reclaim_loader::BurnLoader) fits both loaders directly: wrap it in
/// an `Arc`. Set the epochs with `num_epochs`, then `launch` a `Learner`.
pub fn classification_training(
    directory: impl AsRef<Path>,
    training_loader: Arc<dyn DataLoader<TensorBatch<2>>>,
    validation_loader: Arc<dyn DataLoader<TensorBatch<2>>>,
) -> SupervisedTraining<LearnerClassifier> {
    SupervisedTraining::new(directory, training_loader, validation_loader)
        .metrics((AccuracyMetric::new(), LossMetric::new()))
        .with_application_logger(None)
        .renderer(Box::new(SplitLinesRenderer::default()))
        .summary()
}
