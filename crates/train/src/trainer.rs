//! The training loop: the seed recipe (SGD, batch 64, shuffled, N epochs, evaluation after
//! each), on any backend, with metrics, checkpoints, resume, the memory timeline and the
//! release report.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use burn::module::Module;
use burn::optim::decay::WeightDecayConfig;
use burn::optim::momentum::MomentumConfig;
use burn::optim::{GradientsParams, ModuleOptimizer, SgdConfig};
use burn::tensor::{Device, ElementConversion, Tensor};
use indicatif::{ProgressBar, ProgressDrawTarget, ProgressStyle};
use reclaim_dataset::{ImageDataset, Split};
use reclaim_loader::{
    ImageShape, ImageSource, Loader, LoaderConfig, LoaderState, Normalization, Order, PixelFormat,
    RawImages, Sampling, TensorBatch,
};
use reclaim_model::{SimpleNn, SimpleNnConfig, WeightFormat};
use serde::{Deserialize, Serialize};

use crate::checkpoint::{
    CheckpointState, latest_checkpoint, load_checkpoint, read_checkpoint_state, save_checkpoint,
};
use crate::metrics::{JsonLinesWriter, read_json_lines};
use crate::release::ReleaseReport;
use crate::timeline::MemoryTimeline;
use crate::{BackendChoice, EpochMetrics, StepMetrics, TrainError};

/// What pixels become before they reach the model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum PixelScaling {
    /// `pixel / 255`, in `[0, 1]` (the seed recipe's `transforms.ToTensor()`).
    #[default]
    UnitRange,
    /// `(pixel / 255 - 0.1307) / 0.3081`, MNIST's mean and standard deviation.
    MnistStandardized,
}

/// Whether a run starts from scratch or continues from its newest checkpoint.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum StartPolicy {
    /// Start from freshly initialized weights (the run folder's files are replaced).
    #[default]
    Fresh,
    /// Continue from the newest checkpoint in the run folder.
    ResumeLatestCheckpoint,
}

/// Whether the run draws a progress bar on the terminal.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, Serialize, Deserialize)]
pub enum ProgressDisplay {
    /// A progress bar with the loss and samples per second (hidden when stderr is no terminal).
    #[default]
    Bar,
    /// Nothing on the terminal.
    Hidden,
}

/// Everything a training run needs to know. [`TrainConfig::recipe`] gives the seed recipe:
/// 2 epochs of SGD at lr 0.01, batches of 64, shuffled, pixels in `[0, 1]`.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct TrainConfig {
    /// Where the computation runs.
    pub backend: BackendChoice,
    /// The dataset folder (MNIST's four files, raw or `.gz`).
    pub data_folder: PathBuf,
    /// The run folder: metrics, checkpoints, reports and plots go here.
    pub run_folder: PathBuf,
    /// The layer sizes.
    pub model: SimpleNnConfig,
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
}

impl TrainConfig {
    /// The seed recipe on `backend`, reading `data_folder` and writing to `run_folder`.
    pub fn recipe(backend: BackendChoice, data_folder: PathBuf, run_folder: PathBuf) -> Self {
        TrainConfig {
            backend,
            data_folder,
            run_folder,
            model: SimpleNnConfig::new(),
            epochs: 2,
            batch_size: 64,
            learning_rate: 0.01,
            momentum: None,
            weight_decay: None,
            seed: 42,
            workers: 0,
            pixel_scaling: PixelScaling::UnitRange,
            training_sample_limit: None,
            stop_after_epochs: None,
            start: StartPolicy::Fresh,
            progress: ProgressDisplay::Bar,
            memory_sample_interval: Duration::from_millis(20),
        }
    }

    /// The settings a resumed run must share with the run it continues, as text.
    pub fn identity(&self) -> String {
        format!(
            "model={:?} batch_size={} lr={} momentum={:?} weight_decay={:?} seed={} scaling={:?} limit={:?}",
            self.model,
            self.batch_size,
            self.learning_rate,
            self.momentum,
            self.weight_decay,
            self.seed,
            self.pixel_scaling,
            self.training_sample_limit
        )
    }

