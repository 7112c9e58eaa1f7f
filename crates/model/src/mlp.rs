use burn::config::Config;
use burn::module::Module;
use burn::nn::{Linear, LinearConfig, Relu};
use burn::tensor::{Device, Int, Tensor};

use rand_xoshiro::SplitMix64;
use rand_xoshiro::rand_core::SeedableRng;

use crate::seeded::seeded_linear;
use crate::weights::{count_correct, cross_entropy, load_weights, save_weights};
use crate::{ModelError, WeightFormat};

/// The layer sizes of a [`Mlp`]. The defaults are the classic MNIST recipe's.
#[derive(Config, Debug, PartialEq, Eq)]
pub struct MlpConfig {
    /// Values per input sample (28 × 28 pixels).
    #[config(default = 784)]
    pub input_size: usize,
    /// Width of the hidden layer.
    #[config(default = 128)]
    pub hidden_size: usize,
    /// Number of classes (logits per sample).
    #[config(default = 10)]
    pub number_of_classes: usize,
}

impl MlpConfig {
    /// Creates the model on `device`, with PyTorch's `nn.Linear` initialization
    /// (uniform in ±1/√fan_in for weights and biases).
    pub fn init(&self, device: &Device) -> Mlp {
        Mlp {
            hidden: LinearConfig::new(self.input_size, self.hidden_size).init(device),
            activation: Relu::new(),
            output: LinearConfig::new(self.hidden_size, self.number_of_classes).init(device),
        }
    }

    /// Checks the sizes before a model is made of them ([`init`](Self::init) itself does not;
    /// [`ClassifierConfig::init`](crate::ClassifierConfig::init) calls this first).
    ///
    /// # Errors
    ///
    /// [`ModelError::ZeroSize`] naming the first of `input_size`, `hidden_size` and
    /// `number_of_classes` that is 0.
    pub fn validate(&self) -> Result<(), ModelError> {
        let sizes = [
            ("input_size", self.input_size),
            ("hidden_size", self.hidden_size),
            ("number_of_classes", self.number_of_classes),
        ];
        match sizes.into_iter().find(|&(_, size)| size == 0) {
            Some((setting, _)) => Err(ModelError::ZeroSize { setting }),
            None => Ok(()),
        }
    }
}

impl MlpConfig {
    /// Creates the model on `device` with weights drawn from `seed` alone (uniform in
    /// ±1/√fan_in, as PyTorch's `nn.Linear`): the same values on every backend and in every
    /// run, whatever else uses the backend's own random generator meanwhile.
    pub fn init_seeded(&self, device: &Device, seed: u64) -> Mlp {
        let mut random = SplitMix64::seed_from_u64(seed);
        Mlp {
            hidden: seeded_linear(self.input_size, self.hidden_size, device, &mut random),
            activation: Relu::new(),
            output: seeded_linear(
                self.hidden_size,
                self.number_of_classes,
                device,
                &mut random,
            ),
        }
    }
}

/// A two-layer perceptron (MLP): `input → hidden → ReLU → logits`.
///
/// One type for every backend: the [`Device`] it was created on decides where it runs.
#[derive(Module, Debug)]
pub struct Mlp {
    pub(crate) hidden: Linear,
    activation: Relu,
    pub(crate) output: Linear,
}

impl Mlp {
    /// Logits of shape `[batch, classes]` for inputs of shape `[batch, input_size]`.
    pub fn forward(&self, images: Tensor<2>) -> Tensor<2> {
        let hidden = self.activation.forward(self.hidden.forward(images));
        self.output.forward(hidden)
    }

    /// Mean cross-entropy of `logits` against `labels` (class indices), a one-element tensor.
    pub fn loss(&self, logits: Tensor<2>, labels: Tensor<1, Int>) -> Tensor<1> {
        cross_entropy(logits, labels)
    }

    /// How many rows of `logits` have their largest value at the row's label, as a
    /// one-element integer tensor (kept on the device until the caller reads it).
    pub fn correct_predictions(&self, logits: Tensor<2>, labels: Tensor<1, Int>) -> Tensor<1, Int> {
        count_correct(logits, labels)
    }

    /// The weights, serialized in `format`.
    pub fn to_weight_bytes(&self, format: WeightFormat) -> Result<Vec<u8>, ModelError> {
        save_weights(self, format)
    }

