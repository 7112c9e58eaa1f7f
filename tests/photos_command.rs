//! Folders of photos through the command line: `reclaim pack`, `reclaim inspect`, and
//! `reclaim train --data FOLDER --image-size HxW --model cnn` (packing on first use, reusing
//! the pack after), strict packing, and packing and training killed with SIGKILL and resumed.

mod common;

use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::process::{Command, Stdio};
use std::time::{Duration, Instant};

use common::{reclaim, scratch, text};
use image::{ImageFormat, Rgb, RgbImage};
use reclaim_dataset::PackSplits;

/// Three classes told apart by colour (red, green, blue, with noise and a varied size), as
/// JPEG and PNG files: `train/<class>/` with `train_per_class` images, `test/<class>/` with a
/// fifth as many; plus one empty file and one text file named `.jpg` in the training split.
fn photo_folder(root: &Path, train_per_class: usize, side: u32) -> PathBuf {
    let classes = [("blue", 2usize), ("green", 1), ("red", 0)];
    for (split, count) in [("train", train_per_class), ("test", train_per_class / 5)] {
        for (class, channel) in classes {
            let folder = root.join(split).join(class);
            std::fs::create_dir_all(&folder).unwrap();
            for index in 0..count {
                let (width, height) =
                    (side + (index % 9) as u32 * 3, side + (index % 5) as u32 * 4);
                let image = RgbImage::from_fn(width, height, |x, y| {
                    let noise = ((x * 31 + y * 17 + index as u32 * 7) % 60) as u8;
                    let mut pixel = [noise; 3];
                    pixel[channel] = 160 + noise;
                    Rgb(pixel)
                });
                let (format, extension) = if index % 2 == 0 {
                    (ImageFormat::Jpeg, "jpg")
                } else {
                    (ImageFormat::Png, "png")
                };
                let mut bytes = Cursor::new(Vec::new());
                image.write_to(&mut bytes, format).unwrap();
                std::fs::write(
                    folder.join(format!("{index:04}.{extension}")),
                    bytes.into_inner(),
                )
                .unwrap();
            }
        }
    }
    std::fs::write(root.join("train/red/empty.jpg"), b"").unwrap();
    std::fs::write(
        root.join("train/green/notes.jpg"),
        b"a text file, not a photo\n",
    )
    .unwrap();
    root.to_path_buf()
}

#[test]
fn pack_inspect_and_train_a_cnn_on_a_folder_of_photos() {
    let work = scratch("photos", "train");
    let folder = photo_folder(&work.join("photos"), 60, 24);

    let pack = work.join("photos.rpack");
    let output = pack_quietly(&folder, "16x16", &pack, &[]);
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        stdout.contains("180 training and 36 test images in 3 classes"),
        "{stdout}"
    );
    assert!(stdout.contains("skipped (2):"), "{stdout}");
    assert!(
        stdout.contains("train/red/empty.jpg: empty (0 bytes)"),
        "{stdout}"
    );
    assert!(
        stdout.contains("train/green/notes.jpg: not a JPEG, PNG or WebP image"),
        "{stdout}"
    );

    let output = reclaim(["inspect".as_ref(), pack.as_os_str()]);
    let report = text(&output.stdout);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(report.contains("3x16x16"), "{report}");
    assert!(
        report.contains("     0        60        12  blue"),
        "{report}"
    );
    assert!(report.contains("train/red/empty.jpg"), "{report}");
    let output = reclaim(["inspect".as_ref(), folder.as_os_str()]);
    let report = text(&output.stdout);
    assert!(
        report.contains("folder of photos: 218 image files"),
        "{report}"
    );

    // Training packs the folder into the cache beside it, then reuses the pack.
    let run = work.join("run");
    let train = |extra: &[&str]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_reclaim"));
        command
            .args([
                "train",
                "--quiet",
                "--model",
                "cnn",
                "--image-size",
                "16x16",
            ])
            .args([
                "--epochs",
                "4",
                "--lr",
                "0.05",
                "--momentum",
                "0.9",
                "--standardize",
            ])
            .arg("--data")
            .arg(&folder)
            .arg("--out")
            .arg(&run)
            .args(extra);
        command.output().unwrap()
    };
    let output = train(&[]);
    let (stdout, stderr) = (text(&output.stdout), text(&output.stderr));
    assert!(output.status.success(), "{stderr}");
    let cached = work.join("photos.16x16-rgb.rpack");
    assert!(
        stderr.contains(&format!("pack: {}", cached.display())),
        "{stderr}"
    );
    assert!(stderr.contains("train/green/notes.jpg"), "{stderr}");
    let accuracy: f64 = stdout
        .lines()
        .last()
        .and_then(|line| line.strip_prefix("test accuracy "))
        .and_then(|value| value.trim_end_matches('%').parse().ok())
        .unwrap_or_else(|| panic!("no accuracy in {stdout}"));
    assert!(accuracy >= 90.0, "{stdout}");
    assert!(
        stdout.contains("live heap after release vs before loading: +0 B"),
        "{stdout}"
    );

    let output = train(&["--overwrite"]);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(
        text(&output.stderr).contains("(up to date)"),
        "{}",
        text(&output.stderr)
    );

    // The pack given directly trains too (its classes and shape size the CNN).
    let output = Command::new(env!("CARGO_BIN_EXE_reclaim"))
        .args([
            "train",
            "--quiet",
            "--model",
            "cnn",
            "--epochs",
            "1",
            "--overwrite",
        ])
        .arg("--data")
        .arg(&pack)
        .arg("--out")
        .arg(&run)
        .output()
        .unwrap();
    assert!(output.status.success(), "{}", text(&output.stderr));
}

