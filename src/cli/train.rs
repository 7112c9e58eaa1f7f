//! `reclaim train` and `reclaim eval`.

use std::path::{Path, PathBuf};

use anyhow::Context;
use reclaim_train::{
    BackendChoice, CheckpointFile, PixelScaling, ProgressDisplay, RunFile, StartPolicy,
    TrainConfig, evaluate_weights, latest_checkpoint,
};

/// Arguments of `reclaim train`.
#[derive(Debug, clap::Args)]
pub struct TrainArguments {
    /// The backend: ndarray, flex, wgpu or cuda (each needs its cargo feature).
    #[arg(long, default_value = "ndarray")]
    pub backend: BackendChoice,
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
    /// Standardize pixels with MNIST's mean and standard deviation instead of scaling to [0, 1].
    #[arg(long)]
    pub standardize: bool,
    /// The dataset folder (default: the argument, then $RECLAIM_DATA, then the vendored data/).
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// The run folder (default: runs/train-BACKEND).
    #[arg(long)]
    pub out: Option<PathBuf>,
    /// Continue from the newest checkpoint in the run folder.
    #[arg(long)]
    pub resume: bool,
    /// Train on the first N training samples only.
    #[arg(long)]
    pub limit: Option<usize>,
    /// No progress bar.
    #[arg(long)]
    pub quiet: bool,
}

/// Arguments of `reclaim eval`.
#[derive(Debug, clap::Args)]
pub struct EvalArguments {
    /// A checkpoint folder, a run folder (its newest checkpoint) or a `.bpk` weights file.
    #[arg(long)]
    pub checkpoint: PathBuf,
    /// The backend to evaluate on.
    #[arg(long, default_value = "ndarray")]
    pub backend: BackendChoice,
    /// The dataset folder (default: $RECLAIM_DATA, then the vendored data/).
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Standardize pixels (use it when the model was trained with --standardize).
    #[arg(long)]
    pub standardize: bool,
}

fn data_folder(argument: Option<&Path>) -> PathBuf {
    reclaim_dataset::default_data_folder(argument, reclaim_dataset::Family::Mnist)
}

fn pixel_scaling(standardize: bool) -> PixelScaling {
    if standardize {
        PixelScaling::MnistStandardized
    } else {
        PixelScaling::UnitRange
    }
}

/// Builds the run's configuration from the arguments.
pub fn config_from_arguments(arguments: &TrainArguments) -> TrainConfig {
    let run_folder = arguments
        .out
        .clone()
        .unwrap_or_else(|| PathBuf::from("runs").join(format!("train-{}", arguments.backend)));
    TrainConfig {
        epochs: arguments.epochs,
        batch_size: arguments.batch_size,
        learning_rate: arguments.lr,
        momentum: arguments.momentum,
        weight_decay: arguments.weight_decay,
        seed: arguments.seed,
        workers: arguments.workers,
        pixel_scaling: pixel_scaling(arguments.standardize),
        training_sample_limit: arguments.limit,
        start: if arguments.resume {
            StartPolicy::ResumeLatestCheckpoint
        } else {
            StartPolicy::Fresh
        },
        progress: if arguments.quiet {
            ProgressDisplay::Hidden
        } else {
            ProgressDisplay::Bar
        },
        ..TrainConfig::recipe(
            arguments.backend,
            data_folder(arguments.data.as_deref()),
            run_folder,
        )
    }
}

/// Runs `reclaim train`.
pub fn run(arguments: TrainArguments) -> anyhow::Result<()> {
    let config = config_from_arguments(&arguments);
    let run = reclaim_train::train(&config)?;
    // The figures, drawn from the files the run just wrote; the summary still ends the output
    // (its last line is the test accuracy) and a drawing failure is reported after it.
    let figures = reclaim_report::draw_run_plots(&run.run_folder);
    if let Ok(figures) = &figures {
        println!(
            "figures: {} and {} (also as .png; redraw with `reclaim report {}`)",
            figures.curves.svg.display(),
            figures.memory.svg.display(),
            run.run_folder.display()
        );
    }
    print!("{}", reclaim_report::run_summary(&run));
    figures.context("drawing the run's figures")?;
    Ok(())
}

/// Runs `reclaim eval`.
pub fn run_eval(arguments: EvalArguments) -> anyhow::Result<()> {
    let weights_path = resolve_weights(&arguments.checkpoint)?;
    let weights = std::fs::read(&weights_path)
        .with_context(|| format!("reading {}", weights_path.display()))?;
    let evaluation = evaluate_weights(
        &weights,
        &reclaim_model::SimpleNnConfig::new(),
        &data_folder(arguments.data.as_deref()),
        arguments.backend,
        pixel_scaling(arguments.standardize),
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
