//! Pictures of a run, drawn from its metrics files: the training curves (`curves.svg`/`.png`)
//! and the memory timeline (`memory.svg`/`.png`); and bar charts for `reclaim bench train`.
//!
//! Every figure is drawn twice, into an SVG string and into an RGB buffer encoded as PNG, with
//! the vendored DejaVu Sans font (no system font is looked up), then written atomically.

use std::path::{Path, PathBuf};
use std::sync::OnceLock;

use plotters::coord::Shift;
use plotters::element::DashedPathElement;
use plotters::prelude::*;
use plotters::style::text_anchor::{HPos, Pos, VPos};
use plotters::style::{FontStyle, FontTransform, register_font};

use crate::{
    EpochMetrics, StepMetrics, TimelineSample, TrainError, read_json_lines, run_files,
    write_file_atomically,
};

/// DejaVu Sans, vendored with its license in `crates/train/assets/`.
const FONT_BYTES: &[u8] = include_bytes!("../assets/DejaVuSans.ttf");
/// The family every text of the figures uses; the vendored font is registered under it.
const FONT: &str = "sans-serif";

const BYTES_PER_MEBIBYTE: f64 = 1024.0 * 1024.0;
/// Weight of the past in the smoothed loss (an exponential moving average, bias-corrected).
const LOSS_SMOOTHING: f64 = 0.8;

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

/// The figures [`draw_run_plots`] wrote into a run folder.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct PlotFiles {
    /// `curves.svg`/`curves.png`: training loss per step and test accuracy per epoch.
    pub curves: PlotPaths,
    /// `memory.svg`/`memory.png`: the memory timeline and the release, step by step.
    pub memory: PlotPaths,
}

/// One bar of a [`BarChart`].
#[derive(Clone, Debug, PartialEq)]
pub struct Bar {
    /// The label under the bar (`"ndarray"`).
    pub label: String,
    /// Its value, in the chart's unit; a value that is not a finite number is drawn as `n/a`.
    pub value: f64,
}

/// A titled bar chart, one of the panels drawn by [`draw_bar_charts`].
#[derive(Clone, Debug, PartialEq)]
pub struct BarChart {
    /// The panel's title (`"Training throughput"`).
    pub title: String,
    /// The value axis' label, with its unit (`"samples per second"`).
    pub value_label: String,
    /// The bars, left to right.
    pub bars: Vec<Bar>,
}

/// Redraws a run folder's figures from its files: `curves.svg`/`.png` from `steps.jsonl` and
/// `metrics.jsonl`, `memory.svg`/`.png` from `memory.jsonl`. Each file is written atomically.
///
/// A missing or unreadable file is [`TrainError::Io`] naming it; a run folder with neither
/// steps nor epochs, or a memory timeline without samples, is [`TrainError::Plot`] naming the
/// file.
pub fn draw_run_plots(run_folder: &Path) -> Result<PlotFiles, TrainError> {
    let steps_path = run_folder.join(run_files::STEP_METRICS);
    let epochs_path = run_folder.join(run_files::EPOCH_METRICS);
    let memory_path = run_folder.join(run_files::MEMORY_TIMELINE);
    let steps: Vec<StepMetrics> = read_json_lines(&steps_path)?;
    let epochs: Vec<EpochMetrics> = read_json_lines(&epochs_path)?;
    let samples: Vec<TimelineSample> = read_json_lines(&memory_path)?;
    if steps.is_empty() && epochs.is_empty() {
        return Err(TrainError::Plot {
            path: steps_path,
            message: format!(
                "no training step is recorded, and {} holds no epoch",
                epochs_path.display()
            ),
        });
    }
    if samples.is_empty() {
        return Err(TrainError::Plot {
            path: memory_path,
            message: "the memory timeline holds no sample".into(),
        });
    }
    let files = PlotFiles {
        curves: PlotPaths::in_folder(run_folder, "curves"),
        memory: PlotPaths::in_folder(run_folder, "memory"),
    };
    draw_training_curves(&steps, &epochs, &files.curves)?;
    draw_memory_timeline(&samples, &files.memory)?;
    Ok(files)
}

