//! The MNIST family: file names, mirrors, checksums, classes, and where the data lives.

use std::fmt;
use std::path::{Path, PathBuf};

use crate::error::{DatasetError, Result};
use crate::open::entry_exists;

/// The environment variable naming the data folder (see [`default_data_folder`]).
pub const DATA_FOLDER_VARIABLE: &str = "RECLAIM_DATA";

/// One of a dataset's two splits.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub enum Split {
    /// The training split (60,000 items for the MNIST family).
    Train,
    /// The test split (10,000 items for the MNIST family).
    Test,
}

impl Split {
    /// Both splits, train first.
    pub const ALL: [Split; 2] = [Split::Train, Split::Test];

    /// `"train"` or `"test"`.
    pub fn name(self) -> &'static str {
        match self {
            Split::Train => "train",
            Split::Test => "test",
        }
    }
}

impl fmt::Display for Split {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

/// A dataset of the MNIST family: 28 x 28 grey images in 10 classes, stored as four IDX files
/// with the MNIST file names.
///
/// EMNIST is not included: it is distributed as a single zip archive of many splits, not as four
/// `.gz` files.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum Family {
    /// Handwritten digits (LeCun, Cortes, Burges).
    Mnist,
    /// Zalando's article pictures (Xiao, Rasul, Vollgraf).
    FashionMnist,
    /// Kuzushiji (cursive Japanese) characters (Clanuwat et al.).
    Kmnist,
}

/// One file of the catalogue.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct CatalogueFile {
    /// The decompressed file's name, e.g. `train-images-idx3-ubyte`.
    pub file_name: &'static str,
    /// The compressed file's name as served by the mirrors, e.g. `train-images-idx3-ubyte.gz`.
    pub compressed_name: &'static str,
    /// SHA-256 of the decompressed file, lowercase hex; `None` where not known with certainty
    /// (verification is then skipped and only the IDX structure and shape are checked).
    pub sha256: Option<&'static str>,
    /// The shape the file holds (`[N, 28, 28]` for images, `[N]` for labels); always `u8`.
    pub shape: &'static [usize],
}

/// The two files of one split, and how many items they hold.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
pub struct SplitFiles {
    /// The images file (N x 28 x 28, u8).
    pub images: CatalogueFile,
    /// The labels file (N, u8).
    pub labels: CatalogueFile,
    /// The number of items N.
    pub count: usize,
}

impl SplitFiles {
    /// Images then labels.
    pub fn both(&self) -> [CatalogueFile; 2] {
        [self.images, self.labels]
    }
}

const fn file(
    file_name: &'static str,
    compressed_name: &'static str,
    sha256: Option<&'static str>,
    shape: &'static [usize],
) -> CatalogueFile {
    CatalogueFile {
        file_name,
        compressed_name,
        sha256,
        shape,
    }
}

const TRAIN_IMAGES_SHAPE: &[usize] = &[60_000, 28, 28];
const TRAIN_LABELS_SHAPE: &[usize] = &[60_000];
const TEST_IMAGES_SHAPE: &[usize] = &[10_000, 28, 28];
const TEST_LABELS_SHAPE: &[usize] = &[10_000];

const MNIST_MIRRORS: &[&str] = &[
    "https://ossci-datasets.s3.amazonaws.com/mnist/",
    "https://storage.googleapis.com/cvdf-datasets/mnist/",
    "http://yann.lecun.com/exdb/mnist/",
];
const FASHION_MNIST_MIRRORS: &[&str] = &[
    "http://fashion-mnist.s3-website.eu-central-1.amazonaws.com/",
    "https://raw.githubusercontent.com/zalandoresearch/fashion-mnist/master/data/fashion/",
];
const KMNIST_MIRRORS: &[&str] = &["http://codh.rois.ac.jp/kmnist/dataset/kmnist/"];

const MNIST_TRAIN_IMAGES_SHA256: &str =
    "ba891046e6505d7aadcbbe25680a0738ad16aec93bde7f9b65e87a2fc25776db";
const MNIST_TRAIN_LABELS_SHA256: &str =
    "65a50cbbf4e906d70832878ad85ccda5333a97f0f4c3dd2ef09a8a9eef7101c5";
