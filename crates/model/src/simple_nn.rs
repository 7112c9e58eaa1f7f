use burn::config::Config;
use burn::module::{Module, ParamId};
use burn::nn::{Linear, LinearConfig, Relu};
use burn::optim::GradientsParams;
use burn::tensor::{Device, Int, Tensor, TensorData};

use rand_xoshiro::SplitMix64;
use rand_xoshiro::rand_core::SeedableRng;

use crate::seeded::seeded_linear;
use crate::weights::{count_correct, cross_entropy, load_weights, save_weights};
use crate::{ModelError, SparseRows, WeightFormat};

/// The layer sizes of a [`SimpleNn`]. The defaults are the classic MNIST recipe's.
#[derive(Config, Debug, PartialEq, Eq)]
pub struct SimpleNnConfig {
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

impl SimpleNnConfig {
    /// Creates the model on `device`, with PyTorch's `nn.Linear` initialization
    /// (uniform in ±1/√fan_in for weights and biases).
    pub fn init(&self, device: &Device) -> SimpleNn {
        SimpleNn {
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

impl SimpleNnConfig {
    /// Creates the model on `device` with weights drawn from `seed` alone (uniform in
    /// ±1/√fan_in, as PyTorch's `nn.Linear`): the same values on every backend and in every
    /// run, whatever else uses the backend's own random generator meanwhile.
    pub fn init_seeded(&self, device: &Device, seed: u64) -> SimpleNn {
        let mut random = SplitMix64::seed_from_u64(seed);
        SimpleNn {
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

/// A two-layer perceptron: `input → hidden → ReLU → logits`.
///
/// One type for every backend: the [`Device`] it was created on decides where it runs.
#[derive(Module, Debug)]
pub struct SimpleNn {
    pub(crate) hidden: Linear,
    activation: Relu,
    pub(crate) output: Linear,
}

impl SimpleNn {
    /// Logits of shape `[batch, classes]` for inputs of shape `[batch, input_size]`.
    pub fn forward(&self, images: Tensor<2>) -> Tensor<2> {
        let hidden = self.activation.forward(self.hidden.forward(images));
        self.output.forward(hidden)
    }

    /// Mean cross-entropy of `logits` against `labels` (class indices), a one-element tensor.
    pub fn loss(&self, logits: Tensor<2>, labels: Tensor<1, Int>) -> Tensor<1> {
        cross_entropy(logits, labels)
    }

    /// The hidden layer's output before its activation, `images · W + b`, of shape
    /// `[batch, hidden_size]`, computed on the host from the non-zero inputs only
    /// ([`SparseRows`]) and put on `device`. With [`forward_from_hidden_pre_activation`]
    /// it is [`forward`](Self::forward), by another road: the same sums, in another order.
    /// Reads the hidden layer's weights back from their device (a copy per call).
    ///
    /// [`forward_from_hidden_pre_activation`]: Self::forward_from_hidden_pre_activation
    ///
    /// # Errors
    ///
    /// [`ModelError::InputWidth`] when `images` has not `input_size` columns;
    /// [`ModelError::TensorRead`] when the weights cannot be read back.
    pub fn hidden_pre_activation_of_sparse(
        &self,
        images: &SparseRows,
        device: &Device,
    ) -> Result<Tensor<2>, ModelError> {
        let [input_size, hidden_size] = self.hidden.weight.dims();
        if images.columns() != input_size {
            return Err(ModelError::InputWidth {
                given: images.columns(),
                expected: input_size,
            });
        }
        let weight = host_values(self.hidden.weight.val(), "the hidden layer's weight")?;
        let mut hidden = images.times_dense(slice_of(&weight)?, hidden_size)?;
        if let Some(bias) = &self.hidden.bias {
            let bias = host_values(bias.val(), "the hidden layer's bias")?;
            let bias = slice_of(&bias)?;
            for row in hidden.chunks_exact_mut(hidden_size) {
                for (value, &added) in row.iter_mut().zip(bias) {
                    *value += added;
                }
            }
        }
        let data = TensorData::new(hidden, [images.rows(), hidden_size]);
        Ok(Tensor::from_data(data, device))
    }

    /// Logits from the hidden layer's output before its activation: the rest of
    /// [`forward`](Self::forward) after [`hidden_pre_activation_of_sparse`].
    ///
    /// [`hidden_pre_activation_of_sparse`]: Self::hidden_pre_activation_of_sparse
    pub fn forward_from_hidden_pre_activation(&self, hidden: Tensor<2>) -> Tensor<2> {
        self.output.forward(self.activation.forward(hidden))
    }

    /// One training step's loss on `images` (a batch's pixels, `[batch, input_size]`, as
    /// [`SparseRows`]) against `labels` (on an autodiff device, where the step runs), and the
    /// gradients of every parameter, for the optimizer: the hidden layer is computed from the
    /// batch's non-zero pixels on the host ([`hidden_pre_activation_of_sparse`]); Burn's
    /// autodiff graph starts at the hidden layer's output, whose gradient then gives the hidden
    /// layer's own ([`hidden_layer_gradients`]). Worth it where most inputs are 0 (MNIST's
    /// pixels scaled to [0, 1]: about 81%) and the device is the host's CPU. The caller makes
    /// `images` from the host pixels it has (a loader's batch), so no image tensor is read back.
    ///
    /// [`hidden_pre_activation_of_sparse`]: Self::hidden_pre_activation_of_sparse
    /// [`hidden_layer_gradients`]: Self::hidden_layer_gradients
    ///
    /// # Errors
    ///
    /// [`ModelError::NotAutodiff`] when `labels` is on a device without autodiff;
    /// [`ModelError::InputWidth`] when `images` has not `input_size` columns;
    /// [`ModelError::TensorRead`] when a tensor cannot be read back to the host.
    pub fn sparse_input_loss_and_gradients(
        &self,
        images: &SparseRows,
        labels: Tensor<1, Int>,
    ) -> Result<(Tensor<1>, GradientsParams), ModelError> {
        let device = labels.device();
        if !device.is_autodiff() {
            return Err(ModelError::NotAutodiff {
                device: format!("{device:?}"),
            });
        }
        let hidden = self
            .hidden_pre_activation_of_sparse(images, &device)?
            .require_grad();
        let logits = self.forward_from_hidden_pre_activation(hidden.clone());
        let loss = self.loss(logits, labels);
        let mut graph_gradients = loss.backward();
        let hidden_gradient =
            hidden
                .grad_remove(&mut graph_gradients)
                .ok_or(ModelError::TensorRead {
                    what: "the hidden layer's output gradient",
                    message: "the autodiff graph has none".into(),
                })?;
        let mut gradients = GradientsParams::from_grads(graph_gradients, self);
        let hidden_layer = self.hidden_layer_gradients(images, hidden_gradient)?;
        let (weight_id, weight_gradient) = hidden_layer.weight;
        gradients.register(weight_id, weight_gradient);
        if let Some((bias_id, bias_gradient)) = hidden_layer.bias {
            gradients.register(bias_id, bias_gradient);
        }
        Ok((loss, gradients))
    }

    /// The gradients of the hidden layer's parameters given `hidden_gradient`, the loss's
    /// gradient with respect to the hidden layer's output before its activation
    /// (`[batch, hidden_size]`): the weight's, `imagesᵀ · hidden_gradient`, computed on the host
    /// from the non-zero inputs only, and the bias's, the column sums of `hidden_gradient`.
    /// Both are tensors on `hidden_gradient`'s device, for
    /// `GradientsParams::register` under the ids given with them.
    ///
    /// # Errors
    ///
    /// [`ModelError::InputWidth`] when `images` has not `input_size` columns;
    /// [`ModelError::GradientShape`] when `hidden_gradient` is not `[images, hidden_size]`;
    /// [`ModelError::TensorRead`] when `hidden_gradient` cannot be read back.
    pub fn hidden_layer_gradients(
        &self,
        images: &SparseRows,
        hidden_gradient: Tensor<2>,
    ) -> Result<HiddenLayerGradients, ModelError> {
        let device = hidden_gradient.device();
        let [input_size, hidden_size] = self.hidden.weight.dims();
        if images.columns() != input_size {
            return Err(ModelError::InputWidth {
                given: images.columns(),
                expected: input_size,
            });
        }
        let expected = [images.rows(), hidden_size];
        if hidden_gradient.dims() != expected {
            return Err(ModelError::GradientShape {
                given: hidden_gradient.dims(),
                expected,
            });
        }
        let bias = self.hidden.bias.as_ref().map(|bias| {
            let sums = hidden_gradient.clone().sum_dim(0).reshape([hidden_size]);
            (bias.id, sums)
        });
        let gradient = host_values(hidden_gradient, "the hidden layer's output gradient")?;
        let weight = images
            .transpose()
            .times_dense(slice_of(&gradient)?, hidden_size)?;
        let weight = TensorData::new(weight, [images.columns(), hidden_size]);
        Ok(HiddenLayerGradients {
            weight: (self.hidden.weight.id, Tensor::from_data(weight, &device)),
            bias,
        })
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
    pub fn load_weight_bytes(
        self,
        bytes: &[u8],
        format: WeightFormat,
    ) -> Result<SimpleNn, ModelError> {
        load_weights(self, bytes, format)
    }
}

/// The gradients of a [`SimpleNn`]'s hidden layer, each with the id of its parameter
/// ([`SimpleNn::hidden_layer_gradients`]).
#[derive(Debug)]
pub struct HiddenLayerGradients {
    /// The weight's gradient, `[input_size, hidden_size]`.
    pub weight: (ParamId, Tensor<2>),
    /// The bias's gradient, `[hidden_size]`, where the layer has a bias.
    pub bias: Option<(ParamId, Tensor<1>)>,
}

/// The values of `tensor`, read back to the host as `f32`; `what` names it in an error.
fn host_values<const D: usize>(
    tensor: Tensor<D>,
    what: &'static str,
) -> Result<TensorData, ModelError> {
    tensor
        .try_into_data_as::<f32>()
        .map_err(|error| ModelError::TensorRead {
            what,
            message: error.to_string(),
        })
}

/// `data`'s values as `f32` (it was read as `f32` by [`host_values`]).
fn slice_of(data: &TensorData) -> Result<&[f32], ModelError> {
    data.as_slice::<f32>()
        .map_err(|error| ModelError::TensorRead {
            what: "host values",
            message: format!("{error:?}"),
        })
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
        let model = SimpleNnConfig::new()
            .with_number_of_classes(7)
            .init(&device);
        let logits = model.forward(Tensor::<2>::ones([3, 784], &device));
        assert_eq!(logits.dims(), [3, 7]);
    }

    #[test]
    fn correct_predictions_counts_argmax_matches() {
        let device = cpu_device();
        let model = SimpleNnConfig::new().init(&device);
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
        let model = SimpleNnConfig::new().init(&device);
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
        let model = SimpleNnConfig::new().init(&device);
        let input = Tensor::<2>::random([5, 784], burn::tensor::Distribution::Default, &device);
        let expected = model.forward(input.clone()).into_data();
        let bytes = model.to_weight_bytes(format).expect("save");
        let other = SimpleNnConfig::new().init(&device);
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
        let wide = SimpleNnConfig::new().with_hidden_size(64).init(&device);
        let bytes = wide.to_weight_bytes(WeightFormat::Safetensors).unwrap();
        let error = SimpleNnConfig::new()
            .init(&device)
            .load_weight_bytes(&bytes, WeightFormat::Safetensors)
            .unwrap_err();
        assert!(matches!(error, ModelError::LoadWeights { .. }), "{error}");
    }

    #[test]
    fn garbage_bytes_are_an_error_not_a_panic() {
        let device = cpu_device();
        for format in [WeightFormat::Burnpack, WeightFormat::Safetensors] {
            let error = SimpleNnConfig::new()
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
        let parameters = |model: &SimpleNn| {
            let mut values = weights(&model.hidden);
            values.extend(weights(&model.output));
            values
        };
        let ndarray = SimpleNnConfig::new().init_seeded(&cpu_device(), 42);
        let flex = SimpleNnConfig::new().init_seeded(&Device::flex(), 42);
        assert!(parameters(&ndarray) == parameters(&flex));
        let other = SimpleNnConfig::new().init_seeded(&cpu_device(), 43);
        assert!(parameters(&ndarray) != parameters(&other));
        let weight = weights(&ndarray.hidden);
        let bound = 1.0 / 784f32.sqrt();
        assert!(weight.iter().all(|value| value.abs() <= bound));
        let mean = weight.iter().sum::<f32>() / weight.len() as f32;
        assert!(mean.abs() < 0.001, "mean {mean}");
    }

    #[test]
    fn validation_names_the_first_zero_size() {
        assert!(SimpleNnConfig::new().validate().is_ok());
        let error = SimpleNnConfig::new()
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
        let model = SimpleNnConfig::new().init(&device);
        let logits = model.forward(Tensor::<2>::ones([2, 784], &device));
        assert_eq!(logits.dims(), [2, 10]);
    }

    /// Images with about four in five values at 0, like MNIST's, from a seed.
    fn mostly_zero_images(rows: usize, columns: usize) -> Vec<f32> {
        let mut random = SplitMix64::seed_from_u64(9);
        (0..rows * columns)
            .map(|_| {
                let draw = crate::seeded::next_symmetric(&mut random, 1.0);
                if draw < 0.6 { 0.0 } else { draw }
            })
            .collect()
    }

    fn assert_close(actual: TensorData, expected: TensorData) {
        let actual = actual.try_to_vec::<f32>().unwrap();
        let expected = expected.try_to_vec::<f32>().unwrap();
        assert_eq!(actual.len(), expected.len());
        for (index, (a, e)) in actual.iter().zip(&expected).enumerate() {
            assert!(
                (a - e).abs() <= 1e-4 * (1.0 + e.abs()),
                "{index}: {a} vs {e}"
            );
        }
    }

    /// The sparse-input road gives the logits, the loss and the hidden layer's gradients that
    /// Burn's own forward and backward give, on both CPU backends.
    #[test]
    fn the_sparse_input_road_gives_the_dense_logits_and_gradients() {
        for device in [cpu_device().autodiff(), Device::flex().autodiff()] {
            let (rows, columns) = (21, 784);
            let model = SimpleNnConfig::new().init_seeded(&device, 5);
            let pixels = mostly_zero_images(rows, columns);
            let images =
                Tensor::<2>::from_data(TensorData::new(pixels.clone(), [rows, columns]), &device);
            let labels = Tensor::<1, Int>::from_ints([3; 21], &device);

            let dense_loss = model.loss(model.forward(images.clone()), labels.clone());
            let dense_gradients = dense_loss.backward();
            let dense_weight = model.hidden.weight.grad(&dense_gradients).unwrap();
            let hidden_bias = model.hidden.bias.as_ref().unwrap();
            let dense_bias = hidden_bias.grad(&dense_gradients).unwrap();
            let dense_output = model.output.weight.grad(&dense_gradients).unwrap();

            // The whole step's gradients, as the optimizer gets them.
            let sparse = SparseRows::from_dense(&pixels, columns).unwrap();
            let (loss, all) = model
                .sparse_input_loss_and_gradients(&sparse, labels.clone())
                .unwrap();
            assert_close(loss.to_data(), dense_loss.to_data());
            assert_eq!(all.len(), 4, "both layers' weights and biases");
            let hidden_weight = all.get::<2>(model.hidden.weight.id).unwrap();
            assert_close(hidden_weight.into_data(), dense_weight.to_data());
            let output_weight = all.get::<2>(model.output.weight.id).unwrap();
            assert_close(output_weight.into_data(), dense_output.into_data());
            let hidden_bias_gradient = all.get::<1>(hidden_bias.id).unwrap();
            assert_close(hidden_bias_gradient.into_data(), dense_bias.to_data());
            let output_bias = model.output.bias.as_ref().unwrap();
            let dense_output_bias = output_bias.grad(&dense_gradients).unwrap();
            let output_bias_gradient = all.get::<1>(output_bias.id).unwrap();
            assert_close(
                output_bias_gradient.into_data(),
                dense_output_bias.into_data(),
            );

            let hidden = model
                .hidden_pre_activation_of_sparse(&sparse, &device)
                .unwrap()
                .require_grad();
            let sparse_loss = model.loss(
                model.forward_from_hidden_pre_activation(hidden.clone()),
                labels,
            );
            assert_close(sparse_loss.to_data(), dense_loss.to_data());
            let mut sparse_gradients = sparse_loss.backward();
            let hidden_gradient = hidden.grad_remove(&mut sparse_gradients).unwrap();
            let gradients = model
                .hidden_layer_gradients(&sparse, hidden_gradient)
                .unwrap();
            assert_eq!(gradients.weight.0, model.hidden.weight.id);
            assert_close(gradients.weight.1.into_data(), dense_weight.into_data());
            let (bias_id, bias) = gradients.bias.unwrap();
            assert_eq!(bias_id, model.hidden.bias.as_ref().unwrap().id);
            assert_close(bias.into_data(), dense_bias.into_data());
        }
    }

    #[test]
    fn sparse_images_of_another_width_or_a_device_without_autodiff_are_errors() {
        let device = cpu_device();
        let model = SimpleNnConfig::new().init(&device);
        let narrow = SparseRows::from_dense(&[1.0; 20], 10).unwrap();
        let error = model
            .hidden_pre_activation_of_sparse(&narrow, &device)
            .unwrap_err();
        let expected = ModelError::InputWidth {
            given: 10,
            expected: 784,
        };
        assert_eq!(error.to_string(), expected.to_string());
        let gradient = Tensor::<2>::zeros([2, 128], &device);
        let error = model.hidden_layer_gradients(&narrow, gradient).unwrap_err();
        assert!(
            matches!(error, ModelError::InputWidth { given: 10, .. }),
            "{error}"
        );
        // Three rows of gradient for two images.
        let gradient = Tensor::<2>::zeros([3, 128], &device);
        let two_images = SparseRows::from_dense(&[1.0; 2 * 784], 784).unwrap();
        let error = model
            .hidden_layer_gradients(&two_images, gradient)
            .unwrap_err();
        assert!(
            matches!(
                error,
                ModelError::GradientShape {
                    given: [3, 128],
                    expected: [2, 128]
                }
            ),
            "{error}"
        );
        // Without autodiff no gradient can be taken: an error, not Burn's panic.
        let labels = Tensor::<1, Int>::from_ints([0, 1], &device);
        let error = model
            .sparse_input_loss_and_gradients(&two_images, labels)
            .unwrap_err();
        assert!(matches!(error, ModelError::NotAutodiff { .. }), "{error}");
        assert!(error.to_string().contains("autodiff"), "{error}");
    }
}
