//! The figures of a run are drawn from its metrics files: synthetic files with distinctive
//! values go in, and the SVG's polylines and labels, and the PNG's header, are checked against
//! them.

use std::path::Path;

use reclaim_memory::MemorySnapshot;
use reclaim_records::{EpochMetrics, JsonLinesWriter, RunFile, StepMetrics, TimelineSample};
use reclaim_report::{Bar, BarChart, PlotPaths, ReportError, draw_bar_charts, draw_run_plots};

const MIB: u64 = 1024 * 1024;
/// The colours of the series (see `draw::colors`), as the SVG writes them.
const LOSS_LOGGED: &str = "#9EBEDE";
const ACCURACY: &str = "#228B22";
const RESIDENT: &str = "#1F77B4";
const MAPPED: &str = "#2CA02C";

fn steps(count: usize) -> Vec<StepMetrics> {
    (1..=count)
        .map(|index| StepMetrics {
            step: index * 10,
            epoch: if index <= count / 2 { 1 } else { 2 },
            // Decreasing with a distinctive wiggle.
            loss: 2.0 / (1.0 + index as f64 * 0.3) + 0.05 * (index % 3) as f64,
        })
        .collect()
}

fn epochs(accuracies: &[f64]) -> Vec<EpochMetrics> {
    accuracies
        .iter()
        .enumerate()
        .map(|(index, &accuracy)| EpochMetrics {
            epoch: index + 1,
            train_loss: 0.5,
            test_loss: 0.4,
            test_accuracy: accuracy,
            train_seconds: 3.0,
            evaluation_seconds: 0.5,
            samples_per_second: 5000.0,
            resident_bytes: Some(200 * MIB),
            device_bytes_in_use: None,
        })
        .collect()
}

fn sample(seconds: f64, resident_mib: u64, mapped_mib: u64, phase: Option<&str>) -> TimelineSample {
    TimelineSample {
        memory: MemorySnapshot {
            seconds,
            resident_bytes: Some(resident_mib * MIB),
            peak_resident_bytes: Some(300 * MIB),
            live_heap_bytes: Some(resident_mib * MIB / 3),
            mapped_dataset_bytes: mapped_mib * MIB,
            device_bytes_in_use: phase.map(|_| 2 * MIB),
            device_bytes_reserved: phase.map(|_| 4 * MIB),
        },
        phase: phase.map(|phase| phase.to_string().into()),
    }
}

/// 40 periodic samples and the phases of a two-epoch run, release included.
fn timeline() -> Vec<TimelineSample> {
    let mut samples = vec![
        sample(0.0, 120, 0, Some("before loading")),
        sample(0.2, 121, 53, Some("dataset opened")),
        sample(0.3, 150, 53, Some("epoch 1")),
    ];
    samples
        .extend((0..40).map(|index| sample(0.5 + index as f64 * 0.25, 180 + index % 5, 53, None)));
    samples.extend([
        sample(5.0, 181, 53, Some("evaluation 1")),
        sample(6.0, 182, 53, Some("epoch 2")),
        sample(10.0, 183, 53, Some("evaluation 2")),
        sample(10.6, 184, 53, Some("trained")),
        sample(10.601, 170, 53, Some("loader scope ended")),
        sample(10.602, 131, 0, Some("dataset dropped")),
        sample(10.603, 127, 0, Some("device memory cleaned up")),
        sample(10.604, 125, 0, Some("model dropped")),
    ]);
    samples.sort_by(|left, right| left.memory.seconds.total_cmp(&right.memory.seconds));
    samples
}

fn write_run_folder(folder: &Path, step_count: usize, accuracies: &[f64]) {
    JsonLinesWriter::write_all_atomically(RunFile::StepMetrics.path_in(folder), &steps(step_count))
        .unwrap();
    JsonLinesWriter::write_all_atomically(
        RunFile::EpochMetrics.path_in(folder),
        &epochs(accuracies),
    )
    .unwrap();
    JsonLinesWriter::write_all_atomically(RunFile::MemoryTimeline.path_in(folder), &timeline())
        .unwrap();
}

/// The points of every polyline drawn in `color`.
fn polylines(svg: &str, color: &str) -> Vec<Vec<(f64, f64)>> {
    svg.lines()
        .filter(|line| {
            line.starts_with("<polyline") && line.contains(&format!("stroke=\"{color}\""))
        })
        .map(|line| {
            let points = line
                .split("points=\"")
                .nth(1)
                .unwrap()
                .split('"')
                .next()
                .unwrap();
            points
                .split_whitespace()
                .map(|pair| {
                    let (x, y) = pair.split_once(',').unwrap();
                    (x.parse().unwrap(), y.parse().unwrap())
                })
                .collect()
        })
        .collect()
}

/// The one polyline drawn in `color`.
fn polyline(svg: &str, color: &str) -> Vec<(f64, f64)> {
    let mut found = polylines(svg, color);
    assert_eq!(found.len(), 1, "one polyline in {color}");
    found.remove(0)
}

