//! Which training step a run takes, and the step itself: the one place where the trainer
//! chooses between the fused MLP step and Burn's own.
//!
//! [`StepKernel::obstacle`] states, once, when the fused step applies; everything else (the
//! command's `--step`, the summary, the docs) refers to it. The run and its warm-up both step
//! through [`TrainingSteps`].

use burn::module::Module;
use burn::optim::{GradientsParams, ModuleOptimizer};
use burn::tensor::{Device, Tensor};
use reclaim_loader::{Batch, TensorBatch};
use reclaim_model::{Classifier, ClassifierConfig, FusedSgdMlp};
use serde::{Deserialize, Serialize};

use super::config::TrainConfig;
use super::dataset_defaults::PixelScaling;
use crate::{BackendChoice, TrainError};

/// The largest batch for which the fused step is taken on Flex: the largest size measured at
/// which it was faster than Flex's own step in every run. Flex's step gains on the fused one
/// as the batch grows, being threaded, until the two are level (docs/benchmarks.md, "The
/// training step per backend and batch size"). NdArray's step is slower at every size
/// measured, so it has no such limit.
pub const LARGEST_FUSED_STEP_BATCH_ON_FLEX: usize = 768;

/// Which step a run's training takes ([`TrainConfig::step_kernel`]). Both compute the same step
/// (cross-entropy, backward, SGD), the same sums in another order; evaluation always takes
/// Burn's forward. The fused step asked for where it does not apply falls back to Burn's
/// ([`StepKernel::used_for`]), and `reclaim train` says why ([`StepKernel::obstacle`]).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
#[serde(rename_all = "kebab-case")]
pub enum StepKernel {
    /// The MLP's whole step on the host, fused ([`FusedSgdMlp`]): forward, loss,
    /// backward and SGD from the batch's non-zero pixels, in buffers reused from step to step,
    /// the parameters written back into Burn's model before each evaluation and checkpoint.
    /// The default, and taken only where [`StepKernel::obstacle`] finds none: there it is the
    /// fastest step measured (docs/benchmarks.md).
    #[default]
    Fused,
    /// Burn's step on the device: its autodiff graph and its optimizer. Applies everywhere:
    /// every model, backend, optimizer setting and batch size.
    Dense,
}

/// Why the fused step does not apply to a run's settings, so that the run takes Burn's step
/// ([`StepKernel::obstacle`]). Displayed as the reason, for the summary.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum StepKernelObstacle {
    /// The model is not the MLP (the fused step is written for it alone).
    NotTheMlp,
    /// A backend the fused step does not run on (it runs on Flex and NdArray, the host).
    Backend(BackendChoice),
    /// CIFAR's photos, with no background of zeros to skip.
    PhotosWithoutBackground,
    /// Pixels not scaled to [0, 1]: standardized, their background is not 0.
    PixelsNotInUnitRange,
    /// A Flex batch above [`LARGEST_FUSED_STEP_BATCH_ON_FLEX`], where Flex's own step is as
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
            StepKernelObstacle::NotTheMlp => write!(formatter, "the model is not the MLP"),
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
                "batch {batch_size} is above {LARGEST_FUSED_STEP_BATCH_ON_FLEX} on flex"
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
    /// Its name in a run's `config.json` and in `reclaim train --step`.
    pub fn name(self) -> &'static str {
        match self {
            StepKernel::Fused => "fused",
            StepKernel::Dense => "dense",
        }
    }

    /// Why this step does not apply to `config`'s settings (the first reason found), or `None`
    /// where it does. The one statement of the rule: Burn's step applies everywhere; the fused
    /// step to the MLP on a CPU backend (Flex or NdArray), on a dataset of the MNIST
    /// family with pixels scaled to [0, 1] (most of MNIST's are exactly 0), trained by plain
    /// SGD, and on Flex in batches of at most [`LARGEST_FUSED_STEP_BATCH_ON_FLEX`].
    pub fn obstacle(self, config: &TrainConfig) -> Option<StepKernelObstacle> {
        match self {
            StepKernel::Dense => None,
            StepKernel::Fused => fused_step_obstacle(config),
        }
    }

    /// The step a run of `config` takes: this one where it applies, else Burn's.
    pub fn used_for(self, config: &TrainConfig) -> StepKernel {
        match self.obstacle(config) {
            None => self,
            Some(_) => StepKernel::Dense,
        }
    }
}

