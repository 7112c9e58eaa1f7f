//! The pack format: a folder of photos decoded once into one file of fixed-size `u8` C x H x W
//! records, their labels and a JSON manifest, read in place (mapped) or owned.
//!
//! Layout (all integers little-endian):
//!
//! | offset | bytes | field |
//! |---|---|---|
//! | 0 | 8 | magic `RCLMPACK` |
//! | 8 | 4 | format version ([`PACK_FORMAT_VERSION`]) |
//! | 12 | 4 | channels (1 or 3) |
//! | 16 | 4 | height |
//! | 20 | 4 | width |
//! | 24 | 8 | training records |
//! | 32 | 8 | test records |
//! | 40 | 4 | classes |
//! | 44 | 4 | zero |
//! | 48 | 8 | labels offset |
//! | 56 | 8 | manifest offset |
//! | 64 | 8 | manifest length |
//! | 72 | 16 | XXH3-128 of every byte after the header |
//! | 88 | 40 | zeros |
//! | 128 | records x C x H x W | the records: the training split's, then the test split's |
//! | labels offset | records x 4 | one `u32` label per record |
//! | manifest offset | manifest length | the [`PackManifest`] as JSON |
//!
//! The file ends exactly at the end of the manifest. Every field is checked on open, the
//! checksum included, so a pack truncated, extended or altered after it was written is refused
//! with a [`PackProblem`], never read.

use std::fmt;

use serde::{Deserialize, Serialize};
use xxhash_rust::xxh3::Xxh3;

use crate::family::Split;

/// The first eight bytes of every pack.
pub const PACK_MAGIC: [u8; 8] = *b"RCLMPACK";

/// The format version this crate writes and reads.
pub const PACK_FORMAT_VERSION: u32 = 1;

/// The header's length: the first record starts here.
pub const PACK_HEADER_BYTES: usize = 128;

/// The largest height or width a pack holds (and `reclaim pack --image-size` accepts).
pub const MAXIMUM_PACK_IMAGE_SIDE: u32 = 4096;

/// The fixed-size header of a pack, parsed and checked against the file's length by
/// [`parse_pack_header`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub struct PackHeader {
    /// The images' shape.
    pub image: PackImageShape,
    /// Records of the training split (the first ones).
    pub train_records: u64,
    /// Records of the test split (after the training split's).
    pub test_records: u64,
    /// The number of classes; every label is below it.
    pub classes: u32,
    /// Where the labels start.
    pub labels_offset: u64,
    /// Where the manifest starts.
    pub manifest_offset: u64,
    /// The manifest's length in bytes.
    pub manifest_bytes: u64,
    /// XXH3-128 of every byte after the header.
    pub content_xxh3_128: u128,
}

/// The shape of every image of a pack: channels (1 grey, 3 RGB), height and width.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct PackImageShape {
    /// 1 (grey) or 3 (red, green, blue planes).
    pub channels: u32,
    /// Rows.
    pub height: u32,
    /// Columns.
    pub width: u32,
}

impl PackImageShape {
    /// The bytes of one record, `channels * height * width` (at most 3 x 4096 x 4096, so it
    /// fits in any `usize` of 64 bits).
    pub fn record_bytes(self) -> u64 {
        u64::from(self.channels) * u64::from(self.height) * u64::from(self.width)
    }
}

impl fmt::Display for PackImageShape {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(
            formatter,
            "{}x{}x{}",
            self.channels, self.height, self.width
        )
    }
}