const MNIST_TEST_IMAGES_SHA256: &str =
    "0fa7898d509279e482958e8ce81c8e77db3f2f8254e26661ceb7762c4d494ce7";
const MNIST_TEST_LABELS_SHA256: &str =
    "ff7bcfd416de33731a308c3f266cc351222c34898ecbeaf847f06e48f7ec33f2";

const TRAIN_IMAGES: &str = "train-images-idx3-ubyte";
const TRAIN_LABELS: &str = "train-labels-idx1-ubyte";
const TEST_IMAGES: &str = "t10k-images-idx3-ubyte";
const TEST_LABELS: &str = "t10k-labels-idx1-ubyte";

/// The MNIST file names for a split: (images, labels), decompressed.
pub(crate) fn mnist_file_names(split: Split) -> (&'static str, &'static str) {
    match split {
        Split::Train => (TRAIN_IMAGES, TRAIN_LABELS),
        Split::Test => (TEST_IMAGES, TEST_LABELS),
    }
}

impl Family {
    /// Every family in the catalogue.
    pub const ALL: [Family; 3] = [Family::Mnist, Family::FashionMnist, Family::Kmnist];

    /// A short lowercase name: `mnist`, `fashion-mnist`, `kmnist`.
    pub fn name(self) -> &'static str {
        match self {
            Family::Mnist => "mnist",
            Family::FashionMnist => "fashion-mnist",
            Family::Kmnist => "kmnist",
        }
    }

    /// The family named `name` (as [`Family::name`] gives it, case-insensitive, `_` for `-`).
    pub fn from_name(name: &str) -> Option<Self> {
        let normalized = name.to_ascii_lowercase().replace('_', "-");
        Family::ALL.into_iter().find(|family| {
            family.name() == normalized
                || (normalized == "fashion" && *family == Family::FashionMnist)
        })
    }

    /// The folder the family lives in under the data folder (same as [`Family::name`]).
    pub fn folder_name(self) -> &'static str {
        self.name()
    }

    /// The number of classes (10 for every family here).
    pub fn number_of_classes(self) -> usize {
        10
    }

    /// Image height and width in pixels (28 x 28 for every family here).
    pub fn image_size(self) -> (usize, usize) {
        (28, 28)
    }

    /// The names of the classes, in label order.
    pub fn class_names(self) -> &'static [&'static str] {
        match self {
            Family::Mnist => &["0", "1", "2", "3", "4", "5", "6", "7", "8", "9"],
            Family::FashionMnist => &[
                "T-shirt/top",
                "Trouser",
                "Pullover",
                "Dress",
                "Coat",
                "Sandal",
                "Shirt",
                "Sneaker",
                "Bag",
                "Ankle boot",
            ],
            Family::Kmnist => &["o", "ki", "su", "tsu", "na", "ha", "ma", "ya", "re", "wo"],
        }
    }

    /// The standard download mirrors (base URLs ending in `/`), tried in order.
    pub fn mirrors(self) -> &'static [&'static str] {
        match self {
            Family::Mnist => MNIST_MIRRORS,
            Family::FashionMnist => FASHION_MNIST_MIRRORS,
            Family::Kmnist => KMNIST_MIRRORS,
        }
    }

    /// The license the data is distributed under.
    pub fn license(self) -> &'static str {
        match self {
            Family::Mnist => "CC BY-SA 3.0 (Yann LeCun and Corinna Cortes)",
            Family::FashionMnist => "MIT (Zalando SE)",
            Family::Kmnist => "CC BY-SA 4.0 (ROIS-DS Center for Open Data in the Humanities)",
        }
    }

    /// The files of one split, with their checksums and item count.
    ///
    /// Only MNIST's SHA-256s are recorded; for Fashion-MNIST and KMNIST they are `None` and
    /// verification checks the IDX structure and counts only.
    pub fn files(self, split: Split) -> SplitFiles {
        let (images_sha256, labels_sha256) = match (self, split) {
            (Family::Mnist, Split::Train) => (
                Some(MNIST_TRAIN_IMAGES_SHA256),
                Some(MNIST_TRAIN_LABELS_SHA256),
            ),
            (Family::Mnist, Split::Test) => (
                Some(MNIST_TEST_IMAGES_SHA256),
                Some(MNIST_TEST_LABELS_SHA256),
            ),
            (Family::FashionMnist | Family::Kmnist, _) => (None, None),
        };
        match split {
            Split::Train => SplitFiles {
                images: file(
                    TRAIN_IMAGES,
                    "train-images-idx3-ubyte.gz",
                    images_sha256,
                    TRAIN_IMAGES_SHAPE,
                ),
                labels: file(
                    TRAIN_LABELS,
                    "train-labels-idx1-ubyte.gz",
                    labels_sha256,
                    TRAIN_LABELS_SHAPE,
                ),
                count: TRAIN_LABELS_SHAPE[0],
            },
            Split::Test => SplitFiles {
                images: file(
                    TEST_IMAGES,
                    "t10k-images-idx3-ubyte.gz",
                    images_sha256,
                    TEST_IMAGES_SHAPE,
                ),
                labels: file(
                    TEST_LABELS,
                    "t10k-labels-idx1-ubyte.gz",
                    labels_sha256,
                    TEST_LABELS_SHAPE,
                ),
                count: TEST_LABELS_SHAPE[0],
            },
        }
    }

    /// The catalogue entry with this decompressed or compressed file name, if any.
    pub fn file_named(self, name: &str) -> Option<CatalogueFile> {
        Split::ALL
            .into_iter()
            .flat_map(|split| self.files(split).both())
            .find(|entry| entry.file_name == name || entry.compressed_name == name)
    }
}

