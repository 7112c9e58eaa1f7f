//! The crate's one error type.

use std::fmt;
use std::path::PathBuf;

use crate::element::ElementType;

/// Everything that can go wrong while reading, writing, checking or fetching IDX files.
///
/// Every variant that concerns a file names it. Input/output and decompression failures keep the
/// underlying [`std::io::Error`] reachable through [`std::error::Error::source`]; their `Display`
/// message does not repeat it (print the chain, e.g. with `anyhow`'s `{:#}`, to see both).
#[derive(Debug)]
#[non_exhaustive]
pub enum DatasetError {
    /// Reading, writing, creating or renaming `path` failed.
    Io {
        /// The file or folder concerned.
        path: PathBuf,
        /// The operating system's error.
        source: std::io::Error,
    },
    /// The file holds fewer than the 4 bytes of an IDX magic number.
    TooShortForHeader {
        /// The file.
        path: PathBuf,
        /// Its length in bytes.
        length: u64,
    },
    /// The first two bytes are not `00 00`.
    BadMagic {
        /// The file.
        path: PathBuf,
        /// The two bytes found.
        found: [u8; 2],
    },
    /// The third byte is not one of the six IDX element types.
    UnknownElementType {
        /// The file.
        path: PathBuf,
        /// The type code found.
        code: u8,
    },
    /// The fourth byte (the number of dimensions) is 0.
    ZeroRank {
        /// The file.
        path: PathBuf,
    },
    /// The file ends before its `rank` big-endian u32 dimension sizes.
    DimensionsCutOff {
        /// The file.
        path: PathBuf,
        /// The rank the header announces.
        rank: u8,
        /// The file's length in bytes.
        length: u64,
    },
    /// The product of the dimensions times the element size (plus the header) overflows.
    SizeOverflow {
        /// The file.
        path: PathBuf,
    },
    /// The file is shorter than its header says.
    Truncated {
        /// The file.
        path: PathBuf,
        /// The length the header announces (header plus data), in bytes.
        expected: u64,
        /// The actual length in bytes.
        actual: u64,
    },
    /// The file is longer than its header says.
    TrailingBytes {
        /// The file.
        path: PathBuf,
        /// The length the header announces (header plus data), in bytes.
        expected: u64,
        /// The actual length in bytes.
        actual: u64,
    },
    /// The array holds another element type than the one asked for.
    WrongElementType {
        /// The file.
        path: PathBuf,
        /// The element type asked for.
        expected: ElementType,
        /// The element type the file holds.
        found: ElementType,
    },
    /// The array has another number of dimensions than required (images N x H x W, labels N).
    UnexpectedRank {
        /// The file.
        path: PathBuf,
        /// The rank required.
        expected: usize,
        /// The file's rank.
        found: usize,
    },
    /// The array's shape differs from the catalogue's for that file.
    UnexpectedShape {
        /// The file.
        path: PathBuf,
        /// The shape the catalogue lists.
        expected: Vec<usize>,
        /// The file's shape.
        found: Vec<usize>,
    },
    /// The images and labels files hold different numbers of items.
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
    /// A shape and data given to the writer do not describe a valid IDX array.
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
    NotGzipPath {
        /// The path.
        path: PathBuf,
    },
    /// Decompressing a gzip file failed (corrupt or not gzip).
    Gzip {
        /// The compressed file.
        path: PathBuf,
        /// The decoder's error.
        source: std::io::Error,
    },
    /// The SHA-256 of the decompressed bytes differs from the catalogue's.
    ChecksumMismatch {
        /// The file (or the file it was to become).
        path: PathBuf,
        /// The expected SHA-256, lowercase hex.
        expected: String,
        /// The SHA-256 found, lowercase hex.
        actual: String,
    },
    /// A file that should exist does not.
    MissingFile {
        /// The path looked for (for a dataset folder: the first of the names tried).
        path: PathBuf,
    },
    /// Downloading from a URL failed.
    Download {
        /// The URL.
        url: String,
        /// What went wrong (HTTP status, connection error, ...).
        source: Box<dyn std::error::Error + Send + Sync + 'static>,
    },
    /// A download was larger than allowed.
    DownloadTooLarge {
        /// The URL or file.
        url: String,
        /// The limit in bytes.
        limit: u64,
    },
    /// A mirror string is neither a folder, a `file://` URL nor an `http(s)://` URL.
    InvalidMirror {
        /// The mirror as given.
        mirror: String,
    },
    /// Every mirror failed for one file; `attempts` lists each mirror and its error in order.
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
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
#[non_exhaustive]
pub enum ShapeProblem {
    /// The shape has no dimensions; IDX needs at least one.
    RankZero,
    /// The shape has more than 255 dimensions.
    RankAbove255,
    /// The dimension at this position does not fit in a u32.
    DimensionAboveU32 {
        /// Position of the dimension.
        index: usize,
    },
    /// The product of the dimensions (or the byte size) overflows.
    ElementCountOverflow,
    /// The product of the dimensions differs from the number of elements given.
    ElementCountMismatch {
        /// The product of the dimensions.
        expected: usize,
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

impl fmt::Display for ShapeProblem {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            ShapeProblem::RankZero => {
                write!(formatter, "an IDX array needs at least one dimension")
            }
            ShapeProblem::RankAbove255 => {
                write!(formatter, "an IDX array has at most 255 dimensions")
            }
            ShapeProblem::DimensionAboveU32 { index } => {
                write!(formatter, "dimension {index} does not fit in a u32")
            }
            ShapeProblem::ElementCountOverflow => {
                write!(formatter, "the number of elements or bytes overflows")
            }
            ShapeProblem::ElementCountMismatch { expected } => {
                write!(formatter, "the shape holds {expected} elements")
            }
        }
    }
}

fn shape_text(shape: &[usize]) -> String {
    let parts: Vec<String> = shape.iter().map(|size| size.to_string()).collect();
    format!("[{}]", parts.join(" x "))
}

impl fmt::Display for DatasetError {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        match self {
            DatasetError::Io { path, .. } => {
                write!(formatter, "{}: input/output error", path.display())
            }
            DatasetError::TooShortForHeader { path, length } => write!(
                formatter,
                "{}: too short for an IDX header ({length} bytes, at least 4 needed)",
                path.display()
            ),
            DatasetError::BadMagic { path, found } => write!(
                formatter,
                "{}: bad IDX magic number: first two bytes are {:02x} {:02x}, expected 00 00",
                path.display(),
                found[0],
                found[1]
            ),
            DatasetError::UnknownElementType { path, code } => write!(
                formatter,
                "{}: unknown IDX element type code 0x{code:02x} (expected 08, 09, 0b, 0c, 0d or 0e)",
                path.display()
            ),
            DatasetError::ZeroRank { path } => {
                write!(formatter, "{}: IDX header has rank 0", path.display())
            }
            DatasetError::DimensionsCutOff { path, rank, length } => write!(
                formatter,
                "{}: IDX dimensions cut off: rank {rank} needs a {} byte header, file has {length} bytes",
                path.display(),
                4 + 4 * u64::from(*rank)
            ),
            DatasetError::SizeOverflow { path } => write!(
                formatter,
                "{}: IDX dimensions overflow: the data size does not fit in 64 bits or in memory",
                path.display()
            ),
            DatasetError::Truncated {
                path,
                expected,
                actual,
            } => write!(
                formatter,
                "{}: IDX data truncated: header announces {expected} bytes, file has {actual}",
                path.display()
            ),
            DatasetError::TrailingBytes {
                path,
                expected,
                actual,
            } => write!(
                formatter,
                "{}: trailing bytes after IDX data: header announces {expected} bytes, file has {actual}",
                path.display()
            ),
            DatasetError::WrongElementType {
                path,
                expected,
                found,
            } => write!(
                formatter,
                "{}: wrong element type: expected {expected}, file holds {found}",
                path.display()
            ),
            DatasetError::UnexpectedRank {
                path,
                expected,
                found,
            } => write!(
                formatter,
                "{}: wrong number of dimensions: expected {expected}, file has {found}",
                path.display()
            ),
            DatasetError::UnexpectedShape {
                path,
                expected,
                found,
            } => write!(
                formatter,
                "{}: unexpected shape: expected {}, file holds {}",
                path.display(),
                shape_text(expected),
                shape_text(found)
            ),
            DatasetError::CountMismatch {
                images_path,
                labels_path,
                images,
                labels,
            } => write!(
                formatter,
                "{} holds {images} images but {} holds {labels} labels",
                images_path.display(),
                labels_path.display()
            ),
            DatasetError::LabelOutOfRange {
                path,
                index,
                label,
                classes,
            } => write!(
                formatter,
                "{}: label {label} at index {index} is not below the number of classes ({classes})",
                path.display()
            ),
            DatasetError::InvalidShape {
                path,
                shape,
                element_count,
                problem,
            } => {
                if let Some(path) = path {
                    write!(formatter, "{}: ", path.display())?;
                }
                write!(
                    formatter,
                    "invalid IDX shape {} for {element_count} elements: {problem}",
                    shape_text(shape)
                )
            }
            DatasetError::NotGzipPath { path } => {
                write!(formatter, "{}: not a .gz path", path.display())
            }
            DatasetError::Gzip { path, .. } => {
                write!(formatter, "{}: gzip decompression failed", path.display())
            }
            DatasetError::ChecksumMismatch {
                path,
                expected,
                actual,
            } => write!(
                formatter,
                "{}: SHA-256 mismatch: expected {expected}, found {actual}",
                path.display()
            ),
            DatasetError::MissingFile { path } => {
                write!(formatter, "{}: no such file", path.display())
            }
            DatasetError::Download { url, .. } => write!(formatter, "{url}: download failed"),
            DatasetError::DownloadTooLarge { url, limit } => {
                write!(
                    formatter,
                    "{url}: download larger than the limit of {limit} bytes"
                )
            }
            DatasetError::InvalidMirror { mirror } => write!(
                formatter,
                "{mirror:?}: not a mirror (expected a folder, file://, http:// or https://)"
            ),
            DatasetError::AllMirrorsFailed {
                file_name,
                attempts,
            } => {
                write!(formatter, "{file_name}: every mirror failed")?;
                for attempt in attempts {
                    write!(formatter, "; {}: {}", attempt.mirror, attempt.error)?;
                    let mut source = std::error::Error::source(&attempt.error);
                    while let Some(cause) = source {
                        write!(formatter, ": {cause}")?;
                        source = cause.source();
                    }
                }
                Ok(())
            }
        }
    }
}

impl std::error::Error for DatasetError {
    fn source(&self) -> Option<&(dyn std::error::Error + 'static)> {
        match self {
            DatasetError::Io { source, .. } | DatasetError::Gzip { source, .. } => Some(source),
            DatasetError::Download { source, .. } => Some(source.as_ref()),
            _ => None,
        }
    }
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