/// What is wrong with a pack file (inside [`crate::DatasetError::InvalidPack`]).
#[derive(Clone, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum PackProblem {
    /// Shorter than the header.
    #[error("{length} bytes, shorter than the {PACK_HEADER_BYTES}-byte pack header")]
    TooShort {
        /// The file's length.
        length: u64,
    },
    /// The first eight bytes are not `RCLMPACK`.
    #[error("not a pack (the first eight bytes are not RCLMPACK)")]
    BadMagic,
    /// A format version this crate does not read.
    #[error("pack format version {found}, this program reads version {PACK_FORMAT_VERSION}")]
    UnsupportedVersion {
        /// The version in the file.
        found: u32,
    },
    /// Channels other than 1 or 3, a side of 0 or above [`MAXIMUM_PACK_IMAGE_SIDE`], no class,
    /// or a reserved byte that is not zero.
    #[error("impossible header: {what}")]
    ImpossibleHeader {
        /// Which field, and its value.
        what: String,
    },
    /// The sections' offsets and lengths do not add up to the file's length.
    #[error("the header announces {expected} bytes, the file has {actual}")]
    LengthMismatch {
        /// What the header adds up to (saturating).
        expected: u64,
        /// The file's length.
        actual: u64,
    },
    /// The checksum of the content differs from the header's.
    #[error("the content's XXH3-128 is {actual:032x}, the header records {recorded:032x}")]
    ChecksumMismatch {
        /// In the header.
        recorded: u128,
        /// Of the bytes read.
        actual: u128,
    },
    /// A label is not below the number of classes.
    #[error("record {index} has label {label}, not below the {classes} classes")]
    LabelOutOfRange {
        /// The record.
        index: u64,
        /// Its label.
        label: u32,
        /// The number of classes.
        classes: u32,
    },
    /// The manifest is not the JSON of a [`PackManifest`].
    #[error("the manifest does not parse: {reason}")]
    ManifestUnreadable {
        /// serde_json's message.
        reason: String,
    },
    /// The manifest disagrees with the header or with the labels.
    #[error("the manifest disagrees with the file: {what}")]
    ManifestDisagrees {
        /// What differs.
        what: String,
    },
}

/// What is wrong with a folder given to be packed (inside
/// [`crate::DatasetError::ImageFolder`]).
#[derive(Clone, Copy, Debug, PartialEq, Eq, thiserror::Error)]
#[non_exhaustive]
pub enum ImageFolderProblem {
    /// The path is not a folder.
    #[error("not a folder")]
    NotAFolder,
    /// No class folder holds an image.
    #[error(
        "no image found: expected class folders of .jpg, .jpeg, .png or .webp files, directly \
         or under train/ and test/ (or val/)"
    )]
    NoImages,
    /// Not one training image could be packed (every file was skipped: see the listing).
    #[error("not one training image could be packed (each was skipped, see the list)")]
    NoDecodableImage,
    /// More classes than a pack holds ([`MAXIMUM_PACK_CLASSES`]).
    #[error("more than {MAXIMUM_PACK_CLASSES} class folders")]
    TooManyClasses,
}

/// The most classes a pack holds (ImageNet-21k has about 21,800).
pub const MAXIMUM_PACK_CLASSES: u32 = 100_000;

/// Reads and checks the header of a pack of `length` bytes from its first bytes (`bytes` may be
/// the whole file or just its first [`PACK_HEADER_BYTES`]). Checks the magic, the version, the
/// shape, and that the sections add up exactly to `length`; not the checksum (see
/// [`verify_pack_content`]). Never panics, whatever the bytes.
pub fn parse_pack_header(bytes: &[u8], length: u64) -> Result<PackHeader, PackProblem> {
    let Some(header) = bytes.get(..PACK_HEADER_BYTES) else {
        return Err(PackProblem::TooShort { length });
    };
    if length < PACK_HEADER_BYTES as u64 {
        return Err(PackProblem::TooShort { length });
    }
    if header[..8] != PACK_MAGIC {
        return Err(PackProblem::BadMagic);
    }
    let version = read_u32(header, 8);
    if version != PACK_FORMAT_VERSION {
        return Err(PackProblem::UnsupportedVersion { found: version });
    }
    let image = PackImageShape {
        channels: read_u32(header, 12),
        height: read_u32(header, 16),
        width: read_u32(header, 20),
    };
    check_image_shape(image)?;
    let parsed = PackHeader {
        image,
        train_records: read_u64(header, 24),
        test_records: read_u64(header, 32),
        classes: read_u32(header, 40),
        labels_offset: read_u64(header, 48),
        manifest_offset: read_u64(header, 56),
        manifest_bytes: read_u64(header, 64),
        content_xxh3_128: u128::from_le_bytes(header[72..88].try_into().unwrap_or([0; 16])),
    };
    if parsed.classes == 0 || parsed.classes > MAXIMUM_PACK_CLASSES {
        return Err(impossible(format!(
            "{} classes (1 to {MAXIMUM_PACK_CLASSES})",
            parsed.classes
        )));
    }
    if read_u32(header, 44) != 0 || header[88..].iter().any(|&byte| byte != 0) {
        return Err(impossible("a reserved byte is not zero"));
    }
    check_section_lengths(&parsed, length)?;
    Ok(parsed)
}

