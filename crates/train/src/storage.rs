//! [`DatasetStorage`]: whether a run maps its dataset files or reads them into memory, with the
//! mapping's contract on the constructor that chooses it.

use std::fmt;
use std::path::Path;

use reclaim_dataset::{
    CifarSplits, DatasetSplits, ImageDataset, PackSplits, Split, StorageKind, cifar::CifarVariant,
};
use serde::{Serialize, Serializer};

use crate::TrainError;

/// How a run holds its dataset: read into memory (safe, the default), or memory-mapped (no copy,
/// pages shared with the page cache, but the files must not change during the run).
///
/// It wraps reclaim-dataset's [`StorageKind`] ([`DatasetStorage::kind`]): the kind itself says
/// nothing of a promise, this type is the token that makes it.
///
/// Mapped storage is chosen with the `unsafe` [`DatasetStorage::mapped`], so that the promise
/// the mapping needs is made, once, by whoever chooses it; every function that opens the
/// dataset is then safe. (There is deliberately no `Deserialize`: a configuration read from a
/// file cannot make that promise.)
///
/// ```
/// use reclaim_train::DatasetStorage;
///
/// assert_eq!(DatasetStorage::default(), DatasetStorage::owned());
/// assert_eq!(DatasetStorage::owned().to_string(), "owned");
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DatasetStorage {
    kind: StorageKind,
}

impl Default for DatasetStorage {
    /// [`DatasetStorage::owned`].
    fn default() -> Self {
        DatasetStorage::owned()
    }
}

impl DatasetStorage {
    /// Read every file into memory when the dataset is opened (for MNIST, 55 MB of heap for
    /// the run's length, and the time to read it once). Nothing a file does afterwards affects
    /// the run.
    pub const fn owned() -> Self {
        DatasetStorage {
            kind: StorageKind::Owned,
        }
    }

    /// Memory-map the files: nothing is copied, pages are read on first touch and shared with
    /// the page cache and any other process mapping the same files.
    ///
    /// # Safety
    ///
    /// memmap2's contract for every file of the dataset folder (and the decompressed copies
    /// reclaim-dataset caches for `.gz` files): none may be modified or truncated by any
    /// process while a run, an evaluation or a warm-up that uses this storage has it open.
    ///
    /// What Reclaim does when the promise is broken anyway: in a program that installed
    /// reclaim-dataset's SIGBUS guard (`reclaim_dataset::install_sigbus_guard`, as the `reclaim`
    /// command does), a file truncated under the map (reads past its new end, which would kill
    /// the process with SIGBUS) stops the run with an error naming the file; without the guard
    /// the process dies of the signal. A label changed in place to a value out of range is
    /// caught by the loader's class-count check. Other in-place changes of bytes go unnoticed:
    /// the run reads the new bytes. The guard is a mitigation, not a guarantee.
    pub const unsafe fn mapped() -> Self {
        DatasetStorage {
            kind: StorageKind::Mapped,
        }
    }

    /// Mapped or owned.
    pub const fn kind(self) -> StorageKind {
        self.kind
    }

    /// Whether the files are mapped.
    pub const fn is_mapped(self) -> bool {
        matches!(self.kind, StorageKind::Mapped)
    }

    /// Opens both splits of `folder` with this storage.
    pub fn open_splits(self, folder: &Path) -> Result<DatasetSplits, TrainError> {
        Ok(match self.kind {
            StorageKind::Owned => DatasetSplits::open_owned(folder)?,
            // SAFETY: `mapped()` is the only way to this variant, and its caller promised
            // memmap2's contract for the dataset's files (see `DatasetStorage::mapped`).
            StorageKind::Mapped => unsafe { DatasetSplits::open_mapped(folder)? },
        })
    }

    /// Opens both splits of the CIFAR `variant` in `folder` with this storage.
    pub fn open_cifar_splits(
        self,
        folder: &Path,
        variant: CifarVariant,
    ) -> Result<CifarSplits, TrainError> {
        Ok(match self.kind {
            StorageKind::Owned => CifarSplits::open_owned(folder, variant)?,
            // SAFETY: as in `open_splits`: the caller of `mapped()` promised the contract for
            // every file of the dataset folder, the CIFAR record files included.
            StorageKind::Mapped => unsafe { CifarSplits::open_mapped(folder, variant)? },
        })
    }

    /// Opens both splits of the pack at `path` with this storage.
    pub fn open_pack_splits(self, path: &Path) -> Result<PackSplits, TrainError> {
        Ok(match self.kind {
            StorageKind::Owned => PackSplits::open_owned(path)?,
            // SAFETY: as in `open_splits`: the caller of `mapped()` promised the contract for
            // the run's data, the pack file included.
            StorageKind::Mapped => unsafe { PackSplits::open_mapped(path)? },
        })
    }

    /// Opens one split of `folder` with this storage.
    pub fn open_split(self, folder: &Path, split: Split) -> Result<ImageDataset, TrainError> {
        Ok(match self.kind {
            StorageKind::Owned => ImageDataset::open_owned(folder, split)?,
            // SAFETY: as in `open_splits`: the caller of `mapped()` promised the contract.
            StorageKind::Mapped => unsafe { ImageDataset::open_mapped(folder, split)? },
        })
    }
}

impl fmt::Display for DatasetStorage {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        fmt::Display::fmt(&self.kind, formatter)
    }
}

/// Written into `config.json` as `"owned"` or `"mapped"`.
impl Serialize for DatasetStorage {
    fn serialize<S: Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        serializer.collect_str(self)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn each_storage_opens_the_same_splits() {
        let folder = tempfile::tempdir().unwrap();
        crate::test_support::write_tiny_dataset(folder.path(), [4, 4], 6, 3);
        let owned = DatasetStorage::owned().open_splits(folder.path()).unwrap();
        // SAFETY: the files are this test's own and nothing changes them while mapped.
        let mapped = unsafe { DatasetStorage::mapped() };
        let mapped_splits = mapped.open_splits(folder.path()).unwrap();
        assert_eq!(owned.train.pixels(), mapped_splits.train.pixels());
        assert_eq!(owned.test.labels(), mapped_splits.test.labels());
        assert!(mapped.is_mapped() && !DatasetStorage::owned().is_mapped());
        assert_eq!(serde_json::to_string(&mapped).unwrap(), r#""mapped""#);
    }
}
