//! What each dataset of the catalogue gets unless the caller says otherwise: how its pixels are
//! scaled, the model sized to its images and classes, and its usual augmentation.

use reclaim_dataset::DatasetName;
use reclaim_loader::{Augmentation, ChannelNormalization, Normalization, PixelFormat};
use reclaim_model::{ClassifierConfig, ConvNetConfig, MlpConfig, ModelKind};
use serde::{Deserialize, Serialize};

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
    let channels = dataset.channels();
    let (height, width) = dataset.image_size();
    let classes = dataset.number_of_classes();
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
