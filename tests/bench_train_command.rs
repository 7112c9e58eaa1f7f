//! `reclaim bench train`: a short training per compiled backend in one process, a table and a
//! bar chart; backends not compiled in are reported as skipped with the feature to enable.

use std::ffi::OsStr;

mod common;

use common::{reclaim, scratch, text};

#[test]
fn bench_train_measures_compiled_backends_and_skips_the_others() {
    let folder = scratch("bench-train-command", "out");
    // The default CPU backend (compiled into every build) and CUDA (compiled into this one only
    // with its feature).
    let cpu = reclaim_train::BackendChoice::default_cpu().name();
    let backends = format!("{cpu},cuda");
    let output = reclaim([
        OsStr::new("bench"),
        OsStr::new("train"),
        OsStr::new("--backends"),
        OsStr::new(&backends),
        OsStr::new("--steps"),
        OsStr::new("4"),
        OsStr::new("--batch-size"),
        OsStr::new("32"),
        OsStr::new("--step"),
        OsStr::new("dense"),
        OsStr::new("--out"),
        folder.as_os_str(),
    ]);
    let stdout = text(&output.stdout);
    let stderr = text(&output.stderr);
    assert!(
        output.status.success(),
        "stdout: {stdout}\nstderr: {stderr}"
    );
    assert!(
        stdout.contains("4 steps of 32 samples (128 MNIST training samples"),
        "{stdout}"
    );
    assert!(stdout.contains("step dense,"), "{stdout}");

    // The CPU backend's row holds numbers: samples/s, ms/step, accuracy, heap held, device,
    // after.
    let row = stdout
        .lines()
        .find(|line| line.starts_with(&format!("| {cpu} |")))
        .unwrap_or_else(|| panic!("no {cpu} row: {stdout}"));
    let cells: Vec<&str> = row.trim_matches('|').split('|').map(str::trim).collect();
    assert_eq!(cells.len(), 7, "{row}");
    let samples_per_second: f64 = cells[1].parse().unwrap();
    let milliseconds_per_step: f64 = cells[2].parse().unwrap();
    assert!(
        samples_per_second > 0.0 && milliseconds_per_step > 0.0,
        "{row}"
    );
    assert!(cells[3].ends_with('%') && cells[4].ends_with("iB"), "{row}");
    if cfg!(feature = "cuda") {
        assert!(
            stdout.lines().any(|line| line.starts_with("| cuda | ")),
            "{stdout}"
        );
    } else {
        assert!(
            stdout.contains(
                "| cuda | skipped: not compiled into this build (rebuild with `--features cuda`)"
            ),
            "{stdout}"
        );
    }

    // The table and the chart are written; the chart's throughput label is the table's.
    let table = std::fs::read_to_string(folder.join("bench-train.md")).unwrap();
    assert!(table.contains(row), "{table}");
    let svg = std::fs::read_to_string(folder.join("bench-train.svg")).unwrap();
    assert!(
        svg.contains(&format!(">\n{}\n<", cells[1])),
        "the chart shows {}",
        cells[1]
    );
    let png = std::fs::read(folder.join("bench-train.png")).unwrap();
    assert_eq!(&png[..8], b"\x89PNG\r\n\x1a\n");
    // Each backend's run folder is kept, with its own figures' inputs.
    assert!(folder.join(cpu).join("metrics.jsonl").is_file());
    assert!(!folder.join("cuda").exists() || cfg!(feature = "cuda"));
    std::fs::remove_dir_all(folder).unwrap();
}
