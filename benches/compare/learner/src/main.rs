//! One burn-train `Learner` job on MNIST, fed either by Burn's own pipeline (`MnistDataset` +
//! `DataLoaderBuilder` + a `Batcher`, as in Burn's MNIST example) or by Reclaim's loader; the
//! rest is identical: a warm-up epoch on 128 generated images through the same code before the
//! memory baseline, the same MLP (`Mlp`, seed 42), SGD with lr 0.01, batch 64, shuffled
//! training, validation on the test split after each epoch, burn-train's accuracy and loss
//! metrics, the same renderer. It prints one JSON object: times, peak memory, memory after
//! everything is dropped, accuracy. `../learner.sh` runs both pipelines in turn and tabulates.
//!
//! ```sh
//! XDG_CACHE_HOME=/tmp/burn-cache reclaim-compare-learner --pipeline burn --data data/mnist \
//!     --out /tmp/run --record /tmp/jobs.jsonl
//! ```
//!
//! Burn's `MnistDataset` reads `$XDG_CACHE_HOME/burn-dataset/mnist/{train,test}/` and downloads
//! there what is missing; `learner.sh` fills that folder from the vendored files first, so that
//! nothing is downloaded.

mod burn_pipeline;
mod clock;
mod reclaim_pipeline;

use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::time::{Duration, Instant};

use anyhow::Context;
use burn::data::dataloader::DataLoader;
use burn::module::Module;
use burn::optim::SgdConfig;
use burn::tensor::Device;
use clap::{Parser, ValueEnum};
use reclaim::learner::burn_train::metric::{AccuracyMetric, LossMetric};
use reclaim::learner::burn_train::{
    ClassificationOutput, InferenceStep, Learner, LearnerModel, LearningResult, SupervisedTraining,
    TrainStep,
};
use reclaim::learner::{SplitLinesRenderer, epoch_means, trained_model};
use reclaim::memory::{CountingAllocator, MemorySnapshot};
use reclaim::model::{Mlp, MlpConfig};
use serde_json::json;

use crate::clock::{EpochClock, EpochSummary};

#[global_allocator]
static ALLOCATOR: CountingAllocator = CountingAllocator;

/// Which pipeline feeds the `Learner`.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum Pipeline {
    /// Burn 0.22.1's `MnistDataset` + `DataLoaderBuilder` + a `Batcher`.
    Burn,
    /// Reclaim's `BurnLoader` over the memory-mapped IDX files.
    Reclaim,
}

/// The CPU backend the job runs on.
#[derive(Clone, Copy, Debug, ValueEnum)]
enum Backend {
    Ndarray,
    Flex,
}

impl Backend {
    fn device(self) -> Device {
        match self {
            #[allow(deprecated)] // the design's CPU path, deprecated in Burn 0.22
            Backend::Ndarray => Device::ndarray(),
            Backend::Flex => Device::flex(),
        }
    }
}

/// One `Learner` job; prints its figures as one JSON object.
#[derive(Debug, Parser)]
struct Arguments {
    /// The pipeline that feeds the `Learner`.
    #[arg(long, value_enum)]
    pipeline: Pipeline,
    /// The backend (one CPU device).
    #[arg(long, value_enum, default_value = "ndarray")]
    backend: Backend,
    /// Training epochs (validation on the test split after each), at least 1.
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u32).range(1..))]
    epochs: u32,
    /// Loader worker threads, the same for both pipelines (at most Reclaim's
    /// `LoaderConfig::MAX_WORKERS`, 1024).
    #[arg(long, default_value_t = 2, value_parser = clap::value_parser!(u16).range(0..=1024))]
    workers: u16,
    /// Reclaim's MNIST folder (the vendored `data/mnist`).
    #[arg(long)]
    data: PathBuf,
    /// burn-train's run folder: new or empty.
    #[arg(long)]
    out: PathBuf,
    /// Also append the JSON object, as one line, to this file (burn-train prints its summary on
    /// standard output too).
    #[arg(long)]
    record: Option<PathBuf>,
}

/// The settings both pipelines share.
#[derive(Clone, Copy, Debug)]
struct Recipe {
    epochs: usize,
    workers: usize,
    batch_size: usize,
    seed: u64,
    learning_rate: f64,
}

/// What a job measured before it dropped everything.
#[derive(Debug)]
struct JobFigures {
    /// Opening the datasets and building the loaders.
    setup: Duration,
    training_samples: usize,
    fit: FitFigures,
}

/// What the `Learner`'s fit measured.
#[derive(Debug)]
struct FitFigures {
    /// `launch` of the `Learner`, both splits of every epoch.
    duration: Duration,
    /// The epochs' durations, from the clock on the loaders (scalars: nothing of the job's is
    /// left on the heap when the release is measured).
    epochs: EpochSummary,
    /// Validation accuracy after the last epoch, in percent, as burn-train logged it.
    accuracy: f64,
}

