//! [`CifarDataset`]: one split of CIFAR-10 or CIFAR-100 (binary version), over one or more
//! record files, mapped or owned; [`CifarSplits`]: both splits of a folder.

use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use crate::cifar_variant::{
    CIFAR_CHANNELS, CIFAR_IMAGE_BYTES, CIFAR_IMAGE_HEIGHT, CIFAR_IMAGE_WIDTH, CifarLabelKind,
    CifarVariant,
};
use crate::error::{DatasetError, Result};
use crate::family::Split;
use crate::file_bytes::{AccessPattern, FileBytes, StorageKind};
use crate::fingerprint::FileFingerprint;
use crate::open::{entry_exists, open_regular};
use crate::splits::Splits;

/// The images and labels of one CIFAR split, validated on open: each file's length is a whole,
/// non-zero number of records ([`DatasetError::NotWholeRecords`]) and every label byte is below
/// its number of classes ([`DatasetError::RecordLabelOutOfRange`], naming the file and the
/// record).
///
/// A split may span several files (CIFAR-10's training split is five): they are indexed as one
/// sequence, in the catalogue's order. Images are lent as slices of the map or buffer, no copy:
/// 3072 bytes, channel-major (red, green, blue planes of 32 x 32, row-major), i.e. C x H x W.
///
/// `Send + Sync`: worker threads can share `&CifarDataset`. Dropping it unmaps (or frees) every
/// file.
#[derive(Debug)]
pub struct CifarDataset {
    variant: CifarVariant,
    label_kind: CifarLabelKind,
    split: Option<Split>,
    files: Vec<FileBytes>,
    /// The index of each file's first record, in file order.
    file_starts: Vec<usize>,
    len: usize,
}

/// Checks that `length` bytes are a whole, non-zero number of `variant`'s records.
pub(crate) fn check_record_length(path: &Path, length: u64, variant: CifarVariant) -> Result<()> {
    let record_length = variant.record_length();
    if length == 0 || !length.is_multiple_of(record_length as u64) {
        return Err(DatasetError::NotWholeRecords {
            path: path.to_path_buf(),
            length,
            record_length,
            variant,
        });
    }
    Ok(())
}

/// Checks the label bytes of one record (`record` is its position in the file, for errors).
fn check_record_labels(
    path: &Path,
    record_bytes: &[u8],
    record: usize,
    variant: CifarVariant,
) -> Result<()> {
    for kind in [CifarLabelKind::Coarse, CifarLabelKind::Fine] {
        let (Some(offset), Some(classes)) = (variant.label_offset(kind), variant.classes_of(kind))
        else {
            continue;
        };
        let label = record_bytes[offset];
        if usize::from(label) >= classes {
            return Err(DatasetError::RecordLabelOutOfRange {
                path: path.to_path_buf(),
                record,
                kind,
                label,
                classes,
            });
        }
    }
    Ok(())
}

/// Checks every record's labels in `bytes` (a whole number of records).
fn check_labels(path: &Path, bytes: &[u8], variant: CifarVariant) -> Result<()> {
    bytes
        .chunks_exact(variant.record_length())
        .enumerate()
        .try_for_each(|(record, record_bytes)| {
            check_record_labels(path, record_bytes, record, variant)
        })
}

