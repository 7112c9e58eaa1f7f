//! [`TrainConfig`], what the caller sets for a run, and what is decided from it alone: its
//! checks, the optimizer, the training loader's settings and the epochs to run; with
//! [`StartPolicy`], how a run starts.

use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::time::Duration;

use burn::optim::decay::WeightDecayConfig;
use burn::optim::momentum::MomentumConfig;
use burn::optim::{ModuleOptimizer, SgdConfig};
use reclaim_dataset::{DatasetName, ProgressDisplay};

use super::dataset_defaults::TrainingDataset;
use reclaim_loader::{Augmentation, LoaderConfig, Order, PixelFormat, Sampling};
use reclaim_model::{ClassifierConfig, MlpConfig};
use serde::{Deserialize, Serialize};

use super::cancellation::CancellationFlag;
use super::dataset_defaults::PixelScaling;
use super::steps::{StepKernel, StepKernelObstacle};
use crate::{BackendChoice, DatasetStorage, TrainError};

/// Whether a run starts from scratch or continues from its newest checkpoint, and what it may
/// do to a run already in its folder.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum StartPolicy {
    /// Start from freshly initialized weights in a folder that holds no other run
    /// ([`TrainError::RunFolderOccupied`] otherwise).
    #[default]
    Fresh,
    /// Start from freshly initialized weights, replacing a run already in the folder: the old
    /// run is moved to `RUN/.previous-run/` and removed only once the new run has written its
    /// first checkpoint (put back if the new run fails before).
    Overwrite,
    /// Continue from the newest checkpoint in the run folder, which must have been written by
    /// a run of the same [`RunIdentity`](crate::RunIdentity). `config.json` stays as the first run wrote it.
    ResumeLatestCheckpoint,
}

/// The most epochs a run may ask for: epoch numbers are counted in 32 bits in messages and file
/// names, and no run of this crate's models needs more.
pub const MAX_EPOCHS: usize = u32::MAX as usize;

/// Everything a training run needs to know. [`TrainConfig::recipe`] gives the PyTorch recipe:
/// 2 epochs of SGD at lr 0.01, batches of 64, shuffled, pixels in `[0, 1]`.
///
/// Written into the run folder as `config.json`; there is no `Deserialize`, since a
/// configuration read from a file could not make [`DatasetStorage::mapped`]'s promise.
#[derive(Clone, Debug, PartialEq, Serialize)]
pub struct TrainConfig {
    /// Where the computation runs.
    pub backend: BackendChoice,
    /// Which dataset of the catalogue `data_folder` holds, and so its format: the MNIST
    /// family's four IDX files (raw or `.gz`) or CIFAR's record files.
    pub dataset: TrainingDataset,
    /// The dataset folder.
    pub data_folder: PathBuf,
    /// Whether the dataset is read into memory or mapped.
    pub storage: DatasetStorage,
    /// The run folder: metrics, checkpoints, reports and plots go here.
    pub run_folder: PathBuf,
    /// The model and its layer sizes (its input must be the dataset's images).
    pub model: ClassifierConfig,
    /// Random crops and flips of the training samples (none in the recipe); evaluation is
    /// never augmented.
    pub augmentation: Augmentation,
    /// Passes over the training split.
    pub epochs: usize,
    /// Samples per batch.
    pub batch_size: usize,
    /// SGD's learning rate.
    pub learning_rate: f64,
    /// SGD momentum (PyTorch's semantics: no dampening), if any.
    pub momentum: Option<f64>,
    /// L2 weight decay, if any.
    pub weight_decay: Option<f32>,
    /// Seeds the weights and every epoch's shuffle.
    pub seed: u64,
    /// Loader worker threads (0: batches are made on the training thread).
    pub workers: usize,
    /// Pixel scaling.
    pub pixel_scaling: PixelScaling,
    /// The training step asked for ([`TrainConfig::step_kernel_used`] gives the one taken).
    pub step_kernel: StepKernel,
    /// Train on the first N samples of the training split only (for quick runs and tests).
    pub training_sample_limit: Option<usize>,
    /// Stop after this many epochs have completed in total, as if interrupted (for tests of
    /// `--resume`); the checkpoint of the last completed epoch is written as usual.
    pub stop_after_epochs: Option<usize>,
    /// Fresh start or resume.
    pub start: StartPolicy,
    /// Progress bar or not.
    pub progress: ProgressDisplay,
    /// Interval of the background memory sampler.
    pub memory_sample_interval: Duration,
    /// Also write a checkpoint every N optimizer steps within epochs (the newest one written
    /// within an epoch is kept; every epoch's end is checkpointed regardless).
    pub checkpoint_every: Option<NonZeroUsize>,
    /// Set it to stop the run at its next step with a checkpoint.
    #[serde(skip)]
    pub cancellation: CancellationFlag,
}

