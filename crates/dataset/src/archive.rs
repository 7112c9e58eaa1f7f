//! The CIFAR archives: their MD5, and unpacking a `.tar.gz` safely and atomically.

use std::fs::File;
use std::io::{BufReader, Read, Write};
use std::path::{Component, Path, PathBuf};

use flate2::read::GzDecoder;
use md5::{Digest, Md5};

use crate::cifar_dataset::verify_cifar_file;
use crate::cifar_variant::{CifarArchive, CifarVariant};
use crate::error::{ArchiveEntryProblem, DatasetError, Result};
use crate::family::Split;
use crate::open::open_regular;

/// Limits on what [`extract_cifar_archive`] writes, so that a hostile or broken archive cannot
/// fill the disk: each is [`DatasetError::UnsafeArchiveEntry`] naming the entry.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct ExtractionLimits {
    /// The largest entry, in bytes. Default 256 MiB (CIFAR-100's `train.bin` is 153.7 MB).
    pub maximum_entry_bytes: u64,
    /// The most bytes all entries may add up to (skipped ones included). Default 1 GiB (the
    /// archives hold about 185 MB).
    pub maximum_total_bytes: u64,
    /// The most entries. Default 64 (the archives hold at most 9).
    pub maximum_entries: usize,
}

impl Default for ExtractionLimits {
    fn default() -> Self {
        ExtractionLimits {
            maximum_entry_bytes: 256 << 20,
            maximum_total_bytes: 1 << 30,
            maximum_entries: 64,
        }
    }
}

/// MD5 of `bytes`, lowercase hex (only to check the archives against their published digests).
pub fn md5_hex(bytes: &[u8]) -> String {
    format!("{:x}", Md5::digest(bytes))
}

/// MD5 of a file's bytes, lowercase hex. Only regular files are opened.
pub fn md5_of_file(path: &Path) -> Result<String> {
    let (file, _) = open_regular(path)?;
    let mut hasher = Md5::new();
    std::io::copy(&mut BufReader::with_capacity(1 << 20, file), &mut hasher)
        .map_err(|error| DatasetError::io(path, error))?;
    Ok(format!("{:x}", hasher.finalize()))
}

/// Checks the archive at `path` against `archive.md5`: its MD5, or
/// [`DatasetError::Md5Mismatch`] naming it.
pub fn verify_cifar_archive(path: &Path, archive: &CifarArchive) -> Result<String> {
    let actual = md5_of_file(path)?;
    if !actual.eq_ignore_ascii_case(&archive.md5) {
        return Err(DatasetError::Md5Mismatch {
            path: path.to_path_buf(),
            expected: archive.md5.clone(),
            actual,
        });
    }
    Ok(actual)
}

/// The record files and the extra files of a variant: what extraction keeps.
fn wanted_file_names(variant: CifarVariant) -> impl Iterator<Item = &'static str> {
    Split::ALL
        .into_iter()
        .flat_map(move |split| variant.file_names(split).iter().copied())
        .chain(variant.extra_file_names().iter().copied())
}

/// An entry's path without `.` components; refused if absolute or if it has a `..`.
fn checked_entry_path(archive_path: &Path, entry_text: &str) -> Result<Vec<String>, DatasetError> {
    let refuse = |problem| DatasetError::UnsafeArchiveEntry {
        archive: archive_path.to_path_buf(),
        entry: entry_text.to_owned(),
        problem,
    };
    let mut parts = Vec::new();
    for component in Path::new(entry_text).components() {
        match component {
            Component::Prefix(_) | Component::RootDir => {
                return Err(refuse(ArchiveEntryProblem::AbsolutePath));
            }
            Component::ParentDir => return Err(refuse(ArchiveEntryProblem::ParentComponent)),
            Component::CurDir => {}
            Component::Normal(part) => parts.push(part.to_string_lossy().into_owned()),
        }
    }
    Ok(parts)
}

/// Whether an entry of this type holds a file's bytes.
fn is_regular_file(entry_type: tar::EntryType) -> bool {
    matches!(
        entry_type,
        tar::EntryType::Regular | tar::EntryType::Continuous
    )
}

/// Whether an entry of this type may be extracted (regular files) or skipped (folders, pax
/// global headers); links and special files are refused.
fn check_entry_type(entry_type: tar::EntryType) -> std::result::Result<(), ArchiveEntryProblem> {
    match entry_type {
        tar::EntryType::Regular
        | tar::EntryType::Continuous
        | tar::EntryType::Directory
        | tar::EntryType::XGlobalHeader => Ok(()),
        tar::EntryType::Symlink | tar::EntryType::Link => Err(ArchiveEntryProblem::Link),
        _ => Err(ArchiveEntryProblem::SpecialFile),
    }
}