/// Checks a CIFAR record file by reading it through once (nothing mapped, nothing kept): its
/// length is a whole, non-zero number of records and every label is in range. Returns the
/// number of records. Only regular files are opened.
///
/// ```
/// use reclaim_dataset::cifar::{CifarRecord, CifarVariant, verify_cifar_file, write_cifar_batch};
///
/// let folder = tempfile::tempdir()?;
/// let path = folder.path().join("test_batch.bin");
/// let image = [0u8; 3072];
/// let records = [CifarRecord::cifar10(3, &image), CifarRecord::cifar10(9, &image)];
/// write_cifar_batch(&path, CifarVariant::Cifar10, &records)?;
/// assert_eq!(verify_cifar_file(&path, CifarVariant::Cifar10)?, 2);
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn verify_cifar_file(path: &Path, variant: CifarVariant) -> Result<usize> {
    let (file, metadata) = open_regular(path)?;
    check_record_length(path, metadata.len(), variant)?;
    let mut reader = BufReader::with_capacity(1 << 20, file);
    let mut record_bytes = vec![0u8; variant.record_length()];
    let mut records = 0;
    loop {
        match read_record(&mut reader, &mut record_bytes, path)? {
            RecordRead::Whole => {
                check_record_labels(path, &record_bytes, records, variant)?;
                records += 1;
            }
            RecordRead::End => break,
            RecordRead::Partial(read) => {
                // The file changed length while being read.
                return Err(DatasetError::NotWholeRecords {
                    path: path.to_path_buf(),
                    length: (records * variant.record_length() + read) as u64,
                    record_length: variant.record_length(),
                    variant,
                });
            }
        }
    }
    // A file that shrank to a whole number of records (or to nothing) since its length was
    // taken.
    check_record_length(path, (records * variant.record_length()) as u64, variant)?;
    Ok(records)
}

/// Checks every record file of both splits of `variant` in `folder` (found as
/// [`locate_cifar_files`] finds them; each read through as [`verify_cifar_file`] does), training
/// files first: each file's path and number of records. The first missing or invalid file is
/// the error.
pub fn verify_cifar_folder(folder: &Path, variant: CifarVariant) -> Result<Vec<(PathBuf, usize)>> {
    let mut verified = Vec::new();
    for split in Split::ALL {
        for path in locate_cifar_files(folder, variant, split)? {
            let records = verify_cifar_file(&path, variant)?;
            verified.push((path, records));
        }
    }
    Ok(verified)
}

enum RecordRead {
    Whole,
    End,
    Partial(usize),
}

fn read_record(reader: &mut impl Read, buffer: &mut [u8], path: &Path) -> Result<RecordRead> {
    let mut filled = 0;
    while filled < buffer.len() {
        match reader.read(&mut buffer[filled..]) {
            Ok(0) => break,
            Ok(count) => filled += count,
            Err(error) if error.kind() == std::io::ErrorKind::Interrupted => {}
            Err(error) => return Err(DatasetError::io(path, error)),
        }
    }
    Ok(match filled {
        0 => RecordRead::End,
        full if full == buffer.len() => RecordRead::Whole,
        partial => RecordRead::Partial(partial),
    })
}

/// The paths of a split's files in `folder`: directly in it, or in the folder the archive
/// unpacks to (`cifar-10-batches-bin/`, `cifar-100-binary/`) inside it. The first file decides
/// which; [`DatasetError::MissingFile`] names the first file missing there (or, when neither
/// place has the first file, its path directly in `folder`).
pub fn locate_cifar_files(
    folder: &Path,
    variant: CifarVariant,
    split: Split,
) -> Result<Vec<PathBuf>> {
    let names = variant.file_names(split);
    let unpacked = folder.join(variant.archive().folder_in_archive);
    let base = [folder.to_path_buf(), unpacked]
        .into_iter()
        .find(|base| entry_exists(&base.join(names[0])))
        .ok_or_else(|| DatasetError::MissingFile {
            path: folder.join(names[0]),
        })?;
    names
        .iter()
        .map(|name| {
            let path = base.join(name);
            if entry_exists(&path) {
                Ok(path)
            } else {
                Err(DatasetError::MissingFile { path })
            }
        })
        .collect()
}