impl TrainConfig {
    /// The PyTorch recipe on `backend`, reading `data_folder` and writing to `run_folder`.
    pub fn recipe(backend: BackendChoice, data_folder: PathBuf, run_folder: PathBuf) -> Self {
        TrainConfig {
            backend,
            dataset: TrainingDataset::Catalogue(DatasetName::Mnist),
            data_folder,
            run_folder,
            model: ClassifierConfig::Mlp(MlpConfig::new()),
            augmentation: Augmentation::NONE,
            epochs: 2,
            batch_size: 64,
            learning_rate: 0.01,
            momentum: None,
            weight_decay: None,
            seed: 42,
            workers: 0,
            pixel_scaling: PixelScaling::UnitRange,
            step_kernel: StepKernel::Fused,
            training_sample_limit: None,
            stop_after_epochs: None,
            start: StartPolicy::Fresh,
            progress: ProgressDisplay::Bar,
            memory_sample_interval: Duration::from_millis(20),
            checkpoint_every: None,
            cancellation: CancellationFlag::new(),
            storage: DatasetStorage::owned(),
        }
    }

    /// The step this run's training takes: [`TrainConfig::step_kernel`] where it applies, else
    /// Burn's dense step ([`StepKernel::used_for`], where the rule is stated).
    pub fn step_kernel_used(&self) -> StepKernel {
        self.step_kernel.used_for(self)
    }

    /// Why [`TrainConfig::step_kernel`] does not apply to these settings, or `None` where it
    /// does ([`StepKernel::obstacle`]).
    pub fn step_kernel_obstacle(&self) -> Option<StepKernelObstacle> {
        self.step_kernel.obstacle(self)
    }

    /// Checks every setting: [`TrainError::InvalidConfig`] naming the first out of range
    /// (numbers not finite, zero where at least one is needed, beyond [`MAX_EPOCHS`] or
    /// [`LoaderConfig::MAX_WORKERS`], a momentum outside `[0, 1]`, a negative weight decay, a
    /// folder that is not UTF-8). [`train`](crate::train) calls it first.
    pub fn validate(&self) -> Result<(), TrainError> {
        let invalid = |setting, message: &str| {
            Err(TrainError::InvalidConfig {
                setting,
                message: message.to_string(),
            })
        };
        if !(1..=MAX_EPOCHS).contains(&self.epochs) {
            return invalid(
                "epochs",
                &format!("{} is not between 1 and {MAX_EPOCHS}", self.epochs),
            );
        }
        if self.batch_size == 0 {
            return invalid("batch size", "must be at least 1");
        }
        if !(self.learning_rate.is_finite() && self.learning_rate > 0.0) {
            let message = format!("{} is not a positive finite number", self.learning_rate);
            return invalid("learning rate", &message);
        }
        if let Some(momentum) = self
            .momentum
            .filter(|momentum| !(0.0..=1.0).contains(momentum))
        {
            return invalid("momentum", &format!("{momentum} is not between 0 and 1"));
        }
        if let Some(decay) = self
            .weight_decay
            .filter(|decay| !(decay.is_finite() && *decay >= 0.0))
        {
            return invalid(
                "weight decay",
                &format!("{decay} is not a finite number of at least 0"),
            );
        }
        if self.workers > LoaderConfig::MAX_WORKERS {
            let message = format!(
                "{} is more than {}",
                self.workers,
                LoaderConfig::MAX_WORKERS
            );
            return invalid("workers", &message);
        }
        if self.training_sample_limit == Some(0) {
            return invalid("training sample limit", "must be at least 1");
        }
        if self.memory_sample_interval.is_zero() {
            return invalid("memory sample interval", "must be longer than zero");
        }
        if let Err(error) = self.model.validate() {
            return invalid("model", &error.to_string());
        }
        let model = self.model.kind();
        if let Some(reason) = self.backend.training_obstacle(model) {
            let backend = self.backend;
            return Err(TrainError::ModelNotOffered {
                model,
                backend,
                reason,
            });
        }
        // config.json and every checkpoint record both folders as JSON text.
        for (setting, folder) in [
            ("data folder", &self.data_folder),
            ("run folder", &self.run_folder),
        ] {
            if folder.to_str().is_none() {
                let message = format!(
                    "{} is not valid UTF-8, and a run records its folders in config.json",
                    folder.display()
                );
                return invalid(setting, &message);
            }
        }
        Ok(())
    }

    /// SGD with the configured momentum and weight decay.
    pub(super) fn optimizer(&self) -> ModuleOptimizer {
        let mut sgd = SgdConfig::new();
        if let Some(momentum) = self.momentum {
            sgd = sgd.with_momentum(Some(
                MomentumConfig::new()
                    .with_momentum(momentum)
                    .with_dampening(0.0),
            ));
        }
        if let Some(penalty) = self.weight_decay {
            sgd = sgd.with_weight_decay(Some(WeightDecayConfig::new(penalty)));
        }
        sgd.init()
    }

    /// What the loaders make of the pixels.
    pub(super) fn pixel_format(&self) -> PixelFormat {
        self.pixel_scaling.pixel_format()
    }

    /// The epochs this call runs up to (counted from 1): all of them, or fewer when
    /// [`TrainConfig::stop_after_epochs`] interrupts the run.
    pub(super) fn last_epoch(&self) -> usize {
        self.stop_after_epochs
            .map_or(self.epochs, |stop| stop.min(self.epochs))
    }

