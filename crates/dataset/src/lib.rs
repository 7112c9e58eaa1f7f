//! `reclaim-dataset`: the IDX file format and the MNIST family, with nothing of Burn or batching.
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
//! - Truncation guard (Linux): a mapped file truncated while mapped does not kill the process
//!   with `SIGBUS`; its map reads as zeros from the fault on, and
//!   [`IdxArray::verify_mapping_intact`] / [`ImageDataset::verify_mapping_intact`] report
//!   [`DatasetError::MappedFileChanged`] (what is and is not caught: [`IdxArray::open_mapped`]).
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
//! # Ok::<(), Box<dyn std::error::Error>>(())
//! ```

mod array;
mod atomic;
mod catalogue;
mod checksum;
mod element;
mod error;
#[cfg(feature = "fetch")]
mod fetch;
mod fingerprint;
mod gz;
mod header;
mod image_dataset;
mod mapping_guard;
mod open;
mod progress;
mod splits;
mod writer;

pub use array::{AccessPattern, IdxArray, StorageKind};
pub use atomic::write_file_atomically;
pub use catalogue::{
    CatalogueFile, DATA_FOLDER_VARIABLE, DataFolderOrigin, Family, Split, SplitFiles,
    default_data_folder, resolve_data_folder, workspace_data_folder,
};
pub use checksum::{
    FileVerification, sha256_hex, sha256_of_file, verify_dataset_folder, verify_file,
};
pub use element::{ElementType, IdxElement};
pub use error::{DatasetError, MirrorAttempt, Result, ShapeProblem};
#[cfg(feature = "fetch")]
pub use fetch::{
    DownloadLimits, FetchOptions, FetchOrigin, FetchedFile, MIRROR_VARIABLE, Mirror, fetch_family,
    fetch_file, remove_stale_partial_files,
};
pub use fingerprint::{DatasetFingerprint, FileFingerprint};
pub use gz::{CACHE_FOLDER_NAME, decompress_gz_cached, gz_cache_locations, gz_cache_path};
pub use header::{IdxHeader, MAXIMUM_HEADER_LENGTH, parse_idx_header};
pub use image_dataset::{ImageDataset, locate_split_files};
pub use open::FileKind;
pub use progress::ProgressDisplay;
pub use splits::DatasetSplits;
pub use writer::{encode_idx, write_idx};

/// The README's examples, run as doctests.
#[cfg(doctest)]
#[doc = include_str!("../README.md")]
struct ReadmeDoctests;