impl CifarDataset {
    /// Memory-maps one split of `variant` from `folder` (see [`locate_cifar_files`] for where
    /// the files are looked for) and validates it. Labels: CIFAR-10's, or CIFAR-100's fine ones
    /// (see [`CifarDataset::with_label_kind`]). Validation reads every record's label bytes
    /// once, which touches every page of the files (labels and pixels share pages).
    ///
    /// # Safety
    ///
    /// memmap2's contract, as for [`crate::idx::IdxArray::open_mapped`]: no file of the split may be
    /// modified or truncated while the dataset exists. If one is truncated anyway, on Linux with
    /// the guard installed ([`crate::install_sigbus_guard`]) a read past its end reads zeros
    /// instead of killing the process, and
    /// [`CifarDataset::verify_mapping_intact`] reports [`DatasetError::MappedFileChanged`]
    /// naming it; bytes changed in place are not caught (a label changed so could be out of
    /// range: [`CifarDataset::label`] does not check it again).
    pub unsafe fn open_mapped(
        folder: impl AsRef<Path>,
        variant: CifarVariant,
        split: Split,
    ) -> Result<Self> {
        let paths = locate_cifar_files(folder.as_ref(), variant, split)?;
        // SAFETY: the caller upholds memmap2's contract for every file (see `# Safety`).
        let mut dataset = unsafe { Self::open_mapped_files(variant, &paths) }?;
        dataset.split = Some(split);
        Ok(dataset)
    }

    /// Reads one split of `variant` from `folder` into memory (see
    /// [`CifarDataset::open_mapped`]). Safe: later changes to the files do not affect it.
    pub fn open_owned(
        folder: impl AsRef<Path>,
        variant: CifarVariant,
        split: Split,
    ) -> Result<Self> {
        let paths = locate_cifar_files(folder.as_ref(), variant, split)?;
        let mut dataset = Self::open_owned_files(variant, &paths)?;
        dataset.split = Some(split);
        Ok(dataset)
    }

    /// Memory-maps these record files, in this order, as one dataset (no split recorded). No
    /// paths make an empty dataset.
    ///
    /// # Safety
    ///
    /// As for [`CifarDataset::open_mapped`].
    pub unsafe fn open_mapped_files(
        variant: CifarVariant,
        paths: &[impl AsRef<Path>],
    ) -> Result<Self> {
        let check = |path: &Path, length: u64| check_record_length(path, length, variant);
        let files = paths
            .iter()
            // SAFETY: the caller upholds memmap2's contract for every file (see `# Safety`).
            .map(|path| unsafe { FileBytes::open_mapped(path.as_ref(), check) })
            .collect::<Result<Vec<_>>>()?;
        Self::from_files(variant, files)
    }

    /// Reads these record files into memory, in this order, as one dataset (no split recorded).
    /// No paths make an empty dataset.
    pub fn open_owned_files(variant: CifarVariant, paths: &[impl AsRef<Path>]) -> Result<Self> {
        let check = |path: &Path, length: u64| check_record_length(path, length, variant);
        let files = paths
            .iter()
            .map(|path| FileBytes::open_owned(path.as_ref(), check))
            .collect::<Result<Vec<_>>>()?;
        Self::from_files(variant, files)
    }

    /// Validates the bytes of one record file already in memory; `path_for_errors` names it in
    /// errors.
    pub fn from_bytes(
        variant: CifarVariant,
        path_for_errors: impl Into<PathBuf>,
        bytes: Vec<u8>,
    ) -> Result<Self> {
        let path = path_for_errors.into();
        check_record_length(&path, bytes.len() as u64, variant)?;
        Self::from_files(variant, vec![FileBytes::from_bytes(path, bytes)])
    }

    fn from_files(variant: CifarVariant, files: Vec<FileBytes>) -> Result<Self> {
        let record_length = variant.record_length();
        let mut file_starts = Vec::with_capacity(files.len());
        let mut len = 0usize;
        for file in &files {
            check_labels(file.path(), file.bytes(), variant)?;
            file_starts.push(len);
            len += file.bytes().len() / record_length;
        }
        Ok(CifarDataset {
            variant,
            label_kind: CifarLabelKind::Fine,
            split: None,
            files,
            file_starts,
            len,
        })
    }

