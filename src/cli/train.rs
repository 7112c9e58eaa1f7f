//! `reclaim train` and `reclaim eval`.

use std::ffi::OsString;
use std::num::NonZeroUsize;
use std::path::{Path, PathBuf};
use std::time::Instant;

use anyhow::Context;
use reclaim_dataset::{DatasetName, PackSplits};
use reclaim_loader::{ImageShape, ImageSource};
use reclaim_model::{ClassifierConfig, ModelKind};
use reclaim_train::{
    BackendChoice, CancellationFlag, CheckpointFile, DatasetStorage, PackStatistics, PixelScaling,
    ProgressDisplay, RunFile, RunFolderLock, StartPolicy, StepKernel, TrainConfig, TrainError,
    TrainingData, TrainingDataset, evaluate_weights, latest_checkpoint, model_for_dataset,
    model_for_images, photo_augmentation, standard_augmentation,
};

use super::interrupt::{self, Interrupted};

/// The exit status of a run whose loss stopped being finite (`reclaim train`): not a crash, an
/// outcome, told apart from other failures (1), from bad arguments (2) and from Ctrl-C (130).
pub const DIVERGED_EXIT_STATUS: u8 = 3;

/// How the dataset is held (`--storage`).
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum StorageArgument {
    /// Memory-map the files: no copy, nothing read before it is used. The files must not be
    /// changed during the run (a truncated file stops the run with an error, where the SIGBUS
    /// guard could be installed).
    #[default]
    Mapped,
    /// Read the files into memory first (55 MB for MNIST): safe whatever happens to them.
    Owned,
}

impl StorageArgument {
    pub(crate) fn storage(self) -> DatasetStorage {
        match self {
            StorageArgument::Owned => DatasetStorage::owned(),
            // SAFETY: `--storage mapped` is the user's choice, documented (its --help and
            // docs/reliability.md) as requiring that the dataset files are not changed during
            // the command. Should it be broken anyway, a truncation is caught by
            // reclaim-dataset's SIGBUS guard where `main` could install it (it warns where it
            // could not) and an out-of-range label by the loader, so the run stops with an
            // error rather than a signal; the guard is a mitigation, not a guarantee.
            StorageArgument::Mapped => unsafe { DatasetStorage::mapped() },
        }
    }
}

/// The training step (`--step`): reclaim-train's `StepKernel`, whose `obstacle` holds the rule
/// for where the fused step applies.
#[derive(Clone, Copy, Debug, Default, PartialEq, Eq, clap::ValueEnum)]
pub enum StepArgument {
    /// The MLP's whole step fused on the host, from the non-zero pixels, where it applies;
    /// dense elsewhere, and the summary says why.
    #[default]
    Fused,
    /// Burn's autodiff step and optimizer, for every model and backend.
    Dense,
}

impl StepArgument {
    pub(crate) fn kernel(self) -> StepKernel {
        match self {
            StepArgument::Fused => StepKernel::Fused,
            StepArgument::Dense => StepKernel::Dense,
        }
    }
}