    /// This model with its weights replaced by those in `bytes`. Every parameter must be
    /// present with the right shape; anything missing or extra is an error.
    pub fn load_weight_bytes(self, bytes: &[u8], format: WeightFormat) -> Result<Mlp, ModelError> {
        load_weights(self, bytes, format)
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
    fn forward_gives_one_logit_per_class() {
        let device = cpu_device();
        let model = MlpConfig::new().with_number_of_classes(7).init(&device);
        let logits = model.forward(Tensor::<2>::ones([3, 784], &device));
        assert_eq!(logits.dims(), [3, 7]);
    }

    #[test]
    fn correct_predictions_counts_argmax_matches() {
        let device = cpu_device();
        let model = MlpConfig::new().init(&device);
        let logits = Tensor::<2>::from_floats([[0.1, 0.9], [0.8, 0.2], [0.3, 0.7]], &device);
        let labels = Tensor::<1, Int>::from_ints([1, 1, 1], &device);
        let correct: i64 = model
            .correct_predictions(logits, labels)
            .into_scalar::<i64>();
        assert_eq!(correct, 2);
    }

    #[test]
    fn loss_of_confident_right_answers_is_smaller() {
        let device = cpu_device();
        let model = MlpConfig::new().init(&device);
        let labels = Tensor::<1, Int>::from_ints([0, 1], &device);
        let right = Tensor::<2>::from_floats([[5.0, -5.0], [-5.0, 5.0]], &device);
        let wrong = Tensor::<2>::from_floats([[-5.0, 5.0], [5.0, -5.0]], &device);
        let right_loss = model.loss(right, labels.clone()).into_scalar::<f32>();
        let wrong_loss = model.loss(wrong, labels).into_scalar::<f32>();
        assert!(right_loss < 0.01, "{right_loss}");
        assert!(wrong_loss > 9.0, "{wrong_loss}");
    }

    fn round_trip(format: WeightFormat) {
        let device = cpu_device();
        let model = MlpConfig::new().init(&device);
        let input = Tensor::<2>::random([5, 784], burn::tensor::Distribution::Default, &device);
        let expected = model.forward(input.clone()).into_data();
        let bytes = model.to_weight_bytes(format).expect("save");
        let other = MlpConfig::new().init(&device);
        assert_ne!(other.forward(input.clone()).into_data(), expected);
        let restored = other.load_weight_bytes(&bytes, format).expect("load");
        assert_eq!(restored.forward(input).into_data(), expected);
    }

    #[test]
    fn burnpack_round_trip_restores_the_outputs() {
        round_trip(WeightFormat::Burnpack);
    }

    #[test]
    fn safetensors_round_trip_restores_the_outputs() {
        round_trip(WeightFormat::Safetensors);
    }

    #[test]
    fn weights_of_another_shape_are_refused() {
        let device = cpu_device();
        let wide = MlpConfig::new().with_hidden_size(64).init(&device);
        let bytes = wide.to_weight_bytes(WeightFormat::Safetensors).unwrap();
        let error = MlpConfig::new()
            .init(&device)
            .load_weight_bytes(&bytes, WeightFormat::Safetensors)
            .unwrap_err();
        assert!(matches!(error, ModelError::LoadWeights { .. }), "{error}");
    }

    #[test]
    fn garbage_bytes_are_an_error_not_a_panic() {
        let device = cpu_device();
        for format in [WeightFormat::Burnpack, WeightFormat::Safetensors] {
            let error = MlpConfig::new()
                .init(&device)
                .load_weight_bytes(b"not weights at all", format)
                .unwrap_err();
            assert!(matches!(error, ModelError::LoadWeights { .. }), "{error}");
        }
    }

    #[test]
    fn seeded_initialization_is_the_same_on_every_backend_and_depends_on_the_seed() {
        let weights =
            |linear: &Linear| linear.weight.val().into_data().try_to_vec::<f32>().unwrap();
        let parameters = |model: &Mlp| {
            let mut values = weights(&model.hidden);
            values.extend(weights(&model.output));
            values
        };
        let ndarray = MlpConfig::new().init_seeded(&cpu_device(), 42);
        let flex = MlpConfig::new().init_seeded(&Device::flex(), 42);
        assert!(parameters(&ndarray) == parameters(&flex));
        let other = MlpConfig::new().init_seeded(&cpu_device(), 43);
        assert!(parameters(&ndarray) != parameters(&other));
        let weight = weights(&ndarray.hidden);
        let bound = 1.0 / 784f32.sqrt();
        assert!(weight.iter().all(|value| value.abs() <= bound));
        let mean = weight.iter().sum::<f32>() / weight.len() as f32;
        assert!(mean.abs() < 0.001, "mean {mean}");
    }

    #[test]
    fn validation_names_the_first_zero_size() {
        assert!(MlpConfig::new().validate().is_ok());
        let error = MlpConfig::new()
            .with_hidden_size(0)
            .with_number_of_classes(0)
            .validate()
            .unwrap_err();
        assert!(
            matches!(
                error,
                ModelError::ZeroSize {
                    setting: "hidden_size"
                }
            ),
            "{error}"
        );
    }

    #[test]
    fn runs_on_flex_too() {
        let device = Device::flex();
        let model = MlpConfig::new().init(&device);
        let logits = model.forward(Tensor::<2>::ones([2, 784], &device));
        assert_eq!(logits.dims(), [2, 10]);
    }
}
