//! CIFAR-10 and CIFAR-100 record files, generated in the published byte layout by the crate's
//! writer: read back mapped and owned, and every kind of malformed file refused with a typed
//! error naming it.

use std::path::{Path, PathBuf};

use proptest::prelude::*;
use reclaim_dataset::{
    CifarDataset, CifarSplits, DatasetError, Split, StorageKind,
    cifar::{
        CIFAR_IMAGE_BYTES, CifarLabelKind, CifarRecord, CifarVariant, encode_cifar,
        locate_cifar_files, verify_cifar_file, write_cifar_batch,
    },
};

/// The image of item `item`: distinct bytes per item and per channel.
fn image_of(item: usize) -> Vec<u8> {
    (0..CIFAR_IMAGE_BYTES)
        .map(|index| (index / 1024 * 50 + item * 7 + index % 13) as u8)
        .collect()
}

/// (coarse, fine) labels of item `item` (coarse unused for CIFAR-10).
fn labels_of(variant: CifarVariant, item: usize) -> (u8, u8) {
    (
        (item % 20) as u8,
        (item % variant.number_of_classes()) as u8,
    )
}

fn record(variant: CifarVariant, item: usize, image: &[u8]) -> CifarRecord<'_> {
    let (coarse, fine) = labels_of(variant, item);
    match variant {
        CifarVariant::Cifar100 => CifarRecord::cifar100(coarse, fine, image),
        CifarVariant::Cifar10 => CifarRecord::cifar10(fine, image),
    }
}

/// Writes a split of `variant` into `folder`, `per_file` records in each of its files, items
/// numbered from `first_item`. Returns the number written.
fn write_split(
    folder: &Path,
    variant: CifarVariant,
    split: Split,
    per_file: usize,
    first_item: usize,
) -> usize {
    let mut item = first_item;
    for name in variant.file_names(split) {
        let images: Vec<Vec<u8>> = (item..item + per_file).map(image_of).collect();
        let records: Vec<CifarRecord<'_>> = images
            .iter()
            .enumerate()
            .map(|(offset, image)| record(variant, item + offset, image))
            .collect();
        write_cifar_batch(folder.join(name), variant, &records).unwrap();
        item += per_file;
    }
    item - first_item
}

fn write_both_splits(folder: &Path, variant: CifarVariant) -> (usize, usize) {
    let train = write_split(folder, variant, Split::Train, 3, 0);
    let test = write_split(folder, variant, Split::Test, 2, 1000);
    (train, test)
}

#[test]
fn both_variants_read_back_mapped_and_owned() {
    for variant in CifarVariant::ALL {
        let folder = tempfile::tempdir().unwrap();
        let (train_count, test_count) = write_both_splits(folder.path(), variant);
        // SAFETY: the files are not modified while the splits live.
        let mapped = unsafe { CifarSplits::open_mapped(folder.path(), variant) }.unwrap();
        let owned = CifarSplits::open_owned(folder.path(), variant).unwrap();
        assert_eq!(mapped.train.len(), train_count);
        assert_eq!(mapped.test.len(), test_count);
        assert_eq!(mapped.train.storage(), StorageKind::Mapped);
        assert_eq!(owned.train.storage(), StorageKind::Owned);
        assert_eq!(mapped.train.split(), Some(Split::Train));
        for (split, first_item) in [(Split::Train, 0), (Split::Test, 1000)] {
            let dataset = mapped.split(split);
            for index in 0..dataset.len() {
                let item = first_item + index;
                let (coarse, fine) = labels_of(variant, item);
                assert_eq!(dataset.image(index), image_of(item).as_slice());
                assert_eq!(dataset.label(index), fine);
                assert_eq!(
                    dataset.coarse_label(index),
                    (variant == CifarVariant::Cifar100).then_some(coarse)
                );
                assert_eq!(owned.split(split).image(index), dataset.image(index));
            }
        }
        assert_eq!(mapped.fingerprint(), owned.fingerprint());
        assert_eq!(
            mapped.fingerprint().train.len(),
            variant.file_names(Split::Train).len()
        );
        mapped.verify_mapping_intact().unwrap();
    }
}