/// Arguments of `reclaim train`.
#[derive(Debug, clap::Args)]
pub struct TrainArguments {
    /// The backend: ndarray, flex, wgpu or cuda (each needs its cargo feature); by default
    /// flex where it is compiled in (the default build), else ndarray.
    #[arg(long, default_value_t = BackendChoice::default_cpu())]
    pub backend: BackendChoice,
    /// The dataset: mnist, fashion-mnist, kmnist (IDX files), cifar10 or cifar100 (CIFAR's
    /// binary record files); its folder is --data, else $RECLAIM_DATA, else data/, or their
    /// subfolder of the dataset's name (data/cifar-10).
    #[arg(long, default_value = "mnist", conflicts_with = "image_size")]
    pub dataset: DatasetName,
    /// Photos: with --image-size, --data is a folder of photos (see `reclaim pack --help`),
    /// packed on first use into the pack cache and reused while it matches the folder.
    #[command(flatten)]
    pub photos: super::pack::PhotoArguments,
    /// The model: mlp (input-128-ReLU-classes) or cnn (two conv-ReLU-pool blocks and a linear
    /// head), sized for the dataset's images and classes.
    #[arg(long, default_value = "mlp")]
    pub model: ModelKind,
    /// Augment the training samples: a random crop with padding 4 and a random horizontal flip
    /// for CIFAR, a random crop with padding 2 (no flip) for the MNIST family, a random crop
    /// with padding an eighth of the shorter side and a random flip for photos; each draw a
    /// function of the seed, the epoch and the sample.
    #[arg(long)]
    pub augment: bool,
    /// Passes over the training split.
    #[arg(long, default_value_t = 2)]
    pub epochs: usize,
    /// Samples per batch.
    #[arg(long, default_value_t = 64)]
    pub batch_size: usize,
    /// SGD's learning rate.
    #[arg(long, default_value_t = 0.01)]
    pub lr: f64,
    /// SGD momentum (none by default).
    #[arg(long)]
    pub momentum: Option<f64>,
    /// L2 weight decay (none by default).
    #[arg(long)]
    pub weight_decay: Option<f32>,
    /// Seeds the weights and the shuffle.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// Loader worker threads (0: batches are made on the training thread).
    #[arg(long, default_value_t = 0)]
    pub workers: usize,
    /// Standardize pixels with the dataset's mean and standard deviation (MNIST's, CIFAR-10's
    /// per channel, or a pack's own per-channel statistics of its training split) instead of
    /// scaling to [0, 1].
    #[arg(long)]
    pub standardize: bool,
    /// The dataset folder (default: $RECLAIM_DATA, then the vendored data/); a pack file
    /// (`reclaim pack`); or, with --image-size, a folder of photos.
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// The run folder (default: runs/train-BACKEND).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Continue from the newest checkpoint in the run folder (same settings and dataset).
    #[arg(long, conflicts_with = "overwrite")]
    pub resume: bool,
    /// Replace a run already in the run folder (kept aside until this run's first checkpoint).
    #[arg(long)]
    pub overwrite: bool,
    /// Also checkpoint every N steps within epochs (a crash then loses at most N steps).
    #[arg(long, value_name = "N")]
    pub checkpoint_every: Option<NonZeroUsize>,
    /// How the dataset is held: mapped (no copy; the files must not change during the run)
    /// or owned (read into memory first).
    #[arg(long, value_enum, default_value_t)]
    pub storage: StorageArgument,
    /// Train on the first N training samples only.
    #[arg(long)]
    pub limit: Option<usize>,
    /// The training step: fused or dense (the help text is `step_help`'s).
    #[arg(long, value_enum, default_value_t, help = step_help())]
    pub step: StepArgument,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

/// `--step`'s help: the rule of reclaim-train's `StepKernel::obstacle` in words, with its batch
/// limit read from the constant the trainer applies.
fn step_help() -> String {
    format!(
        "The training step: fused (the MLP's whole step on the host from the non-zero pixels, \
         where it applies: the MLP on flex or ndarray, MNIST-family pixels in [0, 1], plain \
         SGD, on flex batches of at most {}) or dense (Burn's autodiff step). The same step \
         either way, the same sums in another order; where fused does not apply, dense, and \
         the summary says why",
        reclaim_train::LARGEST_FUSED_STEP_BATCH_ON_FLEX
    )
}

/// Arguments of `reclaim eval`.
#[derive(Debug, clap::Args)]
pub struct EvalArguments {
    /// A checkpoint folder, a run folder (its newest checkpoint) or a `.bpk` weights file.
    #[arg(long)]
    pub checkpoint: PathBuf,
    /// The backend to evaluate on (by default as for `reclaim train`).
    #[arg(long, default_value_t = BackendChoice::default_cpu())]
    pub backend: BackendChoice,
    /// The dataset the weights were trained on (see `reclaim train --help`).
    #[arg(long, default_value = "mnist")]
    pub dataset: DatasetName,
    /// The model the weights are of: mlp or cnn.
    #[arg(long, default_value = "mlp")]
    pub model: ModelKind,
    /// The dataset folder (default: $RECLAIM_DATA, then the vendored data/), or a pack file.
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Standardize pixels (use it when the model was trained with --standardize).
    #[arg(long)]
    pub standardize: bool,
    /// How the dataset is held: mapped or owned (see `reclaim train --help`).
    #[arg(long, value_enum, default_value_t)]
    pub storage: StorageArgument,
}

/// The dataset folder: the one given (or $RECLAIM_DATA, or the vendored data/), or its
/// subfolder of the dataset's name (`mnist/`, `cifar-10/`), whichever holds the files; an error
/// naming what was given otherwise.
fn data_folder(argument: Option<&Path>, dataset: DatasetName) -> anyhow::Result<PathBuf> {
    Ok(reclaim_dataset::resolve_dataset_folder(argument, dataset)?)
}

/// What a run's data is, as the arguments say.
enum DataChoice {
    /// A dataset of the catalogue in its folder.
    Catalogue {
        dataset: DatasetName,
        folder: PathBuf,
    },
    /// A pack file, given or just made from a folder of photos.
    Pack(PackSummary),
}

/// What a run needs to know of a pack before it opens it for training.
struct PackSummary {
    path: PathBuf,
    shape: ImageShape,
    classes: usize,
    statistics: Option<PackStatistics>,
}

impl PackSummary {
    /// Opens the pack at `path` (checking all of it) for its shape, classes and statistics.
    fn read(path: &Path) -> anyhow::Result<Self> {
        // SAFETY: the pack is only read, for its header and manifest, and dropped before this
        // function returns; packs are only ever replaced by rename, never written in place.
        let pack = unsafe { PackSplits::open_mapped(path) }?;
        let shape = ImageSource::image_shape(&pack.train);
        Ok(PackSummary {
            path: path.to_path_buf(),
            shape,
            classes: pack.train.number_of_classes(),
            statistics: PackStatistics::from_manifest(&pack.manifest().statistics),
        })
    }
}

/// The data the arguments name: with --image-size, the folder of photos packed (into the
/// cache); a pack file given as --data; else the catalogue dataset in its folder.
fn data_choice(
    dataset: DatasetName,
    data: Option<&Path>,
    photos: &super::pack::PhotoArguments,
    seed: u64,
    progress: ProgressDisplay,
) -> anyhow::Result<DataChoice> {
    if let Some(image_size) = photos.image_size {
        let folder = data.context("--image-size needs --data FOLDER, the folder of photos")?;
        let options = photos.options(image_size, seed, progress)?;
        let pack = super::pack::pack_for_training(folder, &options)?;
        return Ok(DataChoice::Pack(PackSummary::read(&pack)?));
    }
    match data {
        Some(path) if reclaim_dataset::pack::is_pack_file(path) => {
            Ok(DataChoice::Pack(PackSummary::read(path)?))
        }
        _ => Ok(DataChoice::Catalogue {
            dataset,
            folder: data_folder(data, dataset)?,
        }),
    }
}

impl DataChoice {
    fn dataset(&self) -> TrainingDataset {
        match self {
            DataChoice::Catalogue { dataset, .. } => TrainingDataset::Catalogue(*dataset),
            DataChoice::Pack(_) => TrainingDataset::Pack,
        }
    }

