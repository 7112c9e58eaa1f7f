//! Drawing: one module per figure, and here what they share. Every figure draws on any
//! plotters backend; it is rendered into an SVG string and into an RGB buffer encoded as PNG,
//! with the vendored DejaVu Sans font (no system font is looked up), then written atomically.

mod bars;
mod curves;
mod release;
mod timeline;

use std::ops::Range;
use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::chart::MeshStyle;
use plotters::coord::Shift;
use plotters::coord::types::RangedCoordf64;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{FontStyle, register_font};

use crate::ReportError;

pub(crate) use bars::BarsFigure;
pub(crate) use curves::CurvesFigure;
pub(crate) use timeline::MemoryFigure;

/// DejaVu Sans, vendored with its license in `crates/report/assets/`.
const FONT_BYTES: &[u8] = include_bytes!("../../assets/DejaVuSans.ttf");
/// The family every text of the figures uses; the vendored font is registered under it.
const FONT: &str = "sans-serif";

/// Series colours. Each is used by one series of a figure only, so a test can find a series'
/// polyline by its colour.
pub(crate) mod colors {
    use plotters::style::RGBColor;
    /// The logged loss (each point a mean of 10 steps).
    pub const LOSS_LOGGED: RGBColor = RGBColor(158, 190, 222);
    /// The smoothed loss.
    pub const LOSS_SMOOTHED: RGBColor = RGBColor(31, 100, 170);
    /// Test accuracy per epoch.
    pub const ACCURACY: RGBColor = RGBColor(34, 139, 34);
    /// Resident set size.
    pub const RESIDENT: RGBColor = RGBColor(31, 119, 180);
    /// Live heap bytes.
    pub const HEAP: RGBColor = RGBColor(255, 127, 14);
    /// Mapped dataset bytes.
    pub const MAPPED: RGBColor = RGBColor(44, 160, 44);
    /// Device memory in use.
    pub const DEVICE: RGBColor = RGBColor(214, 39, 40);
    /// Device memory reserved by the backend's pool.
    pub const DEVICE_RESERVED: RGBColor = RGBColor(148, 103, 189);
    /// Phase markers and annotations.
    pub const PHASE: RGBColor = RGBColor(110, 110, 110);
    /// Bars of a bar chart.
    pub const BAR: RGBColor = RGBColor(70, 130, 180);
    /// Light grid lines.
    pub const GRID: RGBColor = RGBColor(232, 232, 232);
}

/// Where one figure is written: an SVG file and a PNG file.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlotPaths {
    /// The SVG file.
    pub svg: PathBuf,
    /// The PNG file.
    pub png: PathBuf,
}

impl PlotPaths {
    /// `folder/stem.svg` and `folder/stem.png`.
    pub fn in_folder(folder: &Path, stem: &str) -> Self {
        PlotPaths {
            svg: folder.join(format!("{stem}.svg")),
            png: folder.join(format!("{stem}.png")),
        }
    }
}

/// A chart with both axes in `f64`, as every panel has.
pub(crate) type Chart<'a, DB> = ChartContext<'a, DB, Cartesian2d<RangedCoordf64, RangedCoordf64>>;

/// What a drawing step returns: plotters' errors, described.
pub(crate) type Drawn = Result<(), String>;

/// A figure: its size in pixels, and how it draws itself on any backend.
pub(crate) trait Figure {
    fn size(&self) -> (u32, u32);
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn;
}

pub(crate) fn describe(error: impl std::fmt::Display) -> String {
    error.to_string()
}

fn register_vendored_font() -> Drawn {
    static REGISTERED: OnceLock<Result<(), String>> = OnceLock::new();
    REGISTERED
        .get_or_init(|| {
            for style in [FontStyle::Normal, FontStyle::Bold] {
                register_font(FONT, style, FONT_BYTES)
                    .map_err(|_| "the vendored font DejaVuSans.ttf does not parse".to_string())?;
            }
            Ok(())
        })
        .clone()
}

/// Renders `figure` into an SVG document and a PNG image.
fn render<F: Figure>(figure: &F) -> Result<(String, Vec<u8>), String> {
    register_vendored_font()?;
    let (width, height) = figure.size();
    let mut svg = String::new();
    {
        let root = SVGBackend::with_string(&mut svg, (width, height)).into_drawing_area();
        root.fill(&WHITE).map_err(describe)?;
        figure.draw(&root)?;
        root.present().map_err(describe)?;
    }
    let mut pixels = vec![255u8; width as usize * height as usize * 3];
    {
        let root = BitMapBackend::with_buffer(&mut pixels, (width, height)).into_drawing_area();
        figure.draw(&root)?;
        root.present().map_err(describe)?;
    }
    let png = encode_png(&pixels, width, height)?;
    Ok((svg, png))
}

