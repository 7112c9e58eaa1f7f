//! `reclaim train` leaves its figures in the run folder, and `reclaim report RUN_DIR` redraws
//! them from the run's metrics files.

use std::ffi::OsStr;
use std::path::Path;

mod common;

use common::{reclaim, scratch, text};
use reclaim::train::{EpochMetrics, JsonLinesWriter, TimelineSample, read_json_lines};

const FIGURES: [&str; 4] = ["curves.svg", "curves.png", "memory.svg", "memory.png"];

/// Checks the four figures are there: SVG documents and PNG images of the expected sizes.
fn assert_figures(folder: &Path) {
    for name in FIGURES {
        let bytes =
            std::fs::read(folder.join(name)).unwrap_or_else(|error| panic!("{name}: {error}"));
        if name.ends_with(".svg") {
            let svg = text(&bytes);
            assert!(
                svg.starts_with("<svg ") && svg.trim_end().ends_with("</svg>"),
                "{name}"
            );
        } else {
            assert_eq!(&bytes[..8], b"\x89PNG\r\n\x1a\n", "{name}: PNG signature");
            assert_eq!(&bytes[12..16], b"IHDR", "{name}: IHDR first");
            let width = u32::from_be_bytes(bytes[16..20].try_into().unwrap());
            let height = u32::from_be_bytes(bytes[20..24].try_into().unwrap());
            let expected = if name == "curves.png" {
                (1200, 480)
            } else {
                (1200, 920)
            };
            assert_eq!((width, height), expected, "{name}");
        }
    }
}

/// The points of the polyline drawn in `color`.
fn polyline_points(svg: &str, color: &str) -> usize {
    let line = svg
        .lines()
        .find(|line| line.starts_with("<polyline") && line.contains(&format!("stroke=\"{color}\"")))
        .unwrap_or_else(|| panic!("no polyline in {color}"));
    line.split("points=\"")
        .nth(1)
        .unwrap()
        .split('"')
        .next()
        .unwrap()
        .split_whitespace()
        .count()
}

#[test]
fn train_draws_the_figures_and_report_redraws_them_from_the_metrics() {
    let folder = scratch("report-command", "run");
    let output = reclaim([
        OsStr::new("train"),
        OsStr::new("--limit"),
        OsStr::new("640"),
        OsStr::new("--quiet"),
        OsStr::new("--out"),
        folder.as_os_str(),
    ]);
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    assert!(stdout.contains("figures: "), "{stdout}");
    assert!(
        stdout.contains(&folder.join("memory.svg").display().to_string()),
        "{stdout}"
    );
    assert_figures(&folder);

    // The figures hold the run's numbers: each epoch's accuracy label, one point per sample.
    let epochs: Vec<EpochMetrics> = read_json_lines(folder.join("metrics.jsonl")).unwrap();
    assert_eq!(epochs.len(), 2);
    // The summary ends the output, its last line the final test accuracy.
    let accuracy = epochs[1].test_accuracy * 100.0;
    assert!(
        stdout.ends_with(&format!("test accuracy {accuracy:.2}%\n")),
        "{stdout}"
    );
    let curves = std::fs::read_to_string(folder.join("curves.svg")).unwrap();
    for epoch in &epochs {
        let label = format!("{:.2}%", epoch.test_accuracy * 100.0);
        assert!(curves.contains(&label), "curves.svg lacks {label}");
    }
    let samples: Vec<TimelineSample> = read_json_lines(folder.join("memory.jsonl")).unwrap();
    let memory = std::fs::read_to_string(folder.join("memory.svg")).unwrap();
    // The resident set's line (colour #1F77B4) has a point per sample of the timeline.
    assert_eq!(polyline_points(&memory, "#1F77B4"), samples.len());
    for phase in ["dataset opened", "evaluation 1", "model dropped"] {
        assert!(
            samples
                .iter()
                .any(|sample| sample.phase.as_deref() == Some(phase))
        );
        assert!(memory.contains(phase), "memory.svg lacks {phase}");
    }

    // Change the metrics, delete the figures: `reclaim report` draws the new numbers.
    let mut changed = epochs.clone();
    changed[1].test_accuracy = 0.4321;
    JsonLinesWriter::write_all_atomically(folder.join("metrics.jsonl"), &changed).unwrap();
    let kept_samples = &samples[..samples.len() - 3];
    JsonLinesWriter::write_all_atomically(folder.join("memory.jsonl"), kept_samples).unwrap();
    for name in FIGURES {
        std::fs::remove_file(folder.join(name)).unwrap();
    }
    let output = reclaim([OsStr::new("report"), folder.as_os_str()]);
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    assert_figures(&folder);
    let curves = std::fs::read_to_string(folder.join("curves.svg")).unwrap();
    assert!(
        curves.contains("43.21%"),
        "the redrawn curves show the changed accuracy"
    );
    let old_label = format!("{:.2}%", epochs[1].test_accuracy * 100.0);
    assert!(!curves.contains(&old_label), "{old_label} is gone");
    let memory = std::fs::read_to_string(folder.join("memory.svg")).unwrap();
    assert_eq!(polyline_points(&memory, "#1F77B4"), kept_samples.len());
    // The summary: the epochs (with the changed accuracy), the release table, the figures.
    assert!(stdout.contains("43.21%"), "{stdout}");
    assert!(stdout.contains("| dataset dropped |"), "{stdout}");
    assert!(
        stdout.contains(&folder.join("curves.png").display().to_string()),
        "{stdout}"
    );
    std::fs::remove_dir_all(folder).unwrap();
}

