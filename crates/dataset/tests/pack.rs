//! Packing folders of photos the tests make (JPEG, PNG, WebP of varied sizes): layouts,
//! determinism, re-packing changed folders, every kind of bad file, and packs damaged after
//! they were written.

use std::io::Cursor;
use std::path::{Path, PathBuf};
use std::sync::atomic::AtomicBool;

use image::{ImageFormat, Rgb, RgbImage};
use reclaim_dataset::pack::{
    BadFilePolicy, ImageFolderProblem, ImageSize, PackOptions, PackProblem, PackSplit, PackState,
    SkipReason, SplitRule, TestFraction, pack_image_folder,
};
use reclaim_dataset::{DatasetError, PackSplits, ProgressDisplay, StorageKind};

static NOT_CANCELLED: AtomicBool = AtomicBool::new(false);

fn encode(width: u32, height: u32, colour: [u8; 3], format: ImageFormat) -> Vec<u8> {
    let image = RgbImage::from_fn(width, height, |x, y| {
        Rgb([
            colour[0].wrapping_add((x % 7) as u8),
            colour[1].wrapping_add((y % 5) as u8),
            colour[2],
        ])
    });
    let mut bytes = Cursor::new(Vec::new());
    image.write_to(&mut bytes, format).unwrap();
    bytes.into_inner()
}

fn write(path: &Path, bytes: &[u8]) {
    std::fs::create_dir_all(path.parent().unwrap()).unwrap();
    std::fs::write(path, bytes).unwrap();
}

const CLASSES: [(&str, [u8; 3]); 3] = [
    ("cat", [200, 30, 30]),
    ("dog", [30, 200, 30]),
    ("fox", [30, 30, 200]),
];

/// `train/<class>/` with `train_per_class` images and `test/<class>/` with 2, in JPEG, PNG
/// and WebP, 20 to 59 pixels a side.
fn photo_folder(root: &Path, train_per_class: usize) {
    let formats = [
        (ImageFormat::Jpeg, "jpg"),
        (ImageFormat::Png, "png"),
        (ImageFormat::WebP, "webp"),
    ];
    for (split, count) in [("train", train_per_class), ("test", 2)] {
        for (class_index, (class, colour)) in CLASSES.iter().enumerate() {
            for index in 0..count {
                let (format, extension) = formats[(index + class_index) % 3];
                let width = 20 + ((index * 13 + class_index * 7) % 40) as u32;
                let height = 20 + ((index * 29 + class_index * 3) % 40) as u32;
                let path = root.join(format!("{split}/{class}/{index:03}.{extension}"));
                write(&path, &encode(width, height, *colour, format));
            }
        }
    }
}

fn options() -> PackOptions {
    PackOptions {
        progress: ProgressDisplay::Hidden,
        ..PackOptions::new(ImageSize::new(8, 12).unwrap())
    }
}

fn pack(
    folder: &Path,
    destination: &Path,
    options: &PackOptions,
) -> reclaim_dataset::pack::PackOutcome {
    pack_image_folder(folder, destination, options, &NOT_CANCELLED).unwrap()
}

