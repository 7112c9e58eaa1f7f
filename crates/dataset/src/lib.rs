//! `reclaim-dataset`: image datasets from files, with nothing of Burn or batching: the IDX
//! format and the MNIST family, the CIFAR-10 and CIFAR-100 binary format, and packs of photos
//! (a folder of JPEG, PNG and WebP files decoded once into one file). Every file is validated
//! when opened, then memory-mapped or read into memory.
//!
//! # Brief overview
//!
//! The main types are at the root:
//!
//! - [`ImageDataset`]: images (N x H x W `u8`) and labels (N `u8`) of one [`Split`] of an IDX
//!   folder, checked against each other; `Send + Sync`, zero copy, unmapped on drop.
//!   [`DatasetSplits`]: both splits of a folder, mapped together
//!   ([`DatasetSplits::open_mapped`]) or read into memory ([`DatasetSplits::open_owned`]).
//! - [`CifarDataset`]: one split of CIFAR-10 or CIFAR-100 over its record files (CIFAR-10's
//!   training split is five), validated on open (a whole, non-zero number of records per file;
//!   every label in range); images lent as 3072-byte C x H x W slices without a copy.
//!   [`CifarSplits`]: both splits of a folder.
//! - [`PackDataset`]: one split of a pack, its C x H x W records lent in place;
//!   [`PackSplits`]: both, from one file, checked whole on open (see [`pack`]).
//! - [`Splits`]: the training and test splits of any of the three formats;
//!   [`DatasetSplits`], [`CifarSplits`] and [`PackSplits`] are its instances.
//! - [`StorageKind`]: whether a dataset's bytes are mapped or owned (one way of holding a file's
//!   bytes serves IDX and CIFAR alike); [`AccessPattern`]: a hint for how a map will be read.
//! - [`DatasetName`]: every dataset of the catalogue (MNIST family and CIFAR), parsed from a
//!   `--dataset` value; [`resolve_dataset_folder`] / [`default_dataset_folder`] find its folder;
//!   [`Family`] is the MNIST family and [`default_data_folder`] its folder.
//! - [`DatasetSplits::fingerprint`] → [`DatasetFingerprint`]: the size and XXH3-128 of each file
//!   as held (a [`FileFingerprint`] each), for a resumed run to check it reads the same data;
//!   (de)serializes with the feature `serde`.
//! - [`install_sigbus_guard`] (Linux; the program calls it, no mapping does): a mitigation for
//!   a mapped file truncated by someone else while mapped, not a guarantee. Once installed, a
//!   read past the new end does not kill the process with `SIGBUS`; the map reads as zeros from
//!   the fault on, and `verify_mapping_intact` ([`ImageDataset::verify_mapping_intact`],
//!   [`CifarDataset::verify_mapping_intact`]) reports [`DatasetError::MappedFileChanged`]; every
//!   other `SIGBUS` goes to the action installed before it ([`SigbusGuardInstallation`],
//!   [`is_sigbus_guard_installed`]; what is and is not caught: [`install_sigbus_guard`],
//!   [`idx::IdxArray::open_mapped`]).
//! - [`write_file_atomically`]: the workspace's one atomic write (temporary file, then rename).
//! - [`ProgressDisplay`]: bar or nothing, for downloads here and epochs in `reclaim-train`; the
//!   bar itself with the cargo feature `progress`.
//! - [`DatasetError`]: the one error type; every variant about a file names it. The types its
//!   variants carry that belong to no one format are beside it ([`FileKind`], [`ShapeProblem`],
//!   [`CifarRecordProblem`], [`ArchiveEntryProblem`], [`MirrorAttempt`]).
//!
//! The rest is in one module per topic:
//!
//! - [`idx`]: one IDX file as an [`idx::IdxArray`] (any of the six element types, rank 1 to
//!   255; the file's length must be exactly header plus data), mapped or owned, zero copy for
//!   `u8`/`i8`, decoding for the others; the header parser [`idx::parse_idx_header`] (the fuzz
//!   target's entry point); the writer [`idx::write_idx`] / [`idx::encode_idx`] (atomic); the
//!   `.gz` decompression cache ([`idx::decompress_gz_cached`]).
//! - [`pack`]: the pack format (its header, manifest, checks and skip reasons) and, with the
//!   cargo feature `images`, packing a folder of photos (`pack_image_folder`).
//! - [`cifar`]: [`cifar::CifarVariant`] and [`cifar::CifarLabelKind`] (CIFAR-100's fine or
//!   coarse labels), the writer [`cifar::write_cifar_batch`] / [`cifar::encode_cifar`]
//!   ([`cifar::CifarRecord`]), file checks without mapping ([`cifar::verify_cifar_file`],
//!   [`cifar::verify_cifar_folder`]), and the published `.tar.gz` ([`cifar::CifarArchive`],
//!   [`cifar::verify_cifar_archive`]; [`cifar::extract_cifar_archive`] unpacks it atomically,
//!   refusing absolute paths, `..`, links and special files).
//! - [`catalogue`]: the MNIST family's files (names, SHA-256s of the decompressed files), where
//!   the data folder is ([`catalogue::resolve_data_folder`]) and whether it is intact
//!   ([`catalogue::verify_dataset_folder`]).
//! - `fetch` (cargo feature `fetch`, which implies `progress`): `fetch_family` / `fetch_file`
//!   download from the mirrors or a local mirror (`RECLAIM_MIRROR`), verify, and write
//!   atomically; `fetch_cifar` downloads and unpacks a CIFAR archive.
//!
//! ```
//! use reclaim_dataset::cifar::{CifarLabelKind, CifarRecord, CifarVariant, write_cifar_batch};
//! use reclaim_dataset::idx::{IdxArray, write_idx};
//! use reclaim_dataset::{CifarDataset, ImageDataset, Split, StorageKind};
//!
//! let folder = tempfile::tempdir()?;
//! // Two 2 x 3 images and their labels, under the MNIST test file names.
//! let pixels: Vec<u8> = (0..12).collect();
//! write_idx(folder.path().join("t10k-images-idx3-ubyte"), &[2, 2, 3], &pixels)?;
//! write_idx(folder.path().join("t10k-labels-idx1-ubyte"), &[2], &[7u8, 2])?;
//!
//! // SAFETY: the files are not modified while the dataset is alive.
//! let dataset = unsafe { ImageDataset::open_mapped(folder.path(), Split::Test) }?;
//! assert_eq!(dataset.len(), 2);
//! assert_eq!((dataset.image_height(), dataset.image_width()), (2, 3));
//! assert_eq!(dataset.image(1), &[6, 7, 8, 9, 10, 11]);
//! assert_eq!(dataset.labels(), &[7, 2]);
//! assert_eq!(dataset.images().storage(), StorageKind::Mapped);
//!
//! // Any element type and rank round-trips.
//! let path = folder.path().join("weights.idx");
//! write_idx(&path, &[2, 2], &[0.5f32, -1.0, 2.0, 3.25])?;
//! let array = IdxArray::open_owned(&path)?;
//! assert_eq!(array.shape(), &[2, 2]);
//! assert_eq!(array.to_vec::<f32>()?, [0.5, -1.0, 2.0, 3.25]);
//!
//! // A CIFAR-100 test split of two records, in the published byte layout.
//! let red = [255u8; 3072];
//! let records = [CifarRecord::cifar100(4, 30, &red), CifarRecord::cifar100(19, 99, &red)];
//! write_cifar_batch(folder.path().join("test.bin"), CifarVariant::Cifar100, &records)?;
//! // SAFETY: the file is not modified while the dataset is alive.
//! let cifar = unsafe { CifarDataset::open_mapped(folder.path(), CifarVariant::Cifar100, Split::Test) }?;
//! assert_eq!((cifar.len(), cifar.channels(), cifar.image_height()), (2, 3, 32));
//! assert_eq!((cifar.label(1), cifar.coarse_label(1)), (99, Some(19)));
//! assert_eq!(cifar.image(0), &red);
//! assert_eq!(cifar.storage(), StorageKind::Mapped);
//! let coarse = cifar.with_label_kind(CifarLabelKind::Coarse)?;
//! assert_eq!((coarse.label(0), coarse.number_of_classes()), (4, 20));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod archive;
mod array;
mod atomic;
mod checksum;
mod cifar_dataset;
mod cifar_variant;
mod cifar_writer;
mod dataset_name;
mod element;
mod error;
mod family;
#[cfg(feature = "fetch")]
mod fetch_archive;
#[cfg(feature = "fetch")]
mod fetch_file;
mod file_bytes;
mod fingerprint;
mod gz;
mod header;
mod image_dataset;
#[cfg(feature = "images")]
mod image_decode;
#[cfg(feature = "images")]
mod image_folder;
mod mapping_guard;
mod open;
mod pack_dataset;
mod pack_format;
#[cfg(feature = "images")]
mod pack_writer;
mod progress;
mod splits;
mod writer;

