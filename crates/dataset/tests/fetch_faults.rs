//! Downloads that would hang or leave files behind, against a scripted HTTP server on
//! 127.0.0.1: a server that trickles, one that stalls or never answers, one that closes in the
//! middle of the body, a download cancelled half-way, and stale `.partial` files of a killed run.
//! Every server stops by itself (bounded loops and a deadline), and every fetch runs under a
//! watchdog so that a regression fails instead of hanging.
#![cfg(feature = "fetch")]

use std::io::{BufRead, BufReader, Write};
use std::net::{TcpListener, TcpStream};
use std::path::{Path, PathBuf};
use std::sync::Arc;
use std::sync::atomic::{AtomicBool, Ordering};
use std::time::{Duration, Instant, SystemTime};

mod common;

use common::files_under;

use reclaim_dataset::{
    DatasetError, Family, Split,
    catalogue::{CatalogueFile, workspace_data_folder},
    fetch::{
        DownloadLimits, FetchOptions, FetchOrigin, FetchedFile, Mirror, fetch_file,
        remove_stale_partial_files,
    },
};

/// How long any server in this file lives, and how long any fetch may take before the test
/// fails as hung.
const DEADLINE: Duration = Duration::from_secs(30);

fn entry() -> CatalogueFile {
    Family::Mnist.files(Split::Test).labels
}

/// The vendored, compressed MNIST test labels: what a good server serves.
fn served_bytes() -> Vec<u8> {
    std::fs::read(
        workspace_data_folder()
            .join("mnist")
            .join(entry().compressed_name),
    )
    .unwrap()
}

/// Serves each connection with `respond` (after reading the request), one at a time, until
/// `DEADLINE`. Returns the base URL.
fn serve(respond: impl Fn(&mut TcpStream) + Send + 'static) -> String {
    let listener = TcpListener::bind("127.0.0.1:0").unwrap();
    listener.set_nonblocking(true).unwrap();
    let base = format!("http://{}/", listener.local_addr().unwrap());
    std::thread::spawn(move || {
        let deadline = Instant::now() + DEADLINE;
        while Instant::now() < deadline {
            let Ok((mut stream, _)) = listener.accept() else {
                std::thread::sleep(Duration::from_millis(5));
                continue;
            };
            stream.set_nonblocking(false).unwrap();
            stream
                .set_read_timeout(Some(Duration::from_secs(5)))
                .unwrap();
            let mut reader = BufReader::new(stream.try_clone().unwrap());
            let mut line = String::new();
            while reader.read_line(&mut line).is_ok_and(|count| count > 0) && line != "\r\n" {
                line.clear();
            }
            respond(&mut stream);
        }
    });
    base
}

fn headers(length: usize) -> String {
    format!(
        "HTTP/1.1 200 OK\r\nContent-Length: {length}\r\nContent-Type: application/gzip\r\nConnection: close\r\n\r\n"
    )
}

/// Sends the headers, then one byte every `interval` (at most `count` bytes, stopping when the
/// client is gone), calling `after_first_bytes` once 8 bytes are out.
fn trickle(stream: &mut TcpStream, interval: Duration, count: usize, after_first_bytes: &dyn Fn()) {
    let body = served_bytes();
    if stream.write_all(headers(body.len()).as_bytes()).is_err() {
        return;
    }
    for (index, byte) in body.iter().take(count).enumerate() {
        if stream
            .write_all(&[*byte])
            .and_then(|()| stream.flush())
            .is_err()
        {
            return;
        }
        if index == 7 {
            after_first_bytes();
        }
        std::thread::sleep(interval);
    }
}

/// Runs `fetch` on another thread and fails the test if it has not returned within `DEADLINE`.
fn within_deadline<T: Send + 'static>(fetch: impl FnOnce() -> T + Send + 'static) -> T {
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = sender.send(fetch());
    });
    receiver
        .recv_timeout(DEADLINE)
        .expect("the fetch hung: no answer within the deadline")
}

