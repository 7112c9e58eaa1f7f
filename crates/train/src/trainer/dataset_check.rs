//! The dataset, checked before the first step: both splits hold images, of one shape, that the
//! model takes; every label is one of the model's classes; and the files' fingerprint, which a
//! resumed run must share with its checkpoint.

use std::path::Path;

use reclaim_dataset::{DatasetFingerprint, DatasetSplits, IdxArray, ImageDataset};
use reclaim_model::SimpleNnConfig;

use super::config::TrainConfig;
use crate::TrainError;

/// What a run needs to know of its dataset before the baseline: the splits' sizes (for the
/// warm-up's shapes) and the fingerprint (for the run's identity).
pub(super) struct CheckedDataset {
    /// Samples of the training split.
    pub training_len: usize,
    /// Samples of the test split.
    pub test_len: usize,
    /// The four files' sizes and checksums.
    pub fingerprint: DatasetFingerprint,
}

impl CheckedDataset {
    /// Opens the splits with the run's storage, checks them against the model
    /// ([`check_splits`]) and fingerprints them, then closes them again: they are opened anew
    /// after the baseline, where their memory is measured.
    pub(super) fn open_and_check(config: &TrainConfig) -> Result<Self, TrainError> {
        let splits = config.storage.open_splits(&config.data_folder)?;
        check_splits(&splits, &config.model)?;
        Ok(CheckedDataset {
            training_len: splits.train.len(),
            test_len: splits.test.len(),
            fingerprint: splits.fingerprint(),
        })
    }
}

/// The path the user gave for an array: the `.gz` file when it was decompressed.
fn given_path(array: &IdxArray) -> &Path {
    array.compressed_source().unwrap_or(array.path())
}

/// Checks that both splits hold images, of the same shape, of the model's input size, with
/// labels below its output size: each a typed error naming the file.
pub(super) fn check_splits(
    splits: &DatasetSplits,
    model: &SimpleNnConfig,
) -> Result<(), TrainError> {
    let (train, test) = (&splits.train, &splits.test);
    for split in [train, test] {
        if split.is_empty() {
            return Err(TrainError::EmptySplit {
                images: given_path(split.images()).to_path_buf(),
            });
        }
    }
    let shape = |split: &ImageDataset| (split.image_height(), split.image_width());
    if shape(train) != shape(test) {
        return Err(TrainError::SplitShapesDiffer {
            train_images: given_path(train.images()).to_path_buf(),
            train_height: train.image_height(),
            train_width: train.image_width(),
            test_images: given_path(test.images()).to_path_buf(),
            test_height: test.image_height(),
            test_width: test.image_width(),
        });
    }
    if train.pixels_per_image() != model.input_size {
        return Err(TrainError::InputSizeMismatch {
            images: given_path(train.images()).to_path_buf(),
            height: train.image_height(),
            width: train.image_width(),
            pixels: train.pixels_per_image(),
            model_inputs: model.input_size,
        });
    }
    for split in [train, test] {
        check_labels(split, model.number_of_classes)?;
    }
    Ok(())
}

/// [`TrainError::LabelOutOfRange`] for the first label of `split` not below `classes`.
fn check_labels(split: &ImageDataset, classes: usize) -> Result<(), TrainError> {
    let labels = split.labels();
    match labels
        .iter()
        .position(|&label| usize::from(label) >= classes)
    {
        None => Ok(()),
        Some(index) => Err(TrainError::LabelOutOfRange {
            labels: given_path(split.label_array()).to_path_buf(),
            index,
            label: labels[index],
            classes,
        }),
    }
}

#[cfg(test)]
mod tests {
    use super::*;
    use crate::DatasetStorage;
    use crate::test_support::write_tiny_dataset;

    fn open(folder: &Path) -> DatasetSplits {
        DatasetStorage::owned().open_splits(folder).unwrap()
    }

    fn model(inputs: usize) -> SimpleNnConfig {
        SimpleNnConfig {
            input_size: inputs,
            ..SimpleNnConfig::new()
        }
    }

    #[test]
    fn splits_that_fit_the_model_pass() {
        let folder = tempfile::tempdir().unwrap();
        write_tiny_dataset(folder.path(), [3, 4], 5, 2);
        check_splits(&open(folder.path()), &model(12)).unwrap();
    }

    #[test]
    fn an_image_size_the_model_does_not_take_names_the_file_and_both_sizes() {
        let folder = tempfile::tempdir().unwrap();
        write_tiny_dataset(folder.path(), [32, 32], 5, 2);
        let error = check_splits(&open(folder.path()), &model(784)).unwrap_err();
        let message = error.to_string();
        assert!(matches!(
            error,
            TrainError::InputSizeMismatch {
                pixels: 1024,
                model_inputs: 784,
                ..
            }
        ));
        assert!(
            message.contains("train-images-idx3-ubyte") && message.contains("32 x 32"),
            "{message}"
        );
    }

    #[test]
    fn a_test_split_of_another_shape_is_refused() {
        let folder = tempfile::tempdir().unwrap();
        write_tiny_dataset(folder.path(), [4, 4], 5, 2);
        reclaim_dataset::write_idx(
            folder.path().join("t10k-images-idx3-ubyte"),
            &[2, 2, 8],
            &[0u8; 32],
        )
        .unwrap();
        let error = check_splits(&open(folder.path()), &model(16)).unwrap_err();
        assert!(
            matches!(
                error,
                TrainError::SplitShapesDiffer {
                    test_height: 2,
                    test_width: 8,
                    ..
                }
            ),
            "{error}"
        );
        assert!(
            error.to_string().contains("t10k-images-idx3-ubyte"),
            "{error}"
        );
    }

    #[test]
    fn an_empty_split_is_refused() {
        let folder = tempfile::tempdir().unwrap();
        write_tiny_dataset(folder.path(), [4, 4], 0, 2);
        let error = check_splits(&open(folder.path()), &model(16)).unwrap_err();
        assert!(matches!(error, TrainError::EmptySplit { .. }), "{error}");
        assert!(
            error.to_string().contains("train-images-idx3-ubyte"),
            "{error}"
        );
    }

    #[test]
    fn a_label_beyond_the_model_outputs_names_the_file_and_sample() {
        // (A label beyond the dataset's own classes is refused when the file is opened; this
        // is a model with fewer outputs than the dataset has classes.)
        let folder = tempfile::tempdir().unwrap();
        write_tiny_dataset(folder.path(), [4, 4], 3, 2);
        reclaim_dataset::write_idx(
            folder.path().join("t10k-labels-idx1-ubyte"),
            &[2],
            &[1u8, 7],
        )
        .unwrap();
        let five_classes = SimpleNnConfig {
            number_of_classes: 5,
            ..model(16)
        };
        // The training split's labels are 0, 1, 2: the test split's 7 is the first out.
        let error = check_splits(&open(folder.path()), &five_classes).unwrap_err();
        assert!(
            matches!(
                error,
                TrainError::LabelOutOfRange {
                    index: 1,
                    label: 7,
                    classes: 5,
                    ..
                }
            ),
            "{error}"
        );
        assert!(
            error.to_string().contains("t10k-labels-idx1-ubyte"),
            "{error}"
        );
    }
}
