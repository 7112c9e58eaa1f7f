//! `.gz` inputs: streamed decompression with validation, cached beside the compressed file or
//! in the user's cache folder, each cache file checked against a record of its source.

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Seek, SeekFrom, Write};
use std::path::{Path, PathBuf};

use flate2::read::MultiGzDecoder;
use xxhash_rust::xxh3::{Xxh3, xxh3_64};

use crate::atomic::AtomicFile;
use crate::error::{DatasetError, Result};
use crate::header::{IdxHeader, MAXIMUM_HEADER_LENGTH};
use crate::open::open_regular;

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

/// Writes to two writers at once (e.g. a hasher and a file).
pub(crate) struct Tee<'a, A: Write, B: Write> {
    pub(crate) first: &'a mut A,
    pub(crate) second: &'a mut B,
}

impl<A: Write, B: Write> Write for Tee<'_, A, B> {
    fn write(&mut self, bytes: &[u8]) -> std::io::Result<usize> {
        self.first.write_all(bytes)?;
        self.second.write_all(bytes)?;
        Ok(bytes.len())
    }

    fn flush(&mut self) -> std::io::Result<()> {
        self.first.flush()?;
        self.second.flush()
    }
}

/// What a cache file was made from, recorded beside it (`<cache file>.source`) when it is
/// written and compared before it is reused: the `.gz` file's size and modification time, and
/// the length and XXH3-128 of the decompressed bytes.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
struct CacheRecord {
    source_length: u64,
    source_modified_nanoseconds: i128,
    length: u64,
    xxh3: u128,
}

const RECORD_HEADER: &str = "reclaim decompressed cache v1";
const RECORD_SUFFIX: &str = "source";

/// The modification time in nanoseconds since 1970 (negative before), 0 where unknown.
fn modified_nanoseconds(metadata: &std::fs::Metadata) -> i128 {
    let Ok(modified) = metadata.modified() else {
        return 0;
    };
    match modified.duration_since(std::time::UNIX_EPOCH) {
        Ok(after) => after.as_nanos() as i128,
        Err(before) => -(before.duration().as_nanos() as i128),
    }
}

impl CacheRecord {
    fn text(&self) -> String {
        format!(
            "{RECORD_HEADER}\nsource_length {}\nsource_modified_ns {}\nlength {}\nxxh3_128 {:032x}\n",
            self.source_length, self.source_modified_nanoseconds, self.length, self.xxh3
        )
    }

    fn parse(text: &str) -> Option<Self> {
        let mut lines = text.lines();
        if lines.next()? != RECORD_HEADER {
            return None;
        }
        let mut field = |name: &str| {
            let line = lines.next()?;
            line.strip_prefix(name)?
                .strip_prefix(' ')
                .map(str::to_owned)
        };
        Some(CacheRecord {
            source_length: field("source_length")?.parse().ok()?,
            source_modified_nanoseconds: field("source_modified_ns")?.parse().ok()?,
            length: field("length")?.parse().ok()?,
            xxh3: u128::from_str_radix(&field("xxh3_128")?, 16).ok()?,
        })
    }

    fn matches_source(&self, source: &std::fs::Metadata) -> bool {
        self.source_length == source.len()
            && self.source_modified_nanoseconds == modified_nanoseconds(source)
    }
}

/// The record's path: `<cache file>.source`.
fn record_path(cache_path: &Path) -> PathBuf {
    let mut name = cache_path.as_os_str().to_owned();
    name.push(".");
    name.push(RECORD_SUFFIX);
    PathBuf::from(name)
}

/// XXH3-128 of a whole file.
fn xxh3_of_file(file: &File) -> std::io::Result<u128> {
    let mut hasher = Xxh3::new();
    std::io::copy(
        &mut BufReader::with_capacity(COPY_BUFFER_BYTES, file),
        &mut hasher,
    )?;
    Ok(hasher.digest128())
}

/// Whether the cache file at `cache_path` was made from the `.gz` described by `source` and still
/// holds exactly what was written: its record matches the source's size and modification time,
/// and the file's length and XXH3 match the record. Reading it all costs one pass over the file
/// (XXH3 runs at memory speed, far faster than decompressing again).
fn cache_matches(cache_path: &Path, source: &std::fs::Metadata) -> bool {
    let record = open_regular(&record_path(cache_path))
        .ok()
        .and_then(|(file, _)| {
            let mut text = String::new();
            file.take(4096).read_to_string(&mut text).ok()?;
            CacheRecord::parse(&text)
        });
    let Some(record) = record.filter(|record| record.matches_source(source)) else {
        return false;
    };
    let Ok((file, metadata)) = open_regular(cache_path) else {
        return false;
    };
    metadata.len() == record.length && xxh3_of_file(&file).is_ok_and(|hash| hash == record.xxh3)
}

