//! `reclaim bench loader`: whole epochs of the train split through the loader into tensors.

use std::path::PathBuf;
use std::time::{Duration, Instant};

use anyhow::Context as _;
use burn::tensor::{Device, Tensor};
use reclaim_dataset::{Family, ImageDataset, Split, resolve_data_folder};
use reclaim_loader::{Loader, LoaderConfig, TensorBatch};

use reclaim_train::BackendChoice;

/// Arguments of `reclaim bench loader`.
#[derive(Debug, clap::Args)]
pub struct BenchLoaderArguments {
    /// The Burn backend the tensors are made on: ndarray, flex, wgpu or cuda (each needs its
    /// cargo feature).
    #[arg(long, default_value = "ndarray")]
    pub backend: BackendChoice,
    /// Samples per batch.
    #[arg(long, default_value_t = 64)]
    pub batch_size: usize,
    /// Worker threads making batches ahead (0: on the consuming thread).
    #[arg(long, default_value_t = 0)]
    pub workers: usize,
    /// Batches each worker may make ahead.
    #[arg(long, default_value_t = 2)]
    pub prefetch: usize,
    /// Whole epochs to run.
    #[arg(long, default_value_t = 3)]
    pub epochs: u64,
    /// The shuffle's seed.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// The MNIST folder (default: $RECLAIM_DATA, else the workspace's data/mnist).
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Print one JSON object instead of text.
    #[arg(long)]
    pub json: bool,
}

/// What one run measured.
#[derive(Debug)]
struct Measurements {
    samples: usize,
    epoch_durations: Vec<Duration>,
    first_batch: Duration,
    peak_loader_bytes: usize,
    loader_bytes_after: usize,
    device_ready: Duration,
}

impl Measurements {
    fn total(&self) -> Duration {
        self.epoch_durations.iter().sum()
    }

    fn samples_per_second(&self) -> f64 {
        self.samples as f64 / self.total().as_secs_f64().max(f64::MIN_POSITIVE)
    }
}

/// Runs `reclaim bench loader`.
/// Ctrl-C or SIGTERM stops it after the current batch (exit status 130; it keeps no state).
pub fn run(arguments: BenchLoaderArguments) -> anyhow::Result<()> {
    anyhow::ensure!(arguments.epochs > 0, "--epochs must be at least 1");
    super::interrupt::install()?;
    let folder = resolve_data_folder(arguments.data.as_deref(), Family::Mnist)?;
    // SAFETY: the dataset files are only read; nothing in this process writes them, and the
    // decompressed cache is only ever replaced by rename, never modified in place.
    let dataset = unsafe { ImageDataset::open_mapped(&folder, Split::Train) }
        .with_context(|| format!("opening the MNIST train split in {}", folder.display()))?;

    let device_started = Instant::now();
    let device = arguments.backend.device()?;
    // Initialize the device (and its lazily created runtime) before timing the loader.
    let _ = Tensor::<1>::zeros([1], &device).into_data();
    let device_ready = device_started.elapsed();

    let config = LoaderConfig {
        batch_size: arguments.batch_size,
        num_workers: arguments.workers,
        prefetch: arguments.prefetch,
        ..LoaderConfig::mnist_training(arguments.seed)
    };
    let measurements = measure(&dataset, config, &device, arguments.epochs, device_ready)?;
    if arguments.json {
        println!("{}", json(&arguments, &dataset, &measurements));
    } else {
        print_text(&arguments, &dataset, &measurements);
    }
    Ok(())
}

fn measure(
    dataset: &ImageDataset,
    config: LoaderConfig,
    device: &Device,
    epochs: u64,
    device_ready: Duration,
) -> anyhow::Result<Measurements> {
    let started = Instant::now();
    let loader = Loader::new(dataset, config).context("configuring the loader")?;
    let mut first_batch = None;
    let mut samples = 0;
    let mut epoch_durations = Vec::new();
    std::thread::scope(|scope| -> anyhow::Result<()> {
        for epoch_number in 0..epochs {
            let epoch_started = if epoch_number == 0 {
                started
            } else {
                Instant::now()
            };
            let epoch = loader.epoch(scope, epoch_number)?;
            for batch in &epoch {
                let TensorBatch { images, labels } = batch?.into_tensors::<2>(device)?;
                samples += images.dims()[0];
                first_batch.get_or_insert_with(|| started.elapsed());
                drop((images, labels));
                if super::interrupt::INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst) {
                    return Err(super::interrupt::Interrupted {
                        message: format!(
                            "the loader bench stopped in epoch {epoch_number}; nothing was reported"
                        ),
                    }
                    .into());
                }
            }
            drop(epoch);
            device
                .sync()
                .map_err(|error| anyhow::anyhow!("{error:?}"))?;
            epoch_durations.push(epoch_started.elapsed());
        }
        Ok(())
    })?;
    Ok(Measurements {
        samples,
        epoch_durations,
        first_batch: first_batch.unwrap_or_default(),
        peak_loader_bytes: loader.memory_report().peak_bytes,
        loader_bytes_after: loader.memory_report().current_bytes,
        device_ready,
    })
}

fn print_text(arguments: &BenchLoaderArguments, dataset: &ImageDataset, measured: &Measurements) {
    println!(
        "reclaim bench loader: MNIST train ({} images, memory-mapped), backend {}, batch {}, \
         {} workers, prefetch {}, seed {}",
        dataset.len(),
        arguments.backend,
        arguments.batch_size,
        arguments.workers,
        arguments.prefetch,
        arguments.seed
    );
    for (epoch, duration) in measured.epoch_durations.iter().enumerate() {
        println!(
            "  epoch {epoch}: {:.1} ms ({:.0} samples/s)",
            duration.as_secs_f64() * 1e3,
            dataset.len() as f64 / duration.as_secs_f64().max(f64::MIN_POSITIVE)
        );
    }
    println!(
        "samples per second: {:.0} ({} samples in {:.3} s)",
        measured.samples_per_second(),
        measured.samples,
        measured.total().as_secs_f64()
    );
    println!(
        "time to the first batch: {:.3} ms (device ready in {:.1} ms before)",
        measured.first_batch.as_secs_f64() * 1e3,
        measured.device_ready.as_secs_f64() * 1e3
    );
    println!(
        "peak loader memory: {} bytes ({:.2} MiB); held after the run: {} bytes",
        measured.peak_loader_bytes,
        measured.peak_loader_bytes as f64 / (1024.0 * 1024.0),
        measured.loader_bytes_after
    );
}

fn json(
    arguments: &BenchLoaderArguments,
    dataset: &ImageDataset,
    measured: &Measurements,
) -> String {
    let epoch_ms: Vec<f64> = measured
        .epoch_durations
        .iter()
        .map(|duration| duration.as_secs_f64() * 1e3)
        .collect();
    serde_json::json!({
        "backend": arguments.backend.name(),
        "dataset_samples": dataset.len(),
        "batch_size": arguments.batch_size,
        "workers": arguments.workers,
        "prefetch": arguments.prefetch,
        "epochs": arguments.epochs,
        "seed": arguments.seed,
        "samples": measured.samples,
        "seconds": measured.total().as_secs_f64(),
        "samples_per_s": measured.samples_per_second(),
        "first_batch_ms": measured.first_batch.as_secs_f64() * 1e3,
        "device_ready_ms": measured.device_ready.as_secs_f64() * 1e3,
        "epoch_ms": epoch_ms,
        "peak_loader_bytes": measured.peak_loader_bytes,
        "loader_bytes_after": measured.loader_bytes_after,
    })
    .to_string()
}
