//! `reclaim bench loader --json`: one JSON object with the figures the loader's issue names.

mod common;

use std::path::Path;

use common::{reclaim, scratch, text};

/// CIFAR-10's five training files and its test file in `folder`, `records_per_file` records
/// each (label `record % 10`, pixels a pattern).
fn write_cifar10_files(folder: &Path, records_per_file: usize) {
    let names = (1..=5)
        .map(|number| format!("data_batch_{number}.bin"))
        .chain(["test_batch.bin".to_owned()]);
    for name in names {
        let mut bytes = Vec::new();
        for record in 0..records_per_file {
            bytes.push((record % 10) as u8);
            bytes.extend((0..3072).map(|pixel| ((pixel + record) % 251) as u8));
        }
        std::fs::write(folder.join(name), bytes).unwrap();
    }
}

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
    assert_eq!(
        report["backend"],
        reclaim_train::BackendChoice::default_cpu().name(),
        "the default CPU backend"
    );
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

#[test]
fn bench_loader_runs_cifar10_with_its_augmentation_and_reports_it() {
    let folder = scratch("bench_loader_command", "cifar10");
    write_cifar10_files(&folder, 7);
    let data = folder.to_str().unwrap();
    let output = reclaim([
        "bench",
        "loader",
        "--dataset",
        "cifar10",
        "--data",
        data,
        "--augment",
        "--epochs",
        "2",
        "--workers",
        "2",
        "--json",
    ]);
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    let report: serde_json::Value =
        serde_json::from_str(&text(&output.stdout)).expect("one JSON object");
    assert_eq!(report["dataset"], "cifar-10");
    assert_eq!(report["image_shape"], serde_json::json!([3, 32, 32]));
    assert_eq!(report["dataset_samples"], 35);
    assert_eq!(report["samples"], 70, "two epochs of 5 x 7 records");
    assert_eq!(report["augmentation"]["crop_padding"], 4);
    assert_eq!(report["augmentation"]["horizontal_flip"], true);
    assert_eq!(report["pixel_format"], "channel-normalized f32");
    assert!(
        report["peak_loader_bytes"].as_u64().unwrap() > 0,
        "{report}"
    );
    assert!(
        report["process_peak_rss_bytes"].as_u64().unwrap() > 0,
        "{report}"
    );

    let text_output = reclaim([
        "bench",
        "loader",
        "--dataset",
        "cifar10",
        "--data",
        data,
        "--epochs",
        "1",
    ]);
    let stdout = text(&text_output.stdout);
    assert!(
        text_output.status.success(),
        "stderr: {}",
        text(&text_output.stderr)
    );
    assert!(
        stdout.contains("3x32x32") && stdout.contains("augmentation none"),
        "{stdout}"
    );
}

#[test]
fn bench_loader_names_the_path_of_a_missing_or_broken_cifar_folder() {
    let folder = scratch("bench_loader_command", "cifar10-broken");
    let data = folder.to_str().unwrap();
    let missing = reclaim(["bench", "loader", "--dataset", "cifar10", "--data", data]);
    let stderr = text(&missing.stderr);
    assert_eq!(missing.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(data) && !stderr.contains("panicked"),
        "{stderr}"
    );

    write_cifar10_files(&folder, 3);
    let short_file = folder.join("data_batch_3.bin");
    std::fs::write(&short_file, [0u8; 100]).unwrap();
    let broken = reclaim(["bench", "loader", "--dataset", "cifar10", "--data", data]);
    let stderr = text(&broken.stderr);
    assert_eq!(broken.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains(short_file.to_str().unwrap()) && !stderr.contains("panicked"),
        "{stderr}"
    );

    let unknown = reclaim(["bench", "loader", "--dataset", "svhn"]);
    let stderr = text(&unknown.stderr);
    assert_eq!(unknown.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("cifar-100"), "{stderr}");
}