    fn folder(&self) -> PathBuf {
        match self {
            DataChoice::Catalogue { folder, .. } => folder.clone(),
            DataChoice::Pack(pack) => pack.path.clone(),
        }
    }

    fn model(&self, kind: ModelKind) -> ClassifierConfig {
        match self {
            DataChoice::Catalogue { dataset, .. } => model_for_dataset(*dataset, kind),
            DataChoice::Pack(pack) => model_for_images(pack.shape, pack.classes, kind),
        }
    }

    fn augmentation(&self) -> reclaim_loader::Augmentation {
        match self {
            DataChoice::Catalogue { dataset, .. } => standard_augmentation(*dataset),
            DataChoice::Pack(pack) => photo_augmentation(pack.shape),
        }
    }

    fn pixel_scaling(&self, standardize: bool) -> anyhow::Result<PixelScaling> {
        match (self, standardize) {
            (_, false) => Ok(PixelScaling::UnitRange),
            (DataChoice::Catalogue { dataset, .. }, true) => {
                Ok(PixelScaling::standardized_for(*dataset))
            }
            (DataChoice::Pack(pack), true) => pack
                .statistics
                .map(PixelScaling::PackStandardized)
                .with_context(|| {
                    format!(
                        "{}: --standardize: the pack's statistics are not usable",
                        pack.path.display()
                    )
                }),
        }
    }