pub use atomic::write_file_atomically;
pub use cifar_dataset::{CifarDataset, CifarSplits};
pub use dataset_name::{DatasetName, default_dataset_folder, resolve_dataset_folder};
pub use error::{
    ArchiveEntryProblem, CifarRecordProblem, DatasetError, MirrorAttempt, Result, ShapeProblem,
};
pub use family::{Family, Split, default_data_folder};
pub use file_bytes::{AccessPattern, StorageKind};
pub use fingerprint::{DatasetFingerprint, FileFingerprint};
pub use image_dataset::ImageDataset;
pub use mapping_guard::{SigbusGuardInstallation, install_sigbus_guard, is_sigbus_guard_installed};
pub use open::FileKind;
pub use pack_dataset::{PackDataset, PackSplits};
pub use progress::ProgressDisplay;
pub use splits::{DatasetSplits, Splits};

pub mod pack {
    //! Packs: a folder of photos decoded once into one file of fixed-size `u8` C x H x W
    //! records, their labels and a JSON manifest ([`PackManifest`]: the shape, the class names
    //! in label order, the training split's per-channel statistics, and for every source file
    //! its path, size, modification time and XXH3-128, or why it was skipped). The layout and
    //! its checks: [`parse_pack_header`]. Reading: [`crate::PackSplits`] /
    //! [`crate::PackDataset`], validated on open (the checksum of every byte included), mapped
    //! or owned, guarded like the other mapped files.
    //!
    //! Writing (cargo feature `images`): [`pack_image_folder`] reads a folder laid out as
    //! torchvision's `ImageFolder` (`train/<class>/...` and `test/<class>/...` or `val/`; or
    //! class folders alone, divided per class by a [`TestFraction`] and a seed), decodes every
    //! JPEG, PNG and WebP once on all cores under [`DecodeLimits`], resizes it (shorter side,
    //! then centre crop) and writes the pack atomically; a later pack of a changed folder
    //! decodes only what changed, and an interrupted one resumes. Bad files are skipped and
    //! listed ([`SkippedFile`]) or refused ([`BadFilePolicy`]).

