//! Helpers shared by the command-line integration tests: run the `reclaim` binary, read its
//! output, make a scratch folder.

#![allow(dead_code)] // Each test binary uses a different part.

use std::ffi::OsStr;
use std::path::{Path, PathBuf};
use std::process::{Command, Output};

/// Runs the `reclaim` binary built for these tests with `arguments`, and waits for it.
pub fn reclaim<I, S>(arguments: I) -> Output
where
    I: IntoIterator<Item = S>,
    S: AsRef<OsStr>,
{
    Command::new(env!("CARGO_BIN_EXE_reclaim"))
        .args(arguments)
        .output()
        .expect("the reclaim binary runs")
}

/// Output bytes as text, invalid UTF-8 replaced.
pub fn text(bytes: &[u8]) -> String {
    String::from_utf8_lossy(bytes).into_owned()
}

/// A fresh, empty folder under Cargo's scratch folder for integration tests, named after the
/// test binary (`prefix`), this process and `name`.
pub fn scratch(prefix: &str, name: &str) -> PathBuf {
    let folder = Path::new(env!("CARGO_TARGET_TMPDIR"))
        .join(format!("{prefix}-{}-{name}", std::process::id()));
    let _ = std::fs::remove_dir_all(&folder);
    std::fs::create_dir_all(&folder).unwrap();
    folder
}

/// The vendored MNIST (`.gz`), `data/mnist` in the repository.
pub fn vendored_mnist() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR")).join("data/mnist")
}
