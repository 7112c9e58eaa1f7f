//! `reclaim inspect` on a valid file (raw and .gz), a dataset folder, and malformed inputs; CIFAR-10
//! and CIFAR-100 record files and folders (generated here), the variant told by the file names or
//! forced by `--dataset`, `--verify`, and malformed record files.

use std::path::Path;
use std::process::Output;

mod common;

use common::{reclaim, scratch, text};
use reclaim::dataset::{
    Split,
    catalogue::workspace_data_folder,
    cifar::{CIFAR_IMAGE_BYTES, CifarRecord, CifarVariant, write_cifar_batch},
    idx::write_idx,
};

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

/// Writes a record file of `variant` at `path`: one record per label (CIFAR-100: coarse label
/// `label % 20`, fine label `label`).
fn write_cifar(path: &Path, variant: CifarVariant, labels: &[u8]) {
    let image = [7u8; CIFAR_IMAGE_BYTES];
    let records: Vec<CifarRecord<'_>> = labels
        .iter()
        .map(|&label| match variant {
            CifarVariant::Cifar10 => CifarRecord::cifar10(label, &image),
            CifarVariant::Cifar100 => CifarRecord::cifar100(label % 20, label, &image),
        })
        .collect();
    write_cifar_batch(path, variant, &records).unwrap();
}

/// Writes every record file of `variant` into `folder` (created): train files of records
/// labelled 0, 1, 2 (each file), test file of 3 and 9.
fn write_cifar_folder(folder: &Path, variant: CifarVariant) {
    std::fs::create_dir_all(folder).unwrap();
    for name in variant.file_names(Split::Train) {
        write_cifar(&folder.join(name), variant, &[0, 1, 2]);
    }
    for name in variant.file_names(Split::Test) {
        write_cifar(&folder.join(name), variant, &[3, 9]);
    }
}

/// Runs `reclaim inspect` with these arguments; asserts it succeeded; returns its stdout.
fn inspect_ok(arguments: &[&Path]) -> String {
    let output = inspect(arguments);
    assert!(
        output.status.success(),
        "{arguments:?}: stderr: {}",
        text(&output.stderr)
    );
    assert!(output.stderr.is_empty(), "{}", text(&output.stderr));
    text(&output.stdout)
}

#[test]
fn cifar10_record_file_is_told_by_its_name() {
    let folder = scratch("inspect-command", "cifar10-file");
    let path = folder.join("data_batch_2.bin");
    write_cifar(&path, CifarVariant::Cifar10, &[0, 9, 9, 3]);
    let stdout = inspect_ok(&[&path]);
    assert!(
        stdout.contains(&format!("file: {}\n", path.display())),
        "{stdout}"
    );
    assert!(
        stdout.contains("dataset: CIFAR-10 binary (told by the file name), train split"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "records: 4 of 3073 bytes (1 label byte, then 3072 pixel bytes), 12292 bytes in all"
        ),
        "{stdout}"
    );
    assert!(stdout.contains("image shape: 3 x 32 x 32 u8"), "{stdout}");
    assert!(stdout.contains("labels: 10 classes\n"), "{stdout}");
    assert!(
        stdout.contains(
            "label histogram: 0 airplane: 1, 1 automobile: 0, 2 bird: 0, 3 cat: 1, 4 deer: 0, \
             5 dog: 0, 6 frog: 0, 7 horse: 0, 8 ship: 0, 9 truck: 2\n"
        ),
        "{stdout}"
    );
    std::fs::remove_dir_all(folder).unwrap();
}

