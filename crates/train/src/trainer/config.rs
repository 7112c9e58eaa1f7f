//! A run's configuration and everything decided from it: [`TrainConfig`] (what the caller
//! sets), its checks, the optimizer, the pixel format, the training loader's settings, the
//! epochs to run, and [`RunIdentity`] (the settings a resumed run must share with the run it
//! continues, compared field by field).

use std::fmt;
use std::num::NonZeroUsize;
use std::path::PathBuf;
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::Duration;

use burn::optim::decay::WeightDecayConfig;
use burn::optim::momentum::MomentumConfig;
use burn::optim::{ModuleOptimizer, SgdConfig};
use reclaim_dataset::{DatasetName, FileFingerprint, ProgressDisplay};
use reclaim_loader::{
    Augmentation, ChannelNormalization, LoaderConfig, Normalization, Order, PixelFormat, Sampling,
};
use reclaim_model::{ClassifierConfig, ConvNetConfig, ModelKind, SimpleNnConfig};
use serde::{Deserialize, Serialize};

use crate::{BackendChoice, DataFingerprint, DatasetStorage, TrainError};

/// What pixels become before they reach the model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum PixelScaling {
    /// `pixel / 255`, in `[0, 1]` (the seed recipe's `transforms.ToTensor()`).
    #[default]
    UnitRange,
    /// `(pixel / 255 - 0.1307) / 0.3081`, MNIST's mean and standard deviation (one-channel
    /// images).
    MnistStandardized,
    /// `(pixel / 255 - mean[c]) / std[c]` with CIFAR-10's per-channel statistics
    /// ([`ChannelNormalization::CIFAR10`]; three-channel images).
    Cifar10Standardized,
}

impl PixelScaling {
    /// Standardized with the statistics of `dataset`'s family: CIFAR-10's for CIFAR, MNIST's
    /// otherwise.
    pub fn standardized_for(dataset: DatasetName) -> Self {
        if dataset.cifar_variant().is_some() {
            PixelScaling::Cifar10Standardized
        } else {
            PixelScaling::MnistStandardized
        }
    }

    /// What the loaders make of the pixels.
    pub fn pixel_format(self) -> PixelFormat {
        match self {
            PixelScaling::UnitRange => PixelFormat::UnitF32,
            PixelScaling::MnistStandardized => PixelFormat::NormalizedF32(Normalization::MNIST),
            PixelScaling::Cifar10Standardized => {
                PixelFormat::ChannelNormalizedF32(ChannelNormalization::CIFAR10)
            }
        }
    }
}

/// The model of `kind` sized for `dataset`: its images' values (or shape, for the CNN) as
/// inputs, its classes as outputs; the rest of the sizes are the model's defaults.
///
/// ```
/// use reclaim_dataset::DatasetName;
/// use reclaim_model::{ClassifierConfig, ModelKind};
/// use reclaim_train::model_for_dataset;
///
/// let mlp = model_for_dataset(DatasetName::Mnist, ModelKind::Mlp);
/// assert_eq!((mlp.input_size(), mlp.number_of_classes()), (784, 10));
/// let cnn = model_for_dataset(DatasetName::Cifar100, ModelKind::Cnn);
/// assert_eq!((cnn.input_size(), cnn.number_of_classes()), (3 * 32 * 32, 100));
/// assert!(matches!(cnn, ClassifierConfig::Cnn(_)));
/// ```
pub fn model_for_dataset(dataset: DatasetName, kind: ModelKind) -> ClassifierConfig {
    let channels = dataset.channels();
    let (height, width) = dataset.image_size();
    let classes = dataset.number_of_classes();
    match kind {
        ModelKind::Mlp => ClassifierConfig::Mlp(
            SimpleNnConfig::new()
                .with_input_size(channels * height * width)
                .with_number_of_classes(classes),
        ),
        ModelKind::Cnn => ClassifierConfig::Cnn(ConvNetConfig {
            channels,
            height,
            width,
            number_of_classes: classes,
            ..ConvNetConfig::new()
        }),
    }
}

