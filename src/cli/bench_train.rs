//! `reclaim bench train`: the same short training on each backend compiled into this build, one
//! after the other in one process; a table of samples per second, step time and memory, and a
//! bar chart.

use std::fmt::Write as _;
use std::path::PathBuf;

use indicatif::HumanBytes;
use reclaim_dataset::write_file_atomically;
use reclaim_report::{Bar, BarChart, PlotPaths, draw_bar_charts};
use reclaim_train::{BackendChoice, ProgressDisplay, ReleaseStage, TrainConfig, TrainRun};

/// Arguments of `reclaim bench train`.
#[derive(Debug, clap::Args)]
pub struct BenchTrainArguments {
    /// The backends, comma-separated (default: every backend compiled into this build).
    /// A backend whose cargo feature is off is reported as skipped.
    #[arg(long, value_delimiter = ',')]
    pub backends: Vec<BackendChoice>,
    /// Optimizer steps of the short training (on the first steps × batch-size training samples).
    #[arg(long, default_value_t = 200)]
    pub steps: usize,
    /// Samples per batch.
    #[arg(long, default_value_t = 64)]
    pub batch_size: usize,
    /// Loader worker threads (0: batches are made on the training thread).
    #[arg(long, default_value_t = 0)]
    pub workers: usize,
    /// Seeds the weights and the shuffle.
    #[arg(long, default_value_t = 42)]
    pub seed: u64,
    /// The dataset folder (default: $RECLAIM_DATA, then the vendored data/).
    #[arg(long)]
    pub data: Option<PathBuf>,
    /// Where the runs, the table (bench-train.md) and the chart (bench-train.svg/.png) go.
    #[arg(long, default_value = "runs/bench-train")]
    pub out: PathBuf,
    /// The training step, as `reclaim train --step`: fused (the MLP's whole step on the host,
    /// where it applies: flex and ndarray) or dense (Burn's autodiff step on every backend).
    #[arg(long, value_enum, default_value_t)]
    pub step: super::train::StepArgument,
}

/// What one backend's run measured.
#[derive(Debug)]
struct Measurement {
    samples_per_second: f64,
    milliseconds_per_step: f64,
    test_accuracy: f64,
    /// Live heap at the end of training minus before loading.
    heap_held_bytes: Option<i64>,
    /// Device memory in use at the end of training.
    device_bytes_in_use: Option<u64>,
    /// Live heap after the release minus before loading.
    heap_left_over_bytes: Option<i64>,
}

#[derive(Debug)]
enum Outcome {
    Measured(Measurement),
    Skipped(String),
    Failed(String),
}

impl Measurement {
    fn from_run(run: &TrainRun, steps: usize) -> Option<Self> {
        let epoch = run.epochs.last()?;
        let trained = run.release.memory_at(ReleaseStage::Trained);
        let baseline_heap = run
            .release
            .baseline()
            .and_then(|memory| memory.live_heap_bytes);
        Some(Measurement {
            samples_per_second: epoch.samples_per_second,
            milliseconds_per_step: epoch.train_seconds * 1e3 / steps.max(1) as f64,
            test_accuracy: epoch.test_accuracy,
            heap_held_bytes: trained
                .and_then(|memory| memory.live_heap_bytes)
                .zip(baseline_heap)
                .map(|(held, baseline)| held as i64 - baseline as i64),
            device_bytes_in_use: trained.and_then(|memory| memory.device_bytes_in_use),
            heap_left_over_bytes: run.release.heap_bytes_left_over(),
        })
    }
}

