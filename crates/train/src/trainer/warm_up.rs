//! The warm-up before the baseline: the run's code paths, once, on the run's batch shapes.

use std::time::Duration;

use burn::module::Module;
use burn::tensor::{Device, Tensor};
use reclaim_loader::{Loader, LoaderConfig, RawImages, Sampling};
use reclaim_model::{Classifier, free_orphaned_autodiff_nodes};

use super::config::TrainConfig;
use super::dataset_check::CheckedDataset;
use super::evaluation::{EVALUATION_BATCH_SIZE, evaluate_source};
use super::steps::{StepLoss, TrainingSteps};
use crate::{BackendChoice, TrainError};

/// The batch sizes a run will see: full batches and the last, partial one of each split.
struct RunShapes {
    /// Samples of the warm-up's training source: two full batches and the run's partial one.
    training_samples: usize,
    /// Samples of the warm-up's evaluation source: a full evaluation batch (or the whole test
    /// split when it is smaller) and the run's partial one.
    evaluation_samples: usize,
}

impl RunShapes {
    /// The shapes of a run of `config` on `dataset`. Never more samples than the run itself
    /// batches at once: a batch size beyond the training split's length warms up on one batch
    /// of the split's length, as the run will train.
    fn of_run(config: &TrainConfig, dataset: &CheckedDataset) -> Self {
        let trained = config
            .training_sample_limit
            .map_or(dataset.training_len, |limit| {
                limit.min(dataset.training_len)
            });
        let training_samples = if config.batch_size >= trained {
            trained
        } else {
            config.batch_size * 2 + trained % config.batch_size
        };
        let test_len = dataset.test_len;
        let evaluation_tail = if test_len > EVALUATION_BATCH_SIZE {
            test_len % EVALUATION_BATCH_SIZE
        } else {
            0
        };
        RunShapes {
            training_samples,
            evaluation_samples: test_len.min(EVALUATION_BATCH_SIZE) + evaluation_tail,
        }
    }
}

/// Runs the training and evaluation code paths once on a small synthetic source with the batch
/// shapes of the run, so that the backend's and the standard library's one-time state
/// (runtimes, thread pools, kernels compiled per shape, lazily initialized globals) exists
/// before memory is measured: what remains after release is then what the run itself failed to
/// give back, not one-time setup.
pub(super) fn warm_up(
    training_device: &Device,
    device: &Device,
    config: &TrainConfig,
    dataset: &CheckedDataset,
) -> Result<(), TrainError> {
    let shapes = RunShapes::of_run(config, dataset);
    // The first time a thread blocks on a standard channel, as the training thread does when it
    // waits for a worker's batch, the standard library gives that thread a small context that
    // lives as long as the thread. Whether training blocks at all depends on the scheduler, so
    // block once here: the context then exists before the baseline, whatever happens later.
    let (_sender, receiver) = std::sync::mpsc::sync_channel::<()>(1);
    let _ = receiver.recv_timeout(Duration::from_millis(1));

    let samples = shapes.training_samples.max(shapes.evaluation_samples);
    // The checks made the dataset's shape countable and the model's input.
    let pixels_per_image = dataset.shape.pixels().unwrap_or(0);
    let pixels = vec![0u8; samples * pixels_per_image];
    let labels = vec![0u8; samples];
    let synthetic = |count: usize| {
        RawImages::new(
            &pixels[..count * pixels_per_image],
            &labels[..count],
            dataset.shape,
        )
    };
    let model = warm_up_training(
        training_device,
        device,
        config,
        &synthetic(shapes.training_samples)?,
    )?;
    evaluate_source(
        &model.valid(),
        &synthetic(shapes.evaluation_samples)?,
        config.pixel_format(),
        config.model.number_of_classes(),
        device,
    )?;
    if config.backend == BackendChoice::Flex {
        give_every_pool_thread_its_gemm_workspace(device);
    }
    // The warm-up's model goes first, so that the sweep frees its nodes too.
    drop(model);
    free_orphaned_autodiff_nodes(device);
    training_device.sync().map_err(|error| TrainError::Device {
        message: format!("{error:?}"),
    })
}

/// Flex multiplies through the `gemm` crate, which gives each thread that first packs a product
/// a workspace the size of its L2 cache (`L2_SLAB` in gemm-common, 512 KiB on the AMD EPYC
/// measured) and keeps it for the life of the thread. Which of rayon's threads take part in a
/// threaded product (the evaluation's) is the scheduler's choice, so a thread could get its
/// workspace only after the baseline, and the release would report it as not given back
/// (docs/memory.md); the fused step runs no product on the pool. One product
/// small enough to stay on the calling thread (below Flex's threading threshold), run on every
/// thread of the pool, makes every workspace exist before the baseline.
fn give_every_pool_thread_its_gemm_workspace(device: &Device) {
    rayon::broadcast(|_| {
        let left = Tensor::<2>::zeros([64, 784], device);
        let right = Tensor::<2>::zeros([784, 128], device);
        let _ = left.matmul(right).into_data();
    });
}

/// One shuffled epoch of training steps over `source`, as the run's epochs step.
fn warm_up_training(
    training_device: &Device,
    device: &Device,
    config: &TrainConfig,
    source: &RawImages<'_>,
) -> Result<Classifier, TrainError> {
    let loader = Loader::new(
        source,
        LoaderConfig {
            batch_size: config.batch_size,
            sampling: Sampling::Shuffled,
            num_workers: config.workers,
            pixel_format: config.pixel_format(),
            augmentation: config.augmentation,
            ..LoaderConfig::default()
        },
    )?;
    let model = config.model.init(training_device)?;
    let mut optimizer = config.optimizer();
    std::thread::scope(|scope| -> Result<Classifier, TrainError> {
        let mut model = model;
        let mut steps = TrainingSteps::new(config.step_kernel_used(), &model)?;
        let epoch = loader.epoch(scope, 0)?;
        let mut loss_sum = Tensor::<1>::zeros([1], device);
        for batch in &epoch {
            let loss;
            (model, loss) = steps.step(
                model,
                &mut optimizer,
                config.learning_rate,
                batch?,
                training_device,
            )?;
            if let StepLoss::Device(loss) = loss {
                loss_sum = loss_sum + *loss;
            }
        }
        let _ = loss_sum.into_scalar::<f32>();
        let model = steps.synced(model)?;
        Ok(model)
    })
}