/// Draws the training curves: the loss of each logged step (light) and its exponential moving
/// average (bold), with the epochs' boundaries, beside the test accuracy after each epoch.
/// Records whose values are not finite numbers are left out.
pub fn draw_training_curves(
    steps: &[StepMetrics],
    epochs: &[EpochMetrics],
    paths: &PlotPaths,
) -> Result<(), TrainError> {
    if steps.is_empty() && epochs.is_empty() {
        return Err(TrainError::Plot {
            path: paths.svg.clone(),
            message: "neither steps nor epochs to plot".into(),
        });
    }
    render_and_write(&CurvesFigure { steps, epochs }, paths)
}

/// Draws the memory timeline: resident set, live heap, mapped dataset and device memory over
/// the run, the phases marked, and below it the release step by step, from the baseline
/// before loading to the last step.
pub fn draw_memory_timeline(
    samples: &[TimelineSample],
    paths: &PlotPaths,
) -> Result<(), TrainError> {
    if samples.is_empty() {
        return Err(TrainError::Plot {
            path: paths.svg.clone(),
            message: "no memory sample to plot".into(),
        });
    }
    render_and_write(&MemoryFigure { samples }, paths)
}

/// Draws bar charts side by side (one panel each), e.g. throughput, step time and memory per
/// backend for `reclaim bench train`.
pub fn draw_bar_charts(charts: &[BarChart], paths: &PlotPaths) -> Result<(), TrainError> {
    if charts.is_empty() || charts.iter().all(|chart| chart.bars.is_empty()) {
        return Err(TrainError::Plot {
            path: paths.svg.clone(),
            message: "no bar to draw".into(),
        });
    }
    render_and_write(&BarsFigure { charts }, paths)
}

// ---------------------------------------------------------------------------------------------
// Rendering: each figure draws on any plotters backend; it is rendered to SVG and to PNG.

type Drawn = Result<(), String>;

trait Figure {
    fn size(&self) -> (u32, u32);
    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn;
}

struct Rendered {
    svg: String,
    png: Vec<u8>,
}

fn describe(error: impl std::fmt::Display) -> String {
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

fn render<F: Figure>(figure: &F) -> Result<Rendered, String> {
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
    Ok(Rendered { svg, png })
}

fn encode_png(rgb: &[u8], width: u32, height: u32) -> Result<Vec<u8>, String> {
    let mut bytes = Vec::new();
    let mut encoder = png::Encoder::new(&mut bytes, width, height);
    encoder.set_color(png::ColorType::Rgb);
    encoder.set_depth(png::BitDepth::Eight);
    encoder.set_compression(png::Compression::High);
    let mut writer = encoder.write_header().map_err(describe)?;
    writer.write_image_data(rgb).map_err(describe)?;
    writer.finish().map_err(describe)?;
    Ok(bytes)
}

fn render_and_write<F: Figure>(figure: &F, paths: &PlotPaths) -> Result<(), TrainError> {
    let rendered = render(figure).map_err(|message| TrainError::Plot {
        path: paths.svg.clone(),
        message,
    })?;
    write_file_atomically(&paths.svg, rendered.svg.as_bytes())?;
    write_file_atomically(&paths.png, &rendered.png)
}

// ---------------------------------------------------------------------------------------------
// Helpers shared by the figures.

fn text_style(size: f64) -> TextStyle<'static> {
    TextStyle::from((FONT, size).into_font()).color(&BLACK)
}

fn anchored(size: f64, horizontal: HPos, vertical: VPos) -> TextStyle<'static> {
    text_style(size).pos(Pos::new(horizontal, vertical))
}

fn mebibytes(bytes: u64) -> f64 {
    bytes as f64 / BYTES_PER_MEBIBYTE
}

/// Decimals for the labels of an axis from 0 to `end`: enough for its ticks to differ.
fn axis_decimals(end: f64) -> usize {
    if end >= 10.0 {
        0
    } else if end >= 1.0 {
        1
    } else {
        2
    }
}

