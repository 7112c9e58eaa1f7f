//! [`PackDataset`]: one split of a pack, its records lent in place; [`PackSplits`]: both,
//! opened from one file, mapped or owned.

use std::path::Path;
use std::sync::Arc;

use crate::error::{DatasetError, Result};
use crate::family::Split;
use crate::file_bytes::{AccessPattern, FileBytes, StorageKind};
use crate::fingerprint::FileFingerprint;
use crate::pack_format::{
    PACK_HEADER_BYTES, PackHeader, PackImageShape, PackManifest, PackProblem, parse_pack_header,
    verify_pack_content,
};
use crate::splits::Splits;

/// One pack file, validated: its bytes, its header and its manifest, shared by both splits.
#[derive(Debug)]
struct PackFile {
    bytes: FileBytes,
    header: PackHeader,
    manifest: PackManifest,
}

/// One split of a pack: `len()` records of C x H x W `u8` (channel-major) with their labels,
/// lent from the file's bytes without a copy. `Send + Sync`; both splits of a pack share its
/// bytes, which are unmapped (or freed) when the last of them is dropped.
#[derive(Debug, Clone)]
pub struct PackDataset {
    file: Arc<PackFile>,
    split: Split,
    first_record: usize,
    len: usize,
}

/// Both splits of a pack (see [`crate::pack`]).
pub type PackSplits = Splits<PackDataset>;

/// The identity of a pack, for a resumed run to check it reads the same data: the size and
/// XXH3-128 of the whole file.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct PackFingerprint {
    /// The pack file as held.
    pub pack: FileFingerprint,
}

impl Splits<PackDataset> {
    /// Memory-maps the pack at `path` and validates all of it: header, lengths, the checksum
    /// of every byte (which reads the whole file once), every label, and the manifest.
    ///
    /// # Safety
    ///
    /// memmap2's contract, as for [`crate::idx::IdxArray::open_mapped`]: the pack must not be
    /// modified or truncated while either split exists. If it is truncated anyway, on Linux
    /// with the guard installed ([`crate::install_sigbus_guard`]) a read past its end reads
    /// zeros instead of killing the process and [`PackDataset::verify_mapping_intact`] reports
    /// [`DatasetError::MappedFileChanged`]; bytes changed in place after the check on open are
    /// not caught. `reclaim pack` only ever replaces a pack by renaming a new file over it,
    /// which leaves an open map intact.
    pub unsafe fn open_mapped(path: impl AsRef<Path>) -> Result<Self> {
        // SAFETY: the caller upholds memmap2's contract (see `# Safety`).
        let bytes = unsafe { FileBytes::open_mapped(path.as_ref(), check_pack_length) }?;
        Self::from_file_bytes(bytes)
    }

    /// Reads the pack at `path` into memory and validates it as [`PackSplits::open_mapped`]
    /// does. Safe: later changes to the file do not affect the splits.
    pub fn open_owned(path: impl AsRef<Path>) -> Result<Self> {
        let bytes = FileBytes::open_owned(path.as_ref(), check_pack_length)?;
        Self::from_file_bytes(bytes)
    }

    /// Validates a pack already in memory as [`PackSplits::open_mapped`] does; `path_for_errors`
    /// names it in errors. Never panics, whatever the bytes (the fuzz target's entry point).
    pub fn from_bytes(
        path_for_errors: impl Into<std::path::PathBuf>,
        bytes: Vec<u8>,
    ) -> Result<Self> {
        let path = path_for_errors.into();
        check_pack_length(&path, bytes.len() as u64)?;
        Self::from_file_bytes(FileBytes::from_bytes(path, bytes))
    }

    fn from_file_bytes(bytes: FileBytes) -> Result<Self> {
        let invalid = |problem: PackProblem| DatasetError::InvalidPack {
            path: bytes.path().to_path_buf(),
            problem,
        };
        let all = bytes.bytes();
        let header = parse_pack_header(all, all.len() as u64).map_err(invalid)?;
        verify_pack_content(&header, all).map_err(invalid)?;
        let records = header.train_records + header.test_records;
        let label = |index: u64| read_label(all, &header, index);
        if let Some(index) = (0..records).find(|&index| label(index) >= header.classes) {
            return Err(invalid(PackProblem::LabelOutOfRange {
                index,
                label: label(index),
                classes: header.classes,
            }));
        }
        let manifest_bytes = &all[header.manifest_offset as usize..];
        let manifest: PackManifest = serde_json::from_slice(manifest_bytes).map_err(|error| {
            invalid(PackProblem::ManifestUnreadable {
                reason: error.to_string(),
            })
        })?;
        manifest.check_against(&header, label).map_err(invalid)?;
        let file = Arc::new(PackFile {
            bytes,
            header,
            manifest,
        });
        let train_len = header.train_records as usize;
        Ok(Splits {
            train: PackDataset {
                file: Arc::clone(&file),
                split: Split::Train,
                first_record: 0,
                len: train_len,
            },
            test: PackDataset {
                file,
                split: Split::Test,
                first_record: train_len,
                len: header.test_records as usize,
            },
        })
    }

