//! The CIFAR archives: `.tar.gz` files this test builds in the published layout (the real ones
//! cannot be downloaded here), unpacked atomically, hostile entries refused, and (feature
//! `fetch`) fetched through a local mirror with their MD5 checked.

use flate2::Compression;
use flate2::write::GzEncoder;
use reclaim_dataset::{
    ArchiveEntryProblem, CifarDataset, DatasetError, Split,
    cifar::{
        CIFAR_IMAGE_BYTES, CifarArchive, CifarRecord, CifarVariant, ExtractionLimits, encode_cifar,
        extract_cifar_archive, md5_hex, md5_of_file, verify_cifar_archive,
    },
};

mod common;

use common::files_under;

/// One archive entry: its raw name (written into the header as is, so that hostile names can
/// be made), its type and its bytes.
struct Entry {
    name: Vec<u8>,
    entry_type: tar::EntryType,
    data: Vec<u8>,
}

fn file(name: &str, data: Vec<u8>) -> Entry {
    Entry {
        name: name.as_bytes().to_vec(),
        entry_type: tar::EntryType::Regular,
        data,
    }
}

fn special(name: &str, entry_type: tar::EntryType) -> Entry {
    Entry {
        name: name.as_bytes().to_vec(),
        entry_type,
        data: Vec::new(),
    }
}

fn tar_gz(entries: &[Entry]) -> Vec<u8> {
    let mut builder = tar::Builder::new(GzEncoder::new(Vec::new(), Compression::fast()));
    for entry in entries {
        let mut header = tar::Header::new_gnu();
        header.as_old_mut().name[..entry.name.len()].copy_from_slice(&entry.name);
        header.set_entry_type(entry.entry_type);
        header.set_size(entry.data.len() as u64);
        header.set_mode(0o644);
        header.set_cksum();
        builder.append(&header, entry.data.as_slice()).unwrap();
    }
    builder.into_inner().unwrap().finish().unwrap()
}

/// A record file of `count` records of `variant`, labels `first_label`, `first_label + 1`, ...
fn batch(variant: CifarVariant, count: usize, first_label: usize) -> Vec<u8> {
    let image = vec![17u8; CIFAR_IMAGE_BYTES];
    let records: Vec<CifarRecord<'_>> = (0..count)
        .map(|index| {
            let label = ((first_label + index) % 10) as u8;
            match variant {
                CifarVariant::Cifar100 => CifarRecord::cifar100(label, label, &image),
                CifarVariant::Cifar10 => CifarRecord::cifar10(label, &image),
            }
        })
        .collect();
    encode_cifar(variant, &records).unwrap()
}

/// The entries of a well-formed archive of `variant`: its folder, its record files (2 records
/// each), its extra text files.
fn well_formed_entries(variant: CifarVariant) -> Vec<Entry> {
    let folder = variant.archive().folder_in_archive;
    let mut entries = vec![special(&format!("{folder}/"), tar::EntryType::Directory)];
    for split in Split::ALL {
        for (index, name) in variant.file_names(split).iter().enumerate() {
            entries.push(file(&format!("{folder}/{name}"), batch(variant, 2, index)));
        }
    }
    let text_name = match variant {
        CifarVariant::Cifar100 => "fine_label_names.txt",
        CifarVariant::Cifar10 => "batches.meta.txt",
    };
    entries.push(file(&format!("{folder}/{text_name}"), b"names\n".to_vec()));
    entries
}

/// Writes `bytes` as the variant's archive into a new folder; returns it and the archive's
/// catalogue entry with the MD5 of these bytes.
fn archive_on_disk(variant: CifarVariant, bytes: &[u8]) -> (tempfile::TempDir, CifarArchive) {
    let folder = tempfile::tempdir().unwrap();
    let mut archive = variant.archive();
    std::fs::write(folder.path().join(archive.file_name), bytes).unwrap();
    archive.md5 = md5_hex(bytes);
    (folder, archive)
}