fn options(base: &str, limits: DownloadLimits) -> FetchOptions {
    let mut options = FetchOptions::only(vec![Mirror::parse(base).unwrap()]);
    options.limits = limits;
    options
}

fn fetch_into(folder: &Path, options: FetchOptions) -> Result<FetchedFile, DatasetError> {
    let folder = folder.to_path_buf();
    within_deadline(move || fetch_file(&entry(), &folder, &options))
}

/// The only attempt's error of an `AllMirrorsFailed`.
fn only_attempt(error: DatasetError) -> DatasetError {
    match error {
        DatasetError::AllMirrorsFailed { mut attempts, .. } if attempts.len() == 1 => {
            attempts.remove(0).error
        }
        other => panic!("expected AllMirrorsFailed with one attempt, got {other:?}"),
    }
}

fn url_of(base: &str) -> String {
    format!("{base}{}", entry().compressed_name)
}

#[test]
fn a_trickling_server_is_stopped_by_the_minimum_rate() {
    let base = serve(|stream| trickle(stream, Duration::from_millis(200), 1000, &|| {}));
    let destination = tempfile::tempdir().unwrap();
    let limits = DownloadLimits {
        stall_timeout: Duration::from_secs(10),
        minimum_bytes_per_second: 1000,
        grace_period: Duration::from_secs(1),
        ..DownloadLimits::default()
    };
    let error = only_attempt(fetch_into(destination.path(), options(&base, limits)).unwrap_err());
    match &error {
        DatasetError::DownloadTooSlow {
            url,
            bytes_per_second,
            minimum_bytes_per_second: 1000,
            ..
        } => {
            assert_eq!(url, &url_of(&base));
            assert!(*bytes_per_second < 1000, "{error}");
        }
        other => panic!("expected DownloadTooSlow, got {other:?}"),
    }
    assert!(error.to_string().starts_with(&url_of(&base)), "{error}");
    assert_eq!(files_under(destination.path()), Vec::<PathBuf>::new());
}

#[test]
fn a_stalled_or_silent_server_is_stopped_by_the_stall_timeout() {
    let limits = DownloadLimits {
        stall_timeout: Duration::from_millis(800),
        minimum_bytes_per_second: 0,
        ..DownloadLimits::default()
    };
    // Ten bytes, then nothing while the connection stays open.
    let stalls = serve(|stream| trickle(stream, Duration::from_secs(4), 10, &|| {}));
    // Accepts, reads the request, never answers.
    let silent = serve(|_| std::thread::sleep(Duration::from_secs(4)));
    for base in [stalls, silent] {
        let destination = tempfile::tempdir().unwrap();
        let error =
            only_attempt(fetch_into(destination.path(), options(&base, limits)).unwrap_err());
        assert!(
            matches!(&error, DatasetError::DownloadStalled { url, timeout } if url == &url_of(&base) && *timeout == limits.stall_timeout),
            "{error:?}"
        );
        assert_eq!(files_under(destination.path()), Vec::<PathBuf>::new());
    }
}

#[test]
fn a_server_closing_mid_body_leaves_no_file() {
    let base = serve(|stream| {
        let body = served_bytes();
        let _ = stream.write_all(headers(body.len()).as_bytes());
        let _ = stream.write_all(&body[..body.len() / 2]);
        // Dropping the stream closes the connection half-way.
    });
    let destination = tempfile::tempdir().unwrap();
    let error = only_attempt(
        fetch_into(
            destination.path(),
            options(&base, DownloadLimits::default()),
        )
        .unwrap_err(),
    );
    assert!(
        matches!(&error, DatasetError::Download { url, .. } if url == &url_of(&base)),
        "{error:?}"
    );
    assert_eq!(files_under(destination.path()), Vec::<PathBuf>::new());
}