    /// The same dataset reporting the labels of `kind` from [`CifarDataset::label`] (and
    /// [`CifarDataset::number_of_classes`], [`CifarDataset::class_names`]). Coarse labels of
    /// CIFAR-10 are [`DatasetError::NoCoarseLabels`].
    pub fn with_label_kind(mut self, kind: CifarLabelKind) -> Result<Self> {
        if self.variant.label_offset(kind).is_none() {
            return Err(DatasetError::NoCoarseLabels {
                variant: self.variant,
            });
        }
        self.label_kind = kind;
        Ok(self)
    }

    /// CIFAR-10 or CIFAR-100.
    pub fn variant(&self) -> CifarVariant {
        self.variant
    }

    /// The labels [`CifarDataset::label`] reports.
    pub fn label_kind(&self) -> CifarLabelKind {
        self.label_kind
    }

    /// The split it was opened as; `None` when opened from files or bytes.
    pub fn split(&self) -> Option<Split> {
        self.split
    }

    /// The number of images N, over all files.
    pub fn len(&self) -> usize {
        self.len
    }

    /// Whether N is 0 (only when opened from no files).
    pub fn is_empty(&self) -> bool {
        self.len == 0
    }

    /// Colour channels: 3.
    pub fn channels(&self) -> usize {
        CIFAR_CHANNELS
    }

    /// Image height in pixels: 32.
    pub fn image_height(&self) -> usize {
        CIFAR_IMAGE_HEIGHT
    }

    /// Image width in pixels: 32.
    pub fn image_width(&self) -> usize {
        CIFAR_IMAGE_WIDTH
    }

    /// Bytes per image: 3 x 32 x 32 = 3072.
    pub fn bytes_per_image(&self) -> usize {
        CIFAR_IMAGE_BYTES
    }

    /// The number of classes of the reported labels: 10, 100 (fine) or 20 (coarse).
    pub fn number_of_classes(&self) -> usize {
        self.class_names().len()
    }