#[test]
fn a_well_formed_archive_unpacks_into_place_and_opens() {
    for variant in CifarVariant::ALL {
        let bytes = tar_gz(&well_formed_entries(variant));
        let (source, archive) = archive_on_disk(variant, &bytes);
        let archive_path = source.path().join(archive.file_name);
        assert_eq!(
            verify_cifar_archive(&archive_path, &archive).unwrap(),
            md5_of_file(&archive_path).unwrap()
        );
        let destination = tempfile::tempdir().unwrap();
        let unpacked = extract_cifar_archive(
            &archive_path,
            &archive,
            destination.path(),
            &ExtractionLimits::default(),
        )
        .unwrap();
        assert_eq!(unpacked, destination.path().join(archive.folder_in_archive));
        // Only the folder, nothing temporary beside it.
        assert_eq!(std::fs::read_dir(destination.path()).unwrap().count(), 1);
        let expected_files = variant.file_names(Split::Train).len() + 1 + 1;
        assert_eq!(files_under(&unpacked).len(), expected_files);
        let dataset = CifarDataset::open_owned(destination.path(), variant, Split::Train).unwrap();
        assert_eq!(dataset.len(), 2 * variant.file_names(Split::Train).len());
        assert_eq!(dataset.image(0), vec![17u8; CIFAR_IMAGE_BYTES].as_slice());
    }
}

#[test]
fn unpacking_again_replaces_the_folder_whole() {
    let variant = CifarVariant::Cifar100;
    let bytes = tar_gz(&well_formed_entries(variant));
    let (source, archive) = archive_on_disk(variant, &bytes);
    let archive_path = source.path().join(archive.file_name);
    let destination = tempfile::tempdir().unwrap();
    let unpacked = destination.path().join(archive.folder_in_archive);
    std::fs::create_dir(&unpacked).unwrap();
    std::fs::write(unpacked.join("test.bin"), b"stale").unwrap();
    extract_cifar_archive(
        &archive_path,
        &archive,
        destination.path(),
        &ExtractionLimits::default(),
    )
    .unwrap();
    assert_eq!(
        std::fs::read(unpacked.join("test.bin")).unwrap(),
        batch(variant, 2, 0)
    );
    assert_eq!(std::fs::read_dir(destination.path()).unwrap().count(), 1);
}

/// Extracts `entries` (after a well-formed archive's) and returns the error; checks nothing
/// was written anywhere near the destination.
fn refused(entries: Vec<Entry>, limits: &ExtractionLimits) -> DatasetError {
    let variant = CifarVariant::Cifar10;
    let bytes = tar_gz(&entries);
    let (source, archive) = archive_on_disk(variant, &bytes);
    let archive_path = source.path().join(archive.file_name);
    let parent = tempfile::tempdir().unwrap();
    let destination = parent.path().join("cifar-10");
    let error = extract_cifar_archive(&archive_path, &archive, &destination, limits).unwrap_err();
    assert!(
        files_under(parent.path()).is_empty(),
        "nothing written: {:?}",
        files_under(parent.path())
    );
    assert_eq!(files_under(source.path()), [archive_path]);
    error
}

fn problem_of(error: &DatasetError) -> (String, ArchiveEntryProblem) {
    match error {
        DatasetError::UnsafeArchiveEntry { entry, problem, .. } => (entry.clone(), *problem),
        other => panic!("expected UnsafeArchiveEntry, got {other:?}"),
    }
}

#[test]
fn hostile_entries_are_refused_before_anything_is_written() {
    let cases = [
        (
            "../evil",
            tar::EntryType::Regular,
            ArchiveEntryProblem::ParentComponent,
        ),
        (
            "cifar-10-batches-bin/../../evil",
            tar::EntryType::Regular,
            ArchiveEntryProblem::ParentComponent,
        ),
        (
            "/tmp/evil",
            tar::EntryType::Regular,
            ArchiveEntryProblem::AbsolutePath,
        ),
        (
            "cifar-10-batches-bin/test_batch.bin",
            tar::EntryType::Symlink,
            ArchiveEntryProblem::Link,
        ),
        (
            "cifar-10-batches-bin/data_batch_1.bin",
            tar::EntryType::Link,
            ArchiveEntryProblem::Link,
        ),
        (
            "cifar-10-batches-bin/fifo",
            tar::EntryType::Fifo,
            ArchiveEntryProblem::SpecialFile,
        ),
        (
            "cifar-10-batches-bin/zero",
            tar::EntryType::Char,
            ArchiveEntryProblem::SpecialFile,
        ),
    ];
    for (name, entry_type, expected) in cases {
        // The hostile entry comes first: refused before any file is written; and last: refused
        // before the staged files are put in place.
        for first in [true, false] {
            let hostile = Entry {
                name: name.as_bytes().to_vec(),
                entry_type,
                data: if entry_type == tar::EntryType::Regular {
                    b"evil".to_vec()
                } else {
                    Vec::new()
                },
            };
            let mut entries = well_formed_entries(CifarVariant::Cifar10);
            if first {
                entries.insert(0, hostile);
            } else {
                entries.push(hostile);
            }
            let error = refused(entries, &ExtractionLimits::default());
            assert_eq!(problem_of(&error), (name.to_owned(), expected), "{name}");
            assert!(error.to_string().contains(name), "{error}");
        }
    }
}

