//! The crate's one error type.

use std::path::PathBuf;

use crate::element::ElementType;
use crate::open::FileKind;

/// Everything that can go wrong while reading, writing, checking or fetching IDX files.
///
/// Every variant that concerns a file names it. Input/output and decompression failures keep the
/// underlying [`std::io::Error`] reachable through [`std::error::Error::source`]; their `Display`
/// message does not repeat it (print the chain, e.g. with `anyhow`'s `{:#}`, to see both).
#[derive(Debug, thiserror::Error)]
#[non_exhaustive]
pub enum DatasetError {
    /// Reading, writing, creating or renaming `path` failed.
    #[error("{path}: input/output error")]
    Io {
        /// The file or folder concerned.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The file holds fewer than the 4 bytes of an IDX magic number.
    #[error("{path}: too short for an IDX header ({length} bytes, at least 4 needed)")]
    TooShortForHeader {
        /// The file.
        path: PathBuf,
        /// Its length in bytes.
        length: u64,
    },
    /// The first two bytes are not `00 00`.
    #[error(
        "{path}: bad IDX magic number: first two bytes are {:02x} {:02x}, expected 00 00",
        found[0],
        found[1]
    )]
    BadMagic {
        /// The file.
        path: PathBuf,
        /// The two bytes found.
        found: [u8; 2],
    },
    /// The third byte is not one of the six IDX element types.
    #[error(
        "{path}: unknown IDX element type code 0x{code:02x} (expected 08, 09, 0b, 0c, 0d or 0e)"
    )]
    UnknownElementType {
        /// The file.
        path: PathBuf,
        /// The type code found.
        code: u8,
    },
    /// The fourth byte (the number of dimensions) is 0.
    #[error("{path}: IDX header has rank 0")]
    ZeroRank {
        /// The file.
        path: PathBuf,
    },
    /// The file ends before its `rank` big-endian u32 dimension sizes.
    #[error(
        "{path}: IDX dimensions cut off: rank {rank} needs a {} byte header, file has {length} bytes",
        4 + 4 * u64::from(*rank)
    )]
    DimensionsCutOff {
        /// The file.
        path: PathBuf,
        /// The rank the header announces.
        rank: u8,
        /// The file's length in bytes.
        length: u64,
    },
    /// The product of the dimensions times the element size (plus the header) overflows.
    #[error("{path}: IDX dimensions overflow: the data size does not fit in 64 bits or in memory")]
    SizeOverflow {
        /// The file.
        path: PathBuf,
    },
    /// The file is shorter than its header says.
    #[error("{path}: IDX data truncated: header announces {expected} bytes, file has {actual}")]
    Truncated {
        /// The file.
        path: PathBuf,
        /// The length the header announces (header plus data), in bytes.
        expected: u64,
        /// The actual length in bytes.
        actual: u64,
    },
    /// The file is longer than its header says.
    #[error(
        "{path}: trailing bytes after IDX data: header announces {expected} bytes, file has {actual}"
    )]
    TrailingBytes {
        /// The file.
        path: PathBuf,
        /// The length the header announces (header plus data), in bytes.
        expected: u64,
        /// The actual length in bytes.
        actual: u64,
    },
    /// A memory-mapped file was truncated while mapped (also what overwriting it in place, as
    /// `cp` onto it does, starts with): a read past its new end faulted, and the map has read as
    /// zeros since. Reported by
    /// [`IdxArray::verify_mapping_intact`](crate::idx::IdxArray::verify_mapping_intact), only while the
    /// program has the `SIGBUS` guard installed ([`crate::install_sigbus_guard`]; without it the
    /// read kills the process). On Linux a read error of the file's storage during the page
    /// fault looks the same to the guard and is reported as this too.
    #[error(
        "{path} was truncated or replaced while mapped: its data can no longer be trusted; the run stopped"
    )]
    MappedFileChanged {
        /// The mapped file.
        path: PathBuf,
    },
    /// [`install_sigbus_guard`](crate::install_sigbus_guard) could not install the `SIGBUS`
    /// guard: `sigaction` failed. Nothing was changed.
    #[error("cannot install the SIGBUS guard for mapped files")]
    SigbusGuardInstallFailed {
        /// The operating system's error.
        source: std::io::Error,
    },
    /// [`install_sigbus_guard`](crate::install_sigbus_guard) was called after another `SIGBUS`
    /// handler replaced the guard it had installed: the guard is not installed over it again
    /// (that handler may forward to the guard, and the guard forwarding back would loop), so
    /// truncated mapped files are not caught.
    #[error(
        "the SIGBUS guard for mapped files was replaced by another SIGBUS handler and is not installed again"
    )]
    SigbusGuardReplaced,
    /// The array holds another element type than the one asked for.
    #[error("{path}: wrong element type: expected {expected}, file holds {found}")]
    WrongElementType {
        /// The file.
        path: PathBuf,
        /// The element type asked for.
        expected: ElementType,
        /// The element type the file holds.
        found: ElementType,
    },
    /// The array has another number of dimensions than required (images N x H x W, labels N).
    #[error("{path}: wrong number of dimensions: expected {expected}, file has {found}")]
    UnexpectedRank {
        /// The file.
        path: PathBuf,
        /// The rank required.
        expected: usize,
        /// The file's rank.
        found: usize,
    },
    /// The array's shape differs from the catalogue's for that file.
    #[error(
        "{path}: unexpected shape: expected {}, file holds {}",
        shape_text(expected),
        shape_text(found)
    )]
    UnexpectedShape {
        /// The file.
        path: PathBuf,
        /// The shape the catalogue lists.
        expected: Vec<usize>,
        /// The file's shape.
        found: Vec<usize>,
    },
    /// The images and labels files hold different numbers of items.
    #[error("{images_path} holds {images} images but {labels_path} holds {labels} labels")]
    CountMismatch {
        /// The images file.
        images_path: PathBuf,
        /// The labels file.
        labels_path: PathBuf,
        /// The number of images.
        images: usize,
        /// The number of labels.
        labels: usize,
    },
    /// A label is not below the number of classes.
    #[error(
        "{path}: label {label} at index {index} is not below the number of classes ({classes})"
    )]
    LabelOutOfRange {
        /// The labels file.
        path: PathBuf,
        /// The position of the first bad label.
        index: usize,
        /// Its value.
        label: u8,
        /// The number of classes.
        classes: usize,
    },
    /// A CIFAR file's length is not a whole, non-zero number of records (an empty file, a
    /// truncated download, or a file of the other CIFAR variant).
    #[error(
        "{path}: {length} bytes is not a whole, non-zero number of {record_length}-byte {variant} records"
    )]
    NotWholeRecords {
        /// The file.
        path: PathBuf,
        /// Its length in bytes.
        length: u64,
        /// The length of one record of `variant`.
        record_length: usize,
        /// The CIFAR variant the file was read as.
        variant: crate::cifar_variant::CifarVariant,
    },
    /// A label byte of a CIFAR record is not below the number of classes of its kind.
    #[error(
        "{path}: record {record}: {kind} label {label} is not below the number of {kind} classes ({classes})"
    )]
    RecordLabelOutOfRange {
        /// The file.
        path: PathBuf,
        /// The position of the first bad record in that file (from 0).
        record: usize,
        /// Which label byte of the record (CIFAR-10's only label is [`crate::cifar::CifarLabelKind::Fine`]).
        kind: crate::cifar_variant::CifarLabelKind,
        /// Its value.
        label: u8,
        /// The number of classes of that kind.
        classes: usize,
    },
    /// Coarse labels were asked of a CIFAR variant that has none (CIFAR-10).
    #[error("{variant} has no coarse labels (only CIFAR-100 has)")]
    NoCoarseLabels {
        /// The variant asked.
        variant: crate::cifar_variant::CifarVariant,
    },
    /// A record given to the CIFAR writer is not a valid record of its variant.
    #[error("{}{variant} record {index}: {problem}", path_prefix(path.as_ref()))]
    InvalidCifarRecord {
        /// The file being written, if any.
        path: Option<PathBuf>,
        /// The variant being written.
        variant: crate::cifar_variant::CifarVariant,
        /// The position of the record among those given.
        index: usize,
        /// What is wrong with it.
        problem: CifarRecordProblem,
    },
    /// A dataset name (e.g. of a `--dataset` option) is not in the catalogue.
    #[error(
        "{name:?}: unknown dataset (expected mnist, fashion-mnist, kmnist, cifar-10 or cifar-100)"
    )]
    UnknownDatasetName {
        /// The name as given.
        name: String,
    },
    /// No files of a dataset were found where the data folder points (see
    /// [`crate::resolve_dataset_folder`]).
    #[error(
        "{given}{} (looked in {} and {}): no {dataset} files ({example}, ...)",
        origin.describe(),
        given.display(),
        dataset_folder.display(),
        example = dataset.example_file_name()
    )]
    DatasetFolderNotFound {
        /// The data folder as given (argument, environment variable or default).
        given: PathBuf,
        /// Where that folder came from.
        origin: crate::family::DataFolderOrigin,
        /// The dataset's subfolder also looked in.
        dataset_folder: PathBuf,
        /// The dataset looked for.
        dataset: crate::dataset_name::DatasetName,
    },
    /// The MD5 of a downloaded or local archive differs from the one published for it.
    #[error("{path}: MD5 mismatch: expected {expected}, found {actual}")]
    Md5Mismatch {
        /// The archive.
        path: PathBuf,
        /// The published MD5, lowercase hex.
        expected: String,
        /// The MD5 found, lowercase hex.
        actual: String,
    },
    /// Reading a `.tar.gz` archive failed (corrupt, cut short, or not a gzip'd tar).
    #[error("{path}: cannot read the archive")]
    Archive {
        /// The archive.
        path: PathBuf,
        /// The decoder's or tar reader's error.
        source: std::io::Error,
    },
    /// An archive entry was refused before anything of it was written.
    #[error("{archive}: entry {entry:?} refused: {problem}")]
    UnsafeArchiveEntry {
        /// The archive.
        archive: PathBuf,
        /// The entry's path as stored in the archive (lossily decoded).
        entry: String,
        /// Why it was refused.
        problem: ArchiveEntryProblem,
    },
    /// An archive lacks a file the dataset needs (nothing was put in place).
    #[error("{archive}: no entry {entry:?} in the archive")]
    ArchiveIncomplete {
        /// The archive.
        archive: PathBuf,
        /// The entry looked for, e.g. `cifar-10-batches-bin/test_batch.bin`.
        entry: String,
    },
    /// A shape and data given to the writer do not describe a valid IDX array.
    #[error(
        "{}invalid IDX shape {} for {element_count} elements: {problem}",
        path_prefix(path.as_ref()),
        shape_text(shape)
    )]
    InvalidShape {
        /// The file being written, if any.
        path: Option<PathBuf>,
        /// The shape given.
        shape: Vec<usize>,
        /// The number of elements given.
        element_count: usize,
        /// What is wrong with it.
        problem: ShapeProblem,
    },
    /// A path that should end in `.gz` does not.
    #[error("{path}: not a .gz path")]
    NotGzipPath {
        /// The path.
        path: PathBuf,
    },
    /// Decompressing a gzip file failed (corrupt or not gzip).
    #[error("{path}: gzip decompression failed")]
    Gzip {
        /// The compressed file.
        path: PathBuf,
        /// The decoder's error.
        source: std::io::Error,
    },
    /// The SHA-256 of the decompressed bytes differs from the catalogue's.
    #[error("{path}: SHA-256 mismatch: expected {expected}, found {actual}")]
    ChecksumMismatch {
        /// The file (or the file it was to become).
        path: PathBuf,
        /// The expected SHA-256, lowercase hex.
        expected: String,
        /// The SHA-256 found, lowercase hex.
        actual: String,
    },
    /// A file that should exist does not.
    #[error("{path}: no such file")]
    MissingFile {
        /// The path looked for (for a dataset folder: the first of the names tried).
        path: PathBuf,
    },
    /// A path given as a dataset file is a FIFO, socket, device or folder: only regular files
    /// are opened (a FIFO would block, a device never end).
    #[error("{path}: is {kind}, not a regular file")]
    NotARegularFile {
        /// The path.
        path: PathBuf,
        /// What it is.
        kind: FileKind,
    },
    /// No cache location could hold the decompressed copy of a `.gz` file (every location in
    /// `tried` failed; `source` is the last failure).
    #[error(
        "{path}: no cache folder could be written (tried {})",
        paths_text(tried)
    )]
    CacheUnavailable {
        /// The `.gz` file.
        path: PathBuf,
        /// The cache files tried, in order.
        tried: Vec<PathBuf>,
        /// The last location's failure.
        source: Box<DatasetError>,
    },
    /// A file that should be a pack is not a valid one (truncated, altered, of another format
    /// or version).
    #[error("{path}: not a valid pack: {problem}")]
    InvalidPack {
        /// The file.
        path: PathBuf,
        /// What is wrong.
        problem: crate::pack_format::PackProblem,
    },
    /// A folder given to be packed cannot be.
    #[error("{folder}: {problem}")]
    ImageFolder {
        /// The folder.
        folder: PathBuf,
        /// What is wrong.
        problem: crate::pack_format::ImageFolderProblem,
    },
    /// A source file (or class folder) could not be packed and bad files are refused
    /// (`--strict`).
    #[error("{path}: {reason} (refused: bad files are not skipped)")]
    BadSourceFile {
        /// The file or folder.
        path: PathBuf,
        /// Why it could not be packed.
        reason: crate::pack_format::SkipReason,
    },
    /// Packing was interrupted; the work done is kept beside the destination and the next run
    /// resumes it.
    #[error(
        "{destination}: packing interrupted after {done} of {total} files; run it again to resume"
    )]
    PackInterrupted {
        /// The pack being written.
        destination: PathBuf,
        /// Source files done.
        done: usize,
        /// Source files in all.
        total: usize,
    },
    /// The file a pack was to be written to cannot be one.
    #[error("{path}: cannot be written as a pack: {problem}")]
    InvalidPackDestination {
        /// The destination given.
        path: PathBuf,
        /// Why.
        problem: &'static str,
    },
    /// A packing setting given as text does not parse.
    #[error("{given:?}: expected {expected}")]
    InvalidPackSetting {
        /// The text given.
        given: String,
        /// What was expected.
        expected: &'static str,
    },
    /// No dataset files were found where the data folder points.
    #[error(
        "{given}{} (looked in {} and {}): no {family} files ({images}[.gz], ...)",
        origin.describe(),
        given.display(),
        family_folder.display(),
        images = crate::family::mnist_file_names(crate::family::Split::Train).0
    )]
    DataFolderNotFound {
        /// The data folder as given (argument, environment variable or default).
        given: PathBuf,
        /// Where that folder came from.
        origin: crate::family::DataFolderOrigin,
        /// The family's subfolder also looked in.
        family_folder: PathBuf,
        /// The family looked for.
        family: crate::family::Family,
    },
    /// Downloading from a URL failed.
    #[error("{url}: download failed")]
    Download {
        /// The URL.
        url: String,
        /// What went wrong (HTTP status, connection error, ...).
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// The server answered with an HTTP error status.
    #[error("{url}: HTTP status {status}")]
    DownloadStatus {
        /// The URL.
        url: String,
        /// The status code (404, 500, ...).
        status: u16,
    },
    /// Connecting to the server took longer than the connect timeout.
    #[error("{url}: no connection within {} s", timeout.as_secs_f64())]
    ConnectTimeout {
        /// The URL.
        url: String,
        /// The connect timeout.
        timeout: std::time::Duration,
    },
    /// No byte arrived for longer than the stall timeout.
    #[error("{url}: download stalled: no data for {} s", timeout.as_secs_f64())]
    DownloadStalled {
        /// The URL.
        url: String,
        /// The stall timeout.
        timeout: std::time::Duration,
    },
    /// After the grace period, the average rate stayed below the minimum.
    #[error(
        "{url}: download too slow: {bytes_per_second} bytes/s on average after {} s, minimum {minimum_bytes_per_second} bytes/s",
        elapsed.as_secs()
    )]
    DownloadTooSlow {
        /// The URL.
        url: String,
        /// The average rate observed.
        bytes_per_second: u64,
        /// The minimum asked for.
        minimum_bytes_per_second: u64,
        /// How long the download had run.
        elapsed: std::time::Duration,
    },
    /// The caller's cancellation flag was set during a download; the partial file was removed.
    #[error("{url}: interrupted; the partial download was removed")]
    Interrupted {
        /// The URL or file being fetched.
        url: String,
    },
    /// A download was larger than allowed.
    #[error("{url}: download larger than the limit of {limit} bytes")]
    DownloadTooLarge {
        /// The URL or file.
        url: String,
        /// The limit in bytes.
        limit: u64,
    },
    /// A mirror string is neither a folder, a `file://` URL nor an `http(s)://` URL.
    #[error("{mirror:?}: not a mirror (expected a folder, file://, http:// or https://)")]
    InvalidMirror {
        /// The mirror as given.
        mirror: String,
    },
    /// Every mirror failed for one file; `attempts` lists each mirror and its error in order.
    #[error("{file_name}: every mirror failed{}", attempts_text(attempts))]
    AllMirrorsFailed {
        /// The file name asked for (e.g. `train-images-idx3-ubyte.gz`).
        file_name: String,
        /// One entry per mirror tried.
        attempts: Vec<MirrorAttempt>,
    },
}

