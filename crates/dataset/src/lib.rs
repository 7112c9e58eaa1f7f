//! `reclaim-dataset`: the IDX file format and the MNIST family, the CIFAR-10 and CIFAR-100 binary
//! format, with nothing of Burn or batching.
//!
//! - [`IdxArray`]: one IDX file (any of the six element types, rank 1 to 255), validated on open
//!   (the file's length must be exactly header plus data), either memory-mapped
//!   ([`IdxArray::open_mapped`]) or read into memory ([`IdxArray::open_owned`],
//!   [`IdxArray::from_bytes`]). Zero-copy access to `u8`/`i8` data and rows, decoding for the
//!   multi-byte types ([`IdxArray::to_vec`]). A `.gz` path is decompressed once into a `cache/`
//!   folder beside it ([`decompress_gz_cached`]).
//! - [`parse_idx_header`] / [`IdxHeader`]: the header parser (the fuzz target's entry point).
//! - [`write_idx`] / [`encode_idx`]: the writer, for every type and rank; files are written
//!   atomically (temporary file, then rename).
//! - [`ImageDataset`]: images (N x H x W `u8`) and labels (N `u8`) of one [`Split`], checked against
//!   each other; `Send + Sync`, zero copy, unmapped on drop. [`DatasetSplits`]: both splits of a
//!   folder, mapped together ([`DatasetSplits::open_mapped`]) or read into memory
//!   ([`DatasetSplits::open_owned`]).
//! - [`install_sigbus_guard`] (Linux; the program calls it, no mapping does): a mitigation for
//!   a mapped file truncated by someone else while mapped, not a guarantee. Once installed, a
//!   read past the new end does not kill the process with `SIGBUS`; the map reads as zeros from
//!   the fault on, and [`IdxArray::verify_mapping_intact`] /
//!   [`ImageDataset::verify_mapping_intact`] report [`DatasetError::MappedFileChanged`]; every
//!   other `SIGBUS` goes to the action installed before it ([`SigbusGuardInstallation`],
//!   [`is_sigbus_guard_installed`]; what is and is not caught: [`install_sigbus_guard`],
//!   [`IdxArray::open_mapped`]).
//! - [`DatasetSplits::fingerprint`] → [`DatasetFingerprint`]: the size and XXH3-128 of each of
//!   the four files as held (a [`FileFingerprint`] each, also from [`IdxArray::fingerprint`]),
//!   for a resumed run to check it reads the same data; (de)serializes with the feature `serde`.
//! - [`write_file_atomically`]: the workspace's one atomic write (temporary file, then rename).
//! - [`ProgressDisplay`]: bar or nothing, for downloads here and epochs in `reclaim-train`; the
//!   bar itself with the cargo feature `progress`.
//! - [`Family`]: the catalogue of MNIST, Fashion-MNIST and KMNIST (file names, mirrors, SHA-256s
//!   of the decompressed files, classes); [`default_data_folder`] finds the data;
//!   [`verify_dataset_folder`] checks it.
//! - With the cargo feature `fetch` (which implies `progress`): `fetch_family` / `fetch_file`
//!   download from the mirrors or a local mirror (`RECLAIM_MIRROR`), verify, and write
//!   atomically.
//! - [`CifarDataset`]: one split of CIFAR-10 or CIFAR-100 ([`CifarVariant`]) over its record
//!   files (CIFAR-10's training split is five), mapped ([`CifarDataset::open_mapped`]) or owned
//!   ([`CifarDataset::open_owned`]), validated on open (a whole, non-zero number of records
//!   per file; every label in range); images lent as 3072-byte C x H x W slices without a copy;
//!   CIFAR-100's fine or coarse labels ([`CifarLabelKind`]). [`CifarSplits`]: both splits of a
//!   folder. [`write_cifar_batch`] / [`encode_cifar`] write the format byte for byte
//!   ([`CifarRecord`]); [`verify_cifar_file`] / [`verify_cifar_folder`] check files without
//!   mapping them.
//! - [`CifarArchive`] (from [`CifarVariant::archive`]): the published `.tar.gz`, its location
//!   and MD5 ([`verify_cifar_archive`]); [`extract_cifar_archive`] unpacks it atomically,
//!   refusing absolute paths, `..`, links and special files, within [`ExtractionLimits`]; with
//!   `fetch`, `fetch_cifar` downloads it (local mirror first) and unpacks it.
//! - [`DatasetName`]: every dataset of the catalogue (MNIST family and CIFAR), parsed from a
//!   `--dataset` value; [`resolve_dataset_folder`] / [`default_dataset_folder`] find its folder.
//! - [`DatasetError`]: the one error type; every variant about a file names it.
//!
//! ```
//! use reclaim_dataset::{IdxArray, ImageDataset, Split, StorageKind, write_idx};
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
//! use reclaim_dataset::{CifarDataset, CifarLabelKind, CifarRecord, CifarVariant, write_cifar_batch};
//! let red = [255u8; 3072];
//! let records = [CifarRecord::cifar100(4, 30, &red), CifarRecord::cifar100(19, 99, &red)];
//! write_cifar_batch(folder.path().join("test.bin"), CifarVariant::Cifar100, &records)?;
//! // SAFETY: the file is not modified while the dataset is alive.
//! let cifar = unsafe { CifarDataset::open_mapped(folder.path(), CifarVariant::Cifar100, Split::Test) }?;
//! assert_eq!((cifar.len(), cifar.channels(), cifar.image_height()), (2, 3, 32));
//! assert_eq!((cifar.label(1), cifar.coarse_label(1)), (99, Some(19)));
//! assert_eq!(cifar.image(0), &red);
//! let coarse = cifar.with_label_kind(CifarLabelKind::Coarse)?;
//! assert_eq!((coarse.label(0), coarse.number_of_classes()), (4, 20));
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod archive;
mod array;
mod atomic;
mod catalogue;
mod checksum;
mod cifar;
mod cifar_dataset;
mod cifar_writer;
mod dataset_name;
mod element;
mod error;
#[cfg(feature = "fetch")]
mod fetch;
#[cfg(feature = "fetch")]
mod fetch_archive;
mod file_bytes;
mod fingerprint;
mod gz;
mod header;
mod image_dataset;
mod mapping_guard;
mod open;
mod progress;
mod splits;
mod writer;