#[test]
fn cifar100_record_file_has_fine_and_coarse_histograms() {
    let folder = scratch("inspect-command", "cifar100-file");
    let path = folder.join("test.bin");
    write_cifar(&path, CifarVariant::Cifar100, &[99, 99, 21, 0]);
    let stdout = inspect_ok(&[&path]);
    assert!(
        stdout.contains("dataset: CIFAR-100 binary (told by the file name), test split"),
        "{stdout}"
    );
    assert!(
        stdout.contains("records: 4 of 3074 bytes (2 label bytes (coarse, then fine)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("labels: 100 fine and 20 coarse classes\n"),
        "{stdout}"
    );
    let fine = stdout
        .lines()
        .find(|line| line.starts_with("fine label histogram: "))
        .expect("a fine histogram");
    assert_eq!(fine.split(", ").count(), 100, "{fine}");
    assert!(fine.starts_with("fine label histogram: 0 apple: 1, 1 aquarium_fish: 0"));
    assert!(fine.contains(", 21 chimpanzee: 1,"), "{fine}");
    assert!(fine.ends_with(", 99 worm: 2"), "{fine}");
    let coarse = stdout
        .lines()
        .find(|line| line.starts_with("coarse label histogram: "))
        .expect("a coarse histogram");
    assert_eq!(coarse.split(", ").count(), 20, "{coarse}");
    // Coarse labels are the fine ones modulo 20 here: 19, 19, 1, 0.
    assert!(
        coarse.starts_with("coarse label histogram: 0 aquatic_mammals: 1, 1 fish: 1, 2 flowers: 0"),
        "{coarse}"
    );
    assert!(coarse.ends_with(", 19 vehicles_2: 2"), "{coarse}");
    std::fs::remove_dir_all(folder).unwrap();
}

#[test]
fn dataset_option_forces_the_variant_of_a_renamed_file() {
    let folder = scratch("inspect-command", "cifar-forced");
    let path = folder.join("my-cifar.bin");
    write_cifar(&path, CifarVariant::Cifar100, &[5, 6]);
    // Not a CIFAR file name: read as IDX, which fails, with a hint.
    let output = inspect(&[&path]);
    let stderr = text(&output.stderr);
    assert!(!output.status.success());
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(stderr.contains("--dataset cifar10 or cifar100"), "{stderr}");
    assert!(stderr.contains("bad IDX magic number"), "{stderr}");
    for name in ["cifar100", "cifar-100", "CIFAR_100"] {
        let output = reclaim([
            "inspect".as_ref(),
            path.as_os_str(),
            "--dataset".as_ref(),
            name.as_ref(),
        ]);
        let stdout = text(&output.stdout);
        assert!(output.status.success(), "{name}: {}", text(&output.stderr));
        assert!(
            stdout.contains("dataset: CIFAR-100 binary (as --dataset says)\n"),
            "{stdout}"
        );
        assert!(stdout.contains("records: 2 of 3074 bytes"), "{stdout}");
    }
    // Forced to the wrong variant: 2 x 3074 bytes are not whole 3073-byte records.
    let output = reclaim([
        "inspect".as_ref(),
        path.as_os_str(),
        "--dataset".as_ref(),
        "cifar10".as_ref(),
    ]);
    let stderr = text(&output.stderr);
    assert!(!output.status.success());
    assert!(
        stderr.contains(&format!(
            "{}: 6148 bytes is not a whole, non-zero number of 3073-byte CIFAR-10 records",
            path.display()
        )),
        "{stderr}"
    );
    // An unknown name is refused by the parser (exit status 2), naming the known ones.
    let output = reclaim([
        "inspect".as_ref(),
        path.as_os_str(),
        "--dataset".as_ref(),
        "svhn".as_ref(),
    ]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(2), "{stderr}");
    assert!(stderr.contains("unknown dataset"), "{stderr}");
    assert!(stderr.contains("cifar-100"), "{stderr}");
    std::fs::remove_dir_all(folder).unwrap();
}

#[test]
fn cifar10_folder_in_the_archive_layout_split_by_split() {
    let folder = scratch("inspect-command", "cifar10-folder");
    let files = folder.join("cifar-10-batches-bin");
    write_cifar_folder(&files, CifarVariant::Cifar10);
    let stdout = inspect_ok(&[&folder]);
    assert!(
        stdout.starts_with(&format!(
            "dataset folder: {}\ndataset: CIFAR-10 binary (told by the file names)\n",
            folder.display()
        )),
        "{stdout}"
    );
    assert!(
        stdout
            .contains("\ntrain: 15 images of 3 x 32 x 32 u8 in 10 classes, from 5 files\n  file: "),
        "{stdout}"
    );
    for index in 1..=5 {
        let line = format!(
            "  file: {} (3 records)\n",
            files.join(format!("data_batch_{index}.bin")).display()
        );
        assert!(stdout.contains(&line), "{line}: {stdout}");
    }
    assert!(
        stdout.contains("  label histogram: 0 airplane: 5, 1 automobile: 5, 2 bird: 5, 3 cat: 0"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "\ntest: 2 images of 3 x 32 x 32 u8 in 10 classes, from 1 file\n  file: {} (2 \
             records)\n  label histogram: 0 airplane: 0, 1 automobile: 0, 2 bird: 0, 3 cat: 1,",
            files.join("test_batch.bin").display()
        )),
        "{stdout}"
    );
    // The record files directly in the folder read the same.
    let stdout = inspect_ok(&[&files]);
    assert!(
        stdout.contains("train: 15 images of 3 x 32 x 32 u8 in 10 classes, from 5 files"),
        "{stdout}"
    );
    std::fs::remove_dir_all(folder).unwrap();
}