/// Why writing one cache location failed.
enum CacheWriteFailure {
    /// The location cannot be written (permissions, read-only mount, full disk): try the next.
    Unwritable(DatasetError),
    /// The `.gz` itself is bad: no location will do better.
    Source(DatasetError),
}

/// Writes the decompressed `.gz` to `cache_path` and then its record, both atomically.
fn write_cache(
    gz_file: &File,
    gz_path: &Path,
    source: &std::fs::Metadata,
    cache_path: &Path,
) -> std::result::Result<(), CacheWriteFailure> {
    use CacheWriteFailure::{Source, Unwritable};
    (&*gz_file)
        .seek(SeekFrom::Start(0))
        .map_err(|error| Source(DatasetError::io(gz_path, error)))?;
    let mut destination = AtomicFile::create(cache_path).map_err(Unwritable)?;
    let temporary_path = destination.temporary_path().to_path_buf();
    let mut hasher = Xxh3::new();
    let header =
        {
            let mut writer = BufWriter::with_capacity(COPY_BUFFER_BYTES, destination.file());
            let mut tee = Tee {
                first: &mut hasher,
                second: &mut writer,
            };
            // Reading the .gz fails as `Gzip` or an IDX error; only writing fails as `Io`.
            let header = decompress_validated(gz_file, &mut tee, gz_path, &temporary_path)
                .map_err(|error| match error {
                    DatasetError::Io { .. } => Unwritable(error),
                    other => Source(other),
                })?;
            writer
                .flush()
                .map_err(|error| Unwritable(DatasetError::io(&temporary_path, error)))?;
            header
        };
    destination.commit().map_err(Unwritable)?;
    let record = CacheRecord {
        source_length: source.len(),
        source_modified_nanoseconds: modified_nanoseconds(source),
        length: header.file_length(),
        xxh3: hasher.digest128(),
    };
    let record_destination = record_path(cache_path);
    let mut record_file = AtomicFile::create(&record_destination).map_err(Unwritable)?;
    record_file
        .file()
        .write_all(record.text().as_bytes())
        .map_err(|error| Unwritable(DatasetError::io(&record_destination, error)))?;
    record_file.commit().map_err(Unwritable)?;
    Ok(())
}

/// The user's cache folders, in order: `$XDG_CACHE_HOME` (if set to an absolute path), then
/// `$HOME/.cache`. Read from the environment (no crate: two variables, one rule).
pub(crate) fn user_cache_roots() -> Vec<PathBuf> {
    let mut roots = Vec::new();
    if let Some(folder) = std::env::var_os("XDG_CACHE_HOME").map(PathBuf::from)
        && folder.is_absolute()
    {
        roots.push(folder);
    }
    if let Some(home) = std::env::var_os("HOME").filter(|home| !home.is_empty()) {
        let folder = PathBuf::from(home).join(".cache");
        if !roots.contains(&folder) {
            roots.push(folder);
        }
    }
    roots
}

/// A name for the `.gz` file's own entry in a shared cache folder: XXH3-64 of its canonical
/// path, so that two data folders never share an entry.
fn source_key(gz_path: &Path) -> String {
    let canonical = std::fs::canonicalize(gz_path)
        .or_else(|_| std::path::absolute(gz_path))
        .unwrap_or_else(|_| gz_path.to_path_buf());
    format!("{:016x}", xxh3_64(canonical.as_os_str().as_encoded_bytes()))
}

/// Every place [`decompress_gz_cached`] may keep the decompressed copy of `gz_path`, in the
/// order tried: beside it ([`gz_cache_path`]), then
/// `$XDG_CACHE_HOME/reclaim/<key>/<name without .gz>`, then
/// `$HOME/.cache/reclaim/<key>/<name without .gz>`, where `<key>` is a hash of the `.gz` file's
/// canonical path (16 hex digits).
pub fn gz_cache_locations(gz_path: &Path) -> Result<Vec<PathBuf>> {
    gz_cache_locations_under(gz_path, &user_cache_roots())
}