    /// The pack's manifest: classes, statistics, sources, skipped files.
    pub fn manifest(&self) -> &PackManifest {
        self.train.manifest()
    }

    /// The pack file's size and XXH3-128 as held.
    pub fn fingerprint(&self) -> PackFingerprint {
        PackFingerprint {
            pack: self.train.file.bytes.fingerprint(),
        }
    }

    /// [`PackDataset::verify_mapping_intact`] (both splits share the one file).
    pub fn verify_mapping_intact(&self) -> Result<()> {
        self.train.verify_mapping_intact()
    }
}

/// A file shorter than the header is refused before it is mapped or read.
fn check_pack_length(path: &Path, length: u64) -> Result<()> {
    if length < PACK_HEADER_BYTES as u64 {
        return Err(DatasetError::InvalidPack {
            path: path.to_path_buf(),
            problem: PackProblem::TooShort { length },
        });
    }
    Ok(())
}

/// The label of record `index` (below the header's record count, so within the file).
fn read_label(bytes: &[u8], header: &PackHeader, index: u64) -> u32 {
    let offset = (header.labels_offset + 4 * index) as usize;
    let mut word = [0u8; 4];
    word.copy_from_slice(&bytes[offset..offset + 4]);
    u32::from_le_bytes(word)
}

impl PackDataset {
    /// The number of records.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether the split has no record.
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Which split this is.
    pub fn split(&self) -> Split {
        self.split
    }

    /// The images' shape.
    pub fn image_shape(&self) -> PackImageShape {
        self.file.header.image
    }

    /// The bytes of one image, `channels * height * width`.
    pub fn bytes_per_image(&self) -> usize {
        self.file.header.image.record_bytes() as usize
    }

    /// The pixels of record `index` of this split (C x H x W), without a copy.
    ///
    /// # Panics
    ///
    /// If `index >= len()`.
    pub fn image(&self, index: usize) -> &[u8] {
        assert!(index < self.len, "record {index} of {}", self.len);
        let record_bytes = self.bytes_per_image();
        let start = PACK_HEADER_BYTES + (self.first_record + index) * record_bytes;
        &self.file.bytes.bytes()[start..start + record_bytes]
    }

    /// The label of record `index` of this split, below [`PackDataset::number_of_classes`]
    /// (checked on open).
    ///
    /// # Panics
    ///
    /// If `index >= len()`.
    pub fn label(&self, index: usize) -> u32 {
        assert!(index < self.len, "record {index} of {}", self.len);
        read_label(
            self.file.bytes.bytes(),
            &self.file.header,
            (self.first_record + index) as u64,
        )
    }

    /// The number of classes of the pack.
    pub fn number_of_classes(&self) -> usize {
        self.file.header.classes as usize
    }

    /// The class names, in label order.
    pub fn class_names(&self) -> &[String] {
        &self.file.manifest.classes
    }

    /// How many records of this split carry each label.
    pub fn label_histogram(&self) -> Vec<usize> {
        let mut counts = vec![0; self.number_of_classes()];
        for index in 0..self.len {
            counts[self.label(index) as usize] += 1;
        }
        counts
    }

    /// The pack's manifest.
    pub fn manifest(&self) -> &PackManifest {
        &self.file.manifest
    }

    /// The pack file's path.
    pub fn path(&self) -> &Path {
        self.file.bytes.path()
    }

    /// Mapped or owned.
    pub fn storage(&self) -> StorageKind {
        self.file.bytes.kind()
    }

    /// The whole file's length when mapped (shared with the other split), else 0.
    pub fn mapped_bytes(&self) -> usize {
        self.file.bytes.mapped_bytes()
    }

    /// The whole file's buffer when owned (shared with the other split), else 0.
    pub fn heap_bytes(&self) -> usize {
        self.file.bytes.heap_bytes()
    }

    /// [`DatasetError::MappedFileChanged`] naming the pack once a read past the end of the
    /// truncated file has faulted; always `Ok` when owned. One atomic load.
    pub fn verify_mapping_intact(&self) -> Result<()> {
        self.file.bytes.verify_mapping_intact()
    }

    /// `madvise` for the map (the whole file); nothing when owned.
    pub fn advise(&self, pattern: AccessPattern) -> Result<()> {
        self.file.bytes.advise(pattern)
    }
}
