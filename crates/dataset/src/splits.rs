//! [`Splits`]: the training and test splits of one dataset, opened together. One type for
//! every format: [`DatasetSplits`] (IDX), [`crate::CifarSplits`] (CIFAR) and
//! [`crate::PackSplits`] (packs) are its instances, each with its own ways of opening.

use std::path::Path;

use crate::error::Result;
use crate::family::Split;
use crate::fingerprint::DatasetFingerprint;
use crate::image_dataset::ImageDataset;

/// The training and test splits of one dataset, of any format `D`. Dropping it unmaps (or
/// frees) every file (the training split first).
#[derive(Debug)]
pub struct Splits<D> {
    /// The training split.
    pub train: D,
    /// The test split.
    pub test: D,
}

impl<D> Splits<D> {
    /// The split asked for.
    pub fn split(&self, split: Split) -> &D {
        match split {
            Split::Train => &self.train,
            Split::Test => &self.test,
        }
    }
}

/// Both splits of a dataset folder holding the MNIST file names (raw or `.gz`), memory-mapped
/// or read into memory: what a training run reads.
pub type DatasetSplits = Splits<ImageDataset>;

impl Splits<ImageDataset> {
    /// Memory-maps the training and test splits of `folder` (each as
    /// [`ImageDataset::open_mapped`] does).
    ///
    /// # Safety
    ///
    /// memmap2's contract, as for [`IdxArray::open_mapped`](crate::idx::IdxArray::open_mapped): none
    /// of the mapped files (the four files, or their decompressed copies in `cache/`) may be
    /// modified or truncated while the splits exist. If one is truncated anyway, on Linux with
    /// the guard installed ([`crate::install_sigbus_guard`]) the read past its end reads zeros
    /// instead of killing the process, and its split's
    /// [`ImageDataset::verify_mapping_intact`] reports
    /// [`DatasetError::MappedFileChanged`](crate::DatasetError::MappedFileChanged) naming it;
    /// bytes changed in place are not caught (see `IdxArray::open_mapped` for both). Where that
    /// is not good enough, [`DatasetSplits::open_owned`] reads everything into memory instead.
    pub unsafe fn open_mapped(folder: impl AsRef<Path>) -> Result<Self> {
        let folder = folder.as_ref();
        // SAFETY: the caller upholds memmap2's contract for every file (see `# Safety`).
        let train = unsafe { ImageDataset::open_mapped(folder, Split::Train) }?;
        // SAFETY: as above.
        let test = unsafe { ImageDataset::open_mapped(folder, Split::Test) }?;
        Ok(Splits { train, test })
    }

    /// Reads the training and test splits of `folder` into memory (each as
    /// [`ImageDataset::open_owned`] does). Safe: later changes to the files do not affect the
    /// splits; costs the four files' size on the heap.
    pub fn open_owned(folder: impl AsRef<Path>) -> Result<Self> {
        let folder = folder.as_ref();
        let train = ImageDataset::open_owned(folder, Split::Train)?;
        let test = ImageDataset::open_owned(folder, Split::Test)?;
        Ok(Splits { train, test })
    }

    /// The size and XXH3-128 of each of the four files as held (header and data, decompressed),
    /// hashed in place: what a resumed run compares with its checkpoint's. Reads every byte
    /// once (XXH3 runs at memory speed; a mapped file's pages are read in if they are not).
    pub fn fingerprint(&self) -> DatasetFingerprint {
        DatasetFingerprint {
            train_images: self.train.images().fingerprint(),
            train_labels: self.train.label_array().fingerprint(),
            test_images: self.test.images().fingerprint(),
            test_labels: self.test.label_array().fingerprint(),
        }
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DatasetError, StorageKind, idx::write_idx};

    /// Writes a small dataset folder: 3 training and 2 test images of 2 x 2, with these
    /// training labels (the test labels are 4 and 5).
    fn write_dataset_folder(folder: &Path, train_labels: &[u8; 3]) {
        let files = [
            ("train-images-idx3-ubyte", 3),
            ("t10k-images-idx3-ubyte", 2),
        ];
        for (name, count) in files {
            let pixels = vec![7u8; count * 2 * 2];
            write_idx(folder.join(name), &[count, 2, 2], &pixels).unwrap();
        }
        write_idx(folder.join("train-labels-idx1-ubyte"), &[3], train_labels).unwrap();
        write_idx(folder.join("t10k-labels-idx1-ubyte"), &[2], &[4u8, 5]).unwrap();
    }