/// Writes one entry's bytes into `destination` (a new file), at most `size` bytes.
fn write_entry(entry: &mut impl Read, size: u64, destination: &Path, archive: &Path) -> Result<()> {
    let mut file =
        File::create(destination).map_err(|error| DatasetError::io(destination, error))?;
    let copied =
        std::io::copy(&mut entry.take(size), &mut file).map_err(|error| DatasetError::Archive {
            path: archive.to_path_buf(),
            source: error,
        })?;
    if copied != size {
        return Err(DatasetError::Archive {
            path: archive.to_path_buf(),
            source: std::io::Error::new(
                std::io::ErrorKind::UnexpectedEof,
                format!("an entry of {size} bytes ended after {copied}"),
            ),
        });
    }
    file.flush()
        .and_then(|()| file.sync_all())
        .map_err(|error| DatasetError::io(destination, error))
}

/// Reads the archive and writes the wanted files of `archive.folder_in_archive` into `staged`.
fn unpack_into(
    archive_path: &Path,
    archive: &CifarArchive,
    staged: &Path,
    limits: &ExtractionLimits,
) -> Result<()> {
    let archive_error = |source| DatasetError::Archive {
        path: archive_path.to_path_buf(),
        source,
    };
    let (file, _) = open_regular(archive_path)?;
    let mut reader = tar::Archive::new(GzDecoder::new(BufReader::with_capacity(1 << 20, file)));
    let wanted: Vec<&str> = wanted_file_names(archive.variant).collect();
    let mut total_bytes = 0u64;
    for (count, entry) in reader.entries().map_err(archive_error)?.enumerate() {
        let mut entry = entry.map_err(archive_error)?;
        let entry_text = String::from_utf8_lossy(&entry.path_bytes()).into_owned();
        let refuse = |problem| DatasetError::UnsafeArchiveEntry {
            archive: archive_path.to_path_buf(),
            entry: entry_text.clone(),
            problem,
        };
        if count >= limits.maximum_entries {
            return Err(refuse(ArchiveEntryProblem::TooManyEntries {
                limit: limits.maximum_entries,
            }));
        }
        let parts = checked_entry_path(archive_path, &entry_text)?;
        check_entry_type(entry.header().entry_type()).map_err(refuse)?;
        let size = entry.size();
        if size > limits.maximum_entry_bytes {
            return Err(refuse(ArchiveEntryProblem::TooLarge {
                limit: limits.maximum_entry_bytes,
            }));
        }
        total_bytes = total_bytes.saturating_add(size);
        if total_bytes > limits.maximum_total_bytes {
            return Err(refuse(ArchiveEntryProblem::TotalTooLarge {
                limit: limits.maximum_total_bytes,
            }));
        }
        let is_wanted = is_regular_file(entry.header().entry_type())
            && parts.len() == 2
            && parts[0] == archive.folder_in_archive
            && wanted.contains(&parts[1].as_str());
        if is_wanted {
            write_entry(&mut entry, size, &staged.join(&parts[1]), archive_path)?;
        }
    }
    Ok(())
}

/// Checks the staged record files, naming a bad one by its place in the archive.
fn validate_staged(archive_path: &Path, archive: &CifarArchive, staged: &Path) -> Result<()> {
    for split in Split::ALL {
        for name in archive.variant.file_names(split) {
            let member = format!("{}/{name}", archive.folder_in_archive);
            let path = staged.join(name);
            if !path.is_file() {
                return Err(DatasetError::ArchiveIncomplete {
                    archive: archive_path.to_path_buf(),
                    entry: member,
                });
            }
            verify_cifar_file(&path, archive.variant)
                .map_err(|error| named_in_archive(error, archive_path.join(&member)))?;
        }
    }
    Ok(())
}

/// A record file's error, re-aimed at `member` (`<archive>/<folder>/<file>`) instead of the
/// staging folder, which is gone by the time the error is read.
fn named_in_archive(error: DatasetError, member: PathBuf) -> DatasetError {
    match error {
        DatasetError::NotWholeRecords {
            length,
            record_length,
            variant,
            ..
        } => DatasetError::NotWholeRecords {
            path: member,
            length,
            record_length,
            variant,
        },
        DatasetError::RecordLabelOutOfRange {
            record,
            kind,
            label,
            classes,
            ..
        } => DatasetError::RecordLabelOutOfRange {
            path: member,
            record,
            kind,
            label,
            classes,
        },
        other => other,
    }
}

/// Moves `staged` to `destination`, replacing a folder there (moved into `trash` first, and
/// moved back if the second rename fails).
fn put_in_place(staged: &Path, destination: &Path, trash: &Path) -> Result<()> {
    let had_previous = destination.symlink_metadata().is_ok();
    if had_previous {
        std::fs::rename(destination, trash)
            .map_err(|error| DatasetError::io(destination, error))?;
    }
    if let Err(error) = std::fs::rename(staged, destination) {
        if had_previous {
            let _ = std::fs::rename(trash, destination);
        }
        return Err(DatasetError::io(destination, error));
    }
    Ok(())
}

/// How old a staging folder must be before it is taken for one left by a killed extraction
/// (an extraction of the real archives takes seconds).
const STALE_STAGING_AGE: std::time::Duration = std::time::Duration::from_secs(3600);

