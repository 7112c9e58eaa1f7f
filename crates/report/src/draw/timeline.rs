//! The memory figure: the timeline of the run above, and the release step by step below
//! (drawn by `release.rs`).

use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::FontTransform;
use plotters::style::text_anchor::{HPos, Pos, VPos};

use super::{
    Chart, Drawn, Figure, anchored, axis_decimals, colors, describe, draw_legend_row, grid_mesh,
    text_style,
};
use crate::prepare::{MemorySeries, MemoryTimelineData, PhaseMark, ReleaseBars};

/// `memory.svg`/`.png`: the timeline panel and the release panel.
pub(crate) struct MemoryFigure<'a> {
    pub(crate) timeline: &'a MemoryTimelineData,
    pub(crate) release: &'a ReleaseBars,
}

impl Figure for MemoryFigure<'_> {
    fn size(&self) -> (u32, u32) {
        (1200, 920)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn {
        let (timeline_area, release_area) = root.split_vertically(500);
        draw_timeline_panel(&timeline_area, self.timeline)?;
        super::release::draw_release_panel(&release_area, self.release)
    }
}

/// The colour of a memory series, in both panels.
pub(crate) fn series_color(series: MemorySeries) -> RGBColor {
    match series {
        MemorySeries::Resident => colors::RESIDENT,
        MemorySeries::LiveHeap => colors::HEAP,
        MemorySeries::MappedDataset => colors::MAPPED,
        MemorySeries::DeviceInUse => colors::DEVICE,
        MemorySeries::DeviceReserved => colors::DEVICE_RESERVED,
    }
}

fn draw_timeline_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    timeline: &MemoryTimelineData,
) -> Drawn {
    let highest = timeline
        .series
        .iter()
        .flat_map(|series| series.points.iter().map(|&(_, value)| value))
        .fold(1.0, f64::max);
    let x_end = (timeline.last_second * 1.025).max(1e-3);
    let y_end = highest * 1.1;
    // The caption and, under it, the legend (shared with the release panel) on one row.
    let (header, body) = area.split_vertically(66);
    draw_header(&header, timeline)?;

    let mut chart = ChartBuilder::on(&body)
        .margin(14)
        .margin_top(4)
        .x_label_area_size(48)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..x_end, 0.0..y_end)
        .map_err(describe)?;
    let x_precision = axis_decimals(x_end);
    let y_precision = axis_decimals(y_end);
    grid_mesh(&mut chart, 14.0)
        .x_desc("seconds since the run started")
        .y_desc("MiB")
        .x_label_formatter(&|seconds| format!("{seconds:.x_precision$}"))
        .y_label_formatter(&|mebibytes| format!("{mebibytes:.y_precision$}"))
        .draw()
        .map_err(describe)?;

    let markers = merge_close_markers(&chart, &timeline.phases);
    draw_marker_lines(&mut chart, &markers)?;
    for series in &timeline.series {
        // The device is read at phase boundaries only: points show where.
        let point_size = if series.series.read_at_phases_only() {
            3
        } else {
            0
        };
        let line = LineSeries::new(
            series.points.iter().copied(),
            series_color(series.series).stroke_width(2),
        )
        .point_size(point_size);
        chart.draw_series(line).map_err(describe)?;
    }
    // The labels last, on a light background, so that no line hides them.
    draw_marker_labels(&mut chart, &body, &markers)
}

fn draw_header<DB: DrawingBackend>(
    header: &DrawingArea<DB, Shift>,
    timeline: &MemoryTimelineData,
) -> Drawn {
    let caption = format!(
        "Memory over the run ({} periodic samples, {} at phase boundaries)",
        timeline.periodic_samples, timeline.phase_samples
    );
    let (width, _) = header.dim_in_pixel();
    header
        .draw_text(
            &caption,
            &anchored(22.0, HPos::Center, VPos::Top),
            (width as i32 / 2, 10),
        )
        .map_err(describe)?;
    let legend: Vec<(&str, RGBColor)> = timeline
        .series
        .iter()
        .map(|series| (series.series.name(), series_color(series.series)))
        .collect();
    draw_legend_row(header, &legend, 50)
}

/// The phase markers, those too close to the previous one to be read apart (under 18 pixels)
/// merged into one label.
fn merge_close_markers<DB: DrawingBackend>(
    chart: &Chart<'_, DB>,
    phases: &[PhaseMark],
) -> Vec<PhaseMark> {
    let pixel = |seconds: f64| chart.backend_coord(&(seconds, 0.0)).0;
    let mut markers: Vec<PhaseMark> = Vec::new();
    for phase in phases {
        match markers.last_mut() {
            Some(previous) if (pixel(phase.seconds) - pixel(previous.seconds)).abs() < 18 => {
                previous.label.push_str(", ");
                previous.label.push_str(&phase.label);
            }
            _ => markers.push(phase.clone()),
        }
    }
    markers
}

fn draw_marker_lines<DB: DrawingBackend>(
    chart: &mut Chart<'_, DB>,
    markers: &[PhaseMark],
) -> Drawn {
    let y_end = chart.y_range().end;
    for marker in markers {
        chart
            .draw_series(std::iter::once(DashedPathElement::new(
                vec![(marker.seconds, 0.0), (marker.seconds, y_end)],
                5,
                4,
                colors::PHASE.stroke_width(1),
            )))
            .map_err(describe)?;
    }
    Ok(())
}

/// Each marker's label, written upwards from the top of its line on a light background.
fn draw_marker_labels<DB: DrawingBackend>(
    chart: &mut Chart<'_, DB>,
    body: &DrawingArea<DB, Shift>,
    markers: &[PhaseMark],
) -> Drawn {
    let y_end = chart.y_range().end;
    let label_style = text_style(13.0)
        .color(&colors::PHASE)
        .transform(FontTransform::Rotate90)
        .pos(Pos::new(HPos::Left, VPos::Bottom));
    for marker in markers {
        let (length, thickness) = body
            .estimate_text_size(&marker.label, &text_style(13.0))
            .map_err(describe)?;
        let (length, thickness) = (length as i32, thickness as i32);
        chart
            .draw_series(std::iter::once(
                EmptyElement::at((marker.seconds, y_end))
                    + Rectangle::new(
                        [(2, 2), (thickness + 6, length + 8)],
                        WHITE.mix(0.85).filled(),
                    )
                    + Text::new(marker.label.clone(), (3, 4), label_style.clone()),
            ))
            .map_err(describe)?;
    }
    Ok(())
}
