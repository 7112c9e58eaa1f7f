//! `reclaim report RUN_DIR`: redraws a run's figures from its metrics files and summarizes it.

use std::path::PathBuf;

use reclaim_report::{ReportError, RunRecords, draw_run_records, epoch_table};
use reclaim_train::{ReleaseReport, RunFile};

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
    let records = RunRecords::read(folder)?;
    // A run stopped before its first step (Ctrl-C during the warm-up) has nothing to draw yet:
    // said, not an error; the folder is still read and summarized.
    let figures = match draw_run_records(&records, folder) {
        Ok(figures) => Some(figures),
        Err(error @ ReportError::NothingToDraw { .. }) => {
            println!("no figure drawn: {error}");
            None
        }
        Err(error) => return Err(error.into()),
    };
    print!("{}", epoch_table(&records.epochs));
    if let Some(release) = ReleaseReport::read_from(folder)? {
        println!(
            "\nrelease ({}):",
            RunFile::ReleaseTable.path_in(folder).display()
        );
        print!("{}", release.to_markdown());
    }
    if let Some(figures) = figures {
        println!(
            "\nfigures redrawn from the metrics files:\n  {}\n  {}\n  {}\n  {}",
            figures.curves.svg.display(),
            figures.curves.png.display(),
            figures.memory.svg.display(),
            figures.memory.png.display()
        );
    }
    Ok(())
}
