use std::fmt;
use std::str::FromStr;

use burn::module::Module;
use burn::tensor::{Device, Int, Tensor};
use serde::{Deserialize, Serialize};

use crate::{ConvNet, ConvNetConfig, Mlp, MlpConfig, ModelError, WeightFormat};

/// The architectures a [`Classifier`] can be.
#[derive(Clone, Copy, Debug, PartialEq, Eq, Hash, Serialize, Deserialize)]
#[serde(rename_all = "lowercase")]
pub enum ModelKind {
    /// The MLP, [`Mlp`] (`mlp`).
    Mlp,
    /// The convolutional network, [`ConvNet`] (`cnn`).
    Cnn,
}

impl ModelKind {
    /// Every kind, in the order messages list them.
    pub const ALL: [ModelKind; 2] = [ModelKind::Mlp, ModelKind::Cnn];

    /// The kind's name, as [`FromStr`] reads it and [`Display`](fmt::Display) writes it:
    /// `mlp` or `cnn`.
    pub fn name(self) -> &'static str {
        match self {
            ModelKind::Mlp => "mlp",
            ModelKind::Cnn => "cnn",
        }
    }
}

impl fmt::Display for ModelKind {
    fn fmt(&self, formatter: &mut fmt::Formatter<'_>) -> fmt::Result {
        formatter.write_str(self.name())
    }
}

impl FromStr for ModelKind {
    type Err = ModelError;

    /// The kind named exactly `name` (`mlp` or `cnn`).
    ///
    /// # Errors
    ///
    /// [`ModelError::UnknownModelKind`], naming `name` and the accepted names.
    fn from_str(name: &str) -> Result<ModelKind, ModelError> {
        ModelKind::ALL
            .into_iter()
            .find(|kind| kind.name() == name)
            .ok_or_else(|| ModelError::UnknownModelKind {
                given: name.to_owned(),
                accepted: &ModelKind::ALL,
            })
    }
}

/// The configuration of a [`Classifier`]: which architecture, and its sizes.
///
/// Serialized with the kind beside the sizes, e.g.
/// `{"kind":"cnn","channels":1,"height":28,"width":28,"number_of_classes":10,"filters":[32,64],"hidden_size":128}`.
#[derive(Clone, Debug, PartialEq, Eq, Serialize, Deserialize)]
#[serde(tag = "kind", rename_all = "lowercase")]
pub enum ClassifierConfig {
    /// A [`Mlp`].
    Mlp(MlpConfig),
    /// A [`ConvNet`].
    Cnn(ConvNetConfig),
}

impl ClassifierConfig {
    /// The default configuration of `kind` (both fit MNIST: 784 values, 10 classes).
    pub fn default_for(kind: ModelKind) -> ClassifierConfig {
        match kind {
            ModelKind::Mlp => ClassifierConfig::Mlp(MlpConfig::new()),
            ModelKind::Cnn => ClassifierConfig::Cnn(ConvNetConfig::new()),
        }
    }

    /// The architecture.
    pub fn kind(&self) -> ModelKind {
        match self {
            ClassifierConfig::Mlp(_) => ModelKind::Mlp,
            ClassifierConfig::Cnn(_) => ModelKind::Cnn,
        }
    }

    /// Values per flat input sample (the width of the batches [`Classifier::forward`] takes).
    pub fn input_size(&self) -> usize {
        match self {
            ClassifierConfig::Mlp(config) => config.input_size,
            ClassifierConfig::Cnn(config) => config.input_size(),
        }
    }

    /// Number of classes (logits per sample).
    pub fn number_of_classes(&self) -> usize {
        match self {
            ClassifierConfig::Mlp(config) => config.number_of_classes,
            ClassifierConfig::Cnn(config) => config.number_of_classes,
        }
    }

    /// Checks the configuration: [`MlpConfig::validate`] or [`ConvNetConfig::validate`].
    ///
    /// # Errors
    ///
    /// Those of the architecture's `validate`.
    pub fn validate(&self) -> Result<(), ModelError> {
        match self {
            ClassifierConfig::Mlp(config) => config.validate(),
            ClassifierConfig::Cnn(config) => config.validate(),
        }
    }

