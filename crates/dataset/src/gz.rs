//! `.gz` inputs: streamed decompression with validation, cached beside the compressed file.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};

use flate2::read::MultiGzDecoder;

use crate::atomic::AtomicFile;
use crate::error::{DatasetError, Result};
use crate::header::{IdxHeader, MAXIMUM_HEADER_LENGTH, parse_idx_header};

/// The name of the cache folder created beside `.gz` files.
pub const CACHE_FOLDER_NAME: &str = "cache";

const COPY_BUFFER_BYTES: usize = 256 * 1024;

/// Whether `path` ends in `.gz` (case-insensitive).
pub(crate) fn is_gz_path(path: &Path) -> bool {
    path.extension()
        .is_some_and(|extension| extension.eq_ignore_ascii_case("gz"))
}

/// Where [`decompress_gz_cached`] puts the decompressed copy of `gz_path`:
/// `<folder>/cache/<name without .gz>`. [`DatasetError::NotGzipPath`] if it does not end in `.gz`.
pub fn gz_cache_path(gz_path: &Path) -> Result<PathBuf> {
    let not_gzip = || DatasetError::NotGzipPath {
        path: gz_path.to_path_buf(),
    };
    if !is_gz_path(gz_path) {
        return Err(not_gzip());
    }
    let stem = gz_path
        .file_stem()
        .filter(|stem| !stem.is_empty())
        .ok_or_else(not_gzip)?;
    let folder = gz_path.parent().unwrap_or(Path::new(""));
    Ok(folder.join(CACHE_FOLDER_NAME).join(stem))
}

/// A writer that keeps its own failures apart, so that after [`std::io::copy`] a failed write is
/// reported against the output and a failed read against the input.
struct WriteFailureKept<'a, W> {
    writer: &'a mut W,
    failure: Option<std::io::Error>,
}

impl<W: Write> Write for WriteFailureKept<'_, W> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.writer.write(bytes).map_err(|error| {
            let kind = error.kind();
            // `io::copy` retries an interrupted write: only a failure that ends it is kept.
            if kind != std::io::ErrorKind::Interrupted {
                self.failure = Some(error);
            }
            std::io::Error::from(kind)
        })
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.writer.flush()
    }
}

/// Copies an IDX stream from `reader` to `writer`, checking it on the way: the header is parsed
/// from the first bytes, then exactly the announced number of data bytes is copied and the input
/// must end there. Nothing is allocated from the header's claims; a stream of any length is
/// handled in [`std::io::copy`]'s fixed buffer.
///
/// Errors name `path` (the input); `read_error` wraps failures of `reader`, and write failures
/// are [`DatasetError::Io`] naming `writer_path`.
pub(crate) fn copy_validated_idx(
    mut reader: impl Read,
    writer: &mut impl Write,
    path: &Path,
    writer_path: &Path,
    read_error: impl Fn(std::io::Error) -> DatasetError,
) -> Result<IdxHeader> {
    let write_error = |error| DatasetError::io(writer_path, error);
    let mut header_bytes = Vec::with_capacity(MAXIMUM_HEADER_LENGTH);
    (&mut reader)
        .take(4)
        .read_to_end(&mut header_bytes)
        .map_err(&read_error)?;
    if header_bytes.len() == 4 {
        let dimension_bytes = 4 * u64::from(header_bytes[3]);
        (&mut reader)
            .take(dimension_bytes)
            .read_to_end(&mut header_bytes)
            .map_err(&read_error)?;
    }
    let header_length = header_bytes.len() as u64;
    let header = IdxHeader::parse_structure(&header_bytes, path, header_length)?;
    writer.write_all(&header_bytes).map_err(write_error)?;

    let mut kept = WriteFailureKept {
        writer,
        failure: None,
    };
    let copied = std::io::copy(&mut (&mut reader).take(header.data_length()), &mut kept).map_err(
        |error| match kept.failure.take() {
            Some(failure) => write_error(failure),
            None => read_error(error),
        },
    )?;
    if copied < header.data_length() {
        return Err(DatasetError::Truncated {
            path: path.to_path_buf(),
            expected: header.file_length(),
            actual: header_length + copied,
        });
    }
    let trailing = std::io::copy(&mut reader, &mut std::io::sink()).map_err(&read_error)?;
    if trailing > 0 {
        return Err(DatasetError::TrailingBytes {
            path: path.to_path_buf(),
            expected: header.file_length(),
            actual: header.file_length().saturating_add(trailing),
        });
    }
    Ok(header)
}