/// Runs `reclaim bench train`.
pub fn run(arguments: BenchTrainArguments) -> anyhow::Result<()> {
    anyhow::ensure!(arguments.steps > 0, "--steps must be at least 1");
    anyhow::ensure!(arguments.batch_size > 0, "--batch-size must be at least 1");
    let backends = if arguments.backends.is_empty() {
        BackendChoice::compiled()
    } else {
        arguments.backends.clone()
    };
    let data_folder = reclaim_dataset::default_data_folder(
        arguments.data.as_deref(),
        reclaim_dataset::Family::Mnist,
    );
    std::fs::create_dir_all(&arguments.out)
        .map_err(|error| anyhow::anyhow!("{}: {error}", arguments.out.display()))?;

    let header = format!(
        "reclaim bench train: {} steps of {} samples ({} MNIST training samples, shuffled), \
         SGD lr 0.01, {} loader workers, seed {}, step {}, every backend in one process",
        arguments.steps,
        arguments.batch_size,
        arguments.steps * arguments.batch_size,
        arguments.workers,
        arguments.seed,
        match arguments.step {
            super::train::StepArgument::Fused =>
                "fused where it applies (reclaim-train's StepKernel::obstacle), else dense",
            super::train::StepArgument::Dense => "dense",
        }
    );
    println!("{header}");
    let mut outcomes: Vec<(BackendChoice, Outcome)> = Vec::new();
    for backend in backends {
        let outcome = if !backend.is_compiled() {
            Outcome::Skipped(format!(
                "not compiled into this build (rebuild with `--features {}`)",
                backend.cargo_feature()
            ))
        } else {
            eprintln!("training on {backend}…");
            let config = TrainConfig {
                epochs: 1,
                batch_size: arguments.batch_size,
                seed: arguments.seed,
                workers: arguments.workers,
                training_sample_limit: Some(arguments.steps * arguments.batch_size),
                progress: ProgressDisplay::Hidden,
                step_kernel: arguments.step.kernel(),
                storage: super::train::StorageArgument::Mapped.storage(),
                ..TrainConfig::recipe(
                    backend,
                    data_folder.clone(),
                    arguments.out.join(backend.name()),
                )
            };
            match reclaim_train::train(&config) {
                Ok(run) => match Measurement::from_run(&run, arguments.steps) {
                    Some(measurement) => Outcome::Measured(measurement),
                    None => Outcome::Failed("the run recorded no epoch".into()),
                },
                // The whole chain: a TrainError's message does not repeat its source.
                Err(error) => Outcome::Failed(format!("{:#}", anyhow::Error::new(error))),
            }
        };
        outcomes.push((backend, outcome));
    }

    let table = markdown_table(&outcomes);
    print!("{table}");
    let table_path = arguments.out.join("bench-train.md");
    write_file_atomically(&table_path, format!("{header}\n\n{table}").as_bytes())?;
    let charts = bar_charts(&outcomes);
    if charts.iter().any(|chart| !chart.bars.is_empty()) {
        let paths = PlotPaths::in_folder(&arguments.out, "bench-train");
        draw_bar_charts(&charts, &paths)?;
        println!(
            "table: {}; chart: {} and {}",
            table_path.display(),
            paths.svg.display(),
            paths.png.display()
        );
    }
    let failed: Vec<String> = outcomes
        .iter()
        .filter_map(|(backend, outcome)| match outcome {
            Outcome::Failed(error) => Some(format!("{backend}: {error}")),
            _ => None,
        })
        .collect();
    anyhow::ensure!(
        failed.is_empty(),
        "training failed on {}",
        failed.join("; ")
    );
    anyhow::ensure!(
        outcomes
            .iter()
            .any(|(_, outcome)| matches!(outcome, Outcome::Measured(_))),
        "no backend was measured: none of those asked for is compiled into this build"
    );
    Ok(())
}

fn signed_bytes(bytes: Option<i64>) -> String {
    match bytes {
        Some(bytes) if bytes < 0 => format!("-{}", HumanBytes(bytes.unsigned_abs())),
        Some(bytes) => format!("+{}", HumanBytes(bytes as u64)),
        None => "n/a".into(),
    }
}

fn markdown_table(outcomes: &[(BackendChoice, Outcome)]) -> String {
    let mut table = String::from(
        "| backend | samples/s | ms/step | test accuracy | heap held while training | device in use | heap after release |\n\
         |---|---:|---:|---:|---:|---:|---:|\n",
    );
    for (backend, outcome) in outcomes {
        let _ = match outcome {
            Outcome::Measured(measured) => writeln!(
                table,
                "| {backend} | {:.0} | {:.2} | {:.2}% | {} | {} | {} |",
                measured.samples_per_second,
                measured.milliseconds_per_step,
                measured.test_accuracy * 100.0,
                signed_bytes(measured.heap_held_bytes),
                measured
                    .device_bytes_in_use
                    .map_or_else(|| "n/a".into(), |bytes| HumanBytes(bytes).to_string()),
                signed_bytes(measured.heap_left_over_bytes),
            ),
            Outcome::Skipped(reason) => writeln!(table, "| {backend} | skipped: {reason} ||||||"),
            Outcome::Failed(error) => writeln!(table, "| {backend} | failed: {error} ||||||"),
        };
    }
    table
}

