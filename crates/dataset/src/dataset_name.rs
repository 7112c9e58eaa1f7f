//! [`DatasetName`]: every dataset of the catalogue (the MNIST family and CIFAR), for a
//! `--dataset` option, and where each one's files are.

use std::fmt;
use std::path::{Path, PathBuf};
use std::str::FromStr;

use crate::cifar_variant::{CIFAR_CHANNELS, CIFAR_IMAGE_HEIGHT, CIFAR_IMAGE_WIDTH, CifarVariant};
use crate::error::{DatasetError, Result};
use crate::family::{Family, Split, data_root, folder_holds_dataset_files, resolve_data_folder};
use crate::open::entry_exists;

/// A dataset of the catalogue: one of the MNIST [`Family`] (four IDX files, 28 x 28 grey) or a
/// [`CifarVariant`] (record files, 3 x 32 x 32 colour).
///
/// Parses from the names [`DatasetName::name`] gives (case-insensitive, `_` for `-`, the dash
/// optional: `cifar10`, `Fashion_MNIST`), so it can back a `--dataset` option.
///
/// ```
/// use reclaim_dataset::{DatasetName, Family, cifar::CifarVariant};
///
/// let dataset: DatasetName = "cifar-100".parse()?;
/// assert_eq!(dataset.cifar_variant(), Some(CifarVariant::Cifar100));
/// assert_eq!((dataset.channels(), dataset.image_size()), (3, (32, 32)));
/// assert_eq!("mnist".parse::<DatasetName>()?.family(), Some(Family::Mnist));
/// assert!("emnist".parse::<DatasetName>().is_err());
/// # Ok::<(), reclaim_dataset::DatasetError>(())
/// ```
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash)]
#[cfg_attr(feature = "serde", derive(serde::Serialize, serde::Deserialize))]
#[non_exhaustive]
pub enum DatasetName {
    /// MNIST's handwritten digits.
    Mnist,
    /// Fashion-MNIST.
    FashionMnist,
    /// KMNIST.
    Kmnist,
    /// CIFAR-10.
    Cifar10,
    /// CIFAR-100.
    Cifar100,
}

/// The two formats a dataset comes in.
enum Kind {
    Family(Family),
    Cifar(CifarVariant),
}

impl DatasetName {
    /// Every dataset of the catalogue.
    pub const ALL: [DatasetName; 5] = [
        DatasetName::Mnist,
        DatasetName::FashionMnist,
        DatasetName::Kmnist,
        DatasetName::Cifar10,
        DatasetName::Cifar100,
    ];