#[test]
fn a_split_folder_packs_into_records_labels_and_a_manifest_read_mapped_or_owned() {
    let work = tempfile::tempdir().unwrap();
    let folder = work.path().join("photos");
    photo_folder(&folder, 5);
    let destination = work.path().join("photos.rpack");
    let outcome = pack(&folder, &destination, &options());
    assert_eq!(outcome.state, PackState::Written);
    assert_eq!((outcome.train_records, outcome.test_records), (15, 6));
    assert_eq!(
        (outcome.decoded, outcome.reused, outcome.resumed),
        (21, 0, 0)
    );
    assert_eq!(outcome.classes, 3);
    assert!(outcome.skipped.is_empty(), "{:?}", outcome.skipped);

    // SAFETY: the pack is this test's own and nothing modifies it while mapped.
    let mapped = unsafe { PackSplits::open_mapped(&destination) }.unwrap();
    let owned = PackSplits::open_owned(&destination).unwrap();
    assert_eq!(mapped.train.storage(), StorageKind::Mapped);
    assert_eq!(owned.test.storage(), StorageKind::Owned);
    assert_eq!(mapped.fingerprint(), owned.fingerprint());
    let manifest = mapped.manifest();
    assert_eq!(manifest.classes, ["cat", "dog", "fox"]);
    assert_eq!(
        manifest.split_rule,
        SplitRule::Folders {
            test_folder: "test".into()
        }
    );
    assert_eq!(mapped.train.len(), 15);
    assert_eq!(mapped.train.bytes_per_image(), 3 * 8 * 12);
    assert_eq!(mapped.train.label_histogram(), [5, 5, 5]);
    assert_eq!(mapped.test.label_histogram(), [2, 2, 2]);
    // Each class's colour dominates its own channel plane.
    for split in [&mapped.train, &mapped.test] {
        for index in 0..split.len() {
            let label = split.label(index) as usize;
            let image = split.image(index);
            let plane = |channel: usize| {
                image[channel * 96..(channel + 1) * 96]
                    .iter()
                    .map(|&value| u32::from(value))
                    .sum::<u32>()
                    / 96
            };
            assert!(plane(label) > 150, "record {index} of class {label}");
            assert!((0..3).filter(|&c| c != label).all(|c| plane(c) < 80));
            assert_eq!(owned.split(split.split()).image(index), image);
        }
    }
    assert_eq!(manifest.sources[0].path, "train/cat/000.jpg");
    assert_eq!(manifest.sources[15].split, PackSplit::Test);
    let mean = &manifest.statistics.mean;
    assert!(
        mean.iter().all(|&mean| (0.2..0.6).contains(&mean)),
        "{mean:?}"
    );
}

#[test]
fn the_same_folder_gives_the_same_pack_bytes() {
    let work = tempfile::tempdir().unwrap();
    let folder = work.path().join("photos");
    photo_folder(&folder, 4);
    let first = work.path().join("first.rpack");
    let second = work.path().join("second.rpack");
    pack(&folder, &first, &options());
    pack(&folder, &second, &options());
    assert_eq!(
        std::fs::read(first).unwrap(),
        std::fs::read(second).unwrap()
    );
}

#[test]
fn class_folders_alone_are_divided_per_class_reproducibly_by_the_seed() {
    let work = tempfile::tempdir().unwrap();
    let folder = work.path().join("flat");
    for (class, colour) in CLASSES {
        for index in 0..10 {
            let path = folder.join(format!("{class}/{index}.png"));
            write(&path, &encode(16, 16, colour, ImageFormat::Png));
        }
    }
    let mut options = options();
    options.test_fraction = TestFraction::new(0.3).unwrap();
    let first = pack(&folder, &work.path().join("a.rpack"), &options);
    assert_eq!((first.train_records, first.test_records), (21, 9));
    let test_paths = |name: &str| {
        let pack = PackSplits::open_owned(work.path().join(name)).unwrap();
        pack.manifest()
            .sources
            .iter()
            .filter(|source| source.split == PackSplit::Test)
            .map(|source| source.path.clone())
            .collect::<Vec<_>>()
    };
    pack(&folder, &work.path().join("b.rpack"), &options);
    assert_eq!(test_paths("a.rpack"), test_paths("b.rpack"));
    options.seed += 1;
    pack(&folder, &work.path().join("c.rpack"), &options);
    assert_ne!(test_paths("a.rpack"), test_paths("c.rpack"));
    assert!(matches!(
        PackSplits::open_owned(work.path().join("a.rpack")).unwrap().manifest().split_rule,
        SplitRule::Fraction { test_fraction, seed: 42 } if test_fraction == 0.3
    ));
}