/// Removes the staging folders (`.<folder_in_archive>.<random>.partial`) that an extraction
/// killed before it could clean up left in `folder`, once they are older than an hour.
fn remove_stale_staging_folders(folder: &Path, archive: &CifarArchive) {
    let prefix = format!(".{}.", archive.folder_in_archive);
    let Ok(items) = std::fs::read_dir(folder) else {
        return;
    };
    for item in items.flatten() {
        let name = item.file_name().to_string_lossy().into_owned();
        let stale = item
            .metadata()
            .and_then(|metadata| metadata.modified())
            .is_ok_and(|modified| modified.elapsed().unwrap_or_default() > STALE_STAGING_AGE);
        if name.starts_with(&prefix) && name.ends_with(".partial") && stale {
            let _ = std::fs::remove_dir_all(item.path());
        }
    }
}

/// Unpacks a CIFAR archive (`.tar.gz`) into `folder`, atomically: the files of
/// `archive.folder_in_archive` (the record files, the class names, the readme; nothing else)
/// are written into a temporary folder beside the destination, checked (every record file
/// present, a whole number of records, labels in range), and only then renamed to
/// `folder/<folder_in_archive>` (replacing what was there). Returns that folder.
///
/// An entry with an absolute path or a `..` component, a link, a device or FIFO, or an entry
/// over the [`ExtractionLimits`] is [`DatasetError::UnsafeArchiveEntry`], before anything of it
/// is written; a missing record file is [`DatasetError::ArchiveIncomplete`]; an unreadable
/// archive [`DatasetError::Archive`]. On any error nothing is left in `folder` and what was
/// there is untouched. Staging folders left by a killed extraction are removed once they are an
/// hour old. The MD5 is not checked here (see [`verify_cifar_archive`]).
pub fn extract_cifar_archive(
    archive_path: &Path,
    archive: &CifarArchive,
    folder: &Path,
    limits: &ExtractionLimits,
) -> Result<PathBuf> {
    std::fs::create_dir_all(folder).map_err(|error| DatasetError::io(folder, error))?;
    remove_stale_staging_folders(folder, archive);
    let temporary = tempfile::Builder::new()
        .prefix(&format!(".{}.", archive.folder_in_archive))
        .suffix(".partial")
        .tempdir_in(folder)
        .map_err(|error| DatasetError::io(folder, error))?;
    let staged = temporary.path().join(archive.folder_in_archive);
    std::fs::create_dir(&staged).map_err(|error| DatasetError::io(&staged, error))?;
    unpack_into(archive_path, archive, &staged, limits)?;
    validate_staged(archive_path, archive, &staged)?;
    let destination = folder.join(archive.folder_in_archive);
    put_in_place(&staged, &destination, &temporary.path().join("previous"))?;
    temporary
        .close()
        .map_err(|error| DatasetError::io(folder, error))?;
    Ok(destination)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn md5_of_known_inputs() {
        assert_eq!(md5_hex(b""), "d41d8cd98f00b204e9800998ecf8427e");
        assert_eq!(md5_hex(b"abc"), "900150983cd24fb0d6963f7d28e17f72");
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("abc");
        std::fs::write(&path, b"abc").unwrap();
        assert_eq!(md5_of_file(&path).unwrap(), md5_hex(b"abc"));
        let archive = CifarVariant::Cifar10.archive();
        match verify_cifar_archive(&path, &archive) {
            Err(DatasetError::Md5Mismatch {
                path: reported,
                expected,
                actual,
            }) => {
                assert_eq!(reported, path);
                assert_eq!(expected, "c32a1d4ab5d03f1284b67883e8d87530");
                assert_eq!(actual, md5_hex(b"abc"));
            }
            other => panic!("expected Md5Mismatch, got {other:?}"),
        }
    }

    #[test]
    fn entry_paths_are_checked() {
        let archive = Path::new("a.tar.gz");
        assert_eq!(
            checked_entry_path(archive, "./cifar-10-batches-bin/./test_batch.bin").unwrap(),
            ["cifar-10-batches-bin", "test_batch.bin"]
        );
        for (entry, expected) in [
            ("/etc/passwd", ArchiveEntryProblem::AbsolutePath),
            (
                "cifar-10-batches-bin/../../evil",
                ArchiveEntryProblem::ParentComponent,
            ),
            ("../evil", ArchiveEntryProblem::ParentComponent),
        ] {
            match checked_entry_path(archive, entry) {
                Err(DatasetError::UnsafeArchiveEntry {
                    entry: reported,
                    problem,
                    ..
                }) => {
                    assert_eq!(reported, entry);
                    assert_eq!(problem, expected);
                }
                other => panic!("{entry}: expected UnsafeArchiveEntry, got {other:?}"),
            }
        }
        assert_eq!(
            check_entry_type(tar::EntryType::Symlink),
            Err(ArchiveEntryProblem::Link)
        );
        assert_eq!(
            check_entry_type(tar::EntryType::Fifo),
            Err(ArchiveEntryProblem::SpecialFile)
        );
        assert_eq!(check_entry_type(tar::EntryType::Regular), Ok(()));
    }
}