/// One failed try of one mirror, inside [`DatasetError::AllMirrorsFailed`].
#[derive(Debug)]
pub struct MirrorAttempt {
    /// The mirror's base (folder or URL).
    pub mirror: String,
    /// Why it failed.
    pub error: DatasetError,
}

/// What is wrong with a shape handed to the IDX writer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ShapeProblem {
    /// The shape has no dimensions; IDX needs at least one.
    #[error("an IDX array needs at least one dimension")]
    RankZero,
    /// The shape has more than 255 dimensions.
    #[error("an IDX array has at most 255 dimensions")]
    RankAbove255,
    /// The dimension at this position does not fit in a u32.
    #[error("dimension {index} does not fit in a u32")]
    DimensionAboveU32 {
        /// Position of the dimension.
        index: usize,
    },
    /// The product of the dimensions (or the byte size) overflows.
    #[error("the number of elements or bytes overflows")]
    ElementCountOverflow,
    /// The product of the dimensions differs from the number of elements given.
    #[error("the shape holds {expected} elements")]
    ElementCountMismatch {
        /// The product of the dimensions.
        expected: usize,
    },
}

/// What is wrong with a record handed to the CIFAR writer.
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum CifarRecordProblem {
    /// The image is not 3 x 32 x 32 = 3072 bytes.
    #[error("the image has {found} bytes, expected 3072 (3 x 32 x 32)")]
    ImageLength {
        /// The length given.
        found: usize,
    },
    /// A label is not below the number of classes of its kind.
    #[error("{kind} label {label} is not below the number of {kind} classes ({classes})")]
    LabelOutOfRange {
        /// Which label.
        kind: crate::cifar_variant::CifarLabelKind,
        /// Its value.
        label: u8,
        /// The number of classes of that kind.
        classes: usize,
    },
    /// A CIFAR-100 record without a coarse label.
    #[error("a CIFAR-100 record needs a coarse label")]
    CoarseLabelMissing,
    /// A CIFAR-10 record with a coarse label (CIFAR-10 has none).
    #[error("a CIFAR-10 record has no coarse label")]
    CoarseLabelNotInVariant,
}

