//! Downloading the MNIST family (cargo feature `fetch`).

use std::fs::File;
use std::io::{BufReader, BufWriter, Read, Write};
use std::path::{Path, PathBuf};
use std::time::Duration;

use sha2::{Digest, Sha256};

use crate::atomic::AtomicFile;
use crate::catalogue::{CatalogueFile, Family, Split};
use crate::checksum::{check_catalogue_shape, verify_file};
use crate::error::{DatasetError, MirrorAttempt, Result};
use crate::gz::{copy_validated_idx, decompress_validated, gz_cache_path};
use crate::progress::ProgressDisplay;

/// The environment variable naming a local mirror (a folder or a `file://`, `http://` or
/// `https://` base), tried before the standard mirrors.
pub const MIRROR_VARIABLE: &str = "RECLAIM_MIRROR";

/// Where files are fetched from: a folder (given as a path or a `file://` URL) or an HTTP(S)
/// base URL. The file names of the catalogue are appended to it.
#[derive(Clone, Debug, PartialEq, Eq, Hash)]
pub enum Mirror {
    /// A local folder holding the `.gz` files (or the raw files).
    Folder(PathBuf),
    /// An `http://` or `https://` base URL, ending in `/`.
    Http(String),
}

impl Mirror {
    /// Parses a mirror: `file:///some/folder`, `http://host/path/`, `https://host/path/`, or a
    /// plain folder path. Other `scheme://` forms are [`DatasetError::InvalidMirror`].
    pub fn parse(text: &str) -> Result<Self> {
        let invalid = || DatasetError::InvalidMirror {
            mirror: text.to_owned(),
        };
        if text.is_empty() {
            return Err(invalid());
        }
        if let Some(rest) = text.strip_prefix("file://") {
            if rest.is_empty() {
                return Err(invalid());
            }
            return Ok(Mirror::Folder(PathBuf::from(rest)));
        }
        let lowercase = text.to_ascii_lowercase();
        if lowercase.starts_with("http://") || lowercase.starts_with("https://") {
            let mut base = text.to_owned();
            if !base.ends_with('/') {
                base.push('/');
            }
            return Ok(Mirror::Http(base));
        }
        if text.contains("://") {
            return Err(invalid());
        }
        Ok(Mirror::Folder(PathBuf::from(text)))
    }

    /// The mirror as text (a folder path or a base URL).
    pub fn describe(&self) -> String {
        match self {
            Mirror::Folder(folder) => folder.display().to_string(),
            Mirror::Http(base) => base.clone(),
        }
    }
}

/// How to fetch: mirrors in order of preference, progress display, limits.
#[derive(Clone, Debug)]
pub struct FetchOptions {
    /// Tried in order for each file until one gives a file that verifies.
    pub mirrors: Vec<Mirror>,
    /// Progress bar or nothing.
    pub progress: ProgressDisplay,
    /// A download larger than this is abandoned ([`DatasetError::DownloadTooLarge`]).
    pub maximum_download_bytes: u64,
    /// Connection and read timeout for HTTP mirrors.
    pub timeout: Duration,
}

impl FetchOptions {
    /// The default mirror list for a family: the local mirror given as `local_mirror`, else the
    /// one in the `RECLAIM_MIRROR` environment variable (if set and not empty), then the family's
    /// standard mirrors. A progress bar is shown.
    pub fn for_family(family: Family, local_mirror: Option<&str>) -> Result<Self> {
        let mut mirrors = Vec::new();
        let from_environment = std::env::var(MIRROR_VARIABLE).ok();
        let local = local_mirror.or(from_environment.as_deref().filter(|text| !text.is_empty()));
        if let Some(text) = local {
            mirrors.push(Mirror::parse(text)?);
        }
        for base in family.mirrors() {
            mirrors.push(Mirror::Http((*base).to_owned()));
        }
        Ok(FetchOptions {
            mirrors,
            progress: ProgressDisplay::Bar,
            ..FetchOptions::only(Vec::new())
        })
    }

    /// Exactly these mirrors, in this order, without a progress bar.
    pub fn only(mirrors: Vec<Mirror>) -> Self {
        FetchOptions {
            mirrors,
            progress: ProgressDisplay::Hidden,
            maximum_download_bytes: 1 << 30,
            timeout: Duration::from_secs(30),
        }
    }
}

/// Where a fetched file came from.
#[derive(Clone, Debug, PartialEq, Eq)]
pub enum FetchOrigin {
    /// It was already in the folder and verified.
    AlreadyPresent,
    /// Downloaded from this mirror (after the earlier ones failed).
    Mirror(String),
}

/// One file made available by [`fetch_file`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FetchedFile {
    /// The file in the dataset folder (`.gz`, or raw if the mirror served it raw).
    pub path: PathBuf,
    /// SHA-256 of its decompressed bytes.
    pub sha256: String,
    /// Whether that digest was compared with the catalogue (it has none for some families).
    pub checksum_compared: bool,
    /// Where it came from.
    pub origin: FetchOrigin,
}

