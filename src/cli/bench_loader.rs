//! `reclaim bench loader`: whole epochs of a dataset's train split through the loader into
//! tensors, optionally with the dataset's usual training augmentation.

use std::path::{Path, PathBuf};
use std::time::{Duration, Instant};

use anyhow::Context as _;
use burn::tensor::{Device, Tensor};
use reclaim_dataset::{CifarDataset, DatasetName, ImageDataset, Split, resolve_dataset_folder};
use reclaim_loader::{
    Augmentation, HorizontalFlip, ImageShape, ImageSource, Loader, LoaderConfig, RandomCrop,
    TensorBatch,
};

use reclaim_dataset::PackSplits;
use reclaim_train::{BackendChoice, PackStatistics, PixelScaling, photo_augmentation};

/// Arguments of `reclaim bench loader`.
#[derive(Debug, clap::Args)]
pub struct BenchLoaderArguments {
    /// The dataset whose train split is loaded: mnist, fashion-mnist, kmnist, cifar10 or
    /// cifar100.
    #[arg(long, default_value = "mnist")]
    pub dataset: DatasetName,
    /// Augment every sample as the dataset's usual training recipe does, fused into the
    /// conversion. CIFAR: a random crop of 32 x 32 from the image padded with 4 zero pixels,
    /// then a random horizontal flip. The MNIST family: a random crop with padding 2 only (no
    /// flip: digits and characters are not mirror images of each other). Without it, images
    /// are used as they are. Pixels are normalized either way: CIFAR-10's per-channel
    /// statistics for CIFAR, MNIST's for the MNIST family.
    #[arg(long)]
    pub augment: bool,
    /// The Burn backend the tensors are made on: ndarray, flex, wgpu or cuda (each needs its
    /// cargo feature); by default flex where it is compiled in (the default build), else
    /// ndarray.
    #[arg(long, default_value_t = BackendChoice::default_cpu())]
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
    /// The shuffle's and the augmentation's seed.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// The data folder: the dataset's own folder, or the folder holding it under its name
    /// (default: $RECLAIM_DATA, else the workspace's data/).
    #[arg(long, conflicts_with = "pack")]
    pub data: Option<PathBuf>,
    /// A pack (`reclaim pack`) instead of a catalogue dataset: its training split, pixels
    /// standardized with its own statistics; --augment is a random crop with padding an eighth
    /// of the shorter side and a random flip.
    #[arg(long, conflicts_with = "dataset")]
    pub pack: Option<PathBuf>,
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
    /// The process's `VmHWM` at the end (the mapped dataset's pages included), where known.
    process_peak_resident_bytes: Option<u64>,
    /// The process's `VmRSS` once the loader and the dataset are dropped, where known.
    resident_bytes_after_release: Option<u64>,
}

impl Measurements {
    fn total(&self) -> Duration {
        self.epoch_durations.iter().sum()
    }

    fn samples_per_second(&self) -> f64 {
        self.samples as f64 / self.total().as_secs_f64().max(f64::MIN_POSITIVE)
    }
}

/// What the report says about the run besides the figures.
struct RunDescription<'a> {
    arguments: &'a BenchLoaderArguments,
    /// The catalogue dataset's name, or `pack`.
    dataset_name: String,
    dataset_samples: usize,
    shape: ImageShape,
    config: &'a LoaderConfig,
}

/// Runs `reclaim bench loader`.
/// Ctrl-C or SIGTERM stops it after the current batch (exit status 130; it keeps no state).
pub fn run(arguments: BenchLoaderArguments) -> anyhow::Result<()> {
    anyhow::ensure!(arguments.epochs > 0, "--epochs must be at least 1");
    super::interrupt::install()?;
    let (split, config) = match &arguments.pack {
        Some(pack) => open_pack(pack, &arguments)?,
        None => {
            let folder = resolve_dataset_folder(arguments.data.as_deref(), arguments.dataset)?;
            (
                open_train_split(arguments.dataset, &folder)?,
                loader_config(&arguments),
            )
        }
    };
    let (dataset_samples, shape) = (split.len(), split.image_shape());
    let (device, device_ready) = ready_device(&arguments)?;
    let mut measurements = measure(
        &*split,
        config.clone(),
        &device,
        arguments.epochs,
        device_ready,
    )?;
    drop(split);
    measurements.resident_bytes_after_release =
        reclaim_memory::resident_bytes().map(|(current, _)| current);
    let description = RunDescription {
        arguments: &arguments,
        dataset_name: match arguments.pack {
            Some(_) => "pack".to_owned(),
            None => arguments.dataset.name().to_owned(),
        },
        dataset_samples,
        shape,
        config: &config,
    };
    if arguments.json {
        println!("{}", json(&description, &measurements));
    } else {
        print_text(&description, &measurements);
    }
    Ok(())
}

