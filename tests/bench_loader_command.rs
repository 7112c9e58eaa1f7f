//! `reclaim bench loader --json`: one JSON object with the figures the loader's issue names.

mod common;

use common::{reclaim, text};

#[test]
fn bench_loader_json_reports_throughput_first_batch_and_memory() {
    let output = reclaim([
        "bench",
        "loader",
        "--epochs",
        "1",
        "--workers",
        "2",
        "--json",
    ]);
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    let stdout = text(&output.stdout);
    assert_eq!(stdout.lines().count(), 1, "{stdout}");
    let report: serde_json::Value = serde_json::from_str(&stdout).expect("one JSON object");
    assert_eq!(report["backend"], "ndarray");
    assert_eq!(report["workers"], 2);
    assert_eq!(
        report["samples"], 60_000,
        "one epoch of MNIST's train split"
    );
    assert_eq!(report["epoch_ms"].as_array().map(Vec::len), Some(1));
    assert!(report["samples_per_s"].as_f64().unwrap() > 0.0, "{report}");
    assert!(report["first_batch_ms"].as_f64().unwrap() > 0.0, "{report}");
    assert!(
        report["peak_loader_bytes"].as_u64().unwrap() > 0,
        "{report}"
    );
    assert_eq!(
        report["loader_bytes_after"], 0,
        "the loader gave everything back"
    );
}