#[test]
fn cifar_100_coarse_labels_can_be_chosen_for_both_splits() {
    let folder = tempfile::tempdir().unwrap();
    write_both_splits(folder.path(), CifarVariant::Cifar100);
    let splits = CifarSplits::open_owned(folder.path(), CifarVariant::Cifar100)
        .unwrap()
        .with_label_kind(CifarLabelKind::Coarse)
        .unwrap();
    assert_eq!(splits.test.number_of_classes(), 20);
    assert_eq!(
        splits.test.label(1),
        labels_of(CifarVariant::Cifar100, 1001).0
    );
    assert_eq!(
        splits.test.fine_label(1),
        labels_of(CifarVariant::Cifar100, 1001).1
    );
    let cifar10 = tempfile::tempdir().unwrap();
    write_both_splits(cifar10.path(), CifarVariant::Cifar10);
    let error = CifarSplits::open_owned(cifar10.path(), CifarVariant::Cifar10)
        .unwrap()
        .with_label_kind(CifarLabelKind::Coarse)
        .unwrap_err();
    assert!(
        matches!(error, DatasetError::NoCoarseLabels { .. }),
        "{error:?}"
    );
}

#[test]
fn the_archive_s_folder_layout_is_found() {
    let folder = tempfile::tempdir().unwrap();
    let unpacked = folder.path().join("cifar-10-batches-bin");
    write_split(&unpacked, CifarVariant::Cifar10, Split::Test, 4, 0);
    let dataset =
        CifarDataset::open_owned(folder.path(), CifarVariant::Cifar10, Split::Test).unwrap();
    assert_eq!(dataset.len(), 4);
    assert_eq!(dataset.file_paths(), [unpacked.join("test_batch.bin")]);
}

/// Every way of opening one split, owned and mapped: the error of each.
fn open_errors(folder: &Path, variant: CifarVariant, split: Split) -> Vec<DatasetError> {
    let owned = CifarDataset::open_owned(folder, variant, split).unwrap_err();
    // SAFETY: nothing modifies the files while mapped (and the open is refused anyway).
    let mapped = unsafe { CifarDataset::open_mapped(folder, variant, split) }.unwrap_err();
    vec![owned, mapped]
}

fn test_file(folder: &Path) -> PathBuf {
    folder.join("test_batch.bin")
}

#[test]
fn lengths_that_are_not_whole_records_are_refused_naming_the_file() {
    let image = image_of(0);
    let record_bytes =
        encode_cifar(CifarVariant::Cifar10, &[CifarRecord::cifar10(1, &image)]).unwrap();
    // Empty, truncated inside a record, one byte over, and a CIFAR-100 file read as CIFAR-10.
    let cases: Vec<Vec<u8>> = vec![
        Vec::new(),
        record_bytes[..100].to_vec(),
        [record_bytes.clone(), vec![0]].concat(),
        vec![0u8; 3074],
    ];
    for bytes in cases {
        let folder = tempfile::tempdir().unwrap();
        let path = test_file(folder.path());
        std::fs::write(&path, &bytes).unwrap();
        for error in open_errors(folder.path(), CifarVariant::Cifar10, Split::Test)
            .into_iter()
            .chain(verify_cifar_file(&path, CifarVariant::Cifar10).err())
        {
            match &error {
                DatasetError::NotWholeRecords {
                    path: reported,
                    length,
                    record_length: 3073,
                    variant: CifarVariant::Cifar10,
                } => {
                    assert_eq!(reported, &path);
                    assert_eq!(*length, bytes.len() as u64);
                }
                other => panic!(
                    "{} bytes: expected NotWholeRecords, got {other:?}",
                    bytes.len()
                ),
            }
            let text = error.to_string();
            assert!(
                text.contains("test_batch.bin") && text.contains("3073"),
                "{text}"
            );
        }
    }
}