fn encode_png(rgb: &[u8], width: u32, height: u32) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut bytes, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    // `Fast` (fdeflate, tuned for PNG): the figures are drawn at the end of every run, and at
    // `High` deflate showed in a profile of `reclaim train`; with `Fast` the whole `figures`
    // phase is a small share of the job (docs/benchmarks.md, "Three recipes in one run").
    encoder.set_compression(png::Compression::Fast);
    let mut writer = encoder.write_header().map_err(describe)?;
    writer.write_image_data(rgb).map_err(describe)?;
    writer.finish().map_err(describe)?;
    Ok(bytes)
}

/// Renders `figure` and writes it to `paths`, each file atomically.
pub(crate) fn render_and_write<F: Figure>(
    figure: &F,
    paths: &PlotPaths,
) -> Result<(), ReportError> {
    let (svg, png) = render(figure).map_err(|message| ReportError::Drawing {
        path: paths.svg.clone(),
        message,
    })?;
    write_figure_file(&paths.svg, svg.as_bytes())?;
    write_figure_file(&paths.png, &png)
}

/// Writes one figure file through the workspace's atomic write; its failure names the file.
fn write_figure_file(path: &std::path::Path, bytes: &[u8]) -> Result<(), ReportError> {
    reclaim_records::write_file_atomically(path, bytes).map_err(ReportError::from)
}

/// A panel's chart: its caption (text and size), a 14-pixel margin, the room for the x and y
/// axes' labels in pixels, and the ranges of both axes.
pub(crate) fn panel_chart<'a, DB: DrawingBackend>(
    area: &'a DrawingArea<DB, Shift>,
    (caption, caption_size): (&str, f64),
    (x_label_area, y_label_area): (u32, u32),
    (x_range, y_range): (Range<f64>, Range<f64>),
) -> Result<Chart<'a, DB>, String> {
    ChartBuilder::on(area)
        .caption(caption, text_style(caption_size))
        .margin(14)
        .x_label_area_size(x_label_area)
        .y_label_area_size(y_label_area)
        .build_cartesian_2d(x_range, y_range)
        .map_err(describe)
}

/// The mesh every panel shares: no light lines, light grey bold lines, tick labels of
/// `label_size` points and axis descriptions a point larger. The caller adds its own settings
/// and draws it.
pub(crate) fn grid_mesh<'a, 'b, DB: DrawingBackend>(
    chart: &'b mut Chart<'a, DB>,
    label_size: f64,
) -> MeshStyle<'a, 'b, RangedCoordf64, RangedCoordf64, DB> {
    let mut mesh = chart.configure_mesh();
    mesh.light_line_style(TRANSPARENT)
        .bold_line_style(colors::GRID)
        .label_style(text_style(label_size))
        .axis_desc_style(text_style(label_size + 1.0));
    mesh
}

pub(crate) fn text_style(size: f64) -> TextStyle<'static> {
    TextStyle::from((FONT, size).into_font()).color(&BLACK)
}

pub(crate) fn anchored(size: f64, horizontal: HPos, vertical: VPos) -> TextStyle<'static> {
    text_style(size).pos(Pos::new(horizontal, vertical))
}

/// Decimals for the labels of an axis from 0 to `end`: enough for its ticks to differ.
pub(crate) fn axis_decimals(end: f64) -> usize {
    if end >= 10.0 {
        0
    } else if end >= 1.0 {
        1
    } else {
        2
    }
}

/// `1234` → `"1234"`, `12.34` → `"12.3"`, `1.234` → `"1.23"`.
pub(crate) fn format_value(value: f64) -> String {
    if !value.is_finite() {
        "n/a".into()
    } else if value == 0.0 {
        "0".into()
    } else if value.abs() >= 100.0 {
        format!("{value:.0}")
    } else if value.abs() >= 10.0 {
        format!("{value:.1}")
    } else {
        format!("{value:.2}")
    }
}