#[test]
fn limits_are_enforced() {
    let limits = ExtractionLimits {
        maximum_entry_bytes: 3073,
        ..ExtractionLimits::default()
    };
    let error = refused(well_formed_entries(CifarVariant::Cifar10), &limits);
    assert_eq!(
        problem_of(&error).1,
        ArchiveEntryProblem::TooLarge { limit: 3073 }
    );
    let limits = ExtractionLimits {
        maximum_total_bytes: 4 * 3073,
        ..ExtractionLimits::default()
    };
    let error = refused(well_formed_entries(CifarVariant::Cifar10), &limits);
    assert_eq!(
        problem_of(&error),
        (
            "cifar-10-batches-bin/data_batch_3.bin".to_owned(),
            ArchiveEntryProblem::TotalTooLarge { limit: 4 * 3073 }
        )
    );
    let limits = ExtractionLimits {
        maximum_entries: 3,
        ..ExtractionLimits::default()
    };
    let error = refused(well_formed_entries(CifarVariant::Cifar10), &limits);
    assert_eq!(
        problem_of(&error).1,
        ArchiveEntryProblem::TooManyEntries { limit: 3 }
    );
}

#[test]
fn an_incomplete_or_malformed_archive_leaves_nothing() {
    let mut entries = well_formed_entries(CifarVariant::Cifar10);
    entries.retain(|entry| !entry.name.ends_with(b"test_batch.bin"));
    let error = refused(entries, &ExtractionLimits::default());
    assert!(
        matches!(&error, DatasetError::ArchiveIncomplete { entry, .. } if entry == "cifar-10-batches-bin/test_batch.bin"),
        "{error:?}"
    );

    let mut entries = well_formed_entries(CifarVariant::Cifar10);
    for entry in &mut entries {
        if entry.name.ends_with(b"test_batch.bin") {
            entry.data.truncate(3000);
        }
    }
    let error = refused(entries, &ExtractionLimits::default());
    match &error {
        DatasetError::NotWholeRecords {
            path, length: 3000, ..
        } => {
            assert!(
                path.ends_with("cifar-10-binary.tar.gz/cifar-10-batches-bin/test_batch.bin"),
                "{}",
                path.display()
            );
        }
        other => panic!("expected NotWholeRecords, got {other:?}"),
    }

    let mut entries = well_formed_entries(CifarVariant::Cifar10);
    entries[2].data[3073] = 10;
    let error = refused(entries, &ExtractionLimits::default());
    assert!(
        matches!(
            &error,
            DatasetError::RecordLabelOutOfRange {
                record: 1,
                label: 10,
                ..
            }
        ),
        "{error:?}"
    );

    let (source, archive) = archive_on_disk(CifarVariant::Cifar10, b"not a gzip stream");
    let destination = tempfile::tempdir().unwrap();
    let error = extract_cifar_archive(
        &source.path().join(archive.file_name),
        &archive,
        destination.path(),
        &ExtractionLimits::default(),
    )
    .unwrap_err();
    assert!(matches!(error, DatasetError::Archive { .. }), "{error:?}");
    assert!(files_under(destination.path()).is_empty());
}

#[cfg(feature = "fetch")]
mod fetch {
    use super::*;
    use reclaim_dataset::{
        DatasetName, ProgressDisplay,
        fetch::{FetchOptions, FetchOrigin, Mirror, fetch_cifar},
    };