/// The usual training augmentation of `dataset`: [`Augmentation::CIFAR`] (crop with padding 4,
/// horizontal flip) for CIFAR, [`Augmentation::MNIST`] (crop with padding 2, no flip) for the
/// MNIST family.
pub fn standard_augmentation(dataset: DatasetName) -> Augmentation {
    if dataset.cifar_variant().is_some() {
        Augmentation::CIFAR
    } else {
        Augmentation::MNIST
    }
}

/// The largest batch for which the host roads ([`StepKernel::Fused`],
/// [`StepKernel::SparseInputs`]) are taken on Flex: the largest size measured at which the
/// fused step was faster than Burn's dense step in every run. Flex's dense step gains on the
/// fused one as the batch grows: the fused step
/// was 2.3 to 3.0 times faster at batch 64, 1.6 times at 256, 1.25-1.33 times at 512, 1.09-1.14
/// times at 768, and level at 1024 (the dense step 0.90-1.04 times the fused step's time).
/// Criterion, two or three runs a size on a 2-core AMD EPYC, docs/benchmarks.md. NdArray's
/// dense step is slower at every size measured (6.5-6.8 ms at 1024 against 3.2-3.7 ms fused),
/// so it has no such limit.
pub const LARGEST_HOST_STEP_BATCH_ON_FLEX: usize = 768;

/// Which road a training step takes ([`TrainConfig::step_kernel`]). Every road computes the
/// same step (cross-entropy, backward, SGD), the same sums in another order; evaluation always
/// takes Burn's forward. A road asked for where it does not apply falls back to Burn's dense
/// step ([`TrainConfig::step_kernel_used`]), and `reclaim train` says which it took.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepKernel {
    /// The perceptron's whole step on the host, fused ([`reclaim_model::FusedSgdPerceptron`]):
    /// forward, loss, backward and SGD from the batch's non-zero pixels, in buffers reused
    /// from step to step, the parameters written back into Burn's model before each
    /// evaluation and checkpoint. Applies to a perceptron ([`ClassifierConfig::Mlp`]) on a
    /// CPU backend (Flex or NdArray), on a dataset of the MNIST family with pixels scaled to
    /// [0, 1] (about 81% of MNIST's are exactly 0), trained by plain SGD (no momentum, no
    /// weight decay), and on Flex batches of at most [`LARGEST_HOST_STEP_BATCH_ON_FLEX`]. The
    /// fastest road on a CPU where it applies (docs/benchmarks.md).
    #[default]
    Fused,
    /// The hidden layer from the non-zero pixels on the host ([`reclaim_model::SparseRows`]),
    /// the rest of the step by Burn's autodiff and optimizer. Applies to a perceptron on Flex,
    /// on the MNIST family with pixels scaled to [0, 1], batches of at most
    /// [`LARGEST_HOST_STEP_BATCH_ON_FLEX`]. Not on NdArray: Burn 0.22.1's NdArray
    /// reads a tensor that is shared (the model's weights) back to the host element by element,
    /// which made its step about four times slower, not faster (docs/benchmarks.md); not on a
    /// GPU, where the pixels would cross the bus twice; not on CIFAR, whose photos have no
    /// background of zeros to skip (their share of exact zeros was not measured: no real CIFAR
    /// data is at hand here, so the rule keeps them on Burn's product).
    SparseInputs,
    /// Burn's step on the device: its matrix products over every pixel, its autodiff, its
    /// optimizer (the reference road; the only one for a GPU, a CNN or CIFAR).
    Dense,
}

/// Why a road of [`StepKernel`] asked for does not apply, so that the run takes Burn's dense
/// step ([`TrainConfig::step_kernel_obstacle`]). Displayed as the reason, for the summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StepKernelObstacle {
    /// The model is not the perceptron (the host roads are written for it alone).
    NotAPerceptron,
    /// A backend the road does not run on: fused on Flex and NdArray, sparse inputs on Flex.
    Backend(BackendChoice),
    /// CIFAR's photos, with no background of zeros to skip.
    PhotosWithoutBackground,
    /// Pixels not scaled to [0, 1]: standardized, their background is not 0.
    PixelsNotInUnitRange,
    /// A Flex batch above [`LARGEST_HOST_STEP_BATCH_ON_FLEX`], where Flex's own step is as
    /// fast.
    FlexBatchAboveLimit {
        /// The batch size asked for.
        batch_size: usize,
    },
    /// Momentum or weight decay: the fused step is plain SGD.
    NotPlainSgd,
}