fn main() -> anyhow::Result<()> {
    let arguments = Arguments::parse();
    let recipe = Recipe {
        epochs: arguments.epochs as usize,
        workers: usize::from(arguments.workers),
        batch_size: 64,
        seed: 42,
        learning_rate: 0.01,
    };
    let device = arguments.backend.device();
    let data = arguments
        .data
        .canonicalize()
        .with_context(|| format!("--data {}: no such folder", arguments.data.display()))?;
    new_run_folder(&arguments.out)?;

    let warm_up_folder = arguments.out.join("warm-up");
    match arguments.pipeline {
        Pipeline::Burn => burn_pipeline::warm_up(recipe, &warm_up_folder, &device)?,
        Pipeline::Reclaim => reclaim_pipeline::warm_up(recipe, &warm_up_folder, &device)?,
    }
    device.memory_cleanup();
    let measure = || MemorySnapshot::take_under(Some(&device), &data);
    let baseline = measure();
    let started = Instant::now();
    let figures = match arguments.pipeline {
        Pipeline::Burn => burn_pipeline::run(recipe, &arguments.out, &device)?,
        Pipeline::Reclaim => reclaim_pipeline::run(recipe, &data, &arguments.out, &device)?,
    };
    let job = started.elapsed();
    device.memory_cleanup();
    let released = measure();

    let record = json!({
        "pipeline": format!("{:?}", arguments.pipeline).to_lowercase(),
        "backend": format!("{:?}", arguments.backend).to_lowercase(),
        "epochs": recipe.epochs,
        "workers": recipe.workers,
        "job_seconds": job.as_secs_f64(),
        "setup_seconds": figures.setup.as_secs_f64(),
        "fit_seconds": figures.fit.duration.as_secs_f64(),
        "epoch_training_seconds_mean": figures.fit.epochs.mean_training.as_secs_f64(),
        "epoch_seconds_mean": figures.fit.epochs.mean_with_validation.as_secs_f64(),
        "first_epoch_seconds": figures.fit.epochs.first_with_validation.as_secs_f64(),
        "training_samples": figures.training_samples,
        "samples_per_second": (figures.training_samples * recipe.epochs) as f64
            / figures.fit.duration.as_secs_f64(),
        "accuracy_percent": figures.fit.accuracy,
        "baseline_rss_bytes": baseline.resident_bytes,
        "baseline_heap_bytes": baseline.live_heap_bytes,
        "peak_rss_bytes": released.peak_resident_bytes,
        "released_rss_bytes": released.resident_bytes,
        "released_heap_bytes": released.live_heap_bytes,
    });
    println!("{record}");
    if let Some(path) = &arguments.record {
        append_line(path, &record.to_string())?;
    }
    Ok(())
}

/// Appends `line` and a newline to the file at `path`, creating it if needed.
fn append_line(path: &Path, line: &str) -> anyhow::Result<()> {
    use std::io::Write as _;
    let mut file = std::fs::OpenOptions::new()
        .create(true)
        .append(true)
        .open(path)
        .with_context(|| format!("--record {}: cannot open it", path.display()))?;
    writeln!(file, "{line}").with_context(|| format!("--record {}: cannot write", path.display()))
}

/// Makes `folder` for the job's run, refusing one that holds anything: the job never deletes
/// files it did not write (give each job a new folder, as `learner.sh` and `run.sh` do).
fn new_run_folder(folder: &Path) -> anyhow::Result<()> {
    let holds_something = match std::fs::read_dir(folder) {
        Ok(mut entries) => entries.next().is_some(),
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => false,
        Err(error) => {
            return Err(error)
                .with_context(|| format!("--out {}: cannot read it", folder.display()));
        }
    };
    anyhow::ensure!(
        !holds_something,
        "--out {}: the folder is not empty; give the job a new one",
        folder.display()
    );
    std::fs::create_dir_all(folder)
        .with_context(|| format!("--out {}: cannot create it", folder.display()))
}

/// The MLP both jobs start from, made trainable on the autodiff counterpart of `device`
/// (as `LearnerClassifier::new` does: burn-train's `fork` keeps gradient tracking only where
/// the parameters already have it).
fn initial_network(device: &Device) -> Mlp {
    MlpConfig::new()
        .init_seeded(device, 42)
        .fork(&device.clone().autodiff())
        .train()
}

/// `launch`es `learner` on the two loaders with the recipe's epochs, burn-train's accuracy and
/// loss metrics and the same renderer for both pipelines; the fit's duration, each epoch's,
/// and the validation accuracy after the last epoch.
fn fit<M, I: Send + 'static>(
    learner: Learner<M>,
    loaders: (Arc<dyn DataLoader<I>>, Arc<dyn DataLoader<I>>),
    recipe: Recipe,
    out: &Path,
) -> anyhow::Result<FitFigures>
where
    M: LearnerModel
        + TrainStep<Input = I, Output = ClassificationOutput>
        + InferenceStep<Input = I, Output = ClassificationOutput>,
{
    let clock = EpochClock::default();
    let training = clock.wrap_training(loaders.0);
    let validation = clock.wrap_validation(loaders.1);
    let started = Instant::now();
    let result: LearningResult<_> = SupervisedTraining::new(out, training, validation)
        .metrics((AccuracyMetric::new(), LossMetric::new()))
        .with_application_logger(None)
        .renderer(Box::new(SplitLinesRenderer::default()))
        .summary()
        .num_epochs(recipe.epochs)
        .launch(learner);
    let fit = started.elapsed();
    drop(trained_model(result)?);
    let accuracy = epoch_means(out, "Accuracy")?.valid.last().copied();
    let accuracy = accuracy.context("burn-train logged no validation accuracy")?;
    Ok(FitFigures {
        duration: fit,
        epochs: clock.summary(started + fit),
        accuracy,
    })
}

/// SGD (no momentum, no weight decay) at the recipe's learning rate.
fn learner<M: LearnerModel>(model: M, recipe: Recipe) -> Learner<M> {
    Learner::new(model, SgdConfig::new().init(), recipe.learning_rate)
}