    #[test]
    fn opens_both_splits_mapped() {
        let folder = tempfile::tempdir().unwrap();
        write_dataset_folder(folder.path(), &[1, 2, 3]);

        // SAFETY: the files are this test's own and nothing modifies them while mapped.
        let splits = unsafe { DatasetSplits::open_mapped(folder.path()) }.unwrap();
        assert_eq!(splits.train.split(), Some(Split::Train));
        assert_eq!(splits.test.split(), Some(Split::Test));
        assert_eq!(splits.train.labels(), &[1, 2, 3]);
        assert_eq!(splits.test.labels(), &[4, 5]);
        assert_eq!(splits.train.images().storage(), StorageKind::Mapped);
    }

    #[test]
    fn opens_both_splits_owned() {
        let folder = tempfile::tempdir().unwrap();
        write_dataset_folder(folder.path(), &[1, 2, 3]);

        let splits = DatasetSplits::open_owned(folder.path()).unwrap();
        assert_eq!(splits.train.split(), Some(Split::Train));
        assert_eq!(splits.test.split(), Some(Split::Test));
        assert_eq!(splits.train.labels(), &[1, 2, 3]);
        assert_eq!(splits.test.labels(), &[4, 5]);
        assert_eq!(splits.test.image(1), &[7, 7, 7, 7]);
        for split in [&splits.train, &splits.test] {
            assert_eq!(split.images().storage(), StorageKind::Owned);
            assert_eq!(split.label_array().storage(), StorageKind::Owned);
            assert_eq!(split.mapped_bytes(), 0);
        }
        // Owned: the files can go, the splits stay.
        drop(folder);
        assert_eq!(splits.train.label(2), 3);
    }

    #[test]
    fn equal_contents_have_equal_fingerprints_and_one_label_changes_one_file_fingerprint() {
        let first = tempfile::tempdir().unwrap();
        let second = tempfile::tempdir().unwrap();
        write_dataset_folder(first.path(), &[1, 2, 3]);
        write_dataset_folder(second.path(), &[1, 2, 3]);
        // SAFETY: the files are this test's own and nothing modifies them while mapped.
        let first_mapped = unsafe { DatasetSplits::open_mapped(first.path()) }.unwrap();
        let first_owned = DatasetSplits::open_owned(first.path()).unwrap();
        let second_owned = DatasetSplits::open_owned(second.path()).unwrap();
        let fingerprint = first_mapped.fingerprint();
        assert_eq!(
            fingerprint,
            first_owned.fingerprint(),
            "mapped and owned alike"
        );
        assert_eq!(
            fingerprint,
            second_owned.fingerprint(),
            "same content, same print"
        );
        assert_eq!(fingerprint.train_labels.bytes, 8 + 3);
        assert_eq!(fingerprint.test_images.bytes, 16 + 2 * 2 * 2);

        // One label byte changed (a new file, renamed into place).
        write_idx(
            second.path().join("train-labels-idx1-ubyte"),
            &[3],
            &[1u8, 2, 4],
        )
        .unwrap();
        let changed = DatasetSplits::open_owned(second.path())
            .unwrap()
            .fingerprint();
        assert_ne!(changed.train_labels, fingerprint.train_labels);
        assert_eq!(changed.train_labels.bytes, fingerprint.train_labels.bytes);
        assert_eq!(changed.train_images, fingerprint.train_images);
        assert_eq!(changed.test_images, fingerprint.test_images);
        assert_eq!(changed.test_labels, fingerprint.test_labels);
    }

    #[cfg(feature = "serde")]
    #[test]
    fn fingerprints_implement_serialize_and_deserialize() {
        fn assert_serde<T: serde::Serialize + serde::de::DeserializeOwned>() {}
        assert_serde::<DatasetFingerprint>();
        assert_serde::<crate::FileFingerprint>();
    }

    #[test]
    fn a_missing_split_is_an_error_naming_its_file() {
        let folder = tempfile::tempdir().unwrap();
        write_idx(
            folder.path().join("train-images-idx3-ubyte"),
            &[1, 1, 1],
            &[0u8],
        )
        .unwrap();
        write_idx(folder.path().join("train-labels-idx1-ubyte"), &[1], &[0u8]).unwrap();
        // SAFETY: as above.
        let error = unsafe { DatasetSplits::open_mapped(folder.path()) }.unwrap_err();
        match error {
            DatasetError::MissingFile { path } => {
                assert!(path.to_string_lossy().contains("t10k-images-idx3-ubyte"));
            }
            other => panic!("expected MissingFile, got {other:?}"),
        }
    }
}
