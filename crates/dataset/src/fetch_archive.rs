//! Downloading a CIFAR archive (cargo feature `fetch`): MD5-checked, then unpacked atomically.

use std::path::{Path, PathBuf};

use crate::archive::{ExtractionLimits, extract_cifar_archive, verify_cifar_archive};
use crate::atomic::AtomicFile;
use crate::cifar_dataset::verify_cifar_folder;
use crate::cifar_variant::CifarArchive;
use crate::error::{DatasetError, MirrorAttempt, Result};
use crate::family::CatalogueFile;
use crate::fetch_file::{
    FetchOptions, FetchOrigin, Mirror, open_source, progress_bar, receive,
    remove_stale_partial_files,
};

/// A CIFAR dataset made available by [`fetch_cifar`].
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FetchedCifar {
    /// The folder holding the record files (`<folder>/cifar-10-batches-bin`, or the folder
    /// itself when the files were already there).
    pub files_folder: PathBuf,
    /// The archive they were unpacked from (kept in the folder); `None` when the files were
    /// already there and valid.
    pub archive_path: Option<PathBuf>,
    /// Where the archive came from ([`FetchOrigin::AlreadyPresent`] for files or an archive
    /// already in the folder).
    pub origin: FetchOrigin,
}

/// The archive as a catalogue file, so that the MNIST fetch's mirror code serves it: a folder
/// mirror holds it under its name, an HTTP mirror serves it at `<base><name>`.
fn archive_entry(archive: &CifarArchive) -> CatalogueFile {
    CatalogueFile {
        file_name: archive.file_name,
        compressed_name: archive.file_name,
        sha256: None,
        shape: &[],
    }
}

/// The folder holding every record file of both splits, each valid; `None` if any is missing
/// or invalid.
fn valid_files_folder(folder: &Path, archive: &CifarArchive) -> Option<PathBuf> {
    let verified = verify_cifar_folder(folder, archive.variant).ok()?;
    verified.first()?.0.parent().map(Path::to_path_buf)
}

/// Downloads the archive from one mirror into `folder`, checks its MD5, renames it into place.
fn download_archive(
    mirror: &Mirror,
    archive: &CifarArchive,
    folder: &Path,
    options: &FetchOptions,
) -> Result<PathBuf> {
    let entry = archive_entry(archive);
    let source = open_source(mirror, &entry, options)?;
    let destination_path = folder.join(archive.file_name);
    let mut download = AtomicFile::create(&destination_path)?;
    let download_path = download.temporary_path().to_path_buf();
    let bar = progress_bar(options, None, archive.file_name);
    if let Err(error) = receive(&source, download.file(), &download_path, options, &bar) {
        bar.abandon();
        return Err(error);
    }
    bar.finish_and_clear();
    verify_cifar_archive(&download_path, archive).map_err(|error| match error {
        DatasetError::Md5Mismatch {
            expected, actual, ..
        } => DatasetError::Md5Mismatch {
            path: destination_path.clone(),
            expected,
            actual,
        },
        other => other,
    })?;
    download.commit()
}

/// Makes a CIFAR variant's record files available under `folder` (e.g. `data/cifar-10`).
///
/// If the folder already holds every record file of both splits, valid (directly or in
/// `archive.folder_in_archive`: see [`crate::cifar::locate_cifar_files`]), nothing is done. Else, if
/// it holds the archive and its MD5 is `archive.md5`, the archive is unpacked (see
/// [`extract_cifar_archive`]). Else each mirror of `options` is tried in order: the archive is
/// downloaded into a temporary file in `folder` (under the limits and the cancellation flag of
/// `options`, as [`crate::fetch::fetch_file`] does), its MD5 checked ([`DatasetError::Md5Mismatch`]),
/// renamed into place, then unpacked (an archive that cannot be unpacked is removed again). A
/// failure leaves no file behind and moves on to the next
/// mirror; when all fail, [`DatasetError::AllMirrorsFailed`] lists every attempt; an
/// interruption stops at once with [`DatasetError::Interrupted`].
///
/// `archive` is usually `variant.archive()`; its `md5` may be replaced for a mirror serving a
/// repacked archive.
pub fn fetch_cifar(
    archive: &CifarArchive,
    folder: &Path,
    options: &FetchOptions,
) -> Result<FetchedCifar> {
    if let Some(files_folder) = valid_files_folder(folder, archive) {
        return Ok(FetchedCifar {
            files_folder,
            archive_path: None,
            origin: FetchOrigin::AlreadyPresent,
        });
    }
    let limits = ExtractionLimits::default();
    let present = folder.join(archive.file_name);
    if present.is_file() && verify_cifar_archive(&present, archive).is_ok() {
        let files_folder = extract_cifar_archive(&present, archive, folder, &limits)?;
        return Ok(FetchedCifar {
            files_folder,
            archive_path: Some(present),
            origin: FetchOrigin::AlreadyPresent,
        });
    }
    remove_stale_partial_files(folder, &archive_entry(archive), &options.limits);
    let mut attempts = Vec::new();
    for mirror in &options.mirrors {
        if options
            .cancellation
            .as_ref()
            .is_some_and(|flag| flag.load(std::sync::atomic::Ordering::Relaxed))
        {
            return Err(DatasetError::Interrupted {
                url: mirror.describe(),
            });
        }
        let attempt = download_archive(mirror, archive, folder, options).and_then(|path| {
            match extract_cifar_archive(&path, archive, folder, &limits) {
                Ok(files_folder) => Ok(FetchedCifar {
                    files_folder,
                    archive_path: Some(path),
                    origin: FetchOrigin::Mirror(mirror.describe()),
                }),
                Err(error) => {
                    // An archive that cannot be unpacked is not kept (it would be tried again
                    // first, and fail, on every later fetch).
                    let _ = std::fs::remove_file(&path);
                    Err(error)
                }
            }
        });
        match attempt {
            Ok(fetched) => return Ok(fetched),
            Err(error @ DatasetError::Interrupted { .. }) => return Err(error),
            Err(error) => attempts.push(MirrorAttempt {
                mirror: mirror.describe(),
                error,
            }),
        }
    }
    Err(DatasetError::AllMirrorsFailed {
        file_name: archive.file_name.to_owned(),
        attempts,
    })
}
