//! [`FileFingerprint`] and [`DatasetFingerprint`]: what a run's data was, for resuming it.

use crate::checksum::xxh3_128_hex;

/// One IDX file's identity: its size and the XXH3-128 of its whole decompressed content (header
/// and data, as the array holds it in its map or buffer).
///
/// XXH3 is not a cryptographic hash: this tells whether a file changed, not whether someone
/// forged it (the catalogue's SHA-256s are for that, see [`crate::catalogue::verify_file`]).
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct FileFingerprint {
    /// The length in bytes (header and data).
    pub bytes: u64,
    /// XXH3-128 of those bytes: 32 lowercase hexadecimal digits (as in the `.gz` cache's
    /// `.source` record).
    pub xxh3_128: String,
}

impl FileFingerprint {
    /// The fingerprint of `bytes`, hashed in place.
    pub(crate) fn of_bytes(bytes: &[u8]) -> Self {
        FileFingerprint {
            bytes: bytes.len() as u64,
            xxh3_128: xxh3_128_hex(bytes),
        }
    }
}

/// The identity of the four files a training run reads (see [`crate::DatasetSplits::fingerprint`]):
/// a resumed run can compare it with the one its checkpoint recorded and refuse other data.
#[derive(Clone, Debug, PartialEq, Eq)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
pub struct DatasetFingerprint {
    /// The training images.
    pub train_images: FileFingerprint,
    /// The training labels.
    pub train_labels: FileFingerprint,
    /// The test images.
    pub test_images: FileFingerprint,
    /// The test labels.
    pub test_labels: FileFingerprint,
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn fingerprints_are_the_length_and_the_lowercase_xxh3_128() {
        let fingerprint = FileFingerprint::of_bytes(b"");
        assert_eq!(fingerprint.bytes, 0);
        // XXH3-128 of the empty input, seed 0.
        assert_eq!(fingerprint.xxh3_128, "99aa06d3014798d86001c324468d497f");
        let fingerprint = FileFingerprint::of_bytes(b"abc");
        assert_eq!(fingerprint.bytes, 3);
        assert_eq!(fingerprint.xxh3_128.len(), 32);
        assert!(
            fingerprint
                .xxh3_128
                .chars()
                .all(|digit| matches!(digit, '0'..='9' | 'a'..='f'))
        );
        assert_ne!(fingerprint, FileFingerprint::of_bytes(b"abd"));
    }
}