/// Why an archive entry was refused (see [`DatasetError::UnsafeArchiveEntry`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ArchiveEntryProblem {
    /// The path is absolute (or has a drive prefix): it would be written outside the folder.
    #[error("absolute path")]
    AbsolutePath,
    /// The path has a `..` component: it could climb out of the folder.
    #[error("a `..` component")]
    ParentComponent,
    /// A symbolic or hard link: it could point outside the folder.
    #[error("a link")]
    Link,
    /// A device, FIFO or other special entry.
    #[error("not a regular file or folder")]
    SpecialFile,
    /// Larger than [`crate::cifar::ExtractionLimits::maximum_entry_bytes`].
    #[error("larger than the limit of {limit} bytes")]
    TooLarge {
        /// The limit in bytes.
        limit: u64,
    },
    /// The entries so far add up to more than [`crate::cifar::ExtractionLimits::maximum_total_bytes`].
    #[error("the archive's files add up to more than the limit of {limit} bytes")]
    TotalTooLarge {
        /// The limit in bytes.
        limit: u64,
    },
    /// More entries than [`crate::cifar::ExtractionLimits::maximum_entries`].
    #[error("more than {limit} entries")]
    TooManyEntries {
        /// The limit.
        limit: usize,
    },
}

/// This crate's result type.
pub type Result<T, E = DatasetError> = std::result::Result<T, E>;

