//! Downloading the MNIST family (cargo feature `fetch`).

use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::sync::mpsc::{Receiver, RecvTimeoutError};
use std::time::{Duration, Instant};

use indicatif::ProgressBar;
use sha2::{Digest, Sha256};

use crate::atomic::AtomicFile;
use crate::checksum::{check_catalogue_shape, verify_file};
use crate::dataset_name::DatasetName;
use crate::error::{DatasetError, MirrorAttempt, Result};
use crate::family::{CatalogueFile, Family, Split};
use crate::gz::{
    CACHE_FOLDER_NAME, copy_validated_idx, decompress_gz_cached, decompress_validated,
};
use crate::open::open_regular;
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

/// Limits that keep a download from hanging: each is a typed error naming the URL.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct DownloadLimits {
    /// Longest wait for the TCP connection ([`DatasetError::ConnectTimeout`]). Default 30 s.
    pub connect_timeout: Duration,
    /// Longest time without a single byte, answer headers included
    /// ([`DatasetError::DownloadStalled`]). Default 30 s.
    pub stall_timeout: Duration,
    /// The lowest average rate accepted once `grace_period` has passed
    /// ([`DatasetError::DownloadTooSlow`]), in bytes per second; 0 turns the check off. Default
    /// 10,000 (MNIST's largest file, 9.9 MB, then takes at most about 17 minutes).
    pub minimum_bytes_per_second: u64,
    /// How long a download may run before its average rate is checked. Default 30 s.
    pub grace_period: Duration,
}

impl Default for DownloadLimits {
    fn default() -> Self {
        DownloadLimits {
            connect_timeout: Duration::from_secs(30),
            stall_timeout: Duration::from_secs(30),
            minimum_bytes_per_second: 10_000,
            grace_period: Duration::from_secs(30),
        }
    }
}

/// How to fetch: mirrors in order of preference, progress display, limits, cancellation.
#[derive(Clone, Debug)]
pub struct FetchOptions {
    /// Tried in order for each file until one gives a file that verifies.
    pub mirrors: Vec<Mirror>,
    /// Progress bar or nothing.
    pub progress: ProgressDisplay,
    /// A download larger than this is abandoned ([`DatasetError::DownloadTooLarge`]).
    pub maximum_download_bytes: u64,
    /// Connect, stall and minimum-rate limits.
    pub limits: DownloadLimits,
    /// When set (e.g. by a Ctrl-C handler), the download in progress stops within a fraction of
    /// a second: its partial file is removed and [`DatasetError::Interrupted`] returned.
    pub cancellation: Option<Arc<AtomicBool>>,
}

impl FetchOptions {
    /// The default mirror list for a family: the local mirror given as `local_mirror`, else the
    /// one in the `RECLAIM_MIRROR` environment variable (if set and not empty), then the family's
    /// standard mirrors. A progress bar is shown.
    pub fn for_family(family: Family, local_mirror: Option<&str>) -> Result<Self> {
        let mut mirrors = local_mirror_list(local_mirror)?;
        for base in family.mirrors() {
            mirrors.push(Mirror::Http((*base).to_owned()));
        }
        Ok(FetchOptions {
            mirrors,
            progress: ProgressDisplay::Bar,
            ..FetchOptions::only(Vec::new())
        })
    }

    /// The default mirror list for any dataset of the catalogue: as [`FetchOptions::for_family`]
    /// for the MNIST family; for CIFAR, the local mirror (`local_mirror`, else `RECLAIM_MIRROR`
    /// if set and not empty), then the archive's standard location. A progress bar is shown.
    pub fn for_dataset(dataset: DatasetName, local_mirror: Option<&str>) -> Result<Self> {
        let standard: &[&str] = match (dataset.family(), dataset.cifar_variant()) {
            (Some(family), _) => family.mirrors(),
            (None, Some(variant)) => variant.archive().mirrors,
            (None, None) => &[],
        };
        let mut mirrors = local_mirror_list(local_mirror)?;
        mirrors.extend(standard.iter().map(|base| Mirror::Http((*base).to_owned())));
        Ok(FetchOptions {
            mirrors,
            progress: ProgressDisplay::Bar,
            ..FetchOptions::only(Vec::new())
        })
    }