/// Writes to two writers at once.
struct Tee<'a, A: Write, B: Write> {
    first: &'a mut A,
    second: &'a mut B,
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

/// A source opened on one mirror: a reader, its length if known, and whether it is gzip.
struct OpenedSource {
    reader: Box<dyn Read>,
    length: Option<u64>,
    compressed: bool,
    description: String,
}

fn open_source(
    mirror: &Mirror,
    entry: &CatalogueFile,
    options: &FetchOptions,
) -> Result<OpenedSource> {
    match mirror {
        Mirror::Folder(folder) => {
            // A folder mirror may hold the .gz files or the raw ones.
            for (name, compressed) in [(entry.compressed_name, true), (entry.file_name, false)] {
                let path = folder.join(name);
                match File::open(&path) {
                    Ok(file) => {
                        let length = file.metadata().ok().map(|metadata| metadata.len());
                        return Ok(OpenedSource {
                            reader: Box::new(file),
                            length,
                            compressed,
                            description: path.display().to_string(),
                        });
                    }
                    Err(error) if error.kind() == std::io::ErrorKind::NotFound => {}
                    Err(error) => return Err(DatasetError::io(&path, error)),
                }
            }
            Err(DatasetError::MissingFile {
                path: folder.join(entry.compressed_name),
            })
        }
        Mirror::Http(base) => {
            let url = format!("{base}{}", entry.compressed_name);
            let agent = ureq::AgentBuilder::new()
                .timeout_connect(options.timeout)
                .timeout_read(options.timeout)
                .build();
            let response = agent
                .get(&url)
                .call()
                .map_err(|error| DatasetError::Download {
                    url: url.clone(),
                    source: Box::new(error),
                })?;
            let length = response
                .header("Content-Length")
                .and_then(|value| value.trim().parse::<u64>().ok());
            Ok(OpenedSource {
                reader: Box::new(response.into_reader()),
                length,
                compressed: true,
                description: url,
            })
        }
    }
}

/// The template of a download's bar: the file's name, the bar, bytes, rate and time left.
const DOWNLOAD_TEMPLATE: &str = "{msg:32} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} {eta}";

/// Downloads from one mirror, verifies, and renames into place. Leaves nothing on failure.
fn fetch_from_mirror(
    mirror: &Mirror,
    entry: &CatalogueFile,
    folder: &Path,
    options: &FetchOptions,
) -> Result<FetchedFile> {
    let source = open_source(mirror, entry, options)?;
    if let Some(length) = source.length
        && length > options.maximum_download_bytes
    {
        return Err(DatasetError::DownloadTooLarge {
            url: source.description,
            limit: options.maximum_download_bytes,
        });
    }
    let stored_name = if source.compressed {
        entry.compressed_name
    } else {
        entry.file_name
    };
    let destination_path = folder.join(stored_name);
    let mut download = AtomicFile::create(&destination_path)?;
    let download_path = download.temporary_path().to_path_buf();

    // 1. Copy the bytes as served, bounded, with progress.
    let bar = options
        .progress
        .progress_bar(source.length, DOWNLOAD_TEMPLATE);
    bar.set_message(stored_name.to_owned());
    {
        let mut limited = source.reader.take(options.maximum_download_bytes + 1);
        let mut writer = BufWriter::with_capacity(1 << 20, download.file());
        let mut buffer = vec![0u8; 256 * 1024];
        let mut total: u64 = 0;
        loop {
            let count = match limited.read(&mut buffer) {
                Ok(0) => break,
                Ok(count) => count,
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(error) => {
                    bar.abandon();
                    return Err(DatasetError::Download {
                        url: source.description.clone(),
                        source: Box::new(error),
                    });
                }
            };
            total += count as u64;
            if total > options.maximum_download_bytes {
                bar.abandon();
                return Err(DatasetError::DownloadTooLarge {
                    url: source.description.clone(),
                    limit: options.maximum_download_bytes,
                });
            }
            writer
                .write_all(&buffer[..count])
                .map_err(|error| DatasetError::io(&download_path, error))?;
            bar.inc(count as u64);
        }
        writer
            .flush()
            .map_err(|error| DatasetError::io(&download_path, error))?;
    }
    bar.finish_and_clear();

    // 2. Decompress and validate it, hashing the decompressed bytes; for a .gz also write the
    //    decompressed cache file at the same time.
    let downloaded =
        File::open(&download_path).map_err(|error| DatasetError::io(&download_path, error))?;
    let mut hasher = Sha256::new();
    let (header, cache) = if source.compressed {
        let cache_path = gz_cache_path(&destination_path)?;
        let mut cache = AtomicFile::create(&cache_path)?;
        let cache_temporary = cache.temporary_path().to_path_buf();
        let header = {
            let mut cache_writer = BufWriter::with_capacity(1 << 20, cache.file());
            let header = {
                let mut tee = Tee {
                    first: &mut hasher,
                    second: &mut cache_writer,
                };
                decompress_validated(downloaded, &mut tee, &destination_path, &cache_temporary)?
            };
            cache_writer
                .flush()
                .map_err(|error| DatasetError::io(&cache_temporary, error))?;
            header
        };
        (header, Some(cache))
    } else {
        let header = copy_validated_idx(
            BufReader::new(downloaded),
            &mut hasher,
            &destination_path,
            &download_path,
            |error| DatasetError::io(&download_path, error),
        )?;
        (header, None)
    };
    check_catalogue_shape(&header, &destination_path, entry)?;
    let sha256 = format!("{:x}", hasher.finalize());
    if let Some(expected) = entry.sha256
        && sha256 != expected
    {
        return Err(DatasetError::ChecksumMismatch {
            path: destination_path,
            expected: expected.to_owned(),
            actual: sha256,
        });
    }

    // 3. Verified: rename into place (the file first, so the cache is not older than it).
    let path = download.commit()?;
    if let Some(cache) = cache {
        cache.commit()?;
    }
    Ok(FetchedFile {
        path,
        sha256,
        checksum_compared: entry.sha256.is_some(),
        origin: FetchOrigin::Mirror(mirror.describe()),
    })
}