#[test]
fn a_repack_decodes_only_what_changed() {
    let work = tempfile::tempdir().unwrap();
    let folder = work.path().join("photos");
    photo_folder(&folder, 4);
    let destination = work.path().join("photos.rpack");
    pack(&folder, &destination, &options());
    let written = std::fs::read(&destination).unwrap();

    let again = pack(&folder, &destination, &options());
    assert_eq!(again.state, PackState::UpToDate);
    assert_eq!(std::fs::read(&destination).unwrap(), written);

    // Changed content, a new file, a removed file, and a file rewritten with equal content.
    write(
        &folder.join("train/cat/000.jpg"),
        &encode(33, 21, [10, 10, 10], ImageFormat::Jpeg),
    );
    write(
        &folder.join("train/dog/new.png"),
        &encode(25, 25, [30, 200, 30], ImageFormat::Png),
    );
    std::fs::remove_file(folder.join("train/fox/001.jpg").with_extension("png")).ok();
    std::fs::remove_file(folder.join("test/fox/000.png")).ok();
    let same = std::fs::read(folder.join("train/dog/002.jpg")).unwrap();
    std::fs::remove_file(folder.join("train/dog/002.jpg")).unwrap();
    write(&folder.join("train/dog/002.jpg"), &same);

    let repacked = pack(&folder, &destination, &options());
    assert_eq!(repacked.state, PackState::Written);
    assert_eq!(repacked.decoded, 2, "the changed and the new file");
    assert_eq!(
        repacked.reused,
        repacked.train_records + repacked.test_records - 2
    );
    let fresh = work.path().join("fresh.rpack");
    pack(&folder, &fresh, &options());
    assert_eq!(
        std::fs::read(&destination).unwrap(),
        std::fs::read(&fresh).unwrap(),
        "a repack equals a pack made from nothing"
    );
}

/// A PNG whose header declares `width` x `height` pixels, followed by a little compressed
/// image data (a decompression bomb's start: what follows would be mostly zeros).
fn png_declaring(width: u32, height: u32) -> Vec<u8> {
    let mut bytes = b"\x89PNG\r\n\x1a\n".to_vec();
    let mut chunk = |kind: &[u8], data: &[u8]| {
        bytes.extend_from_slice(&(data.len() as u32).to_be_bytes());
        let mut crc = flate2::Crc::new();
        crc.update(kind);
        crc.update(data);
        bytes.extend_from_slice(kind);
        bytes.extend_from_slice(data);
        bytes.extend_from_slice(&crc.sum().to_be_bytes());
    };
    let mut header = Vec::new();
    header.extend_from_slice(&width.to_be_bytes());
    header.extend_from_slice(&height.to_be_bytes());
    header.extend_from_slice(&[8, 2, 0, 0, 0]);
    chunk(b"IHDR", &header);
    let mut zlib = flate2::write::ZlibEncoder::new(Vec::new(), flate2::Compression::best());
    std::io::Write::write_all(&mut zlib, &[0u8; 65536]).unwrap();
    chunk(b"IDAT", &zlib.finish().unwrap());
    chunk(b"IEND", &[]);
    bytes
}

/// Every kind of bad file at once, with the reason each is listed under.
/// A path relative to the folder, and the test its skip reason must pass.
type ExpectedSkip = (String, fn(&SkipReason) -> bool);

fn bad_folder(root: &Path) -> Vec<ExpectedSkip> {
    photo_folder(root, 3);
    let jpeg = encode(64, 48, [1, 2, 3], ImageFormat::Jpeg);
    write(
        &root.join("train/cat/truncated.jpg"),
        &jpeg[..jpeg.len() / 3],
    );
    write(&root.join("train/cat/zero.jpg"), b"");
    write(
        &root.join("train/cat/text.jpg"),
        b"just some words, not a JPEG\n",
    );
    write(
        &root.join("train/cat/notes.txt"),
        b"a note beside the photos",
    );
    write(
        &root.join("train/dog/bomb.png"),
        &png_declaring(100_000, 100_000),
    );
    std::os::unix::fs::symlink(
        root.join("train/dog/absent.png"),
        root.join("train/dog/dangling.png"),
    )
    .unwrap();
    std::os::unix::fs::symlink(root.join("train/dog"), root.join("train/dog/loop")).unwrap();
    let fifo = root.join("train/fox/pipe.jpg");
    let fifo_name = std::ffi::CString::new(fifo.as_os_str().as_encoded_bytes()).unwrap();
    // SAFETY: a valid NUL-terminated path; mkfifo touches nothing else.
    assert_eq!(unsafe { libc::mkfifo(fifo_name.as_ptr(), 0o644) }, 0);
    use std::os::unix::ffi::OsStrExt;
    let non_utf8 = root
        .join("train/fox")
        .join(std::ffi::OsStr::from_bytes(b"caf\xe9.png"));
    write(&non_utf8, &encode(20, 20, [30, 30, 200], ImageFormat::Png));
    std::fs::create_dir_all(root.join("train/empty")).unwrap();
    write(
        &root.join("train/lonely/only.png"),
        &encode(20, 20, [9, 9, 9], ImageFormat::Png),
    );
    write(&root.join("train/stray.jpg"), &jpeg);
    vec![
        ("train/cat/truncated.jpg".into(), |r| {
            matches!(r, SkipReason::Undecodable { .. })
        }),
        ("train/cat/zero.jpg".into(), |r| *r == SkipReason::Empty),
        ("train/cat/text.jpg".into(), |r| {
            *r == SkipReason::UnknownFormat
        }),
        ("train/cat/notes.txt".into(), |r| {
            *r == SkipReason::NotAnImageExtension
        }),
        ("train/dog/bomb.png".into(), |r| {
            matches!(
                r,
                SkipReason::ImageTooLarge {
                    width: 100_000,
                    height: 100_000,
                    ..
                }
            )
        }),
        ("train/dog/dangling.png".into(), |r| {
            matches!(r, SkipReason::Unlistable { .. })
        }),
        ("train/dog/loop".into(), |r| {
            matches!(r, SkipReason::Unlistable { .. })
        }),
        ("train/fox/pipe.jpg".into(), |r| {
            matches!(r, SkipReason::NotARegularFile { .. })
        }),
        ("train/fox/caf\u{fffd}.png".into(), |r| {
            *r == SkipReason::NameNotUtf8
        }),
        ("train/empty".into(), |r| *r == SkipReason::EmptyClass),
        ("train/lonely".into(), |r| {
            *r == SkipReason::SingleImageClass
        }),
        ("train/stray.jpg".into(), |r| {
            *r == SkipReason::OutsideClassFolder
        }),
    ]
}