    /// The names of the reported labels' classes, in label order.
    pub fn class_names(&self) -> &'static [&'static str] {
        // The kind was checked to exist for the variant when it was set.
        self.variant
            .class_names_of(self.label_kind)
            .unwrap_or_else(|| self.variant.class_names())
    }

    /// The whole record `index` (label bytes, then the image), zero copy.
    ///
    /// # Panics
    ///
    /// If `index >= self.len()`.
    pub fn record(&self, index: usize) -> &[u8] {
        assert!(
            index < self.len,
            "image index {index} out of range for {} images",
            self.len
        );
        let file = self.file_starts.partition_point(|&start| start <= index) - 1;
        let record_length = self.variant.record_length();
        let start = (index - self.file_starts[file]) * record_length;
        &self.files[file].bytes()[start..start + record_length]
    }

    /// Image `index`: 3072 bytes, C x H x W (the red plane, the green, the blue; each 32 x 32
    /// row-major), zero copy.
    ///
    /// # Panics
    ///
    /// If `index >= self.len()`.
    pub fn image(&self, index: usize) -> &[u8] {
        &self.record(index)[self.variant.label_bytes()..]
    }

    /// The label of item `index` of the reported kind (CIFAR-10's label, CIFAR-100's fine label
    /// unless [`CifarDataset::with_label_kind`] chose the coarse one).
    ///
    /// # Panics
    ///
    /// If `index >= self.len()`.
    pub fn label(&self, index: usize) -> u8 {
        let offset = self.variant.label_offset(self.label_kind).unwrap_or(0);
        self.record(index)[offset]
    }

    /// CIFAR-10's label or CIFAR-100's fine label of item `index`, whatever kind is reported.
    ///
    /// # Panics
    ///
    /// If `index >= self.len()`.
    pub fn fine_label(&self, index: usize) -> u8 {
        let offset = self.variant.label_offset(CifarLabelKind::Fine).unwrap_or(0);
        self.record(index)[offset]
    }

    /// CIFAR-100's coarse label of item `index`; `None` for CIFAR-10.
    ///
    /// # Panics
    ///
    /// If `index >= self.len()`.
    pub fn coarse_label(&self, index: usize) -> Option<u8> {
        let offset = self.variant.label_offset(CifarLabelKind::Coarse)?;
        Some(self.record(index)[offset])
    }

    /// How many items carry each reported label ([`CifarDataset::number_of_classes`] entries).
    /// A label changed in a mapped file since it was checked (against the contract) is skipped.
    pub fn label_histogram(&self) -> Vec<usize> {
        let mut counts = vec![0usize; self.number_of_classes()];
        for index in 0..self.len {
            if let Some(count) = counts.get_mut(usize::from(self.label(index))) {
                *count += 1;
            }
        }
        counts
    }

    /// The files read, in order.
    pub fn file_paths(&self) -> Vec<&Path> {
        self.files.iter().map(FileBytes::path).collect()
    }

    /// Whether the files are mapped or owned (owned for a dataset of no files).
    pub fn storage(&self) -> StorageKind {
        self.files
            .first()
            .map_or(StorageKind::Owned, FileBytes::kind)
    }

    /// Bytes mapped for all files (0 when owned).
    pub fn mapped_bytes(&self) -> usize {
        self.files.iter().map(FileBytes::mapped_bytes).sum()
    }

    /// Bytes owned on the heap for all files (0 when mapped).
    pub fn heap_bytes(&self) -> usize {
        self.files.iter().map(FileBytes::heap_bytes).sum()
    }

    /// [`DatasetError::MappedFileChanged`] naming the first file whose map faulted after it was
    /// truncated (its bytes have read as zeros since). One atomic load per file; always `Ok`
    /// for an owned dataset.
    pub fn verify_mapping_intact(&self) -> Result<()> {
        self.files
            .iter()
            .try_for_each(FileBytes::verify_mapping_intact)
    }

    /// Tells the kernel how the mapped files will be read (see [`crate::idx::IdxArray::advise`]).
    pub fn advise(&self, pattern: AccessPattern) -> Result<()> {
        self.files.iter().try_for_each(|file| file.advise(pattern))
    }

    /// The size and XXH3-128 of each file as held, in order: what a resumed run compares.
    /// Reads every byte once.
    pub fn fingerprint(&self) -> Vec<FileFingerprint> {
        self.files.iter().map(FileBytes::fingerprint).collect()
    }
}

/// The identity of a CIFAR dataset's files (see [`CifarSplits::fingerprint`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct CifarFingerprint {
    /// The variant.
    pub variant: CifarVariant,
    /// The training files, in order.
    pub train: Vec<FileFingerprint>,
    /// The test files, in order.
    pub test: Vec<FileFingerprint>,
}

/// Both splits of a CIFAR folder, mapped or read into memory. Dropping it unmaps (or frees)
/// every file.
pub type CifarSplits = Splits<CifarDataset>;

impl Splits<CifarDataset> {
    /// Memory-maps both splits of `variant` in `folder` (each as [`CifarDataset::open_mapped`]).
    ///
    /// # Safety
    ///
    /// As for [`CifarDataset::open_mapped`], for every file of both splits.
    pub unsafe fn open_mapped(folder: impl AsRef<Path>, variant: CifarVariant) -> Result<Self> {
        let folder = folder.as_ref();
        // SAFETY: the caller upholds memmap2's contract for every file (see `# Safety`).
        let train = unsafe { CifarDataset::open_mapped(folder, variant, Split::Train) }?;
        // SAFETY: as above.
        let test = unsafe { CifarDataset::open_mapped(folder, variant, Split::Test) }?;
        Ok(Splits { train, test })
    }

    /// Reads both splits of `variant` in `folder` into memory (each as
    /// [`CifarDataset::open_owned`]).
    pub fn open_owned(folder: impl AsRef<Path>, variant: CifarVariant) -> Result<Self> {
        let folder = folder.as_ref();
        let train = CifarDataset::open_owned(folder, variant, Split::Train)?;
        let test = CifarDataset::open_owned(folder, variant, Split::Test)?;
        Ok(Splits { train, test })
    }