/// Splits `text` into two lines at the space nearest its middle (or keeps one line).
pub(crate) fn two_lines(text: &str) -> (String, Option<String>) {
    if text.chars().count() <= 14 {
        return (text.to_string(), None);
    }
    let middle = text.len() / 2;
    let split = text
        .match_indices(' ')
        .map(|(index, _)| index)
        .min_by_key(|index| index.abs_diff(middle));
    match split {
        Some(index) => (
            text[..index].to_string(),
            Some(text[index + 1..].to_string()),
        ),
        None => (text.to_string(), None),
    }
}

/// A panel with nothing to show: its title and a note in the middle.
pub(crate) fn draw_note<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    title: &str,
    note: &str,
) -> Drawn {
    let (width, height) = area.dim_in_pixel();
    let center = (width as i32 / 2, height as i32 / 2);
    area.draw_text(
        title,
        &anchored(22.0, HPos::Center, VPos::Top),
        (center.0, 14),
    )
    .map_err(describe)?;
    area.draw_text(
        note,
        &anchored(16.0, HPos::Center, VPos::Center).color(&colors::PHASE),
        center,
    )
    .map_err(describe)
}

/// A legend on one row, centred, at height `y` of `area`.
pub(crate) fn draw_legend_row<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    entries: &[(&str, RGBColor)],
    y: i32,
) -> Drawn {
    const MARK: i32 = 18;
    const GAP: i32 = 6;
    const SPACING: i32 = 28;
    let style = anchored(14.0, HPos::Left, VPos::Center);
    let mut widths = Vec::with_capacity(entries.len());
    for (name, _) in entries {
        widths.push(area.estimate_text_size(name, &style).map_err(describe)?.0 as i32);
    }
    let total: i32 = widths.iter().map(|width| MARK + GAP + width).sum::<i32>()
        + SPACING * (entries.len() as i32 - 1).max(0);
    let mut x = (area.dim_in_pixel().0 as i32 - total) / 2;
    for ((name, color), width) in entries.iter().zip(widths) {
        area.draw(&Rectangle::new(
            [(x, y - 3), (x + MARK, y + 3)],
            color.filled(),
        ))
        .map_err(describe)?;
        area.draw_text(name, &style, (x + MARK + GAP, y))
            .map_err(describe)?;
        x += MARK + GAP + width + SPACING;
    }
    Ok(())
}

/// The mark of a series in a chart's own legend box.
pub(crate) fn legend_mark(color: RGBColor) -> impl Fn((i32, i32)) -> Rectangle<(i32, i32)> {
    move |(x, y)| Rectangle::new([(x, y - 3), (x + 18, y + 3)], color.filled())
}

/// Text `lines` centred under the x-axis point `(x, y)` of a chart drawn on `area` (in the
/// backend's pixels), `gap` pixels below it.
pub(crate) fn draw_label_under<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    (x, y): (i32, i32),
    gap: i32,
    lines: &[&str],
) -> Drawn {
    let base = area.get_base_pixel();
    for (index, line) in lines.iter().enumerate() {
        area.draw_text(
            line,
            &anchored(14.0, HPos::Center, VPos::Top),
            (x - base.0, y - base.1 + gap + 18 * index as i32),
        )
        .map_err(describe)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn long_names_wrap_at_the_space_nearest_the_middle() {
        assert_eq!(two_lines("trained"), ("trained".to_string(), None));
        assert_eq!(
            two_lines("device memory cleaned up"),
            ("device memory".to_string(), Some("cleaned up".to_string()))
        );
    }

    #[test]
    fn values_are_formatted_with_sensible_precision() {
        assert_eq!(format_value(1234.56), "1235");
        assert_eq!(format_value(12.345), "12.3");
        assert_eq!(format_value(1.2345), "1.23");
        assert_eq!(format_value(f64::NAN), "n/a");
    }

    #[test]
    fn axis_labels_have_enough_decimals_to_differ() {
        assert_eq!(axis_decimals(250.0), 0);
        assert_eq!(axis_decimals(2.5), 1);
        assert_eq!(axis_decimals(0.45), 2);
    }

    #[test]
    fn the_vendored_font_registers() {
        assert_eq!(register_vendored_font(), Ok(()));
    }

    #[test]
    fn an_encoded_png_has_the_signature_and_the_size() {
        let png = encode_png(&[200; 4 * 3 * 3], 4, 3).unwrap();
        assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
        assert_eq!(u32::from_be_bytes(png[16..20].try_into().unwrap()), 4);
        assert_eq!(u32::from_be_bytes(png[20..24].try_into().unwrap()), 3);
        assert!(encode_png(&[0; 5], 4, 3).is_err(), "too few pixels");
    }
}
