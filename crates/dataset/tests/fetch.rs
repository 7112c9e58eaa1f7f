//! Fetching from local mirrors (folders, `file://`, and an HTTP server on the loopback address)
//! that this test writes itself: MNIST recompressed at another level than the vendored files, so
//! the checksums of the decompressed bytes must carry the verification.
#![cfg(feature = "fetch")]

use std::io::{BufRead, BufReader, Read, Write};
use std::net::TcpListener;
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, AtomicUsize, Ordering};
use std::time::{Duration, Instant};

mod common;

use common::files_under;

use flate2::Compression;
use flate2::write::GzEncoder;
use reclaim_dataset::{
    DatasetError, Family, ImageDataset, Split,
    catalogue::{CatalogueFile, sha256_hex, workspace_data_folder},
    fetch::{FetchOptions, FetchOrigin, Mirror, fetch_family, fetch_file},
    idx::decompress_gz_cached,
};

fn vendored(entry: &CatalogueFile) -> Vec<u8> {
    let gz = workspace_data_folder()
        .join("mnist")
        .join(entry.compressed_name);
    std::fs::read(decompress_gz_cached(&gz).unwrap()).unwrap()
}

fn gzip_fast(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = GzEncoder::new(Vec::new(), Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

fn train_labels() -> CatalogueFile {
    Family::Mnist.files(Split::Train).labels
}

/// A mirror folder holding `entries`, recompressed.
fn mirror_with(entries: &[CatalogueFile]) -> tempfile::TempDir {
    let mirror = tempfile::tempdir().unwrap();
    for entry in entries {
        let recompressed = gzip_fast(&vendored(entry));
        let original = std::fs::read(
            workspace_data_folder()
                .join("mnist")
                .join(entry.compressed_name),
        )
        .unwrap();
        assert_ne!(
            recompressed, original,
            "the mirror's file is really recompressed"
        );
        std::fs::write(mirror.path().join(entry.compressed_name), recompressed).unwrap();
    }
    mirror
}

fn folder_mirror(folder: &Path) -> Mirror {
    Mirror::Folder(folder.to_path_buf())
}

#[test]
fn fetches_the_whole_family_from_a_recompressed_file_url_mirror() {
    let all: Vec<CatalogueFile> = Split::ALL
        .into_iter()
        .flat_map(|split| Family::Mnist.files(split).both())
        .collect();
    let mirror = mirror_with(&all);
    let destination = tempfile::tempdir().unwrap();
    let url = format!("file://{}", mirror.path().display());
    let options = FetchOptions::only(vec![Mirror::parse(&url).unwrap()]);

    let fetched = fetch_family(Family::Mnist, destination.path(), &options).unwrap();
    assert_eq!(fetched.len(), 4);
    for (file, entry) in fetched.iter().zip(&all) {
        assert_eq!(file.path, destination.path().join(entry.compressed_name));
        assert_eq!(Some(file.sha256.as_str()), entry.sha256);
        assert!(file.checksum_compared);
        assert_eq!(
            file.origin,
            FetchOrigin::Mirror(mirror.path().display().to_string())
        );
        // Stored as served, decompressed copy beside it.
        assert_eq!(
            std::fs::read(&file.path).unwrap(),
            std::fs::read(mirror.path().join(entry.compressed_name)).unwrap()
        );
        let cache = destination.path().join("cache").join(entry.file_name);
        assert_eq!(
            Some(sha256_hex(&std::fs::read(cache).unwrap()).as_str()),
            entry.sha256
        );
    }
    // SAFETY: the fetched files are not modified while the dataset lives.
    let train = unsafe { ImageDataset::open_mapped(destination.path(), Split::Train) }.unwrap();
    assert_eq!(train.len(), 60_000);
    assert_eq!(&train.labels()[..10], &[5, 0, 4, 1, 9, 2, 1, 3, 1, 4]);

    // A second fetch finds everything present and verified, even with no mirror at all.
    let again = fetch_family(
        Family::Mnist,
        destination.path(),
        &FetchOptions::only(Vec::new()),
    )
    .unwrap();
    assert!(
        again
            .iter()
            .all(|file| file.origin == FetchOrigin::AlreadyPresent)
    );
    // Only the four files, their four decompressed copies and the copies' records: no temporary
    // file is left.
    assert_eq!(files_under(destination.path()).len(), 12);
}

#[test]
fn checksum_mismatch_leaves_no_file_behind() {
    let entry = train_labels();
    let mirror = tempfile::tempdir().unwrap();
    let mut tampered = vendored(&entry);
    tampered[8] = 6; // The first label, 5, becomes 6: still a valid IDX file of the right shape.
    std::fs::write(
        mirror.path().join(entry.compressed_name),
        gzip_fast(&tampered),
    )
    .unwrap();
    let destination = tempfile::tempdir().unwrap();

    let error = fetch_file(
        &entry,
        destination.path(),
        &FetchOptions::only(vec![folder_mirror(mirror.path())]),
    )
    .unwrap_err();
    match &error {
        DatasetError::AllMirrorsFailed {
            file_name,
            attempts,
        } => {
            assert_eq!(file_name, entry.compressed_name);
            assert_eq!(attempts.len(), 1);
            match &attempts[0].error {
                DatasetError::ChecksumMismatch {
                    path,
                    expected,
                    actual,
                } => {
                    assert_eq!(path, &destination.path().join(entry.compressed_name));
                    assert_eq!(Some(expected.as_str()), entry.sha256);
                    assert_eq!(actual, &sha256_hex(&tampered));
                }
                other => panic!("expected ChecksumMismatch, got {other:?}"),
            }
        }
        other => panic!("expected AllMirrorsFailed, got {other:?}"),
    }
    assert!(error.to_string().contains("SHA-256 mismatch"), "{error}");
    assert_eq!(
        files_under(destination.path()),
        Vec::<PathBuf>::new(),
        "nothing left behind"
    );

    // A corrupt mirror is skipped in favour of the next one.
    let good = mirror_with(&[entry]);
    let fetched = fetch_file(
        &entry,
        destination.path(),
        &FetchOptions::only(vec![
            folder_mirror(mirror.path()),
            folder_mirror(good.path()),
        ]),
    )
    .unwrap();
    assert_eq!(
        fetched.origin,
        FetchOrigin::Mirror(good.path().display().to_string())
    );
}

#[test]
fn falls_back_when_the_first_mirror_lacks_the_file() {
    let entry = Family::Mnist.files(Split::Test).labels;
    let empty = tempfile::tempdir().unwrap();
    let good = mirror_with(&[entry]);
    let destination = tempfile::tempdir().unwrap();
    let fetched = fetch_file(
        &entry,
        destination.path(),
        &FetchOptions::only(vec![
            folder_mirror(empty.path()),
            folder_mirror(good.path()),
        ]),
    )
    .unwrap();
    assert_eq!(
        fetched.origin,
        FetchOrigin::Mirror(good.path().display().to_string())
    );
    assert_eq!(fetched.path, destination.path().join(entry.compressed_name));

    // When every mirror lacks it, each attempt is reported, and nothing is written.
    let elsewhere = tempfile::tempdir().unwrap();
    let error = fetch_file(
        &entry,
        elsewhere.path(),
        &FetchOptions::only(vec![
            folder_mirror(empty.path()),
            folder_mirror(empty.path()),
        ]),
    )
    .unwrap_err();
    match error {
        DatasetError::AllMirrorsFailed { attempts, .. } => {
            assert_eq!(attempts.len(), 2);
            for attempt in attempts {
                assert!(matches!(attempt.error, DatasetError::MissingFile { .. }));
            }
        }
        other => panic!("expected AllMirrorsFailed, got {other:?}"),
    }
    assert!(files_under(elsewhere.path()).is_empty());
}

#[test]
fn raw_files_on_a_mirror_are_accepted() {
    let entry = Family::Mnist.files(Split::Test).labels;
    let mirror = tempfile::tempdir().unwrap();
    std::fs::write(mirror.path().join(entry.file_name), vendored(&entry)).unwrap();
    let destination = tempfile::tempdir().unwrap();
    let fetched = fetch_file(
        &entry,
        destination.path(),
        &FetchOptions::only(vec![folder_mirror(mirror.path())]),
    )
    .unwrap();
    assert_eq!(fetched.path, destination.path().join(entry.file_name));
    assert_eq!(Some(fetched.sha256.as_str()), entry.sha256);
}

#[test]
fn garbage_and_corrupt_existing_files() {
    let entry = train_labels();
    let mirror = tempfile::tempdir().unwrap();
    std::fs::write(
        mirror.path().join(entry.compressed_name),
        b"<html>not found</html>",
    )
    .unwrap();
    let destination = tempfile::tempdir().unwrap();
    let options = FetchOptions::only(vec![folder_mirror(mirror.path())]);
    match fetch_file(&entry, destination.path(), &options).unwrap_err() {
        DatasetError::AllMirrorsFailed { attempts, .. } => {
            assert!(
                matches!(attempts[0].error, DatasetError::Gzip { .. }),
                "{:?}",
                attempts[0].error
            );
        }
        other => panic!("expected AllMirrorsFailed, got {other:?}"),
    }
    assert!(files_under(destination.path()).is_empty());

    // A damaged file already in the folder is replaced by a verified one.
    let existing = destination.path().join(entry.compressed_name);
    std::fs::write(&existing, gzip_fast(&[0, 0, 8, 1, 0, 0, 0, 1, 3])).unwrap();
    let good = mirror_with(&[entry]);
    let fetched = fetch_file(
        &entry,
        destination.path(),
        &FetchOptions::only(vec![folder_mirror(good.path())]),
    )
    .unwrap();
    assert!(matches!(fetched.origin, FetchOrigin::Mirror(_)));
    assert_eq!(Some(fetched.sha256.as_str()), entry.sha256);
}

#[test]
fn download_limit_is_enforced() {
    let entry = train_labels();
    let mirror = mirror_with(&[entry]);
    let destination = tempfile::tempdir().unwrap();
    let mut options = FetchOptions::only(vec![folder_mirror(mirror.path())]);
    options.maximum_download_bytes = 100;
    match fetch_file(&entry, destination.path(), &options).unwrap_err() {
        DatasetError::AllMirrorsFailed { attempts, .. } => assert!(
            matches!(
                attempts[0].error,
                DatasetError::DownloadTooLarge { limit: 100, .. }
            ),
            "{:?}",
            attempts[0].error
        ),
        other => panic!("expected AllMirrorsFailed, got {other:?}"),
    }
    assert!(files_under(destination.path()).is_empty());
}

/// A tiny HTTP/1.1 server on 127.0.0.1 serving files from a folder (404 otherwise), one request
/// per connection. It stops when told to or after 60 seconds, whichever comes first.
struct LoopbackServer {
    base: String,
    stop: Arc<AtomicBool>,
    requests: Arc<AtomicUsize>,
}

impl LoopbackServer {
    fn serve(folder: PathBuf) -> Self {
        let listener = TcpListener::bind("127.0.0.1:0").unwrap();
        listener.set_nonblocking(true).unwrap();
        let base = format!("http://{}/", listener.local_addr().unwrap());
        let stop = Arc::new(AtomicBool::new(false));
        let requests = Arc::new(AtomicUsize::new(0));
        let (thread_stop, thread_requests) = (stop.clone(), requests.clone());
        std::thread::spawn(move || {
            let deadline = Instant::now() + Duration::from_secs(60);
            while !thread_stop.load(Ordering::Relaxed) && Instant::now() < deadline {
                let stream = match listener.accept() {
                    Ok((stream, _)) => stream,
                    Err(_) => {
                        std::thread::sleep(Duration::from_millis(5));
                        continue;
                    }
                };
                thread_requests.fetch_add(1, Ordering::Relaxed);
                stream.set_nonblocking(false).unwrap();
                stream
                    .set_read_timeout(Some(Duration::from_secs(10)))
                    .unwrap();
                let mut reader = BufReader::new(stream.try_clone().unwrap());
                let mut request_line = String::new();
                if reader.read_line(&mut request_line).is_err() {
                    continue;
                }
                loop {
                    let mut line = String::new();
                    match reader.read_line(&mut line) {
                        Ok(0) | Err(_) => break,
                        Ok(_) if line == "\r\n" => break,
                        Ok(_) => {}
                    }
                }
                let name = request_line
                    .split_whitespace()
                    .nth(1)
                    .unwrap_or("/")
                    .trim_start_matches('/')
                    .to_owned();
                let mut stream = stream;
                let body = if name.contains('/') || name.is_empty() {
                    None
                } else {
                    std::fs::read(folder.join(&name)).ok()
                };
                let _ = match body {
                    Some(body) => stream
                        .write_all(
                            format!(
                                "HTTP/1.1 200 OK\r\nContent-Length: {}\r\nContent-Type: application/gzip\r\nConnection: close\r\n\r\n",
                                body.len()
                            )
                            .as_bytes(),
                        )
                        .and_then(|()| stream.write_all(&body)),
                    None => stream.write_all(
                        b"HTTP/1.1 404 Not Found\r\nContent-Length: 0\r\nConnection: close\r\n\r\n",
                    ),
                };
                let _ = stream.flush();
                // Drain anything left so the close is clean.
                let _ = reader
                    .get_mut()
                    .set_read_timeout(Some(Duration::from_millis(10)));
                let _ = reader.read(&mut [0u8; 64]);
            }
        });
        LoopbackServer {
            base,
            stop,
            requests,
        }
    }
}

impl Drop for LoopbackServer {
    fn drop(&mut self) {
        self.stop.store(true, Ordering::Relaxed);
    }
}

#[test]
fn http_mirror_on_the_loopback_address_with_fallback() {
    let entry = Family::Mnist.files(Split::Test).labels;
    let mirror = mirror_with(&[entry]);
    let server = LoopbackServer::serve(mirror.path().to_path_buf());
    let destination = tempfile::tempdir().unwrap();
    let missing = Mirror::parse(&format!("{}missing", server.base)).unwrap();
    let good = Mirror::parse(&server.base).unwrap();
    let fetched = fetch_file(
        &entry,
        destination.path(),
        &FetchOptions::only(vec![missing.clone(), good.clone()]),
    )
    .unwrap();
    assert_eq!(fetched.origin, FetchOrigin::Mirror(server.base.clone()));
    assert_eq!(Some(fetched.sha256.as_str()), entry.sha256);
    assert!(
        server.requests.load(Ordering::Relaxed) >= 2,
        "both mirrors were asked"
    );

    // An HTTP 404 is a DownloadStatus error naming the URL and the status.
    let elsewhere = tempfile::tempdir().unwrap();
    match fetch_file(&entry, elsewhere.path(), &FetchOptions::only(vec![missing])).unwrap_err() {
        DatasetError::AllMirrorsFailed { attempts, .. } => match &attempts[0].error {
            DatasetError::DownloadStatus { url, status } => {
                assert_eq!(
                    url,
                    &format!("{}missing/{}", server.base, entry.compressed_name)
                );
                assert_eq!(*status, 404);
            }
            other => panic!("expected DownloadStatus, got {other:?}"),
        },
        other => panic!("expected AllMirrorsFailed, got {other:?}"),
    }
    assert!(files_under(elsewhere.path()).is_empty());
}