    /// `runs/train-BACKEND` for the PyTorch recipe (MNIST, MLP),
    /// `runs/train-DATASET-MODEL-BACKEND` otherwise (DATASET a pack's file name without
    /// `.rpack`).
    fn default_run_folder(&self, model: ModelKind, backend: BackendChoice) -> PathBuf {
        let name = match self {
            DataChoice::Catalogue {
                dataset: DatasetName::Mnist,
                ..
            } if model == ModelKind::Mlp => format!("train-{backend}"),
            DataChoice::Catalogue { dataset, .. } => format!("train-{dataset}-{model}-{backend}"),
            DataChoice::Pack(pack) => {
                let stem = pack
                    .path
                    .file_stem()
                    .map_or_else(|| "pack".into(), |stem| stem.to_string_lossy().into_owned());
                format!("train-{stem}-{model}-{backend}")
            }
        };
        PathBuf::from("runs").join(name)
    }
}

/// Builds the run's configuration from the arguments (packing a folder of photos first where
/// --image-size asks for it).
pub fn config_from_arguments(arguments: &TrainArguments) -> anyhow::Result<TrainConfig> {
    let progress = if arguments.quiet {
        ProgressDisplay::Hidden
    } else {
        ProgressDisplay::Bar
    };
    let data = data_choice(
        arguments.dataset,
        arguments.data.as_deref(),
        &arguments.photos,
        arguments.seed,
        progress,
    )?;
    let run_folder = arguments
        .out
        .clone()
        .unwrap_or_else(|| data.default_run_folder(arguments.model, arguments.backend));
    let start = match (arguments.resume, arguments.overwrite) {
        (true, _) => StartPolicy::ResumeLatestCheckpoint,
        (false, true) => StartPolicy::Overwrite,
        (false, false) => StartPolicy::Fresh,
    };
    Ok(TrainConfig {
        dataset: data.dataset(),
        model: data.model(arguments.model),
        augmentation: if arguments.augment {
            data.augmentation()
        } else {
            reclaim_loader::Augmentation::NONE
        },
        epochs: arguments.epochs,
        batch_size: arguments.batch_size,
        learning_rate: arguments.lr,
        momentum: arguments.momentum,
        weight_decay: arguments.weight_decay,
        seed: arguments.seed,
        workers: arguments.workers,
        pixel_scaling: data.pixel_scaling(arguments.standardize)?,
        step_kernel: arguments.step.kernel(),
        training_sample_limit: arguments.limit,
        start,
        progress,
        storage: arguments.storage.storage(),
        checkpoint_every: arguments.checkpoint_every,
        cancellation: CancellationFlag::from_shared(interrupt::INTERRUPTED.clone()),
        ..TrainConfig::recipe(arguments.backend, data.folder(), run_folder)
    })
}

/// Runs `reclaim train`. Ctrl-C or SIGTERM stops the run after its current step with a
/// checkpoint (exit status 130, the command to resume printed).
pub fn run(arguments: TrainArguments) -> anyhow::Result<()> {
    interrupt::install()?;
    let config = config_from_arguments(&arguments)?;
    let mut run = match reclaim_train::train(&config) {
        Ok(run) => run,
        Err(TrainError::Interrupted { checkpoint, .. }) => {
            return Err(Interrupted {
                message: format!(
                    "checkpoint written to {}; resume with:\n  {}",
                    checkpoint.display(),
                    resume_command(std::env::args_os())
                ),
            }
            .into());
        }
        Err(error) => return Err(error.into()),
    };
    // The figures, drawn from the files the run just wrote; the summary still ends the output
    // (its last line is the test accuracy) and a drawing failure is reported after it. Their
    // time is a phase of the job: added to `phases.json`. `train` released the run folder's
    // lock when it returned; it is taken again for these writes, so that a run started on the
    // same folder meanwhile is refused (`RunFolderLocked`) rather than written into.
    let lock = RunFolderLock::acquire(&run.run_folder)
        .context("the run is trained and saved; taking its folder back to draw the figures")?;
    let drawing_started = Instant::now();
    let figures = reclaim_report::draw_run_plots(&run.run_folder);
    run.phases
        .add_figures(drawing_started.elapsed().as_secs_f64());
    run.phases
        .write_to(&run.run_folder)
        .context("recording the figures' time in phases.json")?;
    drop(lock);
    if let Ok(figures) = &figures {
        println!(
            "figures: {} and {} (also as .png; redraw with `reclaim report {}`)",
            figures.curves.svg.display(),
            figures.memory.svg.display(),
            run.run_folder.display()
        );
    }
    print!("{}", run.summary());
    figures.context("drawing the run's figures")?;
    Ok(())
}

/// The command line that resumes the run `arguments` started: the same arguments, without
/// `--overwrite`, with `--resume`, quoted for a POSIX shell.
fn resume_command(arguments: impl IntoIterator<Item = OsString>) -> String {
    let mut words: Vec<String> = arguments
        .into_iter()
        .map(|argument| argument.to_string_lossy().into_owned())
        .filter(|argument| argument != "--overwrite")
        .collect();
    if !words.iter().any(|word| word == "--resume") {
        words.push("--resume".to_string());
    }
    shell_words::join(words)
}

/// Runs `reclaim eval`.
pub fn run_eval(arguments: EvalArguments) -> anyhow::Result<()> {
    let weights_path = resolve_weights(&arguments.checkpoint)?;
    let weights = std::fs::read(&weights_path)
        .with_context(|| format!("reading {}", weights_path.display()))?;
    let choice = data_choice(
        arguments.dataset,
        arguments.data.as_deref(),
        &super::pack::PhotoArguments::none(),
        0,
        ProgressDisplay::Hidden,
    )?;
    let data = TrainingData::open(
        choice.dataset(),
        &choice.folder(),
        arguments.storage.storage(),
    )?;
    let evaluation = evaluate_weights(
        &weights,
        &choice.model(arguments.model),
        &data,
        arguments.backend,
        choice.pixel_scaling(arguments.standardize)?,
    )
    .with_context(|| format!("evaluating {}", weights_path.display()))?;
    println!(
        "{}: {} test samples, loss {:.4}",
        weights_path.display(),
        evaluation.samples,
        evaluation.loss
    );
    println!("test accuracy {:.2}%", evaluation.accuracy * 100.0);
    Ok(())
}

/// The weights file `path` names: the file itself; a checkpoint folder's weights (a folder
/// holding a checkpoint's state file); a run folder's final weights; or else the weights of the
/// run folder's newest checkpoint.
fn resolve_weights(path: &Path) -> anyhow::Result<PathBuf> {
    if path.is_file() {
        return Ok(path.to_path_buf());
    }
    if CheckpointFile::State.path_in(path).is_file() {
        return Ok(CheckpointFile::Weights.path_in(path));
    }
    let final_weights = RunFile::FinalWeights.path_in(path);
    if final_weights.is_file() {
        return Ok(final_weights);
    }
    if let Some(checkpoint) = latest_checkpoint(path) {
        return Ok(CheckpointFile::Weights.path_in(&checkpoint));
    }
    anyhow::bail!(
        "{}: neither a weights file, a checkpoint folder nor a run folder with a checkpoint",
        path.display()
    )
}

#[cfg(test)]
mod tests {
    use super::*;
    use clap::Parser;
    use proptest::prelude::*;