impl std::fmt::Display for StepKernelObstacle {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            StepKernelObstacle::NotAPerceptron => write!(formatter, "the model is not the MLP"),
            StepKernelObstacle::Backend(backend) => {
                write!(formatter, "it does not run on {}", backend.name())
            }
            StepKernelObstacle::PhotosWithoutBackground => {
                write!(formatter, "CIFAR's photos have no background of zeros")
            }
            StepKernelObstacle::PixelsNotInUnitRange => {
                write!(formatter, "the pixels are not scaled to [0, 1]")
            }
            StepKernelObstacle::FlexBatchAboveLimit { batch_size } => write!(
                formatter,
                "batch {batch_size} is above {LARGEST_HOST_STEP_BATCH_ON_FLEX} on flex"
            ),
            StepKernelObstacle::NotPlainSgd => {
                write!(
                    formatter,
                    "momentum or weight decay: the fused step is plain SGD"
                )
            }
        }
    }
}

impl StepKernel {
    /// Its name in a run's `config.json` (serde's kebab-case). `reclaim train --step` takes the
    /// same names but `sparse` for [`StepKernel::SparseInputs`].
    pub fn name(self) -> &'static str {
        match self {
            StepKernel::Fused => "fused",
            StepKernel::SparseInputs => "sparse-inputs",
            StepKernel::Dense => "dense",
        }
    }
}

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
    /// a run of the same [`RunIdentity`]. `config.json` stays as the first run wrote it.
    ResumeLatestCheckpoint,
}

/// Asks a running [`train`](crate::train) to stop: set it (from a signal handler, another
/// thread) and the run finishes its current step, writes a checkpoint, flushes its files and
/// returns [`TrainError::Interrupted`]. Clones share the flag.
#[derive(Clone, Debug, Default)]
pub struct CancellationFlag(Arc<AtomicBool>);

impl CancellationFlag {
    /// A flag that is not set.
    pub fn new() -> Self {
        CancellationFlag::default()
    }

    /// Uses `flag` (one a signal handler already sets, say).
    pub fn from_shared(flag: Arc<AtomicBool>) -> Self {
        CancellationFlag(flag)
    }

    /// Asks the run to stop.
    pub fn cancel(&self) {
        self.0.store(true, Ordering::SeqCst);
    }

    /// Whether the run was asked to stop.
    pub fn is_cancelled(&self) -> bool {
        self.0.load(Ordering::Relaxed)
    }
}

/// Two flags are equal when they are the same flag.
impl PartialEq for CancellationFlag {
    fn eq(&self, other: &Self) -> bool {
        Arc::ptr_eq(&self.0, &other.0)
    }
}

/// The most epochs a run may ask for: epoch numbers are counted in 32 bits in messages and file
/// names, and no run of this crate's models needs more.
pub const MAX_EPOCHS: usize = u32::MAX as usize;