/// `1234` → `"1234"`, `12.34` → `"12.3"`, `1.234` → `"1.23"`.
fn format_value(value: f64) -> String {
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

/// The exponential moving average of `values` with weight `smoothing` on the past,
/// bias-corrected (so the first value is kept as is), one output per input.
fn exponential_moving_average(values: &[f64], smoothing: f64) -> Vec<f64> {
    let mut average = 0.0;
    let mut weight = 0.0;
    values
        .iter()
        .map(|value| {
            average = smoothing * average + (1.0 - smoothing) * value;
            weight = smoothing * weight + (1.0 - smoothing);
            average / weight
        })
        .collect()
}

/// Splits `text` into two lines at the space nearest its middle (or keeps one line).
fn two_lines(text: &str) -> (String, Option<String>) {
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

fn draw_note<DB: DrawingBackend>(area: &DrawingArea<DB, Shift>, title: &str, note: &str) -> Drawn {
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
fn draw_legend_row<DB: DrawingBackend>(
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

fn legend_mark(color: RGBColor) -> impl Fn((i32, i32)) -> Rectangle<(i32, i32)> {
    move |(x, y)| Rectangle::new([(x, y - 3), (x + 18, y + 3)], color.filled())
}

// ---------------------------------------------------------------------------------------------
// curves: training loss per step and test accuracy per epoch.

struct CurvesFigure<'a> {
    steps: &'a [StepMetrics],
    epochs: &'a [EpochMetrics],
}

impl Figure for CurvesFigure<'_> {
    fn size(&self) -> (u32, u32) {
        (1200, 480)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn {
        let (loss_area, accuracy_area) = root.split_horizontally(720);
        draw_loss_panel(&loss_area, self.steps)?;
        draw_accuracy_panel(&accuracy_area, self.epochs)
    }
}

fn draw_loss_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    steps: &[StepMetrics],
) -> Drawn {
    let title = "Training loss per step";
    let logged: Vec<(f64, f64)> = steps
        .iter()
        .filter(|record| record.loss.is_finite())
        .map(|record| (record.step as f64, record.loss))
        .collect();
    if logged.is_empty() {
        return draw_note(area, title, "no training step recorded");
    }
    let losses: Vec<f64> = logged.iter().map(|&(_, loss)| loss).collect();
    let smoothed: Vec<(f64, f64)> = logged
        .iter()
        .zip(exponential_moving_average(&losses, LOSS_SMOOTHING))
        .map(|(&(step, _), average)| (step, average))
        .collect();
    let first_step = logged.first().map_or(0.0, |&(step, _)| step);
    let last_step = logged.last().map_or(1.0, |&(step, _)| step);
    let x_range = 0.0_f64.min(first_step)..last_step.max(first_step + 1.0);
    let highest = losses.iter().copied().fold(f64::MIN, f64::max);
    let lowest = losses.iter().copied().fold(f64::MAX, f64::min);
    let y_range = lowest.min(0.0)..(highest.max(lowest + 1e-3) * 1.08);

    let loss_decimals = axis_decimals(y_range.end - y_range.start);
    let mut chart = ChartBuilder::on(area)
        .caption(title, text_style(22.0))
        .margin(14)
        .x_label_area_size(48)
        .y_label_area_size(64)
        .build_cartesian_2d(x_range, y_range.clone())
        .map_err(describe)?;
    chart
        .configure_mesh()
        .light_line_style(TRANSPARENT)
        .bold_line_style(colors::GRID)
        .label_style(text_style(14.0))
        .axis_desc_style(text_style(15.0))
        .x_desc("optimizer step")
        .y_desc("cross-entropy loss")
        .x_label_formatter(&|step| format!("{step:.0}"))
        .y_label_formatter(&|loss| format!("{loss:.precision$}", precision = loss_decimals))
        .draw()
        .map_err(describe)?;

    // The epochs' boundaries: after the last step of every epoch but the last.
    let mut boundaries: Vec<(usize, f64)> = Vec::new();
    for pair in steps.windows(2) {
        if pair[1].epoch != pair[0].epoch {
            boundaries.push((pair[1].epoch, pair[0].step as f64));
        }
    }
    for (epoch, step) in boundaries {
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
                        format!("epoch {epoch} →"),
                        (4, 4),
                        anchored(13.0, HPos::Left, VPos::Top).color(&colors::PHASE),
                    ),
            ))
            .map_err(describe)?;
    }

    chart
        .draw_series(LineSeries::new(logged, colors::LOSS_LOGGED.stroke_width(1)))
        .map_err(describe)?
        .label("logged (mean of 10 steps)")
        .legend(legend_mark(colors::LOSS_LOGGED));
    chart
        .draw_series(LineSeries::new(
            smoothed,
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

fn draw_accuracy_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    epochs: &[EpochMetrics],
) -> Drawn {
    let title = "Test accuracy after each epoch";
    let points: Vec<(f64, f64)> = epochs
        .iter()
        .filter(|record| record.test_accuracy.is_finite())
        .map(|record| (record.epoch as f64, record.test_accuracy * 100.0))
        .collect();
    if points.is_empty() {
        return draw_note(area, title, "no epoch completed");
    }
    let first_epoch = points
        .iter()
        .map(|&(epoch, _)| epoch)
        .fold(f64::MAX, f64::min);
    let last_epoch = points
        .iter()
        .map(|&(epoch, _)| epoch)
        .fold(f64::MIN, f64::max);
    let lowest = points
        .iter()
        .map(|&(_, accuracy)| accuracy)
        .fold(f64::MAX, f64::min);
    let highest = points
        .iter()
        .map(|&(_, accuracy)| accuracy)
        .fold(f64::MIN, f64::max);
    let padding = ((highest - lowest) * 0.35).max(1.0);
    let y_range = (lowest - padding).max(0.0).floor()..(highest + padding).min(100.0).ceil();
    let x_range = first_epoch - 0.5..last_epoch + 0.5;
    let epoch_count = (last_epoch - first_epoch) as usize + 1;

    let mut chart = ChartBuilder::on(area)
        .caption(title, text_style(22.0))
        .margin(14)
        .x_label_area_size(48)
        .y_label_area_size(64)
        .build_cartesian_2d(x_range, y_range)
        .map_err(describe)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .light_line_style(TRANSPARENT)
        .bold_line_style(colors::GRID)
        .label_style(text_style(14.0))
        .axis_desc_style(text_style(15.0))
        // Labels on whole epochs only (at most a dozen of them).
        .x_labels(0)
        .x_desc("epoch")
        .y_desc("test accuracy (%)")
        .y_label_formatter(&|value| format!("{value:.1}"))
        .draw()
        .map_err(describe)?;
    let label_every = epoch_count.div_ceil(12).max(1);
    for (index, &(epoch, _)) in points.iter().enumerate() {
        if index % label_every == 0 || index + 1 == points.len() {
            let (x, y) = chart.backend_coord(&(epoch, chart.y_range().start));
            let base = area.get_base_pixel();
            area.draw_text(
                &format!("{epoch:.0}"),
                &anchored(14.0, HPos::Center, VPos::Top),
                (x - base.0, y - base.1 + 6),
            )
            .map_err(describe)?;
        }
    }
    chart
        .draw_series(
            LineSeries::new(points.clone(), colors::ACCURACY.filled().stroke_width(3))
                .point_size(5),
        )
        .map_err(describe)?;
    chart
        .draw_series(
            points
                .iter()
                .enumerate()
                .filter(|(index, _)| index % label_every == 0 || index + 1 == points.len())
                .map(|(_, &(epoch, accuracy))| {
                    EmptyElement::at((epoch, accuracy))
                        + Text::new(
                            format!("{accuracy:.2}%"),
                            (0, -10),
                            anchored(14.0, HPos::Center, VPos::Bottom),
                        )
                }),
        )
        .map_err(describe)?;
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// memory: the timeline of the run and the release, step by step.

struct MemoryFigure<'a> {
    samples: &'a [TimelineSample],
}

/// A series of the memory figure: its name, colour and how to read it from a sample.
struct MemorySeries {
    name: &'static str,
    color: RGBColor,
    read: fn(&TimelineSample) -> Option<u64>,
}

const MEMORY_SERIES: [MemorySeries; 5] = [
    MemorySeries {
        name: "resident set (RSS)",
        color: colors::RESIDENT,
        read: |sample| sample.memory.resident_bytes,
    },
    MemorySeries {
        name: "live heap",
        color: colors::HEAP,
        read: |sample| sample.memory.live_heap_bytes,
    },
    MemorySeries {
        name: "mapped dataset",
        color: colors::MAPPED,
        read: |sample| Some(sample.memory.mapped_dataset_bytes),
    },
    MemorySeries {
        name: "device in use",
        color: colors::DEVICE,
        read: |sample| sample.memory.device_bytes_in_use,
    },
    MemorySeries {
        name: "device reserved",
        color: colors::DEVICE_RESERVED,
        read: |sample| sample.memory.device_bytes_reserved,
    },
];

/// The phase that starts the release (every phase sample from it on is a release step).
const RELEASE_START_PHASE: &str = "trained";

impl Figure for MemoryFigure<'_> {
    fn size(&self) -> (u32, u32) {
        (1200, 920)
    }

    fn draw<DB: DrawingBackend>(&self, root: &DrawingArea<DB, Shift>) -> Drawn {
        let (timeline_area, release_area) = root.split_vertically(500);
        draw_timeline_panel(&timeline_area, self.samples)?;
        draw_release_panel(&release_area, &release_steps(self.samples))
    }
}

