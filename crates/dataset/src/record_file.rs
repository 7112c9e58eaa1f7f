//! [`RecordFile`]: a whole headerless file (a CIFAR batch), memory-mapped (its range registered
//! with the truncation guard, which catches a truncation once the program has installed it) or
//! read into memory. What the records mean is the caller's business.

use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use crate::array::AccessPattern;
use crate::error::{DatasetError, Result};
use crate::fingerprint::FileFingerprint;
use crate::mapping_guard::MappingRegistration;
use crate::open::open_regular;

enum Storage {
    Mapped {
        /// Declared (so dropped) before `map`, as in [`crate::IdxArray`]: the range leaves the
        /// guard's table before it is unmapped.
        registration: MappingRegistration,
        map: Mmap,
    },
    Owned(Vec<u8>),
}

/// One file's bytes, mapped or owned.
pub(crate) struct RecordFile {
    path: PathBuf,
    storage: Storage,
}

impl std::fmt::Debug for RecordFile {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        formatter
            .debug_struct("RecordFile")
            .field("path", &self.path)
            .field("bytes", &self.bytes().len())
            .field("mapped", &matches!(self.storage, Storage::Mapped { .. }))
            .finish()
    }
}

impl RecordFile {
    /// Maps a regular file. `check_length` sees its length first: an empty file (which cannot be
    /// mapped everywhere) is refused there before any map is made.
    ///
    /// # Safety
    ///
    /// memmap2's contract, as for [`crate::IdxArray::open_mapped`]: the file is not modified or
    /// truncated while the returned value exists.
    pub(crate) unsafe fn open_mapped(
        path: &Path,
        check_length: impl Fn(&Path, u64) -> Result<()>,
    ) -> Result<Self> {
        let (file, metadata) = open_regular(path)?;
        check_length(path, metadata.len())?;
        // SAFETY: the caller upholds memmap2's contract (see `# Safety`); the map is read-only.
        let map = unsafe { Mmap::map(&file) }.map_err(|error| DatasetError::io(path, error))?;
        let registration = MappingRegistration::register(&map);
        let record_file = RecordFile {
            path: path.to_path_buf(),
            storage: Storage::Mapped { registration, map },
        };
        // The file may have changed length between `fstat` and `mmap`.
        check_length(path, record_file.bytes().len() as u64)?;
        Ok(record_file)
    }

    /// Reads a regular file into memory, checking its length with `check_length` before the
    /// buffer is allocated and again after reading.
    pub(crate) fn open_owned(
        path: &Path,
        check_length: impl Fn(&Path, u64) -> Result<()>,
    ) -> Result<Self> {
        let (file, metadata) = open_regular(path)?;
        check_length(path, metadata.len())?;
        let expected = usize::try_from(metadata.len()).map_err(|_| DatasetError::SizeOverflow {
            path: path.to_path_buf(),
        })?;
        let bytes = read_at_most(file, path, expected)?;
        check_length(path, bytes.len() as u64)?;
        Ok(RecordFile {
            path: path.to_path_buf(),
            storage: Storage::Owned(bytes),
        })
    }

    /// Bytes already in memory, named `path` in errors.
    pub(crate) fn from_bytes(path: PathBuf, bytes: Vec<u8>) -> Self {
        RecordFile {
            path,
            storage: Storage::Owned(bytes),
        }
    }

    pub(crate) fn path(&self) -> &Path {
        &self.path
    }

    /// The whole file, zero copy.
    pub(crate) fn bytes(&self) -> &[u8] {
        match &self.storage {
            Storage::Mapped { map, .. } => map,
            Storage::Owned(bytes) => bytes,
        }
    }

    pub(crate) fn is_mapped(&self) -> bool {
        matches!(self.storage, Storage::Mapped { .. })
    }

    pub(crate) fn mapped_bytes(&self) -> usize {
        match &self.storage {
            Storage::Mapped { map, .. } => map.len(),
            Storage::Owned(_) => 0,
        }
    }

    pub(crate) fn heap_bytes(&self) -> usize {
        match &self.storage {
            Storage::Mapped { .. } => 0,
            Storage::Owned(bytes) => bytes.capacity(),
        }
    }

    /// [`DatasetError::MappedFileChanged`] once a read of the truncated file has faulted (with the
    /// guard installed; see [`crate::install_sigbus_guard`]).
    pub(crate) fn verify_mapping_intact(&self) -> Result<()> {
        match &self.storage {
            Storage::Mapped { registration, .. } if registration.has_faulted() => {
                Err(DatasetError::MappedFileChanged {
                    path: self.path.clone(),
                })
            }
            _ => Ok(()),
        }
    }

    pub(crate) fn fingerprint(&self) -> FileFingerprint {
        FileFingerprint::of_bytes(self.bytes())
    }

    /// `madvise` for a mapped file; nothing for an owned one.
    pub(crate) fn advise(&self, pattern: AccessPattern) -> Result<()> {
        #[cfg(unix)]
        if let Storage::Mapped { map, .. } = &self.storage {
            use memmap2::Advice;
            let advice = match pattern {
                AccessPattern::Normal => Advice::Normal,
                AccessPattern::Sequential => Advice::Sequential,
                AccessPattern::Random => Advice::Random,
                AccessPattern::WillNeed => Advice::WillNeed,
            };
            map.advise(advice)
                .map_err(|error| DatasetError::io(&self.path, error))?;
        }
        #[cfg(not(unix))]
        let _ = pattern;
        Ok(())
    }
}

/// Reads `file` whole, allocating `expected` bytes up front and reading at most one byte more
/// (so that a file grown since its length was taken shows as longer, not as an endless read).
fn read_at_most(file: File, path: &Path, expected: usize) -> Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(expected);
    file.take(expected as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| DatasetError::io(path, error))?;
    Ok(bytes)
}