/// Everything a training run needs to know. [`TrainConfig::recipe`] gives the seed recipe:
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
    pub dataset: DatasetName,
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
    /// The road of the training steps asked for ([`TrainConfig::step_kernel_used`] gives the
    /// one taken).
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
    /// The seed recipe on `backend`, reading `data_folder` and writing to `run_folder`.
    pub fn recipe(backend: BackendChoice, data_folder: PathBuf, run_folder: PathBuf) -> Self {
        TrainConfig {
            backend,
            dataset: DatasetName::Mnist,
            data_folder,
            run_folder,
            model: ClassifierConfig::Mlp(SimpleNnConfig::new()),
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

    /// The road this run's training steps take: [`TrainConfig::step_kernel`] where it applies,
    /// else Burn's dense step, which applies everywhere. On Flex the host roads apply up to
    /// [`LARGEST_HOST_STEP_BATCH_ON_FLEX`] images a batch.
    pub fn step_kernel_used(&self) -> StepKernel {
        match self.step_kernel_obstacle() {
            None => self.step_kernel,
            Some(_) => StepKernel::Dense,
        }
    }

    /// Why [`TrainConfig::step_kernel`] does not apply to these settings (the first reason
    /// found), or `None` where it does.
    pub fn step_kernel_obstacle(&self) -> Option<StepKernelObstacle> {
        let host_road = match self.step_kernel {
            StepKernel::Dense => return None,
            StepKernel::Fused => {
                matches!(self.backend, BackendChoice::Flex | BackendChoice::Ndarray)
            }
            StepKernel::SparseInputs => self.backend == BackendChoice::Flex,
        };
        if !matches!(self.model, ClassifierConfig::Mlp(_)) {
            Some(StepKernelObstacle::NotAPerceptron)
        } else if !host_road {
            Some(StepKernelObstacle::Backend(self.backend))
        } else if self.dataset.cifar_variant().is_some() {
            Some(StepKernelObstacle::PhotosWithoutBackground)
        } else if self.pixel_scaling != PixelScaling::UnitRange {
            Some(StepKernelObstacle::PixelsNotInUnitRange)
        } else if self.backend == BackendChoice::Flex
            && self.batch_size > LARGEST_HOST_STEP_BATCH_ON_FLEX
        {
            Some(StepKernelObstacle::FlexBatchAboveLimit {
                batch_size: self.batch_size,
            })
        } else if self.step_kernel == StepKernel::Fused
            && (self.momentum.is_some() || self.weight_decay.is_some())
        {
            Some(StepKernelObstacle::NotPlainSgd)
        } else {
            None
        }
    }

    /// The settings a resumed run must share with the run it continues, on the dataset
    /// `dataset` identifies.
    pub fn identity(&self, dataset: DataFingerprint) -> RunIdentity {
        RunIdentity {
            model: self.model.clone(),
            augmentation: self.augmentation,
            batch_size: self.batch_size,
            learning_rate: self.learning_rate,
            momentum: self.momentum,
            weight_decay: self.weight_decay,
            seed: self.seed,
            pixel_scaling: self.pixel_scaling,
            training_sample_limit: self.training_sample_limit,
            // One folder however it is spelled (`data`, `./data/`, an absolute path or a link):
            // its canonical form, when it exists.
            data_folder: std::fs::canonicalize(&self.data_folder)
                .unwrap_or_else(|_| self.data_folder.clone()),
            dataset,
        }
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

/// The settings a resumed run must share with the run it continues: stored in every
/// checkpoint ([`CheckpointState::run_identity`](crate::CheckpointState::run_identity)) and
/// compared field by field ([`RunIdentity::differences`]) before a resume. The rest of a
/// [`TrainConfig`] (backend, workers, epochs, progress bar, run folder) may change.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct RunIdentity {
    /// The model and its layer sizes.
    pub model: ClassifierConfig,
    /// The training samples' augmentation (its draws are part of every batch).
    pub augmentation: Augmentation,
    /// Samples per batch.
    pub batch_size: usize,
    /// SGD's learning rate.
    pub learning_rate: f64,
    /// SGD momentum, if any.
    pub momentum: Option<f64>,
    /// L2 weight decay, if any.
    pub weight_decay: Option<f32>,
    /// The seed of the weights and of every epoch's shuffle.
    pub seed: u64,
    /// Pixel scaling.
    pub pixel_scaling: PixelScaling,
    /// The training sample limit, if any.
    pub training_sample_limit: Option<usize>,
    /// The dataset folder, canonical (absolute, links resolved) when it exists, as given
    /// otherwise.
    pub data_folder: PathBuf,
    /// The dataset's files, by size and checksum.
    pub dataset: DataFingerprint,
}

/// One setting on which two runs differ, with both values (as Rust writes them: `Some(0.9)`).
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct IdentityDifference {
    /// The setting (`"learning rate"`).
    pub setting: &'static str,
    /// Its value in the checkpoint's run.
    pub checkpoint: String,
    /// Its value in this run.
    pub this_run: String,
}

impl fmt::Display for IdentityDifference {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "{} is {} in the checkpoint, {} in this run",
            self.setting, self.checkpoint, self.this_run
        )
    }
}