    #[derive(Debug, clap::Parser)]
    struct TrainCommand {
        #[command(flatten)]
        arguments: TrainArguments,
    }

    /// Text a user might type for a number: integers of any size and sign, decimals, exponents,
    /// NaN and the infinities, and noise.
    fn number_text() -> impl Strategy<Value = String> {
        prop_oneof![
            any::<u64>().prop_map(|value| value.to_string()),
            any::<i64>().prop_map(|value| value.to_string()),
            any::<f64>().prop_map(|value| value.to_string()),
            "[-+]?[0-9]{0,40}(\\.[0-9]{0,10})?([eE][-+]?[0-9]{1,4})?",
            prop::sample::select(vec![
                "NaN", "inf", "-inf", "1e308", "1e-400", "", "0x10", " 1"
            ])
            .prop_map(str::to_string),
        ]
    }

    #[test]
    fn the_step_is_fused_by_default_and_dense_on_request() {
        let kernel = |arguments: &[&str]| {
            let command = TrainCommand::try_parse_from(["train"].iter().chain(arguments))?;
            Ok::<_, clap::Error>(
                config_from_arguments(&command.arguments)
                    .unwrap()
                    .step_kernel,
            )
        };
        assert_eq!(kernel(&[]).unwrap(), StepKernel::Fused);
        assert_eq!(kernel(&["--step", "fused"]).unwrap(), StepKernel::Fused);
        assert!(
            kernel(&["--step", "sparse"]).is_err(),
            "the sparse road is gone"
        );
        assert_eq!(kernel(&["--step", "dense"]).unwrap(), StepKernel::Dense);
        assert!(kernel(&["--step", "fast"]).is_err());
        assert!(kernel(&["--hidden-layer", "dense"]).is_err());
    }