#[test]
fn report_on_a_missing_folder_fails_with_one_line_naming_it() {
    let folder = scratch("report-command", "missing").join("absent-run");
    let output = reclaim([OsStr::new("report"), folder.as_os_str()]);
    let stderr = text(&output.stderr);
    assert!(!output.status.success());
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(
        stderr.contains("absent-run") && stderr.contains("not a run folder"),
        "{stderr}"
    );
}

#[test]
fn report_on_a_folder_without_metrics_names_the_missing_file_and_draws_nothing() {
    let folder = scratch("report-command", "empty");
    let output = reclaim([OsStr::new("report"), folder.as_os_str()]);
    let stderr = text(&output.stderr);
    assert!(!output.status.success());
    assert_eq!(stderr.lines().count(), 1, "{stderr}");
    assert!(stderr.contains("steps.jsonl"), "{stderr}");
    assert_eq!(
        std::fs::read_dir(&folder).unwrap().count(),
        0,
        "nothing written"
    );
    std::fs::remove_dir_all(folder).unwrap();
}

#[test]
fn report_on_a_corrupt_timeline_names_the_file_and_line() {
    let folder = scratch("report-command", "corrupt");
    std::fs::write(
        folder.join("steps.jsonl"),
        "{\"step\":10,\"epoch\":1,\"loss\":0.5}\n",
    )
    .unwrap();
    std::fs::write(folder.join("metrics.jsonl"), "").unwrap();
    let valid_sample = "{\"seconds\":0.0,\"resident_bytes\":4096,\"peak_resident_bytes\":4096,\
        \"live_heap_bytes\":null,\"mapped_dataset_bytes\":0,\"device_bytes_in_use\":null,\
        \"device_bytes_reserved\":null,\"phase\":\"before loading\"}";
    std::fs::write(
        folder.join("memory.jsonl"),
        format!("{valid_sample}\n{{oops\n"),
    )
    .unwrap();
    let output = reclaim([OsStr::new("report"), folder.as_os_str()]);
    let stderr = text(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains("memory.jsonl") && stderr.contains("line 2"),
        "{stderr}"
    );
    assert!(
        !folder.join("curves.svg").exists(),
        "nothing drawn before the inputs are read"
    );
    std::fs::remove_dir_all(folder).unwrap();
}