/// [`StepKernel::obstacle`] for the fused step.
fn fused_step_obstacle(config: &TrainConfig) -> Option<StepKernelObstacle> {
    if !matches!(config.model, ClassifierConfig::Mlp(_)) {
        Some(StepKernelObstacle::NotTheMlp)
    } else if !matches!(config.backend, BackendChoice::Flex | BackendChoice::Ndarray) {
        Some(StepKernelObstacle::Backend(config.backend))
    } else if config.dataset.is_photos() {
        Some(StepKernelObstacle::PhotosWithoutBackground)
    } else if config.pixel_scaling != PixelScaling::UnitRange {
        Some(StepKernelObstacle::PixelsNotInUnitRange)
    } else if config.backend == BackendChoice::Flex
        && config.batch_size > LARGEST_FUSED_STEP_BATCH_ON_FLEX
    {
        Some(StepKernelObstacle::FlexBatchAboveLimit {
            batch_size: config.batch_size,
        })
    } else if config.momentum.is_some() || config.weight_decay.is_some() {
        Some(StepKernelObstacle::NotPlainSgd)
    } else {
        None
    }
}

/// The training steps of one stretch of a run (an epoch, the warm-up), on the step
/// [`StepKernel::used_for`] gives: the run and its warm-up both step through here, so the
/// warm-up exercises exactly the code the run measures.
///
/// On the fused step the MLP's parameters live on the host between steps
/// ([`FusedSgdMlp`]); [`synced`](Self::synced) writes them back into the model, which
/// every evaluation and checkpoint reads.
pub(super) struct TrainingSteps {
    kernel: StepKernel,
    /// The MLP's parameters on the fused step, read from the model when the stretch
    /// began.
    host: Option<FusedSgdMlp>,
}

/// One step's loss: still on the device (Burn's step, read back a window at a time) or
/// already on the host (the fused step). A Burn tensor is about 640 bytes, so the device's is
/// boxed: the window holds many host losses.
pub(super) enum StepLoss {
    Device(Box<Tensor<1>>),
    Host(f32),
}

impl TrainingSteps {
    /// Steps on `kernel`'s step, starting from `model`'s parameters.
    pub(super) fn new(kernel: StepKernel, model: &Classifier) -> Result<Self, TrainError> {
        let host = match (kernel, model) {
            (StepKernel::Fused, Classifier::Mlp(network)) => {
                Some(FusedSgdMlp::from_model(network)?)
            }
            _ => None,
        };
        Ok(TrainingSteps { kernel, host })
    }

    /// One optimizer step on one batch: forward, cross-entropy, backward, SGD. Returns the
    /// model (unchanged on the fused step, whose parameters are on the host until
    /// [`synced`](Self::synced)) and the batch's loss, off the autodiff graph.
    pub(super) fn step(
        &mut self,
        model: Classifier,
        optimizer: &mut ModuleOptimizer,
        learning_rate: f64,
        batch: Batch<'_>,
        device: &Device,
    ) -> Result<(Classifier, StepLoss), TrainError> {
        if let Some(host) = &mut self.host {
            if let Some(pixels) = batch.images_f32() {
                let loss = host.step(pixels, batch.labels(), learning_rate as f32)?;
                return Ok((model, StepLoss::Host(loss)));
            }
            // Pixels that are not `f32` (never on the fused step's settings): Burn's step from here,
            // on the parameters written back and marked for autodiff again.
            let model = self.synced(model)?.train();
            self.host = None;
            self.kernel = StepKernel::Dense;
            return self.step(model, optimizer, learning_rate, batch, device);
        }
        let (model, loss) = burn_step(model, optimizer, learning_rate, batch, device)?;
        Ok((model, StepLoss::Device(Box::new(loss))))
    }

    /// `model` with the parameters the steps have reached (itself, on Burn's step).
    pub(super) fn synced(&self, model: Classifier) -> Result<Classifier, TrainError> {
        match (&self.host, model) {
            (Some(host), Classifier::Mlp(network)) => {
                Ok(Classifier::Mlp(host.write_into(network)?))
            }
            (_, model) => Ok(model),
        }
    }
}