#[test]
fn every_bad_file_is_skipped_and_listed_with_its_reason() {
    let work = tempfile::tempdir().unwrap();
    let folder = work.path().join("bad");
    let expected = bad_folder(&folder);
    let destination = work.path().join("bad.rpack");
    let outcome = pack(&folder, &destination, &options());
    for (path, is_reason) in &expected {
        let listed = outcome.skipped.iter().find(|skipped| &skipped.path == path);
        let listed =
            listed.unwrap_or_else(|| panic!("{path} not listed in {:#?}", outcome.skipped));
        assert!(is_reason(&listed.reason), "{path}: {}", listed.reason);
    }
    assert_eq!(
        outcome.skipped.len(),
        expected.len(),
        "{:#?}",
        outcome.skipped
    );
    // The good images and the single image of `lonely` are packed; `empty` is no class.
    assert_eq!(
        (outcome.train_records, outcome.test_records),
        (3 * 3 + 1, 6)
    );
    let pack = PackSplits::open_owned(&destination).unwrap();
    assert_eq!(pack.manifest().classes, ["cat", "dog", "fox", "lonely"]);
    assert_eq!(pack.manifest().skipped, outcome.skipped);
    // Up to date with its bad files: the next pack writes nothing.
    assert_eq!(
        pack_image_folder(&folder, &destination, &options(), &NOT_CANCELLED)
            .unwrap()
            .state,
        PackState::UpToDate
    );
}

#[test]
fn strict_packing_refuses_the_first_bad_file_by_name() {
    let work = tempfile::tempdir().unwrap();
    let folder = work.path().join("bad");
    bad_folder(&folder);
    let strict = PackOptions {
        bad_files: BadFilePolicy::Refuse,
        ..options()
    };
    let destination = work.path().join("bad.rpack");
    match pack_image_folder(&folder, &destination, &strict, &NOT_CANCELLED) {
        Err(DatasetError::BadSourceFile { path, reason }) => {
            assert!(path.starts_with(&folder), "{}", path.display());
            assert!(!reason.to_string().is_empty());
        }
        other => panic!("expected BadSourceFile, got {other:?}"),
    }
    assert!(!destination.exists());

    // A folder whose only fault shows when decoding is refused too, naming that file.
    let decoding = work.path().join("decoding");
    photo_folder(&decoding, 2);
    write(&decoding.join("train/dog/zero.png"), b"");
    match pack_image_folder(
        &decoding,
        &work.path().join("d.rpack"),
        &strict,
        &NOT_CANCELLED,
    ) {
        Err(DatasetError::BadSourceFile { path, reason }) => {
            assert_eq!(path, decoding.join("train/dog/zero.png"));
            assert_eq!(reason, SkipReason::Empty);
        }
        other => panic!("expected BadSourceFile, got {other:?}"),
    }
}