    #[cfg(feature = "images")]
    pub use crate::image_decode::DecodeLimits;
    #[cfg(feature = "images")]
    pub use crate::image_folder::{ImageFolderSurvey, TestFraction, survey_image_folder};
    pub use crate::pack_dataset::PackFingerprint;
    pub use crate::pack_format::{
        ChannelStatistics, FileStamp, ImageFolderProblem, MAXIMUM_PACK_CLASSES,
        MAXIMUM_PACK_IMAGE_SIDE, PACK_FORMAT_VERSION, PACK_HEADER_BYTES, PACK_MAGIC, PackHeader,
        PackImageShape, PackManifest, PackProblem, PackSplit, PackedSource, SkipReason,
        SkippedFile, SplitRule, is_pack_file, parse_pack_header, verify_pack_content,
    };
    #[cfg(feature = "images")]
    pub use crate::pack_writer::{
        BadFilePolicy, ImageSize, PackChannels, PackOptions, PackOutcome, PackState,
        pack_image_folder, pack_image_folder_cached, pack_locations,
    };
}

pub mod idx {
    //! The IDX format: one file as an [`IdxArray`], its header, its element types, the writer,
    //! the `.gz` decompression cache, and where a split's two files are.

    pub use crate::array::IdxArray;
    pub use crate::element::{ElementType, IdxElement};
    pub use crate::gz::{
        CACHE_FOLDER_NAME, decompress_gz_cached, gz_cache_locations, gz_cache_path,
    };
    pub use crate::header::{IdxHeader, MAXIMUM_HEADER_LENGTH, parse_idx_header};
    pub use crate::image_dataset::locate_split_files;
    pub use crate::writer::{encode_idx, write_idx};
}

pub mod cifar {
    //! The CIFAR-10 and CIFAR-100 binary format: variants and label kinds, the record layout and
    //! its writer, file checks, and the published archive (location, MD5, safe extraction).
    //! The datasets themselves are [`crate::CifarDataset`] and [`crate::CifarSplits`].

    pub use crate::archive::{
        ExtractionLimits, extract_cifar_archive, md5_hex, md5_of_file, verify_cifar_archive,
    };
    pub use crate::cifar_dataset::{
        CifarFingerprint, locate_cifar_files, verify_cifar_file, verify_cifar_folder,
    };
    pub use crate::cifar_variant::{
        CIFAR_CHANNELS, CIFAR_IMAGE_BYTES, CIFAR_IMAGE_HEIGHT, CIFAR_IMAGE_WIDTH, CifarArchive,
        CifarLabelKind, CifarVariant,
    };
    pub use crate::cifar_writer::{CifarRecord, encode_cifar, write_cifar_batch};
}

pub mod catalogue {
    //! The MNIST family's catalogue (file names, SHA-256s, classes), where the data folder is,
    //! and whether its files are intact. [`crate::Family`], [`crate::Split`] and
    //! [`crate::default_data_folder`] are at the crate's root.

    pub use crate::checksum::{
        FileVerification, sha256_hex, sha256_of_file, verify_dataset_folder, verify_file,
    };
    pub use crate::family::{
        CatalogueFile, DATA_FOLDER_VARIABLE, DataFolderOrigin, SplitFiles, resolve_data_folder,
        workspace_data_folder,
    };
}

#[cfg(feature = "fetch")]
pub mod fetch {
    //! Downloading (cargo feature `fetch`): the MNIST family's files and the CIFAR archives, from
    //! their mirrors or a local mirror (`RECLAIM_MIRROR`), verified and written atomically.

    pub use crate::fetch_archive::{FetchedCifar, fetch_cifar};
    pub use crate::fetch_file::{
        DownloadLimits, FetchOptions, FetchOrigin, FetchedFile, MIRROR_VARIABLE, Mirror,
        fetch_family, fetch_file, remove_stale_partial_files,
    };
}

/// The README's examples, run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
