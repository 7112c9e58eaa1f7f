//! SHA-256 verification of decompressed dataset files against the catalogue.

use std::io::{BufReader, Read};
use std::path::{Path, PathBuf};

use sha2::{Digest, Sha256};

use crate::element::ElementType;
use crate::error::{DatasetError, Result};
use crate::family::{CatalogueFile, Family, Split};
use crate::gz::{decompress_gz_cached, decompress_validated, is_gz_path};
use crate::header::{IdxHeader, MAXIMUM_HEADER_LENGTH, parse_idx_header};
use crate::image_dataset::locate_split_files;
use crate::open::open_regular;

/// SHA-256 of `bytes`, lowercase hex.
pub fn sha256_hex(bytes: &[u8]) -> String {
    format!("{:x}", Sha256::digest(bytes))
}

/// XXH3-128 of `bytes` (seed 0), as 32 lowercase hexadecimal digits: the digest the `.gz`
/// cache's `.source` record holds and [`crate::FileFingerprint`] reports.
pub(crate) fn xxh3_128_hex(bytes: &[u8]) -> String {
    format!("{:032x}", xxhash_rust::xxh3::xxh3_128(bytes))
}

/// SHA-256 of a file's bytes as stored (no decompression), lowercase hex.
pub fn sha256_of_file(path: &Path) -> Result<String> {
    let (file, _) = open_regular(path)?;
    let mut hasher = Sha256::new();
    // Writing into the hasher cannot fail: any error is the file's.
    std::io::copy(&mut BufReader::with_capacity(1 << 20, file), &mut hasher)
        .map_err(|error| DatasetError::io(path, error))?;
    Ok(format!("{:x}", hasher.finalize()))
}

/// The outcome of checking one file against the catalogue.
#[derive(Clone, Debug, PartialEq, Eq)]
pub struct FileVerification {
    /// The file checked as given (raw or `.gz`).
    pub path: PathBuf,
    /// The decompressed file whose bytes were hashed (the cache file for a `.gz`, or the `.gz`
    /// itself when no cache could be written and its stream was hashed as decompressed).
    pub decompressed_path: PathBuf,
    /// SHA-256 of the decompressed bytes.
    pub sha256: String,
    /// Whether it was compared with a catalogue checksum (`false` where the catalogue has none;
    /// then only the IDX structure and shape were checked).
    pub checksum_compared: bool,
}

/// Reads and checks the header of a complete raw IDX file.
fn read_header(path: &Path) -> Result<IdxHeader> {
    let (file, metadata) = open_regular(path)?;
    let length = metadata.len();
    let mut prefix = Vec::with_capacity(MAXIMUM_HEADER_LENGTH);
    file.take(MAXIMUM_HEADER_LENGTH as u64)
        .read_to_end(&mut prefix)
        .map_err(|error| DatasetError::io(path, error))?;
    parse_idx_header(&prefix, path, length)
}

/// A raw IDX file's path, checked header and SHA-256.
fn hashed_raw_file(path: PathBuf) -> Result<(PathBuf, IdxHeader, String)> {
    let header = read_header(&path)?;
    let sha256 = sha256_of_file(&path)?;
    Ok((path, header, sha256))
}

/// A `.gz` file's path, and the checked header and SHA-256 of its decompressed stream (nothing
/// written anywhere).
fn hashed_gz_stream(gz_path: &Path) -> Result<(PathBuf, IdxHeader, String)> {
    let (file, _) = open_regular(gz_path)?;
    let mut hasher = Sha256::new();
    let header = decompress_validated(file, &mut hasher, gz_path, gz_path)?;
    Ok((
        gz_path.to_path_buf(),
        header,
        format!("{:x}", hasher.finalize()),
    ))
}

