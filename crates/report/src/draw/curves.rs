//! The training curves figure: the loss per step beside the test accuracy per epoch.

use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::{
    Chart, Drawn, Figure, anchored, axis_decimals, colors, describe, draw_label_under, draw_note,
    grid_mesh, legend_mark, panel_chart, text_style,
};
use crate::prepare::{EpochBoundary, LOSS_SMOOTHING, TrainingCurves};

/// `curves.svg`/`.png`: the loss panel (720 pixels wide) and the accuracy panel.
pub(crate) struct CurvesFigure<'a> {
    pub(crate) curves: &'a TrainingCurves,
}

impl Figure for CurvesFigure<'_> {
    fn size(&self) -> (u32, u32) {
        (1200, 480)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn {
        let (loss_area, accuracy_area) = root.split_horizontally(720);
        draw_loss_panel(&loss_area, self.curves)?;
        draw_accuracy_panel(&accuracy_area, &self.curves.accuracy)
    }
}

fn draw_loss_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    curves: &TrainingCurves,
) -> Drawn {
    let title = "Training loss per step";
    let logged = &curves.logged_loss;
    let (Some(&(first_step, _)), Some(&(last_step, _))) = (logged.first(), logged.last()) else {
        return draw_note(area, title, "no training step recorded");
    };
    let x_range = 0.0_f64.min(first_step)..last_step.max(first_step + 1.0);
    let highest = logged
        .iter()
        .map(|&(_, loss)| loss)
        .fold(f64::MIN, f64::max);
    let lowest = logged
        .iter()
        .map(|&(_, loss)| loss)
        .fold(f64::MAX, f64::min);
    let y_range = lowest.min(0.0)..(highest.max(lowest + 1e-3) * 1.08);

    let loss_decimals = axis_decimals(y_range.end - y_range.start);
    let mut chart = panel_chart(area, (title, 22.0), (48, 64), (x_range, y_range))?;
    grid_mesh(&mut chart, 14.0)
        .x_desc("optimizer step")
        .y_desc("cross-entropy loss")
        .x_label_formatter(&|step| format!("{step:.0}"))
        .y_label_formatter(&|loss| format!("{loss:.precision$}", precision = loss_decimals))
        .draw()
        .map_err(describe)?;
    draw_epoch_boundaries(&mut chart, &curves.epoch_boundaries)?;
    draw_loss_lines(&mut chart, curves)
}

/// A dashed line and `epoch N →` at each boundary between epochs.
fn draw_epoch_boundaries<DB: DrawingBackend>(
    chart: &mut Chart<'_, DB>,
    boundaries: &[EpochBoundary],
) -> Drawn {
    let y_range = chart.y_range();
    for boundary in boundaries {
        let step = boundary.after_step;
        chart
            .draw_series(std::iter::once(DashedPathElement::new(
                vec![(step, y_range.start), (step, y_range.end)],
                5,
                4,
                colors::PHASE.stroke_width(1),
            )))
            .map_err(describe)?;
        chart
            .draw_series(std::iter::once(
                EmptyElement::at((step, y_range.end))
                    + Text::new(
                        format!("epoch {} →", boundary.epoch),
                        (4, 4),
                        anchored(13.0, HPos::Left, VPos::Top).color(&colors::PHASE),
                    ),
            ))
            .map_err(describe)?;
    }
    Ok(())
}

/// The logged loss (light), its moving average (bold) and their legend.
fn draw_loss_lines<'a, DB: DrawingBackend + 'a>(
    chart: &mut Chart<'a, DB>,
    curves: &TrainingCurves,
) -> Drawn {
    chart
        .draw_series(LineSeries::new(
            curves.logged_loss.iter().copied(),
            colors::LOSS_LOGGED.stroke_width(1),
        ))
        .map_err(describe)?
        .label("logged (mean of 10 steps)")
        .legend(legend_mark(colors::LOSS_LOGGED));
    chart
        .draw_series(LineSeries::new(
            curves.smoothed_loss.iter().copied(),
            colors::LOSS_SMOOTHED.stroke_width(3),
        ))
        .map_err(describe)?
        .label(format!("smoothed (moving average, {LOSS_SMOOTHING})"))
        .legend(legend_mark(colors::LOSS_SMOOTHED));
    chart
        .configure_series_labels()
        .position(SeriesLabelPosition::UpperRight)
        .margin(10)
        .label_font(text_style(14.0))
        .background_style(WHITE.mix(0.9))
        .border_style(colors::GRID)
        .draw()
        .map_err(describe)
}

/// `(epoch, accuracy in percent)` points: the extremes of both.
fn extremes(points: &[(f64, f64)]) -> ((f64, f64), (f64, f64)) {
    let fold = |read: fn(&(f64, f64)) -> f64| {
        points
            .iter()
            .map(read)
            .fold((f64::MAX, f64::MIN), |(low, high), value| {
                (low.min(value), high.max(value))
            })
    };
    (fold(|point| point.0), fold(|point| point.1))
}

fn draw_accuracy_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    points: &[(f64, f64)],
) -> Drawn {
    let title = "Test accuracy after each epoch";
    if points.is_empty() {
        return draw_note(area, title, "no epoch completed");
    }
    let ((first_epoch, last_epoch), (lowest, highest)) = extremes(points);
    let padding = ((highest - lowest) * 0.35).max(1.0);
    let y_range = (lowest - padding).max(0.0).floor()..(highest + padding).min(100.0).ceil();
    let x_range = first_epoch - 0.5..last_epoch + 0.5;
    let epoch_count = (last_epoch - first_epoch) as usize + 1;

    let mut chart = panel_chart(area, (title, 22.0), (48, 64), (x_range, y_range))?;
    grid_mesh(&mut chart, 14.0)
        .disable_x_mesh()
        // Labels on whole epochs only (at most a dozen of them).
        .x_labels(0)
        .x_desc("epoch")
        .y_desc("test accuracy (%)")
        .y_label_formatter(&|value| format!("{value:.1}"))
        .draw()
        .map_err(describe)?;
    let label_every = epoch_count.div_ceil(12).max(1);
    let labelled = |index: usize| index.is_multiple_of(label_every) || index + 1 == points.len();
    for (index, &(epoch, _)) in points.iter().enumerate() {
        if labelled(index) {
            let at = chart.backend_coord(&(epoch, chart.y_range().start));
            draw_label_under(area, at, 6, &[&format!("{epoch:.0}")])?;
        }
    }
    chart
        .draw_series(
            LineSeries::new(
                points.iter().copied(),
                colors::ACCURACY.filled().stroke_width(3),
            )
            .point_size(5),
        )
        .map_err(describe)?;
    let accuracy_labels = points
        .iter()
        .enumerate()
        .filter(|&(index, _)| labelled(index))
        .map(|(_, &(epoch, accuracy))| {
            EmptyElement::at((epoch, accuracy))
                + Text::new(
                    format!("{accuracy:.2}%"),
                    (0, -10),
                    anchored(14.0, HPos::Center, VPos::Bottom),
                )
        });
    chart.draw_series(accuracy_labels).map_err(describe)?;
    Ok(())
}