#[test]
fn strict_packing_refuses_the_first_bad_file_and_writes_no_pack() {
    let work = scratch("photos", "strict");
    let folder = photo_folder(&work.join("photos"), 5, 20);
    let pack = work.join("strict.rpack");
    let output = pack_quietly(&folder, "8", &pack, &["--strict"]);
    assert_eq!(output.status.code(), Some(1));
    let stderr = text(&output.stderr);
    assert!(
        stderr.contains("notes.jpg") || stderr.contains("empty.jpg"),
        "{stderr}"
    );
    assert!(stderr.contains("refused"), "{stderr}");
    assert!(!pack.exists());

    for (arguments, expected) in [
        (vec!["--image-size", "0x5"], "--image-size"),
        (
            vec!["--image-size", "64x64", "--channels", "2"],
            "--channels",
        ),
        (
            vec!["--image-size", "64", "--test-fraction", "1.5"],
            "--test-fraction",
        ),
    ] {
        let output = Command::new(env!("CARGO_BIN_EXE_reclaim"))
            .arg("pack")
            .arg(&folder)
            .args(arguments)
            .output()
            .unwrap();
        assert_eq!(output.status.code(), Some(2), "{}", text(&output.stderr));
        assert!(
            text(&output.stderr).contains(expected),
            "{}",
            text(&output.stderr)
        );
    }
}

/// `reclaim pack FOLDER --image-size SIZE --out PACK --quiet` with `extra` arguments, waited for.
fn pack_quietly(folder: &Path, size: &str, pack: &Path, extra: &[&str]) -> std::process::Output {
    Command::new(env!("CARGO_BIN_EXE_reclaim"))
        .arg("pack")
        .arg(folder)
        .args(["--image-size", size, "--out"])
        .arg(pack)
        .arg("--quiet")
        .args(extra)
        .output()
        .expect("the reclaim binary runs")
}

/// Waits until `condition` holds, or fails after a minute.
fn wait_for(what: &str, condition: impl Fn() -> bool) {
    let started = Instant::now();
    while !condition() {
        assert!(
            started.elapsed() < Duration::from_secs(60),
            "waited a minute for {what}"
        );
        std::thread::sleep(Duration::from_millis(2));
    }
}

#[test]
fn packing_killed_with_sigkill_resumes_and_gives_the_same_pack() {
    let work = scratch("photos", "kill-pack");
    let folder = photo_folder(&work.join("photos"), 400, 96);
    let pack = work.join("killed.rpack");
    let journal = work.join(".killed.rpack.journal");
    let pack_command = || {
        let mut command = Command::new(env!("CARGO_BIN_EXE_reclaim"));
        command
            .arg("pack")
            .arg(&folder)
            .args(["--image-size", "32x32", "--quiet", "--out"])
            .arg(&pack)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    };
    let mut child = pack_command().spawn().unwrap();
    // Two chunks journaled: killed part-way.
    wait_for("the journal's third line", || {
        std::fs::read_to_string(&journal).is_ok_and(|journal| journal.lines().count() > 129)
    });
    child.kill().unwrap();
    child.wait().unwrap();
    assert!(!pack.exists(), "no pack under its name after a kill");

    let output = pack_command().output().unwrap();
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{}", text(&output.stderr));
    // "pack: P written in S s: D decoded (R images/s), U reused from the previous pack, N resumed"
    let resumed: usize = stdout
        .split(" resumed")
        .next()
        .and_then(|before| before.rsplit(' ').next())
        .and_then(|count| count.parse().ok())
        .unwrap_or_else(|| panic!("no resumed count in {stdout}"));
    assert!(resumed >= 128, "{stdout}");
    assert!(!journal.exists());

    let fresh = work.join("fresh.rpack");
    let output = pack_quietly(&folder, "32x32", &fresh, &[]);
    assert!(output.status.success());
    assert_eq!(
        std::fs::read(&pack).unwrap(),
        std::fs::read(&fresh).unwrap()
    );
}

#[test]
fn training_on_a_pack_killed_with_sigkill_resumes_from_its_checkpoint() {
    let work = scratch("photos", "kill-train");
    let folder = photo_folder(&work.join("photos"), 40, 20);
    let pack = work.join("photos.rpack");
    let output = pack_quietly(&folder, "12x12", &pack, &[]);
    assert!(output.status.success());
    let run = work.join("run");
    let train = |extra: &[&str]| {
        let mut command = Command::new(env!("CARGO_BIN_EXE_reclaim"));
        command
            .args([
                "train",
                "--quiet",
                "--model",
                "cnn",
                "--epochs",
                "3",
                "--batch-size",
                "8",
            ])
            .args(["--checkpoint-every", "3", "--data"])
            .arg(&pack)
            .arg("--out")
            .arg(&run)
            .args(extra)
            .stdout(Stdio::piped())
            .stderr(Stdio::piped());
        command
    };
    let mut child = train(&[]).spawn().unwrap();
    wait_for("a checkpoint", || {
        reclaim_train::latest_checkpoint(&run).is_some()
    });
    child.kill().unwrap();
    child.wait().unwrap();
    let output = train(&["--resume"]).output().unwrap();
    let stdout = text(&output.stdout);
    assert!(output.status.success(), "{}", text(&output.stderr));
    assert!(stdout.contains("test accuracy"), "{stdout}");
    let pack = PackSplits::open_owned(&pack).unwrap();
    assert_eq!(pack.train.len(), 120);
}
