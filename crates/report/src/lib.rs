//! `reclaim-report`: what a run looks like to people, made from its folder's files.
//!
//! - [`draw_run_plots`]: a run folder's figures, `curves.svg`/`.png` (loss per step, test
//!   accuracy per epoch) and `memory.svg`/`.png` (the memory timeline and the release, step by
//!   step); [`draw_training_curves`], [`draw_memory_timeline`] and [`draw_bar_charts`] draw
//!   each from records in memory. Text is set in the vendored DejaVu Sans (no system font).
//! - [`RunRecords`]: a run folder's `steps.jsonl`, `metrics.jsonl` and `memory.jsonl`, read.
//! - [`epoch_table`]: the epochs as the text `reclaim train` and `reclaim report` print
//!   (a finished run's whole summary is reclaim-train's `TrainRun::summary`).
//! - [`ReportError`]: the one error type of the crate.
//!
//! Each figure's data is prepared apart from its drawing (`prepare/`, then `draw/`), so the
//! numbers a figure shows are tested without pixels. The training library `reclaim-train`
//! knows nothing of this crate: it writes the files, this crate reads them, both through
//! `reclaim-records`, so that drawing a run's figures compiles no part of Burn.
//!
//! ```
//! use reclaim_report::{Bar, BarChart, PlotPaths, draw_bar_charts};
//!
//! let chart = BarChart {
//!     title: "Training throughput".into(),
//!     value_label: "samples per second".into(),
//!     bars: vec![
//!         Bar { label: "ndarray".into(), value: 9123.0 },
//!         Bar { label: "flex".into(), value: f64::NAN }, // drawn as n/a
//!     ],
//! };
//! let folder = tempfile::tempdir()?;
//! let paths = PlotPaths::in_folder(folder.path(), "throughput");
//! draw_bar_charts(&[chart], &paths)?;
//! let svg = std::fs::read_to_string(&paths.svg)?;
//! assert!(svg.contains("9123") && svg.contains("n/a"));
//! assert!(std::fs::read(&paths.png)?.starts_with(b"\x89PNG"));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod draw;
mod error;
mod figures;
mod prepare;
mod text;

pub use draw::PlotPaths;
pub use error::ReportError;
pub use figures::{
    PlotFiles, draw_bar_charts, draw_memory_timeline, draw_run_plots, draw_run_records,
    draw_training_curves,
};
pub use prepare::{Bar, BarChart, RunRecords};
pub use text::epoch_table;

/// The README's examples, run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