pub use archive::{
    ExtractionLimits, extract_cifar_archive, md5_hex, md5_of_file, verify_cifar_archive,
};
pub use array::IdxArray;
pub use atomic::write_file_atomically;
pub use catalogue::{
    CatalogueFile, DATA_FOLDER_VARIABLE, DataFolderOrigin, Family, Split, SplitFiles,
    default_data_folder, resolve_data_folder, workspace_data_folder,
};
pub use checksum::{
    FileVerification, sha256_hex, sha256_of_file, verify_dataset_folder, verify_file,
};
pub use cifar::{
    CIFAR_CHANNELS, CIFAR_IMAGE_BYTES, CIFAR_IMAGE_HEIGHT, CIFAR_IMAGE_WIDTH, CifarArchive,
    CifarLabelKind, CifarVariant,
};
pub use cifar_dataset::{
    CifarDataset, CifarFingerprint, CifarSplits, locate_cifar_files, verify_cifar_file,
    verify_cifar_folder,
};
pub use cifar_writer::{CifarRecord, encode_cifar, write_cifar_batch};
pub use dataset_name::{DatasetName, default_dataset_folder, resolve_dataset_folder};
pub use element::{ElementType, IdxElement};
pub use error::{
    ArchiveEntryProblem, CifarRecordProblem, DatasetError, MirrorAttempt, Result, ShapeProblem,
};
#[cfg(feature = "fetch")]
pub use fetch::{
    DownloadLimits, FetchOptions, FetchOrigin, FetchedFile, MIRROR_VARIABLE, Mirror, fetch_family,
    fetch_file, remove_stale_partial_files,
};
#[cfg(feature = "fetch")]
pub use fetch_archive::{FetchedCifar, fetch_cifar};
pub use file_bytes::{AccessPattern, StorageKind};
pub use fingerprint::{DatasetFingerprint, FileFingerprint};
pub use gz::{CACHE_FOLDER_NAME, decompress_gz_cached, gz_cache_locations, gz_cache_path};
pub use header::{IdxHeader, MAXIMUM_HEADER_LENGTH, parse_idx_header};
pub use image_dataset::{ImageDataset, locate_split_files};
pub use mapping_guard::{SigbusGuardInstallation, install_sigbus_guard, is_sigbus_guard_installed};
pub use open::FileKind;
pub use progress::ProgressDisplay;
pub use splits::DatasetSplits;
pub use writer::{encode_idx, write_idx};

/// The README's examples, run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