    /// Creates the model on `device`, initialized by the backend's generator
    /// ([`MlpConfig::init`], [`ConvNetConfig::init`]).
    ///
    /// # Errors
    ///
    /// Those of [`validate`](Self::validate), checked first.
    pub fn init(&self, device: &Device) -> Result<Classifier, ModelError> {
        self.validate()?;
        Ok(match self {
            ClassifierConfig::Mlp(config) => Classifier::Mlp(config.init(device)),
            ClassifierConfig::Cnn(config) => Classifier::Cnn(config.init(device)?),
        })
    }

    /// Creates the model on `device` with weights drawn from `seed` alone
    /// ([`MlpConfig::init_seeded`], [`ConvNetConfig::init_seeded`]): the same values on
    /// every backend.
    ///
    /// # Errors
    ///
    /// Those of [`validate`](Self::validate), checked first.
    pub fn init_seeded(&self, device: &Device, seed: u64) -> Result<Classifier, ModelError> {
        self.validate()?;
        Ok(match self {
            ClassifierConfig::Mlp(config) => Classifier::Mlp(config.init_seeded(device, seed)),
            ClassifierConfig::Cnn(config) => Classifier::Cnn(config.init_seeded(device, seed)?),
        })
    }
}

impl From<MlpConfig> for ClassifierConfig {
    fn from(config: MlpConfig) -> ClassifierConfig {
        ClassifierConfig::Mlp(config)
    }
}

impl From<ConvNetConfig> for ClassifierConfig {
    fn from(config: ConvNetConfig) -> ClassifierConfig {
        ClassifierConfig::Cnn(config)
    }
}

/// One model type for the trainer, whatever the architecture: every method forwards to the
/// model inside.
///
/// The weight bytes are the inner model's own ([`Mlp::to_weight_bytes`],
/// [`ConvNet::to_weight_bytes`]), with no variant name in the tensors' paths: a `Mlp`
/// checkpoint loads into a `Classifier::Mlp` and back.
#[derive(Module, Debug)]
pub enum Classifier {
    /// An MLP.
    Mlp(Mlp),
    /// A convolutional network.
    Cnn(ConvNet),
}

impl Classifier {
    /// The architecture.
    pub fn kind(&self) -> ModelKind {
        match self {
            Classifier::Mlp(_) => ModelKind::Mlp,
            Classifier::Cnn(_) => ModelKind::Cnn,
        }
    }

    /// Logits of shape `[batch, classes]` for flat inputs of shape `[batch, input_size]`
    /// ([`Mlp::forward`], [`ConvNet::forward`]).
    ///
    /// # Panics
    ///
    /// When a row does not hold the configured input size.
    pub fn forward(&self, images: Tensor<2>) -> Tensor<2> {
        match self {
            Classifier::Mlp(model) => model.forward(images),
            Classifier::Cnn(model) => model.forward(images),
        }
    }

    /// Mean cross-entropy of `logits` against `labels` (class indices), a one-element tensor.
    pub fn loss(&self, logits: Tensor<2>, labels: Tensor<1, Int>) -> Tensor<1> {
        match self {
            Classifier::Mlp(model) => model.loss(logits, labels),
            Classifier::Cnn(model) => model.loss(logits, labels),
        }
    }

    /// How many rows of `logits` have their largest value at the row's label, as a
    /// one-element integer tensor (kept on the device until the caller reads it).
    pub fn correct_predictions(&self, logits: Tensor<2>, labels: Tensor<1, Int>) -> Tensor<1, Int> {
        match self {
            Classifier::Mlp(model) => model.correct_predictions(logits, labels),
            Classifier::Cnn(model) => model.correct_predictions(logits, labels),
        }
    }

    /// The weights, serialized in `format` (the inner model's bytes).
    pub fn to_weight_bytes(&self, format: WeightFormat) -> Result<Vec<u8>, ModelError> {
        match self {
            Classifier::Mlp(model) => model.to_weight_bytes(format),
            Classifier::Cnn(model) => model.to_weight_bytes(format),
        }
    }

    /// This model with its weights replaced by those in `bytes`. Every parameter must be
    /// present with the right shape: weights of the other architecture, or of other sizes,
    /// are a [`ModelError::LoadWeights`].
    pub fn load_weight_bytes(
        self,
        bytes: &[u8],
        format: WeightFormat,
    ) -> Result<Classifier, ModelError> {
        Ok(match self {
            Classifier::Mlp(model) => Classifier::Mlp(model.load_weight_bytes(bytes, format)?),
            Classifier::Cnn(model) => Classifier::Cnn(model.load_weight_bytes(bytes, format)?),
        })
    }
}