impl fmt::Display for Family {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

/// The workspace's `data/` folder, as known when this crate was compiled.
pub fn workspace_data_folder() -> PathBuf {
    Path::new(env!("CARGO_MANIFEST_DIR"))
        .join("..")
        .join("..")
        .join("data")
}

/// Whether `folder` directly holds a file of the split files (raw or `.gz`; anything under those
/// names counts, so that a FIFO or folder there is refused when opened rather than skipped).
pub(crate) fn folder_holds_dataset_files(folder: &Path) -> bool {
    Split::ALL.into_iter().any(|split| {
        let (images, labels) = mnist_file_names(split);
        [images, labels].into_iter().any(|name| {
            entry_exists(&folder.join(name)) || entry_exists(&folder.join(format!("{name}.gz")))
        })
    })
}

/// Where a data folder came from, for error messages.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[non_exhaustive]
pub enum DataFolderOrigin {
    /// Given by the caller (e.g. `--data`).
    Given,
    /// The `RECLAIM_DATA` environment variable.
    Environment,
    /// The workspace's `data/` folder (nothing given).
    Workspace,
}

impl DataFolderOrigin {
    /// `""` for a given folder, else a note saying where it came from.
    pub(crate) fn describe(self) -> &'static str {
        match self {
            DataFolderOrigin::Given => "",
            DataFolderOrigin::Environment => " (from RECLAIM_DATA)",
            DataFolderOrigin::Workspace => " (the workspace's data folder)",
        }
    }
}

/// The data folder before the family's subfolder: `argument`, else `RECLAIM_DATA` if set and
/// not empty, else the workspace's `data/`.
pub(crate) fn data_root(argument: Option<&Path>) -> (PathBuf, DataFolderOrigin) {
    match argument {
        Some(folder) => (folder.to_path_buf(), DataFolderOrigin::Given),
        None => match std::env::var_os(DATA_FOLDER_VARIABLE) {
            Some(folder) if !folder.is_empty() => {
                (PathBuf::from(folder), DataFolderOrigin::Environment)
            }
            _ => (workspace_data_folder(), DataFolderOrigin::Workspace),
        },
    }
}

/// The folder holding a family's files, found without configuration.
///
/// The data folder is `argument` if given, else the environment variable `RECLAIM_DATA` if set
/// and not empty, else the workspace's `data/` folder. The family's folder is that folder joined
/// with [`Family::folder_name`] (`data/mnist` for MNIST), except when the given folder already
/// holds the family's files itself (so both `--data data` and `--data data/mnist` work).
///
/// This never fails, so a later error names the family subfolder even when the data is in
/// neither place; to read data, prefer [`resolve_data_folder`], whose error names both.
pub fn default_data_folder(argument: Option<&Path>, family: Family) -> PathBuf {
    let (root, _) = data_root(argument);
    if folder_holds_dataset_files(&root) {
        root
    } else {
        root.join(family.folder_name())
    }
}