    /// `mnist`, `fashion-mnist`, `kmnist`, `cifar-10` or `cifar-100`: also its folder under the
    /// data folder.
    pub fn name(self) -> &'static str {
        match self.kind() {
            Kind::Family(family) => family.name(),
            Kind::Cifar(variant) => variant.name(),
        }
    }

    /// The dataset named `name` (see the type's documentation for the spellings accepted).
    pub fn from_name(name: &str) -> Option<Self> {
        if let Some(family) = Family::from_name(name) {
            return Some(family.into());
        }
        let squeezed: String = name
            .to_ascii_lowercase()
            .chars()
            .filter(|character| !matches!(character, '-' | '_'))
            .collect();
        if let Some(family) = Family::ALL
            .into_iter()
            .find(|family| family.name().replace('-', "") == squeezed)
        {
            return Some(family.into());
        }
        CifarVariant::from_name(name).map(Into::into)
    }

    fn kind(self) -> Kind {
        match self {
            DatasetName::Mnist => Kind::Family(Family::Mnist),
            DatasetName::FashionMnist => Kind::Family(Family::FashionMnist),
            DatasetName::Kmnist => Kind::Family(Family::Kmnist),
            DatasetName::Cifar10 => Kind::Cifar(CifarVariant::Cifar10),
            DatasetName::Cifar100 => Kind::Cifar(CifarVariant::Cifar100),
        }
    }

    /// The MNIST-family dataset this is, if it is one.
    pub fn family(self) -> Option<Family> {
        match self.kind() {
            Kind::Family(family) => Some(family),
            Kind::Cifar(_) => None,
        }
    }

    /// The CIFAR variant this is, if it is one.
    pub fn cifar_variant(self) -> Option<CifarVariant> {
        match self.kind() {
            Kind::Cifar(variant) => Some(variant),
            Kind::Family(_) => None,
        }
    }

    /// The folder it lives in under the data folder (same as [`DatasetName::name`]).
    pub fn folder_name(self) -> &'static str {
        self.name()
    }

    /// Colour channels: 1 for the MNIST family, 3 for CIFAR.
    pub fn channels(self) -> usize {
        if self.cifar_variant().is_some() {
            CIFAR_CHANNELS
        } else {
            1
        }
    }

    /// Image height and width in pixels: 28 x 28 or 32 x 32.
    pub fn image_size(self) -> (usize, usize) {
        match self.family() {
            Some(family) => family.image_size(),
            None => (CIFAR_IMAGE_HEIGHT, CIFAR_IMAGE_WIDTH),
        }
    }

    /// The number of classes (CIFAR-100: the fine ones, 100).
    pub fn number_of_classes(self) -> usize {
        self.class_names().len()
    }

    /// The class names in label order (CIFAR-100: the fine ones).
    pub fn class_names(self) -> &'static [&'static str] {
        match self.kind() {
            Kind::Family(family) => family.class_names(),
            Kind::Cifar(variant) => variant.class_names(),
        }
    }

    /// The terms the data is distributed under.
    pub fn license(self) -> &'static str {
        match self.kind() {
            Kind::Family(family) => family.license(),
            Kind::Cifar(variant) => variant.license(),
        }
    }

    /// The first file of the training split, for messages.
    pub(crate) fn example_file_name(self) -> &'static str {
        match self.kind() {
            Kind::Family(_) => "train-images-idx3-ubyte[.gz]",
            Kind::Cifar(variant) => variant.file_names(Split::Train)[0],
        }
    }
}

impl From<Family> for DatasetName {
    fn from(family: Family) -> Self {
        match family {
            Family::Mnist => DatasetName::Mnist,
            Family::FashionMnist => DatasetName::FashionMnist,
            Family::Kmnist => DatasetName::Kmnist,
        }
    }
}

impl From<CifarVariant> for DatasetName {
    fn from(variant: CifarVariant) -> Self {
        match variant {
            CifarVariant::Cifar10 => DatasetName::Cifar10,
            CifarVariant::Cifar100 => DatasetName::Cifar100,
        }
    }
}

impl FromStr for DatasetName {
    type Err = DatasetError;

    /// [`DatasetName::from_name`], or [`DatasetError::UnknownDatasetName`].
    fn from_str(name: &str) -> Result<Self> {
        DatasetName::from_name(name).ok_or_else(|| DatasetError::UnknownDatasetName {
            name: name.to_owned(),
        })
    }
}