    /// Both splits reporting the labels of `kind` (see [`CifarDataset::with_label_kind`]).
    pub fn with_label_kind(self, kind: CifarLabelKind) -> Result<Self> {
        Ok(Splits {
            train: self.train.with_label_kind(kind)?,
            test: self.test.with_label_kind(kind)?,
        })
    }

    /// Every file's size and XXH3-128 (see [`CifarDataset::fingerprint`]).
    pub fn fingerprint(&self) -> CifarFingerprint {
        CifarFingerprint {
            variant: self.train.variant(),
            train: self.train.fingerprint(),
            test: self.test.fingerprint(),
        }
    }

    /// [`CifarDataset::verify_mapping_intact`] for the training split, then the test split.
    pub fn verify_mapping_intact(&self) -> Result<()> {
        self.train.verify_mapping_intact()?;
        self.test.verify_mapping_intact()
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::cifar_writer::{CifarRecord, encode_cifar, write_cifar_batch};

    fn image(seed: u8) -> Vec<u8> {
        (0..CIFAR_IMAGE_BYTES)
            .map(|index| (index as u8).wrapping_mul(seed))
            .collect()
    }

    #[test]
    fn a_cifar_10_file_reads_back() {
        let images: Vec<Vec<u8>> = (1..=3).map(image).collect();
        let records: Vec<CifarRecord<'_>> = images
            .iter()
            .zip([3u8, 0, 9])
            .map(|(pixels, label)| CifarRecord::cifar10(label, pixels))
            .collect();
        let bytes = encode_cifar(CifarVariant::Cifar10, &records).unwrap();
        assert_eq!(bytes.len(), 3 * 3073);
        assert_eq!(bytes[3073], 0, "each record starts with its label");
        let dataset = CifarDataset::from_bytes(CifarVariant::Cifar10, "batch", bytes).unwrap();
        assert_eq!(dataset.len(), 3);
        assert_eq!(
            (
                dataset.channels(),
                dataset.image_height(),
                dataset.image_width()
            ),
            (3, 32, 32)
        );
        assert_eq!(dataset.image(1), images[1].as_slice());
        assert_eq!(dataset.label(2), 9);
        assert_eq!(dataset.coarse_label(0), None);
        assert_eq!(dataset.label_histogram()[3], 1);
        assert_eq!(dataset.class_names()[9], "truck");
        assert!(matches!(
            dataset.with_label_kind(CifarLabelKind::Coarse),
            Err(DatasetError::NoCoarseLabels {
                variant: CifarVariant::Cifar10
            })
        ));
    }

    #[test]
    fn cifar_100_reports_fine_labels_unless_asked_for_coarse_ones() {
        let pixels = image(7);
        let records = [
            CifarRecord::cifar100(19, 99, &pixels),
            CifarRecord::cifar100(4, 0, &pixels),
        ];
        let bytes = encode_cifar(CifarVariant::Cifar100, &records).unwrap();
        let dataset = CifarDataset::from_bytes(CifarVariant::Cifar100, "train.bin", bytes).unwrap();
        assert_eq!(dataset.label(0), 99);
        assert_eq!(dataset.coarse_label(0), Some(19));
        assert_eq!(dataset.number_of_classes(), 100);
        assert_eq!(dataset.image(1), pixels.as_slice());
        let coarse = dataset.with_label_kind(CifarLabelKind::Coarse).unwrap();
        assert_eq!(coarse.label(1), 4);
        assert_eq!(coarse.fine_label(1), 0);
        assert_eq!(coarse.number_of_classes(), 20);
        assert_eq!(coarse.class_names()[19], "vehicles_2");
    }

    #[test]
    fn lengths_that_are_not_whole_records_are_refused() {
        for length in [0, 1, 3072, 3074, 2 * 3073 + 5] {
            let result = CifarDataset::from_bytes(CifarVariant::Cifar10, "b", vec![0; length]);
            match result {
                Err(DatasetError::NotWholeRecords {
                    length: reported,
                    record_length: 3073,
                    ..
                }) => assert_eq!(reported, length as u64),
                other => panic!("{length}: expected NotWholeRecords, got {other:?}"),
            }
        }
    }

    #[test]
    fn the_first_bad_label_is_named_with_its_record() {
        let mut bytes = vec![0u8; 3 * 3074];
        bytes[2 * 3074] = 20; // coarse label of record 2
        bytes[3074 + 1] = 100; // fine label of record 1
        match CifarDataset::from_bytes(CifarVariant::Cifar100, "train.bin", bytes) {
            Err(DatasetError::RecordLabelOutOfRange {
                path,
                record: 1,
                kind: CifarLabelKind::Fine,
                label: 100,
                classes: 100,
            }) => assert_eq!(path, Path::new("train.bin")),
            other => panic!("expected RecordLabelOutOfRange, got {other:?}"),
        }
    }

    #[test]
    fn several_files_index_as_one_sequence() {
        let folder = tempfile::tempdir().unwrap();
        let pixels: Vec<Vec<u8>> = (0..6).map(image).collect();
        let mut expected_labels = Vec::new();
        for (file_index, name) in CifarVariant::Cifar10
            .file_names(Split::Train)
            .iter()
            .enumerate()
        {
            // Files of 1, 2, 1, 2, 1 records.
            let count = 1 + file_index % 2;
            let records: Vec<CifarRecord<'_>> = (0..count)
                .map(|record| {
                    let label = ((file_index + record) % 10) as u8;
                    expected_labels.push(label);
                    CifarRecord::cifar10(label, &pixels[file_index])
                })
                .collect();
            write_cifar_batch(folder.path().join(name), CifarVariant::Cifar10, &records).unwrap();
        }
        // SAFETY: the files are not modified while the dataset lives.
        let dataset = unsafe {
            CifarDataset::open_mapped(folder.path(), CifarVariant::Cifar10, Split::Train)
        }
        .unwrap();
        assert_eq!(dataset.len(), 7);
        assert_eq!(dataset.storage(), StorageKind::Mapped);
        assert_eq!(dataset.file_paths().len(), 5);
        let labels: Vec<u8> = (0..dataset.len())
            .map(|index| dataset.label(index))
            .collect();
        assert_eq!(labels, expected_labels);
        // Records 0 | 1 2 | 3 | 4 5 | 6 come from files 0 to 4.
        assert_eq!(dataset.image(3), pixels[2].as_slice());
        assert_eq!(dataset.image(5), pixels[3].as_slice());
        assert_eq!(dataset.image(6), pixels[4].as_slice());
        dataset.verify_mapping_intact().unwrap();
        let owned =
            CifarDataset::open_owned(folder.path(), CifarVariant::Cifar10, Split::Train).unwrap();
        assert_eq!(owned.fingerprint(), dataset.fingerprint());
        assert_eq!(owned.heap_bytes(), 7 * 3073);
        assert_eq!(dataset.mapped_bytes(), 7 * 3073);
    }

    #[test]
    #[should_panic(expected = "image index 1 out of range for 1 images")]
    fn an_index_out_of_range_panics_as_documented() {
        let dataset = CifarDataset::from_bytes(CifarVariant::Cifar10, "b", vec![0; 3073]).unwrap();
        let _ = dataset.image(1);
    }

    #[test]
    fn datasets_are_send_and_sync() {
        fn assert_send_sync<T: Send + Sync>() {}
        assert_send_sync::<CifarDataset>();
        assert_send_sync::<CifarSplits>();
    }

    #[test]
    fn files_are_found_in_the_folder_or_in_the_archive_s_folder() {
        let folder = tempfile::tempdir().unwrap();
        let error =
            locate_cifar_files(folder.path(), CifarVariant::Cifar100, Split::Test).unwrap_err();
        assert!(
            matches!(&error, DatasetError::MissingFile { path } if path == &folder.path().join("test.bin")),
            "{error:?}"
        );
        let unpacked = folder.path().join("cifar-100-binary");
        std::fs::create_dir(&unpacked).unwrap();
        std::fs::write(unpacked.join("test.bin"), b"").unwrap();
        assert_eq!(
            locate_cifar_files(folder.path(), CifarVariant::Cifar100, Split::Test).unwrap(),
            [unpacked.join("test.bin")]
        );
        // CIFAR-10's training split needs all five.
        std::fs::write(folder.path().join("data_batch_1.bin"), b"").unwrap();
        let error =
            locate_cifar_files(folder.path(), CifarVariant::Cifar10, Split::Train).unwrap_err();
        assert!(
            matches!(&error, DatasetError::MissingFile { path } if path == &folder.path().join("data_batch_2.bin")),
            "{error:?}"
        );
    }

    #[cfg(target_os = "linux")]
    #[test]
    fn a_truncated_file_is_reported_by_name() {
        // The program installs the guard (mapping does not); without it the read kills.
        crate::install_sigbus_guard().unwrap();
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("test.bin");
        let pixels = image(3);
        let records = vec![CifarRecord::cifar100(1, 2, &pixels); 8];
        write_cifar_batch(&path, CifarVariant::Cifar100, &records).unwrap();
        // SAFETY: deliberately broken: the file is truncated below while mapped, which the
        // truncation guard turns from a SIGBUS death into an error.
        let dataset = unsafe {
            CifarDataset::open_mapped(folder.path(), CifarVariant::Cifar100, Split::Test)
        }
        .unwrap();
        std::fs::OpenOptions::new()
            .write(true)
            .open(&path)
            .unwrap()
            .set_len(0)
            .unwrap();
        let sum: u64 = (0..dataset.len())
            .map(|index| {
                let image = std::hint::black_box(dataset.image(index));
                image.iter().map(|&pixel| u64::from(pixel)).sum::<u64>()
            })
            .sum();
        assert_eq!(sum, 0, "the truncated file's map reads zeros");
        match dataset.verify_mapping_intact() {
            Err(DatasetError::MappedFileChanged { path: reported }) => assert_eq!(reported, path),
            other => panic!("expected MappedFileChanged, got {other:?}"),
        }
    }

    #[test]
    fn verify_cifar_file_agrees_with_opening() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("test_batch.bin");
        let pixels = image(1);
        write_cifar_batch(
            &path,
            CifarVariant::Cifar10,
            &[
                CifarRecord::cifar10(1, &pixels),
                CifarRecord::cifar10(2, &pixels),
            ],
        )
        .unwrap();
        assert_eq!(verify_cifar_file(&path, CifarVariant::Cifar10).unwrap(), 2);
        assert!(matches!(
            verify_cifar_folder(folder.path(), CifarVariant::Cifar10),
            Err(DatasetError::MissingFile { .. })
        ));
        for name in CifarVariant::Cifar10.file_names(Split::Train) {
            std::fs::copy(&path, folder.path().join(name)).unwrap();
        }
        let verified = verify_cifar_folder(folder.path(), CifarVariant::Cifar10).unwrap();
        assert_eq!(verified.len(), 6);
        assert_eq!(verified[5], (path.clone(), 2));
        assert!(matches!(
            verify_cifar_file(&path, CifarVariant::Cifar100),
            Err(DatasetError::NotWholeRecords { .. })
        ));
        let mut bytes = std::fs::read(&path).unwrap();
        bytes[3073] = 10;
        std::fs::write(&path, &bytes).unwrap();
        assert!(matches!(
            verify_cifar_file(&path, CifarVariant::Cifar10),
            Err(DatasetError::RecordLabelOutOfRange {
                record: 1,
                label: 10,
                ..
            })
        ));
    }
}
