//! `reclaim fetch` interrupted by Ctrl-C (SIGINT) in the middle of a download from a local
//! server that trickles (MNIST and CIFAR): exit status 130, a message, and no partial file.
//! `reclaim fetch --dataset cifar10|cifar100` from a local mirror folder holding a `.tar.gz`
//! built here in the published layout: unpacked and readable by `reclaim inspect`, its MD5
//! checked (the published one, which the built archive cannot have, or `--md5`).

use std::io::{BufRead, BufReader, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use reclaim::dataset::{
    Split,
    cifar::{CIFAR_IMAGE_BYTES, CifarRecord, CifarVariant, md5_of_file, write_cifar_batch},
};

mod common;

use common::{reclaim, scratch, text};

/// Serves one connection: headers announcing a large body, then one byte every 100 ms, for at
/// most 30 seconds. Returns the base URL.
fn trickling_server() -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    let base = format!("http://{}/", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let Ok((mut stream, _)) = listener.accept() else {
            return;
        };
        let mut reader = BufReader::new(stream.try_clone().unwrap());
        let mut line = String::new();
        while reader.read_line(&mut line).is_ok_and(|count| count > 0) && line != "\r\n" {
            line.clear();
        }
        let _ = stream.write_all(b"HTTP/1.1 200 OK\r\nContent-Length: 100000\r\n\r\n");
        for _ in 0..300 {
            if stream
                .write_all(&[0x1f])
                .and_then(|()| stream.flush())
                .is_err()
            {
                return;
            }
            std::thread::sleep(Duration::from_millis(100));
        }
    });
    base
}

fn partial_files(folder: &Path) -> Vec<PathBuf> {
    let mut found = Vec::new();
    for item in std::fs::read_dir(folder).into_iter().flatten().flatten() {
        let path = item.path();
        if path.is_dir() {
            found.extend(partial_files(&path));
        } else if path.to_string_lossy().ends_with(".partial") {
            found.push(path);
        }
    }
    found
}

/// Runs `reclaim fetch --offline --quiet --mirror <trickling server> --data <fresh folder>` plus
/// `extra`, interrupts it with SIGINT once its partial file exists, and checks the outcome.
fn ctrl_c_during_a_fetch(name: &str, extra: &[&str]) {
    let data = scratch("fetch-command", name);
    let base = trickling_server();
    let mut child = Command::new(env!("CARGO_BIN_EXE_reclaim"))
        .args(["fetch", "--offline", "--quiet", "--mirror", &base, "--data"])
        .arg(&data)
        .args(extra)
        .env_remove("RECLAIM_MIRROR")
        .stdout(Stdio::piped())
        .stderr(Stdio::piped())
        .spawn()
        .unwrap();
    let deadline = Instant::now() + Duration::from_secs(20);
    // The download is under way once its partial file exists.
    while partial_files(&data).is_empty() {
        assert!(Instant::now() < deadline, "the download never started");
        assert!(
            child.try_wait().unwrap().is_none(),
            "reclaim fetch ended early"
        );
        std::thread::sleep(Duration::from_millis(20));
    }
    let sent = Command::new("kill")
        .args(["-INT", &child.id().to_string()])
        .status()
        .unwrap();
    assert!(sent.success());
    while child.try_wait().unwrap().is_none() {
        if Instant::now() > deadline {
            child.kill().unwrap();
            panic!("reclaim fetch did not stop after Ctrl-C");
        }
        std::thread::sleep(Duration::from_millis(20));
    }
    let output = child.wait_with_output().unwrap();
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(130), "{stderr}");
    assert!(
        stderr.starts_with("interrupted: stopped while fetching"),
        "{stderr}"
    );
    assert!(stderr.contains(&base), "{stderr}");
    assert_eq!(partial_files(&data), Vec::<PathBuf>::new());
    std::fs::remove_dir_all(data).unwrap();
}

#[test]
fn ctrl_c_during_a_fetch_exits_130_and_leaves_no_partial_file() {
    ctrl_c_during_a_fetch("interrupted", &[]);
}

#[test]
fn ctrl_c_during_a_cifar_fetch_exits_130_and_leaves_no_partial_file() {
    ctrl_c_during_a_fetch("interrupted-cifar", &["--dataset", "cifar10"]);
}