impl fmt::Display for DatasetName {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

/// Whether `folder` holds a file of `variant`'s splits, directly or in the archive's folder
/// (anything under those names counts, so that a FIFO there is refused when opened).
fn folder_holds_cifar_files(folder: &Path, variant: CifarVariant) -> bool {
    let unpacked = folder.join(variant.archive().folder_in_archive);
    Split::ALL
        .into_iter()
        .flat_map(|split| variant.file_names(split))
        .any(|name| entry_exists(&folder.join(name)) || entry_exists(&unpacked.join(name)))
}

fn folder_holds_files_of(folder: &Path, dataset: DatasetName) -> bool {
    match dataset.cifar_variant() {
        Some(variant) => folder_holds_cifar_files(folder, variant),
        None => folder_holds_dataset_files(folder),
    }
}

/// The folder holding a dataset's files, found without configuration (as
/// [`crate::default_data_folder`] does for the MNIST family): the data folder is `argument`,
/// else `RECLAIM_DATA`, else the workspace's `data/`; the dataset's folder is that folder if it
/// holds the dataset's files itself, else its subfolder [`DatasetName::folder_name`]
/// (`data/cifar-10`). A CIFAR folder's files may be directly in it or in the folder the archive
/// unpacks to (`cifar-10-batches-bin/`); [`crate::CifarDataset::open_mapped`] looks in both.
pub fn default_dataset_folder(argument: Option<&Path>, dataset: DatasetName) -> PathBuf {
    let (root, _) = data_root(argument);
    if folder_holds_files_of(&root, dataset) {
        root
    } else {
        root.join(dataset.folder_name())
    }
}

/// The folder holding a dataset's files (as [`default_dataset_folder`] chooses it), checked to
/// hold some. For the MNIST family this is [`resolve_data_folder`] (and its
/// [`DatasetError::DataFolderNotFound`]); for CIFAR, [`DatasetError::DatasetFolderNotFound`]
/// names the folder as given, where it came from, and both places looked in.
pub fn resolve_dataset_folder(argument: Option<&Path>, dataset: DatasetName) -> Result<PathBuf> {
    if let Some(family) = dataset.family() {
        return resolve_data_folder(argument, family);
    }
    let (root, origin) = data_root(argument);
    if folder_holds_files_of(&root, dataset) {
        return Ok(root);
    }
    let dataset_folder = root.join(dataset.folder_name());
    if folder_holds_files_of(&dataset_folder, dataset) {
        return Ok(dataset_folder);
    }
    Err(DatasetError::DatasetFolderNotFound {
        given: root,
        origin,
        dataset_folder,
        dataset,
    })
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::family::DataFolderOrigin;

    #[test]
    fn names_round_trip_and_unknown_names_are_typed_errors() {
        for dataset in DatasetName::ALL {
            assert_eq!(dataset.name().parse::<DatasetName>().unwrap(), dataset);
            assert_eq!(dataset.to_string(), dataset.name());
            assert_eq!(dataset.class_names().len(), dataset.number_of_classes());
        }
        for (text, expected) in [
            ("CIFAR10", DatasetName::Cifar10),
            ("cifar_100", DatasetName::Cifar100),
            ("FashionMNIST", DatasetName::FashionMnist),
            ("fashion", DatasetName::FashionMnist),
        ] {
            assert_eq!(text.parse::<DatasetName>().unwrap(), expected, "{text}");
        }
        let error = "svhn".parse::<DatasetName>().unwrap_err();
        assert!(
            matches!(&error, DatasetError::UnknownDatasetName { name } if name == "svhn"),
            "{error:?}"
        );
        assert!(error.to_string().contains("cifar-100"), "{error}");
        assert_eq!(DatasetName::Cifar10.channels(), 3);
        assert_eq!(DatasetName::Kmnist.channels(), 1);
        assert_eq!(DatasetName::Mnist.image_size(), (28, 28));
    }

    #[test]
    fn a_cifar_folder_is_resolved_or_both_places_are_named() {
        let root = tempfile::tempdir().unwrap();
        let error = resolve_dataset_folder(Some(root.path()), DatasetName::Cifar10).unwrap_err();
        let dataset_folder = root.path().join("cifar-10");
        assert!(
            matches!(&error, DatasetError::DatasetFolderNotFound { given, dataset_folder: looked, origin: DataFolderOrigin::Given, dataset: DatasetName::Cifar10 }
                if given == root.path() && looked == &dataset_folder),
            "{error:?}"
        );
        assert!(error.to_string().contains("data_batch_1.bin"), "{error}");
        assert_eq!(
            default_dataset_folder(Some(root.path()), DatasetName::Cifar10),
            dataset_folder
        );
        let unpacked = dataset_folder.join("cifar-10-batches-bin");
        std::fs::create_dir_all(&unpacked).unwrap();
        std::fs::write(unpacked.join("test_batch.bin"), b"").unwrap();
        assert_eq!(
            resolve_dataset_folder(Some(root.path()), DatasetName::Cifar10).unwrap(),
            dataset_folder
        );
        std::fs::write(root.path().join("train.bin"), b"").unwrap();
        assert_eq!(
            resolve_dataset_folder(Some(root.path()), DatasetName::Cifar100).unwrap(),
            root.path()
        );
        // The MNIST family keeps its own error.
        assert!(matches!(
            resolve_dataset_folder(Some(root.path()), DatasetName::Mnist),
            Err(DatasetError::DataFolderNotFound { .. })
        ));
    }
}
