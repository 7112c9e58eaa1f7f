//! `reclaim report RUN_DIR`: redraws a run's figures from its metrics files and summarizes it.

use std::fmt::Write as _;
use std::path::{Path, PathBuf};

use anyhow::Context as _;
use reclaim_train::{EpochMetrics, ReleaseReport, read_json_lines, run_files};

/// Arguments of `reclaim report`.
#[derive(Debug, clap::Args)]
pub struct ReportArguments {
    /// A run folder written by `reclaim train` (it holds metrics.jsonl, steps.jsonl and
    /// memory.jsonl).
    pub run_folder: PathBuf,
}

/// Runs `reclaim report`: prints the epochs and the release table, and redraws
/// `curves.svg`/`.png` and `memory.svg`/`.png` in the run folder.
pub fn run(arguments: ReportArguments) -> anyhow::Result<()> {
    let folder = &arguments.run_folder;
    anyhow::ensure!(
        folder.is_dir(),
        "{}: not a run folder (no such folder)",
        folder.display()
    );
    let figures = reclaim_train::draw_run_plots(folder)?;
    let epochs: Vec<EpochMetrics> = read_json_lines(folder.join(run_files::EPOCH_METRICS))?;
    print!("{}", epoch_table(&epochs));
    if let Some(release) = read_release_report(folder)? {
        println!("\nrelease ({}):", folder.join("release.md").display());
        print!("{}", release.to_markdown());
    }
    println!(
        "\nfigures redrawn from the metrics files:\n  {}\n  {}\n  {}\n  {}",
        figures.curves.svg.display(),
        figures.curves.png.display(),
        figures.memory.svg.display(),
        figures.memory.png.display()
    );
    Ok(())
}

/// The epochs as a table, one line each.
fn epoch_table(epochs: &[EpochMetrics]) -> String {
    if epochs.is_empty() {
        return "no epoch completed\n".into();
    }
    let mut table =
        String::from("epoch  train loss  test loss  test accuracy  train s  samples/s\n");
    for epoch in epochs {
        let _ = writeln!(
            table,
            "{:>5}  {:>10.4}  {:>9.4}  {:>12.2}%  {:>7.2}  {:>9.0}",
            epoch.epoch,
            epoch.train_loss,
            epoch.test_loss,
            epoch.test_accuracy * 100.0,
            epoch.train_seconds,
            epoch.samples_per_second
        );
    }
    table
}

/// `release.json`, if the run got that far.
fn read_release_report(folder: &Path) -> anyhow::Result<Option<ReleaseReport>> {
    let path = folder.join("release.json");
    if !path.exists() {
        return Ok(None);
    }
    let bytes = std::fs::read(&path).with_context(|| format!("reading {}", path.display()))?;
    let report = serde_json::from_slice(&bytes)
        .with_context(|| format!("{}: not a release report", path.display()))?;
    Ok(Some(report))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_epoch_table_has_a_line_per_epoch() {
        let epoch = |number: usize, accuracy: f64| EpochMetrics {
            epoch: number,
            train_loss: 0.5,
            test_loss: 0.25,
            test_accuracy: accuracy,
            train_seconds: 2.0,
            evaluation_seconds: 0.5,
            samples_per_second: 30000.0,
            resident_bytes: None,
            device_bytes_in_use: None,
        };
        let table = epoch_table(&[epoch(1, 0.9012), epoch(2, 0.9345)]);
        assert_eq!(table.lines().count(), 3, "{table}");
        assert!(
            table.contains("90.12%") && table.contains("93.45%"),
            "{table}"
        );
        assert_eq!(epoch_table(&[]), "no epoch completed\n");
    }
}