/// The samples of the release panel: the first phase (the baseline) and every phase from
/// [`RELEASE_START_PHASE`] on; every phase sample when there is no such phase.
fn release_steps(samples: &[TimelineSample]) -> Vec<&TimelineSample> {
    let phases: Vec<&TimelineSample> = samples
        .iter()
        .filter(|sample| sample.phase.is_some())
        .collect();
    let release_start = phases
        .iter()
        .position(|sample| sample.phase.as_deref() == Some(RELEASE_START_PHASE));
    match release_start {
        Some(start) if start > 0 => std::iter::once(phases[0])
            .chain(phases[start..].iter().copied())
            .collect(),
        _ => phases,
    }
}

fn draw_timeline_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    samples: &[TimelineSample],
) -> Drawn {
    let last_second = samples
        .iter()
        .map(|sample| sample.memory.seconds)
        .filter(|seconds| seconds.is_finite())
        .fold(0.0, f64::max);
    let series: Vec<(&MemorySeries, Vec<(f64, f64)>)> = MEMORY_SERIES
        .iter()
        .map(|series| {
            let points = samples
                .iter()
                .filter(|sample| sample.memory.seconds.is_finite())
                .filter_map(|sample| {
                    (series.read)(sample).map(|bytes| (sample.memory.seconds, mebibytes(bytes)))
                })
                .collect::<Vec<_>>();
            (series, points)
        })
        .filter(|(_, points)| !points.is_empty())
        .collect();
    let highest = series
        .iter()
        .flat_map(|(_, points)| points.iter().map(|&(_, value)| value))
        .fold(1.0, f64::max);
    let x_end = (last_second * 1.025).max(1e-3);
    let y_end = highest * 1.1;
    let periodic = samples
        .iter()
        .filter(|sample| sample.phase.is_none())
        .count();
    let caption = format!(
        "Memory over the run ({periodic} periodic samples, {} at phase boundaries)",
        samples.len() - periodic
    );
    // The caption and, under it, the legend (shared with the release panel) on one row.
    let (header, body) = area.split_vertically(66);
    let (width, _) = header.dim_in_pixel();
    header
        .draw_text(
            &caption,
            &anchored(22.0, HPos::Center, VPos::Top),
            (width as i32 / 2, 10),
        )
        .map_err(describe)?;
    let legend: Vec<(&str, RGBColor)> = series
        .iter()
        .map(|(series, _)| (series.name, series.color))
        .collect();
    draw_legend_row(&header, &legend, 50)?;

    let mut chart = ChartBuilder::on(&body)
        .margin(14)
        .margin_top(4)
        .x_label_area_size(48)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..x_end, 0.0..y_end)
        .map_err(describe)?;
    let x_precision = axis_decimals(x_end);
    let y_precision = axis_decimals(y_end);
    chart
        .configure_mesh()
        .light_line_style(TRANSPARENT)
        .bold_line_style(colors::GRID)
        .label_style(text_style(14.0))
        .axis_desc_style(text_style(15.0))
        .x_desc("seconds since the run started")
        .y_desc("MiB")
        .x_label_formatter(&|seconds| format!("{seconds:.x_precision$}"))
        .y_label_formatter(&|mebibytes| format!("{mebibytes:.y_precision$}"))
        .draw()
        .map_err(describe)?;

    // Phase markers: a dashed line and a vertical label each; the release steps, a few
    // milliseconds apart at the end, share one marker (the panel below details them).
    let mut markers: Vec<(f64, String)> = Vec::new();
    let mut release_seen = false;
    for sample in samples {
        let Some(phase) = sample.phase.as_deref() else {
            continue;
        };
        if release_seen {
            continue;
        }
        let label = if phase == RELEASE_START_PHASE {
            release_seen = true;
            format!("{phase} → release")
        } else {
            phase.to_string()
        };
        let x_pixel = chart.backend_coord(&(sample.memory.seconds, 0.0)).0;
        match markers.last_mut() {
            // Too close to the previous marker to be read apart: one label for both.
            Some((previous_seconds, previous_label))
                if (x_pixel - chart.backend_coord(&(*previous_seconds, 0.0)).0).abs() < 18 =>
            {
                previous_label.push_str(", ");
                previous_label.push_str(&label);
            }
            _ => markers.push((sample.memory.seconds, label)),
        }
    }
    for (seconds, _) in &markers {
        chart
            .draw_series(std::iter::once(DashedPathElement::new(
                vec![(*seconds, 0.0), (*seconds, y_end)],
                5,
                4,
                colors::PHASE.stroke_width(1),
            )))
            .map_err(describe)?;
    }
    for (series, points) in series {
        // The device is read at phase boundaries only: points show where.
        let with_points = series.color == colors::DEVICE || series.color == colors::DEVICE_RESERVED;
        let line = LineSeries::new(points, series.color.stroke_width(2))
            .point_size(if with_points { 3 } else { 0 });
        chart.draw_series(line).map_err(describe)?;
    }
    // The labels last, on a light background, so that no line hides them.
    let label_style = text_style(13.0)
        .color(&colors::PHASE)
        .transform(FontTransform::Rotate90)
        .pos(Pos::new(HPos::Left, VPos::Bottom));
    for (seconds, label) in &markers {
        let (length, thickness) = body
            .estimate_text_size(label, &text_style(13.0))
            .map_err(describe)?;
        let (length, thickness) = (length as i32, thickness as i32);
        chart
            .draw_series(std::iter::once(
                EmptyElement::at((*seconds, y_end))
                    + Rectangle::new(
                        [(2, 2), (thickness + 6, length + 8)],
                        WHITE.mix(0.85).filled(),
                    )
                    + Text::new(label.clone(), (3, 4), label_style.clone()),
            ))
            .map_err(describe)?;
    }
    Ok(())
}

