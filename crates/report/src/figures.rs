//! The figures' entry points: each prepares its data (`prepare/`) and draws it (`draw/`).

use std::path::Path;

use reclaim_records::{EpochMetrics, RunFile, StepMetrics, TimelineSample};

use crate::ReportError;
use crate::draw::{BarsFigure, CurvesFigure, MemoryFigure, PlotPaths, render_and_write};
use crate::prepare::{BarChart, MemoryTimelineData, ReleaseBars, RunRecords, TrainingCurves};

/// The figures [`draw_run_plots`] wrote into a run folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlotFiles {
    /// `curves.svg`/`curves.png`: training loss per step and test accuracy per epoch.
    pub curves: PlotPaths,
    /// `memory.svg`/`memory.png`: the memory timeline and the release, step by step.
    pub memory: PlotPaths,
}

/// Redraws a run folder's figures from its files: `curves.svg`/`.png` from `steps.jsonl` and
/// `metrics.jsonl`, `memory.svg`/`.png` from `memory.jsonl`. Each file is written atomically.
///
/// A missing or unreadable file is [`ReportError::Io`] naming it; a run folder with neither
/// steps nor epochs, or a memory timeline without samples, is [`ReportError::NothingToDraw`]
/// naming the file. Nothing is drawn before every file is read and checked.
pub fn draw_run_plots(run_folder: &Path) -> Result<PlotFiles, ReportError> {
    draw_run_records(&RunRecords::read(run_folder)?, run_folder)
}

/// Draws the figures of `records` (read from `run_folder`) into `run_folder`; see
/// [`draw_run_plots`].
pub fn draw_run_records(records: &RunRecords, run_folder: &Path) -> Result<PlotFiles, ReportError> {
    let steps_path = RunFile::StepMetrics.path_in(run_folder);
    if records.steps.is_empty() && records.epochs.is_empty() {
        return Err(ReportError::NothingToDraw {
            path: steps_path,
            reason: format!(
                "no training step is recorded, and {} holds no epoch",
                RunFile::EpochMetrics.path_in(run_folder).display()
            ),
        });
    }
    if records.samples.is_empty() {
        return Err(ReportError::NothingToDraw {
            path: RunFile::MemoryTimeline.path_in(run_folder),
            reason: "the memory timeline holds no sample".into(),
        });
    }
    let files = PlotFiles {
        curves: PlotPaths::in_folder(run_folder, "curves"),
        memory: PlotPaths::in_folder(run_folder, "memory"),
    };
    draw_training_curves(&records.steps, &records.epochs, &files.curves)?;
    draw_memory_timeline(&records.samples, &files.memory)?;
    Ok(files)
}

/// Draws the training curves: the loss of each logged step (light) and its exponential moving
/// average (bold), with the epochs' boundaries, beside the test accuracy after each epoch.
/// Records whose values are not finite numbers are left out.
pub fn draw_training_curves(
    steps: &[StepMetrics],
    epochs: &[EpochMetrics],
    paths: &PlotPaths,
) -> Result<(), ReportError> {
    if steps.is_empty() && epochs.is_empty() {
        return Err(nothing_to_draw(paths, "neither steps nor epochs to plot"));
    }
    let curves = TrainingCurves::from_records(steps, epochs);
    render_and_write(&CurvesFigure { curves: &curves }, paths)
}

/// Draws the memory timeline: resident set, live heap, mapped dataset and device memory over
/// the run, the phases marked, and below it the release step by step, from the baseline
/// before loading to the last step.
pub fn draw_memory_timeline(
    samples: &[TimelineSample],
    paths: &PlotPaths,
) -> Result<(), ReportError> {
    if samples.is_empty() {
        return Err(nothing_to_draw(paths, "no memory sample to plot"));
    }
    let timeline = MemoryTimelineData::from_samples(samples);
    let release = ReleaseBars::from_samples(samples);
    render_and_write(
        &MemoryFigure {
            timeline: &timeline,
            release: &release,
        },
        paths,
    )
}

/// Draws bar charts side by side (one panel each), e.g. throughput, step time and memory per
/// backend for `reclaim bench train`.
pub fn draw_bar_charts(charts: &[BarChart], paths: &PlotPaths) -> Result<(), ReportError> {
    if charts.iter().all(|chart| chart.bars.is_empty()) {
        return Err(nothing_to_draw(paths, "no bar to draw"));
    }
    render_and_write(&BarsFigure { charts }, paths)
}

fn nothing_to_draw(paths: &PlotPaths, reason: &str) -> ReportError {
    ReportError::NothingToDraw {
        path: paths.svg.clone(),
        reason: reason.into(),
    }
}
