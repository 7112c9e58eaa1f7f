//! The dataset, checked before the first step: both splits hold images, of one shape, that the
//! model takes; every label is one of the model's classes; and the files' fingerprint, which a
//! resumed run must share with its checkpoint.

use reclaim_dataset::ImageDataset;
use reclaim_loader::ImageShape;
use reclaim_model::ClassifierConfig;

use super::config::TrainConfig;
use crate::data::{SplitRole, TrainingData, given_path};
use crate::{DataFingerprint, TrainError};

/// What a run needs to know of its dataset before the baseline: the splits' sizes and image
/// shape (for the warm-up's shapes) and the fingerprint (for the run's identity).
pub(super) struct CheckedDataset {
    /// Samples of the training split.
    pub training_len: usize,
    /// Samples of the test split.
    pub test_len: usize,
    /// The images' shape.
    pub shape: ImageShape,
    /// Every file's size and checksum.
    pub fingerprint: DataFingerprint,
}

impl CheckedDataset {
    /// Opens the splits with the run's storage, checks them against the model
    /// ([`check_splits`]) and fingerprints them, then closes them again: they are opened anew
    /// after the baseline, where their memory is measured.
    pub(super) fn open_and_check(config: &TrainConfig) -> Result<Self, TrainError> {
        let data = TrainingData::open(config.dataset, &config.data_folder, config.storage)?;
        check_splits(&data, &config.model)?;
        let shape = data.image_shape();
        // The loaders' settings against the images, before the run folder is touched.
        config.pixel_format().validate_for(shape)?;
        config.augmentation.validate_for(shape)?;
        Ok(CheckedDataset {
            training_len: data.train().len(),
            test_len: data.test().len(),
            shape,
            fingerprint: data.fingerprint(),
        })
    }
}

/// Checks that both splits hold images, of the same shape, that the model takes, with labels
/// below its number of classes: each a typed error naming the file.
pub(super) fn check_splits(
    data: &TrainingData,
    model: &ClassifierConfig,
) -> Result<(), TrainError> {
    for role in [SplitRole::Train, SplitRole::Test] {
        if data.split(role).is_empty() {
            return Err(TrainError::EmptySplit {
                images: data.images_path(role),
            });
        }
    }
    let (train, test) = (data.train().image_shape(), data.test().image_shape());
    if train != test {
        return Err(TrainError::SplitShapesDiffer {
            train_images: data.images_path(SplitRole::Train),
            train_height: train.height,
            train_width: train.width,
            test_images: data.images_path(SplitRole::Test),
            test_height: test.height,
            test_width: test.width,
        });
    }
    check_model_input(data, model, train)?;
    for role in [SplitRole::Train, SplitRole::Test] {
        check_labels(data, role, model.number_of_classes())?;
    }
    Ok(())
}

/// [`TrainError::InputSizeMismatch`] when the model's inputs are not the images' values, and
/// [`TrainError::ImageShapeMismatch`] when a convolutional model expects another shape.
fn check_model_input(
    data: &TrainingData,
    model: &ClassifierConfig,
    shape: ImageShape,
) -> Result<(), TrainError> {
    let pixels = shape.pixels().unwrap_or(usize::MAX);
    if pixels != model.input_size() {
        return Err(TrainError::InputSizeMismatch {
            images: data.images_path(SplitRole::Train),
            channels: shape.channels,
            height: shape.height,
            width: shape.width,
            pixels,
            model_inputs: model.input_size(),
        });
    }
    if let ClassifierConfig::Cnn(network) = model {
        let expected = ImageShape::new(network.channels, network.height, network.width);
        if expected != shape {
            return Err(TrainError::ImageShapeMismatch {
                images: data.images_path(SplitRole::Train),
                images_shape: shape.to_string(),
                model_shape: expected.to_string(),
            });
        }
    }
    Ok(())
}

/// [`TrainError::LabelOutOfRange`] for the first label of the split not below `classes`.
fn check_labels(data: &TrainingData, role: SplitRole, classes: usize) -> Result<(), TrainError> {
    if let Some(split) = data.idx_split(role) {
        return check_idx_labels(split, classes);
    }
    // CIFAR's files were checked on open: every label is below the variant's classes, so the
    // records need reading (every page of a mapped file) only for a model with fewer outputs.
    if classes >= data.number_of_classes() {
        return Ok(());
    }
    let source = data.split(role);
    let label_of = |index| source.borrow_sample(index).map_or(0, |(_, label)| label);
    match (0..source.len()).find(|&index| label_of(index) >= classes as i64) {
        None => Ok(()),
        Some(index) => Err(TrainError::LabelOutOfRange {
            labels: data.images_path(role),
            index,
            label: u8::try_from(label_of(index)).unwrap_or(u8::MAX),
            classes,
        }),
    }
}

/// The IDX labels file's first label not below `classes`, naming the labels file.
fn check_idx_labels(split: &ImageDataset, classes: usize) -> Result<(), TrainError> {
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

    use reclaim_model::MlpConfig;
    use std::path::Path;

    fn open(folder: &Path) -> TrainingData {
        TrainingData::Idx(DatasetStorage::owned().open_splits(folder).unwrap())
    }

    fn mlp(inputs: usize, number_of_classes: usize) -> ClassifierConfig {
        ClassifierConfig::Mlp(MlpConfig {
            input_size: inputs,
            number_of_classes,
            ..MlpConfig::new()
        })
    }

    fn model(inputs: usize) -> ClassifierConfig {
        mlp(inputs, 10)
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
            message.contains("train-images-idx3-ubyte") && message.contains("1 x 32 x 32"),
            "{message}"
        );
    }

    #[test]
    fn a_test_split_of_another_shape_is_refused() {
        let folder = tempfile::tempdir().unwrap();
        write_tiny_dataset(folder.path(), [4, 4], 5, 2);
        reclaim_dataset::idx::write_idx(
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
        reclaim_dataset::idx::write_idx(
            folder.path().join("t10k-labels-idx1-ubyte"),
            &[2],
            &[1u8, 7],
        )
        .unwrap();
        let five_classes = mlp(16, 5);
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