fn draw_release_panel<DB: DrawingBackend>(
    area: &DrawingArea<DB, Shift>,
    steps: &[&TimelineSample],
) -> Drawn {
    let title = "The release, step by step (memory right after each step)";
    if steps.is_empty() {
        return draw_note(area, title, "no phase recorded");
    }
    let series: Vec<&MemorySeries> = MEMORY_SERIES
        .iter()
        .filter(|series| steps.iter().any(|step| (series.read)(step).is_some()))
        .collect();
    let highest = steps
        .iter()
        .flat_map(|step| series.iter().filter_map(|series| (series.read)(step)))
        .map(mebibytes)
        .fold(1.0, f64::max);
    let y_end = highest * 1.15;
    let y_precision = axis_decimals(y_end);
    let mut chart = ChartBuilder::on(area)
        .caption(title, text_style(22.0))
        .margin(14)
        .x_label_area_size(52)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..steps.len() as f64, 0.0..y_end)
        .map_err(describe)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .light_line_style(TRANSPARENT)
        .bold_line_style(colors::GRID)
        .label_style(text_style(14.0))
        .axis_desc_style(text_style(15.0))
        .y_desc("MiB")
        .y_label_formatter(&|mebibytes| format!("{mebibytes:.y_precision$}"))
        .draw()
        .map_err(describe)?;

    let group_width = 0.8;
    let bar_width = group_width / series.len().max(1) as f64;
    let base = area.get_base_pixel();
    for (index, step) in steps.iter().enumerate() {
        let group_start = index as f64 + (1.0 - group_width) / 2.0;
        for (position, series) in series.iter().enumerate() {
            let left = group_start + position as f64 * bar_width;
            let right = left + bar_width * 0.92;
            match (series.read)(step) {
                Some(bytes) => {
                    let value = mebibytes(bytes);
                    chart
                        .draw_series(std::iter::once(Rectangle::new(
                            [(left, 0.0), (right, value)],
                            series.color.filled(),
                        )))
                        .map_err(describe)?;
                    chart
                        .draw_series(std::iter::once(Text::new(
                            format_value(value),
                            ((left + right) / 2.0, value),
                            anchored(11.0, HPos::Center, VPos::Bottom),
                        )))
                        .map_err(describe)?;
                }
                None => {
                    chart
                        .draw_series(std::iter::once(Text::new(
                            "n/a",
                            ((left + right) / 2.0, 0.0),
                            anchored(11.0, HPos::Center, VPos::Bottom).color(&colors::PHASE),
                        )))
                        .map_err(describe)?;
                }
            }
        }
        let name = step.phase.as_deref().unwrap_or("sample");
        let (first_line, second_line) = two_lines(name);
        let (x, y) = chart.backend_coord(&(index as f64 + 0.5, 0.0));
        let (x, y) = (x - base.0, y - base.1);
        area.draw_text(
            &first_line,
            &anchored(14.0, HPos::Center, VPos::Top),
            (x, y + 8),
        )
        .map_err(describe)?;
        if let Some(second_line) = second_line {
            area.draw_text(
                &second_line,
                &anchored(14.0, HPos::Center, VPos::Top),
                (x, y + 26),
            )
            .map_err(describe)?;
        }
    }
    Ok(())
}

