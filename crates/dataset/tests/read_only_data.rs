//! A shared, read-only data folder holding only `.gz` files, opened by a user who cannot write
//! it: the decompressed copies go to the user's cache folder, or, when that is not writable
//! either, into memory. The tests run as root here, so the opening is done by a child process
//! (this test binary again, running only the ignored test `unprivileged_child`) with its
//! privileges dropped to `nobody` (uid and gid 65534); when the tests do not run as root, the
//! child runs as the same user and the folder's permissions alone refuse writing.
#![cfg(unix)]

use std::io::Write;
use std::os::unix::fs::PermissionsExt;
use std::os::unix::process::CommandExt;
use std::path::{Path, PathBuf};
use std::process::Command;

mod common;

use common::files_under;

use reclaim_dataset::{
    ImageDataset, Split, StorageKind,
    idx::{IdxArray, encode_idx},
};

const MODE_VARIABLE: &str = "RECLAIM_TEST_CHILD_MODE";
const DATA_VARIABLE: &str = "RECLAIM_TEST_DATA";
const NOBODY: u32 = 65534;

const PIXELS: [u8; 12] = [0, 1, 2, 3, 4, 5, 6, 7, 8, 9, 10, 11];
const LABELS: [u8; 3] = [1, 0, 2];

fn gzip(bytes: &[u8]) -> Vec<u8> {
    let mut encoder = flate2::write::GzEncoder::new(Vec::new(), flate2::Compression::fast());
    encoder.write_all(bytes).unwrap();
    encoder.finish().unwrap()
}

fn chmod(path: &Path, mode: u32) {
    std::fs::set_permissions(path, std::fs::Permissions::from_mode(mode)).unwrap();
}

fn running_as_root() -> bool {
    // SAFETY: geteuid has no preconditions and cannot fail.
    unsafe { libc::geteuid() == 0 }
}

/// A world-readable, nobody-writable folder with the MNIST test split as `.gz` files only.
fn read_only_gz_folder(root: &Path) -> PathBuf {
    let data = root.join("data");
    std::fs::create_dir(&data).unwrap();
    let images = encode_idx::<u8>(&[3, 2, 2], &PIXELS).unwrap();
    let labels = encode_idx::<u8>(&[3], &LABELS).unwrap();
    for (name, raw) in [
        ("t10k-images-idx3-ubyte.gz", images),
        ("t10k-labels-idx1-ubyte.gz", labels),
    ] {
        let path = data.join(name);
        std::fs::write(&path, gzip(&raw)).unwrap();
        chmod(&path, 0o444);
    }
    chmod(&data, 0o555);
    data
}

/// Runs `unprivileged_child` in a copy of this test binary, as `nobody` when root, with the
/// given mode and cache variables. Panics unless it ran that one test and it passed.
fn run_child(root: &Path, data: &Path, mode: &str, xdg_cache_home: &Path, home: &Path) {
    let binary = root.join("bin").join("tests");
    if !binary.exists() {
        std::fs::create_dir(root.join("bin")).unwrap();
        std::fs::copy(std::env::current_exe().unwrap(), &binary).unwrap();
        chmod(&root.join("bin"), 0o755);
        chmod(&binary, 0o755);
    }
    let mut command = Command::new(&binary);
    command
        .args([
            "unprivileged_child",
            "--exact",
            "--ignored",
            "--test-threads=1",
        ])
        .current_dir(root)
        .env(MODE_VARIABLE, mode)
        .env(DATA_VARIABLE, data)
        .env("XDG_CACHE_HOME", xdg_cache_home)
        .env("HOME", home);
    if running_as_root() {
        command.uid(NOBODY).gid(NOBODY);
    }
    let output = command.output().unwrap();
    let stdout = String::from_utf8_lossy(&output.stdout);
    let stderr = String::from_utf8_lossy(&output.stderr);
    assert!(
        output.status.success() && stdout.contains("test unprivileged_child ... ok"),
        "child ({mode}) failed: {}\n{stdout}\n{stderr}",
        output.status
    );
}

#[test]
fn read_only_gz_folder_as_an_unprivileged_user() {
    let root = tempfile::tempdir().unwrap();
    chmod(root.path(), 0o755);
    let data = read_only_gz_folder(root.path());

    // 1. The user's cache folder is writable: the copies go there, keyed by the source.
    let user_cache = root.path().join("user-cache");
    std::fs::create_dir(&user_cache).unwrap();
    chmod(&user_cache, 0o777);
    let no_home = root.path().join("no-home");
    run_child(root.path(), &data, "user-cache", &user_cache, &no_home);
    let mut cached: Vec<String> = files_under(&user_cache.join("reclaim"))
        .iter()
        .map(|path| path.file_name().unwrap().to_string_lossy().into_owned())
        .collect();
    cached.sort();
    assert_eq!(
        cached,
        [
            "t10k-images-idx3-ubyte",
            "t10k-images-idx3-ubyte.source",
            "t10k-labels-idx1-ubyte",
            "t10k-labels-idx1-ubyte.source"
        ]
    );

    // 2. Neither $XDG_CACHE_HOME nor ~/.cache is writable: decompressed into memory.
    let locked = root.path().join("locked");
    std::fs::create_dir_all(locked.join(".cache")).unwrap();
    chmod(&locked.join(".cache"), 0o555);
    chmod(&locked, 0o555);
    run_child(root.path(), &data, "memory", &locked, &locked);
    assert_eq!(files_under(&locked), Vec::<PathBuf>::new());

    // The shared folder itself was never written.
    assert_eq!(
        files_under(&data),
        [
            data.join("t10k-images-idx3-ubyte.gz"),
            data.join("t10k-labels-idx1-ubyte.gz")
        ]
    );
}

/// The child's side of `read_only_gz_folder_as_an_unprivileged_user`: opens the read-only
/// folder every way and checks the bytes and where they live.
#[test]
#[ignore = "run by read_only_gz_folder_as_an_unprivileged_user in a child process"]
fn unprivileged_child() {
    let mode = std::env::var(MODE_VARIABLE).expect("run by the parent test");
    let data = PathBuf::from(std::env::var_os(DATA_VARIABLE).expect("run by the parent test"));
    let cache_home = PathBuf::from(std::env::var_os("XDG_CACHE_HOME").unwrap());
    if running_as_root() {
        panic!("the child should not run as root");
    }
    let owned = ImageDataset::open_owned(&data, Split::Test).unwrap();
    // SAFETY: nothing modifies the files while the dataset lives.
    let mapped = unsafe { ImageDataset::open_mapped(&data, Split::Test) }.unwrap();
    for dataset in [&owned, &mapped] {
        assert_eq!(dataset.pixels(), &PIXELS);
        assert_eq!(dataset.labels(), &LABELS);
    }
    let labels_gz = data.join("t10k-labels-idx1-ubyte.gz");
    match mode.as_str() {
        "user-cache" => {
            assert_eq!(mapped.images().storage(), StorageKind::Mapped);
            assert!(
                mapped
                    .images()
                    .path()
                    .starts_with(cache_home.join("reclaim"))
            );
            assert!(
                owned
                    .label_array()
                    .path()
                    .starts_with(cache_home.join("reclaim"))
            );
        }
        "memory" => {
            assert_eq!(mapped.images().storage(), StorageKind::Owned);
            let array = IdxArray::open_owned(&labels_gz).unwrap();
            assert_eq!(array.path(), labels_gz);
            assert_eq!(array.as_u8().unwrap(), &LABELS);
        }
        other => panic!("unknown mode {other}"),
    }
}