#[test]
fn a_folder_without_images_and_a_file_are_refused() {
    let work = tempfile::tempdir().unwrap();
    let empty = work.path().join("empty");
    std::fs::create_dir_all(empty.join("cat")).unwrap();
    let destination = work.path().join("x.rpack");
    assert!(matches!(
        pack_image_folder(&empty, &destination, &options(), &NOT_CANCELLED),
        Err(DatasetError::ImageFolder { .. })
    ));
    let file = work.path().join("file.jpg");
    write(&file, b"x");
    assert!(matches!(
        pack_image_folder(&file, &destination, &options(), &NOT_CANCELLED),
        Err(DatasetError::ImageFolder { .. })
    ));
}

fn damaged(pack: &Path, damage: impl FnOnce(&mut Vec<u8>)) -> DatasetError {
    let mut bytes = std::fs::read(pack).unwrap();
    damage(&mut bytes);
    let copy: PathBuf = pack.with_extension("damaged");
    std::fs::write(&copy, bytes).unwrap();
    // SAFETY: the copy is this test's own and nothing modifies it while mapped.
    let mapped = unsafe { PackSplits::open_mapped(&copy) }.unwrap_err();
    let owned = PackSplits::open_owned(&copy).unwrap_err();
    assert_eq!(mapped.to_string(), owned.to_string());
    owned
}

#[test]
fn a_pack_truncated_extended_or_altered_after_writing_is_refused() {
    let work = tempfile::tempdir().unwrap();
    let folder = work.path().join("photos");
    photo_folder(&folder, 2);
    let destination = work.path().join("photos.rpack");
    pack(&folder, &destination, &options());
    let problem = |error: DatasetError| match error {
        DatasetError::InvalidPack { problem, .. } => problem,
        other => panic!("expected InvalidPack, got {other:?}"),
    };
    assert!(matches!(
        problem(damaged(&destination, |bytes| bytes.truncate(bytes.len() - 1))),
        PackProblem::LengthMismatch { .. }
    ));
    assert!(matches!(
        problem(damaged(&destination, |bytes| bytes.push(0))),
        PackProblem::LengthMismatch { .. }
    ));
    assert!(matches!(
        problem(damaged(&destination, |bytes| bytes[300] ^= 0x40)),
        PackProblem::ChecksumMismatch { .. }
    ));
    assert_eq!(
        problem(damaged(&destination, |bytes| bytes.truncate(50))),
        PackProblem::TooShort { length: 50 }
    );
    assert_eq!(
        problem(damaged(&destination, |bytes| bytes[0] = b'X')),
        PackProblem::BadMagic
    );
}

#[test]
fn a_cancelled_pack_leaves_no_pack_and_the_next_run_finishes_it() {
    let work = tempfile::tempdir().unwrap();
    let folder = work.path().join("photos");
    photo_folder(&folder, 2);
    let destination = work.path().join("photos.rpack");
    let cancelled = AtomicBool::new(true);
    match pack_image_folder(&folder, &destination, &options(), &cancelled) {
        Err(DatasetError::PackInterrupted {
            done: 0, total: 12, ..
        }) => {}
        other => panic!("expected PackInterrupted, got {other:?}"),
    }
    assert!(!destination.exists());
    let outcome = pack(&folder, &destination, &options());
    assert_eq!(outcome.train_records + outcome.test_records, 12);
    assert!(PackSplits::open_owned(&destination).is_ok());
}

#[test]
fn a_destination_that_is_a_folder_or_a_file_of_the_users_is_refused_before_any_work() {
    let work = tempfile::tempdir().unwrap();
    let folder = work.path().join("photos");
    photo_folder(&folder, 2);
    let photo = folder.join("train/cat/000.jpg");
    let before = std::fs::read(&photo).unwrap();
    for destination in [work.path().to_path_buf(), photo.clone(), PathBuf::from("/")] {
        match pack_image_folder(&folder, &destination, &options(), &NOT_CANCELLED) {
            Err(DatasetError::InvalidPackDestination { path, .. }) => assert_eq!(path, destination),
            other => panic!(
                "{}: expected InvalidPackDestination, got {other:?}",
                destination.display()
            ),
        }
    }
    assert_eq!(
        std::fs::read(&photo).unwrap(),
        before,
        "the photo is untouched"
    );
    let leftovers: Vec<_> = std::fs::read_dir(work.path())
        .unwrap()
        .map(|entry| entry.unwrap().file_name())
        .filter(|name| name.to_string_lossy().starts_with('.'))
        .collect();
    assert!(leftovers.is_empty(), "{leftovers:?}");
}