impl From<Mlp> for Classifier {
    fn from(model: Mlp) -> Classifier {
        Classifier::Mlp(model)
    }
}

impl From<ConvNet> for Classifier {
    fn from(model: ConvNet) -> Classifier {
        Classifier::Cnn(model)
    }
}

#[cfg(test)]
mod tests {
    use super::*;

    #[allow(deprecated)]
    fn cpu_device() -> Device {
        Device::ndarray()
    }

    #[test]
    fn kinds_parse_from_their_names_and_nothing_else() {
        for kind in ModelKind::ALL {
            assert_eq!(kind.name().parse::<ModelKind>().unwrap(), kind);
            assert_eq!(kind.to_string(), kind.name());
        }
        assert_eq!("cnn".parse::<ModelKind>().unwrap(), ModelKind::Cnn);
        for wrong in ["", "CNN", " mlp", "resnet"] {
            let error = wrong.parse::<ModelKind>().unwrap_err();
            match &error {
                ModelError::UnknownModelKind { given, accepted } => {
                    assert_eq!(given, wrong);
                    assert_eq!(*accepted, ModelKind::ALL);
                }
                other => panic!("{other:?}"),
            }
        }
        assert_eq!(
            "resnet".parse::<ModelKind>().unwrap_err().to_string(),
            "unknown model kind \"resnet\": the accepted ones are mlp, cnn"
        );
    }

    #[test]
    fn the_config_describes_its_model() {
        let mlp = ClassifierConfig::default_for(ModelKind::Mlp);
        assert_eq!(mlp, ClassifierConfig::from(MlpConfig::new()));
        assert_eq!(
            (mlp.kind(), mlp.input_size(), mlp.number_of_classes()),
            (ModelKind::Mlp, 784, 10)
        );
        let cnn = ClassifierConfig::from(
            ConvNetConfig::new()
                .with_channels(3)
                .with_height(32)
                .with_width(32)
                .with_number_of_classes(100),
        );
        assert_eq!(
            (cnn.kind(), cnn.input_size(), cnn.number_of_classes()),
            (ModelKind::Cnn, 3072, 100)
        );
        assert_eq!(
            ClassifierConfig::default_for(ModelKind::Cnn).input_size(),
            784
        );
    }

    #[test]
    fn invalid_configs_are_refused_before_anything_is_made() {
        let device = cpu_device();
        let mlp = ClassifierConfig::Mlp(MlpConfig::new().with_input_size(0));
        assert!(matches!(
            mlp.init(&device),
            Err(ModelError::ZeroSize {
                setting: "input_size"
            })
        ));
        let cnn = ClassifierConfig::Cnn(ConvNetConfig::new().with_filters(vec![8]));
        assert!(matches!(
            cnn.init_seeded(&device, 0),
            Err(ModelError::BlockCount { blocks: 1, .. })
        ));
    }

    #[test]
    fn both_kinds_forward_flat_batches() {
        let device = cpu_device();
        let cnn = ConvNetConfig::new().with_filters(vec![4, 8]);
        for config in [
            ClassifierConfig::default_for(ModelKind::Mlp),
            ClassifierConfig::Cnn(cnn),
        ] {
            let model = config.init_seeded(&device, 5).unwrap();
            assert_eq!(model.kind(), config.kind());
            let logits = model.forward(Tensor::<2>::ones([3, 784], &device));
            assert_eq!(logits.dims(), [3, 10]);
            let labels = Tensor::<1, Int>::from_ints([0, 1, 2], &device);
            let loss = model
                .loss(logits.clone(), labels.clone())
                .into_scalar::<f32>();
            assert!(loss.is_finite() && loss > 0.0, "{loss}");
            let correct = model
                .correct_predictions(logits, labels)
                .into_scalar::<i64>();
            assert!((0..=3).contains(&correct), "{correct}");
        }
    }

    #[test]
    fn a_classifier_holds_the_same_weights_as_its_model() {
        let device = cpu_device();
        let model = MlpConfig::new().init_seeded(&device, 9);
        let bytes = model.to_weight_bytes(WeightFormat::Burnpack).unwrap();
        let classifier = Classifier::from(model);
        assert_eq!(
            classifier.to_weight_bytes(WeightFormat::Burnpack).unwrap(),
            bytes
        );
    }
}