/// Makes one catalogue file available in `folder`.
///
/// If the folder already holds it (`.gz` or raw) and it verifies (see [`verify_file`]), nothing
/// is downloaded. Otherwise each mirror of `options` is tried in order: the file is copied into
/// a temporary file in `folder`, decompressed and checked (IDX structure, the catalogue's shape,
/// and the SHA-256 of the decompressed bytes, so recompressed mirrors work), and only then
/// renamed into place, together with its decompressed copy in `folder/cache/`. A failure of any
/// kind, a checksum mismatch included, leaves no file behind and moves on to the next mirror;
/// when all fail, [`DatasetError::AllMirrorsFailed`] lists every attempt.
pub fn fetch_file(
    entry: &CatalogueFile,
    folder: &Path,
    options: &FetchOptions,
) -> Result<FetchedFile> {
    for name in [entry.compressed_name, entry.file_name] {
        let existing = folder.join(name);
        if existing.is_file()
            && let Ok(verification) = verify_file(&existing, entry)
        {
            return Ok(FetchedFile {
                path: existing,
                sha256: verification.sha256,
                checksum_compared: verification.checksum_compared,
                origin: FetchOrigin::AlreadyPresent,
            });
        }
    }
    let mut attempts = Vec::new();
    for mirror in &options.mirrors {
        match fetch_from_mirror(mirror, entry, folder, options) {
            Ok(fetched) => return Ok(fetched),
            Err(error) => attempts.push(MirrorAttempt {
                mirror: mirror.describe(),
                error,
            }),
        }
    }
    Err(DatasetError::AllMirrorsFailed {
        file_name: entry.compressed_name.to_owned(),
        attempts,
    })
}

/// Makes the four files of a family available in `folder` (see [`fetch_file`]): train images,
/// train labels, test images, test labels.
pub fn fetch_family(
    family: Family,
    folder: &Path,
    options: &FetchOptions,
) -> Result<Vec<FetchedFile>> {
    let mut fetched = Vec::with_capacity(4);
    for split in Split::ALL {
        for entry in family.files(split).both() {
            fetched.push(fetch_file(&entry, folder, options)?);
        }
    }
    Ok(fetched)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn mirrors_parse() {
        assert_eq!(
            Mirror::parse("file:///srv/mnist").unwrap(),
            Mirror::Folder(PathBuf::from("/srv/mnist"))
        );
        assert_eq!(
            Mirror::parse("relative/dir").unwrap(),
            Mirror::Folder("relative/dir".into())
        );
        assert_eq!(
            Mirror::parse("https://example.invalid/m").unwrap(),
            Mirror::Http("https://example.invalid/m/".into())
        );
        for bad in ["", "file://", "ftp://host/x"] {
            assert!(
                matches!(Mirror::parse(bad), Err(DatasetError::InvalidMirror { .. })),
                "{bad}"
            );
        }
    }

    #[test]
    fn argument_mirror_comes_first_then_the_standard_ones() {
        let options = FetchOptions::for_family(Family::Mnist, Some("/local")).unwrap();
        assert_eq!(options.mirrors[0], Mirror::Folder("/local".into()));
        assert_eq!(options.mirrors.len(), 1 + Family::Mnist.mirrors().len());
        assert_eq!(options.progress, ProgressDisplay::Bar);
    }
}
