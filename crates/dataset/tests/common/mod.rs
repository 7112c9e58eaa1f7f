//! Helpers shared by the integration tests.

#![allow(dead_code)] // Each test binary uses a different part.

use std::path::{Path, PathBuf};

/// Every file under `folder`, recursively, sorted (none if it does not exist).
pub fn files_under(folder: &Path) -> Vec<PathBuf> {
    let mut files = Vec::new();
    for item in std::fs::read_dir(folder).into_iter().flatten().flatten() {
        let path = item.path();
        if path.is_dir() {
            files.extend(files_under(&path));
        } else {
            files.push(path);
        }
    }
    files.sort();
    files
}