/// [`gz_cache_locations`] with the user's cache folders given (tests give their own).
fn gz_cache_locations_under(gz_path: &Path, user_roots: &[PathBuf]) -> Result<Vec<PathBuf>> {
    let beside = gz_cache_path(gz_path)?;
    let mut locations = vec![beside.clone()];
    if let Some(name) = beside.file_name() {
        let key = source_key(gz_path);
        for root in user_roots {
            locations.push(root.join("reclaim").join(&key).join(name));
        }
    }
    Ok(locations)
}

/// Decompresses a `.gz` IDX file once into a cache file and returns that file's path.
///
/// The locations of [`gz_cache_locations`] are tried in order: beside the `.gz`
/// (`<folder>/cache/<name without .gz>`), then the user's cache folder. A cache file is reused
/// only if the record written beside it (`<cache file>.source`) matches: the `.gz` has the
/// size and modification time it had, and the cache file the length and XXH3-128 it was written
/// with (so a cache of the right length but wrong content is never used; checking costs one
/// read of the cache file). Otherwise the stream is decompressed into a uniquely named
/// temporary file at the first writable location, validated on the way (a malformed IDX payload
/// gets the same typed errors as a raw file, naming `gz_path`), renamed into place, and its
/// record written the same way. Two processes decompressing at once both succeed (the last
/// rename wins, the contents are equal), and a failure leaves no file behind.
///
/// [`DatasetError::CacheUnavailable`] when no location can be written; [`crate::idx::IdxArray`]
/// then decompresses into memory instead.
pub fn decompress_gz_cached(gz_path: &Path) -> Result<PathBuf> {
    decompress_gz_cached_under(gz_path, &user_cache_roots())
}

