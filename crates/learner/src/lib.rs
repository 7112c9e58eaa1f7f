//! `reclaim-learner`: Reclaim's loader and model inside burn-train's `Learner`.
//!
//! Most Burn users train with burn-train: a model, an optimizer and two `DataLoader`s handed
//! to `SupervisedTraining::launch`. Reclaim's [`BurnLoader`](reclaim_loader::BurnLoader)
//! already is a `DataLoader` of [`TensorBatch`](reclaim_loader::TensorBatch)es; this crate
//! adds the rest, so that reclaim-loader and reclaim-model stay free of burn-train:
//!
//! - [`LearnerClassifier`]: a [`Classifier`](reclaim_model::Classifier) (the MLP or the CNN)
//!   with burn-train's `TrainStep` and `InferenceStep`, producing `ClassificationOutput` (so burn-train's
//!   accuracy, loss and other classification metrics apply).
//! - [`classification_training`]: `SupervisedTraining` with accuracy and loss on both splits.
//! - [`trained_model`]: the model of a finished run, or a [`LearnerError`] saying why it
//!   stopped. A loader error does not panic: burn-train stops the epoch at the first failed
//!   batch, ends the run and keeps the error; [`LearnerError::loader_error`] gives back
//!   Reclaim's [`LoaderError`](reclaim_loader::LoaderError), message and all
//!   ([`loader_error_of`] finds it in any burn-train `TrainingError`).
//! - [`SplitLinesRenderer`]: burn-train's progress as a line per split, not per batch.
//! - [`epoch_means`]: a metric's per-epoch means, read back from the run folder.
//! - [`burn_train`] itself, re-exported, so that the `Learner` and the metrics are named
//!   with the version this crate was built against.
//!
//! Several devices: burn-train's multi-device strategy splits the training loader with
//! `DataLoader::slice`; a `BurnLoader`'s slices share out every epoch's draws exactly (see
//! its `slice`).
//!
//! ```
//! use std::sync::Arc;
//!
//! use burn::optim::SgdConfig;
//! use burn::tensor::Device;
//! use reclaim_learner::burn_train::Learner;
//! use reclaim_learner::{LearnerClassifier, classification_training, trained_model};
//! use reclaim_loader::{BurnLoader, ImageShape, ImageSource, LoaderConfig, LoaderError};
//! use reclaim_model::MlpConfig;
//!
//! /// 128 images of 28 x 28 whose brightness is their label.
//! #[derive(Debug)]
//! struct Shades;
//!
//! impl ImageSource for Shades {
//!     fn len(&self) -> usize { 128 }
//!     fn image_shape(&self) -> ImageShape { ImageShape::MNIST }
//!     fn read_sample(&self, index: usize, pixels: &mut [u8]) -> Result<i64, LoaderError> {
//!         let label = index % 10;
//!         pixels.fill(label as u8 * 25);
//!         Ok(label as i64)
//!     }
//! }
//!
//! # fn main() -> Result<(), Box<dyn std::error::Error>> {
//! let device = Device::flex();
//! let config = LoaderConfig { batch_size: 32, seed: 7, ..LoaderConfig::default() };
//! let training = Arc::new(BurnLoader::<_, 2>::new(Shades, config.clone(), device.clone())?);
//! let validation = Arc::new(BurnLoader::<_, 2>::new(Shades, config, device.clone())?);
//!
//! let folder = tempfile::tempdir()?;
//! let model = LearnerClassifier::new(MlpConfig::new().init_seeded(&device, 42));
//! let learner = Learner::new(model, SgdConfig::new().init(), 0.05);
//! let result = classification_training(folder.path(), training, validation)
//!     .num_epochs(1)
//!     .launch(learner);
//! let network = trained_model(result)?.into_network();
//! assert_eq!(network.forward(burn::tensor::Tensor::<2>::zeros([1, 784], &device)).dims(), [1, 10]);
//! # Ok(())
//! # }
//! ```

mod error;
mod outcome;
mod renderer;
mod step;
mod training;

pub use burn_train;
pub use error::{LearnerError, loader_error_of};
pub use outcome::{EpochMeans, epoch_means, trained_model};
pub use renderer::SplitLinesRenderer;
pub use step::LearnerClassifier;
pub use training::classification_training;
