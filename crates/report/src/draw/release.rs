//! The release panel of the memory figure: the memory right after each step of the release,
//! a group of bars per step.

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::timeline::series_color;
use super::{
    Chart, Drawn, anchored, axis_decimals, colors, describe, draw_label_under, draw_note,
    format_value, grid_mesh, panel_chart, two_lines,
};
use crate::prepare::{ReleaseBars, ReleaseStepBars};

/// The share of a step's slot its group of bars takes.
const GROUP_WIDTH: f64 = 0.8;

pub(super) fn draw_release_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    release: &ReleaseBars,
) -> Drawn {
    let title = "The release, step by step (memory right after each step)";
    if release.steps.is_empty() {
        return draw_note(area, title, "no phase recorded");
    }
    let y_end = release.highest() * 1.15;
    let y_precision = axis_decimals(y_end);
    let ranges = (0.0..release.steps.len() as f64, 0.0..y_end);
    let mut chart = panel_chart(area, (title, 22.0), (52, 70), ranges)?;
    grid_mesh(&mut chart, 14.0)
        .disable_x_mesh()
        .x_labels(0)
        .y_desc("MiB")
        .y_label_formatter(&|mebibytes| format!("{mebibytes:.y_precision$}"))
        .draw()
        .map_err(describe)?;
    for (index, step) in release.steps.iter().enumerate() {
        draw_step_bars(&mut chart, release, index, step)?;
        let (first_line, second_line) = two_lines(&step.name);
        let lines: Vec<&str> = std::iter::once(first_line.as_str())
            .chain(second_line.as_deref())
            .collect();
        let at = chart.backend_coord(&(index as f64 + 0.5, 0.0));
        draw_label_under(area, at, 8, &lines)?;
    }
    Ok(())
}

/// The bars of one step, each with its value on top, or `n/a` where it was not measured.
fn draw_step_bars<DB: DrawingBackend>(
    chart: &mut Chart<'_, DB>,
    release: &ReleaseBars,
    index: usize,
    step: &ReleaseStepBars,
) -> Drawn {
    let bar_width = GROUP_WIDTH / release.series.len().max(1) as f64;
    let group_start = index as f64 + (1.0 - GROUP_WIDTH) / 2.0;
    for (position, (series, value)) in release.series.iter().zip(&step.mebibytes).enumerate() {
        let left = group_start + position as f64 * bar_width;
        let right = left + bar_width * 0.92;
        let middle = (left + right) / 2.0;
        let Some(value) = *value else {
            chart
                .draw_series(std::iter::once(Text::new(
                    "n/a",
                    (middle, 0.0),
                    anchored(11.0, HPos::Center, VPos::Bottom).color(&colors::PHASE),
                )))
                .map_err(describe)?;
            continue;
        };
        chart
            .draw_series(std::iter::once(Rectangle::new(
                [(left, 0.0), (right, value)],
                series_color(*series).filled(),
            )))
            .map_err(describe)?;
        chart
            .draw_series(std::iter::once(Text::new(
                format_value(value),
                (middle, value),
                anchored(11.0, HPos::Center, VPos::Bottom),
            )))
            .map_err(describe)?;
    }
    Ok(())
}