    /// The help's batch limit is the one reclaim-train applies.
    #[test]
    fn the_step_help_names_the_batch_limit_the_trainer_applies() {
        use clap::CommandFactory;
        let limit = format!(
            "at most {}",
            reclaim_train::LARGEST_FUSED_STEP_BATCH_ON_FLEX
        );
        let command = TrainCommand::command();
        let step = command
            .get_arguments()
            .find(|argument| argument.get_id() == "step")
            .expect("a --step argument");
        let help = step.get_help().expect("a help text").to_string();
        assert!(help.contains(&limit), "{help}");
    }

    proptest! {
        #![proptest_config(ProptestConfig::with_cases(512))]

        /// Whatever numbers are given, parsing and checking end in an error or in settings in
        /// range, never in a panic.
        #[test]
        fn any_numbers_are_parsed_and_checked_without_a_panic(
            option in prop::sample::select(vec![
                "--epochs", "--batch-size", "--lr", "--momentum", "--weight-decay", "--seed",
                "--workers", "--limit", "--checkpoint-every",
            ]),
            value in number_text(),
        ) {
            let parsed = TrainCommand::try_parse_from(["train", option, value.as_str()]);
            let Ok(TrainCommand { arguments }) = parsed else {
                return Ok(());
            };
            let config = config_from_arguments(&arguments).unwrap();
            match config.validate() {
                Ok(()) => {
                    prop_assert!((1..=reclaim_train::MAX_EPOCHS).contains(&config.epochs));
                    prop_assert!(config.batch_size >= 1);
                    prop_assert!(config.learning_rate.is_finite() && config.learning_rate > 0.0);
                    prop_assert!(config.momentum.is_none_or(|momentum| (0.0..=1.0).contains(&momentum)));
                    prop_assert!(config.weight_decay.is_none_or(|decay| decay.is_finite() && decay >= 0.0));
                    prop_assert!(config.workers <= reclaim_loader::LoaderConfig::MAX_WORKERS);
                    prop_assert!(config.training_sample_limit != Some(0));
                }
                Err(error) => {
                    let is_invalid_config = matches!(error, TrainError::InvalidConfig { .. });
                    prop_assert!(is_invalid_config, "{}", error);
                }
            }
        }
    }

    #[test]
    fn the_resume_command_repeats_the_settings_without_overwrite() {
        let arguments = [
            "reclaim",
            "train",
            "--overwrite",
            "--lr",
            "0.5",
            "--out",
            "my runs/a",
        ];
        let command = resume_command(arguments.map(OsString::from));
        assert_eq!(command, "reclaim train --lr 0.5 --out 'my runs/a' --resume");
        let again = resume_command(["reclaim", "train", "--resume"].map(OsString::from));
        assert_eq!(again, "reclaim train --resume");
    }

    #[test]
    fn weights_resolve_from_a_file_a_checkpoint_folder_and_a_run_folder() {
        let folder =
            std::env::temp_dir().join(format!("reclaim-resolve-weights-{}", std::process::id()));
        let _ = std::fs::remove_dir_all(&folder);
        let run = folder.join("run");
        let checkpoint = reclaim_train::checkpoints_folder(&run).join("epoch-0001");
        std::fs::create_dir_all(&checkpoint).unwrap();
        std::fs::write(CheckpointFile::State.path_in(&checkpoint), "{}").unwrap();
        std::fs::write(CheckpointFile::Weights.path_in(&checkpoint), "weights").unwrap();
        let checkpoint_weights = CheckpointFile::Weights.path_in(&checkpoint);

        assert_eq!(resolve_weights(&checkpoint).unwrap(), checkpoint_weights);
        // An interrupted run (no final weights): its newest checkpoint's.
        assert_eq!(resolve_weights(&run).unwrap(), checkpoint_weights);
        let final_weights = RunFile::FinalWeights.path_in(&run);
        std::fs::write(&final_weights, "final").unwrap();
        assert_eq!(resolve_weights(&run).unwrap(), final_weights);
        assert_eq!(resolve_weights(&final_weights).unwrap(), final_weights);
        let error = resolve_weights(&folder.join("empty")).unwrap_err();
        assert!(error.to_string().contains("empty"), "{error}");
        std::fs::remove_dir_all(&folder).unwrap();
    }
}