/// Checks that the pixel heights are an affine (decreasing) function of the values: the line
/// is the data, not a fixed picture.
fn assert_heights_follow(points: &[(f64, f64)], values: &[f64]) {
    assert_eq!(points.len(), values.len());
    // The lowest and highest values are the references (the largest pixel distance).
    let by_value = |left: &&f64, right: &&f64| left.total_cmp(right);
    let lowest = values
        .iter()
        .position(|value| value == values.iter().min_by(by_value).unwrap());
    let highest = values
        .iter()
        .position(|value| value == values.iter().max_by(by_value).unwrap());
    let (first, last) = (lowest.unwrap(), highest.unwrap());
    let scale = (points[last].1 - points[first].1) / (values[last] - values[first]);
    assert!(scale < 0.0, "higher values are drawn higher up");
    for (point, value) in points.iter().zip(values) {
        let expected = points[first].1 + (value - values[first]) * scale;
        assert!(
            (point.1 - expected).abs() <= 1.5,
            "{point:?} for {value}: expected y {expected}"
        );
    }
    assert!(
        points.windows(2).all(|pair| pair[0].0 <= pair[1].0),
        "x grows with the step"
    );
}

fn png_dimensions(path: &Path) -> (u32, u32) {
    let decoder = png::Decoder::new(std::io::BufReader::new(std::fs::File::open(path).unwrap()));
    let mut reader = decoder.read_info().unwrap();
    let mut pixels = vec![0; reader.output_buffer_size().unwrap()];
    let frame = reader.next_frame(&mut pixels).unwrap();
    // Not a blank page: many distinct colours.
    let mut colours = std::collections::HashSet::new();
    for pixel in pixels[..frame.buffer_size()].chunks(3) {
        colours.insert((pixel[0], pixel[1], pixel[2]));
    }
    assert!(
        colours.len() > 20,
        "{}: {} colours",
        path.display(),
        colours.len()
    );
    (frame.width, frame.height)
}

fn assert_is_svg(svg: &str) {
    assert!(svg.starts_with("<svg "), "{}", &svg[..svg.len().min(80)]);
    assert!(svg.contains("xmlns=\"http://www.w3.org/2000/svg\""));
    assert!(svg.trim_end().ends_with("</svg>"));
}

#[test]
fn run_plots_are_drawn_from_the_metrics_files() {
    let folder = tempfile::tempdir().unwrap();
    write_run_folder(folder.path(), 37, &[0.1234, 0.5678, 0.9731]);
    let files = draw_run_plots(folder.path()).unwrap();
    assert_eq!(files.curves, PlotPaths::in_folder(folder.path(), "curves"));
    assert_eq!(files.memory.png, folder.path().join("memory.png"));

    let curves = std::fs::read_to_string(&files.curves.svg).unwrap();
    assert_is_svg(&curves);
    let logged = polyline(&curves, LOSS_LOGGED);
    let losses: Vec<f64> = steps(37).iter().map(|step| step.loss).collect();
    assert_heights_follow(&logged, &losses);
    assert_heights_follow(&polyline(&curves, ACCURACY), &[12.34, 56.78, 97.31]);
    for label in [
        "12.34%",
        "56.78%",
        "97.31%",
        "epoch 2 →",
        "Training loss per step",
    ] {
        assert!(curves.contains(label), "curves.svg lacks {label}");
    }

    let memory = std::fs::read_to_string(&files.memory.svg).unwrap();
    assert_is_svg(&memory);
    let samples = timeline();
    let resident: Vec<f64> = samples
        .iter()
        .map(|sample| sample.memory.resident_bytes.unwrap() as f64)
        .collect();
    assert_heights_follow(&polyline(&memory, RESIDENT), &resident);
    let mapped = polyline(&memory, MAPPED);
    assert_eq!(mapped.len(), samples.len());
    // The release is the drop it is: mapped dataset bytes fall to the axis at the end.
    assert!(
        mapped.last().unwrap().1 > mapped[mapped.len() - 4].1 + 50.0,
        "{mapped:?}"
    );
    for label in [
        "evaluation 1",
        "epoch 2",
        "trained → release",
        "loader",
        "scope ended",
        "dataset",
        "device memory",
        "cleaned up",
        "model dropped",
        "mapped dataset",
        "device in use",
        "40 periodic samples, 11 at phase boundaries",
        // Bar labels of the release panel, in MiB: RSS at "trained" and after "model dropped".
        ">\n184\n<",
        ">\n125\n<",
    ] {
        assert!(memory.contains(label), "memory.svg lacks {label:?}");
    }

    assert_eq!(png_dimensions(&files.curves.png), (1200, 480));
    assert_eq!(png_dimensions(&files.memory.png), (1200, 920));
}

