//! Atomic file and folder writes: nothing half-written is ever visible under the final name.

use std::io::Write;
use std::path::{Path, PathBuf};

use crate::TrainError;

/// A name beside `path` for a temporary file or folder, unique to this process and call.
pub(crate) fn temporary_sibling(path: &Path) -> PathBuf {
    use std::sync::atomic::{AtomicU64, Ordering};
    static COUNTER: AtomicU64 = AtomicU64::new(0);
    let name = path
        .file_name()
        .map(|name| name.to_string_lossy().into_owned())
        .unwrap_or_default();
    let unique = COUNTER.fetch_add(1, Ordering::Relaxed);
    path.with_file_name(format!(".{name}.tmp-{}-{unique}", std::process::id()))
}

/// Writes `bytes` to a temporary file beside `path`, syncs it, then renames it over `path`.
pub fn write_file_atomically(path: &Path, bytes: &[u8]) -> Result<(), TrainError> {
    let temporary = temporary_sibling(path);
    let outcome = (|| {
        let mut file = std::fs::File::create(&temporary)?;
        file.write_all(bytes)?;
        file.sync_all()?;
        std::fs::rename(&temporary, path)
    })();
    outcome.map_err(|error| {
        let _ = std::fs::remove_file(&temporary);
        TrainError::io(path, error)
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn replaces_the_file_and_leaves_no_temporary_behind() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("report.md");
        write_file_atomically(&path, b"first").unwrap();
        write_file_atomically(&path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        let names: Vec<_> = std::fs::read_dir(folder.path()).unwrap().collect();
        assert_eq!(names.len(), 1);
    }

    #[test]
    fn a_missing_folder_is_an_error_naming_the_path() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("absent").join("report.md");
        let error = write_file_atomically(&path, b"x").unwrap_err();
        assert!(error.to_string().contains("absent"));
    }
}
