//! [`DatasetSplits`]: the training and test splits of one dataset folder, opened together.

use std::path::Path;

use crate::catalogue::Split;
use crate::error::Result;
use crate::image_dataset::ImageDataset;

/// Both splits of a dataset folder holding the MNIST file names (raw or `.gz`), memory-mapped:
/// what a training run reads. Dropping it unmaps all four files (the training split first).
#[derive(Debug)]
pub struct DatasetSplits {
    /// The training split.
    pub train: ImageDataset,
    /// The test split.
    pub test: ImageDataset,
}

impl DatasetSplits {
    /// Memory-maps the training and test splits of `folder` (each as
    /// [`ImageDataset::open_mapped`] does).
    ///
    /// # Safety
    ///
    /// memmap2's contract, as for [`IdxArray::open_mapped`](crate::IdxArray::open_mapped): none
    /// of the mapped files (the four files, or their decompressed copies in `cache/`) may be
    /// modified or truncated while the splits exist.
    pub unsafe fn open_mapped(folder: impl AsRef<Path>) -> Result<Self> {
        let folder = folder.as_ref();
        // SAFETY: the caller upholds memmap2's contract for every file (see `# Safety`).
        let train = unsafe { ImageDataset::open_mapped(folder, Split::Train) }?;
        // SAFETY: as above.
        let test = unsafe { ImageDataset::open_mapped(folder, Split::Test) }?;
        Ok(DatasetSplits { train, test })
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::{DatasetError, StorageKind, write_idx};

    #[test]
    fn opens_both_splits_mapped() {
        let folder = tempfile::tempdir().unwrap();
        let files = [
            ("train-images-idx3-ubyte", 3),
            ("t10k-images-idx3-ubyte", 2),
        ];
        for (name, count) in files {
            let pixels = vec![7u8; count * 2 * 2];
            write_idx(folder.path().join(name), &[count, 2, 2], &pixels).unwrap();
        }
        write_idx(
            folder.path().join("train-labels-idx1-ubyte"),
            &[3],
            &[1u8, 2, 3],
        )
        .unwrap();
        write_idx(
            folder.path().join("t10k-labels-idx1-ubyte"),
            &[2],
            &[4u8, 5],
        )
        .unwrap();

        // SAFETY: the files are this test's own and nothing modifies them while mapped.
        let splits = unsafe { DatasetSplits::open_mapped(folder.path()) }.unwrap();
        assert_eq!(splits.train.split(), Some(Split::Train));
        assert_eq!(splits.test.split(), Some(Split::Test));
        assert_eq!(splits.train.labels(), &[1, 2, 3]);
        assert_eq!(splits.test.labels(), &[4, 5]);
        assert_eq!(splits.train.images().storage(), StorageKind::Mapped);
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
