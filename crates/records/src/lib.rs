//! `reclaim-records`: the records a Reclaim run leaves in its folder, as types, read and
//! written as JSON, without Burn.
//!
//! - [`RunFile`]: the files of a run folder by name (`metrics.jsonl`, `release.json`, ...).
//! - [`EpochMetrics`] and [`StepMetrics`]: a line of `metrics.jsonl` and of `steps.jsonl`,
//!   written by [`JsonLinesWriter`] and read by [`read_json_lines`] (an unfinished last line,
//!   from a process killed while appending, is left out); non-finite numbers survive the trip.
//! - [`TimelineSample`]: a line of `memory.jsonl`, the memory timeline.
//! - [`ReleaseReport`]: memory at each [`ReleaseStage`] of giving a run's memory back
//!   (`release.json`, `release.md`); [`PhaseSeconds`]: where the run's time went
//!   (`phases.json`).
//! - [`write_file_atomically`], [`write_json_file`], [`read_json_file`]: whole files written
//!   through a temporary file and a rename, so a reader never sees half of one.
//! - [`epoch_table`]: the epochs as text.
//! - [`RecordsError`]: the one error type of the crate.
//!
//! `reclaim-train` writes these files and `reclaim-report` draws them; this crate is what both
//! share, so that drawing a run's figures compiles no part of Burn.
//!
//! ```
//! use reclaim_records::{JsonLinesWriter, RunFile, StepMetrics, read_json_lines};
//!
//! let run_folder = tempfile::tempdir()?;
//! let path = RunFile::StepMetrics.path_in(run_folder.path());
//! let mut writer = JsonLinesWriter::create(&path)?;
//! writer.write(&StepMetrics { step: 10, epoch: 1, loss: 0.5 })?;
//! writer.write(&StepMetrics { step: 20, epoch: 1, loss: f64::NAN })?;
//! drop(writer);
//!
//! let steps: Vec<StepMetrics> = read_json_lines(&path)?;
//! assert_eq!(steps.len(), 2);
//! assert!(steps[1].loss.is_nan(), "a diverged loss reads back as NaN");
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod error;
mod files;
mod metrics;
mod phases;
mod release;
mod text;
mod timeline;

pub use error::RecordsError;
pub use files::{RunFile, read_json_file, write_file_atomically, write_json_file};
pub use metrics::{
    EpochMetrics, JsonLinesWriter, StepMetrics, finite_or_text, parse_json_lines, read_json_lines,
};
pub use phases::PhaseSeconds;
pub use release::{ReleaseReport, ReleaseStage, ReleaseStep};
pub use text::epoch_table;
pub use timeline::TimelineSample;

/// The README's examples, run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
