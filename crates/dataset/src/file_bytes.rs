//! [`FileBytes`]: one file's bytes, memory-mapped (its range registered with the truncation
//! guard) or owned; [`StorageKind`] says which, [`AccessPattern`] hints how a map will be read.
//! IDX arrays and CIFAR record files both hold their bytes this way; what the bytes mean is
//! the holder's business.

use std::fmt;
use std::fs::File;
use std::io::Read;
use std::path::{Path, PathBuf};

use memmap2::Mmap;

use crate::error::{DatasetError, Result};
use crate::fingerprint::FileFingerprint;
use crate::mapping_guard::MappingRegistration;
use crate::open::open_regular;

/// Where a file's bytes live: mapped or owned ([`crate::idx::IdxArray::storage`],
/// [`crate::ImageDataset`], [`crate::CifarDataset::storage`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum StorageKind {
    /// A read-only memory map of the file: pages come from the page cache on demand and are
    /// unmapped when the holder is dropped.
    Mapped,
    /// A heap buffer holding the whole file.
    Owned,
}

impl fmt::Display for StorageKind {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self {
            StorageKind::Mapped => "mapped",
            StorageKind::Owned => "owned",
        })
    }
}

/// A hint to the kernel about how a mapped file will be read (`madvise`). Owned bytes ignore it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum AccessPattern {
    /// No particular order (the kernel's default readahead).
    Normal,
    /// Front to back, once: aggressive readahead (`MADV_SEQUENTIAL`).
    Sequential,
    /// Random order: no readahead (`MADV_RANDOM`).
    Random,
    /// The whole file is needed soon: start reading it in now (`MADV_WILLNEED`).
    WillNeed,
}

enum Storage {
    Mapped {
        /// The map's entry in the truncation guard. Declared (so dropped) before `map`: the range
        /// leaves the guard's table before it is unmapped, so no other map placed at the same
        /// addresses later can be mistaken for this one (see `mapping_guard`'s `# Safety`).
        registration: MappingRegistration,
        map: Mmap,
    },
    Owned(Vec<u8>),
}

/// One file's bytes, mapped or owned, with the path that names it in errors.
pub(crate) struct FileBytes {
    path: PathBuf,
    storage: Storage,
}

impl fmt::Debug for FileBytes {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter
            .debug_struct("FileBytes")
            .field("path", &self.path)
            .field("bytes", &self.bytes().len())
            .field("storage", &self.kind())
            .finish()
    }
}

impl FileBytes {
    /// Maps a regular file (see [`open_regular`]) and registers the map with the truncation
    /// guard before anything reads it. `check_length` sees the file's length first (an empty
    /// file, which cannot be mapped everywhere, is refused there before any map is made) and
    /// the map's length again (the file may have changed between `fstat` and `mmap`).
    ///
    /// # Safety
    ///
    /// memmap2's contract for [`memmap2::Mmap::map`]: the file must not be modified or
    /// truncated (by this or any other process) while the returned value exists. What happens
    /// when it is broken anyway is told once, on [`crate::idx::IdxArray::open_mapped`].
    pub(crate) unsafe fn open_mapped(
        path: &Path,
        check_length: impl Fn(&Path, u64) -> Result<()>,
    ) -> Result<Self> {
        let (file, metadata) = open_regular(path)?;
        check_length(path, metadata.len())?;
        // SAFETY: forwarded to the caller (memmap2's contract, under `# Safety` above); the map
        // is read-only.
        let map = unsafe { Mmap::map(&file) }.map_err(|error| DatasetError::io(path, error))?;
        // Registered before any byte is read, so even the first read is guarded (once the
        // program has installed the guard: registering installs nothing).
        let registration = MappingRegistration::register(&map);
        let file_bytes = FileBytes {
            path: path.to_path_buf(),
            storage: Storage::Mapped { registration, map },
        };
        check_length(path, file_bytes.bytes().len() as u64)?;
        Ok(file_bytes)
    }

    /// Reads a regular file into memory, checking its length with `check_length` before the
    /// buffer is allocated and again after reading (at most one byte more than announced, so a
    /// file grown since its length was taken shows as longer, not as an endless read).
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
        Ok(FileBytes::from_bytes(path.to_path_buf(), bytes))
    }

    /// Bytes already in memory, named `path` in errors.
    pub(crate) fn from_bytes(path: PathBuf, bytes: Vec<u8>) -> Self {
        FileBytes {
            path,
            storage: Storage::Owned(bytes),
        }
    }

    /// The path that names the bytes in errors.
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

    /// Mapped or owned.
    pub(crate) fn kind(&self) -> StorageKind {
        match self.storage {
            Storage::Mapped { .. } => StorageKind::Mapped,
            Storage::Owned(_) => StorageKind::Owned,
        }
    }

    /// The length of the map (the whole file), 0 when owned.
    pub(crate) fn mapped_bytes(&self) -> usize {
        match &self.storage {
            Storage::Mapped { map, .. } => map.len(),
            Storage::Owned(_) => 0,
        }
    }

    /// The buffer's capacity on the heap, 0 when mapped.
    pub(crate) fn heap_bytes(&self) -> usize {
        match &self.storage {
            Storage::Mapped { .. } => 0,
            Storage::Owned(bytes) => bytes.capacity(),
        }
    }

    /// [`DatasetError::MappedFileChanged`] naming the file once a read past the end of the
    /// truncated file has faulted (with the guard installed; see
    /// [`crate::install_sigbus_guard`]). Always `Ok` when owned. One atomic load.
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

    /// Whether the truncation guard holds this map: registered in the guard's table and the
    /// guard installed now (`false` when owned).
    #[cfg(all(test, target_os = "linux"))]
    pub(crate) fn is_mapping_guarded(&self) -> bool {
        match &self.storage {
            Storage::Mapped { registration, .. } => {
                registration.is_registered() && crate::is_sigbus_guard_installed()
            }
            Storage::Owned(_) => false,
        }
    }

    /// The size and XXH3-128 of the whole file as held, hashed in place.
    pub(crate) fn fingerprint(&self) -> FileFingerprint {
        FileFingerprint::of_bytes(self.bytes())
    }

    /// `madvise` for a map; nothing when owned or on platforms without `madvise`.
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

/// Reads `file` whole, allocating `expected` bytes up front and reading at most one byte more.
fn read_at_most(file: File, path: &Path, expected: usize) -> Result<Vec<u8>> {
    let mut bytes = Vec::with_capacity(expected);
    file.take(expected as u64 + 1)
        .read_to_end(&mut bytes)
        .map_err(|error| DatasetError::io(path, error))?;
    Ok(bytes)
}