/// Decompresses a gzip stream holding an IDX file into `writer`, validating it (see
/// [`copy_validated_idx`]). Decoder failures are [`DatasetError::Gzip`] naming `gz_path`.
pub(crate) fn decompress_validated(
    compressed: impl Read,
    writer: &mut impl Write,
    gz_path: &Path,
    writer_path: &Path,
) -> Result<IdxHeader> {
    let decoder = MultiGzDecoder::new(BufReader::with_capacity(COPY_BUFFER_BYTES, compressed));
    copy_validated_idx(decoder, writer, gz_path, writer_path, |source| {
        DatasetError::Gzip {
            path: gz_path.to_path_buf(),
            source,
        }
    })
}

/// Whether an existing cache file is a complete IDX file at least as new as its `.gz`.
fn cache_is_usable(cache_path: &Path, gz_metadata: &std::fs::Metadata) -> bool {
    let Ok(cache_metadata) = std::fs::metadata(cache_path) else {
        return false;
    };
    if let (Ok(cache_time), Ok(gz_time)) = (cache_metadata.modified(), gz_metadata.modified())
        && cache_time < gz_time
    {
        return false;
    }
    let Ok(file) = File::open(cache_path) else {
        return false;
    };
    let mut prefix = Vec::with_capacity(MAXIMUM_HEADER_LENGTH);
    if file
        .take(MAXIMUM_HEADER_LENGTH as u64)
        .read_to_end(&mut prefix)
        .is_err()
    {
        return false;
    }
    parse_idx_header(&prefix, cache_path, cache_metadata.len()).is_ok()
}