/// The folder holding a family's files (as [`default_data_folder`] chooses it), checked to hold
/// some: [`DatasetError::DataFolderNotFound`] otherwise, naming the folder as given (and where it
/// came from) and both places looked in, e.g. `DIR (looked in DIR and DIR/mnist): no mnist
/// files (train-images-idx3-ubyte[.gz], ...)`.
pub fn resolve_data_folder(argument: Option<&Path>, family: Family) -> Result<PathBuf> {
    let (root, origin) = data_root(argument);
    if folder_holds_dataset_files(&root) {
        return Ok(root);
    }
    let family_folder = root.join(family.folder_name());
    if folder_holds_dataset_files(&family_folder) {
        return Ok(family_folder);
    }
    Err(DatasetError::DataFolderNotFound {
        given: root,
        origin,
        family_folder,
        family,
    })
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn catalogue_entries_are_consistent() {
        for family in Family::ALL {
            assert_eq!(Family::from_name(family.name()), Some(family));
            assert_eq!(family.class_names().len(), family.number_of_classes());
            assert!(!family.mirrors().is_empty());
            for mirror in family.mirrors() {
                assert!(mirror.ends_with('/'), "{mirror}");
            }
            for split in Split::ALL {
                let files = family.files(split);
                for entry in files.both() {
                    assert_eq!(format!("{}.gz", entry.file_name), entry.compressed_name);
                    if let Some(sha256) = entry.sha256 {
                        assert_eq!(sha256.len(), 64);
                        assert!(sha256.bytes().all(|b| b.is_ascii_hexdigit()));
                    }
                    assert_eq!(family.file_named(entry.compressed_name), Some(entry));
                }
            }
        }
        assert_eq!(Family::Mnist.files(Split::Train).count, 60_000);
        assert_eq!(Family::Mnist.files(Split::Test).count, 10_000);
        assert_eq!(
            Family::from_name("Fashion_MNIST"),
            Some(Family::FashionMnist)
        );
        assert_eq!(Family::from_name("emnist"), None);
    }

    #[test]
    fn argument_is_used_as_root_or_as_family_folder() {
        let root = tempfile::tempdir().unwrap();
        assert_eq!(
            default_data_folder(Some(root.path()), Family::Kmnist),
            root.path().join("kmnist")
        );
        std::fs::write(root.path().join("t10k-labels-idx1-ubyte.gz"), b"").unwrap();
        assert_eq!(
            default_data_folder(Some(root.path()), Family::Kmnist),
            root.path()
        );
    }

    #[test]
    fn resolving_names_the_folder_given_and_both_places_looked_in() {
        let root = tempfile::tempdir().unwrap();
        let error = resolve_data_folder(Some(root.path()), Family::Mnist).unwrap_err();
        let family_folder = root.path().join("mnist");
        assert!(
            matches!(&error, DatasetError::DataFolderNotFound { given, family_folder: looked, origin: DataFolderOrigin::Given, .. }
                if given == root.path() && looked == &family_folder),
            "{error:?}"
        );
        let text = error.to_string();
        assert_eq!(
            text,
            format!(
                "{} (looked in {} and {}): no mnist files (train-images-idx3-ubyte[.gz], ...)",
                root.path().display(),
                root.path().display(),
                family_folder.display()
            )
        );
        std::fs::create_dir(&family_folder).unwrap();
        std::fs::write(family_folder.join("train-labels-idx1-ubyte.gz"), b"").unwrap();
        assert_eq!(
            resolve_data_folder(Some(root.path()), Family::Mnist).unwrap(),
            family_folder
        );
        std::fs::write(root.path().join("t10k-images-idx3-ubyte"), b"").unwrap();
        assert_eq!(
            resolve_data_folder(Some(root.path()), Family::Mnist).unwrap(),
            root.path()
        );
    }

    #[test]
    fn workspace_data_folder_holds_the_vendored_mnist() {
        let folder = workspace_data_folder().join("mnist");
        assert!(
            folder.join("train-images-idx3-ubyte.gz").is_file(),
            "{}",
            folder.display()
        );
    }
}
