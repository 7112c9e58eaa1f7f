//! `reclaim inspect` on a valid file (raw and .gz), a dataset folder, and malformed inputs.

use std::path::Path;
use std::process::Output;

mod common;

use common::{reclaim, scratch, text};
use reclaim::dataset::{workspace_data_folder, write_idx};

fn inspect(arguments: &[&Path]) -> Output {
    reclaim(std::iter::once(Path::new("inspect")).chain(arguments.iter().copied()))
}

#[test]
fn valid_raw_file() {
    let folder = scratch("inspect-command", "raw");
    let path = folder.join("values.idx");
    write_idx(&path, &[2, 3], &[1i16, -2, 3, -4, 5, -6]).unwrap();
    let output = inspect(&[&path]);
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    assert!(
        stdout.contains("element type: i16 (0x0b, 2 bytes)"),
        "{stdout}"
    );
    assert!(stdout.contains("shape: 2 x 3 (rank 2)"), "{stdout}");
    assert!(stdout.contains("elements: 6"), "{stdout}");
    assert!(
        stdout.contains("bytes: 12 of data, 12 of header, 24 in all"),
        "{stdout}"
    );
    assert!(stdout.contains("values: min -6, max 5"), "{stdout}");
    std::fs::remove_dir_all(folder).unwrap();
}

#[test]
fn valid_gz_file_from_the_vendored_mnist() {
    let path = workspace_data_folder()
        .join("mnist")
        .join("t10k-labels-idx1-ubyte.gz");
    let output = inspect(&[&path]);
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    assert!(
        stdout.contains("element type: u8 (0x08, 1 byte)"),
        "{stdout}"
    );
    assert!(stdout.contains("shape: 10000 (rank 1)"), "{stdout}");
    assert!(
        stdout.contains("bytes: 10000 of data, 8 of header, 10008 in all"),
        "{stdout}"
    );
    assert!(stdout.contains("decompressed: "), "{stdout}");
    // MNIST's test label counts.
    assert!(
        stdout.contains("histogram: 0: 980, 1: 1135, 2: 1032"),
        "{stdout}"
    );
}

#[test]
fn dataset_folder() {
    let folder = workspace_data_folder().join("mnist");
    let output = inspect(&[&folder]);
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "stderr: {}", text(&output.stderr));
    assert!(stdout.contains("train: 60000 images of 28 x 28 u8, 60000 labels in 10 classes"));
    assert!(stdout.contains("test: 10000 images of 28 x 28 u8, 10000 labels in 10 classes"));
    assert!(
        stdout.contains("label histogram: 0: 5923, 1: 6742"),
        "{stdout}"
    );
    assert!(
        stdout.contains("label histogram: 0: 980, 1: 1135"),
        "{stdout}"
    );
}

#[test]
fn folder_with_bad_labels_fails() {
    let folder = scratch("inspect-command", "bad-labels");
    write_idx(folder.join("t10k-images-idx3-ubyte"), &[2, 2, 2], &[0u8; 8]).unwrap();
    write_idx(folder.join("t10k-labels-idx1-ubyte"), &[2], &[3u8, 12]).unwrap();
    let output = inspect(&[&folder]);
    let stderr = text(&output.stderr);
    assert!(!output.status.success());
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains("t10k-labels-idx1-ubyte"), "{stderr}");
    assert!(stderr.contains("label 12 at index 1"), "{stderr}");
    std::fs::remove_dir_all(folder).unwrap();
}

#[test]
fn malformed_files_fail_with_one_line_naming_the_file_and_fault() {
    let folder = scratch("inspect-command", "malformed");
    let cases: [(&str, Vec<u8>, &str); 4] = [
        (
            "bad-magic.idx",
            vec![0x1F, 0x8B, 8, 1, 0, 0, 0, 0],
            "bad IDX magic number",
        ),
        (
            "short.idx",
            vec![0, 0, 8, 1, 0, 0, 0, 9, 1, 2],
            "IDX data truncated",
        ),
        (
            "long.idx",
            vec![0, 0, 8, 1, 0, 0, 0, 1, 1, 2],
            "trailing bytes",
        ),
        ("tiny.idx", vec![0, 0], "too short for an IDX header"),
    ];
    for (name, bytes, fault) in cases {
        let path = folder.join(name);
        std::fs::write(&path, bytes).unwrap();
        let output = inspect(&[&path]);
        let stderr = text(&output.stderr);
        assert!(!output.status.success(), "{name} must fail");
        assert!(output.stdout.is_empty(), "{name}: nothing on stdout");
        assert_eq!(stderr.lines().count(), 1, "{name}: one line: {stderr}");
        assert!(
            stderr.contains(&path.display().to_string()),
            "{name}: {stderr}"
        );
        assert!(stderr.contains(fault), "{name}: {stderr}");
    }
    let missing = folder.join("absent.idx");
    let output = inspect(&[&missing]);
    assert!(!output.status.success());
    assert!(text(&output.stderr).contains("absent.idx: no such file"));
    std::fs::remove_dir_all(folder).unwrap();
}

#[test]
fn a_fifo_is_refused_without_blocking() {
    let folder = scratch("inspect-command", "fifo");
    let fifo = folder.join("labels.idx");
    let made = std::process::Command::new("mkfifo")
        .arg(&fifo)
        .status()
        .unwrap();
    assert!(made.success());
    let mut child = std::process::Command::new(env!("CARGO_BIN_EXE_reclaim"))
        .arg("inspect")
        .arg(&fifo)
        .stdout(std::process::Stdio::piped())
        .stderr(std::process::Stdio::piped())
        .spawn()
        .unwrap();
    // A regression (an open that waits for a writer) fails here instead of hanging the tests.
    let deadline = std::time::Instant::now() + std::time::Duration::from_secs(20);
    while child.try_wait().unwrap().is_none() {
        if std::time::Instant::now() > deadline {
            child.kill().unwrap();
            panic!("reclaim inspect blocked on a FIFO");
        }
        std::thread::sleep(std::time::Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(
        stderr.contains(&format!(
            "{}: is a named pipe (FIFO), not a regular file",
            fifo.display()
        )),
        "{stderr}"
    );
    std::fs::remove_dir_all(folder).unwrap();
}
