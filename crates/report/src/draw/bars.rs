//! Bar charts side by side, one panel each (`reclaim bench train`'s figure).

use plotters::coord::Shift;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, VPos};

use super::{
    Drawn, Figure, anchored, axis_decimals, colors, describe, draw_label_under, draw_note,
    format_value, grid_mesh, panel_chart,
};
use crate::prepare::BarChart;

/// The panels, 420 pixels wide each.
pub(crate) struct BarsFigure<'a> {
    pub(crate) charts: &'a [BarChart],
}

impl Figure for BarsFigure<'_> {
    fn size(&self) -> (u32, u32) {
        (420 * self.charts.len() as u32, 440)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn {
        let panels = root.split_evenly((1, self.charts.len()));
        for (panel, chart) in panels.iter().zip(self.charts) {
            draw_bar_panel(panel, chart)?;
        }
        Ok(())
    }
}

fn draw_bar_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    bar_chart: &BarChart,
) -> Drawn {
    if bar_chart.bars.is_empty() {
        return draw_note(area, &bar_chart.title, "nothing measured");
    }
    let y_end = bar_chart.axis_end();
    let ranges = (0.0..bar_chart.bars.len() as f64, 0.0..y_end);
    let mut chart = panel_chart(area, (&bar_chart.title, 20.0), (36, 70), ranges)?;
    grid_mesh(&mut chart, 13.0)
        .disable_x_mesh()
        .x_labels(0)
        .y_desc(bar_chart.value_label.as_str())
        .y_label_formatter(&|value| {
            format!("{value:.precision$}", precision = axis_decimals(y_end))
        })
        .draw()
        .map_err(describe)?;
    for (index, bar) in bar_chart.bars.iter().enumerate() {
        let (left, right) = (index as f64 + 0.2, index as f64 + 0.8);
        if let Some(height) = bar.height() {
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(left, 0.0), (right, height)],
                    colors::BAR.filled(),
                )))
                .map_err(describe)?;
        }
        chart
            .draw_series(std::iter::once(Text::new(
                format_value(bar.value),
                (index as f64 + 0.5, bar.height().unwrap_or(0.0)),
                anchored(13.0, HPos::Center, VPos::Bottom),
            )))
            .map_err(describe)?;
        let at = chart.backend_coord(&(index as f64 + 0.5, 0.0));
        draw_label_under(area, at, 8, &[&bar.label])?;
    }
    Ok(())
}
