//! What a run's data is ([`TrainingDataset`]: a dataset of the catalogue, or a pack), and what
//! each gets unless the caller says otherwise: how its pixels are scaled, the model sized to
//! its images and classes, and its usual augmentation.

use reclaim_dataset::DatasetName;
use reclaim_dataset::pack::ChannelStatistics;
use reclaim_loader::{
    Augmentation, ChannelNormalization, HorizontalFlip, ImageShape, Normalization, PixelFormat,
    RandomCrop,
};
use reclaim_model::{ClassifierConfig, ConvNetConfig, MlpConfig, ModelKind};
use serde::{Deserialize, Serialize};

/// What a run trains on, and so how `data_folder` is read.
#[derive(Clone, Copy, Debug, PartialEq, Eq)]
pub enum TrainingDataset {
    /// A dataset of the catalogue, in its own files (IDX or CIFAR) in the data folder.
    Catalogue(DatasetName),
    /// A pack (`reclaim pack`, or `reclaim train --data FOLDER --image-size HxW`): the data
    /// "folder" is the pack file.
    Pack,
}

impl TrainingDataset {
    /// Whether the images are photos (CIFAR or a pack) rather than strokes on a blank
    /// background (the MNIST family).
    pub fn is_photos(self) -> bool {
        match self {
            TrainingDataset::Catalogue(dataset) => dataset.cifar_variant().is_some(),
            TrainingDataset::Pack => true,
        }
    }
}

impl From<DatasetName> for TrainingDataset {
    fn from(dataset: DatasetName) -> Self {
        TrainingDataset::Catalogue(dataset)
    }
}

impl std::fmt::Display for TrainingDataset {
    fn fmt(&self, formatter: &mut std::fmt::Formatter<'_>) -> std::fmt::Result {
        match self {
            TrainingDataset::Catalogue(dataset) => write!(formatter, "{dataset}"),
            TrainingDataset::Pack => formatter.write_str("pack"),
        }
    }
}

/// In `config.json` as the catalogue name (`"mnist"`, as before packs existed) or `"pack"`.
impl Serialize for TrainingDataset {
    fn serialize<S: serde::Serializer>(&self, serializer: S) -> Result<S::Ok, S::Error> {
        match self {
            TrainingDataset::Catalogue(dataset) => dataset.serialize(serializer),
            TrainingDataset::Pack => serializer.serialize_str("pack"),
        }
    }
}

/// A pack's per-channel statistics, as `--standardize` uses them: 1 or 3 channels, each mean
/// in `[0, 1]` and each standard deviation in `[1/255, 1]` (a constant channel is divided by one
/// grey level rather than by zero).
#[derive(Clone, Copy, Debug, PartialEq, Serialize, Deserialize)]
pub struct PackStatistics {
    channels: u8,
    mean: [f32; 3],
    standard_deviation: [f32; 3],
}

impl PackStatistics {
    /// The statistics a pack's manifest recorded, if they are for 1 or 3 channels and in
    /// `[0, 1]` (as `f32`: a manifest's `1e300` is refused, not turned into infinity).
    pub fn from_manifest(statistics: &ChannelStatistics) -> Option<Self> {
        let channels = statistics.mean.len();
        if !matches!(channels, 1 | 3) || statistics.standard_deviation.len() != channels {
            return None;
        }
        let mut packed = PackStatistics {
            channels: channels as u8,
            mean: [0.0; 3],
            standard_deviation: [1.0; 3],
        };
        for channel in 0..channels {
            let (mean, deviation) = (
                statistics.mean[channel],
                statistics.standard_deviation[channel],
            );
            let (mean, deviation) = (mean as f32, deviation as f32);
            if !(0.0..=1.0).contains(&mean) || !(0.0..=1.0).contains(&deviation) {
                return None;
            }
            packed.mean[channel] = mean;
            packed.standard_deviation[channel] = deviation.max(1.0 / 255.0);
        }
        Some(packed)
    }

    fn normalization(self) -> ChannelNormalization {
        let statistics: Vec<Normalization> = (0..usize::from(self.channels))
            .map(|channel| Normalization {
                mean: self.mean[channel],
                standard_deviation: self.standard_deviation[channel],
            })
            .collect();
        ChannelNormalization::new(&statistics)
            .expect("PackStatistics holds 1 or 3 finite channels with positive deviations")
    }
}

/// What pixels become before they reach the model.
#[derive(Clone, Copy, Debug, Default, PartialEq, Serialize, Deserialize)]
pub enum PixelScaling {
    /// `pixel / 255`, in `[0, 1]` (the PyTorch recipe's `transforms.ToTensor()`).
    #[default]
    UnitRange,
    /// `(pixel / 255 - 0.1307) / 0.3081`, MNIST's mean and standard deviation (one-channel
    /// images).
    MnistStandardized,
    /// `(pixel / 255 - mean[c]) / std[c]` with CIFAR-10's per-channel statistics
    /// ([`ChannelNormalization::CIFAR10`]; three-channel images).
    Cifar10Standardized,
    /// `(pixel / 255 - mean[c]) / std[c]` with the statistics a pack recorded of its training
    /// split.
    PackStandardized(PackStatistics),
}

impl PixelScaling {
    /// Standardized with the statistics of `dataset`'s family: CIFAR-10's for CIFAR, MNIST's
    /// otherwise.
    pub fn standardized_for(dataset: DatasetName) -> Self {
        if dataset.cifar_variant().is_some() {
            PixelScaling::Cifar10Standardized
        } else {
            PixelScaling::MnistStandardized
        }
    }

