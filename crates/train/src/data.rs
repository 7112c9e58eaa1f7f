//! [`TrainingData`]: the two splits of whatever a run trains on (an IDX pair of the MNIST family,
//! CIFAR-10/100 record files, or a pack of photos), as loader sources, with their fingerprint and
//! the paths that errors name.

use std::path::{Path, PathBuf};

use reclaim_dataset::{
    CifarSplits, DatasetFingerprint, DatasetSplits, ImageDataset, PackSplits,
    cifar::CifarFingerprint, idx::IdxArray, pack::PackFingerprint,
};
use reclaim_loader::{ImageShape, ImageSource};
use serde::{Deserialize, Serialize};

use crate::{DatasetStorage, TrainError, TrainingDataset};

/// Both splits of a run's dataset, opened with its [`DatasetStorage`]. Dropping it unmaps (or
/// frees) every file.
#[derive(Debug)]
#[expect(
    clippy::large_enum_variant,
    reason = "one value per run, made once and never moved in a loop"
)]
pub enum TrainingData {
    /// MNIST, Fashion-MNIST or KMNIST: four IDX files.
    Idx(DatasetSplits),
    /// CIFAR-10 or CIFAR-100: the record files of both splits.
    Cifar(CifarSplits),
    /// A pack: both splits in one file.
    Pack(PackSplits),
}

/// The identity of a run's dataset files: size and XXH3-128 of every file, as a resumed run
/// must find them again. Untagged in JSON, so that the checkpoints of runs made before CIFAR
/// existed (a bare [`DatasetFingerprint`]) still read.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(untagged)]
pub enum DataFingerprint {
    /// The four IDX files.
    Idx(DatasetFingerprint),
    /// The CIFAR record files.
    Cifar(CifarFingerprint),
    /// The pack file.
    Pack(PackFingerprint),
}

/// Which split, for [`TrainingData::split`].
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub(crate) enum SplitRole {
    Train,
    Test,
}

impl TrainingData {
    /// Opens both splits of `dataset` in `folder` (for a pack, the pack file) with `storage`.
    ///
    /// # Errors
    ///
    /// [`TrainError::Dataset`] for files missing, malformed or disagreeing (see
    /// reclaim-dataset's `DatasetSplits`, `CifarSplits` and `PackSplits`).
    pub fn open(
        dataset: impl Into<TrainingDataset>,
        folder: &Path,
        storage: DatasetStorage,
    ) -> Result<Self, TrainError> {
        match dataset.into() {
            TrainingDataset::Pack => Ok(TrainingData::Pack(storage.open_pack_splits(folder)?)),
            TrainingDataset::Catalogue(dataset) => match dataset.cifar_variant() {
                Some(variant) => Ok(TrainingData::Cifar(
                    storage.open_cifar_splits(folder, variant)?,
                )),
                None => Ok(TrainingData::Idx(storage.open_splits(folder)?)),
            },
        }
    }

    /// The training split, as a loader source.
    pub fn train(&self) -> &dyn ImageSource {
        self.split(SplitRole::Train)
    }

    /// The test split, as a loader source.
    pub fn test(&self) -> &dyn ImageSource {
        self.split(SplitRole::Test)
    }

    pub(crate) fn split(&self, role: SplitRole) -> &dyn ImageSource {
        match (self, role) {
            (TrainingData::Idx(splits), SplitRole::Train) => &splits.train,
            (TrainingData::Idx(splits), SplitRole::Test) => &splits.test,
            (TrainingData::Cifar(splits), SplitRole::Train) => &splits.train,
            (TrainingData::Cifar(splits), SplitRole::Test) => &splits.test,
            (TrainingData::Pack(splits), SplitRole::Train) => &splits.train,
            (TrainingData::Pack(splits), SplitRole::Test) => &splits.test,
        }
    }

    /// The images' shape (the training split's; the checks make the test split agree).
    pub fn image_shape(&self) -> ImageShape {
        self.train().image_shape()
    }

    /// The number of classes the dataset's labels are drawn from (MNIST's 10, CIFAR-100's
    /// 100): for IDX files, one more than the largest label present.
    pub fn number_of_classes(&self) -> usize {
        match self {
            TrainingData::Idx(splits) => splits
                .train
                .number_of_classes()
                .max(splits.test.number_of_classes()),
            TrainingData::Cifar(splits) => splits.train.number_of_classes(),
            TrainingData::Pack(splits) => splits.train.number_of_classes(),
        }
    }

    /// Every file's size and checksum.
    pub fn fingerprint(&self) -> DataFingerprint {
        match self {
            TrainingData::Idx(splits) => DataFingerprint::Idx(splits.fingerprint()),
            TrainingData::Cifar(splits) => DataFingerprint::Cifar(splits.fingerprint()),
            TrainingData::Pack(splits) => DataFingerprint::Pack(splits.fingerprint()),
        }
    }

    /// The file an error about a split's images names: the IDX images file as the user gave it
    /// (the `.gz` when it was decompressed), or the split's first CIFAR record file.
    pub(crate) fn images_path(&self, role: SplitRole) -> PathBuf {
        match self {
            TrainingData::Idx(splits) => given_path(idx_split(splits, role).images()).into(),
            TrainingData::Cifar(splits) => {
                let split = match role {
                    SplitRole::Train => &splits.train,
                    SplitRole::Test => &splits.test,
                };
                split
                    .file_paths()
                    .first()
                    .map_or_else(PathBuf::new, |path| path.to_path_buf())
            }
            TrainingData::Pack(splits) => splits.train.path().to_path_buf(),
        }
    }

    /// The IDX labels file of a split (CIFAR's labels are checked when its files are opened).
    pub(crate) fn idx_split(&self, role: SplitRole) -> Option<&ImageDataset> {
        match self {
            TrainingData::Idx(splits) => Some(idx_split(splits, role)),
            TrainingData::Cifar(_) | TrainingData::Pack(_) => None,
        }
    }
}

fn idx_split(splits: &DatasetSplits, role: SplitRole) -> &ImageDataset {
    match role {
        SplitRole::Train => &splits.train,
        SplitRole::Test => &splits.test,
    }
}

/// The path the user gave for an array: the `.gz` file when it was decompressed.
pub(crate) fn given_path(array: &IdxArray) -> &Path {
    array.compressed_source().unwrap_or(array.path())
}