fn check_image_shape(image: PackImageShape) -> Result<(), PackProblem> {
    if !matches!(image.channels, 1 | 3) {
        return Err(impossible(format!("{} channels (1 or 3)", image.channels)));
    }
    for (name, side) in [("height", image.height), ("width", image.width)] {
        if side == 0 || side > MAXIMUM_PACK_IMAGE_SIDE {
            return Err(impossible(format!(
                "{name} {side} (1 to {MAXIMUM_PACK_IMAGE_SIDE})"
            )));
        }
    }
    Ok(())
}

/// Records, labels and manifest must follow each other and end exactly at `length`.
fn check_section_lengths(header: &PackHeader, length: u64) -> Result<(), PackProblem> {
    let records = header.train_records.checked_add(header.test_records);
    let labels_offset = records
        .and_then(|records| records.checked_mul(header.image.record_bytes()))
        .and_then(|bytes| bytes.checked_add(PACK_HEADER_BYTES as u64));
    let manifest_offset = records
        .and_then(|records| records.checked_mul(4))
        .and_then(|bytes| bytes.checked_add(header.labels_offset));
    let end = header.manifest_offset.checked_add(header.manifest_bytes);
    if labels_offset != Some(header.labels_offset)
        || manifest_offset != Some(header.manifest_offset)
    {
        return Err(impossible(format!(
            "the labels at {} and the manifest at {} do not follow {} records of {} bytes",
            header.labels_offset,
            header.manifest_offset,
            header.train_records.saturating_add(header.test_records),
            header.image.record_bytes()
        )));
    }
    match end {
        Some(end) if end == length => Ok(()),
        _ => Err(PackProblem::LengthMismatch {
            expected: end.unwrap_or(u64::MAX),
            actual: length,
        }),
    }
}

/// Whether `path` is a regular file starting with [`PACK_MAGIC`]: what `reclaim train --data`
/// and `reclaim inspect` tell a pack by, and the only kind of existing file packing replaces.
/// Reads eight bytes; says nothing of the rest (opening the pack checks that).
pub fn is_pack_file(path: &std::path::Path) -> bool {
    use std::io::Read as _;
    let mut magic = [0u8; 8];
    path.is_file()
        && std::fs::File::open(path)
            .and_then(|mut file| file.read_exact(&mut magic))
            .is_ok()
        && magic == PACK_MAGIC
}

/// Checks the checksum of a whole pack (`bytes`) against its header's.
pub fn verify_pack_content(header: &PackHeader, bytes: &[u8]) -> Result<(), PackProblem> {
    let actual = content_checksum(bytes.get(PACK_HEADER_BYTES..).unwrap_or(&[]));
    if actual == header.content_xxh3_128 {
        Ok(())
    } else {
        Err(PackProblem::ChecksumMismatch {
            recorded: header.content_xxh3_128,
            actual,
        })
    }
}

