//! Only regular files are opened as datasets: a FIFO with no writer, a socket and devices are
//! refused with a typed error naming the path and what it is, by every way the crate opens a
//! file, and nothing blocks. Each open runs on its own thread under a deadline, so that a
//! regression (an open that waits for a writer) fails the test instead of hanging it.
#![cfg(unix)]

use std::ffi::CString;
use std::os::unix::ffi::OsStrExt;
use std::os::unix::net::UnixListener;
use std::path::{Path, PathBuf};
use std::time::Duration;

use reclaim_dataset::{
    DatasetError, Family, FileKind, ImageDataset, Split,
    catalogue::{sha256_of_file, verify_file},
    idx::{IdxArray, decompress_gz_cached},
};

fn make_fifo(path: &Path) {
    let name = CString::new(path.as_os_str().as_bytes()).unwrap();
    // SAFETY: `name` is a valid NUL-terminated path that outlives the call.
    let status = unsafe { libc::mkfifo(name.as_ptr(), 0o644) };
    assert_eq!(status, 0, "mkfifo {}", path.display());
}

/// Runs `open` on another thread; its error, or a test failure if it blocks for 10 seconds.
fn refused_without_blocking<T: Send + 'static>(
    open: impl FnOnce() -> Result<T, DatasetError> + Send + 'static,
) -> DatasetError {
    let (sender, receiver) = std::sync::mpsc::channel();
    std::thread::spawn(move || {
        let _ = sender.send(open().err());
    });
    receiver
        .recv_timeout(Duration::from_secs(10))
        .expect("opening blocked")
        .expect("opening should have failed")
}

fn assert_refused(error: &DatasetError, expected_path: &Path, expected_kind: FileKind) {
    match error {
        DatasetError::NotARegularFile { path, kind } => {
            assert_eq!(path, expected_path);
            assert_eq!(*kind, expected_kind);
        }
        other => panic!(
            "expected NotARegularFile for {}, got {other:?}",
            expected_path.display()
        ),
    }
    let text = error.to_string();
    assert!(
        text.starts_with(&expected_path.display().to_string()),
        "{text}"
    );
    assert!(text.contains(&expected_kind.to_string()), "{text}");
}

/// Every way the crate opens a single file, each on its own thread.
fn every_single_file_open(path: &Path) -> Vec<DatasetError> {
    let entry = Family::Mnist.files(Split::Test).labels;
    let paths: Vec<PathBuf> = vec![path.to_path_buf(); 4];
    let [a, b, c, d] = <[PathBuf; 4]>::try_from(paths).unwrap();
    vec![
        refused_without_blocking(move || IdxArray::open_owned(&a)),
        // SAFETY: nothing is mapped (the open is refused), and nothing modifies it anyway.
        refused_without_blocking(move || unsafe { IdxArray::open_mapped(&b) }),
        refused_without_blocking(move || sha256_of_file(&c)),
        refused_without_blocking(move || verify_file(&d, &entry)),
    ]
}

#[test]
fn a_fifo_without_a_writer_is_refused_everywhere_without_blocking() {
    let folder = tempfile::tempdir().unwrap();
    let fifo = folder.path().join("t10k-labels-idx1-ubyte");
    make_fifo(&fifo);
    for error in every_single_file_open(&fifo) {
        assert_refused(&error, &fifo, FileKind::Fifo);
    }

    // A FIFO under a .gz name: refused before any cache is made.
    let gz_fifo = folder.path().join("t10k-images-idx3-ubyte.gz");
    make_fifo(&gz_fifo);
    let path = gz_fifo.clone();
    assert_refused(
        &refused_without_blocking(move || decompress_gz_cached(&path)),
        &gz_fifo,
        FileKind::Fifo,
    );
    let path = gz_fifo.clone();
    assert_refused(
        &refused_without_blocking(move || IdxArray::open_owned(&path)),
        &gz_fifo,
        FileKind::Fifo,
    );

    // In a dataset folder the FIFO is found under its name and refused, not reported missing.
    let dataset_folder = folder.path().to_path_buf();
    let error =
        refused_without_blocking(move || ImageDataset::open_owned(&dataset_folder, Split::Test));
    assert_refused(&error, &gz_fifo, FileKind::Fifo);
    let dataset_folder = folder.path().to_path_buf();
    // SAFETY: nothing is mapped (the open is refused).
    let error = refused_without_blocking(move || unsafe {
        ImageDataset::open_mapped(&dataset_folder, Split::Test)
    });
    assert_refused(&error, &gz_fifo, FileKind::Fifo);
}

#[test]
fn a_socket_is_refused() {
    let folder = tempfile::tempdir().unwrap();
    let socket = folder.path().join("train-images-idx3-ubyte");
    let _listener = UnixListener::bind(&socket).unwrap();
    for error in every_single_file_open(&socket) {
        assert_refused(&error, &socket, FileKind::Socket);
    }
}

#[test]
fn devices_are_refused() {
    for device in ["/dev/zero", "/dev/null"] {
        let path = Path::new(device);
        for error in every_single_file_open(path) {
            assert_refused(&error, path, FileKind::CharacterDevice);
        }
    }
}

#[test]
fn a_folder_is_refused() {
    let folder = tempfile::tempdir().unwrap();
    let inner = folder.path().join("t10k-labels-idx1-ubyte");
    std::fs::create_dir(&inner).unwrap();
    for error in every_single_file_open(&inner) {
        assert_refused(&error, &inner, FileKind::Directory);
    }
}