// ---------------------------------------------------------------------------------------------
// Bar charts.

struct BarsFigure<'a> {
    charts: &'a [BarChart],
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
    let highest = bar_chart
        .bars
        .iter()
        .map(|bar| bar.value)
        .filter(|value| value.is_finite())
        .fold(0.0, f64::max);
    let y_end = if highest > 0.0 { highest * 1.15 } else { 1.0 };
    let mut chart = ChartBuilder::on(area)
        .caption(&bar_chart.title, text_style(20.0))
        .margin(14)
        .x_label_area_size(36)
        .y_label_area_size(70)
        .build_cartesian_2d(0.0..bar_chart.bars.len() as f64, 0.0..y_end)
        .map_err(describe)?;
    chart
        .configure_mesh()
        .disable_x_mesh()
        .x_labels(0)
        .light_line_style(TRANSPARENT)
        .bold_line_style(colors::GRID)
        .label_style(text_style(13.0))
        .axis_desc_style(text_style(14.0))
        .y_desc(bar_chart.value_label.as_str())
        .y_label_formatter(&|value| {
            format!("{value:.precision$}", precision = axis_decimals(y_end))
        })
        .draw()
        .map_err(describe)?;
    let base = area.get_base_pixel();
    for (index, bar) in bar_chart.bars.iter().enumerate() {
        let (left, right) = (index as f64 + 0.2, index as f64 + 0.8);
        if bar.value.is_finite() {
            let value = bar.value.max(0.0);
            chart
                .draw_series(std::iter::once(Rectangle::new(
                    [(left, 0.0), (right, value)],
                    colors::BAR.filled(),
                )))
                .map_err(describe)?;
        }
        let shown_at = if bar.value.is_finite() {
            bar.value.max(0.0)
        } else {
            0.0
        };
        chart
            .draw_series(std::iter::once(Text::new(
                format_value(bar.value),
                (index as f64 + 0.5, shown_at),
                anchored(13.0, HPos::Center, VPos::Bottom),
            )))
            .map_err(describe)?;
        let (x, y) = chart.backend_coord(&(index as f64 + 0.5, 0.0));
        area.draw_text(
            &bar.label,
            &anchored(14.0, HPos::Center, VPos::Top),
            (x - base.0, y - base.1 + 8),
        )
        .map_err(describe)?;
    }
    Ok(())
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn the_moving_average_keeps_the_first_value_and_follows_a_constant() {
        let averaged = exponential_moving_average(&[2.0, 2.0, 2.0], 0.8);
        assert_eq!(averaged.len(), 3);
        assert!(
            averaged.iter().all(|value| (value - 2.0).abs() < 1e-12),
            "{averaged:?}"
        );
        let averaged = exponential_moving_average(&[1.0, 0.0], 0.5);
        assert!((averaged[0] - 1.0).abs() < 1e-12);
        // (0.5 * 0.5 * 1 + 0.5 * 0) / (1 - 0.25) = 1/3
        assert!((averaged[1] - 1.0 / 3.0).abs() < 1e-12, "{averaged:?}");
    }

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
}