/// XXH3-128 of `content`, in 1 MiB pieces (the same value as one call; the pieces keep a
/// caller's progress reporting possible).
pub(crate) fn content_checksum(content: &[u8]) -> u128 {
    let mut hasher = Xxh3::new();
    for piece in content.chunks(1 << 20) {
        hasher.update(piece);
    }
    hasher.digest128()
}

/// The header's 128 bytes.
#[cfg(any(test, feature = "images"))]
pub(crate) fn encode_pack_header(header: &PackHeader) -> [u8; PACK_HEADER_BYTES] {
    let mut bytes = [0u8; PACK_HEADER_BYTES];
    bytes[..8].copy_from_slice(&PACK_MAGIC);
    bytes[8..12].copy_from_slice(&PACK_FORMAT_VERSION.to_le_bytes());
    bytes[12..16].copy_from_slice(&header.image.channels.to_le_bytes());
    bytes[16..20].copy_from_slice(&header.image.height.to_le_bytes());
    bytes[20..24].copy_from_slice(&header.image.width.to_le_bytes());
    bytes[24..32].copy_from_slice(&header.train_records.to_le_bytes());
    bytes[32..40].copy_from_slice(&header.test_records.to_le_bytes());
    bytes[40..44].copy_from_slice(&header.classes.to_le_bytes());
    bytes[48..56].copy_from_slice(&header.labels_offset.to_le_bytes());
    bytes[56..64].copy_from_slice(&header.manifest_offset.to_le_bytes());
    bytes[64..72].copy_from_slice(&header.manifest_bytes.to_le_bytes());
    bytes[72..88].copy_from_slice(&header.content_xxh3_128.to_le_bytes());
    bytes
}

fn impossible(what: impl Into<String>) -> PackProblem {
    PackProblem::ImpossibleHeader { what: what.into() }
}

fn read_u32(bytes: &[u8], offset: usize) -> u32 {
    let mut word = [0u8; 4];
    word.copy_from_slice(&bytes[offset..offset + 4]);
    u32::from_le_bytes(word)
}

fn read_u64(bytes: &[u8], offset: usize) -> u64 {
    let mut word = [0u8; 8];
    word.copy_from_slice(&bytes[offset..offset + 8]);
    u64::from_le_bytes(word)
}

/// What a pack says of itself, stored as JSON after the labels: how it was made, its classes,
/// the training split's statistics, and every source file (packed or skipped).
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct PackManifest {
    /// The images' shape (as in the header).
    pub image: PackImageShape,
    /// Class names in label order (label `i` is `classes[i]`): the class folders' names,
    /// sorted.
    pub classes: Vec<String>,
    /// How the source folder was split.
    pub split_rule: SplitRule,
    /// Per-channel mean and standard deviation of the training split's pixels, scaled to
    /// `[0, 1]` (what `--standardize` subtracts and divides by).
    pub statistics: ChannelStatistics,
    /// One entry per record, in record order.
    pub sources: Vec<PackedSource>,
    /// Every file or folder not packed, and why (also class folders kept with a warning).
    pub skipped: Vec<SkippedFile>,
}

/// How a folder's images were divided into the training and test splits.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "snake_case")]
pub enum SplitRule {
    /// The folder's own `train/` and `test/` (or `val/`) folders.
    Folders {
        /// The folder the test split came from: `test` or `val`.
        test_folder: String,
    },
    /// One folder of class folders, divided per class: the images whose XXH3-64 of
    /// (seed, relative path) is smallest go to the test split, `round(fraction x count)` of
    /// them (none for a class of one image).
    Fraction {
        /// The share of each class in the test split.
        test_fraction: f64,
        /// The seed of the hash.
        seed: u64,
    },
}

/// Per-channel pixel statistics, in `[0, 1]` units.
#[derive(Clone, Debug, PartialEq, Serialize, Deserialize)]
pub struct ChannelStatistics {
    /// The mean of each channel.
    pub mean: Vec<f64>,
    /// The (population) standard deviation of each channel.
    pub standard_deviation: Vec<f64>,
}

