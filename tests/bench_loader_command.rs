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

#[test]
fn sigterm_stops_the_loader_bench_with_status_130() {
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_reclaim"))
        .args(["bench", "loader", "--epochs", "100000"])
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // Long enough for the handler to be installed (the bench then runs for hours).
    std::thread::sleep(std::time::Duration::from_millis(1500));
    assert!(child.try_wait().unwrap().is_none(), "the bench ended early");
    let sent = std::process::Command::new("kill")
        .args(["-TERM", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    let output = child.wait_with_output().unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.starts_with("interrupted: the loader bench stopped"),
        "{stderr}"
    );
}