#[test]
fn cifar100_folder_with_a_missing_split() {
    let folder = scratch("inspect-command", "cifar100-folder");
    write_cifar(
        &folder.join("train.bin"),
        CifarVariant::Cifar100,
        &[0, 1, 99],
    );
    let stdout = inspect_ok(&[&folder]);
    assert!(
        stdout.contains("dataset: CIFAR-100 binary (told by the file names)"),
        "{stdout}"
    );
    assert!(
        stdout.contains(
            "train: 3 images of 3 x 32 x 32 u8 in 100 fine and 20 coarse classes, from 1 file"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("  fine label histogram: 0 apple: 1, 1 aquarium_fish: 1, 2 baby: 0"),
        "{stdout}"
    );
    assert!(
        stdout.contains("  coarse label histogram: 0 aquatic_mammals: 1, 1 fish: 1,"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "test: missing ({})",
            folder.join("test.bin").display()
        )),
        "{stdout}"
    );
    std::fs::remove_dir_all(folder).unwrap();
}

#[test]
fn verify_of_a_cifar_folder_reads_every_file_and_says_what_no_checksum_covers() {
    let folder = scratch("inspect-command", "cifar-verify");
    write_cifar_folder(&folder, CifarVariant::Cifar100);
    let output = reclaim(["inspect".as_ref(), folder.as_os_str(), "--verify".as_ref()]);
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{}", text(&output.stderr));
    for (name, records) in [("train.bin", 3), ("test.bin", 2)] {
        let line = format!(
            "verified: {} ({records} records, whole, every label in range)",
            folder.join(name).display()
        );
        assert!(stdout.contains(&line), "{line}: {stdout}");
    }
    assert!(
        stdout.contains(
            "checksums: none published for CIFAR's record files, only the MD5 of the archive \
             (cifar-100-binary.tar.gz 03b5dce01913d631647c71ecec9e9cb8)"
        ),
        "{stdout}"
    );
    assert!(
        stdout.contains("archive: no cifar-100-binary.tar.gz in the folder"),
        "{stdout}"
    );
    // An archive kept beside the files (as `reclaim fetch` keeps it) has its MD5 compared.
    std::fs::write(
        folder.join("cifar-100-binary.tar.gz"),
        b"not the published archive",
    )
    .unwrap();
    let output = reclaim(["inspect".as_ref(), folder.as_os_str(), "--verify".as_ref()]);
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        stdout.contains("differs from the published 03b5dce01913d631647c71ecec9e9cb8"),
        "{stdout}"
    );
    std::fs::remove_dir_all(folder).unwrap();
}