impl DatasetError {
    /// Wraps an input/output error with the path it concerns.
    pub(crate) fn io(path: impl Into<PathBuf>, source: std::io::Error) -> Self {
        DatasetError::Io {
            path: path.into(),
            source,
        }
    }
}

fn shape_text(shape: &[usize]) -> String {
    let parts: Vec<String> = shape.iter().map(|size| size.to_string()).collect();
    format!("[{}]", parts.join(" x "))
}

/// `"path: "` for a shape error about a file, nothing for one about data in memory.
fn path_prefix(path: Option<&PathBuf>) -> String {
    path.map(|path| format!("{}: ", path.display()))
        .unwrap_or_default()
}

/// Paths as `a, b, c`.
fn paths_text(paths: &[PathBuf]) -> String {
    let parts: Vec<String> = paths
        .iter()
        .map(|path| path.display().to_string())
        .collect();
    parts.join(", ")
}

/// Each attempt as `"; mirror: error: cause: ..."`: the attempts are not a single `source()`,
/// so their whole chains are written here.
fn attempts_text(attempts: &[MirrorAttempt]) -> String {
    let mut text = String::new();
    for attempt in attempts {
        text.push_str(&format!("; {}: {}", attempt.mirror, attempt.error));
        let mut source = std::error::Error::source(&attempt.error);
        while let Some(cause) = source {
            text.push_str(&format!(": {cause}"));
            source = cause.source();
        }
    }
    text
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn io_error_keeps_its_source_and_names_the_path() {
        let error = DatasetError::io(
            "some/file",
            std::io::Error::new(std::io::ErrorKind::NotFound, "gone"),
        );
        assert_eq!(error.to_string(), "some/file: input/output error");
        let source = std::error::Error::source(&error).expect("io errors keep their source");
        assert_eq!(source.to_string(), "gone");
    }

    #[test]
    fn all_mirrors_failed_lists_every_attempt_with_causes() {
        let error = DatasetError::AllMirrorsFailed {
            file_name: "x.gz".into(),
            attempts: vec![
                MirrorAttempt {
                    mirror: "/a".into(),
                    error: DatasetError::MissingFile {
                        path: "/a/x.gz".into(),
                    },
                },
                MirrorAttempt {
                    mirror: "/b".into(),
                    error: DatasetError::io(
                        "/b/x.gz",
                        std::io::Error::new(std::io::ErrorKind::PermissionDenied, "denied"),
                    ),
                },
            ],
        };
        let text = error.to_string();
        assert!(text.contains("/a: /a/x.gz: no such file"), "{text}");
        assert!(
            text.contains("/b: /b/x.gz: input/output error: denied"),
            "{text}"
        );
    }

    #[test]
    fn errors_are_send_and_sync() {
        fn assert_send_sync<T: Send + Sync + 'static>() {}
        assert_send_sync::<DatasetError>();
    }
}