#[test]
fn a_label_out_of_range_is_named_with_its_file_and_record() {
    let folder = tempfile::tempdir().unwrap();
    write_split(folder.path(), CifarVariant::Cifar10, Split::Train, 4, 0);
    // Record 2 of the third file.
    let path = folder.path().join("data_batch_3.bin");
    let mut bytes = std::fs::read(&path).unwrap();
    bytes[2 * 3073] = 200;
    std::fs::write(&path, &bytes).unwrap();
    for error in open_errors(folder.path(), CifarVariant::Cifar10, Split::Train) {
        match &error {
            DatasetError::RecordLabelOutOfRange {
                path: reported,
                record: 2,
                kind: CifarLabelKind::Fine,
                label: 200,
                classes: 10,
            } => assert_eq!(reported, &path),
            other => panic!("expected RecordLabelOutOfRange, got {other:?}"),
        }
        assert!(error.to_string().contains("record 2"), "{error}");
    }
}

#[test]
fn a_missing_file_is_named() {
    let folder = tempfile::tempdir().unwrap();
    write_split(folder.path(), CifarVariant::Cifar10, Split::Train, 1, 0);
    std::fs::remove_file(folder.path().join("data_batch_4.bin")).unwrap();
    for error in open_errors(folder.path(), CifarVariant::Cifar10, Split::Train) {
        assert!(
            matches!(&error, DatasetError::MissingFile { path } if path == &folder.path().join("data_batch_4.bin")),
            "{error:?}"
        );
    }
    let empty = tempfile::tempdir().unwrap();
    let error = locate_cifar_files(empty.path(), CifarVariant::Cifar100, Split::Train).unwrap_err();
    assert!(
        matches!(&error, DatasetError::MissingFile { path } if path == &empty.path().join("train.bin")),
        "{error:?}"
    );
}

#[cfg(unix)]
#[test]
fn a_fifo_or_a_folder_in_place_of_a_file_is_refused_without_blocking() {
    use std::ffi::CString;
    use std::os::unix::ffi::OsStrExt;
    use std::time::Duration;

    use reclaim_dataset::FileKind;

    let folder = tempfile::tempdir().unwrap();
    let fifo = folder.path().join("test.bin");
    let name = CString::new(fifo.as_os_str().as_bytes()).unwrap();
    // SAFETY: `name` is a valid NUL-terminated path that outlives the call.
    assert_eq!(unsafe { libc::mkfifo(name.as_ptr(), 0o644) }, 0);
    std::fs::create_dir(folder.path().join("train.bin")).unwrap();

    let (sender, receiver) = std::sync::mpsc::channel();
    let root = folder.path().to_path_buf();
    std::thread::spawn(move || {
        let mut errors = open_errors(&root, CifarVariant::Cifar100, Split::Test);
        errors.extend(open_errors(&root, CifarVariant::Cifar100, Split::Train));
        errors.extend(verify_cifar_file(&root.join("test.bin"), CifarVariant::Cifar100).err());
        let _ = sender.send(errors);
    });
    let errors = receiver
        .recv_timeout(Duration::from_secs(10))
        .expect("opening blocked");
    assert_eq!(errors.len(), 5);
    for (index, error) in errors.iter().enumerate() {
        let (expected_path, expected_kind) = if index < 2 || index == 4 {
            (fifo.clone(), FileKind::Fifo)
        } else {
            (folder.path().join("train.bin"), FileKind::Directory)
        };
        assert!(
            matches!(error, DatasetError::NotARegularFile { path, kind } if path == &expected_path && *kind == expected_kind),
            "{error:?}"
        );
    }
}

/// Records of a generated dataset: (coarse, fine, image seed).
fn records_strategy(variant: CifarVariant) -> impl Strategy<Value = Vec<(u8, u8, u8)>> {
    let fine_classes = variant.number_of_classes() as u8;
    prop::collection::vec((0u8..20, 0u8..fine_classes, any::<u8>()), 1..6)
}

fn seeded_image(seed: u8) -> Vec<u8> {
    (0..CIFAR_IMAGE_BYTES)
        .map(|index| seed.wrapping_add((index % 251) as u8))
        .collect()
}