/// Decompresses a `.gz` IDX file once into `<folder>/cache/<name without .gz>` and returns that
/// path.
///
/// If the cache file exists, is not older than the `.gz` file, and its header and length
/// validate, it is reused without decompressing. Otherwise the stream is decompressed into a
/// uniquely named temporary file in the cache folder, validated on the way (a malformed IDX
/// payload gets the same typed errors as a raw file, naming `gz_path`), and renamed into place.
/// Two processes decompressing at once both succeed (the last rename wins, the contents are
/// equal), and a failure leaves no file behind.
pub fn decompress_gz_cached(gz_path: &Path) -> Result<PathBuf> {
    let cache_path = gz_cache_path(gz_path)?;
    let gz_file = File::open(gz_path).map_err(|error| {
        if error.kind() == std::io::ErrorKind::NotFound {
            DatasetError::MissingFile {
                path: gz_path.to_path_buf(),
            }
        } else {
            DatasetError::io(gz_path, error)
        }
    })?;
    let gz_metadata = gz_file
        .metadata()
        .map_err(|error| DatasetError::io(gz_path, error))?;
    if cache_is_usable(&cache_path, &gz_metadata) {
        return Ok(cache_path);
    }
    let mut destination = AtomicFile::create(&cache_path)?;
    let temporary_path = destination.temporary_path().to_path_buf();
    {
        let mut writer = BufWriter::with_capacity(COPY_BUFFER_BYTES, destination.file());
        decompress_validated(gz_file, &mut writer, gz_path, &temporary_path)?;
        writer
            .flush()
            .map_err(|error| DatasetError::io(&temporary_path, error))?;
    }
    destination.commit()
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::writer::encode_idx;
    use flate2::Compression;
    use flate2::write::GzEncoder;

    fn gzip(bytes: &[u8]) -> Vec<u8> {
        let mut encoder = GzEncoder::new(Vec::new(), Compression::fast());
        encoder.write_all(bytes).unwrap();
        encoder.finish().unwrap()
    }

    fn folder_entries(folder: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(folder)
            .map(|entries| {
                entries
                    .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
                    .collect()
            })
            .unwrap_or_default();
        names.sort();
        names
    }

    #[test]
    fn cache_path_is_beside_the_gz() {
        assert_eq!(
            gz_cache_path(Path::new("data/mnist/train-images-idx3-ubyte.gz")).unwrap(),
            Path::new("data/mnist/cache/train-images-idx3-ubyte")
        );
        assert_eq!(
            gz_cache_path(Path::new("x.GZ")).unwrap(),
            Path::new("cache/x")
        );
        assert!(matches!(
            gz_cache_path(Path::new("data/file.idx")),
            Err(DatasetError::NotGzipPath { .. })
        ));
        assert!(matches!(
            gz_cache_path(Path::new(".gz")),
            Err(DatasetError::NotGzipPath { .. })
        ));
    }

    #[test]
    fn decompresses_once_then_reuses_and_repairs_a_damaged_cache() {
        let folder = tempfile::tempdir().unwrap();
        let gz_path = folder.path().join("labels.gz");
        let raw = encode_idx::<u8>(&[5], &[1, 2, 3, 4, 5]).unwrap();
        std::fs::write(&gz_path, gzip(&raw)).unwrap();

        let cache = decompress_gz_cached(&gz_path).unwrap();
        assert_eq!(cache, folder.path().join("cache").join("labels"));
        assert_eq!(std::fs::read(&cache).unwrap(), raw);

        // Reused: a marker written with a valid IDX body stays as it is.
        let marker = encode_idx::<u8>(&[1], &[9]).unwrap();
        std::fs::write(&cache, &marker).unwrap();
        decompress_gz_cached(&gz_path).unwrap();
        assert_eq!(
            std::fs::read(&cache).unwrap(),
            marker,
            "a valid cache is reused"
        );

        // A cut-off cache (e.g. from a crash without rename) is redone.
        std::fs::write(&cache, &raw[..raw.len() - 1]).unwrap();
        decompress_gz_cached(&gz_path).unwrap();
        assert_eq!(std::fs::read(&cache).unwrap(), raw);
        assert_eq!(folder_entries(&folder.path().join("cache")), ["labels"]);
    }

    #[test]
    fn corrupt_gzip_is_a_gzip_error_and_leaves_nothing() {
        let folder = tempfile::tempdir().unwrap();
        let gz_path = folder.path().join("bad.gz");
        let mut compressed = gzip(&encode_idx::<u8>(&[1000], &[7; 1000]).unwrap());
        let middle = compressed.len() / 2;
        compressed.truncate(middle);
        std::fs::write(&gz_path, &compressed).unwrap();
        let error = decompress_gz_cached(&gz_path).unwrap_err();
        assert!(
            matches!(&error, DatasetError::Gzip { path, .. } if path == &gz_path),
            "{error:?}"
        );
        assert!(folder_entries(&folder.path().join("cache")).is_empty());

        std::fs::write(&gz_path, b"not gzip at all").unwrap();
        assert!(matches!(
            decompress_gz_cached(&gz_path),
            Err(DatasetError::Gzip { .. })
        ));
        assert!(folder_entries(&folder.path().join("cache")).is_empty());
    }

    #[test]
    fn malformed_payload_gets_the_idx_error_and_leaves_nothing() {
        let folder = tempfile::tempdir().unwrap();
        let gz_path = folder.path().join("short.gz");
        let raw = encode_idx::<i32>(&[4], &[1, 2, 3, 4]).unwrap();
        std::fs::write(&gz_path, gzip(&raw[..raw.len() - 3])).unwrap();
        assert!(matches!(
            decompress_gz_cached(&gz_path),
            Err(DatasetError::Truncated {
                expected: 24,
                actual: 21,
                ..
            })
        ));
        let mut long = raw.clone();
        long.extend_from_slice(&[0; 5]);
        std::fs::write(&gz_path, gzip(&long)).unwrap();
        assert!(matches!(
            decompress_gz_cached(&gz_path),
            Err(DatasetError::TrailingBytes {
                expected: 24,
                actual: 29,
                ..
            })
        ));
        std::fs::write(&gz_path, gzip(&[0, 0, 0x08, 3, 0, 0])).unwrap();
        assert!(matches!(
            decompress_gz_cached(&gz_path),
            Err(DatasetError::DimensionsCutOff {
                rank: 3,
                length: 6,
                ..
            })
        ));
        std::fs::write(&gz_path, gzip(&[0x50, 0x4B, 0x03, 0x04])).unwrap();
        assert!(matches!(
            decompress_gz_cached(&gz_path),
            Err(DatasetError::BadMagic { .. })
        ));
        std::fs::write(&gz_path, gzip(&[0, 0])).unwrap();
        assert!(matches!(
            decompress_gz_cached(&gz_path),
            Err(DatasetError::TooShortForHeader { length: 2, .. })
        ));
        assert!(folder_entries(&folder.path().join("cache")).is_empty());
    }

    #[test]
    fn concurrent_decompressions_all_succeed() {
        let folder = tempfile::tempdir().unwrap();
        let gz_path = folder.path().join("images.gz");
        let data: Vec<u8> = (0..200_000u32).map(|value| (value % 251) as u8).collect();
        let raw = encode_idx::<u8>(&[200, 1000], &data).unwrap();
        std::fs::write(&gz_path, gzip(&raw)).unwrap();
        std::thread::scope(|scope| {
            let workers: Vec<_> = (0..4)
                .map(|_| scope.spawn(|| decompress_gz_cached(&gz_path)))
                .collect();
            for worker in workers {
                let cache = worker.join().unwrap().unwrap();
                assert_eq!(std::fs::read(cache).unwrap(), raw);
            }
        });
        assert_eq!(folder_entries(&folder.path().join("cache")), ["images"]);
    }

    #[test]
    fn missing_gz_is_named() {
        let folder = tempfile::tempdir().unwrap();
        let gz_path = folder.path().join("absent.gz");
        assert!(matches!(
            decompress_gz_cached(&gz_path),
            Err(DatasetError::MissingFile { path }) if path == gz_path
        ));
    }
}