#[test]
fn a_folder_whose_every_training_file_fails_is_refused_and_strict_sees_resumed_skips() {
    let work = tempfile::tempdir().unwrap();
    let folder = work.path().join("bad");
    for (class, name) in [("cat", "a.jpg"), ("dog", "b.png")] {
        write(&folder.join("train").join(class).join(name), b"");
        write(&folder.join("train").join(class).join("z.txt.jpg"), b"text");
        write(
            &folder.join("test").join(class).join(name),
            &encode(20, 20, [1, 2, 3], ImageFormat::Png),
        );
    }
    let destination = work.path().join("bad.rpack");
    match pack_image_folder(&folder, &destination, &options(), &NOT_CANCELLED) {
        Err(DatasetError::ImageFolder { problem, .. }) => {
            assert_eq!(problem, ImageFolderProblem::NoDecodableImage);
        }
        other => panic!("expected ImageFolder, got {other:?}"),
    }
    assert!(!destination.exists());
    // The journal kept the two skipped files; a strict rerun resumes them and refuses the first.
    let strict = PackOptions {
        bad_files: BadFilePolicy::Refuse,
        ..options()
    };
    match pack_image_folder(&folder, &destination, &strict, &NOT_CANCELLED) {
        Err(DatasetError::BadSourceFile { path, reason }) => {
            assert_eq!(path, folder.join("train/cat/a.jpg"));
            assert_eq!(reason, SkipReason::Empty);
        }
        other => panic!("expected BadSourceFile, got {other:?}"),
    }
}

#[test]
fn a_val_folder_beside_test_is_listed_and_a_pack_inside_the_folder_is_passed_over() {
    let work = tempfile::tempdir().unwrap();
    let folder = work.path().join("photos");
    photo_folder(&folder, 2);
    write(
        &folder.join("val/cat/0.png"),
        &encode(20, 20, [200, 30, 30], ImageFormat::Png),
    );
    let inside = folder.join("inside.rpack");
    let first = pack(&folder, &inside, &options());
    assert!(
        first
            .skipped
            .iter()
            .any(|skipped| skipped.path == "val" && skipped.reason == SkipReason::UnusedSplitFolder),
        "{:?}",
        first.skipped
    );
    assert_eq!(
        pack(&folder, &inside, &options()).state,
        PackState::UpToDate
    );
    let outside = work.path().join("outside.rpack");
    pack(&folder, &outside, &options());
    assert_eq!(
        std::fs::read(&inside).unwrap(),
        std::fs::read(&outside).unwrap()
    );

    // Class folders alone: a class named `test` is a class like any other.
    let flat = work.path().join("flat");
    for class in ["test", "other"] {
        for index in 0..3 {
            write(
                &flat.join(class).join(format!("{index}.png")),
                &encode(12, 12, [9, 9, 9], ImageFormat::Png),
            );
        }
    }
    let outcome = pack(&flat, &work.path().join("flat.rpack"), &options());
    assert_eq!(outcome.classes, 2);
}

#[test]
fn waiting_for_another_packers_lock_ends_on_cancellation() {
    let work = tempfile::tempdir().unwrap();
    let folder = work.path().join("photos");
    photo_folder(&folder, 2);
    let destination = work.path().join("locked.rpack");
    let held = std::fs::File::create(work.path().join(".locked.rpack.lock")).unwrap();
    held.lock().unwrap();
    let cancelled = AtomicBool::new(true);
    assert!(matches!(
        pack_image_folder(&folder, &destination, &options(), &cancelled),
        Err(DatasetError::PackInterrupted { .. })
    ));
    drop(held);
    assert_eq!(
        pack(&folder, &destination, &options()).state,
        PackState::Written
    );
}