    /// Exactly these mirrors, in this order, without a progress bar, with the default limits
    /// and no cancellation flag.
    pub fn only(mirrors: Vec<Mirror>) -> Self {
        FetchOptions {
            mirrors,
            progress: ProgressDisplay::Hidden,
            maximum_download_bytes: 1 << 30,
            limits: DownloadLimits::default(),
            cancellation: None,
        }
    }

    fn cancelled(&self) -> bool {
        self.cancellation
            .as_ref()
            .is_some_and(|flag| flag.load(Ordering::Relaxed))
    }
}

/// The local mirror given, else the one in `RECLAIM_MIRROR` (if set and not empty), parsed; or
/// none.
fn local_mirror_list(local_mirror: Option<&str>) -> Result<Vec<Mirror>> {
    let from_environment = std::env::var(MIRROR_VARIABLE).ok();
    let local = local_mirror.or(from_environment.as_deref().filter(|text| !text.is_empty()));
    local.map(Mirror::parse).into_iter().collect()
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

/// What the reading thread of one download hands over.
enum Delivery {
    /// The source is open; its length if known.
    Started(Option<u64>),
    /// The next bytes.
    Bytes(Vec<u8>),
    /// The source ended.
    End,
    /// Opening failed.
    Failed(DatasetError),
    /// Reading failed.
    ReadFailed(std::io::Error),
}

/// How often the receiving side wakes up to check cancellation, stall and rate without data.
const POLL_INTERVAL: Duration = Duration::from_millis(100);
const READ_CHUNK_BYTES: usize = 64 * 1024;

/// Opens and reads a source on its own thread, so that the caller can give up at any moment
/// (cancellation, stall, low rate) without waiting for a blocked read. The thread ends at its
/// next delivery once the receiver is gone (a blocked read is bounded by the stall timeout).
fn spawn_reader(
    open: impl FnOnce() -> Result<(Box<dyn Read + Send>, Option<u64>)> + Send + 'static,
) -> Receiver<Delivery> {
    let (sender, receiver) = std::sync::mpsc::sync_channel(16);
    std::thread::spawn(move || {
        let (mut reader, length) = match open() {
            Ok(opened) => opened,
            Err(error) => {
                let _ = sender.send(Delivery::Failed(error));
                return;
            }
        };
        if sender.send(Delivery::Started(length)).is_err() {
            return;
        }
        loop {
            let mut buffer = vec![0u8; READ_CHUNK_BYTES];
            let delivery = match reader.read(&mut buffer) {
                Ok(0) => Delivery::End,
                Ok(count) => {
                    buffer.truncate(count);
                    Delivery::Bytes(buffer)
                }
                Err(error) if error.kind() == std::io::ErrorKind::Interrupted => continue,
                Err(error) => Delivery::ReadFailed(error),
            };
            let last = matches!(delivery, Delivery::End | Delivery::ReadFailed(_));
            if sender.send(delivery).is_err() || last {
                return;
            }
        }
    });
    receiver
}

/// A ureq failure as a typed error naming `url` once (ureq's own messages repeat the URL).
fn http_error(url: &str, error: ureq::Error, limits: &DownloadLimits) -> DatasetError {
    let transport = match error {
        ureq::Error::Status(status, _) => {
            return DatasetError::DownloadStatus {
                url: url.to_owned(),
                status,
            };
        }
        ureq::Error::Transport(transport) => transport,
    };
    let cause = std::error::Error::source(&transport);
    let timed_out = cause
        .and_then(|cause| cause.downcast_ref::<std::io::Error>())
        .is_some_and(|io| io.kind() == std::io::ErrorKind::TimedOut);
    if timed_out && transport.kind() == ureq::ErrorKind::ConnectionFailed {
        return DatasetError::ConnectTimeout {
            url: url.to_owned(),
            timeout: limits.connect_timeout,
        };
    }
    if timed_out {
        return DatasetError::DownloadStalled {
            url: url.to_owned(),
            timeout: limits.stall_timeout,
        };
    }
    let mut text = transport.kind().to_string();
    for part in transport
        .message()
        .map(str::to_owned)
        .into_iter()
        .chain(cause.map(|c| c.to_string()))
    {
        text.push_str(": ");
        text.push_str(&part);
    }
    DatasetError::Download {
        url: url.to_owned(),
        source: Box::new(std::io::Error::other(text)),
    }
}

/// A source opened on one mirror: its deliveries, whether it is gzip, and its name.
pub(crate) struct OpenedSource {
    deliveries: Receiver<Delivery>,
    compressed: bool,
    description: String,
}

pub(crate) fn open_source(
    mirror: &Mirror,
    entry: &CatalogueFile,
    options: &FetchOptions,
) -> Result<OpenedSource> {
    match mirror {
        Mirror::Folder(folder) => {
            // A folder mirror may hold the .gz files or the raw ones.
            for (name, compressed) in [(entry.compressed_name, true), (entry.file_name, false)] {
                let path = folder.join(name);
                match open_regular(&path) {
                    Ok((file, metadata)) => {
                        let length = Some(metadata.len());
                        return Ok(OpenedSource {
                            deliveries: spawn_reader(move || Ok((Box::new(file), length))),
                            compressed,
                            description: path.display().to_string(),
                        });
                    }
                    Err(DatasetError::MissingFile { .. }) => {}
                    Err(error) => return Err(error),
                }
            }
            Err(DatasetError::MissingFile {
                path: folder.join(entry.compressed_name),
            })
        }
        Mirror::Http(base) => {
            let url = format!("{base}{}", entry.compressed_name);
            let limits = options.limits;
            let thread_url = url.clone();
            let deliveries = spawn_reader(move || {
                let agent = ureq::AgentBuilder::new()
                    .timeout_connect(limits.connect_timeout)
                    .timeout_read(limits.stall_timeout)
                    .build();
                let response = agent
                    .get(&thread_url)
                    .call()
                    .map_err(|error| http_error(&thread_url, error, &limits))?;
                let length = response
                    .header("Content-Length")
                    .and_then(|value| value.trim().parse::<u64>().ok());
                Ok((Box::new(response.into_reader()), length))
            });
            Ok(OpenedSource {
                deliveries,
                compressed: true,
                description: url,
            })
        }
    }
}

/// The template of a download's bar: the file's name, the bar, bytes, rate and time left.
const DOWNLOAD_TEMPLATE: &str = "{msg:32} [{bar:30}] {bytes}/{total_bytes} {bytes_per_sec} {eta}";

pub(crate) fn progress_bar(options: &FetchOptions, length: Option<u64>, name: &str) -> ProgressBar {
    let bar = options.progress.progress_bar(length, DOWNLOAD_TEMPLATE);
    bar.set_message(name.to_owned());
    bar
}

/// Watches one download's progress against the limits.
struct Watch {
    started: Instant,
    last_byte: Instant,
    received: u64,
}

impl Watch {
    fn new() -> Self {
        let now = Instant::now();
        Watch {
            started: now,
            last_byte: now,
            received: 0,
        }
    }

    fn received(&mut self, count: usize) {
        self.received += count as u64;
        self.last_byte = Instant::now();
    }

    /// The limit broken so far, if any.
    fn check(&self, url: &str, options: &FetchOptions) -> Result<()> {
        let limits = &options.limits;
        if options.cancelled() {
            return Err(DatasetError::Interrupted {
                url: url.to_owned(),
            });
        }
        if self.last_byte.elapsed() > limits.stall_timeout {
            return Err(DatasetError::DownloadStalled {
                url: url.to_owned(),
                timeout: limits.stall_timeout,
            });
        }
        let elapsed = self.started.elapsed();
        if limits.minimum_bytes_per_second > 0 && elapsed > limits.grace_period {
            let rate = (self.received as f64 / elapsed.as_secs_f64()) as u64;
            if rate < limits.minimum_bytes_per_second {
                return Err(DatasetError::DownloadTooSlow {
                    url: url.to_owned(),
                    bytes_per_second: rate,
                    minimum_bytes_per_second: limits.minimum_bytes_per_second,
                    elapsed,
                });
            }
        }
        Ok(())
    }
}

/// Receives a source's bytes into `file` under the limits and the cancellation flag. Every byte
/// is written as it arrives (no buffer), so a live download's partial file is never older than
/// the stall timeout; see [`remove_stale_partial_files`].
pub(crate) fn receive(
    source: &OpenedSource,
    file: &mut File,
    file_path: &Path,
    options: &FetchOptions,
    bar: &ProgressBar,
) -> Result<()> {
    let url = &source.description;
    let too_large = || DatasetError::DownloadTooLarge {
        url: url.clone(),
        limit: options.maximum_download_bytes,
    };
    let mut watch = Watch::new();
    loop {
        watch.check(url, options)?;
        match source.deliveries.recv_timeout(POLL_INTERVAL) {
            Ok(Delivery::Started(length)) => {
                if length.is_some_and(|length| length > options.maximum_download_bytes) {
                    return Err(too_large());
                }
                if let Some(length) = length {
                    bar.set_length(length);
                }
            }
            Ok(Delivery::Bytes(bytes)) => {
                watch.received(bytes.len());
                if watch.received > options.maximum_download_bytes {
                    return Err(too_large());
                }
                file.write_all(&bytes)
                    .map_err(|error| DatasetError::io(file_path, error))?;
                bar.inc(bytes.len() as u64);
            }
            Ok(Delivery::End) => return Ok(()),
            Ok(Delivery::Failed(error)) => return Err(error),
            // The socket's read timeout is the stall timeout.
            Ok(Delivery::ReadFailed(error))
                if matches!(
                    error.kind(),
                    std::io::ErrorKind::TimedOut | std::io::ErrorKind::WouldBlock
                ) =>
            {
                return Err(DatasetError::DownloadStalled {
                    url: url.clone(),
                    timeout: options.limits.stall_timeout,
                });
            }
            Ok(Delivery::ReadFailed(error)) => {
                return Err(DatasetError::Download {
                    url: url.clone(),
                    source: Box::new(error),
                });
            }
            Err(RecvTimeoutError::Timeout) => {}
            Err(RecvTimeoutError::Disconnected) => {
                return Err(DatasetError::Download {
                    url: url.clone(),
                    source: Box::new(std::io::Error::other("the reading thread stopped")),
                });
            }
        }
    }
}

/// Removes the temporary files an earlier, killed fetch of `entry` left in `folder` and in its
/// cache folder: `.<name>.<random>.partial` files not modified for longer than the stall timeout
/// (a live download writes every byte as it comes, so its file is never that old). Returns the
/// files removed.
pub fn remove_stale_partial_files(
    folder: &Path,
    entry: &CatalogueFile,
    limits: &DownloadLimits,
) -> Vec<PathBuf> {
    let prefixes = [
        format!(".{}.", entry.compressed_name),
        format!(".{}.", entry.file_name),
    ];
    let mut removed = Vec::new();
    for place in [folder.to_path_buf(), folder.join(CACHE_FOLDER_NAME)] {
        let Ok(entries) = std::fs::read_dir(&place) else {
            continue;
        };
        for item in entries.flatten() {
            let name = item.file_name().to_string_lossy().into_owned();
            let ours = name.ends_with(".partial")
                && prefixes
                    .iter()
                    .any(|prefix| name.starts_with(prefix.as_str()));
            let stale = item
                .metadata()
                .and_then(|metadata| metadata.modified())
                .is_ok_and(|modified| {
                    modified.elapsed().unwrap_or_default() > limits.stall_timeout
                });
            if ours && stale && std::fs::remove_file(item.path()).is_ok() {
                removed.push(item.path());
            }
        }
    }
    removed
}

/// Downloads from one mirror, verifies, and renames into place. Leaves nothing on failure.
fn fetch_from_mirror(
    mirror: &Mirror,
    entry: &CatalogueFile,
    folder: &Path,
    options: &FetchOptions,
) -> Result<FetchedFile> {
    let source = open_source(mirror, entry, options)?;
    let stored_name = if source.compressed {
        entry.compressed_name
    } else {
        entry.file_name
    };
    let destination_path = folder.join(stored_name);
    let mut download = AtomicFile::create(&destination_path)?;
    let download_path = download.temporary_path().to_path_buf();

    // 1. Copy the bytes as served, bounded, with progress. The temporary file is removed on any
    //    failure, an interruption included (dropping `download`).
    let bar = progress_bar(options, None, stored_name);
    if let Err(error) = receive(&source, download.file(), &download_path, options, &bar) {
        bar.abandon();
        return Err(error);
    }
    bar.finish_and_clear();

    // 2. Decompress and validate it, hashing the decompressed bytes.
    let (downloaded, _) = open_regular(&download_path)?;
    let mut hasher = Sha256::new();
    let header = if source.compressed {
        decompress_validated(downloaded, &mut hasher, &destination_path, &download_path)?
    } else {
        copy_validated_idx(
            BufReader::new(downloaded),
            &mut hasher,
            &destination_path,
            &download_path,
            |error| DatasetError::io(&download_path, error),
        )?
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

    // 3. Verified: rename into place, then write the decompressed cache (and its record) the
    //    usual way; a cache that cannot be written is not a failure of the fetch.
    let path = download.commit()?;
    if source.compressed {
        match decompress_gz_cached(&path) {
            Ok(_) | Err(DatasetError::CacheUnavailable { .. }) => {}
            Err(error) => return Err(error),
        }
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
/// renamed into place, and its decompressed copy written (see [`decompress_gz_cached`]). A
/// failure of any kind (a checksum mismatch, a connect timeout, a stall, a rate below the
/// minimum: see [`DownloadLimits`]) leaves no file behind and moves on to the next mirror; when
/// all fail, [`DatasetError::AllMirrorsFailed`] lists every attempt. When the cancellation flag
/// of `options` is set, the download stops at once, its partial file is removed, and
/// [`DatasetError::Interrupted`] is returned without trying other mirrors. Temporary files left
/// by an earlier killed fetch are removed first (see [`remove_stale_partial_files`]).
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
    remove_stale_partial_files(folder, entry, &options.limits);
    let mut attempts = Vec::new();
    for mirror in &options.mirrors {
        if options.cancelled() {
            return Err(DatasetError::Interrupted {
                url: mirror.describe(),
            });
        }
        match fetch_from_mirror(mirror, entry, folder, options) {
            Ok(fetched) => return Ok(fetched),
            // Stopping was asked for: no other mirror is tried.
            Err(error @ DatasetError::Interrupted { .. }) => return Err(error),
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
    fn a_cifar_dataset_gets_its_archive_s_location_after_the_local_mirror() {
        let options = FetchOptions::for_dataset(DatasetName::Cifar100, Some("/local")).unwrap();
        assert_eq!(
            options.mirrors,
            [
                Mirror::Folder("/local".into()),
                Mirror::Http("https://www.cs.toronto.edu/~kriz/".into())
            ]
        );
        let mnist = FetchOptions::for_dataset(DatasetName::Mnist, Some("/local")).unwrap();
        assert_eq!(
            mnist.mirrors,
            FetchOptions::for_family(Family::Mnist, Some("/local"))
                .unwrap()
                .mirrors
        );
    }

    #[test]
    fn argument_mirror_comes_first_then_the_standard_ones() {
        let options = FetchOptions::for_family(Family::Mnist, Some("/local")).unwrap();
        assert_eq!(options.mirrors[0], Mirror::Folder("/local".into()));
        assert_eq!(options.mirrors.len(), 1 + Family::Mnist.mirrors().len());
        assert_eq!(options.progress, ProgressDisplay::Bar);
    }
}