/// Checks a header against a catalogue entry's type and shape.
pub(crate) fn check_catalogue_shape(
    header: &IdxHeader,
    path: &Path,
    entry: &CatalogueFile,
) -> Result<()> {
    if header.element_type() != ElementType::U8 {
        return Err(DatasetError::WrongElementType {
            path: path.to_path_buf(),
            expected: ElementType::U8,
            found: header.element_type(),
        });
    }
    if header.dimensions() != entry.shape {
        return Err(DatasetError::UnexpectedShape {
            path: path.to_path_buf(),
            expected: entry.shape.to_vec(),
            found: header.dimensions().to_vec(),
        });
    }
    Ok(())
}

/// Checks one file (raw, or `.gz` through the decompression cache) against a catalogue entry:
/// a valid IDX file of the listed shape whose decompressed bytes have the listed SHA-256.
/// [`DatasetError::ChecksumMismatch`] (naming `path`) if the digest differs.
pub fn verify_file(path: &Path, entry: &CatalogueFile) -> Result<FileVerification> {
    let (decompressed_path, header, sha256) = if is_gz_path(path) {
        match decompress_gz_cached(path) {
            Ok(cache_path) => hashed_raw_file(cache_path)?,
            // No cache location is writable: hash the decompressed stream as it goes by.
            Err(DatasetError::CacheUnavailable { .. }) => hashed_gz_stream(path)?,
            Err(error) => return Err(error),
        }
    } else {
        hashed_raw_file(path.to_path_buf())?
    };
    check_catalogue_shape(&header, path, entry)?;
    if let Some(expected) = entry.sha256
        && sha256 != expected
    {
        return Err(DatasetError::ChecksumMismatch {
            path: path.to_path_buf(),
            expected: expected.to_owned(),
            actual: sha256,
        });
    }
    Ok(FileVerification {
        path: path.to_path_buf(),
        decompressed_path,
        sha256,
        checksum_compared: entry.sha256.is_some(),
    })
}

/// Checks the four files of a family in `folder` (see [`verify_file`]), train then test, images
/// then labels.
pub fn verify_dataset_folder(folder: &Path, family: Family) -> Result<Vec<FileVerification>> {
    let mut verifications = Vec::with_capacity(4);
    for split in Split::ALL {
        let (images_path, labels_path) = locate_split_files(folder, split)?;
        let files = family.files(split);
        verifications.push(verify_file(&images_path, &files.images)?);
        verifications.push(verify_file(&labels_path, &files.labels)?);
    }
    Ok(verifications)
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn sha256_of_known_inputs() {
        assert_eq!(
            sha256_hex(b""),
            "e3b0c44298fc1c149afbf4c8996fb92427ae41e4649b934ca495991b7852b855"
        );
        assert_eq!(
            sha256_hex(b"abc"),
            "ba7816bf8f01cfea414140de5dae2223b00361a396177a9cb410ff61f20015ad"
        );
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("abc");
        std::fs::write(&path, b"abc").unwrap();
        assert_eq!(sha256_of_file(&path).unwrap(), sha256_hex(b"abc"));
    }

    #[test]
    fn wrong_shape_and_wrong_digest_are_reported() {
        let folder = tempfile::tempdir().unwrap();
        let path = folder.path().join("t10k-labels-idx1-ubyte");
        let entry = Family::Mnist.files(Split::Test).labels;
        crate::idx::write_idx::<u8>(&path, &[3], &[1, 2, 3]).unwrap();
        assert!(matches!(
            verify_file(&path, &entry),
            Err(DatasetError::UnexpectedShape { .. })
        ));
        crate::idx::write_idx::<u8>(&path, &[10_000], &[0; 10_000]).unwrap();
        match verify_file(&path, &entry) {
            Err(DatasetError::ChecksumMismatch {
                path: reported,
                expected,
                actual,
            }) => {
                assert_eq!(reported, path);
                assert_eq!(Some(expected.as_str()), entry.sha256);
                assert_eq!(actual, sha256_hex(&std::fs::read(&path).unwrap()));
            }
            other => panic!("expected ChecksumMismatch, got {other:?}"),
        }
        // Without a catalogue checksum only the structure is checked.
        let unchecked = Family::Kmnist.files(Split::Test).labels;
        let verification = verify_file(&path, &unchecked).unwrap();
        assert!(!verification.checksum_compared);
    }
}