/// Bytes in MiB for a chart; a missing value is NaN, drawn as "n/a".
fn mebibytes(bytes: Option<impl Into<i128>>) -> f64 {
    bytes.map_or(f64::NAN, |bytes| bytes.into() as f64 / (1024.0 * 1024.0))
}

fn bar_charts(outcomes: &[(BackendChoice, Outcome)]) -> Vec<BarChart> {
    let measured: Vec<(BackendChoice, &Measurement)> = outcomes
        .iter()
        .filter_map(|(backend, outcome)| match outcome {
            Outcome::Measured(measured) => Some((*backend, measured)),
            _ => None,
        })
        .collect();
    let bars = |value: fn(&Measurement) -> f64| -> Vec<Bar> {
        measured
            .iter()
            .map(|(backend, measurement)| Bar {
                label: backend.name().to_string(),
                value: value(measurement),
            })
            .collect()
    };
    let mut charts = vec![
        BarChart {
            title: "Training throughput".into(),
            value_label: "samples per second".into(),
            bars: bars(|measured| measured.samples_per_second),
        },
        BarChart {
            title: "Time per step".into(),
            value_label: "milliseconds".into(),
            bars: bars(|measured| measured.milliseconds_per_step),
        },
        BarChart {
            title: "Heap held while training".into(),
            value_label: "MiB (live heap, trained − before loading)".into(),
            bars: bars(|measured| mebibytes(measured.heap_held_bytes)),
        },
    ];
    if measured
        .iter()
        .any(|(_, measurement)| measurement.device_bytes_in_use.is_some())
    {
        charts.push(BarChart {
            title: "Device memory in use".into(),
            value_label: "MiB (device pool, end of training)".into(),
            bars: bars(|measured| mebibytes(measured.device_bytes_in_use)),
        });
    }
    charts
}

#[cfg(test)]
mod tests {
    use super::*;

    fn measured(samples_per_second: f64) -> Outcome {
        Outcome::Measured(Measurement {
            samples_per_second,
            milliseconds_per_step: 64_000.0 / samples_per_second,
            test_accuracy: 0.8765,
            heap_held_bytes: Some(3 << 20),
            device_bytes_in_use: None,
            heap_left_over_bytes: Some(-2048),
        })
    }

    #[test]
    fn the_table_has_a_row_per_backend_and_names_the_feature_of_skipped_ones() {
        let outcomes = vec![
            (BackendChoice::Ndarray, measured(12800.0)),
            (
                BackendChoice::Cuda,
                Outcome::Skipped("rebuild with `--features cuda`".into()),
            ),
        ];
        let table = markdown_table(&outcomes);
        assert_eq!(table.lines().count(), 4, "{table}");
        assert!(
            table.contains("| ndarray | 12800 | 5.00 | 87.65% | +3.00 MiB | n/a | -2.00 KiB |"),
            "{table}"
        );
        assert!(
            table.contains("| cuda | skipped: rebuild with `--features cuda`"),
            "{table}"
        );
    }

    #[test]
    fn charts_hold_the_measured_backends_only() {
        let outcomes = vec![
            (BackendChoice::Ndarray, measured(1000.0)),
            (BackendChoice::Flex, measured(2000.0)),
            (BackendChoice::Cuda, Outcome::Skipped("not compiled".into())),
        ];
        let charts = bar_charts(&outcomes);
        assert_eq!(
            charts.len(),
            3,
            "no device chart when no backend reports its pool"
        );
        let throughput: Vec<(&str, f64)> = charts[0]
            .bars
            .iter()
            .map(|bar| (bar.label.as_str(), bar.value))
            .collect();
        assert_eq!(throughput, [("ndarray", 1000.0), ("flex", 2000.0)]);
        assert_eq!(charts[2].bars[0].value, 3.0);
    }
}
