//! [`LearnerClassifier`]: Reclaim's models (the MLP and the CNN) with burn-train's step traits.

use burn::module::Module;
use burn::tensor::Device;
use burn_train::{ClassificationOutput, InferenceStep, TrainOutput, TrainStep};
use reclaim_loader::TensorBatch;
use reclaim_model::{Classifier, ConvNet, Mlp};

/// A [`Classifier`] (the [`Mlp`] or the [`ConvNet`], both taking flat images) as a burn-train
/// `LearnerModel`: it implements [`TrainStep`] and
/// [`InferenceStep`] on the [`TensorBatch`]es a [`BurnLoader`](reclaim_loader::BurnLoader)
/// yields, producing a [`ClassificationOutput`] so that burn-train's accuracy and loss metrics
/// apply.
///
/// A wrapper rather than impls on `Classifier` itself: the traits are burn-train's and the model
/// is reclaim-model's, and reclaim-model stays free of burn-train (it knows nothing of data or
/// training loops).
#[derive(Module, Debug)]
pub struct LearnerClassifier {
    network: Classifier,
}

impl LearnerClassifier {
    /// Wraps `network` for a `Learner`, in training mode on the autodiff counterpart of its
    /// device (the same device if it is one already).
    ///
    /// burn-train moves the model to its training device with `Module::fork`, which keeps a
    /// parameter's gradient tracking only if it already has it; a network made on a plain
    /// device (`Device::flex()`) would then train nothing. Made here, the parameters are
    /// tracked whatever device the network was created on.
    pub fn new(network: impl Into<Classifier>) -> Self {
        let network = network.into();
        let device = network.devices().into_iter().next().map(Device::autodiff);
        let network = match device {
            Some(device) => network.fork(&device).train(),
            None => network,
        };
        Self { network }
    }

    /// The wrapped network.
    pub fn network(&self) -> &Classifier {
        &self.network
    }

    /// The wrapped network, unwrapped (after `Learner::fit`, say).
    pub fn into_network(self) -> Classifier {
        self.network
    }

    /// Forward pass and cross-entropy of one batch.
    fn classify(&self, batch: TensorBatch<2>) -> ClassificationOutput {
        let logits = self.network.forward(batch.images);
        let loss = self.network.loss(logits.clone(), batch.labels.clone());
        ClassificationOutput::new(loss, logits, batch.labels)
    }
}

impl From<Mlp> for LearnerClassifier {
    fn from(network: Mlp) -> Self {
        Self::new(network)
    }
}

impl From<ConvNet> for LearnerClassifier {
    fn from(network: ConvNet) -> Self {
        Self::new(network)
    }
}

impl From<Classifier> for LearnerClassifier {
    fn from(network: Classifier) -> Self {
        Self::new(network)
    }
}

impl TrainStep for LearnerClassifier {
    type Input = TensorBatch<2>;
    type Output = ClassificationOutput;

    fn step(&self, batch: TensorBatch<2>) -> TrainOutput<ClassificationOutput> {
        let output = self.classify(batch);
        let gradients = output.loss.backward();
        TrainOutput::new(self, gradients, output)
    }
}

impl InferenceStep for LearnerClassifier {
    type Input = TensorBatch<2>;
    type Output = ClassificationOutput;

    fn step(&self, batch: TensorBatch<2>) -> ClassificationOutput {
        self.classify(batch)
    }
}

#[cfg(test)]
mod tests {
    use burn::tensor::{Int, Tensor};
    use reclaim_model::MlpConfig;

    use super::*;

    fn batch(device: &Device) -> TensorBatch<2> {
        TensorBatch {
            images: Tensor::<2>::ones([3, 784], device),
            labels: Tensor::<1, Int>::from_ints([0, 1, 2], device),
        }
    }

    #[test]
    fn the_train_step_returns_gradients_and_the_batch_output() {
        let device = Device::flex().autodiff();
        let model = LearnerClassifier::new(MlpConfig::new().init_seeded(&device, 1));
        let output = TrainStep::step(&model, batch(&device));
        assert_eq!(output.item.output.dims(), [3, 10]);
        assert_eq!(output.item.targets.dims(), [3]);
        assert!(output.item.loss.into_scalar::<f32>().is_finite());
    }

    #[test]
    fn the_cnn_steps_too_with_gradients_for_its_convolutions() {
        use reclaim_model::ConvNetConfig;
        let device = Device::flex();
        let config = ConvNetConfig {
            channels: 3,
            height: 8,
            width: 8,
            number_of_classes: 4,
            ..ConvNetConfig::new()
        };
        let model = LearnerClassifier::new(config.init_seeded(&device, 3).unwrap());
        let training_device = device.clone().autodiff();
        let batch = TensorBatch {
            images: Tensor::<2>::ones([2, 3 * 8 * 8], &training_device),
            labels: Tensor::<1, Int>::from_ints([0, 3], &training_device),
        };
        let output = TrainStep::step(&model, batch);
        assert_eq!(output.item.output.dims(), [2, 4]);
        assert!(!output.grads.is_empty());
        assert_eq!(model.network().kind(), reclaim_model::ModelKind::Cnn);
    }

    #[test]
    fn a_network_made_on_a_plain_device_is_trainable() {
        let device = Device::flex();
        let model = LearnerClassifier::new(MlpConfig::new().init_seeded(&device, 1));
        assert_eq!(model.devices(), [device.autodiff()]);
        let output = TrainStep::step(&model, batch(&Device::flex().autodiff()));
        let gradients = output.grads;
        assert!(!gradients.is_empty(), "the parameters are tracked");
    }

    #[test]
    fn the_inference_step_gives_the_networks_logits() {
        let device = Device::flex();
        let model = LearnerClassifier::from(MlpConfig::new().init_seeded(&device, 1));
        let output = InferenceStep::step(&model, batch(&device));
        let logits = model
            .network()
            .forward(Tensor::<2>::ones([3, 784], &device));
        assert_eq!(output.output.into_data(), logits.into_data());
    }
}