/// One packed source file.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct PackedSource {
    /// The path relative to the packed folder, `/`-separated.
    pub path: String,
    /// The split the record is in.
    pub split: PackSplit,
    /// The label (the index of its class folder's name in [`PackManifest::classes`]).
    pub label: u32,
    /// The file's size when it was packed.
    pub bytes: u64,
    /// Its modification time, in nanoseconds since the Unix epoch.
    pub modified_nanoseconds: i128,
    /// XXH3-128 of its content, 32 lowercase hexadecimal digits.
    pub xxh3_128: String,
}

/// A split, as the manifest writes it.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "snake_case")]
pub enum PackSplit {
    /// The training split.
    Train,
    /// The test split.
    Test,
}

impl From<PackSplit> for Split {
    fn from(split: PackSplit) -> Split {
        match split {
            PackSplit::Train => Split::Train,
            PackSplit::Test => Split::Test,
        }
    }
}

/// A file or folder of the source folder that is not in the pack (or, for a class folder of a
/// single image, is in it with a warning), and why.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
pub struct SkippedFile {
    /// The path relative to the packed folder, `/`-separated (a name that is not UTF-8 is
    /// written with its bad bytes replaced by U+FFFD).
    pub path: String,
    /// Why.
    pub reason: SkipReason,
    /// The file's size and modification time when it was tried, for a file that was read and
    /// refused (so that a later pack tries it again only once it changed); none for what was
    /// left out by name or type.
    #[serde(default, skip_serializing_if = "Option::is_none")]
    pub stamp: Option<FileStamp>,
}

/// A source file's size and modification time, as a later pack compares them.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
pub struct FileStamp {
    /// Its size in bytes.
    pub bytes: u64,
    /// Its modification time, in nanoseconds since the Unix epoch.
    pub modified_nanoseconds: i128,
}

impl fmt::Display for SkippedFile {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        write!(formatter, "{}: {}", self.path, self.reason)
    }
}

/// Why a source file was not packed.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize, thiserror::Error)]
#[serde(tag = "kind", rename_all = "snake_case")]
#[non_exhaustive]
pub enum SkipReason {
    /// Its extension is not one of jpg, jpeg, png, webp (any case).
    #[error("not a .jpg, .jpeg, .png or .webp file")]
    NotAnImageExtension,
    /// Its name (or its folder's) is not UTF-8, so the manifest could not name it.
    #[error("the name is not UTF-8")]
    NameNotUtf8,
    /// Not a regular file (a FIFO, a socket, a device).
    #[error("not a regular file ({file_type})")]
    NotARegularFile {
        /// What it is.
        file_type: String,
    },
    /// A file directly in a split folder rather than in a class folder.
    #[error("not inside a class folder")]
    OutsideClassFolder,
    /// The walk could not enter or read it: a symbolic link loop, a folder without
    /// permission, a file removed during the walk.
    #[error("could not be listed: {error}")]
    Unlistable {
        /// The operating system's or the walker's message.
        error: String,
    },
    /// Opening or reading it failed.
    #[error("could not be read: {error}")]
    Unreadable {
        /// The operating system's message.
        error: String,
    },
    /// Zero bytes.
    #[error("empty (0 bytes)")]
    Empty,
    /// Larger than the limit on a source file's size.
    #[error("{bytes} bytes, above the limit of {limit}")]
    FileTooLarge {
        /// Its size.
        bytes: u64,
        /// The limit.
        limit: u64,
    },
    /// Its content is not a JPEG, PNG or WebP image (whatever its name says).
    #[error("not a JPEG, PNG or WebP image")]
    UnknownFormat,
    /// The image declares more pixels than the decoder may allocate (a decompression bomb, or
    /// simply a huge image).
    #[error("{width} x {height} pixels, above the decoding limit of {limit_bytes} bytes")]
    ImageTooLarge {
        /// Declared width.
        width: u32,
        /// Declared height.
        height: u32,
        /// The decoder's allocation limit.
        limit_bytes: u64,
    },
    /// The decoder refused it: truncated, corrupt or unsupported.
    #[error("could not be decoded: {error}")]
    Undecodable {
        /// The decoder's message.
        error: String,
    },
    /// A class folder with no image: its class is left out.
    #[error("an empty class folder: the class is left out")]
    EmptyClass,
    /// A split folder not used: `val/` where `test/` is the test split.
    #[error("not used: the test split is test/")]
    UnusedSplitFolder,
    /// A class folder with a single image: kept, in the training split only.
    #[error("a class folder with a single image (kept, in the training split only)")]
    SingleImageClass,
}