/// [`decompress_gz_cached`] with the user's cache folders given (tests give their own).
pub(crate) fn decompress_gz_cached_under(
    gz_path: &Path,
    user_roots: &[PathBuf],
) -> Result<PathBuf> {
    let locations = gz_cache_locations_under(gz_path, user_roots)?;
    let (gz_file, source) = open_regular(gz_path)?;
    if let Some(reusable) = locations
        .iter()
        .find(|location| cache_matches(location, &source))
    {
        return Ok(reusable.clone());
    }
    let mut last_failure = None;
    for location in &locations {
        match write_cache(&gz_file, gz_path, &source, location) {
            Ok(()) => return Ok(location.clone()),
            Err(CacheWriteFailure::Source(error)) => return Err(error),
            Err(CacheWriteFailure::Unwritable(error)) => last_failure = Some(error),
        }
    }
    Err(DatasetError::CacheUnavailable {
        path: gz_path.to_path_buf(),
        // Never the fallback: the list starts with the folder beside the `.gz`, so at least one
        // location failed.
        source: Box::new(last_failure.unwrap_or_else(|| DatasetError::NotGzipPath {
            path: gz_path.to_path_buf(),
        })),
        tried: locations,
    })
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

        assert_eq!(
            folder_entries(&folder.path().join("cache")),
            ["labels", "labels.source"]
        );

        // Reused: the same file (inode and modification time), not written again.
        use std::os::unix::fs::MetadataExt;
        let before = std::fs::metadata(&cache).unwrap();
        decompress_gz_cached(&gz_path).unwrap();
        let after = std::fs::metadata(&cache).unwrap();
        assert_eq!(
            (before.ino(), before.modified().unwrap()),
            (after.ino(), after.modified().unwrap()),
            "a matching cache is reused"
        );

        // A valid IDX file of other content is not trusted: it is redone.
        let marker = encode_idx::<u8>(&[1], &[9]).unwrap();
        std::fs::write(&cache, &marker).unwrap();
        decompress_gz_cached(&gz_path).unwrap();
        assert_eq!(
            std::fs::read(&cache).unwrap(),
            raw,
            "a foreign cache is redone"
        );

        // A cut-off cache (e.g. from a crash without rename) is redone.
        std::fs::write(&cache, &raw[..raw.len() - 1]).unwrap();
        decompress_gz_cached(&gz_path).unwrap();
        assert_eq!(std::fs::read(&cache).unwrap(), raw);

        // A missing or damaged record makes the cache untrusted too.
        let record = record_path(&cache);
        std::fs::write(&record, b"garbage").unwrap();
        decompress_gz_cached(&gz_path).unwrap();
        assert!(CacheRecord::parse(&std::fs::read_to_string(&record).unwrap()).is_some());
        std::fs::remove_file(&record).unwrap();
        decompress_gz_cached(&gz_path).unwrap();
        assert!(record.is_file());
        assert_eq!(
            folder_entries(&folder.path().join("cache")),
            ["labels", "labels.source"]
        );
    }

    #[test]
    fn a_cache_of_the_right_length_and_wrong_bytes_is_never_used() {
        let folder = tempfile::tempdir().unwrap();
        let gz_path = folder.path().join("images.gz");
        let pixels: Vec<u8> = (0..=255).collect();
        let raw = encode_idx::<u8>(&[16, 16], &pixels).unwrap();
        std::fs::write(&gz_path, gzip(&raw)).unwrap();
        let cache = decompress_gz_cached_under(&gz_path, &[]).unwrap();

        // Same length, same valid header, other pixels: only the checksum can tell.
        let mut forged = raw.clone();
        let last = forged.len() - 1;
        forged[last] ^= 0xFF;
        std::fs::write(&cache, &forged).unwrap();
        let owned = crate::idx::IdxArray::open_owned_under(&gz_path, &[]).unwrap();
        assert_eq!(owned.as_u8().unwrap(), pixels.as_slice());
        std::fs::write(&cache, &forged).unwrap();
        // SAFETY: nothing modifies the cache file while the array lives (it was replaced by a
        // rename before being mapped).
        let mapped = unsafe { crate::idx::IdxArray::open_mapped_under(&gz_path, &[]) }.unwrap();
        assert_eq!(mapped.as_u8().unwrap(), pixels.as_slice());
        assert_eq!(
            std::fs::read(&cache).unwrap(),
            raw,
            "the cache was repaired"
        );
    }

    #[test]
    fn a_changed_source_invalidates_its_cache() {
        let folder = tempfile::tempdir().unwrap();
        let gz_path = folder.path().join("labels.gz");
        std::fs::write(&gz_path, gzip(&encode_idx::<u8>(&[2], &[1, 2]).unwrap())).unwrap();
        let cache = decompress_gz_cached_under(&gz_path, &[]).unwrap();
        let replacement = encode_idx::<u8>(&[3], &[7, 8, 9]).unwrap();
        std::fs::write(&gz_path, gzip(&replacement)).unwrap();
        decompress_gz_cached_under(&gz_path, &[]).unwrap();
        assert_eq!(std::fs::read(&cache).unwrap(), replacement);
    }

    #[test]
    fn records_round_trip_and_refuse_garbage() {
        let record = CacheRecord {
            source_length: 12,
            source_modified_nanoseconds: -5,
            length: 99,
            xxh3: u128::MAX - 7,
        };
        assert_eq!(CacheRecord::parse(&record.text()), Some(record));
        assert_eq!(CacheRecord::parse(""), None);
        assert_eq!(
            CacheRecord::parse(&record.text().replace("length 99", "length x")),
            None
        );
    }

    #[test]
    fn unwritable_locations_fall_back_in_order_and_then_fail_typed() {
        let folder = tempfile::tempdir().unwrap();
        let gz_path = folder.path().join("labels.gz");
        let raw = encode_idx::<u8>(&[2], &[4, 2]).unwrap();
        std::fs::write(&gz_path, gzip(&raw)).unwrap();
        std::fs::write(folder.path().join("cache"), b"in the way").unwrap();
        let blocked = tempfile::tempdir().unwrap();
        let blocked_root = blocked.path().join("not-a-folder");
        std::fs::write(&blocked_root, b"").unwrap();
        let user = tempfile::tempdir().unwrap();

        let cache = decompress_gz_cached_under(
            &gz_path,
            &[blocked_root.clone(), user.path().to_path_buf()],
        )
        .unwrap();
        assert!(cache.starts_with(user.path()), "{}", cache.display());
        assert_eq!(std::fs::read(&cache).unwrap(), raw);

        match decompress_gz_cached_under(&gz_path, std::slice::from_ref(&blocked_root)) {
            Err(DatasetError::CacheUnavailable {
                path,
                tried,
                source,
            }) => {
                assert_eq!(path, gz_path);
                assert_eq!(tried.len(), 2);
                assert!(tried[0].starts_with(folder.path().join("cache")));
                assert!(tried[1].starts_with(&blocked_root));
                assert!(matches!(*source, DatasetError::Io { .. }), "{source:?}");
            }
            other => panic!("expected CacheUnavailable, got {other:?}"),
        }
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
        assert_eq!(
            folder_entries(&folder.path().join("cache")),
            ["images", "images.source"]
        );
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