impl RunIdentity {
    /// Every setting on which `self` (a checkpoint's) and `this_run` differ; empty when a
    /// resume may go ahead.
    pub fn differences(&self, this_run: &RunIdentity) -> Vec<IdentityDifference> {
        // Destructured, so that a field added to `RunIdentity` must be compared here.
        let RunIdentity {
            model,
            augmentation,
            batch_size,
            learning_rate,
            momentum,
            weight_decay,
            seed,
            pixel_scaling,
            training_sample_limit,
            data_folder,
            dataset,
        } = self;
        [
            difference("model", model, &this_run.model),
            difference("augmentation", augmentation, &this_run.augmentation),
            difference("batch size", batch_size, &this_run.batch_size),
            difference("learning rate", learning_rate, &this_run.learning_rate),
            difference("momentum", momentum, &this_run.momentum),
            difference("weight decay", weight_decay, &this_run.weight_decay),
            difference("seed", seed, &this_run.seed),
            difference("pixel scaling", pixel_scaling, &this_run.pixel_scaling),
            difference(
                "training sample limit",
                training_sample_limit,
                &this_run.training_sample_limit,
            ),
            difference("data folder", data_folder, &this_run.data_folder),
            dataset_difference(dataset, &this_run.dataset),
        ]
        .into_iter()
        .flatten()
        .collect()
    }
}

fn difference<T: PartialEq + fmt::Debug>(
    setting: &'static str,
    checkpoint: &T,
    this_run: &T,
) -> Option<IdentityDifference> {
    (checkpoint != this_run).then(|| IdentityDifference {
        setting,
        checkpoint: format!("{checkpoint:?}"),
        this_run: format!("{this_run:?}"),
    })
}

/// Each file of a fingerprint, named for a message: the four IDX files, or CIFAR's record files
/// split by split (`training file 1`, ..., `test file 1`).
fn named_files(fingerprint: &DataFingerprint) -> Vec<(String, FileFingerprint)> {
    match fingerprint {
        DataFingerprint::Idx(idx) => [
            ("training images", &idx.train_images),
            ("training labels", &idx.train_labels),
            ("test images", &idx.test_images),
            ("test labels", &idx.test_labels),
        ]
        .into_iter()
        .map(|(name, file)| (name.to_string(), file.clone()))
        .collect(),
        DataFingerprint::Cifar(cifar) => {
            let numbered = |split: &str, files: &[FileFingerprint]| {
                let split = split.to_string();
                files
                    .iter()
                    .enumerate()
                    .map(move |(number, file)| {
                        (format!("{split} file {}", number + 1), file.clone())
                    })
                    .collect::<Vec<_>>()
            };
            let mut files = numbered(&format!("{} training", cifar.variant), &cifar.train);
            files.extend(numbered(&format!("{} test", cifar.variant), &cifar.test));
            files
        }
    }
}

