//! Bar charts' data: titled panels of labelled values (`reclaim bench train` builds them).

/// One bar of a [`BarChart`].
#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    /// The label under the bar (`"ndarray"`).
    pub label: String,
    /// Its value, in the chart's unit; a value that is not a finite number is drawn as `n/a`.
    pub value: f64,
}

impl Bar {
    /// The height the bar is drawn at: its value (negative ones at 0), or `None` for a value
    /// that is not a finite number (no bar, an `n/a` label).
    pub(crate) fn height(&self) -> Option<f64> {
        self.value.is_finite().then(|| self.value.max(0.0))
    }
}

/// A titled bar chart, one of the panels drawn by [`draw_bar_charts`](crate::draw_bar_charts).
#[derive(Clone, Debug, PartialEq)]
pub struct BarChart {
    /// The panel's title (`"Training throughput"`).
    pub title: String,
    /// The value axis' label, with its unit (`"samples per second"`).
    pub value_label: String,
    /// The bars, left to right.
    pub bars: Vec<Bar>,
}

impl BarChart {
    /// The top of the value axis: 15% above the highest bar, or 1 when no bar is above 0.
    pub(crate) fn axis_end(&self) -> f64 {
        let highest = self.bars.iter().filter_map(Bar::height).fold(0.0, f64::max);
        if highest > 0.0 { highest * 1.15 } else { 1.0 }
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn chart(values: &[f64]) -> BarChart {
        BarChart {
            title: "Throughput".into(),
            value_label: "samples per second".into(),
            bars: values
                .iter()
                .map(|&value| Bar {
                    label: "backend".into(),
                    value,
                })
                .collect(),
        }
    }

    #[test]
    fn the_axis_ends_above_the_highest_finite_bar() {
        assert!((chart(&[100.0, f64::NAN, 40.0]).axis_end() - 115.0).abs() < 1e-9);
        assert_eq!(chart(&[f64::NAN]).axis_end(), 1.0);
        assert_eq!(chart(&[-3.0, 0.0]).axis_end(), 1.0);
        assert_eq!(chart(&[]).axis_end(), 1.0);
    }

    #[test]
    fn bars_are_drawn_from_zero_and_missing_values_have_none() {
        let heights: Vec<Option<f64>> = chart(&[7.25, -1.0, f64::INFINITY])
            .bars
            .iter()
            .map(Bar::height)
            .collect();
        assert_eq!(heights, [Some(7.25), Some(0.0), None]);
    }
}