fn encode_generated(variant: CifarVariant, items: &[(u8, u8, u8)]) -> Vec<u8> {
    let images: Vec<Vec<u8>> = items
        .iter()
        .map(|&(_, _, seed)| seeded_image(seed))
        .collect();
    let records: Vec<CifarRecord<'_>> = items
        .iter()
        .zip(&images)
        .map(|(&(coarse, fine, _), image)| match variant {
            CifarVariant::Cifar100 => CifarRecord::cifar100(coarse, fine, image),
            CifarVariant::Cifar10 => CifarRecord::cifar10(fine, image),
        })
        .collect();
    encode_cifar(variant, &records).unwrap()
}

fn variant_strategy() -> impl Strategy<Value = CifarVariant> {
    prop_oneof![Just(CifarVariant::Cifar10), Just(CifarVariant::Cifar100)]
}

proptest! {
    #![proptest_config(ProptestConfig::with_cases(48))]

    /// Any generated dataset reads back exactly: images, labels, coarse labels.
    #[test]
    fn any_generated_dataset_round_trips(
        (variant, items) in variant_strategy().prop_flat_map(|variant| (Just(variant), records_strategy(variant)))
    ) {
        let bytes = encode_generated(variant, &items);
        prop_assert_eq!(bytes.len(), items.len() * variant.record_length());
        let dataset = CifarDataset::from_bytes(variant, "generated.bin", bytes).unwrap();
        prop_assert_eq!(dataset.len(), items.len());
        for (index, &(coarse, fine, seed)) in items.iter().enumerate() {
            let expected_image = seeded_image(seed);
            prop_assert_eq!(dataset.image(index), expected_image.as_slice());
            prop_assert_eq!(dataset.label(index), fine);
            prop_assert_eq!(
                dataset.coarse_label(index),
                (variant == CifarVariant::Cifar100).then_some(coarse)
            );
        }
    }

    /// Any label byte set out of range is the typed error naming that record and label.
    #[test]
    fn any_corrupted_label_is_a_typed_error(
        (variant, items) in variant_strategy().prop_flat_map(|variant| (Just(variant), records_strategy(variant))),
        record_choice in any::<prop::sample::Index>(),
        coarse in any::<bool>(),
        excess in any::<u8>(),
    ) {
        let mut bytes = encode_generated(variant, &items);
        let record = record_choice.index(items.len());
        let kind = if coarse && variant == CifarVariant::Cifar100 {
            CifarLabelKind::Coarse
        } else {
            CifarLabelKind::Fine
        };
        let classes = variant.classes_of(kind).unwrap();
        let label = classes as u8 + excess % (256 - classes) as u8;
        let offset = variant.label_offset(kind).unwrap();
        bytes[record * variant.record_length() + offset] = label;
        let result = CifarDataset::from_bytes(variant, "corrupt.bin", bytes);
        match result {
            Err(DatasetError::RecordLabelOutOfRange { record: reported, kind: reported_kind, label: reported_label, classes: reported_classes, .. }) => {
                prop_assert_eq!(reported, record);
                prop_assert_eq!(reported_kind, kind);
                prop_assert_eq!(reported_label, label);
                prop_assert_eq!(reported_classes, classes);
            }
            other => prop_assert!(false, "expected RecordLabelOutOfRange, got {:?}", other),
        }
    }

    /// Arbitrary bytes never panic: a whole number of records opens or names a bad label, any
    /// other length is NotWholeRecords.
    #[test]
    fn arbitrary_bytes_never_panic(
        variant in variant_strategy(),
        head in prop::collection::vec(any::<u8>(), 0..8),
        records in 0usize..3,
        extra in 0usize..2,
    ) {
        let mut bytes = vec![0u8; records * variant.record_length() + extra];
        for (slot, value) in bytes.iter_mut().zip(&head) {
            *slot = *value;
        }
        let whole = records > 0 && extra == 0;
        match CifarDataset::from_bytes(variant, "arbitrary.bin", bytes) {
            Ok(dataset) => prop_assert!(whole && dataset.len() == records),
            Err(DatasetError::RecordLabelOutOfRange { .. }) => prop_assert!(whole),
            Err(DatasetError::NotWholeRecords { .. }) => prop_assert!(!whole),
            Err(other) => prop_assert!(false, "unexpected error {:?}", other),
        }
    }
}