/// The dataset's difference, named by file rather than printed whole (a checksum per file):
/// each file that differs, with its size and checksum on each side (every file, when the two
/// datasets are of different formats or counts of files).
fn dataset_difference(
    checkpoint: &DataFingerprint,
    this_run: &DataFingerprint,
) -> Option<IdentityDifference> {
    let (checkpoint_files, this_run_files) = (named_files(checkpoint), named_files(this_run));
    let describe = |differing: &[(String, FileFingerprint)]| {
        let described: Vec<String> = differing
            .iter()
            .map(|(file, print)| {
                format!("{file} of {} bytes, XXH3 {}", print.bytes, print.xxh3_128)
            })
            .collect();
        described.join(", ")
    };
    let comparable = checkpoint_files.len() == this_run_files.len()
        && checkpoint_files
            .iter()
            .zip(&this_run_files)
            .all(|(before, now)| before.0 == now.0);
    if !comparable {
        return Some(IdentityDifference {
            setting: "dataset",
            checkpoint: describe(&checkpoint_files),
            this_run: describe(&this_run_files),
        });
    }
    let (before, now): (Vec<_>, Vec<_>) = checkpoint_files
        .into_iter()
        .zip(this_run_files)
        .filter(|(before, now)| before.1 != now.1)
        .unzip();
    (!before.is_empty()).then(|| IdentityDifference {
        setting: "dataset",
        checkpoint: describe(&before),
        this_run: describe(&now),
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    fn config() -> TrainConfig {
        TrainConfig::recipe(BackendChoice::Ndarray, "data".into(), "run".into())
    }

    /// Each road where it applies, and the fallback from each where it does not.
    #[test]
    fn each_step_kernel_is_used_where_it_applies_and_falls_back_where_not() {
        use StepKernel::{Dense, Fused, SparseInputs};
        let used = |config: TrainConfig| config.step_kernel_used();
        let on_flex = |step_kernel| TrainConfig {
            backend: BackendChoice::Flex,
            step_kernel,
            ..config()
        };
        assert_eq!(config().step_kernel, Fused, "the recipe's default");
        assert_eq!(used(config()), Fused, "on NdArray");
        assert_eq!(used(on_flex(Fused)), Fused);
        assert_eq!(used(on_flex(SparseInputs)), SparseInputs);
        assert_eq!(used(on_flex(Dense)), Dense);
        for backend in [BackendChoice::Wgpu, BackendChoice::Cuda] {
            for kernel in [Fused, SparseInputs, Dense] {
                let config = TrainConfig {
                    backend,
                    ..on_flex(kernel)
                };
                assert_eq!(used(config), Dense, "{backend:?} {kernel:?}");
            }
        }
        let ndarray_sparse = TrainConfig {
            step_kernel: SparseInputs,
            ..config()
        };
        assert_eq!(
            used(ndarray_sparse),
            Dense,
            "sparse inputs are for Flex only"
        );
        // Momentum or weight decay: not the fused step's plain SGD; sparse inputs when asked.
        let with_momentum = TrainConfig {
            momentum: Some(0.9),
            ..on_flex(Fused)
        };
        assert_eq!(used(with_momentum.clone()), Dense);
        let sparse_with_momentum = TrainConfig {
            step_kernel: SparseInputs,
            ..with_momentum.clone()
        };
        assert_eq!(used(sparse_with_momentum), SparseInputs);
        let with_weight_decay = TrainConfig {
            weight_decay: Some(1e-4),
            ..on_flex(Fused)
        };
        assert_eq!(used(with_weight_decay), Dense);
        let ndarray_momentum = TrainConfig {
            backend: BackendChoice::Ndarray,
            ..with_momentum
        };
        assert_eq!(used(ndarray_momentum), Dense);
        for not_mostly_zero in [
            TrainConfig {
                pixel_scaling: PixelScaling::MnistStandardized,
                ..on_flex(Fused)
            },
            TrainConfig {
                model: ClassifierConfig::default_for(ModelKind::Cnn),
                ..on_flex(Fused)
            },
            TrainConfig {
                dataset: DatasetName::Cifar10,
                ..on_flex(Fused)
            },
        ] {
            assert_eq!(used(not_mostly_zero), Dense);
        }
        let fashion = TrainConfig {
            dataset: DatasetName::FashionMnist,
            ..on_flex(Fused)
        };
        assert_eq!(used(fashion), Fused);
        // Above the batch where Flex's threaded product wins, Flex takes it; NdArray does not.
        let batch = |batch_size, config: TrainConfig| TrainConfig {
            batch_size,
            ..config
        };
        let largest = LARGEST_HOST_STEP_BATCH_ON_FLEX;
        assert_eq!(used(batch(largest, on_flex(Fused))), Fused);
        assert_eq!(used(batch(largest, on_flex(SparseInputs))), SparseInputs);
        assert_eq!(used(batch(largest + 1, on_flex(Fused))), Dense);
        assert_eq!(used(batch(largest + 1, on_flex(SparseInputs))), Dense);
        assert_eq!(used(batch(4096, config())), Fused, "NdArray");
    }

    #[test]
    fn a_step_kernel_is_named_as_its_config_file_names_it() {
        for kernel in [
            StepKernel::Fused,
            StepKernel::SparseInputs,
            StepKernel::Dense,
        ] {
            let serialized = serde_json::to_string(&kernel).unwrap();
            assert_eq!(serialized, format!("\"{}\"", kernel.name()));
        }
    }

    /// The reason a road does not apply names what in the settings stops it.
    #[test]
    fn the_obstacle_names_what_stops_the_road() {
        use StepKernel::{Dense, Fused, SparseInputs};
        let obstacle = |config: TrainConfig| config.step_kernel_obstacle();
        assert_eq!(obstacle(config()), None);
        let dense_on_gpu = TrainConfig {
            backend: BackendChoice::Wgpu,
            step_kernel: Dense,
            ..config()
        };
        assert_eq!(obstacle(dense_on_gpu), None, "dense applies everywhere");
        let sparse_on_ndarray = TrainConfig {
            step_kernel: SparseInputs,
            ..config()
        };
        assert_eq!(
            obstacle(sparse_on_ndarray),
            Some(StepKernelObstacle::Backend(BackendChoice::Ndarray))
        );
        let big_flex_batch = TrainConfig {
            backend: BackendChoice::Flex,
            batch_size: 1000,
            ..config()
        };
        let reason = obstacle(big_flex_batch).unwrap();
        assert_eq!(
            reason,
            StepKernelObstacle::FlexBatchAboveLimit { batch_size: 1000 }
        );
        assert_eq!(reason.to_string(), "batch 1000 is above 768 on flex");
        let with_momentum = TrainConfig {
            momentum: Some(0.5),
            step_kernel: Fused,
            ..config()
        };
        assert_eq!(
            obstacle(with_momentum),
            Some(StepKernelObstacle::NotPlainSgd)
        );
        let cnn = TrainConfig {
            model: ClassifierConfig::default_for(ModelKind::Cnn),
            ..config()
        };
        assert_eq!(obstacle(cnn), Some(StepKernelObstacle::NotAPerceptron));
        let cifar = TrainConfig {
            dataset: DatasetName::Cifar10,
            ..config()
        };
        assert_eq!(
            obstacle(cifar),
            Some(StepKernelObstacle::PhotosWithoutBackground)
        );
        let standardized = TrainConfig {
            pixel_scaling: PixelScaling::MnistStandardized,
            ..config()
        };
        assert_eq!(
            obstacle(standardized),
            Some(StepKernelObstacle::PixelsNotInUnitRange)
        );
    }

    /// The fingerprint of a small dataset whose first training label is `first_label`.
    fn fingerprint(first_label: u8) -> DataFingerprint {
        let folder = tempfile::tempdir().unwrap();
        crate::test_support::write_tiny_dataset(folder.path(), [2, 2], 3, 2);
        let labels = folder.path().join("train-labels-idx1-ubyte");
        reclaim_dataset::write_idx(&labels, &[3], &[first_label, 1, 2]).unwrap();
        let splits = DatasetStorage::owned().open_splits(folder.path()).unwrap();
        DataFingerprint::Idx(splits.fingerprint())
    }

    /// The fingerprint of a CIFAR-10 folder of one training and one test record.
    fn cifar_fingerprint() -> DataFingerprint {
        use reclaim_dataset::{CifarRecord, CifarVariant, write_cifar_batch};
        let folder = tempfile::tempdir().unwrap();
        let image = [7u8; 3072];
        for name in ["data_batch_1.bin", "data_batch_2.bin", "data_batch_3.bin"]
            .into_iter()
            .chain(["data_batch_4.bin", "data_batch_5.bin", "test_batch.bin"])
        {
            let records = [CifarRecord::cifar10(3, &image)];
            write_cifar_batch(folder.path().join(name), CifarVariant::Cifar10, &records).unwrap();
        }
        let splits = DatasetStorage::owned()
            .open_cifar_splits(folder.path(), CifarVariant::Cifar10)
            .unwrap();
        DataFingerprint::Cifar(splits.fingerprint())
    }

    #[test]
    fn a_dataset_of_another_format_differs_in_every_file() {
        let checkpoint = config().identity(fingerprint(0));
        let this_run = config().identity(cifar_fingerprint());
        let differences = checkpoint.differences(&this_run);
        assert_eq!(differences.len(), 1);
        let text = differences[0].to_string();
        assert!(text.contains("training images of"), "{text}");
        assert!(
            text.contains("CIFAR-10 test file 1 of 3073 bytes"),
            "{text}"
        );
        assert!(
            config()
                .identity(cifar_fingerprint())
                .differences(&this_run)
                .is_empty()
        );
    }

    #[test]
    fn a_changed_augmentation_is_a_difference() {
        let checkpoint = config().identity(fingerprint(0));
        let this_run = TrainConfig {
            augmentation: Augmentation::CIFAR,
            ..config()
        }
        .identity(fingerprint(0));
        let differences = checkpoint.differences(&this_run);
        assert_eq!(differences.len(), 1);
        assert_eq!(differences[0].setting, "augmentation");
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
    fn the_same_settings_have_no_difference() {
        let config = config();
        let other_run = TrainConfig {
            epochs: 5,
            workers: 3,
            run_folder: "elsewhere".into(),
            progress: ProgressDisplay::Hidden,
            ..config.clone()
        };
        let dataset = fingerprint(0);
        assert_eq!(
            config.identity(dataset.clone()),
            other_run.identity(dataset.clone())
        );
        assert!(
            config
                .identity(dataset.clone())
                .differences(&other_run.identity(dataset.clone()))
                .is_empty()
        );
        // One existing folder, spelled three ways.
        let folder = tempfile::tempdir().unwrap();
        let data = folder.path().join("data");
        std::fs::create_dir(&data).unwrap();
        let spelled = |data_folder: PathBuf| {
            TrainConfig {
                data_folder,
                ..config.clone()
            }
            .identity(dataset.clone())
        };
        assert_eq!(spelled(data.clone()), spelled(data.join(".")));
        assert_eq!(
            spelled(data.clone()),
            spelled(folder.path().join("./data/"))
        );
    }

    #[test]
    fn each_differing_setting_is_named_with_both_values() {
        let checkpoint = config().identity(fingerprint(0));
        let this_run = TrainConfig {
            learning_rate: 0.5,
            momentum: Some(0.9),
            data_folder: "other-data".into(),
            ..config()
        }
        .identity(fingerprint(0));
        let differences = checkpoint.differences(&this_run);
        let text: Vec<String> = differences.iter().map(ToString::to_string).collect();
        assert_eq!(
            text,
            [
                "learning rate is 0.01 in the checkpoint, 0.5 in this run",
                "momentum is None in the checkpoint, Some(0.9) in this run",
                r#"data folder is "data" in the checkpoint, "other-data" in this run"#,
            ]
        );
    }

    #[test]
    fn a_changed_dataset_is_a_difference() {
        let checkpoint = config().identity(fingerprint(0));
        let this_run = config().identity(fingerprint(9));
        let differences = checkpoint.differences(&this_run);
        assert_eq!(differences.len(), 1);
        assert_eq!(differences[0].setting, "dataset");
        // Only the file that changed is named.
        let text = differences[0].to_string();
        assert!(
            text.starts_with("dataset is training labels of 11 bytes, XXH3 "),
            "{text}"
        );
        assert!(!text.contains("images"), "{text}");
    }

    #[test]
    fn the_identity_round_trips_through_json() {
        let identity = TrainConfig {
            weight_decay: Some(1e-4),
            training_sample_limit: Some(640),
            ..config()
        }
        .identity(fingerprint(0));
        let json = serde_json::to_string(&identity).unwrap();
        assert_eq!(
            serde_json::from_str::<RunIdentity>(&json).unwrap(),
            identity
        );
    }
}