#[test]
fn malformed_cifar_files_fail_with_one_line_naming_the_file_and_fault() {
    let folder = scratch("inspect-command", "cifar-malformed");
    // A truncated record: one whole CIFAR-10 record and half of another.
    let truncated = folder.join("data_batch_1.bin");
    write_cifar(&truncated, CifarVariant::Cifar10, &[1, 2]);
    let file = std::fs::OpenOptions::new()
        .write(true)
        .open(&truncated)
        .unwrap();
    file.set_len(3073 + 1500).unwrap();
    drop(file);
    // Label 10 in CIFAR-10 (the writer refuses it, so the byte is changed afterwards).
    let bad_label = folder.join("test_batch.bin");
    write_cifar(&bad_label, CifarVariant::Cifar10, &[4, 5, 6]);
    let mut bytes = std::fs::read(&bad_label).unwrap();
    bytes[2 * 3073] = 10;
    std::fs::write(&bad_label, bytes).unwrap();
    // CIFAR-100: coarse label 20.
    let bad_coarse = folder.join("test.bin");
    write_cifar(&bad_coarse, CifarVariant::Cifar100, &[4]);
    let mut bytes = std::fs::read(&bad_coarse).unwrap();
    bytes[0] = 20;
    std::fs::write(&bad_coarse, bytes).unwrap();
    let cases: [(&Path, &str); 3] = [
        (
            &truncated,
            "4573 bytes is not a whole, non-zero number of 3073-byte CIFAR-10 records",
        ),
        (
            &bad_label,
            "record 2: fine label 10 is not below the number of fine classes (10)",
        ),
        (
            &bad_coarse,
            "record 0: coarse label 20 is not below the number of coarse classes (20)",
        ),
    ];
    for (path, fault) in cases {
        let output = inspect(&[path]);
        let stderr = text(&output.stderr);
        assert_eq!(output.status.code(), Some(1), "{path:?}: {stderr}");
        assert!(output.stdout.is_empty(), "{path:?}: nothing on stdout");
        assert_eq!(stderr.lines().count(), 1, "{path:?}: one line: {stderr}");
        assert!(
            stderr.contains(&format!("{}: {fault}", path.display())),
            "{path:?}: {stderr}"
        );
    }
    // The same faults inside a folder (the archive's layout) name the file too, with and
    // without --verify.
    let files = folder.join("cifar-10-batches-bin");
    write_cifar_folder(&files, CifarVariant::Cifar10);
    let (bad_train, bad_test) = (files.join("data_batch_3.bin"), files.join("test_batch.bin"));
    std::fs::rename(&truncated, &bad_train).unwrap();
    std::fs::rename(&bad_label, &bad_test).unwrap();
    std::fs::remove_file(&bad_coarse).unwrap();
    let folder_fails = |path: &Path, fault: &str| {
        for verify in [None, Some(Path::new("--verify"))] {
            let arguments: Vec<&Path> = [Path::new("inspect"), folder.as_path()]
                .into_iter()
                .chain(verify)
                .collect();
            let output = reclaim(&arguments);
            let stderr = text(&output.stderr);
            assert_eq!(output.status.code(), Some(1), "{arguments:?}: {stderr}");
            assert!(output.stdout.is_empty(), "{arguments:?}: nothing on stdout");
            assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
            assert!(
                stderr.contains(&format!("{}: {fault}", path.display())),
                "{arguments:?}: {stderr}"
            );
        }
    };
    folder_fails(
        &bad_train,
        "4573 bytes is not a whole, non-zero number of 3073-byte CIFAR-10 records",
    );
    // Mended, the test file's fault is the one reported.
    write_cifar(&bad_train, CifarVariant::Cifar10, &[0]);
    folder_fails(
        &bad_test,
        "record 2: fine label 10 is not below the number of fine classes (10)",
    );
    std::fs::remove_dir_all(folder).unwrap();
}

#[test]
fn a_folder_of_both_variants_asks_for_the_dataset() {
    let folder = scratch("inspect-command", "cifar-both");
    write_cifar(&folder.join("test_batch.bin"), CifarVariant::Cifar10, &[1]);
    write_cifar(&folder.join("test.bin"), CifarVariant::Cifar100, &[1]);
    let output = inspect(&[&folder]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert!(
        stderr.contains("holds CIFAR-10 and CIFAR-100 files; choose which with --dataset"),
        "{stderr}"
    );
    let output = reclaim([
        "inspect".as_ref(),
        folder.as_os_str(),
        "--dataset".as_ref(),
        "cifar10".as_ref(),
    ]);
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        stdout.contains("test: 1 image of 3 x 32 x 32 u8 in 10 classes, from 1 file"),
        "{stdout}"
    );
    assert!(
        stdout.contains(&format!(
            "train: missing ({})",
            folder.join("data_batch_1.bin").display()
        )),
        "{stdout}"
    );
    std::fs::remove_dir_all(folder).unwrap();
}