    fn validate(&self) -> Result<(), TrainError> {
        let invalid = |setting, message: &str| {
            Err(TrainError::InvalidConfig {
                setting,
                message: message.to_string(),
            })
        };
        if self.epochs == 0 {
            return invalid("epochs", "must be at least 1");
        }
        if self.batch_size == 0 {
            return invalid("batch size", "must be at least 1");
        }
        if !(self.learning_rate.is_finite() && self.learning_rate > 0.0) {
            return invalid("learning rate", "must be a positive number");
        }
        if self.training_sample_limit == Some(0) {
            return invalid("training sample limit", "must be at least 1");
        }
        Ok(())
    }

    fn optimizer(&self) -> ModuleOptimizer {
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

    fn pixel_format(&self) -> PixelFormat {
        match self.pixel_scaling {
            PixelScaling::UnitRange => PixelFormat::UnitF32,
            PixelScaling::MnistStandardized => PixelFormat::NormalizedF32(Normalization::MNIST),
        }
    }
}

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

/// What a finished run leaves behind, besides its files.
#[derive(Clone, Debug)]
pub struct TrainRun {
    /// Every epoch's metrics, resumed ones included.
    pub epochs: Vec<EpochMetrics>,
    /// The final weights' file, in burnpack format (the same weights as the last checkpoint).
    pub final_weights_path: PathBuf,
    /// Memory at each step of the release.
    pub release: ReleaseReport,
    /// Wall-clock seconds of the whole call, opening and release included.
    pub total_seconds: f64,
    /// Peak bytes held by the training loader's buffers and queue.
    pub peak_loader_bytes: u64,
    /// The run folder.
    pub run_folder: PathBuf,
}

impl TrainRun {
    /// The test accuracy after the last epoch.
    pub fn final_test_accuracy(&self) -> Option<f64> {
        self.epochs.last().map(|epoch| epoch.test_accuracy)
    }
}

/// File names inside a run folder.
pub mod run_files {
    /// One JSON line per epoch.
    pub const EPOCH_METRICS: &str = "metrics.jsonl";
    /// One JSON line per logged step.
    pub const STEP_METRICS: &str = "steps.jsonl";
    /// The memory timeline, one JSON line per sample ([`TimelineSample`](crate::TimelineSample)).
    pub const MEMORY_TIMELINE: &str = "memory.jsonl";
    /// The run's configuration.
    pub const CONFIG: &str = "config.json";
    /// The final weights (burnpack).
    pub const FINAL_WEIGHTS: &str = "model.bpk";
    /// The release report as a Markdown table.
    pub const RELEASE_TABLE: &str = "release.md";
    /// The release report as JSON ([`ReleaseReport`](crate::ReleaseReport)).
    pub const RELEASE_REPORT: &str = "release.json";
}

/// Steps whose losses are averaged into one line of `steps.jsonl`.
const STEPS_PER_LOG_LINE: usize = 10;

/// Opens both splits of the dataset folder, memory-mapped.
pub fn open_mnist_splits(folder: &Path) -> Result<(ImageDataset, ImageDataset), TrainError> {
    // SAFETY: the files are the dataset's (or the decompression cache that reclaim-dataset
    // writes beside them); Reclaim never modifies them while they are mapped, and users are
    // told in the documentation not to change a dataset folder during a run.
    let train = unsafe { ImageDataset::open_mapped(folder, Split::Train)? };
    // SAFETY: as above.
    let test = unsafe { ImageDataset::open_mapped(folder, Split::Test)? };
    Ok((train, test))
}

/// One optimizer step on one batch: forward, cross-entropy, backward, SGD. Returns the updated
/// model and the batch's loss, taken off the autodiff graph. The run and its warm-up both step
/// through here, so the warm-up exercises exactly the code the run measures.
fn training_step(
    model: SimpleNn,
    optimizer: &mut ModuleOptimizer,
    learning_rate: f64,
    batch: TensorBatch<2>,
) -> (SimpleNn, Tensor<1>) {
    let TensorBatch { images, labels } = batch;
    let loss = model.loss(model.forward(images), labels);
    let gradients = GradientsParams::from_grads(loss.backward(), &model);
    let model = optimizer.step(learning_rate, model, gradients);
    (model, loss.inner())
}

/// The number of test images per evaluation batch.
const EVALUATION_BATCH_SIZE: usize = 1000;

/// The batch sizes a run will see: full batches and the last, partial one of each split.
struct RunShapes {
    /// Samples of the warm-up's training source: two full batches and the run's partial one.
    training_samples: usize,
    /// Samples of the warm-up's evaluation source: a full evaluation batch (or the whole test
    /// split when it is smaller) and the run's partial one.
    evaluation_samples: usize,
}

impl RunShapes {
    fn new(config: &TrainConfig, training_len: usize, test_len: usize) -> Self {
        let trained = config
            .training_sample_limit
            .map_or(training_len, |limit| limit.min(training_len));
        let evaluation_tail = if test_len > EVALUATION_BATCH_SIZE {
            test_len % EVALUATION_BATCH_SIZE
        } else {
            0
        };
        RunShapes {
            training_samples: config.batch_size * 2 + trained % config.batch_size,
            evaluation_samples: test_len.min(EVALUATION_BATCH_SIZE) + evaluation_tail,
        }
    }
}

/// Runs the training and evaluation code paths once on a small synthetic source with the batch
/// shapes of the run, so that the backend's and the standard library's one-time state
/// (runtimes, thread pools, kernels compiled per shape, lazily initialized globals) exists
/// before memory is measured: what remains after release is then what the run itself failed to
/// give back, not one-time setup.
fn warm_up(
    training_device: &Device,
    device: &Device,
    config: &TrainConfig,
    shapes: &RunShapes,
) -> Result<(), TrainError> {
    // The first time a thread blocks on a standard channel, as the training thread does when it
    // waits for a worker's batch, the standard library gives that thread a small context that
    // lives as long as the thread. Whether training blocks at all depends on the scheduler, so
    // block once here: the context then exists before the baseline, whatever happens later.
    let (_sender, receiver) = std::sync::mpsc::sync_channel::<()>(1);
    let _ = receiver.recv_timeout(Duration::from_millis(1));

    let samples = shapes.training_samples.max(shapes.evaluation_samples);
    let pixels = vec![0u8; samples * config.model.input_size];
    let labels = vec![0u8; samples];
    let shape = ImageShape {
        height: 1,
        width: config.model.input_size,
    };
    let training_source = RawImages::new(
        &pixels[..shapes.training_samples * config.model.input_size],
        &labels[..shapes.training_samples],
        shape,
    )?;
    let evaluation_source = RawImages::new(
        &pixels[..shapes.evaluation_samples * config.model.input_size],
        &labels[..shapes.evaluation_samples],
        shape,
    )?;
    let loader = Loader::new(
        &training_source,
        LoaderConfig {
            batch_size: config.batch_size,
            sampling: Sampling::Shuffled,
            num_workers: config.workers,
            pixel_format: config.pixel_format(),
            ..LoaderConfig::default()
        },
    )?;
    let model = config.model.init(training_device);
    let mut optimizer = config.optimizer();
    let model = std::thread::scope(|scope| -> Result<SimpleNn, TrainError> {
        let mut model = model;
        let epoch = loader.epoch(scope, 0)?;
        let mut loss_sum = Tensor::<1>::zeros([1], device);
        for batch in &epoch {
            let loss;
            (model, loss) = training_step(
                model,
                &mut optimizer,
                config.learning_rate,
                batch?.into_tensors::<2>(training_device)?,
            );
            loss_sum = loss_sum + loss;
        }
        let _ = loss_sum.into_scalar::<f32>();
        Ok(model)
    })?;
    evaluate_source(
        &model.valid(),
        &evaluation_source,
        config.pixel_format(),
        device,
    )?;
    training_device.sync().map_err(|error| TrainError::Device {
        message: format!("{error:?}"),
    })
}

fn evaluate_source<S: ImageSource + ?Sized>(
    model: &SimpleNn,
    source: &S,
    pixel_format: PixelFormat,
    device: &Device,
) -> Result<Evaluation, TrainError> {
    let loader = Loader::new(
        source,
        LoaderConfig {
            batch_size: EVALUATION_BATCH_SIZE,
            sampling: Sampling::Sequential,
            pixel_format,
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

/// Evaluates burnpack weights on the test split of `data_folder`.
pub fn evaluate_weights(
    weights: &[u8],
    model: &SimpleNnConfig,
    data_folder: &Path,
    backend: BackendChoice,
    pixel_scaling: PixelScaling,
) -> Result<Evaluation, TrainError> {
    let device = backend.device()?;
    let model = model
        .init(&device)
        .load_weight_bytes(weights, WeightFormat::Burnpack)?;
    // SAFETY: as in `open_mapped_splits`: Reclaim never modifies a dataset while it is mapped.
    let test_set = unsafe { ImageDataset::open_mapped(data_folder, Split::Test)? };
    let config = TrainConfig {
        pixel_scaling,
        ..TrainConfig::recipe(backend, PathBuf::new(), PathBuf::new())
    };
    evaluate_source(&model, &test_set, config.pixel_format(), &device)
}

fn create_progress_bar(display: ProgressDisplay, steps: u64) -> ProgressBar {
    let bar = match display {
        ProgressDisplay::Bar => {
            ProgressBar::with_draw_target(Some(steps), ProgressDrawTarget::stderr())
        }
        ProgressDisplay::Hidden => ProgressBar::hidden(),
    };
    bar.set_style(
        ProgressStyle::with_template(
            "{prefix} [{bar:30}] {pos}/{len} steps  {msg}  {elapsed_precise}",
        )
        .expect("progress template")
        .progress_chars("=> "),
    );
    bar
}

/// Trains, evaluates after each epoch, checkpoints, then releases everything in the PyTorch
/// recipe's order and measures memory after each step.
pub fn train(config: &TrainConfig) -> Result<TrainRun, TrainError> {
    config.validate()?;
    let started = Instant::now();
    // The backend first: a run that cannot start leaves no folder behind.
    let device = config.backend.device()?;
    let run_folder = config.run_folder.clone();
    std::fs::create_dir_all(&run_folder).map_err(|error| TrainError::io(&run_folder, error))?;
    let config_json = serde_json::to_vec_pretty(config).expect("config serializes");
    crate::files::write_file_atomically(&run_folder.join(run_files::CONFIG), &config_json)?;

    device.seed(config.seed);
    let training_device = device.clone().autodiff();
    // The splits' sizes give the warm-up the run's partial batches; the datasets are dropped
    // again (and opened anew after the baseline, where their memory is measured).
    let shapes = {
        let (train_set, test_set) = open_mnist_splits(&config.data_folder)?;
        RunShapes::new(config, train_set.len(), test_set.len())
    };
    warm_up(&training_device, &device, config, &shapes)?;
    device.seed(config.seed);

    // What a resumed run continues from.
    let resumed_checkpoint = match config.start {
        StartPolicy::Fresh => None,
        StartPolicy::ResumeLatestCheckpoint => {
            let path = latest_checkpoint(&run_folder).ok_or_else(|| TrainError::NoCheckpoint {
                folder: run_folder.clone(),
            })?;
            let state = read_checkpoint_state(&path)?;
            if state.run_identity != config.identity() {
                return Err(TrainError::Checkpoint {
                    path,
                    message: format!(
                        "written by a run with other settings ({}); this run has {}",
                        state.run_identity,
                        config.identity()
                    ),
                });
            }
            Some((path, state))
        }
    };
    let resumed_state = resumed_checkpoint.as_ref().map(|(_, state)| state);
    let mut epoch_metrics: Vec<EpochMetrics> = resumed_state
        .map(|state| state.epoch_metrics.clone())
        .unwrap_or_default();
    epoch_metrics.reserve(config.epochs);
    let mut steps_completed = resumed_state.map_or(0, |state| state.steps_completed);
    let mut loader_state = resumed_state.map_or(
        LoaderState {
            seed: config.seed,
            epoch: 0,
            position: 0,
        },
        |state| state.loader_state,
    );

    // Metrics files: a resumed run keeps what its checkpoint had recorded.
    let step_path = run_folder.join(run_files::STEP_METRICS);
    let kept_steps: Vec<StepMetrics> = match resumed_state {
        Some(_) => read_json_lines::<StepMetrics>(&step_path)
            .unwrap_or_default()
            .into_iter()
            .filter(|record| record.step <= steps_completed)
            .collect(),
        None => Vec::new(),
    };
    JsonLinesWriter::write_all_atomically(
        run_folder.join(run_files::EPOCH_METRICS),
        &epoch_metrics,
    )?;
    JsonLinesWriter::write_all_atomically(&step_path, &kept_steps)?;
    drop(kept_steps);
    let mut epoch_writer = JsonLinesWriter::append(run_folder.join(run_files::EPOCH_METRICS))?;
    let mut step_writer = JsonLinesWriter::append(&step_path)?;

    // The run's own result (the weights' path, returned in `TrainRun`) is made before the
    // baseline, so that it does not count as memory the run failed to give back.
    let final_weights_path = run_folder.join(run_files::FINAL_WEIGHTS);
    // Everything the measurement itself needs exists from here on: the baseline.
    let timeline = MemoryTimeline::start(
        config.memory_sample_interval,
        &run_folder.join(run_files::MEMORY_TIMELINE),
        &config.data_folder,
    )?;
    let mut release = ReleaseReport::with_capacity(8);
    release.record(
        "before loading",
        timeline.mark("before loading", Some(&device)),
    );

    // The model and optimizer, fresh or from the checkpoint.
    let mut model = config.model.init_seeded(&training_device, config.seed);
    let mut optimizer = config.optimizer();
    if let Some((path, _)) = &resumed_checkpoint {
        let loaded = load_checkpoint(path, model, optimizer)?;
        model = loaded.model;
        optimizer = loaded.optimizer;
    }

    let (train_set, test_set) = open_mnist_splits(&config.data_folder)?;
    timeline.mark("dataset opened", Some(&device));

    let last_epoch = config
        .stop_after_epochs
        .map_or(config.epochs, |stop| stop.min(config.epochs));
    let sampling = match config.training_sample_limit {
        Some(limit) => Sampling::Subset {
            indices: (0..limit.min(train_set.len())).collect(),
            order: Order::Shuffled,
        },
        None => Sampling::Shuffled,
    };
    let loader_config = LoaderConfig {
        batch_size: config.batch_size,
        drop_last: false,
        sampling,
        seed: config.seed,
        num_workers: config.workers,
        prefetch: 2,
        pixel_format: config.pixel_format(),
    };

    let evaluation_device = device.clone();
    let (model, peak_loader_bytes) = std::thread::scope(|scope| -> Result<_, TrainError> {
        let loader = Loader::new(&train_set, loader_config)?;
        let steps_per_epoch = loader.batches_per_epoch() as u64;
        while (loader_state.epoch as usize) < last_epoch {
            let epoch_number = loader_state.epoch as usize + 1;
            timeline.mark(format!("epoch {epoch_number}"), Some(&device));
            let bar = create_progress_bar(config.progress, steps_per_epoch);
            bar.set_prefix(format!("epoch {epoch_number}/{}", config.epochs));
            bar.set_position(loader_state.position / config.batch_size as u64);

            let epoch_started = Instant::now();
            let epoch = loader.resume(scope, &loader_state)?;
            let mut samples = 0usize;
            let mut epoch_loss_sum = Tensor::<1>::zeros([1], &device);
            let mut window_loss_sum = Tensor::<1>::zeros([1], &device);
            let mut window_steps = 0usize;
            let mut epoch_steps = 0usize;
            for batch in &epoch {
                let batch = batch?;
                samples += batch.len();
                let loss;
                (model, loss) = training_step(
                    model,
                    &mut optimizer,
                    config.learning_rate,
                    batch.into_tensors::<2>(&training_device)?,
                );
                epoch_loss_sum = epoch_loss_sum + loss.clone();
                window_loss_sum = window_loss_sum + loss;
                window_steps += 1;
                epoch_steps += 1;
                steps_completed += 1;
                if window_steps == STEPS_PER_LOG_LINE || epoch.is_finished() {
                    let window_loss: f64 =
                        std::mem::replace(&mut window_loss_sum, Tensor::<1>::zeros([1], &device))
                            .into_scalar::<f32>()
                            .elem::<f64>()
                            / window_steps as f64;
                    step_writer.write(&StepMetrics {
                        step: steps_completed,
                        epoch: epoch_number,
                        loss: window_loss,
                    })?;
                    window_steps = 0;
                    let rate = samples as f64 / epoch_started.elapsed().as_secs_f64();
                    bar.set_message(format!("loss {window_loss:.4}  {rate:.0} samples/s"));
                }
                bar.inc(1);
            }
            let next_state = epoch.state().next_epoch();
            drop(epoch);
            let train_loss: f64 =
                f64::from(epoch_loss_sum.into_scalar::<f32>()) / epoch_steps.max(1) as f64;
            training_device.sync().map_err(|error| TrainError::Device {
                message: format!("{error:?}"),
            })?;
            let train_seconds = epoch_started.elapsed().as_secs_f64();

            timeline.mark(format!("evaluation {epoch_number}"), Some(&device));
            let evaluation_started = Instant::now();
            let evaluation = evaluate_source(
                &model.valid(),
                &test_set,
                config.pixel_format(),
                &evaluation_device,
            )?;
            let evaluation_seconds = evaluation_started.elapsed().as_secs_f64();
            let memory = timeline.mark(format!("epoch {epoch_number} evaluated"), Some(&device));
            let metrics = EpochMetrics {
                epoch: epoch_number,
                train_loss,
                test_loss: evaluation.loss,
                test_accuracy: evaluation.accuracy,
                train_seconds,
                evaluation_seconds,
                samples_per_second: samples as f64 / train_seconds,
                resident_bytes: memory.resident_bytes,
                device_bytes_in_use: memory.device_bytes_in_use,
            };
            bar.finish_with_message(format!(
                "loss {train_loss:.4}  test accuracy {:.2}%  {:.0} samples/s",
                metrics.test_accuracy * 100.0,
                metrics.samples_per_second
            ));
            epoch_writer.write(&metrics)?;
            epoch_metrics.push(metrics);
            loader_state = next_state;
            save_checkpoint(
                &run_folder,
                &model,
                &optimizer,
                &CheckpointState {
                    epochs_completed: epoch_number,
                    steps_completed,
                    loader_state,
                    epoch_metrics: epoch_metrics.clone(),
                    run_identity: config.identity(),
                },
            )?;
        }
        release.record("trained", timeline.mark("trained", Some(&device)));
        Ok((model, loader.memory_report().peak_bytes))
    })?;
    // The scope has ended: the loader, its epochs and every worker thread are gone.
    release.record(
        "loader scope ended",
        timeline.mark("loader scope ended", Some(&device)),
    );

    drop(train_set);
    drop(test_set);
    release.record(
        "dataset dropped",
        timeline.mark("dataset dropped", Some(&device)),
    );

    let final_weights = model.to_weight_bytes(WeightFormat::Burnpack)?;
    crate::files::write_file_atomically(&final_weights_path, &final_weights)?;
    drop(final_weights);
    drop(optimizer);
    device.memory_cleanup();
    release.record(
        "device memory cleaned up",
        timeline.mark("device memory cleaned up", Some(&device)),
    );

    drop(model);
    device.memory_cleanup();
    release.record(
        "model dropped",
        timeline.mark("model dropped", Some(&device)),
    );

    drop(epoch_writer);
    drop(step_writer);
    timeline.finish()?;
    release.write_to(&run_folder)?;

    Ok(TrainRun {
        epochs: epoch_metrics,
        final_weights_path,
        release,
        total_seconds: started.elapsed().as_secs_f64(),
        peak_loader_bytes: peak_loader_bytes as u64,
        run_folder,
    })
}