/// Memory-maps the train split of `dataset` in `folder`, in its format.
fn open_train_split(dataset: DatasetName, folder: &Path) -> anyhow::Result<Box<dyn ImageSource>> {
    let context = || format!("opening the {dataset} train split in {}", folder.display());
    let split: Box<dyn ImageSource> = match dataset.cifar_variant() {
        // SAFETY: the record files are only read; nothing in this process writes them (a file
        // truncated by another process is caught by the loader's per-batch check).
        Some(variant) => Box::new(
            unsafe { CifarDataset::open_mapped(folder, variant, Split::Train) }
                .with_context(context)?,
        ),
        // SAFETY: the dataset files are only read; nothing in this process writes them, and the
        // decompressed cache is only ever replaced by rename, never modified in place.
        None => Box::new(
            unsafe { ImageDataset::open_mapped(folder, Split::Train) }.with_context(context)?,
        ),
    };
    Ok(split)
}

/// Memory-maps the pack at `path` and gives its training split with the loader's settings
/// for it: pixels standardized with the pack's statistics, the photo augmentation on request.
fn open_pack(
    path: &Path,
    arguments: &BenchLoaderArguments,
) -> anyhow::Result<(Box<dyn ImageSource>, LoaderConfig)> {
    // SAFETY: the pack is only read; packs are only ever replaced by rename, never written in
    // place (a file truncated by another process is caught by the loader's per-batch check).
    let pack = unsafe { PackSplits::open_mapped(path) }
        .with_context(|| format!("opening the pack {}", path.display()))?;
    let statistics = PackStatistics::from_manifest(&pack.manifest().statistics)
        .with_context(|| format!("{}: the pack's statistics are not usable", path.display()))?;
    let train = pack.train;
    let shape = ImageSource::image_shape(&train);
    let config = LoaderConfig {
        batch_size: arguments.batch_size,
        num_workers: arguments.workers,
        prefetch: arguments.prefetch,
        pixel_format: PixelScaling::PackStandardized(statistics).pixel_format(),
        augmentation: if arguments.augment {
            photo_augmentation(shape)
        } else {
            Augmentation::NONE
        },
        ..LoaderConfig::cifar_training(arguments.seed)
    };
    Ok((Box::new(train), config))
}

/// The device, initialized (with its lazily created runtime) before the loader is timed, and
/// how long that took.
fn ready_device(arguments: &BenchLoaderArguments) -> anyhow::Result<(Device, Duration)> {
    let started = Instant::now();
    let device = arguments.backend.device()?;
    let _ = Tensor::<1>::zeros([1], &device).into_data();
    Ok((device, started.elapsed()))
}

/// The dataset's training recipe with the command's batch size, workers and prefetch.
fn loader_config(arguments: &BenchLoaderArguments) -> LoaderConfig {
    let recipe = match arguments.dataset.cifar_variant() {
        Some(_) => LoaderConfig::cifar_training(arguments.seed),
        None => LoaderConfig::mnist_training(arguments.seed),
    };
    LoaderConfig {
        batch_size: arguments.batch_size,
        num_workers: arguments.workers,
        prefetch: arguments.prefetch,
        augmentation: augmentation_for(arguments.dataset, arguments.augment),
        ..recipe
    }
}