#[test]
fn a_pause_shorter_than_the_stall_timeout_is_waited_out() {
    let base = serve(|stream| {
        let body = served_bytes();
        let _ = stream.write_all(headers(body.len()).as_bytes());
        let _ = stream.write_all(&body[..body.len() / 2]);
        let _ = stream.flush();
        std::thread::sleep(Duration::from_millis(700));
        let _ = stream.write_all(&body[body.len() / 2..]);
    });
    let destination = tempfile::tempdir().unwrap();
    let limits = DownloadLimits {
        stall_timeout: Duration::from_secs(5),
        ..DownloadLimits::default()
    };
    let fetched = fetch_into(destination.path(), options(&base, limits)).unwrap();
    assert_eq!(fetched.origin, FetchOrigin::Mirror(base));
    assert_eq!(Some(fetched.sha256.as_str()), entry().sha256);
}

#[test]
fn cancelling_mid_download_removes_the_partial_file_and_tries_no_other_mirror() {
    let flag = Arc::new(AtomicBool::new(false));
    let server_flag = flag.clone();
    // The server itself sets the flag once the download is under way.
    let base = serve(move |stream| {
        trickle(stream, Duration::from_millis(50), 400, &|| {
            server_flag.store(true, Ordering::Relaxed)
        })
    });
    let good = tempfile::tempdir().unwrap();
    std::fs::write(good.path().join(entry().compressed_name), served_bytes()).unwrap();
    let destination = tempfile::tempdir().unwrap();
    let mut options = FetchOptions::only(vec![
        Mirror::parse(&base).unwrap(),
        Mirror::Folder(good.path().to_path_buf()),
    ]);
    options.cancellation = Some(flag.clone());
    let error = fetch_into(destination.path(), options).unwrap_err();
    assert!(
        matches!(&error, DatasetError::Interrupted { url } if url == &url_of(&base)),
        "{error:?}"
    );
    assert!(flag.load(Ordering::Relaxed));
    assert_eq!(files_under(destination.path()), Vec::<PathBuf>::new());
}

#[test]
fn stale_partial_files_of_a_killed_fetch_are_removed_and_live_ones_kept() {
    let destination = tempfile::tempdir().unwrap();
    let entry = entry();
    let cache = destination.path().join("cache");
    std::fs::create_dir(&cache).unwrap();
    let stale = [
        destination
            .path()
            .join(format!(".{}.Xa81bq.partial", entry.compressed_name)),
        cache.join(format!(".{}.Qz0k2a.partial", entry.file_name)),
    ];
    let live = destination
        .path()
        .join(format!(".{}.fresh1.partial", entry.compressed_name));
    let unrelated = destination.path().join(".other-file.gz.Xa81bq.partial");
    let an_hour_ago = SystemTime::now() - Duration::from_secs(3600);
    for path in stale.iter().chain([&unrelated]) {
        let file = std::fs::File::create(path).unwrap();
        file.set_modified(an_hour_ago).unwrap();
    }
    std::fs::write(&live, b"being written").unwrap();

    let mirror = tempfile::tempdir().unwrap();
    std::fs::write(mirror.path().join(entry.compressed_name), served_bytes()).unwrap();
    let fetched = fetch_into(
        destination.path(),
        FetchOptions::only(vec![Mirror::Folder(mirror.path().to_path_buf())]),
    )
    .unwrap();
    assert_eq!(Some(fetched.sha256.as_str()), entry.sha256);
    for path in &stale {
        assert!(!path.exists(), "{} was removed", path.display());
    }
    assert!(
        live.exists(),
        "a partial file written just now may be another fetch's"
    );
    assert!(unrelated.exists(), "another file's partial is not ours");

    // Called directly, the function reports what it removed.
    std::fs::File::create(&stale[0])
        .unwrap()
        .set_modified(an_hour_ago)
        .unwrap();
    assert_eq!(
        remove_stale_partial_files(destination.path(), &entry, &DownloadLimits::default()),
        vec![stale[0].clone()]
    );
}