impl PackManifest {
    /// Checks the manifest against the header and the labels (`label(i)` of record `i`).
    pub(crate) fn check_against(
        &self,
        header: &PackHeader,
        label: impl Fn(u64) -> u32,
    ) -> Result<(), PackProblem> {
        let disagrees = |what: String| Err(PackProblem::ManifestDisagrees { what });
        if self.image != header.image {
            return disagrees(format!(
                "image shape {} against {}",
                self.image, header.image
            ));
        }
        if self.classes.len() as u64 != u64::from(header.classes) {
            return disagrees(format!(
                "{} class names against {} classes",
                self.classes.len(),
                header.classes
            ));
        }
        let records = header.train_records.saturating_add(header.test_records);
        if self.sources.len() as u64 != records {
            return disagrees(format!(
                "{} sources against {records} records",
                self.sources.len()
            ));
        }
        let channels = header.image.channels as usize;
        if self.statistics.mean.len() != channels
            || self.statistics.standard_deviation.len() != channels
        {
            return disagrees("statistics for another number of channels".into());
        }
        let in_unit_range = |value: &f64| (0.0..=1.0).contains(value);
        if !self.statistics.mean.iter().all(in_unit_range)
            || !self.statistics.standard_deviation.iter().all(in_unit_range)
        {
            return disagrees(format!(
                "statistics outside [0, 1]: mean {:?}, standard deviation {:?}",
                self.statistics.mean, self.statistics.standard_deviation
            ));
        }
        for (index, source) in (0u64..).zip(&self.sources) {
            let expected_split = if index < header.train_records {
                PackSplit::Train
            } else {
                PackSplit::Test
            };
            if source.split != expected_split || source.label != label(index) {
                return disagrees(format!("record {index} ({})", source.path));
            }
        }
        Ok(())
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    fn header(records: (u64, u64), manifest_bytes: u64) -> PackHeader {
        let image = PackImageShape {
            channels: 3,
            height: 2,
            width: 2,
        };
        let total = records.0 + records.1;
        let labels_offset = PACK_HEADER_BYTES as u64 + total * image.record_bytes();
        PackHeader {
            image,
            train_records: records.0,
            test_records: records.1,
            classes: 2,
            labels_offset,
            manifest_offset: labels_offset + 4 * total,
            manifest_bytes,
            content_xxh3_128: 7,
        }
    }

    #[test]
    fn a_header_round_trips_and_must_match_the_length() {
        let header = header((3, 1), 10);
        let bytes = encode_pack_header(&header);
        let length = header.manifest_offset + 10;
        assert_eq!(parse_pack_header(&bytes, length), Ok(header));
        assert_eq!(
            parse_pack_header(&bytes, length - 1),
            Err(PackProblem::LengthMismatch {
                expected: length,
                actual: length - 1
            })
        );
        assert_eq!(
            parse_pack_header(&bytes[..100], length),
            Err(PackProblem::TooShort { length })
        );
    }

    #[test]
    fn impossible_fields_are_refused_by_name() {
        let header = header((1, 1), 4);
        let length = header.manifest_offset + 4;
        let mut bytes = encode_pack_header(&header);
        bytes[0] = b'X';
        assert_eq!(
            parse_pack_header(&bytes, length),
            Err(PackProblem::BadMagic)
        );

        let mut bytes = encode_pack_header(&header);
        bytes[8] = 9;
        assert_eq!(
            parse_pack_header(&bytes, length),
            Err(PackProblem::UnsupportedVersion { found: 9 })
        );

        let mut bytes = encode_pack_header(&header);
        bytes[12] = 2;
        let problem = parse_pack_header(&bytes, length).unwrap_err();
        assert!(problem.to_string().contains("2 channels"), "{problem}");

        // Huge record counts overflow and are refused, not wrapped.
        let mut bytes = encode_pack_header(&header);
        bytes[24..32].copy_from_slice(&u64::MAX.to_le_bytes());
        assert!(matches!(
            parse_pack_header(&bytes, length),
            Err(PackProblem::ImpossibleHeader { .. })
        ));

        let mut bytes = encode_pack_header(&header);
        bytes[100] = 1;
        assert!(matches!(
            parse_pack_header(&bytes, length),
            Err(PackProblem::ImpossibleHeader { .. })
        ));
    }

    #[test]
    fn the_checksum_covers_every_byte_after_the_header() {
        let mut file = vec![0u8; PACK_HEADER_BYTES];
        file.extend_from_slice(b"records and labels and a manifest");
        let mut header = header((0, 0), 0);
        header.content_xxh3_128 = content_checksum(&file[PACK_HEADER_BYTES..]);
        assert_eq!(verify_pack_content(&header, &file), Ok(()));
        file[PACK_HEADER_BYTES + 3] ^= 1;
        assert!(matches!(
            verify_pack_content(&header, &file),
            Err(PackProblem::ChecksumMismatch { .. })
        ));
    }

    #[test]
    fn statistics_outside_the_unit_range_make_a_manifest_disagree() {
        let header = header((1, 0), 0);
        let mut manifest = PackManifest {
            image: header.image,
            classes: vec!["a".into(), "b".into()],
            split_rule: SplitRule::Folders {
                test_folder: "test".into(),
            },
            statistics: ChannelStatistics {
                mean: vec![0.5; 3],
                standard_deviation: vec![0.2; 3],
            },
            sources: vec![PackedSource {
                path: "train/a/0.png".into(),
                split: PackSplit::Train,
                label: 1,
                bytes: 10,
                modified_nanoseconds: 0,
                xxh3_128: "0".repeat(32),
            }],
            skipped: Vec::new(),
        };
        assert_eq!(manifest.check_against(&header, |_| 1), Ok(()));
        assert!(
            manifest.check_against(&header, |_| 0).is_err(),
            "another label"
        );
        for forged in [1e300, -0.1, f64::NAN] {
            manifest.statistics.standard_deviation[1] = forged;
            assert!(matches!(
                manifest.check_against(&header, |_| 1),
                Err(PackProblem::ManifestDisagrees { .. })
            ));
        }
    }

    #[test]
    fn skip_reasons_read_as_sentences_and_round_trip_through_json() {
        let skipped = SkippedFile {
            path: "train/cat/bomb.png".into(),
            reason: SkipReason::ImageTooLarge {
                width: 100_000,
                height: 100_000,
                limit_bytes: 1 << 28,
            },
            stamp: Some(FileStamp {
                bytes: 40,
                modified_nanoseconds: -5,
            }),
        };
        assert_eq!(
            skipped.to_string(),
            "train/cat/bomb.png: 100000 x 100000 pixels, above the decoding limit of 268435456 bytes"
        );
        let json = serde_json::to_string(&skipped).unwrap();
        assert_eq!(serde_json::from_str::<SkippedFile>(&json).unwrap(), skipped);
    }
}