/// What `--augment` means for `dataset` (see its help text).
fn augmentation_for(dataset: DatasetName, augment: bool) -> Augmentation {
    match (augment, dataset.cifar_variant()) {
        (false, _) => Augmentation::NONE,
        (true, Some(_)) => Augmentation::CIFAR,
        (true, None) => Augmentation {
            crop: Some(RandomCrop { padding: 2 }),
            horizontal_flip: HorizontalFlip::Never,
        },
    }
}

fn measure(
    source: &dyn ImageSource,
    config: LoaderConfig,
    device: &Device,
    epochs: u64,
    device_ready: Duration,
) -> anyhow::Result<Measurements> {
    let started = Instant::now();
    let loader = Loader::new(source, config).context("configuring the loader")?;
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
                let TensorBatch { images, labels } = batch?.into_tensors::<4>(device)?;
                samples += images.dims()[0];
                first_batch.get_or_insert_with(|| started.elapsed());
                drop((images, labels));
                stop_if_interrupted(epoch_number)?;
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
        process_peak_resident_bytes: reclaim_memory::resident_bytes().map(|(_, peak)| peak),
        resident_bytes_after_release: None,
    })
}

fn stop_if_interrupted(epoch_number: u64) -> anyhow::Result<()> {
    if super::interrupt::INTERRUPTED.load(std::sync::atomic::Ordering::SeqCst) {
        return Err(super::interrupt::Interrupted {
            message: format!(
                "the loader bench stopped in epoch {epoch_number}; nothing was reported"
            ),
        }
        .into());
    }
    Ok(())
}

/// `none`, or the crop and the flip in words.
fn augmentation_text(augmentation: Augmentation) -> String {
    let mut parts = Vec::new();
    if let Some(RandomCrop { padding }) = augmentation.crop {
        parts.push(format!("random crop (padding {padding})"));
    }
    if augmentation.horizontal_flip == HorizontalFlip::Random {
        parts.push("random horizontal flip".to_owned());
    }
    if parts.is_empty() {
        "none".to_owned()
    } else {
        parts.join(" + ")
    }
}

fn mebibytes(bytes: f64) -> f64 {
    bytes / (1024.0 * 1024.0)
}

fn print_text(description: &RunDescription<'_>, measured: &Measurements) {
    let arguments = description.arguments;
    println!(
        "reclaim bench loader: {} train ({} images of {}, memory-mapped), augmentation {}, \
         pixels {}, backend {}, batch {}, {} workers, prefetch {}, seed {}",
        description.dataset_name,
        description.dataset_samples,
        description.shape,
        augmentation_text(description.config.augmentation),
        description.config.pixel_format.name(),
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
            description.dataset_samples as f64 / duration.as_secs_f64().max(f64::MIN_POSITIVE)
        );
    }
    print_text_summary(measured);
}

fn print_text_summary(measured: &Measurements) {
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
        mebibytes(measured.peak_loader_bytes as f64),
        measured.loader_bytes_after
    );
    if let Some(peak) = measured.process_peak_resident_bytes {
        println!(
            "process peak RSS (VmHWM, the mapped dataset's pages included): {:.1} MiB",
            mebibytes(peak as f64)
        );
    }
}

fn json(description: &RunDescription<'_>, measured: &Measurements) -> String {
    let arguments = description.arguments;
    let augmentation = description.config.augmentation;
    let shape = description.shape;
    let epoch_ms: Vec<f64> = measured
        .epoch_durations
        .iter()
        .map(|duration| duration.as_secs_f64() * 1e3)
        .collect();
    serde_json::json!({
        "dataset": description.dataset_name,
        "image_shape": [shape.channels, shape.height, shape.width],
        "augmentation": {
            "crop_padding": augmentation.crop.map(|RandomCrop { padding }| padding),
            "horizontal_flip": augmentation.horizontal_flip == HorizontalFlip::Random,
            "description": augmentation_text(augmentation),
        },
        "pixel_format": description.config.pixel_format.name(),
        "backend": arguments.backend.name(),
        "dataset_samples": description.dataset_samples,
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
        "process_peak_rss_bytes": measured.process_peak_resident_bytes,
        "rss_after_release_bytes": measured.resident_bytes_after_release,
    })
    .to_string()
}