/// Burn's step: forward, cross-entropy, backward through its autodiff graph, its optimizer.
fn burn_step(
    model: Classifier,
    optimizer: &mut ModuleOptimizer,
    learning_rate: f64,
    batch: Batch<'_>,
    device: &Device,
) -> Result<(Classifier, Tensor<1>), TrainError> {
    let TensorBatch { images, labels } = batch.into_tensors::<2>(device)?;
    let loss = model.loss(model.forward(images), labels);
    let gradients = GradientsParams::from_grads(loss.backward(), &model);
    let model = optimizer.step(learning_rate, model, gradients);
    Ok((model, loss.inner()))
}

#[cfg(test)]
mod tests {
    use reclaim_dataset::DatasetName;
    use reclaim_model::ModelKind;

    use super::*;

    fn config() -> TrainConfig {
        TrainConfig::recipe(BackendChoice::Ndarray, "data".into(), "run".into())
    }

    /// The fused step where it applies, Burn's where it does not; Burn's wherever asked for.
    #[test]
    fn each_step_kernel_is_used_where_it_applies_and_falls_back_where_not() {
        use StepKernel::{Dense, Fused};
        let used = |config: TrainConfig| config.step_kernel_used();
        let on_flex = |step_kernel| TrainConfig {
            backend: BackendChoice::Flex,
            step_kernel,
            ..config()
        };
        assert_eq!(config().step_kernel, Fused, "the recipe's default");
        assert_eq!(used(config()), Fused, "on NdArray");
        assert_eq!(used(on_flex(Fused)), Fused);
        assert_eq!(used(on_flex(Dense)), Dense);
        for backend in [BackendChoice::Wgpu, BackendChoice::Cuda] {
            for kernel in [Fused, Dense] {
                let config = TrainConfig {
                    backend,
                    ..on_flex(kernel)
                };
                assert_eq!(used(config), Dense, "{backend:?} {kernel:?}");
            }
        }
        // Momentum or weight decay: not the fused step's plain SGD.
        let with_momentum = TrainConfig {
            momentum: Some(0.9),
            ..on_flex(Fused)
        };
        assert_eq!(used(with_momentum.clone()), Dense);
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
                dataset: DatasetName::Cifar10.into(),
                ..on_flex(Fused)
            },
        ] {
            assert_eq!(used(not_mostly_zero), Dense);
        }
        let fashion = TrainConfig {
            dataset: DatasetName::FashionMnist.into(),
            ..on_flex(Fused)
        };
        assert_eq!(used(fashion), Fused);
        // Above the batch where Flex's threaded product catches up, Flex takes it; NdArray not.
        let batch = |batch_size, config: TrainConfig| TrainConfig {
            batch_size,
            ..config
        };
        let largest = LARGEST_FUSED_STEP_BATCH_ON_FLEX;
        assert_eq!(used(batch(largest, on_flex(Fused))), Fused);
        assert_eq!(used(batch(largest + 1, on_flex(Fused))), Dense);
        assert_eq!(used(batch(4096, config())), Fused, "NdArray");
    }

    #[test]
    fn a_step_kernel_is_named_as_its_config_file_names_it() {
        for kernel in [StepKernel::Fused, StepKernel::Dense] {
            let serialized = serde_json::to_string(&kernel).unwrap();
            assert_eq!(serialized, format!("\"{}\"", kernel.name()));
        }
    }

    /// The reason the fused step does not apply names what in the settings stops it.
    #[test]
    fn the_obstacle_names_what_stops_the_fused_step() {
        let obstacle = |config: TrainConfig| config.step_kernel_obstacle();
        assert_eq!(obstacle(config()), None);
        let dense_on_gpu = TrainConfig {
            backend: BackendChoice::Wgpu,
            step_kernel: StepKernel::Dense,
            ..config()
        };
        assert_eq!(obstacle(dense_on_gpu), None, "dense applies everywhere");
        let fused_on_gpu = TrainConfig {
            backend: BackendChoice::Wgpu,
            ..config()
        };
        assert_eq!(
            obstacle(fused_on_gpu),
            Some(StepKernelObstacle::Backend(BackendChoice::Wgpu))
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
        assert_eq!(obstacle(cnn), Some(StepKernelObstacle::NotTheMlp));
        let cifar = TrainConfig {
            dataset: DatasetName::Cifar10.into(),
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
}