    #[test]
    fn fetches_through_a_local_mirror_with_the_md5_checked() {
        let variant = CifarVariant::Cifar10;
        let bytes = tar_gz(&well_formed_entries(variant));
        let (mirror, archive) = archive_on_disk(variant, &bytes);
        let destination = tempfile::tempdir().unwrap();
        let folder = destination.path().join("cifar-10");
        // The local mirror comes first; the standard location is never reached.
        let mut options = FetchOptions::for_dataset(
            DatasetName::Cifar10,
            Some(&mirror.path().display().to_string()),
        )
        .unwrap();
        assert_eq!(
            options.mirrors[0],
            Mirror::Folder(mirror.path().to_path_buf())
        );
        assert_eq!(options.mirrors.len(), 2);
        options.progress = ProgressDisplay::Hidden;

        let fetched = fetch_cifar(&archive, &folder, &options).unwrap();
        assert_eq!(fetched.files_folder, folder.join("cifar-10-batches-bin"));
        assert_eq!(
            fetched.archive_path,
            Some(folder.join("cifar-10-binary.tar.gz"))
        );
        assert_eq!(
            fetched.origin,
            FetchOrigin::Mirror(mirror.path().display().to_string())
        );
        // SAFETY: the fetched files are not modified while the dataset lives.
        let test = unsafe { CifarDataset::open_mapped(&folder, variant, Split::Test) }.unwrap();
        assert_eq!(test.len(), 2);

        // Again: the files are there and valid; nothing is fetched, even with no mirror.
        let again = fetch_cifar(&archive, &folder, &FetchOptions::only(Vec::new())).unwrap();
        assert_eq!(again.origin, FetchOrigin::AlreadyPresent);
        assert_eq!(again.archive_path, None);

        // With the files gone, the archive kept beside them is unpacked again.
        std::fs::remove_dir_all(folder.join("cifar-10-batches-bin")).unwrap();
        let from_archive = fetch_cifar(&archive, &folder, &FetchOptions::only(Vec::new())).unwrap();
        assert_eq!(from_archive.origin, FetchOrigin::AlreadyPresent);
        assert_eq!(
            from_archive.archive_path,
            Some(folder.join("cifar-10-binary.tar.gz"))
        );
        assert_eq!(files_under(&folder).len(), 1 + 6 + 1);
    }

    #[test]
    fn an_md5_mismatch_leaves_no_file_behind() {
        let variant = CifarVariant::Cifar100;
        let bytes = tar_gz(&well_formed_entries(variant));
        let (mirror, mut archive) = archive_on_disk(variant, &bytes);
        archive.md5 = md5_hex(b"another archive");
        let destination = tempfile::tempdir().unwrap();
        let options = FetchOptions::only(vec![Mirror::Folder(mirror.path().to_path_buf())]);
        let error = fetch_cifar(&archive, destination.path(), &options).unwrap_err();
        match &error {
            DatasetError::AllMirrorsFailed {
                file_name,
                attempts,
            } => {
                assert_eq!(file_name, "cifar-100-binary.tar.gz");
                assert_eq!(attempts.len(), 1);
                assert!(
                    matches!(&attempts[0].error, DatasetError::Md5Mismatch { path, actual, .. }
                        if path == &destination.path().join("cifar-100-binary.tar.gz") && actual == &md5_hex(&bytes)),
                    "{:?}",
                    attempts[0].error
                );
            }
            other => panic!("expected AllMirrorsFailed, got {other:?}"),
        }
        assert!(files_under(destination.path()).is_empty());
    }

    #[test]
    fn a_hostile_archive_from_a_mirror_is_refused() {
        let variant = CifarVariant::Cifar10;
        let mut entries = well_formed_entries(variant);
        entries.insert(0, file("../evil", b"evil".to_vec()));
        let bytes = tar_gz(&entries);
        let (mirror, archive) = archive_on_disk(variant, &bytes);
        let parent = tempfile::tempdir().unwrap();
        let folder = parent.path().join("cifar-10");
        let options = FetchOptions::only(vec![Mirror::Folder(mirror.path().to_path_buf())]);
        let error = fetch_cifar(&archive, &folder, &options).unwrap_err();
        let DatasetError::AllMirrorsFailed { attempts, .. } = &error else {
            panic!("expected AllMirrorsFailed, got {error:?}");
        };
        assert_eq!(
            problem_of(&attempts[0].error).1,
            ArchiveEntryProblem::ParentComponent
        );
        assert!(!parent.path().join("evil").exists());
        assert!(
            files_under(parent.path()).is_empty(),
            "the archive is not kept"
        );
    }
}