#[test]
fn redrawing_after_the_metrics_change_draws_the_new_values() {
    let folder = tempfile::tempdir().unwrap();
    write_run_folder(folder.path(), 20, &[0.4242, 0.8181]);
    let files = draw_run_plots(folder.path()).unwrap();
    let before = std::fs::read_to_string(&files.curves.svg).unwrap();
    assert!(before.contains("81.81%"));
    assert_eq!(polyline(&before, LOSS_LOGGED).len(), 20);

    write_run_folder(folder.path(), 30, &[0.3333, 0.6666, 0.7777, 0.8888]);
    draw_run_plots(folder.path()).unwrap();
    let after = std::fs::read_to_string(&files.curves.svg).unwrap();
    assert!(!after.contains("81.81%"));
    assert!(after.contains("88.88%"));
    assert_eq!(polyline(&after, LOSS_LOGGED).len(), 30);
    assert_eq!(polyline(&after, ACCURACY).len(), 4);
    // Nothing but the run's files and the figures: no temporary file is left behind.
    let mut names: Vec<String> = std::fs::read_dir(folder.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
        .collect();
    names.sort();
    assert_eq!(
        names,
        [
            "curves.png",
            "curves.svg",
            "memory.jsonl",
            "memory.png",
            "memory.svg",
            "metrics.jsonl",
            "steps.jsonl"
        ]
    );
}

#[test]
fn an_empty_timeline_is_an_error_naming_the_file_and_nothing_is_drawn() {
    let folder = tempfile::tempdir().unwrap();
    write_run_folder(folder.path(), 10, &[0.5]);
    std::fs::write(RunFile::MemoryTimeline.path_in(folder.path()), "").unwrap();
    let error = draw_run_plots(folder.path()).unwrap_err();
    assert!(
        matches!(&error, ReportError::NothingToDraw { path, .. } if path.ends_with("memory.jsonl")),
        "{error:?}"
    );
    assert!(error.to_string().contains("memory.jsonl"), "{error}");
    assert!(!folder.path().join("curves.svg").exists());
    assert!(!folder.path().join("memory.png").exists());
}

#[test]
fn a_missing_or_corrupt_metrics_file_is_an_error_naming_it() {
    let folder = tempfile::tempdir().unwrap();
    let error = draw_run_plots(folder.path()).unwrap_err();
    assert!(
        matches!(&error, ReportError::Io { path, .. } if path.ends_with("steps.jsonl")),
        "{error:?}"
    );

    write_run_folder(folder.path(), 10, &[0.5]);
    std::fs::write(
        RunFile::EpochMetrics.path_in(folder.path()),
        "{\"epoch\": 1}\n",
    )
    .unwrap();
    let error = draw_run_plots(folder.path()).unwrap_err();
    let message = error.to_string();
    assert!(
        message.contains("metrics.jsonl") && message.contains("line 1"),
        "{message}"
    );
}

#[test]
fn a_run_without_steps_or_epochs_is_an_error() {
    let folder = tempfile::tempdir().unwrap();
    write_run_folder(folder.path(), 0, &[]);
    let error = draw_run_plots(folder.path()).unwrap_err();
    assert!(
        matches!(&error, ReportError::NothingToDraw { path, .. } if path.ends_with("steps.jsonl")),
        "{error:?}"
    );
}

#[test]
fn bar_charts_show_every_value_and_mark_missing_ones() {
    let folder = tempfile::tempdir().unwrap();
    let paths = PlotPaths::in_folder(folder.path(), "bench-train");
    let bar = |label: &str, value: f64| Bar {
        label: label.into(),
        value,
    };
    let charts = [
        BarChart {
            title: "Throughput".into(),
            value_label: "samples per second".into(),
            bars: vec![bar("ndarray", 9123.0), bar("flex", 4321.0)],
        },
        BarChart {
            title: "Step time".into(),
            value_label: "milliseconds".into(),
            bars: vec![bar("ndarray", 7.25), bar("flex", f64::NAN)],
        },
    ];
    draw_bar_charts(&charts, &paths).unwrap();
    let svg = std::fs::read_to_string(&paths.svg).unwrap();
    assert_is_svg(&svg);
    for label in [
        ">\n9123\n<",
        ">\n4321\n<",
        ">\n7.25\n<",
        ">\nn/a\n<",
        "Throughput",
        "ndarray",
        "flex",
    ] {
        assert!(svg.contains(label), "bench-train.svg lacks {label:?}");
    }
    // Bar heights are proportional to the values.
    let heights: Vec<f64> = svg
        .lines()
        .filter(|line| line.starts_with("<rect") && line.contains("fill=\"#4682B4\""))
        .map(|line| {
            let attribute = line.split("height=\"").nth(1).unwrap();
            attribute.split('"').next().unwrap().parse().unwrap()
        })
        .collect();
    assert_eq!(heights.len(), 3, "the missing value has no bar");
    assert!(
        (heights[0] / heights[1] - 9123.0 / 4321.0).abs() < 0.03,
        "{heights:?}"
    );
    assert_eq!(png_dimensions(&paths.png), (840, 440));

    let error = draw_bar_charts(&[], &paths).unwrap_err();
    assert!(matches!(error, ReportError::NothingToDraw { .. }));
}
