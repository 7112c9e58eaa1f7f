//! The vendored MNIST in data/mnist (.gz only; decompressed into data/mnist/cache/ on first use).

use std::path::PathBuf;

use reclaim_dataset::{
    AccessPattern, Family, ImageDataset, Split, StorageKind,
    catalogue::{sha256_of_file, verify_dataset_folder, workspace_data_folder},
    default_data_folder,
    idx::{IdxArray, decompress_gz_cached},
};

const TRAIN_LABELS_START: [u8; 10] = [5, 0, 4, 1, 9, 2, 1, 3, 1, 4];
const TEST_LABELS_START: [u8; 10] = [7, 2, 1, 0, 4, 1, 4, 9, 5, 9];

fn mnist_folder() -> PathBuf {
    workspace_data_folder().join("mnist")
}

fn check_split(dataset: &ImageDataset, split: Split, storage: StorageKind) {
    let (count, labels_start) = match split {
        Split::Train => (60_000, TRAIN_LABELS_START),
        Split::Test => (10_000, TEST_LABELS_START),
    };
    assert_eq!(dataset.split(), Some(split));
    assert_eq!(dataset.images().shape(), &[count, 28, 28]);
    assert_eq!(dataset.label_array().shape(), &[count]);
    assert_eq!(dataset.len(), count);
    assert_eq!(dataset.pixels_per_image(), 784);
    assert_eq!(dataset.pixels().len(), count * 784);
    assert_eq!(&dataset.labels()[..10], &labels_start);
    assert_eq!(dataset.number_of_classes(), 10);
    assert_eq!(dataset.images().storage(), storage);
    let histogram = dataset.label_histogram();
    assert_eq!(histogram.iter().sum::<usize>(), count);
    assert!(histogram.iter().all(|&n| n > count / 20), "{histogram:?}");
    // Every image has ink and background.
    let image = dataset.image(count - 1);
    assert!(image.contains(&0) && image.iter().any(|&p| p > 200));
    match storage {
        StorageKind::Mapped => {
            assert_eq!(dataset.mapped_bytes(), 16 + count * 784 + 8 + count);
            assert_eq!(dataset.heap_bytes(), 0);
        }
        StorageKind::Owned => {
            assert_eq!(dataset.mapped_bytes(), 0);
            assert!(dataset.heap_bytes() >= 16 + count * 784 + 8 + count);
        }
    }
}

#[test]
fn mnist_opens_mapped() {
    for split in Split::ALL {
        // SAFETY: the cache files are only ever replaced by rename, never modified in place.
        let dataset = unsafe { ImageDataset::open_mapped(mnist_folder(), split) }.unwrap();
        check_split(&dataset, split, StorageKind::Mapped);
        dataset.advise(AccessPattern::Sequential).unwrap();
        dataset.advise(AccessPattern::WillNeed).unwrap();
    }
}

#[test]
fn mnist_opens_owned() {
    for split in Split::ALL {
        let dataset = ImageDataset::open_owned(mnist_folder(), split).unwrap();
        check_split(&dataset, split, StorageKind::Owned);
    }
}

#[test]
fn mapped_and_owned_hold_the_same_bytes() {
    let owned = ImageDataset::open_owned(mnist_folder(), Split::Test).unwrap();
    // SAFETY: as above.
    let mapped = unsafe { ImageDataset::open_mapped(mnist_folder(), Split::Test) }.unwrap();
    assert!(owned.pixels() == mapped.pixels());
    assert!(owned.labels() == mapped.labels());
}

#[test]
fn gz_files_open_through_the_cache() {
    let gz = mnist_folder().join("t10k-labels-idx1-ubyte.gz");
    let array = IdxArray::open_owned(&gz).unwrap();
    assert_eq!(array.compressed_source(), Some(gz.as_path()));
    assert_eq!(
        array.path(),
        mnist_folder().join("cache").join("t10k-labels-idx1-ubyte")
    );
    assert_eq!(&array.as_u8().unwrap()[..10], &TEST_LABELS_START);
}

#[test]
fn decompressed_bytes_match_the_catalogue_sha256() {
    let verifications = verify_dataset_folder(&mnist_folder(), Family::Mnist).unwrap();
    assert_eq!(verifications.len(), 4);
    for verification in &verifications {
        assert!(verification.checksum_compared);
        let entry = Family::Mnist
            .file_named(&verification.path.file_name().unwrap().to_string_lossy())
            .unwrap();
        assert_eq!(Some(verification.sha256.as_str()), entry.sha256);
    }
    // The same digests, computed independently of the verifier from the decompressed files.
    for split in Split::ALL {
        for entry in Family::Mnist.files(split).both() {
            let cache = decompress_gz_cached(&mnist_folder().join(entry.compressed_name)).unwrap();
            assert_eq!(Some(sha256_of_file(&cache).unwrap().as_str()), entry.sha256);
        }
    }
}

#[test]
fn default_data_folder_finds_the_vendored_mnist() {
    // Without argument this depends on RECLAIM_DATA; with the workspace data folder as argument it
    // does not.
    let folder = default_data_folder(Some(&workspace_data_folder()), Family::Mnist);
    assert_eq!(folder, mnist_folder());
    assert_eq!(
        default_data_folder(Some(&mnist_folder()), Family::Mnist),
        mnist_folder()
    );
}