/// A mirror folder holding an archive of `variant` in the published layout
/// (`cifar-10-batches-bin/...`), every record file holding two records labelled 3 and 7
/// (CIFAR-100: coarse 1 and 5), plus a class names file; returns the folder and the archive's
/// MD5. The archive is made by the system's `tar` (as the published ones were), which spares
/// the root package two dev-dependencies.
fn cifar_mirror(name: &str, variant: CifarVariant) -> (PathBuf, String) {
    let scratch_folder = scratch("fetch-command", name);
    let archive = variant.archive();
    let staged = scratch_folder.join("staged");
    let files = staged.join(archive.folder_in_archive);
    std::fs::create_dir_all(&files).unwrap();
    let image = vec![200u8; CIFAR_IMAGE_BYTES];
    let records: Vec<CifarRecord<'_>> = match variant {
        CifarVariant::Cifar10 => vec![
            CifarRecord::cifar10(3, &image),
            CifarRecord::cifar10(7, &image),
        ],
        CifarVariant::Cifar100 => vec![
            CifarRecord::cifar100(1, 3, &image),
            CifarRecord::cifar100(5, 7, &image),
        ],
    };
    for split in Split::ALL {
        for name in variant.file_names(split) {
            write_cifar_batch(files.join(name), variant, &records).unwrap();
        }
    }
    let names_file = match variant {
        CifarVariant::Cifar10 => "batches.meta.txt",
        CifarVariant::Cifar100 => "fine_label_names.txt",
    };
    std::fs::write(files.join(names_file), variant.class_names().join("\n")).unwrap();
    let mirror = scratch_folder.join("mirror");
    std::fs::create_dir(&mirror).unwrap();
    let archive_path = mirror.join(archive.file_name);
    let status = Command::new("tar")
        .arg("-czf")
        .arg(&archive_path)
        .arg("-C")
        .arg(&staged)
        .arg(archive.folder_in_archive)
        .status()
        .expect("the system's tar runs");
    assert!(status.success(), "tar failed: {status}");
    std::fs::remove_dir_all(&staged).unwrap();
    (mirror, md5_of_file(&archive_path).unwrap())
}

/// `reclaim` with these arguments, without `RECLAIM_MIRROR` or `RECLAIM_DATA` from the
/// environment.
fn reclaim_clean(arguments: &[&std::ffi::OsStr]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_reclaim"))
        .args(arguments)
        .env_remove("RECLAIM_MIRROR")
        .env_remove("RECLAIM_DATA")
        .output()
        .unwrap()
}

#[test]
fn cifar10_is_fetched_from_a_local_mirror_unpacked_and_inspectable() {
    let variant = CifarVariant::Cifar10;
    let (mirror, md5) = cifar_mirror("cifar10-mirror", variant);
    let data = scratch("fetch-command", "cifar10-data");
    let fetch = |md5: &str| {
        reclaim_clean(&[
            "fetch".as_ref(),
            "--dataset".as_ref(),
            "cifar10".as_ref(),
            "--offline".as_ref(),
            "--quiet".as_ref(),
            "--mirror".as_ref(),
            mirror.as_os_str(),
            "--data".as_ref(),
            data.as_os_str(),
            "--md5".as_ref(),
            md5.as_ref(),
        ])
    };
    // Upper-case hex is accepted.
    let output = fetch(&md5.to_ascii_uppercase());
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let folder = data.join("cifar-10");
    let files = folder.join("cifar-10-batches-bin");
    let archive = folder.join("cifar-10-binary.tar.gz");
    assert_eq!(
        stdout,
        format!(
            "cifar-10 into {}\n{} (from {}; unpacked from {}, md5 {md5} verified (given by \
             --md5; the published one is c32a1d4ab5d03f1284b67883e8d87530); every record file \
             checked: whole records, labels in range)\n",
            folder.display(),
            files.display(),
            mirror.display(),
            archive.display()
        )
    );
    assert!(archive.is_file());
    for split in Split::ALL {
        for name in variant.file_names(split) {
            assert_eq!(
                std::fs::metadata(files.join(name)).unwrap().len(),
                2 * 3073,
                "{name}"
            );
        }
    }
    assert!(files.join("batches.meta.txt").is_file());
    assert_eq!(partial_files(&data), Vec::<PathBuf>::new());

    // What was fetched reads as a CIFAR-10 folder, and --verify finds the repacked archive.
    let output = reclaim(["inspect".as_ref(), folder.as_os_str(), "--verify".as_ref()]);
    let inspected = text(&output.stdout);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        inspected.contains("train: 10 images of 3 x 32 x 32 u8 in 10 classes, from 5 files"),
        "{inspected}"
    );
    assert!(
        inspected
            .contains("  label histogram: 0 airplane: 0, 1 automobile: 0, 2 bird: 0, 3 cat: 5,"),
        "{inspected}"
    );
    assert!(
        inspected.contains(&format!(
            "archive: {} md5 {md5} differs from the published c32a1d4ab5d03f1284b67883e8d87530",
            archive.display()
        )),
        "{inspected}"
    );

    // Again: the files are there and valid, nothing is fetched (the mirror is not read).
    std::fs::remove_dir_all(&mirror).unwrap();
    let output = fetch(&md5);
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        stdout.ends_with(&format!(
            "{} (already present; no archive needed; every record file checked: whole records, \
             labels in range)\n",
            files.display()
        )),
        "{stdout}"
    );
    std::fs::remove_dir_all(data).unwrap();
    std::fs::remove_dir_all(mirror.parent().unwrap()).unwrap();
}

