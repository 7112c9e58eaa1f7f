//! Evaluation on the test split: after each epoch, in the warm-up, and of saved weights.

use burn::tensor::{Device, Tensor};
use reclaim_loader::{ImageSource, Loader, LoaderConfig, PixelFormat, Sampling, TensorBatch};
use reclaim_model::{Classifier, ClassifierConfig, WeightFormat};
use serde::{Deserialize, Serialize};

use super::dataset_check::check_splits;
use super::dataset_defaults::PixelScaling;
use crate::{BackendChoice, TrainError, TrainingData};

/// The number of test images per evaluation batch.
pub(super) const EVALUATION_BATCH_SIZE: usize = 1000;

/// Accuracy and loss of a model on the test split.
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct Evaluation {
    /// Fraction classified correctly, in `[0, 1]`.
    pub accuracy: f64,
    /// Mean cross-entropy.
    pub loss: f64,
    /// Samples evaluated.
    pub samples: usize,
}

/// Evaluates `model` on every sample of `source`, in batches of [`EVALUATION_BATCH_SIZE`],
/// each label checked to be below `class_count` as it is read.
pub(super) fn evaluate_source<S: ImageSource + ?Sized>(
    model: &Classifier,
    source: &S,
    pixel_format: PixelFormat,
    class_count: usize,
    device: &Device,
) -> Result<Evaluation, TrainError> {
    let loader = Loader::new(
        source,
        LoaderConfig {
            batch_size: EVALUATION_BATCH_SIZE,
            sampling: Sampling::Sequential,
            pixel_format,
            class_count: Some(class_count),
            ..LoaderConfig::default()
        },
    )?;
    std::thread::scope(|scope| {
        let epoch = loader.epoch(scope, 0)?;
        let mut loss_sum = Tensor::<1>::zeros([1], device);
        let mut correct = Tensor::<1, burn::tensor::Int>::zeros([1], device);
        let mut samples = 0usize;
        for batch in &epoch {
            let batch = batch?;
            let batch_size = batch.len();
            let TensorBatch { images, labels } = batch.into_tensors::<2>(device)?;
            let logits = model.forward(images);
            loss_sum = loss_sum
                + model
                    .loss(logits.clone(), labels.clone())
                    .mul_scalar(batch_size as f32);
            correct = correct + model.correct_predictions(logits, labels);
            samples += batch_size;
        }
        let loss_sum = f64::from(loss_sum.into_scalar::<f32>());
        let correct = correct.into_scalar::<i64>();
        Ok(Evaluation {
            accuracy: correct as f64 / samples.max(1) as f64,
            loss: loss_sum / samples.max(1) as f64,
            samples,
        })
    })
}

/// Evaluates burnpack weights of a `model` on the test split of `data` (opened by the caller,
/// owned or mapped: see [`TrainingData::open`]), after the same checks of the dataset against
/// the model as a run makes.
pub fn evaluate_weights(
    weights: &[u8],
    model: &ClassifierConfig,
    data: &TrainingData,
    backend: BackendChoice,
    pixel_scaling: PixelScaling,
) -> Result<Evaluation, TrainError> {
    check_splits(data, model)?;
    let device = backend.device()?;
    let classes = model.number_of_classes();
    let model = model
        .init(&device)?
        .load_weight_bytes(weights, WeightFormat::Burnpack)?;
    evaluate_source(
        &model,
        data.test(),
        pixel_scaling.pixel_format(),
        classes,
        &device,
    )
}