    /// What the loaders make of the pixels.
    pub fn pixel_format(self) -> PixelFormat {
        match self {
            PixelScaling::UnitRange => PixelFormat::UnitF32,
            PixelScaling::MnistStandardized => PixelFormat::NormalizedF32(Normalization::MNIST),
            PixelScaling::Cifar10Standardized => {
                PixelFormat::ChannelNormalizedF32(ChannelNormalization::CIFAR10)
            }
            PixelScaling::PackStandardized(statistics) => {
                PixelFormat::ChannelNormalizedF32(statistics.normalization())
            }
        }
    }
}

/// The model of `kind` sized for `dataset`: its images' values (or shape, for the CNN) as
/// inputs, its classes as outputs; the rest of the sizes are the model's defaults.
///
/// ```
/// use reclaim_dataset::DatasetName;
/// use reclaim_model::{ClassifierConfig, ModelKind};
/// use reclaim_train::model_for_dataset;
///
/// let mlp = model_for_dataset(DatasetName::Mnist, ModelKind::Mlp);
/// assert_eq!((mlp.input_size(), mlp.number_of_classes()), (784, 10));
/// let cnn = model_for_dataset(DatasetName::Cifar100, ModelKind::Cnn);
/// assert_eq!((cnn.input_size(), cnn.number_of_classes()), (3 * 32 * 32, 100));
/// assert!(matches!(cnn, ClassifierConfig::Cnn(_)));
/// ```
pub fn model_for_dataset(dataset: DatasetName, kind: ModelKind) -> ClassifierConfig {
    let (height, width) = dataset.image_size();
    model_for_images(
        ImageShape::new(dataset.channels(), height, width),
        dataset.number_of_classes(),
        kind,
    )
}

/// The model of `kind` for images of `shape` in `classes` classes (a pack's, say): the MLP
/// takes every value of an image, the CNN its shape; the rest of the sizes are the model's
/// defaults.
///
/// ```
/// use reclaim_loader::ImageShape;
/// use reclaim_model::{ClassifierConfig, ModelKind};
/// use reclaim_train::model_for_images;
///
/// let cnn = model_for_images(ImageShape::new(3, 64, 48), 7, ModelKind::Cnn);
/// assert_eq!((cnn.input_size(), cnn.number_of_classes()), (3 * 64 * 48, 7));
/// ```
pub fn model_for_images(shape: ImageShape, classes: usize, kind: ModelKind) -> ClassifierConfig {
    let ImageShape {
        channels,
        height,
        width,
    } = shape;
    match kind {
        ModelKind::Mlp => ClassifierConfig::Mlp(
            MlpConfig::new()
                .with_input_size(channels * height * width)
                .with_number_of_classes(classes),
        ),
        ModelKind::Cnn => ClassifierConfig::Cnn(ConvNetConfig {
            channels,
            height,
            width,
            number_of_classes: classes,
            ..ConvNetConfig::new()
        }),
    }
}

/// The usual training augmentation of `dataset`: [`Augmentation::CIFAR`] (crop with padding 4,
/// horizontal flip) for CIFAR, [`Augmentation::MNIST`] (crop with padding 2, no flip) for the
/// MNIST family.
pub fn standard_augmentation(dataset: DatasetName) -> Augmentation {
    if dataset.cifar_variant().is_some() {
        Augmentation::CIFAR
    } else {
        Augmentation::MNIST
    }
}

/// The usual training augmentation of photos of `shape` (a pack's): a random crop of the
/// image's size from the image padded by an eighth of its shorter side (4 for 32 x 32, as
/// CIFAR's recipe), then a random horizontal flip.
///
/// ```
/// use reclaim_loader::{HorizontalFlip, ImageShape, RandomCrop};
/// use reclaim_train::photo_augmentation;
///
/// let augmentation = photo_augmentation(ImageShape::new(3, 64, 96));
/// assert_eq!(augmentation.crop, Some(RandomCrop { padding: 8 }));
/// assert_eq!(augmentation.horizontal_flip, HorizontalFlip::Random);
/// ```
pub fn photo_augmentation(shape: ImageShape) -> Augmentation {
    Augmentation {
        crop: Some(RandomCrop {
            padding: (shape.height.min(shape.width) / 8).max(1),
        }),
        horizontal_flip: HorizontalFlip::Random,
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[test]
    fn pack_statistics_outside_the_unit_range_or_of_two_channels_are_refused() {
        let statistics = |mean: Vec<f64>, deviation: Vec<f64>| ChannelStatistics {
            mean,
            standard_deviation: deviation,
        };
        let flat = PackStatistics::from_manifest(&statistics(vec![0.5], vec![0.0])).unwrap();
        // A constant channel is divided by one grey level, not by zero.
        assert_eq!(flat.standard_deviation[0], 1.0 / 255.0);
        assert!(matches!(
            PixelScaling::PackStandardized(flat).pixel_format(),
            PixelFormat::ChannelNormalizedF32(_)
        ));
        for (mean, deviation) in [
            (vec![1e300; 3], vec![0.2; 3]),
            (vec![0.5; 3], vec![1e39; 3]),
            (vec![f64::NAN], vec![0.2]),
            (vec![0.5; 2], vec![0.2; 2]),
            (vec![0.5; 3], vec![0.2; 1]),
        ] {
            assert_eq!(
                PackStatistics::from_manifest(&statistics(mean, deviation)),
                None
            );
        }
    }
}
