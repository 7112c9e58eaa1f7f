//! Writing files atomically: a temporary file in the destination's folder, renamed when complete.

use std::fs::File;
use std::io::Write;
use std::path::{Path, PathBuf};

use tempfile::NamedTempFile;

use crate::error::{DatasetError, Result};

/// A file being written: a uniquely named temporary file beside `destination`, renamed over it by
/// [`AtomicFile::commit`]. Dropped without committing, the temporary file is deleted, so a failed
/// or interrupted write never leaves a partial file under the destination's name.
pub(crate) struct AtomicFile {
    temporary: NamedTempFile,
    destination: PathBuf,
}

impl AtomicFile {
    /// Creates the temporary file (and the destination's folder if missing).
    pub(crate) fn create(destination: &Path) -> Result<Self> {
        let folder = match destination.parent() {
            Some(parent) if !parent.as_os_str().is_empty() => parent.to_path_buf(),
            _ => PathBuf::from("."),
        };
        std::fs::create_dir_all(&folder).map_err(|error| DatasetError::io(&folder, error))?;
        let file_name = destination
            .file_name()
            .map(|name| name.to_string_lossy().into_owned())
            .unwrap_or_default();
        let prefix = format!(".{file_name}.");
        let mut builder = tempfile::Builder::new();
        builder.prefix(&prefix).suffix(".partial");
        #[cfg(unix)]
        {
            use std::os::unix::fs::PermissionsExt;
            builder.permissions(std::fs::Permissions::from_mode(0o644));
        }
        let temporary = builder
            .tempfile_in(&folder)
            .map_err(|error| DatasetError::io(&folder, error))?;
        Ok(AtomicFile {
            temporary,
            destination: destination.to_path_buf(),
        })
    }

    /// The temporary file's path (for error messages).
    pub(crate) fn temporary_path(&self) -> &Path {
        self.temporary.path()
    }

    /// The file to write to.
    pub(crate) fn file(&mut self) -> &mut File {
        self.temporary.as_file_mut()
    }

    /// Flushes the data to disk and renames the temporary file to the destination, replacing any
    /// file there.
    pub(crate) fn commit(mut self) -> Result<PathBuf> {
        let temporary_path = self.temporary.path().to_path_buf();
        self.temporary
            .as_file_mut()
            .flush()
            .and_then(|()| self.temporary.as_file().sync_all())
            .map_err(|error| DatasetError::io(&temporary_path, error))?;
        self.temporary
            .persist(&self.destination)
            .map_err(|error| DatasetError::io(&self.destination, error.error))?;
        Ok(self.destination)
    }
}

/// Writes `bytes` to `destination` atomically: into a temporary file beside it (its folder is
/// created if missing), flushed to disk, then renamed over it. A failed write leaves no file
/// under either name. [`DatasetError::Io`] names the file at fault.
///
/// ```
/// let folder = tempfile::tempdir()?;
/// let path = folder.path().join("report.md");
/// reclaim_dataset::write_file_atomically(&path, b"first")?;
/// reclaim_dataset::write_file_atomically(&path, b"second")?;
/// assert_eq!(std::fs::read(&path)?, b"second");
/// # Ok::<(), Box<dyn std::error::Error>>(())
/// ```
pub fn write_file_atomically(destination: impl AsRef<Path>, bytes: &[u8]) -> Result<()> {
    let destination = destination.as_ref();
    let mut file = AtomicFile::create(destination)?;
    let temporary_path = file.temporary_path().to_path_buf();
    file.file()
        .write_all(bytes)
        .map_err(|error| DatasetError::io(temporary_path, error))?;
    file.commit().map(drop)
}

#[cfg(test)]
mod tests {
    use super::*;

    fn entries(folder: &Path) -> Vec<String> {
        let mut names: Vec<String> = std::fs::read_dir(folder)
            .unwrap()
            .map(|entry| entry.unwrap().file_name().to_string_lossy().into_owned())
            .collect();
        names.sort();
        names
    }

    #[test]
    fn commit_renames_and_drop_leaves_nothing() {
        let folder = tempfile::tempdir().unwrap();
        let destination = folder.path().join("out.bin");

        let mut abandoned = AtomicFile::create(&destination).unwrap();
        abandoned.file().write_all(b"half").unwrap();
        assert_eq!(
            entries(folder.path()).len(),
            1,
            "temporary file exists while writing"
        );
        assert!(!destination.exists());
        drop(abandoned);
        assert!(
            entries(folder.path()).is_empty(),
            "nothing left after an abandoned write"
        );

        let mut written = AtomicFile::create(&destination).unwrap();
        written.file().write_all(b"whole").unwrap();
        written.commit().unwrap();
        assert_eq!(entries(folder.path()), ["out.bin"]);
        assert_eq!(std::fs::read(&destination).unwrap(), b"whole");
    }

    #[test]
    fn write_file_atomically_replaces_the_file_and_leaves_no_temporary_behind() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("report.md");
        write_file_atomically(&path, b"first").unwrap();
        write_file_atomically(&path, b"second").unwrap();
        assert_eq!(std::fs::read(&path).unwrap(), b"second");
        assert_eq!(entries(folder.path()), ["report.md"]);
    }

    #[test]
    fn an_unwritable_destination_is_an_error_naming_the_path() {
        let folder = tempfile::tempdir().unwrap();
        // A file where the destination's folder should be: the folder cannot be created.
        std::fs::write(folder.path().join("absent"), b"a file").unwrap();
        let path = folder.path().join("absent").join("report.md");
        let error = write_file_atomically(&path, b"x").unwrap_err();
        assert!(matches!(&error, DatasetError::Io { .. }), "{error:?}");
        assert!(error.to_string().contains("absent"), "{error}");
        assert_eq!(entries(folder.path()), ["absent"]);
    }
}