    /// The training loader's settings for a training split of `training_len` samples: shuffled
    /// every epoch, or a shuffled subset when [`TrainConfig::training_sample_limit`] is set.
    pub(super) fn training_loader_config(&self, training_len: usize) -> LoaderConfig {
        let sampling = match self.training_sample_limit {
            Some(limit) => Sampling::Subset {
                indices: (0..limit.min(training_len)).collect(),
                order: Order::Shuffled,
            },
            None => Sampling::Shuffled,
        };
        LoaderConfig {
            batch_size: self.batch_size,
            drop_last: false,
            sampling,
            seed: self.seed,
            num_workers: self.workers,
            prefetch: 2,
            pixel_format: self.pixel_format(),
            class_count: Some(self.model.number_of_classes()),
            augmentation: self.augmentation,
            transform: None,
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> TrainConfig {
        TrainConfig::recipe(BackendChoice::Ndarray, "data".into(), "run".into())
    }

    #[test]
    fn out_of_range_numbers_are_refused_naming_the_setting() {
        let cases = [
            (
                "epochs",
                TrainConfig {
                    epochs: usize::MAX,
                    ..config()
                },
            ),
            (
                "epochs",
                TrainConfig {
                    epochs: 0,
                    ..config()
                },
            ),
            (
                "batch size",
                TrainConfig {
                    batch_size: 0,
                    ..config()
                },
            ),
            (
                "learning rate",
                TrainConfig {
                    learning_rate: f64::NAN,
                    ..config()
                },
            ),
            (
                "learning rate",
                TrainConfig {
                    learning_rate: -1.0,
                    ..config()
                },
            ),
            (
                "momentum",
                TrainConfig {
                    momentum: Some(f64::NAN),
                    ..config()
                },
            ),
            (
                "momentum",
                TrainConfig {
                    momentum: Some(1.5),
                    ..config()
                },
            ),
            (
                "weight decay",
                TrainConfig {
                    weight_decay: Some(f32::INFINITY),
                    ..config()
                },
            ),
            (
                "weight decay",
                TrainConfig {
                    weight_decay: Some(-0.1),
                    ..config()
                },
            ),
            (
                "workers",
                TrainConfig {
                    workers: usize::MAX,
                    ..config()
                },
            ),
            (
                "training sample limit",
                TrainConfig {
                    training_sample_limit: Some(0),
                    ..config()
                },
            ),
            (
                "memory sample interval",
                TrainConfig {
                    memory_sample_interval: Duration::ZERO,
                    ..config()
                },
            ),
        ];
        for (setting, config) in cases {
            let error = config.validate().unwrap_err();
            assert!(
                matches!(&error, TrainError::InvalidConfig { setting: named, .. } if *named == setting),
                "{setting}: {error}"
            );
        }
        let fine = TrainConfig {
            momentum: Some(0.9),
            weight_decay: Some(1e-4),
            ..config()
        };
        assert!(fine.validate().is_ok());
    }

    #[test]
    fn folders_that_are_not_utf8_are_refused_naming_the_setting() {
        use std::os::unix::ffi::OsStrExt;
        let not_utf8 = std::path::PathBuf::from(std::ffi::OsStr::from_bytes(b"data-\xff"));
        for (setting, config) in [
            (
                "data folder",
                TrainConfig {
                    data_folder: not_utf8.clone(),
                    ..config()
                },
            ),
            (
                "run folder",
                TrainConfig {
                    run_folder: not_utf8.clone(),
                    ..config()
                },
            ),
        ] {
            let error = config.validate().unwrap_err();
            assert!(
                matches!(&error, TrainError::InvalidConfig { setting: named, .. } if *named == setting),
                "{error}"
            );
            assert!(error.to_string().contains("data-"), "{error}");
        }
        assert!(config().validate().is_ok());
    }

    #[test]
    fn the_cnn_is_refused_on_ndarray_and_only_there() {
        use reclaim_model::ModelKind;
        let cnn_on = |backend| TrainConfig {
            model: ClassifierConfig::default_for(ModelKind::Cnn),
            ..TrainConfig::recipe(backend, "data".into(), "run".into())
        };
        let error = cnn_on(BackendChoice::Ndarray).validate().unwrap_err();
        assert!(
            matches!(
                error,
                TrainError::ModelNotOffered {
                    model: ModelKind::Cnn,
                    backend: BackendChoice::Ndarray,
                    ..
                }
            ),
            "{error}"
        );
        let message = error.to_string();
        assert!(
            message.contains("cnn") && message.contains("ndarray"),
            "{message}"
        );
        assert!(
            message.contains("flex"),
            "names the backend to use: {message}"
        );
        for backend in [
            BackendChoice::Flex,
            BackendChoice::Wgpu,
            BackendChoice::Cuda,
        ] {
            assert!(cnn_on(backend).validate().is_ok(), "{backend}");
        }
        assert!(config().validate().is_ok(), "the MLP on NdArray");
    }
}
