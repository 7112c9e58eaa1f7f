//! Opening input files: only regular files, and never blocking on the open itself.

use std::fmt;
use std::fs::{File, FileType, Metadata};
use std::path::Path;

use crate::error::{DatasetError, Result};

/// What a path that should be a regular file turned out to be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum FileKind {
    /// A folder.
    Directory,
    /// A named pipe (FIFO): reading it would wait for a writer.
    Fifo,
    /// A Unix domain socket.
    Socket,
    /// A character device (`/dev/zero`, a terminal, ...): endless or interactive input.
    CharacterDevice,
    /// A block device (a disk).
    BlockDevice,
    /// Anything else the platform knows.
    Other,
}

impl FileKind {
    /// The kind of a non-regular file type.
    pub(crate) fn of(file_type: FileType) -> Self {
        #[cfg(unix)]
        {
            use std::os::unix::fs::FileTypeExt;
            if file_type.is_fifo() {
                return FileKind::Fifo;
            }
            if file_type.is_socket() {
                return FileKind::Socket;
            }
            if file_type.is_char_device() {
                return FileKind::CharacterDevice;
            }
            if file_type.is_block_device() {
                return FileKind::BlockDevice;
            }
        }
        if file_type.is_dir() {
            FileKind::Directory
        } else {
            FileKind::Other
        }
    }
}

impl fmt::Display for FileKind {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(match self {
            FileKind::Directory => "a folder",
            FileKind::Fifo => "a named pipe (FIFO)",
            FileKind::Socket => "a socket",
            FileKind::CharacterDevice => "a character device",
            FileKind::BlockDevice => "a block device",
            FileKind::Other => "not a regular file",
        })
    }
}

/// Whether something exists at `path` (a regular file or not; symbolic links followed). Used to
/// find dataset files, so that a FIFO under a dataset name is refused by [`open_regular`] with a
/// typed error instead of being reported missing.
pub(crate) fn entry_exists(path: &Path) -> bool {
    std::fs::metadata(path).is_ok()
}

/// Opens `path` for reading if, and only if, it is a regular file.
///
/// The file is opened with `O_NONBLOCK`, so opening a FIFO without a writer returns at once
/// instead of waiting, and the opened handle itself is then checked (`fstat`), so nothing can be
/// swapped in between a check and the open. A FIFO, socket, device or folder is
/// [`DatasetError::NotARegularFile`] naming the path and what it is; an absent file is
/// [`DatasetError::MissingFile`]. `O_NONBLOCK` has no effect on reads of regular files.
pub(crate) fn open_regular(path: &Path) -> Result<(File, Metadata)> {
    let mut options = std::fs::OpenOptions::new();
    options.read(true);
    #[cfg(unix)]
    {
        use std::os::unix::fs::OpenOptionsExt;
        options.custom_flags(libc::O_NONBLOCK);
    }
    let file = match options.open(path) {
        Ok(file) => file,
        Err(error) if error.kind() == std::io::ErrorKind::NotFound => {
            return Err(DatasetError::MissingFile {
                path: path.to_path_buf(),
            });
        }
        Err(error) => {
            // A socket cannot be opened at all (ENXIO): say what it is rather than the errno.
            return Err(match std::fs::metadata(path) {
                Ok(metadata) if !metadata.is_file() => DatasetError::NotARegularFile {
                    path: path.to_path_buf(),
                    kind: FileKind::of(metadata.file_type()),
                },
                _ => DatasetError::io(path, error),
            });
        }
    };
    let metadata = file
        .metadata()
        .map_err(|error| DatasetError::io(path, error))?;
    if !metadata.is_file() {
        return Err(DatasetError::NotARegularFile {
            path: path.to_path_buf(),
            kind: FileKind::of(metadata.file_type()),
        });
    }
    Ok((file, metadata))
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn regular_files_open_and_folders_are_refused() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("file");
        std::fs::write(&path, b"abc").unwrap();
        let (_, metadata) = open_regular(&path).unwrap();
        assert_eq!(metadata.len(), 3);
        assert!(matches!(
            open_regular(folder.path()),
            Err(DatasetError::NotARegularFile { kind: FileKind::Directory, path }) if path == folder.path()
        ));
        assert!(matches!(
            open_regular(&folder.path().join("absent")),
            Err(DatasetError::MissingFile { .. })
        ));
    }
}