#[test]
fn cifar100_is_fetched_through_reclaim_mirror_and_the_published_md5_is_required() {
    let variant = CifarVariant::Cifar100;
    let (mirror, md5) = cifar_mirror("cifar100-mirror", variant);
    let data = scratch("fetch-command", "cifar100-data");
    let fetch = |extra: &[&str]| {
        Command::new(env!("CARGO_BIN_EXE_reclaim"))
            .args([
                "fetch",
                "--dataset",
                "cifar-100",
                "--offline",
                "--quiet",
                "--data",
            ])
            .arg(&data)
            .args(extra)
            .env("RECLAIM_MIRROR", &mirror)
            .output()
            .unwrap()
    };
    // Without --md5 the published MD5 is required: the archive built here does not have it.
    let output = fetch(&[]);
    let stderr = text(&output.stderr);
    assert_eq!(output.status.code(), Some(1), "{stderr}");
    assert_eq!(stderr.lines().count(), 1, "one line: {stderr}");
    assert!(
        stderr.contains(&format!(
            "{}: {}: MD5 mismatch: expected 03b5dce01913d631647c71ecec9e9cb8, found {md5}",
            mirror.display(),
            data.join("cifar-100")
                .join("cifar-100-binary.tar.gz")
                .display()
        )),
        "{stderr}"
    );
    assert!(stderr.contains("give its MD5 with --md5"), "{stderr}");
    // Nothing is left behind: no archive, no partial file, no unpacked folder.
    let left: Vec<_> = std::fs::read_dir(data.join("cifar-100"))
        .into_iter()
        .flatten()
        .map(|entry| entry.unwrap().file_name())
        .collect();
    assert!(left.is_empty(), "{left:?}");

    let output = fetch(&["--md5", &md5]);
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{}", text(&output.stderr));
    let files = data.join("cifar-100").join("cifar-100-binary");
    assert!(
        stdout.contains(&format!("{} (from {};", files.display(), mirror.display())),
        "{stdout}"
    );
    for name in ["train.bin", "test.bin", "fine_label_names.txt"] {
        assert!(files.join(name).is_file(), "{name}");
    }
    let output = reclaim(["inspect".as_ref(), files.join("test.bin").as_os_str()]);
    let inspected = text(&output.stdout);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        inspected.contains("coarse label histogram: 0 aquatic_mammals: 0, 1 fish: 1,"),
        "{inspected}"
    );
    std::fs::remove_dir_all(mirror.parent().unwrap()).unwrap();
    std::fs::remove_dir_all(data).unwrap();
}

#[test]
fn fetch_refuses_bad_options() {
    let data = scratch("fetch-command", "bad-options");
    let cases: [(&[&str], i32, &str); 5] = [
        (
            &["--dataset", "cifar10", "--offline"],
            1,
            "--offline needs a local mirror (--mirror or RECLAIM_MIRROR)",
        ),
        (
            &[
                "--family",
                "kmnist",
                "--md5",
                "c32a1d4ab5d03f1284b67883e8d87530",
            ],
            1,
            "--md5 applies to the CIFAR archives; kmnist is checked by SHA-256",
        ),
        (
            &["--dataset", "cifar10", "--md5", "not-hex"],
            2,
            "is not an MD5 (32 hex digits)",
        ),
        (&["--dataset", "svhn"], 2, "unknown dataset"),
        (
            &["--dataset", "cifar10", "--family", "mnist"],
            2,
            "cannot be used with",
        ),
    ];
    for (arguments, status, message) in cases {
        let output = reclaim_clean(
            &["fetch".as_ref(), "--data".as_ref(), data.as_os_str()]
                .into_iter()
                .chain(arguments.iter().map(|argument| argument.as_ref()))
                .collect::<Vec<_>>(),
        );
        let stderr = text(&output.stderr);
        assert_eq!(
            output.status.code(),
            Some(status),
            "{arguments:?}: {stderr}"
        );
        assert!(stderr.contains(message), "{arguments:?}: {stderr}");
    }
    std::fs::remove_dir_all(data).unwrap();
}
